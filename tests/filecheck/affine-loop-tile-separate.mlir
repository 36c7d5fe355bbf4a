// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -affine-loop-tile="tile-size=32 separate" | filecheck %s

// Full and partial tiles separated (MLIR's `separate` run of loop-tiling.mlir): inside the tile
// loops, `affine.if <full tile> { point loops of 32 iterations } else { min-bounded loops }`.
// The first two cases are MLIR's inputs, with MLIR's condition sets and bounds. Ours also
// separates loops with steps > 1 and with iter_args (MLIR refuses both), and adds no
// `affine.if` when no tile can be partial (MLIR then writes `affine.if (0 == 0)`).

// CHECK-DAG: #[[$SEP_COND:set[0-9]*]] = affine_set<(d0, d1)[s0, s1] : (-d0 + s0 - 32 >= 0, -d1 + s1 - 32 >= 0)>
// CHECK-DAG: #[[$LB:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$FULL_TILE_UB:map[0-9]*]] = affine_map<(d0) -> (d0 + 32)>
// CHECK-DAG: #[[$PART_TILE_UB:map[0-9]*]] = affine_map<(d0)[s0] -> (d0 + 32, s0)>
// CHECK-LABEL: func.func @separate_full_tile_2d(
// CHECK-SAME:    %[[M:.*]]: index, %[[N:.*]]: index
// CHECK:         affine.for %[[I:.*]] = 0 to %[[M]] step 32 {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to %[[N]] step 32 {
// CHECK-NEXT:        affine.if #[[$SEP_COND]](%[[I]], %[[J]])[%[[M]], %[[N]]] {
// CHECK-NEXT:          affine.for %{{.*}} = #[[$LB]](%[[I]]) to #[[$FULL_TILE_UB]](%[[I]]) {
// CHECK-NEXT:            affine.for %{{.*}} = #[[$LB]](%[[J]]) to #[[$FULL_TILE_UB]](%[[J]]) {
// CHECK-NEXT:             "test.foo"
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        } else {
// CHECK-NEXT:          affine.for %{{.*}} = #[[$LB]](%[[I]]) to min #[[$PART_TILE_UB]](%[[I]])[%[[M]]] {
// CHECK-NEXT:            affine.for %{{.*}} = #[[$LB]](%[[J]]) to min #[[$PART_TILE_UB]](%[[J]])[%[[N]]] {
// CHECK-NEXT:             "test.foo"
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @separate_full_tile_2d(%M : index, %N : index) {
  affine.for %i = 0 to %M {
    affine.for %j = 0 to %N {
      "test.foo"() : () -> ()
    }
  }
  return
}

// -----

// CHECK-DAG: #[[$SEP_COND:set[0-9]*]] = affine_set<(d0)[s0, s1] : (-d0 + s0 - 32 >= 0, -d0 + s1 - 32 >= 0)>
// CHECK-DAG: #[[$TILE_LB:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$FULL_TILE_UB:map[0-9]*]] = affine_map<(d0) -> (d0 + 32)>
// CHECK-DAG: #[[$PARTIAL_TILE_UB:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2 + 32, d0, d1)>
// CHECK-LABEL: func.func @separate_full_tile_1d_max_min(
// CHECK:         affine.for %i0_tile = max
// CHECK-NEXT:      affine.if #[[$SEP_COND]](%i0_tile)[%P, %Q] {
// CHECK-NEXT:        affine.for %i0_point = #[[$TILE_LB]](%i0_tile) to #[[$FULL_TILE_UB]](%i0_tile) {
// CHECK-NEXT:        }
// CHECK-NEXT:      } else {
// CHECK-NEXT:        affine.for %i0_point_0 = #[[$TILE_LB]](%i0_tile) to min #[[$PARTIAL_TILE_UB]](%P, %Q, %i0_tile) {
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @separate_full_tile_1d_max_min(%M : index, %N : index, %P : index, %Q : index) {
  affine.for %i0 = max affine_map<(d0, d1) -> (d0, d1)>  (%M, %N) to min affine_map< (d0, d1) -> (d0, d1)> (%P, %Q) {
  }
  return
}

// -----

// A constant trip count of 50: the tile at 32 is partial (tile IV <= 18 is full).
// CHECK-DAG: #[[$COND:set[0-9]*]] = affine_set<(d0) : (-d0 + 18 >= 0)>
// CHECK-DAG: #[[$PART:map[0-9]*]] = affine_map<(d0) -> (d0 + 32, 50)>
// CHECK-LABEL: func.func @constant_partial(
// CHECK:         affine.for %x_tile = 0 to 50 step 32 {
// CHECK-NEXT:      affine.if #[[$COND]](%x_tile) {
// CHECK-NEXT:        affine.for %x_point = #{{map[0-9]*}}(%x_tile) to #{{map[0-9]*}}(%x_tile) {
// CHECK:           } else {
// CHECK-NEXT:        affine.for %x_point_0 = #{{map[0-9]*}}(%x_tile) to min #[[$PART]](%x_tile) {
func.func @constant_partial(%A: memref<50xf32>) {
  affine.for %x = 0 to 50 {
    %v = affine.load %A[%x] : memref<50xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %A[%x] : memref<50xf32>
  }
  return
}

// -----

// 32 divides both trip counts: every tile is full, no affine.if (MLIR: `affine.if (0 == 0)`).
// CHECK-LABEL: func.func @no_partial_tiles(
// CHECK-NEXT:    affine.for %i_tile = 0 to 64 step 32 {
// CHECK-NEXT:      affine.for %j_tile = 0 to 96 step 32 {
// CHECK-NEXT:        affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #[[$UB:map[0-9]*]](%i_tile) {
// CHECK-NEXT:          affine.for %j_point = #{{map[0-9]*}}(%j_tile) to #[[$UB]](%j_tile) {
// CHECK-NOT:     affine.if
// CHECK:         return
func.func @no_partial_tiles(%A: memref<64x96xf32>, %B: memref<96x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 96 {
      %v = affine.load %A[%i, %j] : memref<64x96xf32>
      affine.store %v, %B[%j, %i] : memref<96x64xf32>
    }
  }
  return
}

