// PolyBench/C 4.2 gramschmidt: QR decomposition of A (M x N) by modified Gram-Schmidt: Q (M x N),
// R (N x N); A is overwritten by the residuals. nrm is a scalar accumulator (iter_args).
#next = affine_map<(d0) -> (d0 + 1)>
func.func @gramschmidt(%m: index, %n: index, %A: memref<?x?xf32>, %R: memref<?x?xf32>, %Q: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %k = 0 to %n {
    %nrm = affine.for %i = 0 to %m iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%i, %k] : memref<?x?xf32>
      %p = arith.mulf %a, %a : f32
      %s = arith.addf %acc, %p : f32
      affine.yield %s : f32
    }
    %rkk = math.sqrt %nrm : f32
    affine.store %rkk, %R[%k, %k] : memref<?x?xf32>
    affine.for %i = 0 to %m {
      %a = affine.load %A[%i, %k] : memref<?x?xf32>
      %d = affine.load %R[%k, %k] : memref<?x?xf32>
      %q = arith.divf %a, %d : f32
      affine.store %q, %Q[%i, %k] : memref<?x?xf32>
    }
    affine.for %j = #next(%k) to %n {
      affine.store %zero, %R[%k, %j] : memref<?x?xf32>
      affine.for %i = 0 to %m {
        %q = affine.load %Q[%i, %k] : memref<?x?xf32>
        %a = affine.load %A[%i, %j] : memref<?x?xf32>
        %p = arith.mulf %q, %a : f32
        %rkj = affine.load %R[%k, %j] : memref<?x?xf32>
        %s = arith.addf %rkj, %p : f32
        affine.store %s, %R[%k, %j] : memref<?x?xf32>
      }
      affine.for %i = 0 to %m {
        %a = affine.load %A[%i, %j] : memref<?x?xf32>
        %q = affine.load %Q[%i, %k] : memref<?x?xf32>
        %rkj = affine.load %R[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %q, %rkj : f32
        %s = arith.subf %a, %p : f32
        affine.store %s, %A[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
