// PolyBench/C 4.2 3mm: G := (A*B)*(C*D), through E := A*B and F := C*D
// (A: NI x NK, B: NK x NJ, E: NI x NJ, C: NJ x NM, D: NM x NL, F: NJ x NL, G: NI x NL).
func.func @"3mm"(%ni: index, %nj: index, %nk: index, %nl: index, %nm: index,
                 %E: memref<?x?xf32>, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %F: memref<?x?xf32>,
                 %C: memref<?x?xf32>, %D: memref<?x?xf32>, %G: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  // E := A*B
  affine.for %i = 0 to %ni {
    affine.for %j = 0 to %nj {
      affine.store %zero, %E[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %nk {
        %a = affine.load %A[%i, %k] : memref<?x?xf32>
        %b = affine.load %B[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %a, %b : f32
        %e = affine.load %E[%i, %j] : memref<?x?xf32>
        %s = arith.addf %e, %p : f32
        affine.store %s, %E[%i, %j] : memref<?x?xf32>
      }
    }
  }
  // F := C*D
  affine.for %i = 0 to %nj {
    affine.for %j = 0 to %nl {
      affine.store %zero, %F[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %nm {
        %c = affine.load %C[%i, %k] : memref<?x?xf32>
        %d = affine.load %D[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %c, %d : f32
        %f = affine.load %F[%i, %j] : memref<?x?xf32>
        %s = arith.addf %f, %p : f32
        affine.store %s, %F[%i, %j] : memref<?x?xf32>
      }
    }
  }
  // G := E*F
  affine.for %i = 0 to %ni {
    affine.for %j = 0 to %nl {
      affine.store %zero, %G[%i, %j] : memref<?x?xf32>
      affine.for %k = 0 to %nj {
        %e = affine.load %E[%i, %k] : memref<?x?xf32>
        %f = affine.load %F[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %e, %f : f32
        %g = affine.load %G[%i, %j] : memref<?x?xf32>
        %s = arith.addf %g, %p : f32
        affine.store %s, %G[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
