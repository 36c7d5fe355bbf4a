// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir.
// mod and floordiv subscripts. Here the ranges are exact over the integers; MLIR's rational
// bounds are looser: it prints [2, 9] for 1 -> 1 of @mod_deps (the even distances end at 8),
// and [1, 3][-7, 7][-3, 3] / [0, 0][2, 7][-3, 3] at depths 1 / 2 of @mod_div_3d
// (i1 mod 2 equal means an even difference, at most 6).

func.func @mod_deps() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    %a0 = affine.apply affine_map<(d0) -> (d0 mod 2)> (%i0)
    %v0 = affine.load %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:14:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:14:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:14:5: remark: dependence from 0 to 1 at depth 1 = [1, 9]
    // CHECK-NEXT: .mlir:14:5: remark: dependence from 0 to 1 at depth 2 = false
    %a1 = affine.apply affine_map<(d0) -> ( (d0 + 1) mod 2)> (%i0)
    affine.store %c7, %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:20:5: remark: dependence from 1 to 0 at depth 1 = [1, 9]
    // CHECK-NEXT: .mlir:20:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:20:5: remark: dependence from 1 to 1 at depth 1 = [2, 8]
    // CHECK-NEXT: .mlir:20:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @mod_div_3d() {
  %M = memref.alloc() : memref<2x2x2xi32>
  %c0 = arith.constant 0 : i32
  affine.for %i0 = 0 to 8 {
    affine.for %i1 = 0 to 8 {
      affine.for %i2 = 0 to 8 {
        %idx0 = affine.apply affine_map<(d0, d1, d2) -> (d0 floordiv 4)> (%i0, %i1, %i2)
        %idx1 = affine.apply affine_map<(d0, d1, d2) -> (d1 mod 2)> (%i0, %i1, %i2)
        %idx2 = affine.apply affine_map<(d0, d1, d2) -> (d2 floordiv 4)> (%i0, %i1, %i2)
        affine.store %c0, %M[%idx0, %idx1, %idx2] : memref<2 x 2 x 2 x i32>
        // CHECK:      .mlir:40:9: remark: dependence from 0 to 0 at depth 1 = [1, 3][-6, 6][-3, 3]
        // CHECK-NEXT: .mlir:40:9: remark: dependence from 0 to 0 at depth 2 = [0, 0][2, 6][-3, 3]
        // CHECK-NEXT: .mlir:40:9: remark: dependence from 0 to 0 at depth 3 = [0, 0][0, 0][1, 3]
        // CHECK-NEXT: .mlir:40:9: remark: dependence from 0 to 0 at depth 4 = false
      }
    }
  }
  return
}
