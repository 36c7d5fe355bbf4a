// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -affine-loop-tile="tile-size=32" | filecheck %s

// The inputs of MLIR's mlir/test/Dialect/Affine/loop-tiling.mlir (tile-size=32 run); the loops
// and bounds are MLIR's (checked against iree-opt): tile loops step by 32 over the original
// range, point loops run from the tile IV to `min(tile IV + 32, original ub...)`, with no min
// when 32 divides the trip count, and `tile IV + trip count` when the trip count is below 32.
// Ours names the loops %i_tile / %i_point. Differences, each marked below: a one-loop band
// with iter_args is tiled (MLIR refuses any loop with iter_args), and `4096 floordiv s1`
// (semi-affine, not supported here) is written `s1 floordiv 4`.

// CHECK-DAG: #[[$ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$UB:map[0-9]*]] = affine_map<(d0) -> (d0 + 32)>
// CHECK-DAG: #[[$UB_MIN:map[0-9]*]] = affine_map<(d0) -> (d0 + 32, 50)>
// CHECK-DAG: #[[$ID_PLUS_21:map[0-9]*]] = affine_map<(d0) -> (d0 + 21)>
// CHECK-LABEL: func.func @loop_tiling()
// CHECK-NEXT:   affine.for %i_tile = 0 to 256 step 32 {
// CHECK-NEXT:     affine.for %j_tile = 0 to 512 step 32 {
// CHECK-NEXT:       affine.for %k_tile = 0 to 1024 step 32 {
// CHECK-NEXT:         affine.for %i_point = #[[$ID]](%i_tile) to #[[$UB]](%i_tile) {
// CHECK-NEXT:           affine.for %j_point = #[[$ID]](%j_tile) to #[[$UB]](%j_tile) {
// CHECK-NEXT:             affine.for %k_point = #[[$ID]](%k_tile) to #[[$UB]](%k_tile) {
// CHECK-NEXT:               "test.foo"(%i_point, %j_point, %k_point)
// CHECK-NEXT:             }
// CHECK-NEXT:           }
// CHECK-NEXT:         }
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   affine.for %x_tile = 0 to 50 step 32 {
// CHECK-NEXT:     affine.for %x_point = #[[$ID]](%x_tile) to min #[[$UB_MIN]](%x_tile) {
// CHECK-NEXT:       "test.bar"(%x_point, %x_point)
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   affine.for %y_tile = 0 to 21 step 32 {
// CHECK-NEXT:     affine.for %y_point = #[[$ID]](%y_tile) to #[[$ID_PLUS_21]](%y_tile) {
// CHECK-NEXT:       "test.foobar"(%y_point)
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   return
func.func @loop_tiling() {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 512 {
      affine.for %k = 0 to 1024 {
        "test.foo"(%i, %j, %k) : (index, index, index) -> ()
      }
    }
  }
  affine.for %x = 0 to 50 {
    "test.bar"(%x, %x) : (index, index) -> ()
  }
  // Intra-tile loop won't need a min expression.
  affine.for %y = 0 to 21 {
    "test.foobar"(%y) : (index) -> ()
  }
  return
}

// -----

// CHECK-DAG: #[[$LB:map[0-9]*]] = affine_map<()[s0] -> (0, s0)>
// CHECK-DAG: #[[$UB:map[0-9]*]] = affine_map<()[s0, s1] -> (s0, s1 floordiv 4)>
// CHECK-DAG: #[[$ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$UB_INTRA:map[0-9]*]] = affine_map<(d0)[s0, s1] -> (d0 + 32, s0, s1 floordiv 4)>
// CHECK-LABEL: func.func @loop_max_min_bound(
// CHECK:       affine.for %i_tile = max #[[$LB]]()[%L] to min #[[$UB]]()[%M, %U] step 32 {
// CHECK-NEXT:    affine.for %i_point = #[[$ID]](%i_tile) to min #[[$UB_INTRA]](%i_tile)[%M, %U] {
// CHECK-NEXT:      arith.addi %i_point, %i_point
// CHECK-NEXT:    }
// CHECK-NEXT:  }
#lb = affine_map<()[s0] -> (0, s0)>
#ub = affine_map<()[s0, s1] -> (s0, s1 floordiv 4)>
func.func @loop_max_min_bound(%A : memref<? x i32>, %L : index, %U : index) {
  %c0 = arith.constant 0 : index
  %M = memref.dim %A, %c0 : memref<? x i32>
  affine.for %i = max #lb()[%L] to min #ub()[%M, %U] {
    arith.addi %i, %i : index
  }
  return
}

// -----

