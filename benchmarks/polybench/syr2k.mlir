// PolyBench/C 4.2 syr2k: C := alpha*A*B^T + alpha*B*A^T + beta*C on C's lower triangle
// (A, B: N x M, C: N x N; the j loops run to i inclusive, as in PolyBench 4.2).
#lower = affine_map<(d0) -> (d0 + 1)>
func.func @syr2k(%n: index, %m: index, %alpha: f32, %beta: f32, %C: memref<?x?xf32>, %A: memref<?x?xf32>,
                 %B: memref<?x?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to #lower(%i) {
      %c = affine.load %C[%i, %j] : memref<?x?xf32>
      %cb = arith.mulf %c, %beta : f32
      affine.store %cb, %C[%i, %j] : memref<?x?xf32>
    }
    affine.for %k = 0 to %m {
      affine.for %j = 0 to #lower(%i) {
        %ajk = affine.load %A[%j, %k] : memref<?x?xf32>
        %aa = arith.mulf %ajk, %alpha : f32
        %bik = affine.load %B[%i, %k] : memref<?x?xf32>
        %p1 = arith.mulf %aa, %bik : f32
        %bjk = affine.load %B[%j, %k] : memref<?x?xf32>
        %ba = arith.mulf %bjk, %alpha : f32
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %p2 = arith.mulf %ba, %aik : f32
        %p = arith.addf %p1, %p2 : f32
        %c = affine.load %C[%i, %j] : memref<?x?xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
