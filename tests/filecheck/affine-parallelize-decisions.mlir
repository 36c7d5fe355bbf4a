// RUN: affine-opt %s -affine-parallelize -explain 2>&1 | filecheck %s

// Every loop's decision is recorded with its reason: the blocking dependence or iter_arg.

// CHECK: remark: affine-parallelize: applied: parallelized (%i): no dependence is carried
// CHECK: remark: affine-parallelize: refused: cannot parallelize (%j): RAW %A: S2 (affine.store at {{.*}}:17:7) -> S0 (affine.load at {{.*}}:14:7) carried by %j, distance (1)
// CHECK: remark: affine-parallelize: refused: cannot parallelize (%k): iter_arg %acc carries a value across iterations
// CHECK-LABEL: func.func @decisions
// CHECK:         affine.parallel (%i) = (0) to (8) {
// CHECK-NEXT:      affine.for %j = 1 to 8 {
func.func @decisions(%A: memref<8x8xf32>, %B: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 1 to 8 {
      %a = affine.load %A[%i, %j - 1] : memref<8x8xf32>
      %b = affine.load %A[%i, %j] : memref<8x8xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %A[%i, %j] : memref<8x8xf32>
    }
  }
  %c = arith.constant 0.0 : f32
  %r = affine.for %k = 0 to 8 iter_args(%acc = %c) -> (f32) {
    %v = affine.load %B[%k] : memref<8xf32>
    %t = arith.addf %acc, %v : f32
    affine.yield %t : f32
  }
  affine.store %r, %B[0] : memref<8xf32>
  return
}
