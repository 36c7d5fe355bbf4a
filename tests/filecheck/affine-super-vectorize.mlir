// RUN: affine-opt %s -split-input-file -affine-super-vectorize | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-super-vectorize="vectorize-reductions" | filecheck %s --check-prefix=RED
// RUN: affine-opt %s -split-input-file -affine-super-vectorize="virtual-vector-size=16" | filecheck %s --check-prefix=W16

// Contiguous accesses become vector loads/stores; uniform operands (an argument, a constant)
// are broadcast once, before the loop.
func.func @contiguous(%A: memref<64xf32>, %B: memref<64xf32>, %a: f32) {
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 64 {
    %x = affine.load %A[%i] : memref<64xf32>
    %p = arith.mulf %x, %a : f32
    %s = arith.addf %p, %one : f32
    affine.store %s, %B[%i] : memref<64xf32>
  }
  return
}

// CHECK-LABEL: func.func @contiguous(%A: memref<64xf32>, %B: memref<64xf32>, %a: f32) {
// CHECK-NEXT: %one = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %a_vec = vector.broadcast %a : f32 to vector<8xf32>
// CHECK-NEXT: %one_vec = vector.broadcast %one : f32 to vector<8xf32>
// CHECK-NEXT: affine.for %i = 0 to 64 step 8 {
// CHECK-NEXT: %x = affine.vector_load %A[%i] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT: %p = arith.mulf %x, %a_vec : vector<8xf32>
// CHECK-NEXT: %s = arith.addf %p, %one_vec : vector<8xf32>
// CHECK-NEXT: affine.vector_store %s, %B[%i] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// A uniform load (no %j in its subscripts) stays scalar and is broadcast right after it.
func.func @uniform_load(%A: memref<4x32xf32>, %B: memref<4xf32>, %C: memref<4x32xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 32 {
      %b = affine.load %B[%i] : memref<4xf32>
      %x = affine.load %A[%i, %j] : memref<4x32xf32>
      %c = arith.cmpf ogt, %x, %b : f32
      %m = arith.select %c, %x, %b : f32
      affine.store %m, %C[%i, %j] : memref<4x32xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @uniform_load(%A: memref<4x32xf32>, %B: memref<4xf32>, %C: memref<4x32xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 4 {
// CHECK-NEXT: affine.for %j = 0 to 32 step 8 {
// CHECK-NEXT: %b = affine.load %B[%i] : memref<4xf32>
// CHECK-NEXT: %b_vec = vector.broadcast %b : f32 to vector<8xf32>
// CHECK-NEXT: %x = affine.vector_load %A[%i, %j] : memref<4x32xf32>, vector<8xf32>
// CHECK-NEXT: %c = arith.cmpf ogt, %x, %b_vec : vector<8xf32>
// CHECK-NEXT: %m = arith.select %c, %x, %b_vec : vector<8xi1>, vector<8xf32>
// CHECK-NEXT: affine.vector_store %m, %C[%i, %j] : memref<4x32xf32>, vector<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Matmul point loops: %k carries C[%i, %j] through memory (a store at the same address in
// every iteration of %k), so the outer %j is vectorized: each %k iteration multiplies the
// broadcast A[%i, %k] by the row B[%k, %j:%j+8].
func.func @matmul(%A: memref<4x16xf32>, %B: memref<16x16xf32>, %C: memref<4x16xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 16 {
      affine.for %k = 0 to 16 {
        %a = affine.load %A[%i, %k] : memref<4x16xf32>
        %b = affine.load %B[%k, %j] : memref<16x16xf32>
        %c = affine.load %C[%i, %j] : memref<4x16xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<4x16xf32>
      }
    }
  }
  return
}

// CHECK-LABEL: func.func @matmul(%A: memref<4x16xf32>, %B: memref<16x16xf32>, %C: memref<4x16xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 4 {
// CHECK-NEXT: affine.for %j = 0 to 16 step 8 {
// CHECK-NEXT: affine.for %k = 0 to 16 {
// CHECK-NEXT: %a = affine.load %A[%i, %k] : memref<4x16xf32>
// CHECK-NEXT: %a_vec = vector.broadcast %a : f32 to vector<8xf32>
// CHECK-NEXT: %b = affine.vector_load %B[%k, %j] : memref<16x16xf32>, vector<8xf32>
// CHECK-NEXT: %c = affine.vector_load %C[%i, %j] : memref<4x16xf32>, vector<8xf32>
// CHECK-NEXT: %p = arith.mulf %a_vec, %b : vector<8xf32>
// CHECK-NEXT: %s = arith.addf %c, %p : vector<8xf32>
// CHECK-NEXT: affine.vector_store %s, %C[%i, %j] : memref<4x16xf32>, vector<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Trip count 21: the main loop covers [0, 16), a scalar remainder loop the rest.
func.func @remainder(%A: memref<21xi32>, %B: memref<21xi32>) {
  affine.for %i = 0 to 21 {
    %x = affine.load %A[%i] : memref<21xi32>
    %y = arith.muli %x, %x : i32
    affine.store %y, %B[%i] : memref<21xi32>
  }
  return
}

// CHECK-LABEL: func.func @remainder(%A: memref<21xi32>, %B: memref<21xi32>) {
// CHECK-NEXT: affine.for %i = 0 to 16 step 8 {
// CHECK-NEXT: %x = affine.vector_load %A[%i] : memref<21xi32>, vector<8xi32>
// CHECK-NEXT: %y = arith.muli %x, %x : vector<8xi32>
// CHECK-NEXT: affine.vector_store %y, %B[%i] : memref<21xi32>, vector<8xi32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.for %i_0 = 16 to 21 {
// CHECK-NEXT: %x_0 = affine.load %A[%i_0] : memref<21xi32>
// CHECK-NEXT: %y_0 = arith.muli %x_0, %x_0 : i32
// CHECK-NEXT: affine.store %y_0, %B[%i_0] : memref<21xi32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// W16-LABEL: func.func @remainder
// W16-NEXT: affine.for %i = 0 to 16 step 16 {
// W16-NEXT: %x = affine.vector_load %A[%i] : memref<21xi32>, vector<16xi32>
// W16-NEXT: %y = arith.muli %x, %x : vector<16xi32>
// W16-NEXT: affine.vector_store %y, %B[%i] : memref<21xi32>, vector<16xi32>
// W16-NEXT: }
// W16-NEXT: affine.for %i_0 = 16 to 21 {

// -----

// Symbolic bounds: the main loop ends at %L + ((%N - %L) floordiv 8) * 8; the remainder loop
// starts there (or at %L when %N < %L).
func.func @symbolic(%X: memref<?xf32>, %Y: memref<?xf32>, %L: index, %N: index) {
  affine.for %i = %L to %N {
    %x = affine.load %X[%i] : memref<?xf32>
    %y = affine.load %Y[%i + 1] : memref<?xf32>
    %s = arith.addf %x, %y : f32
    affine.store %s, %Y[%i + 1] : memref<?xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<()[s0, s1] -> (s0 + ((-s0 + s1) floordiv 8) * 8)>
// CHECK-DAG: #map1 = affine_map<()[s0, s1] -> (s0, s0 + ((-s0 + s1) floordiv 8) * 8)>
// CHECK-LABEL: func.func @symbolic(%X: memref<?xf32>, %Y: memref<?xf32>, %L: index, %N: index) {
// CHECK-NEXT: affine.for %i = %L to #map()[%L, %N] step 8 {
// CHECK-NEXT: %x = affine.vector_load %X[%i] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT: %y = affine.vector_load %Y[%i + 1] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT: %s = arith.addf %x, %y : vector<8xf32>
// CHECK-NEXT: affine.vector_store %s, %Y[%i + 1] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.for %i_0 = max #map1()[%L, %N] to %N {
// CHECK-NEXT: %x_0 = affine.load %X[%i_0] : memref<?xf32>
// CHECK-NEXT: %y_0 = affine.load %Y[%i_0 + 1] : memref<?xf32>
// CHECK-NEXT: %s_0 = arith.addf %x_0, %y_0 : f32
// CHECK-NEXT: affine.store %s_0, %Y[%i_0 + 1] : memref<?xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// A row sum (iter_args over %j): vectorized only with vectorize-reductions.
func.func @rowsum(%A: memref<4x32xf32>, %R: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    %init = affine.load %R[%i] : memref<4xf32>
    %sum = affine.for %j = 0 to 32 iter_args(%acc = %init) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<4x32xf32>
      %t = arith.addf %acc, %a : f32
      affine.yield %t : f32
    }
    affine.store %sum, %R[%i] : memref<4xf32>
  }
  return
}

// CHECK-LABEL: func.func @rowsum(%A: memref<4x32xf32>, %R: memref<4xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 4 {
// CHECK-NEXT: %init = affine.load %R[%i] : memref<4xf32>
// CHECK-NEXT: %sum = affine.for %j = 0 to 32 iter_args(%acc = %init) -> (f32) {
// CHECK-NEXT: %a = affine.load %A[%i, %j] : memref<4x32xf32>
// CHECK-NEXT: %t = arith.addf %acc, %a : f32
// CHECK-NEXT: affine.yield %t : f32
// CHECK-NEXT: }
// CHECK-NEXT: affine.store %sum, %R[%i] : memref<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// RED-LABEL: func.func @rowsum(%A: memref<4x32xf32>, %R: memref<4xf32>) {
// RED-NEXT: affine.for %i = 0 to 4 {
// RED-NEXT: %init = affine.load %R[%i] : memref<4xf32>
// RED-NEXT: %cst = arith.constant dense<-0.000000e+00> : vector<8xf32>
// RED-NEXT: %sum = affine.for %j = 0 to 32 step 8 iter_args(%acc = %cst) -> (vector<8xf32>) {
// RED-NEXT: %a = affine.vector_load %A[%i, %j] : memref<4x32xf32>, vector<8xf32>
// RED-NEXT: %t = arith.addf %acc, %a : vector<8xf32>
// RED-NEXT: affine.yield %t : vector<8xf32>
// RED-NEXT: }
// RED-NEXT: %0 = vector.reduction <add>, %sum : vector<8xf32> into f32
// RED-NEXT: %sum_0 = arith.addf %init, %0 : f32
// RED-NEXT: affine.store %sum_0, %R[%i] : memref<4xf32>
// RED-NEXT: }
// RED-NEXT: return
// RED-NEXT: }

// -----

// An integer max (identity: the smallest i32) over 20 elements: the remainder loop starts
// from the vector part's result.
func.func @rowmax(%A: memref<20xi32>, %init: i32) -> i32 {
  %m = affine.for %j = 0 to 20 iter_args(%acc = %init) -> (i32) {
    %a = affine.load %A[%j] : memref<20xi32>
    %t = arith.maxsi %acc, %a : i32
    affine.yield %t : i32
  }
  return %m : i32
}

// CHECK-LABEL: func.func @rowmax
// CHECK-NEXT: %m = affine.for %j = 0 to 20 iter_args(%acc = %init) -> (i32) {

// RED-LABEL: func.func @rowmax(%A: memref<20xi32>, %init: i32) -> i32 {
// RED-NEXT: %cst = arith.constant dense<-2147483648> : vector<8xi32>
// RED-NEXT: %m = affine.for %j = 0 to 16 step 8 iter_args(%acc = %cst) -> (vector<8xi32>) {
// RED-NEXT: %a = affine.vector_load %A[%j] : memref<20xi32>, vector<8xi32>
// RED-NEXT: %t = arith.maxsi %acc, %a : vector<8xi32>
// RED-NEXT: affine.yield %t : vector<8xi32>
// RED-NEXT: }
// RED-NEXT: %0 = vector.reduction <maxsi>, %m : vector<8xi32> into i32
// RED-NEXT: %m_0 = arith.maxsi %init, %0 : i32
// RED-NEXT: %m_1 = affine.for %j_0 = 16 to 20 iter_args(%acc_0 = %m_0) -> (i32) {
// RED-NEXT: %a_0 = affine.load %A[%j_0] : memref<20xi32>
// RED-NEXT: %t_0 = arith.maxsi %acc_0, %a_0 : i32
// RED-NEXT: affine.yield %t_0 : i32
// RED-NEXT: }
// RED-NEXT: return %m_1 : i32
// RED-NEXT: }
