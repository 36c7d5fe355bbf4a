// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// floordiv/mod subscripts, a transposed tiled index, a ceildiv bound.

// Pairs of iterations share an element: i floordiv 2 (WAW carried with distance 1 on
// even i only), read back at i mod 4.
func.func @floordiv_mod(%A: memref<8xf32>) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to 16 {
    affine.store %c, %A[%i floordiv 2] : memref<8xf32>
    // CHECK:      .mlir:10:5: remark: dependence from 0 to 0 at depth 1 = [1, 1]
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 1 at depth 1 = [1, 12]
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 1 at depth 2 = true
    %v = affine.load %A[%i mod 4] : memref<8xf32>
    // CHECK:      .mlir:15:5: remark: dependence from 1 to 0 at depth 1 = [1, 4]
    // CHECK-NEXT: .mlir:15:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:15:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:15:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

// Tiled accesses: the store covers A[4 * t + p]; the load reads A[t + 4 * p] (a transposed
// tiling); dependences cross tiles both ways.
func.func @tiled_transpose_index(%A: memref<16xf32>) {
  %c = arith.constant 1.0 : f32
  affine.for %t = 0 to 4 {
    affine.for %p = 0 to 4 {
      affine.store %c, %A[%t * 4 + %p] : memref<16xf32>
      // CHECK:      .mlir:32:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:32:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:32:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:32:7: remark: dependence from 0 to 1 at depth 1 = [1, 3][-3, -1]
      // CHECK-NEXT: .mlir:32:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:32:7: remark: dependence from 0 to 1 at depth 3 = true
      %v = affine.load %A[%t + %p * 4] : memref<16xf32>
      // CHECK:      .mlir:39:7: remark: dependence from 1 to 0 at depth 1 = [1, 3][-3, -1]
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:39:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}

// -----

// ceildiv in a bound and floordiv in a subscript.
func.func @ceildiv_bound(%A: memref<8xf32>, %N: index) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to affine_map<()[s0] -> (s0 ceildiv 2)>()[%N] {
    %v = affine.load %A[(%i + 1) floordiv 2] : memref<8xf32>
    // CHECK:      .mlir:57:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 0 to 1 at depth 1 = [1, 2]
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 0 to 1 at depth 2 = true
    affine.store %v, %A[%i floordiv 2] : memref<8xf32>
    // CHECK:      .mlir:62:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:62:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:62:5: remark: dependence from 1 to 1 at depth 1 = [1, 1]
    // CHECK-NEXT: .mlir:62:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
