// RUN: affine-opt %s | filecheck %s

// affine.parallel: bounds per IV as expressions of SSA values (max/min groups),
// steps only when one is not 1, reductions with their result types.

// CHECK-LABEL: func.func @par(%A: memref<64x64xf32>, %N: index) -> f32 {
func.func @par(%A: memref<64x64xf32>, %N: index) -> f32 {
  // CHECK-NEXT: affine.parallel (%i, %j) = (0, 0) to (64, 64) {
  affine.parallel (%i, %j) = (0, 0) to (64, 64) step (1, 1) {
    %v = affine.load %A[%i, %j] : memref<64x64xf32>
    // CHECK: affine.store %v, %A[%j, %i] : memref<64x64xf32>
    affine.store %v, %A[%j, %i] : memref<64x64xf32>
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: %s = affine.parallel (%i_0) = (max(0, symbol(%N) - 64)) to (min(64, symbol(%N))) step (2) reduce ("addf") -> (f32) {
  %s = affine.parallel (%i) = (max(0, symbol(%N) - 64)) to (min(64, symbol(%N))) step (2) reduce ("addf") -> (f32) {
    %v = affine.load %A[%i, %i] : memref<64x64xf32>
    // CHECK: affine.yield %v_0 : f32
    affine.yield %v : f32
  }
  // CHECK: %m:2 = affine.parallel (%i_1, %j_0) = (0, 0) to (symbol(%N), 64) step (4, 8) reduce ("maximumf", "minimumf") -> (f32, f32) {
  %m:2 = affine.parallel (%i, %j) = (0, 0) to (symbol(%N), 64) step (4, 8) reduce ("maximumf", "minimumf") -> (f32, f32) {
    %v = affine.load %A[%i, %j] : memref<64x64xf32>
    affine.yield %v, %v : f32, f32
  }
  // CHECK: %r = arith.addf %s, %m#1 : f32
  %r = arith.addf %s, %m#1 : f32
  return %r : f32
}
