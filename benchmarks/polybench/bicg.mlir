// PolyBench/C 4.2 bicg: s := A^T * r, q := A * p  (A: N x M, s, p: M, q, r: N).
func.func @bicg(%m: index, %n: index, %A: memref<?x?xf32>, %s: memref<?xf32>, %q: memref<?xf32>,
                %p: memref<?xf32>, %r: memref<?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to %m {
    affine.store %zero, %s[%i] : memref<?xf32>
  }
  affine.for %i = 0 to %n {
    affine.store %zero, %q[%i] : memref<?xf32>
    affine.for %j = 0 to %m {
      %sj = affine.load %s[%j] : memref<?xf32>
      %ri = affine.load %r[%i] : memref<?xf32>
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %ra = arith.mulf %ri, %a : f32
      %s1 = arith.addf %sj, %ra : f32
      affine.store %s1, %s[%j] : memref<?xf32>
      %qi = affine.load %q[%i] : memref<?xf32>
      %a2 = affine.load %A[%i, %j] : memref<?x?xf32>
      %pj = affine.load %p[%j] : memref<?xf32>
      %ap = arith.mulf %a2, %pj : f32
      %q1 = arith.addf %qi, %ap : f32
      affine.store %q1, %q[%i] : memref<?xf32>
    }
  }
  return
}
