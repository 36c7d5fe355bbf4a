// RUN: affine-opt %s -split-input-file -affine-loop-unroll-jam=unroll-jam-factor=4 | filecheck %s

// Factor 4, bounds %N to %N + 9 (MLIR's @loop_nest_unknown_count_2): the trip count is 9, the
// main loop runs to %N + 8 and the one-iteration cleanup is promoted (IV = affine.apply).
func.func @unknown_count(%A: memref<128x100xf32>, %N: index) {
  affine.for %i = %N to affine_map<()[s0] -> (s0 + 9)>()[%N] {
    affine.for %j = 1 to 100 {
      %a = affine.load %A[%i, %j] : memref<128x100xf32>
      affine.store %a, %A[%i, %j] : memref<128x100xf32>
    }
  }
  return
}

// CHECK-DAG: #map = affine_map<()[s0] -> (s0 + 8)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map3 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @unknown_count(%A: memref<128x100xf32>, %N: index) {
// CHECK-NEXT: affine.for %i = %N to #map()[%N] step 4 {
// CHECK-NEXT: affine.for %j = 1 to 100 {
// CHECK-NEXT: %a = affine.load %A[%i, %j] : memref<128x100xf32>
// CHECK-NEXT: affine.store %a, %A[%i, %j] : memref<128x100xf32>
// CHECK-NEXT: %i_1 = affine.apply #map1(%i)
// CHECK-NEXT: %a_0 = affine.load %A[%i_1, %j] : memref<128x100xf32>
// CHECK-NEXT: affine.store %a_0, %A[%i_1, %j] : memref<128x100xf32>
// CHECK-NEXT: %i_2 = affine.apply #map2(%i)
// CHECK-NEXT: %a_1 = affine.load %A[%i_2, %j] : memref<128x100xf32>
// CHECK-NEXT: affine.store %a_1, %A[%i_2, %j] : memref<128x100xf32>
// CHECK-NEXT: %i_3 = affine.apply #map3(%i)
// CHECK-NEXT: %a_2 = affine.load %A[%i_3, %j] : memref<128x100xf32>
// CHECK-NEXT: affine.store %a_2, %A[%i_3, %j] : memref<128x100xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: %i_0 = affine.apply #map()[%N]
// CHECK-NEXT: affine.for %j_0 = 1 to 100 {
// CHECK-NEXT: %a_3 = affine.load %A[%i_0, %j_0] : memref<128x100xf32>
// CHECK-NEXT: affine.store %a_3, %A[%i_0, %j_0] : memref<128x100xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Factor 4 on a trip count of 3: refused (as MLIR: trip count below the factor).
func.func @short(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 3 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %a, %A[%j, %i] : memref<8x8xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @short(%A: memref<8x8xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 3 {
// CHECK-NEXT: affine.for %j = 0 to 8 {
// CHECK-NEXT: %a = affine.load %A[%i, %j] : memref<8x8xf32>
// CHECK-NEXT: affine.store %a, %A[%j, %i] : memref<8x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// A dependence of distance (4, -1) is not reversed by a factor of 4 (copies are 1..3 apart): legal.
func.func @far_dependence(%A: memref<16x16xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j + 1] : memref<16x16xf32>
      affine.store %a, %A[%i + 4, %j] : memref<16x16xf32>
    }
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @far_dependence(%A: memref<16x16xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 8 step 4 {
// CHECK-NEXT: affine.for %j = 0 to 8 {
// CHECK-NEXT: %a = affine.load %A[%i, %j + 1] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a, %A[%i + 4, %j] : memref<16x16xf32>
// CHECK-NEXT: %i_1 = affine.apply #map(%i)
// CHECK-NEXT: %a_0 = affine.load %A[%i_1, %j + 1] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_0, %A[%i_1 + 4, %j] : memref<16x16xf32>
// CHECK-NEXT: %i_2 = affine.apply #map1(%i)
// CHECK-NEXT: %a_1 = affine.load %A[%i_2, %j + 1] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_1, %A[%i_2 + 4, %j] : memref<16x16xf32>
// CHECK-NEXT: %i_3 = affine.apply #map2(%i)
// CHECK-NEXT: %a_2 = affine.load %A[%i_3, %j + 1] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_2, %A[%i_3 + 4, %j] : memref<16x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }
