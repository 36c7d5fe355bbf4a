// PolyBench/C 4.2 2mm: D := alpha*A*B*C + beta*D, through tmp := alpha*A*B
// (A: NI x NK, B: NK x NJ, tmp: NI x NJ, C: NJ x NL, D: NI x NL).
func.func @"2mm"(%ni: index, %nj: index, %nk: index, %nl: index, %alpha: f32, %beta: f32,
                 %tmp: memref<?x?xf32>, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>,
                 %D: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to %ni {
    affine.for %j = 0 to %nj {
      affine.store %zero, %tmp[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %nk {
        %a = affine.load %A[%i, %k] : memref<?x?xf32>
        %aa = arith.mulf %alpha, %a : f32
        %b = affine.load %B[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aa, %b : f32
        %t = affine.load %tmp[%i, %j] : memref<?x?xf32>
        %s = arith.addf %t, %p : f32
        affine.store %s, %tmp[%i, %j] : memref<?x?xf32>
      }
    }
  }
  affine.for %i = 0 to %ni {
    affine.for %j = 0 to %nl {
      %d = affine.load %D[%i, %j] : memref<?x?xf32>
      %db = arith.mulf %d, %beta : f32
      affine.store %db, %D[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %nj {
        %t = affine.load %tmp[%i, %k] : memref<?x?xf32>
        %c = affine.load %C[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %t, %c : f32
        %d1 = affine.load %D[%i, %j] : memref<?x?xf32>
        %s = arith.addf %d1, %p : f32
        affine.store %s, %D[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
