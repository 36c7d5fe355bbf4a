// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Stencils over several memrefs: Jacobi (two arrays in a time loop) and Gauss-Seidel in place.

// Jacobi in time: B from A, then A from B, inside a time loop (several memrefs).
func.func @jacobi(%A: memref<10xf32>, %B: memref<10xf32>) {
  affine.for %t = 0 to 3 {
    affine.for %i = 1 to 9 {
      %l = affine.load %A[%i - 1] : memref<10xf32>
      // CHECK:      .mlir:9:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 4 at depth 1 = [1, 2]
      // CHECK-NEXT: .mlir:9:7: remark: dependence from 0 to 4 at depth 2 = true
      %r = affine.load %A[%i + 1] : memref<10xf32>
      // CHECK:      .mlir:23:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 4 at depth 1 = [1, 2]
      // CHECK-NEXT: .mlir:23:7: remark: dependence from 1 to 4 at depth 2 = true
      %s = arith.addf %l, %r : f32
      affine.store %s, %B[%i] : memref<10xf32>
      // CHECK:      .mlir:38:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 2 at depth 1 = [1, 2][0, 0]
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 3 at depth 1 = [1, 2]
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 3 at depth 2 = true
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 4 at depth 1 = false
      // CHECK-NEXT: .mlir:38:7: remark: dependence from 2 to 4 at depth 2 = false
    }
    affine.for %i = 1 to 9 {
      %b = affine.load %B[%i] : memref<10xf32>
      // CHECK:      .mlir:54:7: remark: dependence from 3 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 2 at depth 1 = [1, 2]
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 3 at depth 3 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 4 at depth 1 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 4 at depth 2 = false
      // CHECK-NEXT: .mlir:54:7: remark: dependence from 3 to 4 at depth 3 = false
      affine.store %b, %A[%i] : memref<10xf32>
      // CHECK:      .mlir:67:7: remark: dependence from 4 to 0 at depth 1 = [1, 2]
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 1 at depth 1 = [1, 2]
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 3 at depth 1 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 3 at depth 3 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 4 at depth 1 = [1, 2][0, 0]
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 4 at depth 2 = false
      // CHECK-NEXT: .mlir:67:7: remark: dependence from 4 to 4 at depth 3 = false
    }
  }
  return
}

// -----

// Gauss-Seidel, in place: dependences with distances (0, 1), (1, -1), (1, 0).
func.func @seidel(%A: memref<10xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 9 {
      %n = affine.load %A[%i - 1] : memref<10xf32>
      // CHECK:      .mlir:91:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 3 at depth 1 = [1, 3][-1, -1]
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:91:7: remark: dependence from 0 to 3 at depth 3 = false
      %c = affine.load %A[%i] : memref<10xf32>
      // CHECK:      .mlir:104:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 3 at depth 1 = [1, 3][0, 0]
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:104:7: remark: dependence from 1 to 3 at depth 3 = true
      %s = affine.load %A[%i + 1] : memref<10xf32>
      // CHECK:      .mlir:117:7: remark: dependence from 2 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 2 at depth 1 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 3 at depth 1 = [1, 3][1, 1]
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 3 at depth 2 = [0, 0][1, 1]
      // CHECK-NEXT: .mlir:117:7: remark: dependence from 2 to 3 at depth 3 = false
      %ns = arith.addf %n, %s : f32
      %v = arith.addf %ns, %c : f32
      affine.store %v, %A[%i] : memref<10xf32>
      // CHECK:      .mlir:132:7: remark: dependence from 3 to 0 at depth 1 = [1, 3][1, 1]
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 0 at depth 2 = [0, 0][1, 1]
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 0 at depth 3 = false
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 1 at depth 1 = [1, 3][0, 0]
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 1 at depth 2 = false
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 1 at depth 3 = false
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 2 at depth 1 = [1, 3][-1, -1]
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 2 at depth 2 = false
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 2 at depth 3 = false
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 3 at depth 1 = [1, 3][0, 0]
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 3 at depth 2 = false
      // CHECK-NEXT: .mlir:132:7: remark: dependence from 3 to 3 at depth 3 = false
    }
  }
  return
}
