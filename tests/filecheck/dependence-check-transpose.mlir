// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Transposes: in place over the upper triangle (only loop-independent dependences), and
// out of place followed by a row-wise use.

// In-place transpose over the upper triangle: A[i, j] <-> A[j, i] for j > i.
func.func @transpose_in_place(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = affine_map<(d0) -> (d0 + 1)>(%i) to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      // CHECK:      .mlir:10:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 2 at depth 3 = true
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:10:7: remark: dependence from 0 to 3 at depth 3 = false
      %b = affine.load %A[%j, %i] : memref<8x8xf32>
      // CHECK:      .mlir:23:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 3 = true
      affine.store %b, %A[%i, %j] : memref<8x8xf32>
      // CHECK:      .mlir:36:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:36:7: remark: dependence from 2 to 3 at depth 3 = false
      affine.store %a, %A[%j, %i] : memref<8x8xf32>
      // CHECK:      .mlir:49:7: remark: dependence from 3 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:49:7: remark: dependence from 3 to 3 at depth 3 = false
    }
  }
  return
}

// -----

// Out-of-place transpose then a use of the transposed array by rows.
func.func @transpose_then_rows(%A: memref<8x6xf32>, %B: memref<6x8xf32>, %C: memref<6xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 6 {
      %a = affine.load %A[%i, %j] : memref<8x6xf32>
      // CHECK:      .mlir:73:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 3 at depth 1 = false
      affine.store %a, %B[%j, %i] : memref<6x8xf32>
      // CHECK:      .mlir:82:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 2 at depth 1 = true
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 3 at depth 1 = false
    }
  }
  affine.for %j = 0 to 6 {
    affine.for %i = 0 to 8 {
      %b = affine.load %B[%j, %i] : memref<6x8xf32>
      // CHECK:      .mlir:95:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:95:7: remark: dependence from 2 to 3 at depth 3 = false
      affine.store %b, %C[%j] : memref<6xf32>
      // CHECK:      .mlir:104:7: remark: dependence from 3 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 3 at depth 2 = [0, 0][1, 7]
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 3 to 3 at depth 3 = false
    }
  }
  return
}
