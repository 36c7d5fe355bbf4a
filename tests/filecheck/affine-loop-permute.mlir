// RUN: affine-opt %s -affine-loop-permute="permutation=1,2,0" | filecheck %s --check-prefix=CHECK-120
// RUN: affine-opt %s -affine-loop-permute="permutation=1,0,2" | filecheck %s --check-prefix=CHECK-102
// RUN: affine-opt %s -affine-loop-permute="permutation=0,1,2" | filecheck %s --check-prefix=CHECK-012
// RUN: affine-opt %s -affine-loop-permute="permutation=0,2,1" | filecheck %s --check-prefix=CHECK-021
// RUN: affine-opt %s -affine-loop-permute="permutation=2,0,1" | filecheck %s --check-prefix=CHECK-201
// RUN: affine-opt %s -affine-loop-permute="permutation=2,1,0" | filecheck %s --check-prefix=CHECK-210
// RUN: affine-opt %s -affine-loop-permute="permutation=1,0" | filecheck %s --check-prefix=CHECK-10

// MLIR's loop-permute.mlir @permute with its unregistered "foo"/"bar" ops replaced by memory
// accesses (ours refuses to reorder ops of unknown effects, see affine-loop-permute-legality.mlir).
// permutation[k] is the new position of loop k (MLIR's permuteLoops): the loads read
// B[%i, %j] and C[%k] in every order, as MLIR's "foo"(%arg0, %arg1) and "bar"(%arg2).

// CHECK-120-LABEL: func.func @permute
func.func @permute(%A: memref<4x5x6xf32>, %B: memref<4x5xf32>, %C: memref<6xf32>) {
  %cst = arith.constant 1.0 : f32
  affine.store %cst, %C[0] : memref<6xf32>
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      affine.for %k = 0 to 6 {
        %b = affine.load %B[%i, %j] : memref<4x5xf32>
        %c = affine.load %C[%k] : memref<6xf32>
        %s = arith.addf %b, %c : f32
        affine.store %s, %A[%i, %j, %k] : memref<4x5x6xf32>
      }
    }
  }
  affine.store %cst, %C[1] : memref<6xf32>
  return
}
// CHECK-120:      affine.store %cst, %C[0]
// CHECK-120-NEXT: affine.for %k = 0 to 6 {
// CHECK-120-NEXT:   affine.for %i = 0 to 4 {
// CHECK-120-NEXT:     affine.for %j = 0 to 5 {
// CHECK-120-NEXT:       %b = affine.load %B[%i, %j]
// CHECK-120-NEXT:       %c = affine.load %C[%k]
// CHECK-120-NEXT:       arith.addf
// CHECK-120-NEXT:       affine.store %s, %A[%i, %j, %k]
// CHECK-120-NEXT:     }
// CHECK-120-NEXT:   }
// CHECK-120-NEXT: }
// CHECK-120-NEXT: affine.store %cst, %C[1]
// CHECK-120-NEXT: return

// CHECK-102:      affine.for %j = 0 to 5 {
// CHECK-102-NEXT:   affine.for %i = 0 to 4 {
// CHECK-102-NEXT:     affine.for %k = 0 to 6 {

// CHECK-012:      affine.for %i = 0 to 4 {
// CHECK-012-NEXT:   affine.for %j = 0 to 5 {
// CHECK-012-NEXT:     affine.for %k = 0 to 6 {

// CHECK-021:      affine.for %i = 0 to 4 {
// CHECK-021-NEXT:   affine.for %k = 0 to 6 {
// CHECK-021-NEXT:     affine.for %j = 0 to 5 {

// CHECK-201:      affine.for %j = 0 to 5 {
// CHECK-201-NEXT:   affine.for %k = 0 to 6 {
// CHECK-201-NEXT:     affine.for %i = 0 to 4 {

// CHECK-210:      affine.for %k = 0 to 6 {
// CHECK-210-NEXT:   affine.for %j = 0 to 5 {
// CHECK-210-NEXT:     affine.for %i = 0 to 4 {

// A shorter permutation applies to the outermost loops of the band.
// CHECK-10:      affine.for %j = 0 to 5 {
// CHECK-10-NEXT:   affine.for %i = 0 to 4 {
// CHECK-10-NEXT:     affine.for %k = 0 to 6 {
