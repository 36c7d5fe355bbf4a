// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// An imperfect nest: initialization, an in-memory reduction, a use after the inner loop.

// An imperfect nest: an initialization at depth 1, a reduction at depth 2, a use after.
func.func @row_sums(%A: memref<8x8xf32>, %s: memref<8xf32>, %t: memref<8xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    affine.store %z, %s[%i] : memref<8xf32>
    // CHECK:      .mlir:9:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 2 at depth 2 = true
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 3 at depth 2 = true
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 4 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 4 at depth 2 = true
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 5 at depth 1 = false
    // CHECK-NEXT: .mlir:9:5: remark: dependence from 0 to 5 at depth 2 = false
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      // CHECK:      .mlir:23:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 4 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 4 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 5 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 5 at depth 2 = false
      %c = affine.load %s[%i] : memref<8xf32>
      // CHECK:      .mlir:39:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 3 at depth 2 = [0, 0][1, 7]
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 3 at depth 3 = true
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 4 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 4 at depth 2 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 5 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 2 to 5 at depth 2 = false
      %r = arith.addf %c, %a : f32
      affine.store %r, %s[%i] : memref<8xf32>
      // CHECK:      .mlir:56:7: remark: dependence from 3 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 2 at depth 2 = [0, 0][1, 7]
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 3 at depth 2 = [0, 0][1, 7]
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 3 at depth 3 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 4 at depth 1 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 4 at depth 2 = true
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 5 at depth 1 = false
      // CHECK-NEXT: .mlir:56:7: remark: dependence from 3 to 5 at depth 2 = false
    }
    %f = affine.load %s[%i] : memref<8xf32>
    // CHECK:      .mlir:73:5: remark: dependence from 4 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 2 at depth 2 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 3 at depth 2 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 4 at depth 1 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 4 at depth 2 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 5 at depth 1 = false
    // CHECK-NEXT: .mlir:73:5: remark: dependence from 4 to 5 at depth 2 = false
    affine.store %f, %t[%i] : memref<8xf32>
    // CHECK:      .mlir:86:5: remark: dependence from 5 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 2 at depth 2 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 3 at depth 2 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 4 at depth 1 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 4 at depth 2 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 5 at depth 1 = false
    // CHECK-NEXT: .mlir:86:5: remark: dependence from 5 to 5 at depth 2 = false
  }
  return
}
