// RUN: affine-opt %s -split-input-file -affine-loop-unroll=unroll-factor=4 | filecheck %s

// Constant trip count, a multiple of the factor: no cleanup loop.
func.func @no_cleanup(%A: memref<16xf32>) {
  affine.for %j = 0 to 8 {
    %a = affine.load %A[%j] : memref<16xf32>
    affine.store %a, %A[%j + 8] : memref<16xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @no_cleanup(%A: memref<16xf32>) {
// CHECK-NEXT: affine.for %j = 0 to 8 step 4 {
// CHECK-NEXT: %a = affine.load %A[%j] : memref<16xf32>
// CHECK-NEXT: affine.store %a, %A[%j + 8] : memref<16xf32>
// CHECK-NEXT: %j_1 = affine.apply #map(%j)
// CHECK-NEXT: %a_0 = affine.load %A[%j_1] : memref<16xf32>
// CHECK-NEXT: affine.store %a_0, %A[%j_1 + 8] : memref<16xf32>
// CHECK-NEXT: %j_2 = affine.apply #map1(%j)
// CHECK-NEXT: %a_1 = affine.load %A[%j_2] : memref<16xf32>
// CHECK-NEXT: affine.store %a_1, %A[%j_2 + 8] : memref<16xf32>
// CHECK-NEXT: %j_3 = affine.apply #map2(%j)
// CHECK-NEXT: %a_2 = affine.load %A[%j_3] : memref<16xf32>
// CHECK-NEXT: affine.store %a_2, %A[%j_3 + 8] : memref<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Trip count 10, factor 4: main loop to 8, cleanup loop 8 to 10 (MLIR's @unroll_unit_stride_cleanup).
func.func @constant_cleanup(%A: memref<16xf32>) {
  affine.for %j = 0 to 10 {
    %a = affine.load %A[%j] : memref<16xf32>
    affine.store %a, %A[%j] : memref<16xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @constant_cleanup(%A: memref<16xf32>) {
// CHECK-NEXT: affine.for %j = 0 to 8 step 4 {
// CHECK-NEXT: %a = affine.load %A[%j] : memref<16xf32>
// CHECK-NEXT: affine.store %a, %A[%j] : memref<16xf32>
// CHECK-NEXT: %j_1 = affine.apply #map(%j)
// CHECK-NEXT: %a_0 = affine.load %A[%j_1] : memref<16xf32>
// CHECK-NEXT: affine.store %a_0, %A[%j_1] : memref<16xf32>
// CHECK-NEXT: %j_2 = affine.apply #map1(%j)
// CHECK-NEXT: %a_1 = affine.load %A[%j_2] : memref<16xf32>
// CHECK-NEXT: affine.store %a_1, %A[%j_2] : memref<16xf32>
// CHECK-NEXT: %j_3 = affine.apply #map2(%j)
// CHECK-NEXT: %a_2 = affine.load %A[%j_3] : memref<16xf32>
// CHECK-NEXT: affine.store %a_2, %A[%j_3] : memref<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.for %j_0 = 8 to 10 {
// CHECK-NEXT: %a_3 = affine.load %A[%j_0] : memref<16xf32>
// CHECK-NEXT: affine.store %a_3, %A[%j_0] : memref<16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Symbolic trip count with a step: main loop to lb + ((N ceildiv 3) floordiv 4) * 12; the cleanup
// lower bound is max-ed with the lower bound, since the trip count may be negative.
func.func @symbolic(%A: memref<64xf32>, %N: index) {
  affine.for %k = 0 to %N step 3 {
    %a = affine.load %A[%k] : memref<64xf32>
    affine.store %a, %A[%k + 1] : memref<64xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<()[s0] -> (((s0 ceildiv 3) floordiv 4) * 12)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 3)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 6)>
// CHECK-DAG: #map3 = affine_map<(d0) -> (d0 + 9)>
// CHECK-DAG: #map4 = affine_map<()[s0] -> (0, ((s0 ceildiv 3) floordiv 4) * 12)>
// CHECK-LABEL: func.func @symbolic(%A: memref<64xf32>, %N: index) {
// CHECK-NEXT: affine.for %k = 0 to #map()[%N] step 12 {
// CHECK-NEXT: %a = affine.load %A[%k] : memref<64xf32>
// CHECK-NEXT: affine.store %a, %A[%k + 1] : memref<64xf32>
// CHECK-NEXT: %k_1 = affine.apply #map1(%k)
// CHECK-NEXT: %a_0 = affine.load %A[%k_1] : memref<64xf32>
// CHECK-NEXT: affine.store %a_0, %A[%k_1 + 1] : memref<64xf32>
// CHECK-NEXT: %k_2 = affine.apply #map2(%k)
// CHECK-NEXT: %a_1 = affine.load %A[%k_2] : memref<64xf32>
// CHECK-NEXT: affine.store %a_1, %A[%k_2 + 1] : memref<64xf32>
// CHECK-NEXT: %k_3 = affine.apply #map3(%k)
// CHECK-NEXT: %a_2 = affine.load %A[%k_3] : memref<64xf32>
// CHECK-NEXT: affine.store %a_2, %A[%k_3 + 1] : memref<64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.for %k_0 = max #map4()[%N] to %N step 3 {
// CHECK-NEXT: %a_3 = affine.load %A[%k_0] : memref<64xf32>
// CHECK-NEXT: affine.store %a_3, %A[%k_0 + 1] : memref<64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// iter_args chain through the copies; the cleanup loop takes the main loop's result.
func.func @reduction(%A: memref<64xf32>) -> f32 {
  %cst = arith.constant 0.0 : f32
  %r = affine.for %k = 0 to 6 iter_args(%acc = %cst) -> (f32) {
    %a = affine.load %A[%k] : memref<64xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s : f32
  }
  return %r : f32
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @reduction(%A: memref<64xf32>) -> f32 {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %a = affine.load %A[%c0] : memref<64xf32>
// CHECK-NEXT: %s = arith.addf %cst, %a : f32
// CHECK-NEXT: %k_1 = affine.apply #map(%c0)
// CHECK-NEXT: %a_0 = affine.load %A[%k_1] : memref<64xf32>
// CHECK-NEXT: %s_0 = arith.addf %s, %a_0 : f32
// CHECK-NEXT: %k_2 = affine.apply #map1(%c0)
// CHECK-NEXT: %a_1 = affine.load %A[%k_2] : memref<64xf32>
// CHECK-NEXT: %s_1 = arith.addf %s_0, %a_1 : f32
// CHECK-NEXT: %k_3 = affine.apply #map2(%c0)
// CHECK-NEXT: %a_2 = affine.load %A[%k_3] : memref<64xf32>
// CHECK-NEXT: %s_2 = arith.addf %s_1, %a_2 : f32
// CHECK-NEXT: %r = affine.for %k = 4 to 6 iter_args(%acc = %s_2) -> (f32) {
// CHECK-NEXT: %a_3 = affine.load %A[%k] : memref<64xf32>
// CHECK-NEXT: %s_3 = arith.addf %acc, %a_3 : f32
// CHECK-NEXT: affine.yield %s_3 : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %r : f32
// CHECK-NEXT: }

// -----

// Only innermost loops are unrolled; a loop with a constant trip count below the factor is left alone.
func.func @innermost(%A: memref<16x16xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<16x16xf32>
      affine.store %a, %A[%j, %i] : memref<16x16xf32>
    }
  }
  affine.for %i = 0 to 3 {
    %a = affine.load %A[%i, 0] : memref<16x16xf32>
    affine.store %a, %A[0, %i] : memref<16x16xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @innermost(%A: memref<16x16xf32>) {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: affine.for %i = 0 to 16 {
// CHECK-NEXT: %a = affine.load %A[%i, %c0] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a, %A[%c0, %i] : memref<16x16xf32>
// CHECK-NEXT: %j_1 = affine.apply #map(%c0)
// CHECK-NEXT: %a_0 = affine.load %A[%i, %j_1] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_0, %A[%j_1, %i] : memref<16x16xf32>
// CHECK-NEXT: %j_2 = affine.apply #map1(%c0)
// CHECK-NEXT: %a_1 = affine.load %A[%i, %j_2] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_1, %A[%j_2, %i] : memref<16x16xf32>
// CHECK-NEXT: %j_3 = affine.apply #map2(%c0)
// CHECK-NEXT: %a_2 = affine.load %A[%i, %j_3] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_2, %A[%j_3, %i] : memref<16x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.for %i_0 = 0 to 3 {
// CHECK-NEXT: %a_3 = affine.load %A[%i_0, 0] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_3, %A[0, %i_0] : memref<16x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// A min upper bound whose trip count may not be a multiple of 4: refused, as MLIR does.
func.func @min_bound(%A: memref<64xf32>, %N: index, %M: index) {
  affine.for %k = 0 to min affine_map<()[s0, s1] -> (s0, s1)>()[%N, %M] {
    %a = affine.load %A[%k] : memref<64xf32>
    affine.store %a, %A[%k] : memref<64xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<()[s0, s1] -> (s0, s1)>
// CHECK-LABEL: func.func @min_bound(%A: memref<64xf32>, %N: index, %M: index) {
// CHECK-NEXT: affine.for %k = 0 to min #map()[%N, %M] {
// CHECK-NEXT: %a = affine.load %A[%k] : memref<64xf32>
// CHECK-NEXT: affine.store %a, %A[%k] : memref<64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }
