// PolyBench/C 4.2 correlation: the correlation matrix corr (M x M) of the N observations of M variables
// in data (N x M): column means and standard deviations (those <= eps = 0.1 taken as 1), centering and
// reducing data in place, then corr = data^T*data with a unit diagonal.
#map = affine_map<(d0) -> (d0)>
#next = affine_map<(d0) -> (d0 + 1)>
#last = affine_map<()[s0] -> (s0 - 1)>
func.func @correlation(%m: index, %n: index, %float_n: f32, %data: memref<?x?xf32>, %corr: memref<?x?xf32>,
                       %mean: memref<?xf32>, %stddev: memref<?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %eps = arith.constant 1.000000e-01 : f32
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
  affine.for %j = 0 to %m {
    affine.store %zero, %stddev[%j] : memref<?xf32>
    affine.for %i = 0 to %n {
      %d = affine.load %data[%i, %j] : memref<?x?xf32>
      %mj = affine.load %mean[%j] : memref<?xf32>
      %c = arith.subf %d, %mj : f32
      %d2 = affine.load %data[%i, %j] : memref<?x?xf32>
      %mj2 = affine.load %mean[%j] : memref<?xf32>
      %c2 = arith.subf %d2, %mj2 : f32
      %p = arith.mulf %c, %c2 : f32
      %sj = affine.load %stddev[%j] : memref<?xf32>
      %s = arith.addf %sj, %p : f32
      affine.store %s, %stddev[%j] : memref<?xf32>
    }
    %sj = affine.load %stddev[%j] : memref<?xf32>
    %q = arith.divf %sj, %float_n : f32
    affine.store %q, %stddev[%j] : memref<?xf32>
    %sq = affine.load %stddev[%j] : memref<?xf32>
    %r = math.sqrt %sq : f32
    affine.store %r, %stddev[%j] : memref<?xf32>
    %sd = affine.load %stddev[%j] : memref<?xf32>
    %small = arith.cmpf ole, %sd, %eps : f32
    %sel = arith.select %small, %one, %sd : f32
    affine.store %sel, %stddev[%j] : memref<?xf32>
  }
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %m {
      %mj = affine.load %mean[%j] : memref<?xf32>
      %d = affine.load %data[%i, %j] : memref<?x?xf32>
      %c = arith.subf %d, %mj : f32
      affine.store %c, %data[%i, %j] : memref<?x?xf32>
      %sqn = math.sqrt %float_n : f32
      %sj = affine.load %stddev[%j] : memref<?xf32>
      %den = arith.mulf %sqn, %sj : f32
      %c2 = affine.load %data[%i, %j] : memref<?x?xf32>
      %q = arith.divf %c2, %den : f32
      affine.store %q, %data[%i, %j] : memref<?x?xf32>
    }
  }
  affine.for %i = 0 to #last()[%m] {
    affine.store %one, %corr[%i, %i] : memref<?x?xf32>
    affine.for %j = #next(%i) to %m {
      affine.store %zero, %corr[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %n {
        %dki = affine.load %data[%k, %i] : memref<?x?xf32>
        %dkj = affine.load %data[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %dki, %dkj : f32
        %c = affine.load %corr[%i, %j] : memref<?x?xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %corr[%i, %j] : memref<?x?xf32>
      }
      %cij = affine.load %corr[%i, %j] : memref<?x?xf32>
      affine.store %cij, %corr[%j, %i] : memref<?x?xf32>
    }
  }
  affine.store %one, %corr[symbol(%m) - 1, symbol(%m) - 1] : memref<?x?xf32>
  return
}