// -----

// A step of 3 (MLIR does not separate non-unit steps): full tiles run 32 iterations of step 3.
// CHECK-DAG: #[[$COND:set[0-9]*]] = affine_set<(d0)[s0] : (-d0 + s0 - 96 >= 0)>
// CHECK-DAG: #[[$FULL:map[0-9]*]] = affine_map<(d0) -> (d0 + 96)>
// CHECK-DAG: #[[$PART:map[0-9]*]] = affine_map<(d0)[s0] -> (d0 + 96, s0)>
// CHECK-LABEL: func.func @non_unit_step(
// CHECK:         affine.for %i_tile = 0 to %N step 96 {
// CHECK-NEXT:      affine.if #[[$COND]](%i_tile)[%N] {
// CHECK-NEXT:        affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #[[$FULL]](%i_tile) step 3 {
// CHECK:           } else {
// CHECK-NEXT:        affine.for %i_point_0 = #{{map[0-9]*}}(%i_tile) to min #[[$PART]](%i_tile)[%N] step 3 {
func.func @non_unit_step(%A: memref<100xf32>, %N: index) {
  affine.for %i = 0 to %N step 3 {
    %v = affine.load %A[%i] : memref<100xf32>
  }
  return
}

// -----

// iter_args: the affine.if yields what either version of the point loop returns.
// CHECK-LABEL: func.func @iter_args_separated(
// CHECK:         %[[R:.*]] = affine.for %i_tile = 0 to %N step 32 iter_args(%[[ACC:.*]] = %cst) -> (f32) {
// CHECK-NEXT:      %[[IF:.*]] = affine.if #{{set[0-9]*}}(%i_tile)[%N] -> f32 {
// CHECK-NEXT:        %[[F:.*]] = affine.for %i_point = {{.*}} iter_args(%{{.*}} = %[[ACC]]) -> (f32) {
// CHECK:             affine.yield %[[F]] : f32
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[P:.*]] = affine.for %i_point_0 = {{.*}} to min {{.*}} iter_args(%{{.*}} = %[[ACC]]) -> (f32) {
// CHECK:             affine.yield %[[P]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.yield %[[IF]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]] : f32
func.func @iter_args_separated(%A: memref<100xf32>, %N: index) -> f32 {
  %cst = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to %N iter_args(%acc = %cst) -> f32 {
    %v = affine.load %A[%i] : memref<100xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  return %r : f32
}
