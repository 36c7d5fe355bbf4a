// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// max/min bounds: a tile loop whose point loop crosses tiles, and a min with a symbol.

// A tile loop with max/min bounds: the point loop %ii runs over [max(4 * %t, 2), min(4 * %t + 4, 14)).
#lb = affine_map<(d0) -> (d0 * 4, 2)>
#ub = affine_map<(d0) -> (d0 * 4 + 4, 14)>
func.func @tile_bounds(%A: memref<16xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %ii = max #lb(%t) to min #ub(%t) {
      %v = affine.load %A[%ii - 1] : memref<16xf32>
      // CHECK:      .mlir:11:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:11:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:11:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:11:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:11:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:11:7: remark: dependence from 0 to 1 at depth 3 = false
      affine.store %v, %A[%ii] : memref<16xf32>
      // CHECK:      .mlir:18:7: remark: dependence from 1 to 0 at depth 1 = [1, 1][1, 1]
      // CHECK-NEXT: .mlir:18:7: remark: dependence from 1 to 0 at depth 2 = [0, 0][1, 1]
      // CHECK-NEXT: .mlir:18:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:18:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:18:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:18:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}

// -----

// A min bound with a symbol: only the first %N (at most 8) iterations run.
#ub2 = affine_map<()[s0] -> (s0, 8)>
func.func @min_symbol(%A: memref<16xf32>, %N: index) {
  affine.for %i = 0 to min #ub2()[%N] {
    %v = affine.load %A[%i + 8] : memref<16xf32>
    // CHECK:      .mlir:36:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:36:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:36:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:36:5: remark: dependence from 0 to 1 at depth 2 = false
    affine.store %v, %A[%i] : memref<16xf32>
    // CHECK:      .mlir:41:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
