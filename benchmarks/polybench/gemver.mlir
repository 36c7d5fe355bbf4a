// PolyBench/C 4.2 gemver: A := A + u1*v1^T + u2*v2^T, x := x + beta*A^T*y + z, w := w + alpha*A*x
// (A: N x N; u1, v1, u2, v2, w, x, y, z: N).
func.func @gemver(%n: index, %alpha: f32, %beta: f32, %A: memref<?x?xf32>, %u1: memref<?xf32>,
                  %v1: memref<?xf32>, %u2: memref<?xf32>, %v2: memref<?xf32>, %w: memref<?xf32>,
                  %x: memref<?xf32>, %y: memref<?xf32>, %z: memref<?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %p1 = affine.load %u1[%i] : memref<?xf32>
      %q1 = affine.load %v1[%j] : memref<?xf32>
      %m1 = arith.mulf %p1, %q1 : f32
      %s1 = arith.addf %a, %m1 : f32
      %p2 = affine.load %u2[%i] : memref<?xf32>
      %q2 = affine.load %v2[%j] : memref<?xf32>
      %m2 = arith.mulf %p2, %q2 : f32
      %s2 = arith.addf %s1, %m2 : f32
      affine.store %s2, %A[%i, %j] : memref<?x?xf32>
    }
  }
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %xi = affine.load %x[%i] : memref<?xf32>
      %a = affine.load %A[%j, %i] : memref<?x?xf32>
      %ba = arith.mulf %beta, %a : f32
      %yj = affine.load %y[%j] : memref<?xf32>
      %p = arith.mulf %ba, %yj : f32
      %s = arith.addf %xi, %p : f32
      affine.store %s, %x[%i] : memref<?xf32>
    }
  }
  affine.for %i = 0 to %n {
    %xi = affine.load %x[%i] : memref<?xf32>
    %zi = affine.load %z[%i] : memref<?xf32>
    %s = arith.addf %xi, %zi : f32
    affine.store %s, %x[%i] : memref<?xf32>
  }
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %wi = affine.load %w[%i] : memref<?xf32>
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %aa = arith.mulf %alpha, %a : f32
      %xj = affine.load %x[%j] : memref<?xf32>
      %p = arith.mulf %aa, %xj : f32
      %s = arith.addf %wi, %p : f32
      affine.store %s, %w[%i] : memref<?xf32>
    }
  }
  return
}
