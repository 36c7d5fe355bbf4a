// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Loops with step 2: a loop-independent dependence, none, and one with distance 4.

func.func @strided_loop_with_dependence_at_depth2() {
  %0 = memref.alloc() : memref<10xf32>
  %cf0 = arith.constant 0.0 : f32
  affine.for %i0 = 0 to 8 step 2 {
    affine.store %cf0, %0[%i0] : memref<10xf32>
    // CHECK:      .mlir:10:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 1 at depth 2 = true
    %v0 = affine.load %0[%i0] : memref<10xf32>
    // CHECK:      .mlir:15:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:15:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:15:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:15:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @strided_loop_with_no_dependence() {
  %0 = memref.alloc() : memref<10xf32>
  %cf0 = arith.constant 0.0 : f32
  affine.for %i0 = 0 to 8 step 2 {
    %a0 = affine.apply affine_map<(d0) -> (d0 + 1)>(%i0)
    affine.store %cf0, %0[%a0] : memref<10xf32>
    // CHECK:      .mlir:31:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:31:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:31:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:31:5: remark: dependence from 0 to 1 at depth 2 = false
    %v0 = affine.load %0[%i0] : memref<10xf32>
    // CHECK:      .mlir:36:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:36:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:36:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:36:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @strided_loop_with_loop_carried_dependence_at_depth1() {
  %0 = memref.alloc() : memref<10xf32>
  %cf0 = arith.constant 0.0 : f32
  affine.for %i0 = 0 to 8 step 2 {
    %a0 = affine.apply affine_map<(d0) -> (d0 + 4)>(%i0)
    affine.store %cf0, %0[%a0] : memref<10xf32>
    // CHECK:      .mlir:52:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:52:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:52:5: remark: dependence from 0 to 1 at depth 1 = [4, 4]
    // CHECK-NEXT: .mlir:52:5: remark: dependence from 0 to 1 at depth 2 = false
    %v0 = affine.load %0[%i0] : memref<10xf32>
    // CHECK:      .mlir:57:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
