// PolyBench/C 4.2 trmm: B := alpha*A^T*B with A unit lower triangular (its diagonal and upper part unread)
// (A: M x M, B: M x N).
#below = affine_map<(d0) -> (d0 + 1)>
func.func @trmm(%m: index, %n: index, %alpha: f32, %A: memref<?x?xf32>, %B: memref<?x?xf32>) {
  affine.for %i = 0 to %m {
    affine.for %j = 0 to %n {
      affine.for %k = #below(%i) to %m {
        %aki = affine.load %A[%k, %i] : memref<?x?xf32>
        %bkj = affine.load %B[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aki, %bkj : f32
        %bij = affine.load %B[%i, %j] : memref<?x?xf32>
        %s = arith.addf %bij, %p : f32
        affine.store %s, %B[%i, %j] : memref<?x?xf32>
      }
      %bij = affine.load %B[%i, %j] : memref<?x?xf32>
      %ab = arith.mulf %alpha, %bij : f32
      affine.store %ab, %B[%i, %j] : memref<?x?xf32>
    }
  }
  return
}
