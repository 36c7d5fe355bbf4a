// PolyBench/C 4.2 jacobi-1d: 1-D Jacobi stencil, TSTEPS steps, each computing B from A then A from B
// (A, B: N; the ends stay fixed).
func.func @jacobi_1d(%tsteps: index, %n: index, %A: memref<?xf32>, %B: memref<?xf32>) {
  %c = arith.constant 0.333330005 : f32
  affine.for %t = 0 to %tsteps {
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      %a0 = affine.load %A[%i - 1] : memref<?xf32>
      %a1 = affine.load %A[%i] : memref<?xf32>
      %s1 = arith.addf %a0, %a1 : f32
      %a2 = affine.load %A[%i + 1] : memref<?xf32>
      %s2 = arith.addf %s1, %a2 : f32
      %b = arith.mulf %c, %s2 : f32
      affine.store %b, %B[%i] : memref<?xf32>
    }
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      %b0 = affine.load %B[%i - 1] : memref<?xf32>
      %b1 = affine.load %B[%i] : memref<?xf32>
      %s1 = arith.addf %b0, %b1 : f32
      %b2 = affine.load %B[%i + 1] : memref<?xf32>
      %s2 = arith.addf %s1, %b2 : f32
      %a = arith.mulf %c, %s2 : f32
      affine.store %a, %A[%i] : memref<?xf32>
    }
  }
  return
}
