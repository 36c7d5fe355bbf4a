// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Constant shifts (+3, -2) and a dependence cycle through two memrefs.

func.func @store_plus_3() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 1 to 11 {
    %a0 = affine.apply affine_map<(d0) -> (d0 + 3)> (%i0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:11:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:11:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:11:5: remark: dependence from 0 to 1 at depth 1 = [3, 3]
    // CHECK-NEXT: .mlir:11:5: remark: dependence from 0 to 1 at depth 2 = false
    %a1 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:17:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:17:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:17:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:17:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @load_minus_2() {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  affine.for %i0 = 2 to 11 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:33:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:33:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:33:5: remark: dependence from 0 to 1 at depth 1 = [2, 2]
    // CHECK-NEXT: .mlir:33:5: remark: dependence from 0 to 1 at depth 2 = false
    %a1 = affine.apply affine_map<(d0) -> (d0 - 2)> (%i0)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:39:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:39:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:39:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:39:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @dependence_cycle() {
  %m.a = memref.alloc() : memref<100xf32>
  %m.b = memref.alloc() : memref<100xf32>
  affine.for %i0 = 0 to 9 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    %v0 = affine.load %m.a[%a0] : memref<100xf32>
    // CHECK:      .mlir:55:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 2 at depth 2 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:55:5: remark: dependence from 0 to 3 at depth 2 = false
    %a1 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    affine.store %v0, %m.b[%a1] : memref<100xf32>
    // CHECK:      .mlir:65:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 2 at depth 2 = true
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:65:5: remark: dependence from 1 to 3 at depth 2 = false
    %a2 = affine.apply affine_map<(d0) -> (d0)> (%i0)
    %v1 = affine.load %m.b[%a2] : memref<100xf32>
    // CHECK:      .mlir:75:5: remark: dependence from 2 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 2 at depth 2 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:75:5: remark: dependence from 2 to 3 at depth 2 = false
    %a3 = affine.apply affine_map<(d0) -> (d0 + 1)> (%i0)
    affine.store %v1, %m.a[%a3] : memref<100xf32>
    // CHECK:      .mlir:85:5: remark: dependence from 3 to 0 at depth 1 = [1, 1]
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 1 at depth 2 = false
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 2 at depth 1 = false
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 2 at depth 2 = false
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 3 at depth 1 = false
    // CHECK-NEXT: .mlir:85:5: remark: dependence from 3 to 3 at depth 2 = false
  }
  return
}
