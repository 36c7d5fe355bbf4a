// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// A store and a load at different loop depths; a single-iteration inner loop.

func.func @test_dep_store_depth1_load_depth2() {
  %0 = memref.alloc() : memref<100xf32>
  %cst = arith.constant 7.000000e+00 : f32
  affine.for %i0 = 0 to 10 {
    %a0 = affine.apply affine_map<(d0) -> (d0 - 1)>(%i0)
    affine.store %cst, %0[%a0] : memref<100xf32>
    // CHECK:      .mlir:11:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:11:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:11:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:11:5: remark: dependence from 0 to 1 at depth 2 = false
    affine.for %i1 = affine_map<(d0) -> (d0)>(%i0) to affine_map<(d0) -> (d0 + 1)>(%i0) {
      %1 = affine.load %0[%i1] : memref<100xf32>
      // CHECK:      .mlir:17:7: remark: dependence from 1 to 0 at depth 1 = [1, 1]
      // CHECK-NEXT: .mlir:17:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:17:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:17:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:17:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}

// -----

func.func @test_dep_store_depth2_load_depth1() {
  %0 = memref.alloc() : memref<100xf32>
  %cst = arith.constant 7.000000e+00 : f32
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = affine_map<(d0) -> (d0)>(%i0) to affine_map<(d0) -> (d0 + 1)>(%i0) {
      affine.store %cst, %0[%i1] : memref<100xf32>
      // CHECK:      .mlir:35:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 0 to 1 at depth 1 = [2, 2]
      // CHECK-NEXT: .mlir:35:7: remark: dependence from 0 to 1 at depth 2 = false
    }
    %a0 = affine.apply affine_map<(d0) -> (d0 - 2)>(%i0)
    %1 = affine.load %0[%a0] : memref<100xf32>
    // CHECK:      .mlir:43:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:43:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:43:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:43:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
