// RUN: affine-opt %s -split-input-file -canonicalize="test-convergence" | filecheck %s

// Empty loops folded (results = inits / yielded values), zero-trip loops erased, single-iteration
// loops promoted, unused iter_args removed. The first cases are MLIR's
// (mlir/test/Dialect/Affine/canonicalize.mlir) with MLIR's results; differences are noted.

// CHECK-LABEL: func.func @fold_empty_loops
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0
// CHECK-NEXT:    return %[[ZERO]]
func.func @fold_empty_loops() -> index {
  %c0 = arith.constant 0 : index
  affine.for %i = 0 to 10 {
  }
  %res = affine.for %i = 0 to 10 iter_args(%arg = %c0) -> index {
    affine.yield %arg : index
  }
  return %res : index
}

// -----

// CHECK-LABEL: func.func @fold_empty_loops_trip_count_1
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2
// CHECK-NEXT:    return %[[ONE]], %[[TWO]], %[[ZERO]], %[[TWO]]
func.func @fold_empty_loops_trip_count_1() -> (index, index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %res1:2 = affine.for %i = 0 to 1 iter_args(%arg0 = %c2, %arg1 = %c0) -> (index, index) {
    affine.yield %c1, %arg0 : index, index
  }
  %res2:2 = affine.for %i = 0 to 2 step 3 iter_args(%arg0 = %c2, %arg1 = %c0) -> (index, index) {
    affine.yield %arg1, %arg0 : index, index
  }
  return %res1#0, %res1#1, %res2#0, %res2#1 : index, index, index, index
}

// -----

// CHECK-LABEL: func.func @fold_empty_loop_trip_count_unknown
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1
// CHECK-NEXT:    return %[[ZERO]], %[[ONE]]
func.func @fold_empty_loop_trip_count_unknown(%in : index) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %res:2 = affine.for %i = 0 to %in iter_args(%arg0 = %c0, %arg1 = %c1) -> (index, index) {
    affine.yield %arg0, %arg1 : index, index
  }
  return %res#0, %res#1 : index, index
}

// -----

// CHECK-LABEL: func.func @empty_loops_not_folded
// CHECK:         affine.for
// CHECK:         affine.for
func.func @empty_loops_not_folded(%in : index) -> (index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %res = affine.for %i = 0 to %in iter_args(%arg = %c0) -> index {
    affine.yield %c1 : index
  }
  %res2:2 = affine.for %i = 0 to 10 iter_args(%arg0 = %c0, %arg1 = %c1) -> (index, index) {
    affine.yield %arg1, %arg0 : index, index
  }
  return %res, %res2#0, %res2#1 : index, index, index
}

// -----

// MLIR keeps `affine.for %i = 0 to 0 {...}` (no results); we erase it.
// CHECK-LABEL: func.func @zero_iter_loop
// CHECK-NEXT:    return
func.func @zero_iter_loop(%A: memref<4xf32>) {
  affine.for %i = 0 to 0 {
    %load = affine.load %A[%i] : memref<4xf32>
    affine.store %load, %A[%i] : memref<4xf32>
  }
  return
}

// -----

// CHECK-LABEL: func.func @fold_zero_iter_loops
// CHECK-SAME:    %[[ARG:.*]]: index
// CHECK-NEXT:    return %[[ARG]]
func.func @fold_zero_iter_loops(%in : index) -> index {
  %c1 = arith.constant 1 : index
  %res = affine.for %i = 0 to 0 iter_args(%loop_arg = %in) -> index {
    %yield = arith.addi %loop_arg, %c1 : index
    affine.yield %yield : index
  }
  return %res : index
}

// -----

// CHECK-LABEL: func.func @fold_empty_loop_iv
// CHECK-SAME:    %[[INIT:.*]]: index
// CHECK-NEXT:    %[[C9:.*]] = arith.constant 9 : index
// CHECK-NEXT:    return %[[C9]], %[[INIT]]
func.func @fold_empty_loop_iv(%init: index) -> (index, index) {
  %res:2 = affine.for %i = 0 to 10 step 1 iter_args(%arg0 = %init, %arg1 = %init) -> (index, index) {
    affine.yield %i, %arg1 : index, index
  }
  return %res#0, %res#1 : index, index
}

// -----

