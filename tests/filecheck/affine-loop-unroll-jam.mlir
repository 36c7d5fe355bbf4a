// RUN: affine-opt %s -split-input-file -affine-loop-unroll-jam=unroll-jam-factor=2 | filecheck %s

// The copies of %i are jammed into %j (MLIR's @unroll_jam_imperfect_nest, with memory ops):
// sub-blocks before and after %j are repeated in place; trip count 101: a one-iteration cleanup.
func.func @imperfect(%A: memref<128x32xf32>, %B: memref<128xf32>, %C: memref<128xf32>) {
  affine.for %i = 0 to 101 {
    %x = affine.load %B[%i] : memref<128xf32>
    affine.for %j = 0 to 17 {
      %y = affine.load %A[%i, %j] : memref<128x32xf32>
      %z = arith.addf %y, %x : f32
      affine.store %z, %A[%i, %j] : memref<128x32xf32>
    }
    affine.store %x, %C[%i] : memref<128xf32>
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-LABEL: func.func @imperfect(%A: memref<128x32xf32>, %B: memref<128xf32>, %C: memref<128xf32>) {
// CHECK-NEXT: %c100 = arith.constant 100 : index
// CHECK-NEXT: affine.for %i = 0 to 100 step 2 {
// CHECK-NEXT: %x = affine.load %B[%i] : memref<128xf32>
// CHECK-NEXT: %i_1 = affine.apply #map(%i)
// CHECK-NEXT: %x_0 = affine.load %B[%i_1] : memref<128xf32>
// CHECK-NEXT: affine.for %j = 0 to 17 {
// CHECK-NEXT: %y = affine.load %A[%i, %j] : memref<128x32xf32>
// CHECK-NEXT: %z = arith.addf %y, %x : f32
// CHECK-NEXT: affine.store %z, %A[%i, %j] : memref<128x32xf32>
// CHECK-NEXT: %i_1_0 = affine.apply #map(%i)
// CHECK-NEXT: %y_0 = affine.load %A[%i_1_0, %j] : memref<128x32xf32>
// CHECK-NEXT: %z_0 = arith.addf %y_0, %x_0 : f32
// CHECK-NEXT: affine.store %z_0, %A[%i_1_0, %j] : memref<128x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.store %x, %C[%i] : memref<128xf32>
// CHECK-NEXT: %i_1_1 = affine.apply #map(%i)
// CHECK-NEXT: affine.store %x_0, %C[%i_1_1] : memref<128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %x_1 = affine.load %B[%c100] : memref<128xf32>
// CHECK-NEXT: affine.for %j_0 = 0 to 17 {
// CHECK-NEXT: %y_1 = affine.load %A[%c100, %j_0] : memref<128x32xf32>
// CHECK-NEXT: %z_1 = arith.addf %y_1, %x_1 : f32
// CHECK-NEXT: affine.store %z_1, %A[%c100, %j_0] : memref<128x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.store %x_1, %C[%c100] : memref<128xf32>
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Matmul: the reduction loop %k gets one accumulator per copy of %i.
func.func @matmul(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %cst = arith.constant 0.0 : f32
      %r = affine.for %k = 0 to 8 iter_args(%acc = %cst) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<8x8xf32>
        %b = affine.load %B[%k, %j] : memref<8x8xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<8x8xf32>
    }
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-LABEL: func.func @matmul(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 8 step 2 {
// CHECK-NEXT: affine.for %j = 0 to 8 {
// CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %i_1 = affine.apply #map(%i)
// CHECK-NEXT: %cst_0 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %0:2 = affine.for %k = 0 to 8 iter_args(%acc = %cst, %acc_0 = %cst_0) -> (f32, f32) {
// CHECK-NEXT: %a = affine.load %A[%i, %k] : memref<8x8xf32>
// CHECK-NEXT: %b = affine.load %B[%k, %j] : memref<8x8xf32>
// CHECK-NEXT: %p = arith.mulf %a, %b : f32
// CHECK-NEXT: %s = arith.addf %acc, %p : f32
// CHECK-NEXT: %i_1_0 = affine.apply #map(%i)
// CHECK-NEXT: %a_0 = affine.load %A[%i_1_0, %k] : memref<8x8xf32>
// CHECK-NEXT: %b_0 = affine.load %B[%k, %j] : memref<8x8xf32>
// CHECK-NEXT: %p_0 = arith.mulf %a_0, %b_0 : f32
// CHECK-NEXT: %s_0 = arith.addf %acc_0, %p_0 : f32
// CHECK-NEXT: affine.yield %s, %s_0 : f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: affine.store %0#0, %C[%i, %j] : memref<8x8xf32>
// CHECK-NEXT: %i_1_1 = affine.apply #map(%i)
// CHECK-NEXT: affine.store %0#1, %C[%i_1_1, %j] : memref<8x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// Symbolic trip count (MLIR's @loop_nest_unknown_count_1): main loop and cleanup loop.
func.func @symbolic(%A: memref<64x100xf32>, %N: index) {
  affine.for %i = 1 to %N {
    affine.for %j = 1 to 100 {
      %a = affine.load %A[%i, %j] : memref<64x100xf32>
      affine.store %a, %A[%i, %j] : memref<64x100xf32>
    }
  }
  return
}

// CHECK-DAG: #map = affine_map<()[s0] -> (((s0 - 1) floordiv 2) * 2 + 1)>
// CHECK-DAG: #map1 = affine_map<(d0) -> (d0 + 1)>
// CHECK-DAG: #map2 = affine_map<()[s0] -> (1, ((s0 - 1) floordiv 2) * 2 + 1)>
// CHECK-LABEL: func.func @symbolic(%A: memref<64x100xf32>, %N: index) {
// CHECK-NEXT: affine.for %i = 1 to #map()[%N] step 2 {
// CHECK-NEXT: affine.for %j = 1 to 100 {
// CHECK-NEXT: %a = affine.load %A[%i, %j] : memref<64x100xf32>
// CHECK-NEXT: affine.store %a, %A[%i, %j] : memref<64x100xf32>
// CHECK-NEXT: %i_1 = affine.apply #map1(%i)
// CHECK-NEXT: %a_0 = affine.load %A[%i_1, %j] : memref<64x100xf32>
// CHECK-NEXT: affine.store %a_0, %A[%i_1, %j] : memref<64x100xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: affine.for %i_0 = max #map2()[%N] to %N {
// CHECK-NEXT: affine.for %j_0 = 1 to 100 {
// CHECK-NEXT: %a_1 = affine.load %A[%i_0, %j_0] : memref<64x100xf32>
// CHECK-NEXT: affine.store %a_1, %A[%i_0, %j_0] : memref<64x100xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// iter_args of the unroll-jammed loop chain through the copies (exact; MLIR instead keeps one
// accumulator per copy, each initialised with %init, and multiplies them after the loop).
func.func @outer_iter_args(%A: memref<21x30xf32>, %init: f32, %init1: f32) -> f32 {
  %0 = affine.for %i = 0 to 20 iter_args(%acc = %init) -> (f32) {
    %1 = affine.for %j = 0 to 30 iter_args(%acc1 = %init1) -> (f32) {
      %3 = affine.load %A[%i, %j] : memref<21x30xf32>
      %4 = arith.addf %acc1, %3 : f32
      affine.yield %4 : f32
    }
    %2 = arith.mulf %acc, %1 : f32
    affine.yield %2 : f32
  }
  return %0 : f32
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-LABEL: func.func @outer_iter_args(%A: memref<21x30xf32>, %init: f32, %init1: f32) -> f32 {
// CHECK-NEXT: %0 = affine.for %i = 0 to 20 step 2 iter_args(%acc = %init) -> (f32) {
// CHECK-NEXT: %1:2 = affine.for %j = 0 to 30 iter_args(%acc1 = %init1, %acc1_0 = %init1) -> (f32, f32) {
// CHECK-NEXT: %2 = affine.load %A[%i, %j] : memref<21x30xf32>
// CHECK-NEXT: %3 = arith.addf %acc1, %2 : f32
// CHECK-NEXT: %i_1 = affine.apply #map(%i)
// CHECK-NEXT: %4 = affine.load %A[%i_1, %j] : memref<21x30xf32>
// CHECK-NEXT: %5 = arith.addf %acc1_0, %4 : f32
// CHECK-NEXT: affine.yield %3, %5 : f32, f32
// CHECK-NEXT: }
// CHECK-NEXT: %6 = arith.mulf %acc, %1#0 : f32
// CHECK-NEXT: %i_1_0 = affine.apply #map(%i)
// CHECK-NEXT: %7 = arith.mulf %6, %1#1 : f32
// CHECK-NEXT: affine.yield %7 : f32
// CHECK-NEXT: }
// CHECK-NEXT: return %0 : f32
// CHECK-NEXT: }

// -----

// B[i + 1] is stored after %j and loaded before it by the next iteration: the copies would load it
// before it is stored. Refused.
func.func @imperfect_illegal(%A: memref<128x32xf32>, %B: memref<128xf32>) {
  affine.for %i = 0 to 101 {
    %x = affine.load %B[%i] : memref<128xf32>
    affine.for %j = 0 to 17 {
      %y = affine.load %A[%i, %j] : memref<128x32xf32>
      affine.store %y, %A[%i, %j] : memref<128x32xf32>
    }
    affine.store %x, %B[%i + 1] : memref<128xf32>
  }
  return
}

// CHECK-LABEL: func.func @imperfect_illegal(%A: memref<128x32xf32>, %B: memref<128xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 101 {
// CHECK-NEXT: %x = affine.load %B[%i] : memref<128xf32>
// CHECK-NEXT: affine.for %j = 0 to 17 {
// CHECK-NEXT: %y = affine.load %A[%i, %j] : memref<128x32xf32>
// CHECK-NEXT: affine.store %y, %A[%i, %j] : memref<128x32xf32>
// CHECK-NEXT: }
// CHECK-NEXT: affine.store %x, %B[%i + 1] : memref<128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// A[i + 1][j] = A[i][j + 1]: distance (1, -1); jamming %i into %j would reverse it: refused.
func.func @illegal(%A: memref<10x10xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j + 1] : memref<10x10xf32>
      affine.store %a, %A[%i + 1, %j] : memref<10x10xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @illegal(%A: memref<10x10xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 8 {
// CHECK-NEXT: affine.for %j = 0 to 8 {
// CHECK-NEXT: %a = affine.load %A[%i, %j + 1] : memref<10x10xf32>
// CHECK-NEXT: affine.store %a, %A[%i + 1, %j] : memref<10x10xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }

// -----

// The inner trip count depends on %i (MLIR's @no_unroll_jam_dependent_ubound): refused.
func.func @dependent_bound(%A: memref<100xf32>) {
  affine.for %i = 0 to 100 {
    affine.for %k = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %a = affine.load %A[%k] : memref<100xf32>
      affine.store %a, %A[%i] : memref<100xf32>
    }
  }
  return
}

// CHECK-DAG: #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-LABEL: func.func @dependent_bound(%A: memref<100xf32>) {
// CHECK-NEXT: affine.for %i = 0 to 100 {
// CHECK-NEXT: affine.for %k = 0 to #map(%i) {
// CHECK-NEXT: %a = affine.load %A[%k] : memref<100xf32>
// CHECK-NEXT: affine.store %a, %A[%i] : memref<100xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: return
// CHECK-NEXT: }
