// RUN: affine-opt %s | filecheck %s

// affine.if conditions print through #set aliases; an if with results needs an else.
// A trailing operand-less affine.yield is not printed; an else that has nothing else
// prints as an empty region, as MLIR prints it.

// CHECK:      #set = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
// CHECK-NEXT: #set1 = affine_set<(d0, d1) : (d0 - d1 == 0)>

// CHECK-LABEL: func.func @guard(%A: memref<?xf32>, %N: index, %x: f32) {
func.func @guard(%A: memref<?xf32>, %N: index, %x: f32) {
  affine.for %i = -2 to 66 {
    // CHECK: %v = affine.if #set(%i)[%N] -> f32 {
    %v = affine.if affine_set<(d0)[s0] : (d0 >= 0, s0 - d0 - 1 >= 0)>(%i)[%N] -> f32 {
      // CHECK-NEXT: %l = affine.load %A[%i] : memref<?xf32>
      %l = affine.load %A[%i] : memref<?xf32>
      // CHECK-NEXT: affine.yield %l : f32
      affine.yield %l : f32
    // CHECK-NEXT: } else {
    } else {
      // CHECK-NEXT: affine.yield %x : f32
      affine.yield %x : f32
    // CHECK-NEXT: }
    }
    // CHECK-NEXT: affine.if #set1(%i, %i) {
    affine.if affine_set<(d0, d1) : (d0 == d1)>(%i, %i) {
      // CHECK-NEXT: affine.store %v, %A[0] : memref<?xf32>
      affine.store %v, %A[0] : memref<?xf32>
      affine.yield
    // CHECK-NEXT: } else {
    // CHECK-NEXT: }
    } else {
    }
    // CHECK-NEXT: affine.if #set1(%i, %i) {
    // CHECK-NEXT: }
    // CHECK-NEXT: }
    affine.if affine_set<(d0, d1) : (d0 - d1 == 0)>(%i, %i) {
    }
  }
  return
}
