// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Matmul with the accumulation in memory: only %k carries the dependences on C.

// Matmul with the reduction in memory: C[i, j] is carried by %k only.
func.func @matmul(%A: memref<8x4xf32>, %B: memref<4x6xf32>, %C: memref<8x6xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 6 {
      affine.for %k = 0 to 4 {
        %a = affine.load %A[%i, %k] : memref<8x4xf32>
        // CHECK:      .mlir:10:9: remark: dependence from 0 to 0 at depth 1 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 0 at depth 2 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 0 at depth 3 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 0 at depth 4 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 1 at depth 1 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 1 at depth 2 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 1 at depth 3 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 1 at depth 4 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 2 at depth 1 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 2 at depth 2 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 2 at depth 3 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 2 at depth 4 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 3 at depth 1 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 3 at depth 2 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 3 at depth 3 = false
        // CHECK-NEXT: .mlir:10:9: remark: dependence from 0 to 3 at depth 4 = false
        %b = affine.load %B[%k, %j] : memref<4x6xf32>
        // CHECK:      .mlir:27:9: remark: dependence from 1 to 0 at depth 1 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 0 at depth 2 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 0 at depth 3 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 0 at depth 4 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 1 at depth 1 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 1 at depth 2 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 1 at depth 3 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 1 at depth 4 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 2 at depth 1 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 2 at depth 2 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 2 at depth 3 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 2 at depth 4 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 3 at depth 1 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 3 at depth 2 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 3 at depth 3 = false
        // CHECK-NEXT: .mlir:27:9: remark: dependence from 1 to 3 at depth 4 = false
        %c = affine.load %C[%i, %j] : memref<8x6xf32>
        // CHECK:      .mlir:44:9: remark: dependence from 2 to 0 at depth 1 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 0 at depth 2 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 0 at depth 3 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 0 at depth 4 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 1 at depth 1 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 1 at depth 2 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 1 at depth 3 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 1 at depth 4 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 2 at depth 1 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 2 at depth 2 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 2 at depth 3 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 2 at depth 4 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 3 at depth 1 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 3 at depth 2 = false
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 3 at depth 3 = [0, 0][0, 0][1, 3]
        // CHECK-NEXT: .mlir:44:9: remark: dependence from 2 to 3 at depth 4 = true
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<8x6xf32>
        // CHECK:      .mlir:63:9: remark: dependence from 3 to 0 at depth 1 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 0 at depth 2 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 0 at depth 3 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 0 at depth 4 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 1 at depth 1 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 1 at depth 2 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 1 at depth 3 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 1 at depth 4 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 2 at depth 1 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 2 at depth 2 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 2 at depth 3 = [0, 0][0, 0][1, 3]
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 2 at depth 4 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 3 at depth 1 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 3 at depth 2 = false
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 3 at depth 3 = [0, 0][0, 0][1, 3]
        // CHECK-NEXT: .mlir:63:9: remark: dependence from 3 to 3 at depth 4 = false
      }
    }
  }
  return
}
