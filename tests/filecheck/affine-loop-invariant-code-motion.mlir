// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -affine-loop-invariant-code-motion | filecheck %s

// Inputs from MLIR's mlir/test/Dialect/Affine/affine-loop-invariant-code-motion.mlir (same
// output structure as mlir-opt), then ours. Loads and stores leave only loops that run at
// least once whenever reached (decided exactly); pure ops always may.

// The addf leaves both loops; the store (the only use of %m in the loop) leaves the inner
// loop, which is then empty and invariant itself.
// CHECK-LABEL: func.func @nested_loops_both_having_invariant_code() {
// CHECK-NEXT:    %m = memref.alloc() : memref<10xf32>
// CHECK-NEXT:    %cf7 = arith.constant 7.000000e+00 : f32
// CHECK-NEXT:    %cf8 = arith.constant 8.000000e+00 : f32
// CHECK-NEXT:    %v0 = arith.addf %cf7, %cf8 : f32
// CHECK-NEXT:    affine.for %arg1 = 0 to 10 {
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %arg0 = 0 to 10 {
// CHECK-NEXT:      affine.store %v0, %m[%arg0] : memref<10xf32>
// CHECK-NEXT:    }
func.func @nested_loops_both_having_invariant_code() {
  %m = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  %cf8 = arith.constant 8.0 : f32
  affine.for %arg0 = 0 to 10 {
    %v0 = arith.addf %cf7, %cf8 : f32
    affine.for %arg1 = 0 to 10 {
      affine.store %v0, %m[%arg0] : memref<10xf32>
    }
  }
  return
}

// -----

// Ops inside an affine.if that is not invariant stay: the guard may protect them.
// CHECK-LABEL: func.func @invariant_code_inside_affine_if() {
// CHECK:         affine.for %arg0 = 0 to 10 {
// CHECK-NEXT:      %t0 = affine.apply #map(%arg0)
// CHECK-NEXT:      affine.if #set(%arg0, %t0) {
// CHECK-NEXT:        %cf9 = arith.addf %cf8, %cf8 : f32
// CHECK-NEXT:        affine.store %cf9, %m[%arg0] : memref<10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @invariant_code_inside_affine_if() {
  %m = memref.alloc() : memref<10xf32>
  %cf8 = arith.constant 8.0 : f32
  affine.for %arg0 = 0 to 10 {
    %t0 = affine.apply affine_map<(d1) -> (d1 + 1)>(%arg0)
    affine.if affine_set<(d0, d1) : (d1 - d0 >= 0)> (%arg0, %t0) {
        %cf9 = arith.addf %cf8, %cf8 : f32
        affine.store %cf9, %m[%arg0] : memref<10xf32>
    }
  }
  return
}

// -----

// A load of a memref stored in the loop stays; the invariant addf leaves both loops.
// CHECK-LABEL: func.func @load_dependent_store() {
// CHECK:         arith.addf %cf7, %cf8 : f32
// CHECK-NEXT:    arith.addf %cf7, %cf7 : f32
// CHECK-NEXT:    affine.for %arg0 = 0 to 10 {
// CHECK-NEXT:      affine.for %arg1 = 0 to 10 {
// CHECK-NEXT:        affine.store
// CHECK-NEXT:        affine.load %m[%arg0]
func.func @load_dependent_store() {
  %m = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  %cf8 = arith.constant 8.0 : f32
  affine.for %arg0 = 0 to 10 {
    %v0 = arith.addf %cf7, %cf8 : f32
    affine.for %arg1 = 0 to 10 {
      %v1 = arith.addf %cf7, %cf7 : f32
      affine.store %v0, %m[%arg1] : memref<10xf32>
      %v2 = affine.load %m[%arg0] : memref<10xf32>
    }
  }
  return
}

// -----

