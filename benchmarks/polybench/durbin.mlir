// PolyBench/C 4.2 durbin: the Levinson-Durbin recursion, solving the Yule-Walker equations for the
// autocorrelations r (N) into y (N); alpha and beta carried across k as iter_args, z a local array.
#map = affine_map<(d0) -> (d0)>
func.func @durbin(%n: index, %r: memref<?xf32>, %y: memref<?xf32>) {
  %z = memref.alloc(%n) : memref<?xf32>
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %r0 = affine.load %r[0] : memref<?xf32>
  %nr0 = arith.negf %r0 : f32
  affine.store %nr0, %y[0] : memref<?xf32>
  %r0_a = affine.load %r[0] : memref<?xf32>
  %alpha0 = arith.negf %r0_a : f32
  %res:2 = affine.for %k = 1 to %n iter_args(%alpha = %alpha0, %beta = %one) -> (f32, f32) {
    %aa = arith.mulf %alpha, %alpha : f32
    %omaa = arith.subf %one, %aa : f32
    %beta_k = arith.mulf %omaa, %beta : f32
    %sum = affine.for %i = 0 to #map(%k) iter_args(%acc = %zero) -> (f32) {
      %rv = affine.load %r[%k - %i - 1] : memref<?xf32>
      %yi = affine.load %y[%i] : memref<?xf32>
      %p = arith.mulf %rv, %yi : f32
      %s = arith.addf %acc, %p : f32
      affine.yield %s : f32
    }
    %rk = affine.load %r[%k] : memref<?xf32>
    %t = arith.addf %rk, %sum : f32
    %nt = arith.negf %t : f32
    %alpha_k = arith.divf %nt, %beta_k : f32
    affine.for %i = 0 to #map(%k) {
      %yi = affine.load %y[%i] : memref<?xf32>
      %yr = affine.load %y[%k - %i - 1] : memref<?xf32>
      %p = arith.mulf %alpha_k, %yr : f32
      %s = arith.addf %yi, %p : f32
      affine.store %s, %z[%i] : memref<?xf32>
    }
    affine.for %i = 0 to #map(%k) {
      %zi = affine.load %z[%i] : memref<?xf32>
      affine.store %zi, %y[%i] : memref<?xf32>
    }
    affine.store %alpha_k, %y[%k] : memref<?xf32>
    affine.yield %alpha_k, %beta_k : f32, f32
  }
  memref.dealloc %z : memref<?xf32>
  return
}
