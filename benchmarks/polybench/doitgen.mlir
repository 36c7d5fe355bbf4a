// PolyBench/C 4.2 doitgen: A[r][q][:] := A[r][q][:] * C4, through sum  (A: NR x NQ x NP, C4: NP x NP, sum: NP).
func.func @doitgen(%nr: index, %nq: index, %np: index, %A: memref<?x?x?xf32>, %C4: memref<?x?xf32>,
                   %sum: memref<?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %r = 0 to %nr {
    affine.for %q = 0 to %nq {
      affine.for %p = 0 to %np {
        affine.store %zero, %sum[%p] : memref<?xf32>
        affine.for %s = 0 to %np {
          %a = affine.load %A[%r, %q, %s] : memref<?x?x?xf32>
          %c = affine.load %C4[%s, %p] : memref<?x?xf32>
          %m = arith.mulf %a, %c : f32
          %t = affine.load %sum[%p] : memref<?xf32>
          %t1 = arith.addf %t, %m : f32
          affine.store %t1, %sum[%p] : memref<?xf32>
        }
      }
      affine.for %p = 0 to %np {
        %t = affine.load %sum[%p] : memref<?xf32>
        affine.store %t, %A[%r, %q, %p] : memref<?x?x?xf32>
      }
    }
  }
  return
}
