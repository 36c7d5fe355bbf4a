// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -canonicalize | filecheck %s

// Loop bounds: constants folded, operands composed/deduplicated/promoted to symbols, max/min
// results that never decide the bound dropped. Inputs and outputs from MLIR's
// mlir/test/Dialect/Affine/canonicalize.mlir, except where noted: we also promote loops that run
// exactly once (MLIR keeps `affine.for %i = 0 to 1`), which is exact and simpler.

// CHECK-DAG: #[[$MAP0:.*]] = affine_map<()[s0] -> (0, s0)>
// CHECK-DAG: #[[$MAP1:.*]] = affine_map<()[s0] -> (100, s0)>
// CHECK-LABEL: func.func @constant_fold_bounds
// CHECK:         affine.for %{{.*}} = 5 to 7 {
// CHECK:         affine.for %{{.*}} = 1 to 7 {
// CHECK:         affine.for %{{.*}} = max #[[$MAP0]]()[%{{.*}}] to min #[[$MAP1]]()[%{{.*}}] {
func.func @constant_fold_bounds(%N : index) {
  %c9 = arith.constant 9 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = affine.apply affine_map<(d0, d1) -> (d0 + d1)> (%c1, %c2)
  %l = "test.foo"() : () -> index
  affine.for %i = max affine_map<(d0, d1) -> (0, d0 + d1)> (%c2, %c3) to min affine_map<(d0, d1) -> (d0 - 2, 32*d1)> (%c9, %c1) {
    "test.foo"(%i, %c3) : (index, index) -> ()
  }
  affine.for %j = max affine_map<(d0) -> (0, 1)> (%N) to min affine_map<(d0, d1) -> (7, 9)> (%N, %l) {
    "test.foo"(%j, %c3) : (index, index) -> ()
  }
  affine.for %k = max affine_map<()[s0] -> (0, s0)> ()[%l] to min affine_map<()[s0] -> (100, s0)> ()[%N] {
    "test.foo"(%k, %c3) : (index, index) -> ()
  }
  return
}

// -----

// CHECK-DAG: #[[$UBMAP:.*]] = affine_map<()[s0] -> (1024, s0 * 2)>
// CHECK-DAG: #[[$LBMAP:.*]] = affine_map<()[s0] -> (0, s0)>
// CHECK-LABEL: func.func @canonicalize_bounds
// CHECK-SAME:    (%[[M:.*]]: index, %[[N:.*]]: index)
// CHECK:         affine.for %{{.*}} = 0 to min #[[$UBMAP]]()[%[[M]]]
// CHECK:         affine.for %{{.*}} = 0 to #{{.*}}()[%[[M]]]
// CHECK:         affine.for %{{.*}} = max #[[$LBMAP]]()[%[[N]]] to %[[M]]
func.func @canonicalize_bounds(%M : index, %N : index) {
  %c0 = arith.constant 0 : index
  %c1024 = arith.constant 1024 : index
  affine.for %i = 0 to min affine_map<(d0, d1, d2, d3) -> (d0, d1 + d2)> (%c1024, %M, %M, %N) {
    "test.foo"() : () -> ()
  }
  affine.for %i = 0 to affine_map<(d0) -> (4 * d0)> (%M) {
    "test.foo"() : () -> ()
  }
  affine.for %i = max affine_map<(d0, d1) -> (d0, d1)> (%c0, %N) to %M {
    "test.foo"() : () -> ()
  }
  return
}

// -----

// MLIR keeps `0 to 1`, `0 to 16 step 16` and their loops; we promote them.
// CHECK-LABEL: func.func @simplify_bounds_tiled
// CHECK-NEXT:    affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT:      affine.for %{{.*}} = 0 to 32 step 16 {
// CHECK-NEXT:        affine.for %{{.*}} = 0 to 32 step 16 {
// CHECK-NEXT:          affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT:            "test.foo"() : () -> ()
#map0 = affine_map<(d0) -> (32, d0 * -32 + 32)>
#map1 = affine_map<(d0) -> (32, d0 * -32 + 64)>
#map3 = affine_map<(d0) -> (16, d0 * -16 + 32)>
func.func @simplify_bounds_tiled() {
  affine.for %arg5 = 0 to 1 {
    affine.for %arg6 = 0 to 2 {
      affine.for %arg8 = 0 to min #map0(%arg5) step 16 {
        affine.for %arg9 = 0 to min #map1(%arg6) step 16 {
          affine.for %arg10 = 0 to 2 {
            affine.for %arg12 = 0 to min #map3(%arg10) step 16 {
              "test.foo"() : () -> ()
            }
          }
        }
      }
    }
  }
  return
}

