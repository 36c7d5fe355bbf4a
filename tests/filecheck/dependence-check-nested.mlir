// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Perfect nests carried at depth 1, 2, loop-independent, and an imperfect nest.

func.func @perfectly_nested_loops_loop_independent() {
  %m = memref.alloc() : memref<10x10xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 11 {
    affine.for %i1 = 0 to 11 {
      %a00 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a01 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      affine.store %c7, %m[%a00, %a01] : memref<10x10xf32>
      // CHECK:      .mlir:13:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:13:7: remark: dependence from 0 to 1 at depth 3 = true
      %a10 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a11 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      %v0 = affine.load %m[%a10, %a11] : memref<10x10xf32>
      // CHECK:      .mlir:22:7: remark: dependence from 1 to 0 at depth 1 = false
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

func.func @perfectly_nested_loops_loop_carried_at_depth1() {
  %m = memref.alloc() : memref<10x10xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 9 {
    affine.for %i1 = 0 to 9 {
      %a00 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a01 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      affine.store %c7, %m[%a00, %a01] : memref<10x10xf32>
      // CHECK:      .mlir:43:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:43:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:43:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:43:7: remark: dependence from 0 to 1 at depth 1 = [2, 2][0, 0]
      // CHECK-NEXT: .mlir:43:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:43:7: remark: dependence from 0 to 1 at depth 3 = false
      %a10 = affine.apply affine_map<(d0, d1) -> (d0 - 2)> (%i0, %i1)
      %a11 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      %v0 = affine.load %m[%a10, %a11] : memref<10x10xf32>
      // CHECK:      .mlir:52:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:52:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:52:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:52:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:52:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:52:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}

// -----

func.func @perfectly_nested_loops_loop_carried_at_depth2() {
  %m = memref.alloc() : memref<10x10xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %a00 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a01 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      affine.store %c7, %m[%a00, %a01] : memref<10x10xf32>
      // CHECK:      .mlir:73:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 1 at depth 2 = [0, 0][3, 3]
      // CHECK-NEXT: .mlir:73:7: remark: dependence from 0 to 1 at depth 3 = false
      %a10 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a11 = affine.apply affine_map<(d0, d1) -> (d1 - 3)> (%i0, %i1)
      %v0 = affine.load %m[%a10, %a11] : memref<10x10xf32>
      // CHECK:      .mlir:82:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:82:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}

// -----

func.func @one_common_loop() {
  %m = memref.alloc() : memref<10x10xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %a00 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i1)
      %a01 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i1)
      affine.store %c7, %m[%a00, %a01] : memref<10x10xf32>
      // CHECK:      .mlir:103:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:103:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:103:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:103:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:103:7: remark: dependence from 0 to 1 at depth 2 = true
    }
    affine.for %i2 = 0 to 9 {
      %a10 = affine.apply affine_map<(d0, d1) -> (d0)> (%i0, %i2)
      %a11 = affine.apply affine_map<(d0, d1) -> (d1)> (%i0, %i2)
      %v0 = affine.load %m[%a10, %a11] : memref<10x10xf32>
      // CHECK:      .mlir:113:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:113:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:113:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:113:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:113:7: remark: dependence from 1 to 1 at depth 3 = false
    }
  }
  return
}
