// RUN: affine-opt %s -split-input-file '-affine-loop-unroll=unroll-full=true unroll-full-threshold=2' | filecheck %s

// With unroll-full-threshold=2 this loop (3 iterations) stays as it is.
func.func @full(%A: memref<16xf32>) {
  affine.for %j = 0 to 3 {
    %a = affine.load %A[%j] : memref<16xf32>
    affine.store %a, %A[%j + 4] : memref<16xf32>
  }
  return
}

// CHECK-LABEL: func.func @full(%A: memref<16xf32>) {
// CHECK-NEXT: affine.for %j = 0 to 3 {
// CHECK-NEXT: %a = affine.load %A[%j] : memref<16xf32>
// CHECK-NEXT: affine.store %a, %A[%j + 4] : memref<16xf32>
// CHECK-NEXT: }
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
// CHECK-LABEL: func.func @outer(%A: memref<16x16xf32>) {
// CHECK-NEXT: %c0 = arith.constant 0 : index
// CHECK-NEXT: affine.for %j = 0 to 4 {
// CHECK-NEXT: %a = affine.load %A[%c0, %j] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a, %A[%j, %c0] : memref<16x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %i_1 = affine.apply #map(%c0)
// CHECK-NEXT: affine.for %j_0 = 0 to 4 {
// CHECK-NEXT: %a_0 = affine.load %A[%i_1, %j_0] : memref<16x16xf32>
// CHECK-NEXT: affine.store %a_0, %A[%j_0, %i_1] : memref<16x16xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }
