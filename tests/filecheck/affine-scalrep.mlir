// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -affine-scalrep | filecheck %s

// Inputs from MLIR's mlir/test/Dialect/Affine/scalrep.mlir (same output structure as
// mlir-opt), then ours. Every "no intervening write" question is answered with exact (isl)
// dependences; memory reductions are promoted into iter_args (beyond MLIR).

// Forwarded, then the memref is only written: the stores, alloc and dealloc go.
// CHECK-LABEL: func.func @simple_store_load() {
// CHECK-NEXT:    %cf7 = arith.constant 7.000000e+00 : f32
// CHECK-NEXT:    affine.for %i0 = 0 to 10 {
// CHECK-NEXT:      %v1 = arith.addf %cf7, %cf7 : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @simple_store_load() {
  %cf7 = arith.constant 7.0 : f32
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    affine.store %cf7, %m[%i0] : memref<10xf32>
    %v0 = affine.load %m[%i0] : memref<10xf32>
    %v1 = arith.addf %v0, %v0 : f32
  }
  memref.dealloc %m : memref<10xf32>
  return
}

// -----

// The last of several stores is forwarded; the later loads then fold away.
// CHECK-LABEL: func.func @multi_store_load() {
// CHECK:         affine.for %i0 = 0 to 10 {
// CHECK-NEXT:      arith.addf %cf7, %cf7 : f32
// CHECK-NEXT:      arith.mulf %cf9, %cf9 : f32
// CHECK-NEXT:    }
func.func @multi_store_load() {
  %cf7 = arith.constant 7.0 : f32
  %cf8 = arith.constant 8.0 : f32
  %cf9 = arith.constant 9.0 : f32
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    affine.store %cf7, %m[%i0] : memref<10xf32>
    %v0 = affine.load %m[%i0] : memref<10xf32>
    %v1 = arith.addf %v0, %v0 : f32
    affine.store %cf8, %m[%i0] : memref<10xf32>
    affine.store %cf9, %m[%i0] : memref<10xf32>
    %v2 = affine.load %m[%i0] : memref<10xf32>
    %v3 = affine.load %m[%i0] : memref<10xf32>
    %v4 = arith.mulf %v2, %v3 : f32
  }
  memref.dealloc %m : memref<10xf32>
  return
}

// -----

// The inner store may overwrite %m[%i0] (j = i0 when %N > i0): no forwarding.
// CHECK-LABEL: func.func @multi_store_load_nested_no_fwd
// CHECK:         affine.for %i2 = 0 to %N {
// CHECK-NEXT:      %v0 = affine.load %m[%i0] : memref<10xf32>
func.func @multi_store_load_nested_no_fwd(%N : index) {
  %cf7 = arith.constant 7.0 : f32
  %cf8 = arith.constant 8.0 : f32
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    affine.store %cf7, %m[%i0] : memref<10xf32>
    affine.for %i1 = 0 to %N {
      affine.store %cf8, %m[%i1] : memref<10xf32>
    }
    affine.for %i2 = 0 to %N {
      %v0 = affine.load %m[%i0] : memref<10xf32>
      %v1 = arith.addf %v0, %v0 : f32
    }
  }
  return
}

// -----

// Redundant loads of one element reuse the first.
// CHECK-LABEL: func.func @simple_three_loads
// CHECK-NEXT:    affine.for %i0 = 0 to 10 {
// CHECK-NEXT:      %v0 = affine.load %in[%i0] : memref<10xf32>
// CHECK-NEXT:      %v2 = arith.addf %v0, %v0 : f32
// CHECK-NEXT:      %v4 = arith.addf %v2, %v0 : f32
// CHECK-NEXT:    }
func.func @simple_three_loads(%in : memref<10xf32>) {
  affine.for %i0 = 0 to 10 {
    %v0 = affine.load %in[%i0] : memref<10xf32>
    %v1 = affine.load %in[%i0] : memref<10xf32>
    %v2 = arith.addf %v0, %v1 : f32
    %v3 = affine.load %in[%i0] : memref<10xf32>
    %v4 = arith.addf %v2, %v3 : f32
  }
  return
}

// -----

// An overwritten store is dead, unless something may read in between.
// CHECK-LABEL: func.func @redundant_store_elim
// CHECK-NEXT:    %cf1 = arith.constant
// CHECK-NEXT:    %cf2 = arith.constant
// CHECK-NEXT:    affine.for %i = 0 to 16 {
// CHECK-NEXT:      affine.store %cf2, %out[%i * 32] : memref<512xf32>
// CHECK-NEXT:      affine.store %cf1, %out[%i * 32 + 1] : memref<512xf32>
// CHECK-NEXT:      "test.use"(%out) : (memref<512xf32>) -> ()
// CHECK-NEXT:      affine.store %cf2, %out[%i * 32 + 1] : memref<512xf32>
// CHECK-NEXT:    }
func.func @redundant_store_elim(%out : memref<512xf32>) {
  %cf1 = arith.constant 1.0 : f32
  %cf2 = arith.constant 2.0 : f32
  affine.for %i = 0 to 16 {
    affine.store %cf1, %out[32*%i] : memref<512xf32>
    affine.store %cf2, %out[32*%i] : memref<512xf32>
    affine.store %cf1, %out[32*%i + 1] : memref<512xf32>
    "test.use"(%out) : (memref<512xf32>) -> ()
    affine.store %cf2, %out[32*%i + 1] : memref<512xf32>
  }
  return
}

// -----

// Ours: the reduction on %A[0] moves into iter_args; the initial store then forwards
// into the load before the loop and dies (MLIR only forwards the store to %m).
// CHECK-LABEL: func.func @reduction_multi_store()
// CHECK:         %[[R:.*]] = affine.for %i = 0 to 100 step 2 iter_args(%l = %cf0) -> (f32) {
// CHECK-NEXT:      %s = arith.addf %l, %cf5 : f32
// CHECK-NEXT:      "test.foo"(%s) : (f32) -> ()
// CHECK-NEXT:      affine.yield %s : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.store %[[R]], %A[0] : memref<1xf32>
// CHECK-NEXT:    return %A : memref<1xf32>
func.func @reduction_multi_store() -> memref<1xf32> {
  %A = memref.alloc() : memref<1xf32>
  %cf0 = arith.constant 0.0 : f32
  %cf5 = arith.constant 5.0 : f32
  affine.store %cf0, %A[0] : memref<1xf32>
  affine.for %i = 0 to 100 step 2 {
    %l = affine.load %A[0] : memref<1xf32>
    %s = arith.addf %l, %cf5 : f32
    affine.store %s, %A[0] : memref<1xf32>
    %m = affine.load %A[0] : memref<1xf32>
    "test.foo"(%m) : (f32) -> ()
  }
  return %A : memref<1xf32>
}

// -----

// Ours: a 2x1 unroll-jammed matmul keeps both accumulators in registers over %k.
// CHECK-LABEL: func.func @matmul_2x1
// CHECK:         affine.for %j = 0 to 8 {
// CHECK-NEXT:      %c0 = affine.load %C[%i, %j] : memref<8x8xf32>
// CHECK-NEXT:      %c1 = affine.load %C[%i + 1, %j] : memref<8x8xf32>
// CHECK-NEXT:      %[[R:.*]]:2 = affine.for %k = 0 to 8 iter_args(%c0_0 = %c0, %c1_0 = %c1) -> (f32, f32) {
// CHECK-NOT:         affine.store
// CHECK:             affine.yield %s0, %s1 : f32, f32
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.store %[[R]]#0, %C[%i, %j] : memref<8x8xf32>
// CHECK-NEXT:      affine.store %[[R]]#1, %C[%i + 1, %j] : memref<8x8xf32>
func.func @matmul_2x1(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8x8xf32>) {
  affine.for %i = 0 to 8 step 2 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 8 {
        %b = affine.load %B[%k, %j] : memref<8x8xf32>
        %a0 = affine.load %A[%i, %k] : memref<8x8xf32>
        %c0 = affine.load %C[%i, %j] : memref<8x8xf32>
        %p0 = arith.mulf %a0, %b : f32
        %s0 = arith.addf %c0, %p0 : f32
        affine.store %s0, %C[%i, %j] : memref<8x8xf32>
        %a1 = affine.load %A[%i + 1, %k] : memref<8x8xf32>
        %c1 = affine.load %C[%i + 1, %j] : memref<8x8xf32>
        %p1 = arith.mulf %a1, %b : f32
        %s1 = arith.addf %c1, %p1 : f32
        affine.store %s1, %C[%i + 1, %j] : memref<8x8xf32>
      }
    }
  }
  return
}

// -----

// Ours: no promotion when another access of the loop may touch the element, or when
// the loop may run zero times (the load in front of it could be out of bounds).
// CHECK-LABEL: func.func @no_promotion
// CHECK:         affine.for %k = 0 to 8 {
// CHECK-NEXT:      affine.load %C[%i]
// CHECK:           affine.load %C[%k]
// CHECK:         affine.for %k_0 = 0 to %N {
// CHECK-NEXT:      affine.load %C[%i]
func.func @no_promotion(%C: memref<8xf32>, %x: f32, %N: index) {
  affine.for %i = 0 to 8 {
    affine.for %k = 0 to 8 {
      %c = affine.load %C[%i] : memref<8xf32>
      %s = arith.addf %c, %x : f32
      affine.store %s, %C[%i] : memref<8xf32>
      %d = affine.load %C[%k] : memref<8xf32>
      "test.use"(%d) : (f32) -> ()
    }
    affine.for %k = 0 to %N {
      %c = affine.load %C[%i] : memref<8xf32>
      %s = arith.addf %c, %x : f32
      affine.store %s, %C[%i] : memref<8xf32>
    }
  }
  return
}

// -----

// Ours: two reductions promoted together where one stores the other's load; each yield names
// the iter_arg that replaced the load (it once named the erased load, which did not dominate).
// CHECK-LABEL: func.func @promoted_pairs_share_a_load
// CHECK:         %[[A:.*]] = affine.load %A[2]
// CHECK-NEXT:    %[[B:.*]] = affine.load %A[0]
// CHECK-NEXT:    %[[R:.*]]:2 = affine.for %{{.*}} = 0 to 2 iter_args(%[[AA:.*]] = %[[A]], %[[BB:.*]] = %[[B]])
// CHECK-NEXT:      affine.store %[[AA]], %A[3]
// CHECK-NEXT:      affine.yield %[[BB]], %[[BB]] : i32, i32
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.store %[[R]]#0, %A[2]
// CHECK-NEXT:    affine.store %[[R]]#1, %A[0]
func.func @promoted_pairs_share_a_load(%A: memref<4xi32>) {
  affine.for %m = 0 to 2 {
    %a = affine.load %A[2] : memref<4xi32>
    affine.store %a, %A[3] : memref<4xi32>
    %b = affine.load %A[0] : memref<4xi32>
    affine.store %b, %A[2] : memref<4xi32>
    %c = affine.load %A[0] : memref<4xi32>
    affine.store %c, %A[0] : memref<4xi32>
  }
  return
}
