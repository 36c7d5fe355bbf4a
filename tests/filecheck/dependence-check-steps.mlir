// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Steps 2, 3 and 4: accesses that meet only on common multiples.

// Step 3 against step 2 on one array: they meet every 6 elements.
func.func @steps_2_and_3(%A: memref<24xf32>) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to 24 step 3 {
    affine.store %c, %A[%i] : memref<24xf32>
    // CHECK:      .mlir:9:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 1 at depth 1 = true
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 2 at depth 1 = true
  }
  affine.for %j = 0 to 24 step 2 {
    %v = affine.load %A[%j] : memref<24xf32>
    // CHECK:      .mlir:16:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:16:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:16:5: remark: dependence from 1 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:16:5: remark: dependence from 1 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:16:5: remark: dependence from 1 to 2 at depth 2 = false
    affine.store %v, %A[%j + 1] : memref<24xf32>
    // CHECK:      .mlir:22:5: remark: dependence from 2 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:22:5: remark: dependence from 2 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:22:5: remark: dependence from 2 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:22:5: remark: dependence from 2 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:22:5: remark: dependence from 2 to 2 at depth 2 = false
  }
  return
}

// -----

// A strided loop reading back what the previous iteration wrote.
func.func @step_4_shift(%A: memref<40xf32>) {
  affine.for %i = 4 to 36 step 4 {
    %v = affine.load %A[%i - 4] : memref<40xf32>
    // CHECK:      .mlir:37:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:37:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:37:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:37:5: remark: dependence from 0 to 1 at depth 2 = false
    affine.store %v, %A[%i] : memref<40xf32>
    // CHECK:      .mlir:42:5: remark: dependence from 1 to 0 at depth 1 = [4, 4]
    // CHECK-NEXT: .mlir:42:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:42:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:42:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
