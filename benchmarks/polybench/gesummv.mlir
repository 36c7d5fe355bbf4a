// PolyBench/C 4.2 gesummv: y := alpha*A*x + beta*B*x, with tmp := A*x  (A, B: N x N; tmp, x, y: N).
func.func @gesummv(%n: index, %alpha: f32, %beta: f32, %A: memref<?x?xf32>, %B: memref<?x?xf32>,
                   %tmp: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to %n {
    affine.store %zero, %tmp[%i] : memref<?xf32>
    affine.store %zero, %y[%i] : memref<?xf32>
    affine.for %j = 0 to %n {
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %xj = affine.load %x[%j] : memref<?xf32>
      %ax = arith.mulf %a, %xj : f32
      %t = affine.load %tmp[%i] : memref<?xf32>
      %t1 = arith.addf %ax, %t : f32
      affine.store %t1, %tmp[%i] : memref<?xf32>
      %b = affine.load %B[%i, %j] : memref<?x?xf32>
      %xj2 = affine.load %x[%j] : memref<?xf32>
      %bx = arith.mulf %b, %xj2 : f32
      %yi = affine.load %y[%i] : memref<?xf32>
      %y1 = arith.addf %bx, %yi : f32
      affine.store %y1, %y[%i] : memref<?xf32>
    }
    %t = affine.load %tmp[%i] : memref<?xf32>
    %at = arith.mulf %alpha, %t : f32
    %yi = affine.load %y[%i] : memref<?xf32>
    %by = arith.mulf %beta, %yi : f32
    %s = arith.addf %at, %by : f32
    affine.store %s, %y[%i] : memref<?xf32>
  }
  return
}
