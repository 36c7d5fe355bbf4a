// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Negative and positive distance components; RAW, WAR and WAW in one nest.

func.func @negative_and_positive_direction_vectors(%arg0: index, %arg1: index) {
  %m = memref.alloc() : memref<10x10xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to %arg0 {
    affine.for %i1 = 0 to %arg1 {
      %a00 = affine.apply affine_map<(d0, d1) -> (d0 - 1)> (%i0, %i1)
      %a01 = affine.apply affine_map<(d0, d1) -> (d1 + 1)> (%i0, %i1)
      %v0 = affine.load %m[%a00, %a01] : memref<10x10xf32>
      // CHECK:      .mlir:13:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 1 at depth 3 = false
      %a10 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a11 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      affine.store %c7, %m[%a10, %a11] : memref<10x10xf32>
      // CHECK:      .mlir:22:7: remark: dependence from 1 to 0 at depth 1 = [1, 1][-1, -1]
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:22:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}

// -----

func.func @war_raw_waw_deps() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %a0 = affine.apply affine_map<(d0) -> (d0 + 1)> (%i1)
      %v0 = affine.load %m[%a0] : memref<100xf32>
      // CHECK:      .mlir:42:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:42:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:42:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:42:7: remark: dependence from 0 to 1 at depth 1 = [1, 9][1, 1]
      // CHECK-NEXT: .mlir:42:7: remark: dependence from 0 to 1 at depth 2 = [0, 0][1, 1]
      // CHECK-NEXT: .mlir:42:7: remark: dependence from 0 to 1 at depth 3 = false
      %a1 = affine.apply affine_map<(d0) -> (d0)> (%i1)
      affine.store %c7, %m[%a1] : memref<100xf32>
      // CHECK:      .mlir:50:7: remark: dependence from 1 to 0 at depth 1 = [1, 9][-1, -1]
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 1 to 1 at depth 1 = [1, 9][0, 0]
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:50:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}
