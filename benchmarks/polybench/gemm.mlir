// PolyBench/C 4.2 gemm: C := alpha*A*B + beta*C  (A: NI x NK, B: NK x NJ, C: NI x NJ).
func.func @gemm(%ni: index, %nj: index, %nk: index, %alpha: f32, %beta: f32,
                %C: memref<?x?xf32>, %A: memref<?x?xf32>, %B: memref<?x?xf32>) {
  affine.for %i = 0 to %ni {
    affine.for %j = 0 to %nj {
      %c = affine.load %C[%i, %j] : memref<?x?xf32>
      %cb = arith.mulf %c, %beta : f32
      affine.store %cb, %C[%i, %j] : memref<?x?xf32>
    }
    affine.for %k = 0 to %nk {
      affine.for %j = 0 to %nj {
        %a = affine.load %A[%i, %k] : memref<?x?xf32>
        %aa = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aa, %b : f32
        %c = affine.load %C[%i, %j] : memref<?x?xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
