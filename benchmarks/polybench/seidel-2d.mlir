// PolyBench/C 4.2 seidel-2d: 2-D Gauss-Seidel sweep (9-point average, in place), TSTEPS times
// (A: N x N; the border stays fixed).
func.func @seidel_2d(%tsteps: index, %n: index, %A: memref<?x?xf32>) {
  %c9 = arith.constant 9.000000e+00 : f32
  affine.for %t = 0 to %tsteps {
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        %a0 = affine.load %A[%i - 1, %j - 1] : memref<?x?xf32>
        %a1 = affine.load %A[%i - 1, %j] : memref<?x?xf32>
        %s1 = arith.addf %a0, %a1 : f32
        %a2 = affine.load %A[%i - 1, %j + 1] : memref<?x?xf32>
        %s2 = arith.addf %s1, %a2 : f32
        %a3 = affine.load %A[%i, %j - 1] : memref<?x?xf32>
        %s3 = arith.addf %s2, %a3 : f32
        %a4 = affine.load %A[%i, %j] : memref<?x?xf32>
        %s4 = arith.addf %s3, %a4 : f32
        %a5 = affine.load %A[%i, %j + 1] : memref<?x?xf32>
        %s5 = arith.addf %s4, %a5 : f32
        %a6 = affine.load %A[%i + 1, %j - 1] : memref<?x?xf32>
        %s6 = arith.addf %s5, %a6 : f32
        %a7 = affine.load %A[%i + 1, %j] : memref<?x?xf32>
        %s7 = arith.addf %s6, %a7 : f32
        %a8 = affine.load %A[%i + 1, %j + 1] : memref<?x?xf32>
        %s8 = arith.addf %s7, %a8 : f32
        %r = arith.divf %s8, %c9 : f32
        affine.store %r, %A[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
