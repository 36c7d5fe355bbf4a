// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// affine.apply of constants composed into subscripts.

func.func @store_load_diff_element_affine_apply_const() {
  %m = memref.alloc() : memref<100xf32>
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8.0 : f32
  %a0 = affine.apply affine_map<(d0) -> (d0)> (%c1)
  affine.store %c8, %m[%a0] : memref<100xf32>
  // CHECK:      .mlir:11:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:11:3: remark: dependence from 0 to 1 at depth 1 = false
  %a1 = affine.apply affine_map<(d0) -> (d0 + 1)> (%c1)
  %v0 = affine.load %m[%a1] : memref<100xf32>
  // CHECK:      .mlir:15:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:15:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_same_element_affine_apply_const() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %c9 = arith.constant 9 : index
  %c11 = arith.constant 11 : index
  %a0 = affine.apply affine_map<(d0) -> (d0 + 1)> (%c9)
  affine.store %c7, %m[%a0] : memref<100xf32>
  // CHECK:      .mlir:29:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:29:3: remark: dependence from 0 to 1 at depth 1 = true
  %a1 = affine.apply affine_map<(d0) -> (d0 - 1)> (%c11)
  %v0 = affine.load %m[%a1] : memref<100xf32>
  // CHECK:      .mlir:33:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:33:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_range_load_after_range() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %c10 = arith.constant 10 : index
  affine.for %i0 = 0 to 10 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:47:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:47:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:47:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:47:5: remark: dependence from 0 to 1 at depth 2 = false
    %a1 = affine.apply affine_map<(d0) -> (d0)> (%c10)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:53:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:53:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:53:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:53:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
