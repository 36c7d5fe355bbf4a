// PolyBench/C 4.2 atax: y := A^T * (A * x)  (A: M x N, x, y: N, tmp: M).
func.func @atax(%m: index, %n: index, %A: memref<?x?xf32>, %x: memref<?xf32>, %y: memref<?xf32>,
                %tmp: memref<?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to %n {
    affine.store %zero, %y[%i] : memref<?xf32>
  }
  affine.for %i = 0 to %m {
    affine.store %zero, %tmp[%i] : memref<?xf32>
    affine.for %j = 0 to %n {
      %t = affine.load %tmp[%i] : memref<?xf32>
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %xj = affine.load %x[%j] : memref<?xf32>
      %p = arith.mulf %a, %xj : f32
      %s = arith.addf %t, %p : f32
      affine.store %s, %tmp[%i] : memref<?xf32>
    }
    affine.for %j = 0 to %n {
      %yj = affine.load %y[%j] : memref<?xf32>
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %t = affine.load %tmp[%i] : memref<?xf32>
      %p = arith.mulf %a, %t : f32
      %s = arith.addf %yj, %p : f32
      affine.store %s, %y[%j] : memref<?xf32>
    }
  }
  return
}