// -----

// CHECK-DAG: #[[$RUNS:.*]] = affine_set<(d0, d1) : (d0 - d1 + 2 >= 0)>
// CHECK-DAG: #[[$FLOORDIV:.*]] = affine_map<(d0) -> (d0 floordiv 2)>
// CHECK-LABEL: func.func @simplify_min_max_multi_expr
// CHECK:         affine.for %{{.*}} = 5 to
// The first upper bound is never below -9 (MLIR: `-10 to -9`; we also promote that loop).
// CHECK:         affine.for %{{.*}} = 0 to 4 {
// CHECK-NEXT:      "test.foo"
// `-10 to min(-9, 4 * d0 - 4 * d1)` runs at most once (MLIR keeps the loop): an affine.if on
// "it runs" (-10 < 4 * d0 - 4 * d1), the IV replaced by -10.
// CHECK:         affine.for %{{.*}} = 0 to 4 {
// CHECK-NEXT:      affine.if #[[$RUNS]](%{{.*}}, %{{.*}}) {
// CHECK-NEXT:        "test.foo"
// CHECK:         affine.for %{{.*}} = 0 to 2 {
// CHECK-NEXT:      "test.foo"
// CHECK:         affine.for %{{.*}} = #[[$FLOORDIV]](%{{.*}}) to 10
func.func @simplify_min_max_multi_expr() {
  affine.for %i = 0 to 2 {
    affine.for %j = max affine_map<(d0) -> (5, 4 * d0)> (%i) to affine_map<(d0) -> (4 * d0 + 3)>(%i) {
      "test.foo"() : () -> ()
    }
  }
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      affine.for %k = -10 to min affine_map<(d0, d1) -> (4 * d0 - 3 * d1, -9)>(%i, %j) {
        "test.foo"() : () -> ()
      }
    }
  }
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      affine.for %k = -10 to min affine_map<(d0, d1) -> (4 * d0 - 3 * d1, -9, 4 * d0 - 4 * d1)>(%i, %j) {
        "test.foo"() : () -> ()
      }
    }
  }
  affine.for %i = 0 to 2 {
    affine.for %j = max affine_map<(d0) -> (d0 floordiv 2, 0)>(%i) to 1 {
      "test.foo"() : () -> ()
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = max affine_map<(d0) -> (d0 floordiv 2, 0)>(%i) to 10 {
      "test.foo"() : () -> ()
    }
  }
  return
}

// -----

// CHECK-LABEL: func.func @no_simplify_min_max
// CHECK:         affine.for %{{.*}} = 0 to min #{{.*}}(%{{.*}}) {
// CHECK:         affine.for %{{.*}} = 0 to min #{{.*}}(%{{.*}})[%{{.*}}] {
func.func @no_simplify_min_max(%M: index) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to min affine_map<(d0) -> (2 * d0, 2)>(%i) {
      "test.foo"() : () -> ()
    }
    affine.for %j = 0 to min affine_map<(d0)[s0] -> (d0, s0)>(%i)[%M] {
      "test.foo"() : () -> ()
    }
  }
  return
}

// -----

// CHECK: #[[$UB:.*]] = affine_map<()[s0] -> (s0 + 2)>
// CHECK-LABEL: func.func @drop_duplicate_bounds
// CHECK-NEXT:    affine.for %{{.*}} = %{{.*}} to #[[$UB]]()[%{{.*}}] {
func.func @drop_duplicate_bounds(%N : index) {
  affine.for %i = max affine_map<(d0) -> (d0, d0)>(%N) to min affine_map<(d0) -> (d0 + 2, d0 + 2)>(%N) {
    "test.foo"() : () -> ()
  }
  return
}

// -----

// Not in MLIR's tests: the ranges of the outer loop drop a min result (MLIR keeps `min`).
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$PLUS4:.*]] = affine_map<(d0) -> (d0 + 4)>
// CHECK-LABEL: func.func @tile_bound_pruned
// CHECK:         affine.for %[[I:.*]] = 0 to 64 step 4 {
// CHECK-NEXT:      affine.for %{{.*}} = #[[$ID]](%[[I]]) to #[[$PLUS4]](%[[I]]) {
func.func @tile_bound_pruned(%A: memref<64xf32>) {
  affine.for %i = 0 to 64 step 4 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to min affine_map<(d0) -> (d0 + 4, 64)>(%i) {
      %v = affine.load %A[%j] : memref<64xf32>
      "test.foo"(%v) : (f32) -> ()
    }
  }
  return
}