// A whole inner loop (a reduction over a memref nothing writes) is invariant in %arg0.
// CHECK-LABEL: func.func @nested_loops_inner_loops_invariant_to_outermost_loop
// CHECK-NEXT:    affine.for %arg1 = 0 to 30 {
// CHECK-NEXT:      %v0 = affine.for %arg2 = 0 to 10 iter_args(%prevAccum = %arg1) -> (index) {
// CHECK-NEXT:        %v1 = affine.load %m[%arg2] : memref<10xindex>
// CHECK-NEXT:        %newAccum = arith.addi %prevAccum, %v1 : index
// CHECK-NEXT:        affine.yield %newAccum : index
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %arg0 = 0 to 20 {
// CHECK-NEXT:    }
func.func @nested_loops_inner_loops_invariant_to_outermost_loop(%m : memref<10xindex>) {
  affine.for %arg0 = 0 to 20 {
    affine.for %arg1 = 0 to 30 {
      %v0 = affine.for %arg2 = 0 to 10 iter_args (%prevAccum = %arg1) -> index {
        %v1 = affine.load %m[%arg2] : memref<10xindex>
        %newAccum = arith.addi %prevAccum, %v1 : index
        affine.yield %newAccum : index
      }
    }
  }
  return
}

// -----

// Pure ops leave a loop that never runs; its store does not.
// CHECK-LABEL: func.func @hoist_pure_from_zero_trip_count_loop
// CHECK:         %z = arith.addi %x, %y : i32
// CHECK-NEXT:    affine.for %i = 0 to 0 {
// CHECK-NEXT:      affine.store %z, %alloc[0] : memref<1xi32>
// CHECK-NEXT:    }
func.func @hoist_pure_from_zero_trip_count_loop(%x: i32, %y: i32) -> i32 {
  %alloc = memref.alloc() : memref<1xi32>
  affine.for %i = 0 to 0 {
    %z = arith.addi %x, %y : i32
    affine.store %z, %alloc[0] : memref<1xi32>
  }
  %r = affine.load %alloc[0] : memref<1xi32>
  return %r : i32
}

// -----

// Ours: the point loop of a tile always runs (isl proves %ii < min(%ii + 4, 10)), so the
// load of %A[%ii] leaves it; out of %N loops nothing but pure ops move.
// CHECK-LABEL: func.func @tile_loop_load
// CHECK:         affine.for %ii = 0 to 10 step 4 {
// CHECK-NEXT:      %v = affine.load %A[%ii] : memref<10xf32>
// CHECK-NEXT:      affine.for %i = #map(%ii) to min #map1(%ii) {
// CHECK-NEXT:        affine.store %v, %B[%i] : memref<10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %j = 0 to %N {
// CHECK-NEXT:      %w = affine.load %A[0] : memref<10xf32>
func.func @tile_loop_load(%A: memref<10xf32>, %B: memref<10xf32>, %N: index) {
  affine.for %ii = 0 to 10 step 4 {
    affine.for %i = affine_map<(d0) -> (d0)>(%ii) to min affine_map<(d0) -> (d0 + 4, 10)>(%ii) {
      %v = affine.load %A[%ii] : memref<10xf32>
      affine.store %v, %B[%i] : memref<10xf32>
    }
  }
  affine.for %j = 0 to %N {
    %w = affine.load %A[0] : memref<10xf32>
    affine.store %w, %B[%j] : memref<10xf32>
  }
  return
}

// -----

// Ours: ops of unknown effect keep memory accesses in place; trapping division stays.
// CHECK-LABEL: func.func @unknown_effects
// CHECK:         %h = arith.divsi %x, %c2 : i32
// CHECK-NEXT:    affine.for %i = 0 to 10 {
// CHECK-NEXT:      %v = affine.load %A[0] : memref<10xi32>
// CHECK-NEXT:      "test.opaque"() : () -> ()
// CHECK-NEXT:      %q = arith.divsi %x, %y : i32
func.func @unknown_effects(%A: memref<10xi32>, %B: memref<10xi32>, %x: i32, %y: i32) {
  %c2 = arith.constant 2 : i32
  affine.for %i = 0 to 10 {
    %v = affine.load %A[0] : memref<10xi32>
    "test.opaque"() : () -> ()
    %q = arith.divsi %x, %y : i32
    %h = arith.divsi %x, %c2 : i32
    %s = arith.addi %v, %q : i32
    %t = arith.addi %s, %h : i32
    affine.store %t, %B[%i] : memref<10xi32>
  }
  return
}
