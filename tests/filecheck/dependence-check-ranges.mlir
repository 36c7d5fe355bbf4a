// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// A loop storing a range and a load at a constant before, inside or after it.

func.func @store_range_load_last_in_range() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %c10 = arith.constant 10 : index
  affine.for %i0 = 0 to 10 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:12:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:12:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:12:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:12:5: remark: dependence from 0 to 1 at depth 2 = true
    %a1 = affine.apply affine_map<(d0) -> (d0 - 1)> (%c10)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:18:5: remark: dependence from 1 to 0 at depth 1 = [1, 9]
    // CHECK-NEXT: .mlir:18:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:18:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:18:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @store_range_load_before_range() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %c0 = arith.constant 0 : index
  affine.for %i0 = 1 to 11 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:35:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:35:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:35:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:35:5: remark: dependence from 0 to 1 at depth 2 = false
    %a1 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:41:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @store_range_load_first_in_range() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %c0 = arith.constant 0 : index
  affine.for %i0 = 1 to 11 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:58:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:58:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:58:5: remark: dependence from 0 to 1 at depth 1 = [1, 9]
    // CHECK-NEXT: .mlir:58:5: remark: dependence from 0 to 1 at depth 2 = true
    %a1 = affine.apply affine_map<(d0) -> (d0 + 1)> (%c0)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:64:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:64:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:64:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:64:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
