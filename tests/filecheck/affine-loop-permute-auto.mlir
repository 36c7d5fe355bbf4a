// RUN: affine-opt %s -split-input-file -affine-loop-permute="auto" | filecheck %s

// Matmul: %j is the best innermost loop (B and C contiguous along it, A invariant, no carried
// dependence), so (i, j, k) becomes (i, k, j).
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    affine.for %i = 0 to 16 {
// CHECK-NEXT:      affine.for %k = 0 to 8 {
// CHECK-NEXT:        affine.for %j = 0 to 12 {
// CHECK-NEXT:          affine.load %A[%i, %k]
// CHECK-NEXT:          affine.load %B[%k, %j]
func.func @matmul(%A: memref<16x8xf32>, %B: memref<8x12xf32>, %C: memref<16x12xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 12 {
      affine.for %k = 0 to 8 {
        %a = affine.load %A[%i, %k] : memref<16x8xf32>
        %b = affine.load %B[%k, %j] : memref<8x12xf32>
        %c = affine.load %C[%i, %j] : memref<16x12xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<16x12xf32>
      }
    }
  }
  return
}

// -----

// A transpose copy: %i is contiguous in the store, %j in the load; the store wins a tie by
// position (the innermost loop is kept on ties), so nothing changes.
// CHECK-LABEL: func.func @transpose
// CHECK-NEXT:    affine.for %i = 0 to 8 {
// CHECK-NEXT:      affine.for %j = 0 to 4 {
func.func @transpose(%A: memref<8x4xf32>, %B: memref<4x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<8x4xf32>
      affine.store %a, %B[%j, %i] : memref<4x8xf32>
    }
  }
  return
}

// -----

// Column sweep: the inner %i walks rows (stride 16); %j is contiguous: interchanged.
// CHECK-LABEL: func.func @columns
// CHECK-NEXT:    affine.for %i = 0 to 16 {
// CHECK-NEXT:      affine.for %j = 0 to 16 {
// CHECK-NEXT:        affine.load %A[%i, %j]
func.func @columns(%A: memref<16x16xf32>, %B: memref<16x16xf32>) {
  affine.for %j = 0 to 16 {
    affine.for %i = 0 to 16 {
      %a = affine.load %A[%i, %j] : memref<16x16xf32>
      affine.store %a, %B[%i, %j] : memref<16x16xf32>
    }
  }
  return
}
