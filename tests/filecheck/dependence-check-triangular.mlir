// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Triangular bounds: forward substitution, and a lower-triangular update with a symbolic size.

// Forward substitution: x[i] -= L[i, j] * x[j] for j < i (a triangular nest).
func.func @forward_substitution(%L: memref<8x8xf32>, %x: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %l = affine.load %L[%i, %j] : memref<8x8xf32>
      // CHECK:      .mlir:9:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 3 at depth 3 = false
      %xj = affine.load %x[%j] : memref<8xf32>
      // CHECK:      .mlir:22:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 3 at depth 3 = false
      %xi = affine.load %x[%i] : memref<8xf32>
      // CHECK:      .mlir:35:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 3 at depth 2 = [0, 0][1, 6]
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 2 to 3 at depth 3 = true
      %p = arith.mulf %l, %xj : f32
      %s = arith.subf %xi, %p : f32
      affine.store %s, %x[%i] : memref<8xf32>
      // CHECK:      .mlir:50:7: remark: dependence from 3 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 1 at depth 1 = [1, 6][1, 6]
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 2 at depth 2 = [0, 0][1, 6]
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 3 at depth 2 = [0, 0][1, 6]
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 3 to 3 at depth 3 = false
    }
  }
  return
}

// -----

// Lower-triangular update with symbolic size: A[i, j] += A[j, j] for j <= i < N.
func.func @triangular_symbolic(%A: memref<16x16xf32>, %N: index) {
  affine.for %i = 0 to %N {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %d = affine.load %A[%j, %j] : memref<16x16xf32>
      // CHECK:      .mlir:74:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:74:7: remark: dependence from 0 to 2 at depth 3 = true
      %a = affine.load %A[%i, %j] : memref<16x16xf32>
      // CHECK:      .mlir:84:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:84:7: remark: dependence from 1 to 2 at depth 3 = true
      %s = arith.addf %a, %d : f32
      affine.store %s, %A[%i, %j] : memref<16x16xf32>
      // CHECK:      .mlir:95:7: remark: dependence from 2 to 0 at depth 1 = [1, +inf][0, 0]
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 2 at depth 3 = false
    }
  }
  return
}
