// RUN: affine-opt %s -split-input-file -affine-loop-unroll=unroll-full=true | filecheck %s

// Full unrolling: the IV becomes a constant (at the function entry) plus affine.apply.
func.func @full(%A: memref<16xf32>) {
  affine.for %j = 0 to 3 {
    %a = affine.load %A[%j] : memref<16xf32>
    affine.store %a, %A[%j + 4] : memref<16xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-LABEL: func.func @full(%A: memref<16xf32>) {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: %a = affine.load %A[%c0] : memref<16xf32>
// CHECK-NEXT: affine.store %a, %A[%c0 + 4] : memref<16xf32>
// CHECK-NEXT: %j_1 = affine.apply #map(%c0)
// CHECK-NEXT: %a_0 = affine.load %A[%j_1] : memref<16xf32>
// CHECK-NEXT: affine.store %a_0, %A[%j_1 + 4] : memref<16xf32>
// CHECK-NEXT: %j_2 = affine.apply #map1(%c0)
// CHECK-NEXT: %a_1 = affine.load %A[%j_2] : memref<16xf32>
// CHECK-NEXT: affine.store %a_1, %A[%j_2 + 4] : memref<16xf32>
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// unroll-full-threshold=2 fully unrolls outer loops too (MLIR's @loop_nest_outer_unroll).
func.func @outer(%A: memref<16x16xf32>) {
  affine.for %i = 0 to 2 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<16x16xf32>
      affine.store %a, %A[%j, %i] : memref<16x16xf32>
    }
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 2)>
// CHECK-DAG: #map2 = affine_map<(d0) -> (d0 + 3)>
// CHECK-LABEL: func.func @outer(%A: memref<16x16xf32>) {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: affine.for %i = 0 to 2 {
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
// CHECK-NEXT: return
// CHECK-NEXT: }
