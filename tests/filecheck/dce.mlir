// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -dce | filecheck %s

// MLIR has no 'dce' pass: its canonicalize erases trivially dead ops (isOpTriviallyDead,
// loads and allocations included) and allocations written only by memref.store; this pass
// does just that, to a fixpoint, and also knows affine.store (MLIR's canonicalize keeps
// @write_only's and @fixpoint's allocations, which only affine.store writes).

// A chain of dead pure ops, and a dead load, go in one run.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[K:.*]] = arith.addi %n, %n : index
// CHECK-NEXT:    return %[[K]] : index
func.func @chain(%A: memref<8xf32>, %n: index) -> index {
  %c1 = arith.constant 1 : index
  %a = arith.addi %n, %c1 : index
  %b = arith.muli %a, %a : index
  %v = affine.load %A[%n] : memref<8xf32>
  %w = arith.addf %v, %v : f32
  %keep = arith.addi %n, %n : index
  return %keep : index
}

// -----

// Loops and ifs without effects whose results are unused are erased; a loop that stores stays.
// CHECK-LABEL: func.func @loops
// CHECK-NEXT:    affine.for %i = 0 to 8 {
// CHECK-NEXT:      %[[V:.*]] = affine.load %A[%i] : memref<8xf32>
// CHECK-NEXT:      affine.store %[[V]], %B[%i] : memref<8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @loops(%A: memref<8xf32>, %B: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = affine.for %i = 0 to 8 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %v = affine.load %A[%j] : memref<8xf32>
    }
    %r = affine.if affine_set<(d0) : (d0 - 4 >= 0)>(%i) -> f32 {
      affine.yield %zero : f32
    } else {
      %v = affine.load %A[%i] : memref<8xf32>
      affine.yield %v : f32
    }
  }
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %B[%i] : memref<8xf32>
  }
  return
}

// -----

// A memref that is only written (stored into, deallocated) goes with its stores, and then
// the nest computing what was stored.
// CHECK-LABEL: func.func @write_only
// CHECK-NEXT:    return
func.func @write_only(%A: memref<8xf32>) {
  %t = memref.alloc() : memref<8xf32>
  %s = memref.alloca() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    %w = arith.mulf %v, %v : f32
    affine.store %w, %t[%i] : memref<8xf32>
    memref.store %w, %s[%i] : memref<8xf32>
  }
  memref.dealloc %t : memref<8xf32>
  return
}

// -----

// Stores into arguments are observable; a local memref that is read, measured, passed to a
// call or returned is kept.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[CST:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %[[U:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    %[[W:.*]] = memref.alloc(%n) : memref<?xf32>
// CHECK-NEXT:    %[[R:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    affine.store %[[CST]], %A[0] : memref<8xf32>
// CHECK-NEXT:    affine.store %[[CST]], %[[T]][0] : memref<8xf32>
// CHECK-NEXT:    affine.store %[[CST]], %[[U]][0] : memref<8xf32>
// CHECK-NEXT:    affine.store %[[CST]], %[[W]][0] : memref<?xf32>
// CHECK-NEXT:    affine.store %[[CST]], %[[R]][0] : memref<8xf32>
// CHECK-NEXT:    %[[V:.*]] = affine.load %[[T]][0] : memref<8xf32>
// CHECK-NEXT:    affine.store %[[V]], %A[1] : memref<8xf32>
// CHECK-NEXT:    func.call @sink(%[[U]]) : (memref<8xf32>) -> ()
// CHECK-NEXT:    %[[D:.*]] = memref.dim %[[W]], %[[C0]] : memref<?xf32>
// CHECK-NEXT:    return %[[R]], %[[D]] : memref<8xf32>, index
func.func private @sink(memref<8xf32>)
func.func @kept(%A: memref<8xf32>, %n: index) -> (memref<8xf32>, index) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<8xf32>
  %u = memref.alloc() : memref<8xf32>
  %w = memref.alloc(%n) : memref<?xf32>
  %r = memref.alloc() : memref<8xf32>
  affine.store %one, %A[0] : memref<8xf32>
  affine.store %one, %t[0] : memref<8xf32>
  affine.store %one, %u[0] : memref<8xf32>
  affine.store %one, %w[0] : memref<?xf32>
  affine.store %one, %r[0] : memref<8xf32>
  %v = affine.load %t[0] : memref<8xf32>
  affine.store %v, %A[1] : memref<8xf32>
  func.call @sink(%u) : (memref<8xf32>) -> ()
  %d = memref.dim %w, %c0 : memref<?xf32>
  return %r, %d : memref<8xf32>, index
}

// -----

// A memref whose only read is dead becomes write-only once the read is gone.
// CHECK-LABEL: func.func @fixpoint
// CHECK-NEXT:    affine.for %i = 0 to 4 {
// CHECK-NEXT:      affine.store %x, %A[%i] : memref<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @fixpoint(%A: memref<4xf32>, %x: f32) {
  %t = memref.alloca() : memref<4xf32>
  affine.for %i = 0 to 4 {
    affine.store %x, %t[%i] : memref<4xf32>
    %dead = affine.load %t[%i] : memref<4xf32>
    affine.store %x, %A[%i] : memref<4xf32>
  }
  return
}

// -----

// Ops of unknown effects stay, and so does what they use.
// CHECK-LABEL: func.func @unknown
// CHECK-NEXT:    %[[C:.*]] = arith.addi %n, %n : index
// CHECK-NEXT:    "test.use"(%[[C]]) : (index) -> ()
// CHECK-NEXT:    affine.for
// CHECK-NEXT:      gpu.barrier
func.func @unknown(%n: index) {
  %c = arith.addi %n, %n : index
  "test.use"(%c) : (index) -> ()
  affine.for %i = 0 to 4 {
    gpu.barrier
  }
  return
}
