// RUN: not affine-opt %s -split-input-file 2>&1 | filecheck %s

// Errors name the file, line and column of the offending token (parse errors) or op
// (verify errors), counted in the whole file; each chunk is reported on its own and
// the good chunks are still printed.

func.func @undefined(%A: memref<8xf32>) {
  %v = affine.load %B[0] : memref<8xf32>
  return
}
// CHECK: errors.mlir:8:20: error: use of undefined value '%B'

// -----

func.func @good() {
  return
}
// CHECK: module {
// CHECK: func.func @good()

// -----

func.func @step(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 step 0 {
  }
  return
}
// CHECK: errors.mlir:24:31: error: step must be positive, got 0

// -----

func.func @yield(%x: f32) -> f32 {
  %r = affine.for %i = 0 to 4 iter_args(%a = %x) -> (f32) {
    affine.yield %i : index
  }
  return %r : f32
}
// CHECK: errors.mlir:34:5: error: 'affine.yield' op yields (index) but the parent 'affine.for' expects (f32)

// -----

func.func @rank(%A: memref<8x8xf32>, %i: index) {
  %v = affine.load %A[%i] : memref<8x8xf32>
  return
}
// CHECK: errors.mlir:43:22: error: 1 index for a memref of rank 2 (memref<8x8xf32>)

// -----

func.func @product(%A: memref<8xf32>, %i: index, %j: index) {
  %v = affine.load %A[%i * %j] : memref<8xf32>
  return
}
// CHECK: errors.mlir:51:26: error: non-affine product
