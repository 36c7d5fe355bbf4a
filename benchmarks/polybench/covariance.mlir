// PolyBench/C 4.2 covariance: the covariance matrix cov (M x M) of the N observations of M variables in
// data (N x M): column means (mean), centering in place, then cov = data^T*data / (float_n - 1).
#map = affine_map<(d0) -> (d0)>
func.func @covariance(%m: index, %n: index, %float_n: f32, %data: memref<?x?xf32>, %cov: memref<?x?xf32>,
                      %mean: memref<?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  affine.for %j = 0 to %m {
    affine.store %zero, %mean[%j] : memref<?xf32>
    affine.for %i = 0 to %n {
      %d = affine.load %data[%i, %j] : memref<?x?xf32>
      %mj = affine.load %mean[%j] : memref<?xf32>
      %s = arith.addf %mj, %d : f32
      affine.store %s, %mean[%j] : memref<?xf32>
    }
    %mj = affine.load %mean[%j] : memref<?xf32>
    %q = arith.divf %mj, %float_n : f32
    affine.store %q, %mean[%j] : memref<?xf32>
  }
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %m {
      %mj = affine.load %mean[%j] : memref<?xf32>
      %d = affine.load %data[%i, %j] : memref<?x?xf32>
      %s = arith.subf %d, %mj : f32
      affine.store %s, %data[%i, %j] : memref<?x?xf32>
    }
  }
  affine.for %i = 0 to %m {
    affine.for %j = #map(%i) to %m {
      affine.store %zero, %cov[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %n {
        %dki = affine.load %data[%k, %i] : memref<?x?xf32>
        %dkj = affine.load %data[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %dki, %dkj : f32
        %c = affine.load %cov[%i, %j] : memref<?x?xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %cov[%i, %j] : memref<?x?xf32>
      }
      %c = affine.load %cov[%i, %j] : memref<?x?xf32>
      %nm1 = arith.subf %float_n, %one : f32
      %q = arith.divf %c, %nm1 : f32
      affine.store %q, %cov[%i, %j] : memref<?x?xf32>
      %cij = affine.load %cov[%i, %j] : memref<?x?xf32>
      affine.store %cij, %cov[%j, %i] : memref<?x?xf32>
    }
  }
  return
}
