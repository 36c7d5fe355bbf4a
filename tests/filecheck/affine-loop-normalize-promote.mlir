// RUN: affine-opt %s -split-input-file -affine-loop-normalize="promote-single-iter=true" | filecheck %s

// With promote-single-iter, a loop that runs once is replaced by its body (innermost first,
// then the others are normalized), as MLIR's promoteIfSingleIteration does.

// MLIR's @single_iteration_loop.
// CHECK-LABEL: func.func @single_iteration_loop
// CHECK-NOT:     affine.for
// CHECK:         %[[V:.*]] = affine.load %in[0] : memref<1xf32>
// CHECK-NEXT:    affine.store %[[V]], %out[0] : memref<1xf32>
// CHECK-NEXT:    return
func.func @single_iteration_loop(%in: memref<1xf32>, %out: memref<1xf32>) {
  affine.for %i = 0 to 1 {
    %1 = affine.load %in[%i] : memref<1xf32>
    affine.store %1, %out[%i] : memref<1xf32>
  }
  return
}

// -----

// iter_args become their initial values, results the yielded values.
// CHECK-LABEL: func.func @iter_args
// CHECK-NEXT:    %[[C:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[V:.*]] = affine.load %A[symbol(%N)] : memref<100xf32>
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[C]], %[[V]] : f32
// CHECK-NEXT:    return %[[S]] : f32
func.func @iter_args(%A: memref<100xf32>, %N: index) -> f32 {
  %c = arith.constant 0.0 : f32
  %r = affine.for %i = %N to affine_map<()[s0] -> (s0 + 1)>()[%N] iter_args(%a = %c) -> f32 {
    %v = affine.load %A[%i] : memref<100xf32>
    %s = arith.addf %a, %v : f32
    affine.yield %s : f32
  }
  return %r : f32
}

// -----

// The IV becomes the lower bound: composed into affine maps, and for other users a
// constant, the bound's own operand, or an affine.apply of it.
// CHECK-DAG:   #[[$TWICE:map[0-9]*]] = affine_map<(d0) -> (d0 * 2)>
// CHECK-LABEL: func.func @lower_bound_values
// CHECK-NEXT:    affine.for %j = 0 to 4 {
// CHECK-NEXT:      %[[I:.*]] = affine.apply #[[$TWICE]](%j)
// CHECK-NEXT:      affine.store %[[I]], %A[%j * 2] : memref<100xindex>
// CHECK-NEXT:      %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT:      affine.store %[[C7]], %A[7] : memref<100xindex>
// CHECK-NEXT:      affine.store %N, %A[symbol(%N)] : memref<100xindex>
// CHECK-NEXT:    }
func.func @lower_bound_values(%A: memref<100xindex>, %N: index) {
  affine.for %j = 0 to 4 {
    affine.for %i = affine_map<(d0) -> (d0 * 2)>(%j) to affine_map<(d0) -> (d0 * 2 + 1)>(%j) {
      affine.store %i, %A[%i] : memref<100xindex>
    }
    affine.for %i = 7 to 8 {
      affine.store %i, %A[%i] : memref<100xindex>
    }
    affine.for %i = %N to affine_map<()[s0] -> (s0 + 2)>()[%N] step 2 {
      affine.store %i, %A[%i] : memref<100xindex>
    }
  }
  return
}

// -----

// Loops that run twice, or a number of times that depends on %N, are only normalized.
// CHECK-LABEL: func.func @not_single
// CHECK-NEXT:    affine.for %i = 0 to 2 {
// CHECK:         affine.for %i_0 = 0 to #{{.*}}()[%N] {
func.func @not_single(%A: memref<100xf32>, %N: index) {
  affine.for %i = 3 to 7 step 2 {
    %v = affine.load %A[%i] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  affine.for %i = 5 to affine_map<()[s0] -> (s0 + 6)>()[%N] step 4 {
    %v = affine.load %A[%i] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  return
}

// -----

// Nested single-iteration loops all go, innermost first (MLIR's post-order walk).
// CHECK-LABEL: func.func @nested
// CHECK-NEXT:    %[[V:.*]] = affine.load %A[5, 3] : memref<8x8xf32>
// CHECK-NEXT:    affine.store %[[V]], %A[3, 5] : memref<8x8xf32>
// CHECK-NEXT:    return
func.func @nested(%A: memref<8x8xf32>) {
  affine.for %i = 3 to 4 {
    affine.for %j = affine_map<(d0) -> (d0 + 2)>(%i) to affine_map<(d0) -> (d0 + 3)>(%i) {
      %v = affine.load %A[%j, %i] : memref<8x8xf32>
      affine.store %v, %A[%i, %j] : memref<8x8xf32>
    }
  }
  return
}
