// PolyBench/C 4.2 nussinov: RNA secondary-structure folding by dynamic programming. seq (N, bases 0..3 as
// f32) and table (N x N, f32 here; int in PolyBench); i runs from N - 1 down to 0. max_score is
// arith.maximumf, match(b1, b2) is (b1 + b2 == 3 ? 1 : 0).
#rev = affine_map<(d0)[s0] -> (s0 - d0 - 1)>
#next = affine_map<(d0) -> (d0 + 1)>
#j_ge_1 = affine_set<(d0) : (d0 - 1 >= 0)>
#i_lt_n_1 = affine_set<(d0)[s0] : (s0 - d0 - 2 >= 0)>
#both = affine_set<(d0, d1)[s0] : (d1 - 1 >= 0, s0 - d0 - 2 >= 0)>
#i_lt_j_1 = affine_set<(d0, d1) : (d1 - d0 - 2 >= 0)>
func.func @nussinov(%n: index, %seq: memref<?xf32>, %table: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %three = arith.constant 3.000000e+00 : f32
  affine.for %ii = 0 to %n {
    %i = affine.apply #rev(%ii)[%n]
    affine.for %j = #next(%i) to %n {
      affine.if #j_ge_1(%j) {
        %t0 = affine.load %table[%i, %j] : memref<?x?xf32>
        %t1 = affine.load %table[%i, %j - 1] : memref<?x?xf32>
        %m = arith.maximumf %t0, %t1 : f32
        affine.store %m, %table[%i, %j] : memref<?x?xf32>
      }
      affine.if #i_lt_n_1(%i)[%n] {
        %t0 = affine.load %table[%i, %j] : memref<?x?xf32>
        %t1 = affine.load %table[%i + 1, %j] : memref<?x?xf32>
        %m = arith.maximumf %t0, %t1 : f32
        affine.store %m, %table[%i, %j] : memref<?x?xf32>
      }
      affine.if #both(%i, %j)[%n] {
        // Don't allow adjacent elements to bond.
        affine.if #i_lt_j_1(%i, %j) {
          %t0 = affine.load %table[%i, %j] : memref<?x?xf32>
          %t1 = affine.load %table[%i + 1, %j - 1] : memref<?x?xf32>
          %si = affine.load %seq[%i] : memref<?xf32>
          %sj = affine.load %seq[%j] : memref<?xf32>
          %sum = arith.addf %si, %sj : f32
          %is3 = arith.cmpf oeq, %sum, %three : f32
          %match = arith.select %is3, %one, %zero : f32
          %s = arith.addf %t1, %match : f32
          %m = arith.maximumf %t0, %s : f32
          affine.store %m, %table[%i, %j] : memref<?x?xf32>
        } else {
          %t0 = affine.load %table[%i, %j] : memref<?x?xf32>
          %t1 = affine.load %table[%i + 1, %j - 1] : memref<?x?xf32>
          %m = arith.maximumf %t0, %t1 : f32
          affine.store %m, %table[%i, %j] : memref<?x?xf32>
        }
      }
      affine.for %k = #next(%i) to %j {
        %t0 = affine.load %table[%i, %j] : memref<?x?xf32>
        %a = affine.load %table[%i, %k] : memref<?x?xf32>
        %b = affine.load %table[%k + 1, %j] : memref<?x?xf32>
        %s = arith.addf %a, %b : f32
        %m = arith.maximumf %t0, %s : f32
        affine.store %m, %table[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
