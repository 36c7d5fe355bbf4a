// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -affine-loop-normalize | filecheck %s

// The inputs of MLIR's mlir/test/Dialect/Affine/affine-loop-normalize.mlir, then ours.
// The loop headers are MLIR's. Where MLIR adds `%x = affine.apply (lb + d0 * step)(%iv)`
// for every IV, we compose lb + %iv * step into the maps of affine users (what MLIR's
// canonicalize then does) and add the affine.apply (named %<iv>_orig) only for other users.

// CHECK-LABEL: func.func @normalize_parallel
// CHECK:         affine.parallel (%i, %j) = (0, 0) to (4, 2) {
// CHECK-NEXT:      affine.parallel (%k) = (0) to (%j * 2 - %i * 3 + 1) {
// CHECK-NEXT:        affine.store %cst, %0[%i * 3, %i * 3 + %k] : memref<2x4xf32>
func.func @normalize_parallel() {
  %cst = arith.constant 1.0 : f32
  %0 = memref.alloc() : memref<2x4xf32>
  affine.parallel (%i, %j) = (0, 1) to (10, 5) step (3, 2) {
    affine.parallel (%k) = (%i) to (%j) {
      affine.store %cst, %0[%i, %k] : memref<2x4xf32>
    }
  }
  return
}

// -----

// CHECK-LABEL: func.func @relative_bounds
// CHECK-NEXT:    affine.for %i = 0 to 4 {
func.func @relative_bounds(%arg: index) {
  affine.for %i = affine_map<(d0) -> (d0)>(%arg) to affine_map<(d0) -> (d0 + 4)>(%arg) {
  }
  return
}

// -----

// promote-single-iter is off by default, as in mlir-opt (see affine-loop-normalize-promote.mlir).
// CHECK-LABEL: func.func @single_iteration_loop
// CHECK-NEXT:    affine.for %i = 0 to 1 {
// CHECK-NEXT:      affine.load %in[%i]
// CHECK-NEXT:      affine.store
func.func @single_iteration_loop(%in: memref<1xf32>, %out: memref<1xf32>) {
  affine.for %i = 0 to 1 {
    %1 = affine.load %in[%i] : memref<1xf32>
    affine.store %1, %out[%i] : memref<1xf32>
  }
  return
}

// -----

