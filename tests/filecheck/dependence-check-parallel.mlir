// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// affine.parallel IVs count as loops, one depth each; min/max bounds.

func.func @dependent_parallel() {
  %0 = memref.alloc() : memref<10xf32>
  %cst = arith.constant 7.000000e+00 : f32
  affine.parallel (%i0) = (0) to (10) {
    affine.store %cst, %0[%i0] : memref<10xf32>
    // CHECK:      .mlir:10:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:10:5: remark: dependence from 0 to 1 at depth 1 = true
  }
  affine.parallel (%i1) = (0) to (10) {
    %1 = affine.load %0[%i1] : memref<10xf32>
    // CHECK:      .mlir:16:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:16:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:16:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @affine_parallel_dep_check_1() {
  %memref_23 = memref.alloc() : memref<1x130xf32>
  %memref_25 = memref.alloc() : memref<1x130x130xf32>
  %cst = arith.constant 0.0 : f32
  affine.parallel (%arg4, %arg5) = (0, 0) to (1, 130) {
    affine.store %cst, %memref_25[%arg4, %arg5, 129] : memref<1x130x130xf32>
    // CHECK:      .mlir:31:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:31:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:31:5: remark: dependence from 0 to 0 at depth 3 = false
    // CHECK-NEXT: .mlir:31:5: remark: dependence from 0 to 1 at depth 1 = true
  }
  %memref_27 = memref.alloc() : memref<1x128x128xf32>
  affine.parallel (%arg4) = (0) to (130) {
    affine.parallel (%arg5, %arg6) = (0, 0) to (1, 130) {
      affine.load %memref_25[0, %arg4 + %arg5, %arg6] : memref<1x130x130xf32>
      // CHECK:      .mlir:40:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 1 to 1 at depth 4 = false
    }
  }
  return
}

// -----

func.func @affine_parallel_dep_check_2() {
  %m = memref.alloc() : memref<128xf32>
  %cst = arith.constant 0.0 : f32
  affine.parallel (%arg4) = (0) to (127) {
    affine.store %cst, %m[%arg4] : memref<128xf32>
    // CHECK:      .mlir:57:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:57:5: remark: dependence from 0 to 1 at depth 1 = false
  }
  affine.load %m[127]: memref<128xf32>
  // CHECK:      .mlir:62:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:62:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @affine_parallel_min_max_bounds(%arg0: memref<4090x2040xf32>, %arg1: f32) {
  affine.parallel (%arg2, %arg3) = (0, 0) to (min(128, 122), min(64, 2040)) {
    affine.for %arg4 = 0 to 100 {
      affine.store %arg1, %arg0[%arg2 + 3968, %arg3] : memref<4090x2040xf32>
      // CHECK:      .mlir:73:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 3 = [0, 0][0, 0][1, 99]
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 4 = false
    }
  }
  return
}
