// PolyBench/C 4.2 jacobi-2d: 2-D Jacobi stencil, TSTEPS steps, each computing B from A then A from B
// (A, B: N x N; the border stays fixed).
func.func @jacobi_2d(%tsteps: index, %n: index, %A: memref<?x?xf32>, %B: memref<?x?xf32>) {
  %c02 = arith.constant 2.000000e-01 : f32
  affine.for %t = 0 to %tsteps {
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        %a0 = affine.load %A[%i, %j] : memref<?x?xf32>
        %a1 = affine.load %A[%i, %j - 1] : memref<?x?xf32>
        %s1 = arith.addf %a0, %a1 : f32
        %a2 = affine.load %A[%i, %j + 1] : memref<?x?xf32>
        %s2 = arith.addf %s1, %a2 : f32
        %a3 = affine.load %A[%i + 1, %j] : memref<?x?xf32>
        %s3 = arith.addf %s2, %a3 : f32
        %a4 = affine.load %A[%i - 1, %j] : memref<?x?xf32>
        %s4 = arith.addf %s3, %a4 : f32
        %b = arith.mulf %c02, %s4 : f32
        affine.store %b, %B[%i, %j] : memref<?x?xf32>
      }
    }
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        %b0 = affine.load %B[%i, %j] : memref<?x?xf32>
        %b1 = affine.load %B[%i, %j - 1] : memref<?x?xf32>
        %s1 = arith.addf %b0, %b1 : f32
        %b2 = affine.load %B[%i, %j + 1] : memref<?x?xf32>
        %s2 = arith.addf %s1, %b2 : f32
        %b3 = affine.load %B[%i + 1, %j] : memref<?x?xf32>
        %s3 = arith.addf %s2, %b3 : f32
        %b4 = affine.load %B[%i - 1, %j] : memref<?x?xf32>
        %s4 = arith.addf %s3, %b4 : f32
        %a = arith.mulf %c02, %s4 : f32
        affine.store %a, %A[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
