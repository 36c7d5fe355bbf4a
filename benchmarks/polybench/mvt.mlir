// PolyBench/C 4.2 mvt: x1 := x1 + A * y_1, x2 := x2 + A^T * y_2  (A: N x N; x1, x2, y_1, y_2: N).
func.func @mvt(%n: index, %x1: memref<?xf32>, %x2: memref<?xf32>, %y_1: memref<?xf32>, %y_2: memref<?xf32>,
               %A: memref<?x?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %x = affine.load %x1[%i] : memref<?xf32>
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %y = affine.load %y_1[%j] : memref<?xf32>
      %p = arith.mulf %a, %y : f32
      %s = arith.addf %x, %p : f32
      affine.store %s, %x1[%i] : memref<?xf32>
    }
  }
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %x = affine.load %x2[%i] : memref<?xf32>
      %a = affine.load %A[%j, %i] : memref<?x?xf32>
      %y = affine.load %y_2[%j] : memref<?xf32>
      %p = arith.mulf %a, %y : f32
      %s = arith.addf %x, %p : f32
      affine.store %s, %x2[%i] : memref<?xf32>
    }
  }
  return
}
