// PolyBench/C 4.2 syrk: C := alpha*A*A^T + beta*C on C's lower triangle
// (A: N x M, C: N x N; the j loops run to i inclusive, as in PolyBench 4.2).
#lower = affine_map<(d0) -> (d0 + 1)>
func.func @syrk(%n: index, %m: index, %alpha: f32, %beta: f32, %C: memref<?x?xf32>, %A: memref<?x?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to #lower(%i) {
      %c = affine.load %C[%i, %j] : memref<?x?xf32>
      %cb = arith.mulf %c, %beta : f32
      affine.store %cb, %C[%i, %j] : memref<?x?xf32>
    }
    affine.for %k = 0 to %m {
      affine.for %j = 0 to #lower(%i) {
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %aa = arith.mulf %alpha, %aik : f32
        %ajk = affine.load %A[%j, %k] : memref<?x?xf32>
        %p = arith.mulf %aa, %ajk : f32
        %c = affine.load %C[%i, %j] : memref<?x?xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
