// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Symbols in subscripts and bounds; distances are over all symbol values ([1, +inf]).

func.func @store_load_same_symbol(%arg0: index) {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  affine.store %c7, %m[%arg0] : memref<100xf32>
  // CHECK:      .mlir:9:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:9:3: remark: dependence from 0 to 1 at depth 1 = true
  %v0 = affine.load %m[%arg0] : memref<100xf32>
  // CHECK:      .mlir:12:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:12:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_different_symbols(%arg0: index, %arg1: index) {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  affine.store %c7, %m[%arg0] : memref<100xf32>
  // CHECK:      .mlir:23:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:23:3: remark: dependence from 0 to 1 at depth 1 = true
  %v0 = affine.load %m[%arg1] : memref<100xf32>
  // CHECK:      .mlir:26:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:26:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_affine_apply_symbol(%arg0: index) {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %a0 = affine.apply affine_map<(d0) -> (d0)> (%arg0)
  affine.store %c7, %m[%a0] : memref<100xf32>
  // CHECK:      .mlir:38:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:38:3: remark: dependence from 0 to 1 at depth 1 = true
  %a1 = affine.apply affine_map<(d0) -> (d0)> (%arg0)
  %v0 = affine.load %m[%a1] : memref<100xf32>
  // CHECK:      .mlir:42:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:42:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_affine_apply_symbol_offset(%arg0: index) {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %a0 = affine.apply affine_map<(d0) -> (d0)> (%arg0)
  affine.store %c7, %m[%a0] : memref<100xf32>
  // CHECK:      .mlir:54:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:54:3: remark: dependence from 0 to 1 at depth 1 = false
  %a1 = affine.apply affine_map<(d0) -> (d0 + 1)> (%arg0)
  %v0 = affine.load %m[%a1] : memref<100xf32>
  // CHECK:      .mlir:58:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:58:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_func_symbol(%arg0: index, %arg1: index) {
  %m = memref.alloc() : memref<100xf32>
  %c7 = arith.constant 7.0 : f32
  %c10 = arith.constant 10 : index
  affine.for %i0 = 0 to %arg1 {
    %a0 = affine.apply affine_map<(d0) -> (d0)> (%arg0)
    affine.store %c7, %m[%a0] : memref<100xf32>
    // CHECK:      .mlir:72:5: remark: dependence from 0 to 0 at depth 1 = [1, +inf]
    // CHECK-NEXT: .mlir:72:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:72:5: remark: dependence from 0 to 1 at depth 1 = [1, +inf]
    // CHECK-NEXT: .mlir:72:5: remark: dependence from 0 to 1 at depth 2 = true
    %a1 = affine.apply affine_map<(d0) -> (d0)> (%arg0)
    %v0 = affine.load %m[%a1] : memref<100xf32>
    // CHECK:      .mlir:78:5: remark: dependence from 1 to 0 at depth 1 = [1, +inf]
    // CHECK-NEXT: .mlir:78:5: remark: dependence from 1 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:78:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:78:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}
