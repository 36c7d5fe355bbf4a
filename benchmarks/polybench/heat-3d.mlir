// PolyBench/C 4.2 heat-3d: 3-D heat equation, TSTEPS steps, each computing B from A then A from B
// (A, B: N x N x N; the border stays fixed).
func.func @heat_3d(%tsteps: index, %n: index, %A: memref<?x?x?xf32>, %B: memref<?x?x?xf32>) {
  %c0125 = arith.constant 1.250000e-01 : f32
  %c2 = arith.constant 2.000000e+00 : f32
  affine.for %t = 1 to affine_map<()[s0] -> (s0 + 1)>()[%tsteps] {
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        affine.for %k = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
          %ip = affine.load %A[%i + 1, %j, %k] : memref<?x?x?xf32>
          %c_0 = affine.load %A[%i, %j, %k] : memref<?x?x?xf32>
          %m_0 = arith.mulf %c2, %c_0 : f32
          %d_0 = arith.subf %ip, %m_0 : f32
          %im = affine.load %A[%i - 1, %j, %k] : memref<?x?x?xf32>
          %e_0 = arith.addf %d_0, %im : f32
          %t_0 = arith.mulf %c0125, %e_0 : f32
          %jp = affine.load %A[%i, %j + 1, %k] : memref<?x?x?xf32>
          %c_1 = affine.load %A[%i, %j, %k] : memref<?x?x?xf32>
          %m_1 = arith.mulf %c2, %c_1 : f32
          %d_1 = arith.subf %jp, %m_1 : f32
          %jm = affine.load %A[%i, %j - 1, %k] : memref<?x?x?xf32>
          %e_1 = arith.addf %d_1, %jm : f32
          %t_1 = arith.mulf %c0125, %e_1 : f32
          %s_1 = arith.addf %t_0, %t_1 : f32
          %kp = affine.load %A[%i, %j, %k + 1] : memref<?x?x?xf32>
          %c_2 = affine.load %A[%i, %j, %k] : memref<?x?x?xf32>
          %m_2 = arith.mulf %c2, %c_2 : f32
          %d_2 = arith.subf %kp, %m_2 : f32
          %km = affine.load %A[%i, %j, %k - 1] : memref<?x?x?xf32>
          %e_2 = arith.addf %d_2, %km : f32
          %t_2 = arith.mulf %c0125, %e_2 : f32
          %s_2 = arith.addf %s_1, %t_2 : f32
          %c_3 = affine.load %A[%i, %j, %k] : memref<?x?x?xf32>
          %r = arith.addf %s_2, %c_3 : f32
          affine.store %r, %B[%i, %j, %k] : memref<?x?x?xf32>
        }
      }
    }
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        affine.for %k = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
          %ip = affine.load %B[%i + 1, %j, %k] : memref<?x?x?xf32>
          %c_0 = affine.load %B[%i, %j, %k] : memref<?x?x?xf32>
          %m_0 = arith.mulf %c2, %c_0 : f32
          %d_0 = arith.subf %ip, %m_0 : f32
          %im = affine.load %B[%i - 1, %j, %k] : memref<?x?x?xf32>
          %e_0 = arith.addf %d_0, %im : f32
          %t_0 = arith.mulf %c0125, %e_0 : f32
          %jp = affine.load %B[%i, %j + 1, %k] : memref<?x?x?xf32>
          %c_1 = affine.load %B[%i, %j, %k] : memref<?x?x?xf32>
          %m_1 = arith.mulf %c2, %c_1 : f32
          %d_1 = arith.subf %jp, %m_1 : f32
          %jm = affine.load %B[%i, %j - 1, %k] : memref<?x?x?xf32>
          %e_1 = arith.addf %d_1, %jm : f32
          %t_1 = arith.mulf %c0125, %e_1 : f32
          %s_1 = arith.addf %t_0, %t_1 : f32
          %kp = affine.load %B[%i, %j, %k + 1] : memref<?x?x?xf32>
          %c_2 = affine.load %B[%i, %j, %k] : memref<?x?x?xf32>
          %m_2 = arith.mulf %c2, %c_2 : f32
          %d_2 = arith.subf %kp, %m_2 : f32
          %km = affine.load %B[%i, %j, %k - 1] : memref<?x?x?xf32>
          %e_2 = arith.addf %d_2, %km : f32
          %t_2 = arith.mulf %c0125, %e_2 : f32
          %s_2 = arith.addf %s_1, %t_2 : f32
          %c_3 = affine.load %B[%i, %j, %k] : memref<?x?x?xf32>
          %r = arith.addf %s_2, %c_3 : f32
          affine.store %r, %A[%i, %j, %k] : memref<?x?x?xf32>
        }
      }
    }
  }
  return
}
