// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Distances that depend on a symbol: bounded by the loop, or unbounded (+inf).

// A shift by a symbol: the distance is %N itself, bounded only by the loop (0 to 10).
func.func @symbolic_shift(%A: memref<32xf32>, %N: index) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<32xf32>
    // CHECK:      .mlir:8:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:8:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:8:5: remark: dependence from 0 to 1 at depth 1 = [1, 9]
    // CHECK-NEXT: .mlir:8:5: remark: dependence from 0 to 1 at depth 2 = true
    affine.store %v, %A[%i + symbol(%N)] : memref<32xf32>
    // CHECK:      .mlir:13:5: remark: dependence from 1 to 0 at depth 1 = [1, 9]
    // CHECK-NEXT: .mlir:13:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:13:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:13:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

// A symbolic bound and a symbolic shift: unbounded distances.
func.func @symbolic_bound_and_shift(%A: memref<64xf32>, %N: index, %M: index) {
  affine.for %i = 0 to %N {
    %v = affine.load %A[%i + symbol(%M)] : memref<64xf32>
    // CHECK:      .mlir:27:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:27:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:27:5: remark: dependence from 0 to 1 at depth 1 = [1, +inf]
    // CHECK-NEXT: .mlir:27:5: remark: dependence from 0 to 1 at depth 2 = true
    affine.store %v, %A[%i] : memref<64xf32>
    // CHECK:      .mlir:32:5: remark: dependence from 1 to 0 at depth 1 = [1, +inf]
    // CHECK-NEXT: .mlir:32:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:32:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:32:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
