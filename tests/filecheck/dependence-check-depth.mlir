// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Deep nests; a 6-d delinearization through nested mod/floordiv subscripts.

func.func @loop_nest_depth() {
  %0 = memref.alloc() : memref<100x100xf32>
  %c7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 128 {
    affine.for %i1 = 0 to 8 {
      affine.store %c7, %0[%i0, %i1] : memref<100x100xf32>
      // CHECK:      .mlir:12:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:12:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:12:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:12:7: remark: dependence from 0 to 1 at depth 1 = true
    }
  }
  affine.for %i2 = 0 to 8 {
    affine.for %i3 = 0 to 8 {
      affine.for %i4 = 0 to 8 {
        affine.for %i5 = 0 to 16 {
          %8 = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%i4, %i5)
          %9 = affine.load %0[%8, %i3] : memref<100x100xf32>
          // CHECK:      .mlir:24:11: remark: dependence from 1 to 0 at depth 1 = false
          // CHECK-NEXT: .mlir:24:11: remark: dependence from 1 to 1 at depth 1 = false
          // CHECK-NEXT: .mlir:24:11: remark: dependence from 1 to 1 at depth 2 = false
          // CHECK-NEXT: .mlir:24:11: remark: dependence from 1 to 1 at depth 3 = false
          // CHECK-NEXT: .mlir:24:11: remark: dependence from 1 to 1 at depth 4 = false
          // CHECK-NEXT: .mlir:24:11: remark: dependence from 1 to 1 at depth 5 = false
        }
      }
    }
  }
  return
}

// -----

func.func @delinearize_mod_floordiv() {
  %c0 = arith.constant 0 : index
  %val = arith.constant 0 : i32
  %in = memref.alloc() : memref<2x2x3x3x16x1xi32>
  %out = memref.alloc() : memref<64x9xi32>

  affine.for %i0 = 0 to 2 {
    affine.for %i1 = 0 to 2 {
      affine.for %i2 = 0 to 3 {
        affine.for %i3 = 0 to 3 {
          affine.for %i4 = 0 to 16 {
            affine.for %i5 = 0 to 1 {
              affine.store %val, %in[%i0, %i1, %i2, %i3, %i4, %i5] : memref<2x2x3x3x16x1xi32>
              // CHECK:      .mlir:52:15: remark: dependence from 0 to 0 at depth 1 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 0 at depth 2 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 0 at depth 3 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 0 at depth 4 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 0 at depth 5 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 0 at depth 6 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 0 at depth 7 = false
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 1 at depth 1 = true
              // CHECK-NEXT: .mlir:52:15: remark: dependence from 0 to 2 at depth 1 = false
            }
          }
        }
      }
    }
  }

  affine.for %ii = 0 to 64 {
    affine.for %jj = 0 to 9 {
      %a0 = affine.apply affine_map<(d0, d1) -> (d0 * (9 * 1024) + d1 * 128)> (%ii, %jj)
      %a10 = affine.apply affine_map<(d0) ->
        (d0 floordiv (2 * 3 * 3 * 128 * 128))> (%a0)
      %a11 = affine.apply affine_map<(d0) ->
        ((d0 mod 294912) floordiv (3 * 3 * 128 * 128))> (%a0)
      %a12 = affine.apply affine_map<(d0) ->
        ((((d0 mod 294912) mod 147456) floordiv 1152) floordiv 8)> (%a0)
      %a13 = affine.apply affine_map<(d0) ->
        ((((d0 mod 294912) mod 147456) mod 1152) floordiv 384)> (%a0)
      %a14 = affine.apply affine_map<(d0) ->
        (((((d0 mod 294912) mod 147456) mod 1152) mod 384) floordiv 128)> (%a0)
      %a15 = affine.apply affine_map<(d0) ->
        ((((((d0 mod 294912) mod 147456) mod 1152) mod 384) mod 128)
          floordiv 128)> (%a0)
      %v0 = affine.load %in[%a10, %a11, %a13, %a14, %a12, %a15] : memref<2x2x3x3x16x1xi32>
      // CHECK:      .mlir:85:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:85:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:85:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:85:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:85:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:85:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:85:7: remark: dependence from 1 to 2 at depth 3 = false
      affine.store %v0, %out[%ii, %jj] : memref<64x9xi32>
      // CHECK:      .mlir:93:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:93:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:93:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:93:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:93:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:93:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:93:7: remark: dependence from 2 to 2 at depth 3 = false
    }
  }
  return
}