// CHECK-DAG: #[[$UBMAP:map[0-9]*]] = affine_map<(d0)[s0] -> (d0 + 32, s0)>
// CHECK-LABEL: func.func @tile_using_symbolic_loop_upper_bounds(
// CHECK:       %[[N:.*]] = memref.dim %arg0, %c0 : memref<?x?xf32>
// CHECK-NEXT:  affine.for %i0_tile = 0 to %[[N]] step 32 {
// CHECK-NEXT:    affine.for %i1_tile = 0 to %[[N]] step 32 {
// CHECK-NEXT:      affine.for %i0_point = #[[$MAP:map[0-9]*]](%i0_tile) to min #[[$UBMAP]](%i0_tile)[%[[N]]] {
// CHECK-NEXT:        affine.for %i1_point = #[[$MAP]](%i1_tile) to min #[[$UBMAP]](%i1_tile)[%[[N]]] {
// CHECK-NEXT:          affine.store %cst, %arg2[%i0_point, %i1_point] : memref<?x?xf32>
// CHECK-NEXT:          affine.for %i2 = 0 to %[[N]] {
// CHECK-NEXT:            affine.load
// CHECK-NEXT:            affine.load
// CHECK-NEXT:            arith.mulf
// CHECK-NEXT:            affine.load
// CHECK-NEXT:            arith.addf
// CHECK-NEXT:            affine.store
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  return
func.func @tile_using_symbolic_loop_upper_bounds(%arg0: memref<?x?xf32>, %arg1: memref<?x?xf32>, %arg2: memref<?x?xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %0 = memref.dim %arg0, %c0 : memref<?x?xf32>
  affine.for %i0 = 0 to %0 {
    affine.for %i1 = 0 to %0 {
      affine.store %cst, %arg2[%i0, %i1] : memref<?x?xf32>
      affine.for %i2 = 0 to %0 {
        %1 = affine.load %arg0[%i0, %i2] : memref<?x?xf32>
        %2 = affine.load %arg1[%i2, %i1] : memref<?x?xf32>
        %3 = arith.mulf %1, %2 : f32
        %4 = affine.load %arg2[%i0, %i1] : memref<?x?xf32>
        %5 = arith.addf %4, %3 : f32
        affine.store %5, %arg2[%i0, %i1] : memref<?x?xf32>
      }
    }
  }
  return
}

// -----

// CHECK-DAG: #[[$MAP1:map[0-9]*]] = affine_map<()[s0, s1] -> (s0 + s1)>
// CHECK-DAG: #[[$UBMAP:map[0-9]*]] = affine_map<(d0)[s0, s1] -> (d0 + 32, s0 + s1)>
// CHECK-LABEL: func.func @tile_using_loop_upper_bounds_in_two_symbols(
// CHECK:       affine.for %i0_tile = 0 to #[[$MAP1]]()[%dim0, %limit] step 32 {
// CHECK-NEXT:    affine.for %i0_point = #{{map[0-9]*}}(%i0_tile) to min #[[$UBMAP]](%i0_tile)[%dim0, %limit] {
// CHECK-NEXT:      affine.load
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @tile_using_loop_upper_bounds_in_two_symbols(%arg0: memref<?xf32>, %limit: index) {
  %c0 = arith.constant 0 : index
  %dim0 = memref.dim %arg0, %c0 : memref<?xf32>
  affine.for %i0 = 0 to affine_map<()[s0, s1] -> (s0 + s1)> ()[%dim0, %limit] {
    %v0 = affine.load %arg0[%i0] : memref<?xf32>
  }
  return
}

// -----

// A step of 5: the tile loop steps by 32 * 5, the point loop keeps the step.
// CHECK-DAG: #[[$UBMAP:map[0-9]*]] = affine_map<(d0)[s0] -> (d0 + 160, s0)>
// CHECK-LABEL: func.func @tile_loop_with_non_unit_step(
// CHECK:       affine.for %i_tile = 0 to %arg1 step 160 {
// CHECK-NEXT:    affine.for %i_point = #{{map[0-9]*}}(%i_tile) to min #[[$UBMAP]](%i_tile)[%arg1] step 5 {
// CHECK-NEXT:      affine.load %arg0[%i_point] : memref<50xf32>
func.func @tile_loop_with_non_unit_step(%arg0 : memref<50xf32>, %arg1 : index) {
  affine.for %i = 0 to %arg1 step 5 {
    affine.load %arg0[%i] : memref<50xf32>
  }
  return
}

// -----

