// RUN: affine-opt %s -split-input-file -cpu-schedule="vector-bits=512" | filecheck %s

// A contraction: a register tile of 4 rows x 64 columns (16 zmm accumulators carried by %k),
// A broadcast per row, B read as one 64-lane vector per k.
func.func @matmul(%A: memref<64x32xf32>, %B: memref<32x64xf32>, %C: memref<64x64xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %r = affine.for %k = 0 to 32 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<64x32xf32>
        %b = affine.load %B[%k, %j] : memref<32x64xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<64x64xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @matmul
// CHECK: %z_vec = vector.broadcast %z : f32 to vector<64xf32>
// CHECK: affine.for %i = 0 to 64 step 4 {
// CHECK-NEXT: %0:4 = affine.for %k = 0 to 32 iter_args(%acc = %z_vec, %acc_0 = %z_vec, %acc_1 = %z_vec, %acc_2 = %z_vec) -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>) {
// CHECK-NEXT: %a = affine.load %A[%i, %k] : memref<64x32xf32>
// CHECK-NEXT: %a_vec = vector.broadcast %a : f32 to vector<64xf32>
// CHECK-NEXT: %b = affine.vector_load %B[%k, 0] : memref<32x64xf32>, vector<64xf32>
// CHECK-NEXT: %p = arith.mulf %a_vec, %b : vector<64xf32>
// CHECK-NEXT: %s = arith.addf %acc, %p : vector<64xf32>
// CHECK: %a_2 = affine.load %A[%i + 3, %k] : memref<64x32xf32>
// CHECK: affine.yield %s, %s_0, %s_1, %s_2 : vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>
// CHECK: affine.vector_store %0#0, %C[%i, 0] : memref<64x64xf32>, vector<64xf32>
// CHECK: affine.vector_store %0#3, %C[%i + 3, 0] : memref<64x64xf32>, vector<64xf32>
// -----

// Element-wise: the contiguous loop vectorized by 4 x 16 lanes.
func.func @relu(%X: memref<8x128xf32>, %Y: memref<8x128xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 128 {
      %x = affine.load %X[%i, %j] : memref<8x128xf32>
      %y = arith.maximumf %x, %z : f32
      affine.store %y, %Y[%i, %j] : memref<8x128xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @relu
// CHECK: affine.for %j = 0 to 128 step 64 {
// CHECK-NEXT: %x = affine.vector_load %X[%i, %j] : memref<8x128xf32>, vector<64xf32>
// CHECK-NEXT: %y = arith.maximumf %x, %z_vec : vector<64xf32>
// CHECK-NEXT: affine.vector_store %y, %Y[%i, %j] : memref<8x128xf32>, vector<64xf32>
// -----

// A row sum: the reduction vectorized (partial sums per lane, one vector.reduction per row).
func.func @rowsum(%X: memref<4x256xf32>, %S: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    %r = affine.for %j = 0 to 256 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %X[%i, %j] : memref<4x256xf32>
      %s = arith.addf %acc, %x : f32
      affine.yield %s : f32
    }
    affine.store %r, %S[%i] : memref<4xf32>
  }
  return
}

// CHECK-LABEL: func.func @rowsum
// CHECK: %cst = arith.constant dense<-0.000000e+00> : vector<64xf32>
// CHECK-NEXT: %r = affine.for %j = 0 to 256 step 64 iter_args(%acc = %cst) -> (vector<64xf32>) {
// CHECK: %0 = vector.reduction <add>, %r : vector<64xf32> into f32
// CHECK-NEXT: %r_0 = arith.addf %z, %0 : f32
// CHECK-NEXT: affine.store %r_0, %S[%i] : memref<4xf32>
// -----

// Column order: the loop along the contiguous dimension moves inside, then vectorizes.
func.func @columns(%A: memref<16x128xf32>) {
  affine.for %j = 0 to 128 {
    affine.for %i = 0 to 16 {
      %x = affine.load %A[%i, %j] : memref<16x128xf32>
      %y = arith.addf %x, %x : f32
      affine.store %y, %A[%i, %j] : memref<16x128xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @columns
// CHECK-NEXT: affine.for %i = 0 to 16 {
// CHECK-NEXT: affine.for %j = 0 to 128 step 64 {
// CHECK-NEXT: %x = affine.vector_load %A[%i, %j] : memref<16x128xf32>, vector<64xf32>