// CHECK-DAG:   #[[$IV0:map[0-9]*]] = affine_map<(d0) -> (d0 * 2 + 2)>
// CHECK-DAG:   #[[$IV1:map[0-9]*]] = affine_map<(d0) -> (d0 * 3)>
// CHECK-LABEL: func.func @simple_loop_nest()
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 15 {
// CHECK-NEXT:      %[[IIV:.*]] = affine.apply #[[$IV0]](%[[I]])
// CHECK-NEXT:      affine.for %[[II:.*]] = 0 to 11 {
// CHECK-NEXT:        %[[IIIV:.*]] = affine.apply #[[$IV1]](%[[II]])
// CHECK-NEXT:        "test.foo"(%[[IIV]], %[[IIIV]])
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @simple_loop_nest(){
  affine.for %i0 = 2 to 32 step 2 {
    affine.for %i1 =  0 to 32 step 3 {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}

// -----

// CHECK-DAG:   #[[$UB00:map[0-9]*]] = affine_map<()[s0] -> ((s0 - 2) ceildiv 32)>
// CHECK-DAG:   #[[$IV00:map[0-9]*]] = affine_map<(d0) -> (d0 * 32 + 2)>
// CHECK-DAG:   #[[$UB11:map[0-9]*]] = affine_map<()[s0] -> (s0 ceildiv 2)>
// CHECK-DAG:   #[[$IV11:map[0-9]*]] = affine_map<(d0) -> (d0 * 2)>
// CHECK-LABEL: func.func @loop_with_unknown_upper_bound
// CHECK:         %[[DIM:.*]] = memref.dim %arg0, %c0 : memref<?x?xf32>
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to #[[$UB00]]()[%[[DIM]]] {
// CHECK-NEXT:      %[[IIV:.*]] = affine.apply #[[$IV00]](%[[I]])
// CHECK-NEXT:      affine.for %[[II:.*]] = 0 to #[[$UB11]]()[%arg1] {
// CHECK-NEXT:        %[[IIIV:.*]] = affine.apply #[[$IV11]](%[[II]])
// CHECK-NEXT:        "test.foo"(%[[IIV]], %[[IIIV]])
func.func @loop_with_unknown_upper_bound(%arg0: memref<?x?xf32>, %arg1: index) {
  %c0 = arith.constant 0 : index
  %0 = memref.dim %arg0, %c0 : memref<?x?xf32>
  affine.for %i0 = 2 to %0 step 32 {
    affine.for %i1 = 0 to %arg1 step 2 {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}

// -----

// CHECK-DAG:   #[[$OUTERUB:map[0-9]*]] = affine_map<()[s0] -> ((s0 - 2) ceildiv 32)>
// CHECK-DAG:   #[[$INNERUB:map[0-9]*]] = affine_map<()[s0] -> (s0 - 2, 510)>
// CHECK-LABEL: func.func @loop_with_multiple_upper_bounds
// CHECK:         affine.for %[[I:.*]] = 0 to #[[$OUTERUB]]()[%{{.*}}] {
// CHECK-NEXT:      affine.apply
// CHECK-NEXT:      affine.for %[[II:.*]] = 0 to min #[[$INNERUB]]()[%arg1] {
func.func @loop_with_multiple_upper_bounds(%arg0: memref<?x?xf32>, %arg1 : index) {
  %c0 = arith.constant 0 : index
  %0 = memref.dim %arg0, %c0 : memref<?x?xf32>
  affine.for %i0 = 2 to %0 step 32{
    affine.for %i1 = 2 to min affine_map<(d0)[] -> (d0, 512)>(%arg1) {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}

// -----

// CHECK-DAG:   #[[$INTERUB:map[0-9]*]] = affine_map<()[s0] -> (s0 ceildiv 32)>
// CHECK-DAG:   #[[$INTRAUB:map[0-9]*]] = affine_map<(d0)[s0] -> (32, d0 * -32 + s0)>
// CHECK-LABEL: func.func @tiled_matmul
// CHECK:         affine.for %[[I:.*]] = 0 to #[[$INTERUB]]()[%[[DIM0:.*]]] {
// CHECK-NEXT:      affine.for %[[J:.*]] = 0 to #[[$INTERUB]]()[%[[DIM1:.*]]] {
// CHECK-NEXT:        affine.for %[[K:.*]] = 0 to #[[$INTERUB]]()[%[[DIM2:.*]]] {
// CHECK-NEXT:          affine.for %[[II:.*]] = 0 to min #[[$INTRAUB]](%[[I]])[%[[DIM0]]] {
// CHECK-NEXT:            affine.for %[[JJ:.*]] = 0 to min #[[$INTRAUB]](%[[J]])[%[[DIM1]]] {
// CHECK-NEXT:              affine.for %[[KK:.*]] = 0 to min #[[$INTRAUB]](%[[K]])[%[[DIM2]]] {
// CHECK-NEXT:                affine.load %arg0[%[[I]] * 32 + %[[II]], %[[K]] * 32 + %[[KK]]] : memref<1024x1024xf32>
// CHECK-NEXT:                affine.load %arg1[%[[K]] * 32 + %[[KK]], %[[J]] * 32 + %[[JJ]]] : memref<1024x1024xf32>
// CHECK-NEXT:                affine.load %arg2[%[[I]] * 32 + %[[II]], %[[J]] * 32 + %[[JJ]]] : memref<1024x1024xf32>
// CHECK-NEXT:                arith.mulf
// CHECK-NEXT:                arith.addf
// CHECK-NEXT:                affine.store %{{.*}}, %arg2[%[[I]] * 32 + %[[II]], %[[J]] * 32 + %[[JJ]]] : memref<1024x1024xf32>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0)[s0] -> (d0 + 32, s0)>
func.func @tiled_matmul(%0: memref<1024x1024xf32>, %1: memref<1024x1024xf32>, %2: memref<1024x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %3 = memref.dim %0, %c0 : memref<1024x1024xf32>
  %4 = memref.dim %1, %c1 : memref<1024x1024xf32>
  %5 = memref.dim %0, %c1 : memref<1024x1024xf32>
  affine.for %arg0 = 0 to %3 step 32 {
    affine.for %arg1 = 0 to %4 step 32 {
      affine.for %arg2 = 0 to %5 step 32 {
        affine.for %arg3 = #map1(%arg0) to min #map2(%arg0)[%3] {
          affine.for %arg4 = #map1(%arg1) to min #map2(%arg1)[%4] {
            affine.for %arg5 = #map1(%arg2) to min #map2(%arg2)[%5] {
              %6 = affine.load %0[%arg3, %arg5] : memref<1024x1024xf32>
              %7 = affine.load %1[%arg5, %arg4] : memref<1024x1024xf32>
              %8 = affine.load %2[%arg3, %arg4] : memref<1024x1024xf32>
              %9 = arith.mulf %6, %7 : f32
              %10 = arith.addf %8, %9 : f32
              affine.store %10, %2[%arg3, %arg4] : memref<1024x1024xf32>
            }
          }
        }
      }
    }
  }
  return
}

// -----

// iter_args are kept; IV uses other than map operands (a stored index, a yield) read one apply.
// CHECK-DAG:   #[[$ORIG:map[0-9]*]] = affine_map<(d0) -> (d0 * 4 + 3)>
// CHECK-LABEL: func.func @iter_args
// CHECK:         %{{.*}} = affine.for %i = 0 to 16 iter_args(%a = %c0) -> (index) {
// CHECK-NEXT:      %[[ORIG:.*]] = affine.apply #[[$ORIG]](%i)
// CHECK-NEXT:      %[[V:.*]] = affine.load %A[%i * 4 + 3] : memref<100xindex>
// CHECK-NEXT:      affine.store %[[ORIG]], %A[%i * 4 + 4] : memref<100xindex>
// CHECK-NEXT:      %[[S:.*]] = arith.addi %a, %[[V]] : index
// CHECK-NEXT:      affine.yield %[[ORIG]] : index
func.func @iter_args(%A: memref<100xindex>) -> index {
  %c0 = arith.constant 0 : index
  %r = affine.for %i = 3 to 64 step 4 iter_args(%a = %c0) -> index {
    %v = affine.load %A[%i] : memref<100xindex>
    affine.store %i, %A[%i + 1] : memref<100xindex>
    %s = arith.addi %a, %v : index
    affine.yield %i : index
  }
  return %r : index
}

// -----

// Better than MLIR, which leaves a max lower bound alone: when it can be computed at the top
// level (the loop is there, or its operands are), an affine.max computes it once.
// A max of an outer IV cannot: that loop is refused (and stays as it was).
// CHECK-DAG:   #[[$LB:map[0-9]*]] = affine_map<()[s0, s1] -> (s0, s1 + 1)>
// CHECK-DAG:   #[[$UB:map[0-9]*]] = affine_map<()[s0] -> ((-s0) ceildiv 2 + 15)>
// CHECK-LABEL: func.func @max_lower_bound
// CHECK-NEXT:    %[[LB:.*]] = affine.max #[[$LB]]()[%N, %M]
// CHECK-NEXT:    affine.for %j = 0 to 4 {
// CHECK-NEXT:      affine.for %i = 0 to #[[$UB]]()[%[[LB]]] {
// CHECK-NEXT:        affine.load %A[%i * 2 + %j + symbol(%[[LB]])] : memref<100xf32>
// CHECK:           affine.for %i_0 = max #{{.*}}(%j)[%N] to 30 step 2 {
func.func @max_lower_bound(%A: memref<100xf32>, %N: index, %M: index) {
  affine.for %j = 0 to 4 {
    affine.for %i = max affine_map<()[s0, s1] -> (s0, s1 + 1)>()[%N, %M] to 30 step 2 {
      %v = affine.load %A[%i + %j] : memref<100xf32>
      affine.store %v, %A[%i] : memref<100xf32>
    }
    affine.for %i = max affine_map<(d0)[s0] -> (d0, s0)>(%j)[%N] to 30 step 2 {
      %v = affine.load %A[%i + %j] : memref<100xf32>
      affine.store %v, %A[%i] : memref<100xf32>
    }
  }
  return
}

// -----

// Better than MLIR, which leaves an affine.parallel with a min bound alone: every dimension
// with a single lower bound is normalized, min upper bounds included.
// CHECK-LABEL: func.func @parallel_min
// CHECK-NEXT:    affine.parallel (%i, %j) = (0, 0) to (min(20, %N ceildiv 3 + 6), 5) {
// CHECK-NEXT:      affine.load %A[%i * 3 + %j + 2] : memref<100xf32>
func.func @parallel_min(%A: memref<100xf32>, %N: index) {
  affine.parallel (%i, %j) = (2, 0) to (min(60, %N + 20), 5) step (3, 1) {
    %v = affine.load %A[%i + %j] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  return
}