// Constant trip counts 2 and 4 (non-constant bounds), below the tile size: no min.
// CHECK-DAG: #[[$ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$ID_PLUS_2:map[0-9]*]] = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #[[$ID_PLUS_4:map[0-9]*]] = affine_map<(d0) -> (d0 + 4)>
// CHECK-LABEL: func.func @tile_size_larger_than_trip_count_symbolic_bound(
// CHECK:      affine.for %i_tile = #[[$ID]](%M) to #[[$ID_PLUS_2]](%M) step 32 {
// CHECK-NEXT:   affine.for %j_tile = #[[$ID]](%N) to #[[$ID_PLUS_4]](%N) step 32 {
// CHECK-NEXT:     affine.for %i_point = #[[$ID]](%i_tile) to #[[$ID_PLUS_2]](%i_tile) {
// CHECK-NEXT:       affine.for %j_point = #[[$ID]](%j_tile) to #[[$ID_PLUS_4]](%j_tile) {
// CHECK-NEXT:         "test.foo"
func.func @tile_size_larger_than_trip_count_symbolic_bound(%M: index, %N :  index) {
  affine.for %i = affine_map<(d0) -> (d0)>(%M) to affine_map<(d0) -> (d0 + 2)>(%M) {
    affine.for %j = affine_map<(d0) -> (d0)>(%N) to affine_map<(d0) -> (d0 + 4)>(%N) {
      "test.foo" () : () -> ()
    }
  }
  return
}

// -----

// CHECK-DAG:   #[[$PLUS1:map[0-9]*]] = affine_map<(d0) -> (d0 + 1)>
// CHECK-LABEL: func.func @trip_count_one(
// CHECK:       affine.for %i1_tile = 0 to 196608 step 32 {
// CHECK-NEXT:    affine.for %i3_tile = 0 to 1 step 32 {
// CHECK-NEXT:      affine.for %i1_point = #{{map[0-9]*}}(%i1_tile) to #{{map[0-9]*}}(%i1_tile) {
// CHECK-NEXT:        affine.for %i3_point = #{{map[0-9]*}}(%i3_tile) to #[[$PLUS1]](%i3_tile) {
// CHECK-NEXT:          affine.load %arg0[%i1_point, %i3_point] : memref<196608x1xf32>
func.func @trip_count_one(%arg0: memref<196608x1xf32>, %arg1: memref<196608x1xf32>)
    -> memref<196608x1xf32> {
  affine.for %i1 = 0 to 196608 {
    affine.for %i3 = 0 to 1 {
      %4 = affine.load %arg0[%i1, %i3] : memref<196608x1xf32>
      affine.store %4, %arg1[%i1, %i3] : memref<196608x1xf32>
    }
  }
  return %arg1 : memref<196608x1xf32>
}

// -----

// Not hyper-rectangular: %j's bound uses %i. Not tiled (as MLIR).
// CHECK-LABEL: func.func @non_hyperrectangular_loop()
// CHECK-NEXT:    %N = arith.constant 128 : index
// CHECK-NEXT:    affine.for %i = 0 to %N {
// CHECK-NEXT:      affine.for %j = 0 to min #{{map[0-9]*}}(%i)[%N] {
// CHECK-NEXT:        "test.foo"
#ub = affine_map<(d0)[s0] -> (d0, s0)>
func.func @non_hyperrectangular_loop() {
  %N = arith.constant 128 : index
  affine.for %i = 0 to %N {
    affine.for %j = 0 to min #ub(%i)[%N] {
      "test.foo"() : () -> ()
    }
  }
  return
}

// -----

// Different from MLIR (which tiles no loop with iter_args): a one-loop band with iter_args is
// tiled, the tile loop carrying the value into the point loop and out again.
// CHECK-LABEL: func.func @yield_values(
// CHECK-NEXT:    %[[R:.*]] = affine.for %i_tile = 0 to 10 step 32 iter_args(%[[T:.*]] = %init) -> (index) {
// CHECK-NEXT:      %[[P:.*]] = affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) iter_args(%[[S:.*]] = %[[T]]) -> (index) {
// CHECK-NEXT:        "test.foo"() : () -> ()
// CHECK-NEXT:        affine.yield %[[S]] : index
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.yield %[[P]] : index
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]] : index
func.func @yield_values(%init : index) -> index {
  %r = affine.for %i = 0 to 10 iter_args(%s = %init) -> index {
    "test.foo"() : () -> ()
    affine.yield %s : index
  }
  return %r : index
}

// -----

// CHECK-DAG: #[[$PART:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2 + 32, d0, d1)>
// CHECK-LABEL: func.func @tile_1d_max_min(
// CHECK:         affine.for %i0_tile = max #[[$MAP:map[0-9]*]](%M, %N) to min #[[$MAP]](%P, %Q) step 32 {
// CHECK-NEXT:      affine.for %i0_point = #{{map[0-9]*}}(%i0_tile) to min #[[$PART]](%P, %Q, %i0_tile) {
func.func @tile_1d_max_min(%M : index, %N : index, %P : index, %Q : index) {
  affine.for %i0 = max affine_map<(d0, d1) -> (d0, d1)>  (%M, %N) to min affine_map< (d0, d1) -> (d0, d1)> (%P, %Q) {
  }
  return
}