// Not in MLIR's canonicalizer: one-iteration loops are inlined (IV = lower bound, iter_args =
// inits, results = yielded values), also when the bounds differ by the step and are symbolic.
// CHECK-LABEL: func.func @promote_single_iteration
// CHECK-SAME:    (%[[A:.*]]: memref<16xf32>, %[[N:.*]]: index)
// CHECK-NEXT:    %[[CST:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[V:.*]] = affine.load %[[A]][3]
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[V]], %[[CST]] : f32
// CHECK-NEXT:    affine.for %[[J:.*]] = 0 to 8 {
// CHECK-NEXT:      affine.store %[[S]], %[[A]][%[[J]] + 1]
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.store %[[S]], %[[A]][symbol(%[[N]])]
// CHECK-NEXT:    return %[[S]]
func.func @promote_single_iteration(%A: memref<16xf32>, %N: index) -> f32 {
  %cst = arith.constant 0.0 : f32
  %r = affine.for %i = 3 to 4 iter_args(%acc = %cst) -> f32 {
    %v = affine.load %A[%i] : memref<16xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  affine.for %j = 0 to 8 {
    affine.for %k = affine_map<(d0) -> (d0)>(%j) to affine_map<(d0) -> (d0 + 1)>(%j) {
      affine.store %r, %A[%k + 1] : memref<16xf32>
    }
  }
  affine.for %j = affine_map<()[s0] -> (s0)>()[%N] to affine_map<()[s0] -> (s0 + 2)>()[%N] step 2 {
    affine.store %r, %A[%j] : memref<16xf32>
  }
  return %r : f32
}

// -----

// Trip counts decided by the ranges of the outer loop: `%i + 8 to 16 step 8` runs once for
// %i in [0, 8); `0 to %i - 8` never runs.
// CHECK-LABEL: func.func @trip_count_from_outer_loop
// CHECK-NEXT:    %[[CST:.*]] = arith.constant
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 8 {
// CHECK-NEXT:      affine.store %[[CST]], %{{.*}}[%[[I]] + 8]
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @trip_count_from_outer_loop(%A: memref<16xf32>) {
  %cst = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = affine_map<(d0) -> (d0 + 8)>(%i) to 16 step 8 {
      affine.store %cst, %A[%j] : memref<16xf32>
    }
    affine.for %j = 0 to affine_map<(d0) -> (d0 - 8)>(%i) {
      affine.store %cst, %A[%j] : memref<16xf32>
    }
  }
  return
}

// -----

// Unused results whose iter_args only feed themselves are removed (MLIR keeps them).
// CHECK-LABEL: func.func @unused_iter_args
// CHECK:         %[[R:.*]] = affine.for %{{.*}} = 0 to 16 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:      affine.load
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]]
// CHECK-NEXT:      affine.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]
func.func @unused_iter_args(%A: memref<16xf32>) -> f32 {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %r:3 = affine.for %i = 0 to 16 iter_args(%acc = %cst, %cnt = %c0, %same = %cst) -> (f32, index, f32) {
    %v = affine.load %A[%i] : memref<16xf32>
    %s = arith.addf %acc, %v : f32
    %n = affine.apply affine_map<(d0) -> (d0 + 1)>(%cnt)
    affine.yield %s, %n, %same : f32, index, f32
  }
  return %r#0 : f32
}

// -----

// A single-iteration loop with a max lower bound: the IV becomes the whole max (the 0 is kept
// whichever result comes first).
// CHECK-DAG:   #[[MAX:.*]] = affine_map<(d0) -> (0, d0)>
// CHECK-LABEL: func.func @promote_max_lower_bound
// CHECK:         affine.for %[[I:.*]] = -1 to 2 {
// CHECK-NEXT:      %[[J:.*]] = affine.max #[[MAX]](%[[I]])
// CHECK-NEXT:      arith.index_cast %[[J]] : index to i64
func.func @promote_max_lower_bound(%A: memref<8xi64>) {
  affine.for %i = -1 to 2 {
    affine.for %j = max affine_map<(d0) -> (d0, 0)>(%i) to affine_map<(d0) -> (d0 + 2)>(%i) step 2 {
      %v = arith.index_cast %j : index to i64
      affine.store %v, %A[%i + 1] : memref<8xi64>
    }
  }
  return
}
