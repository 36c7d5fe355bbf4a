// RUN: affine-opt %s | filecheck %s

// iter_args: the loop's results are the values yielded by its last iteration. Several
// results print as one packed group (%r:2, used as %r#0, %r#1), as MLIR prints them.

// CHECK-LABEL: func.func @sum(%A: memref<64xf32>) -> f32 {
func.func @sum(%A: memref<64xf32>) -> f32 {
  // CHECK-NEXT: %cst = arith.constant 0.000000e+00 : f32
  %0 = arith.constant 0.0 : f32
  // CHECK-NEXT: %s = affine.for %i = 0 to 64 iter_args(%acc = %cst) -> (f32) {
  %s = affine.for %i = 0 to 64 iter_args(%acc = %0) -> (f32) {
    // CHECK-NEXT: %a = affine.load %A[%i] : memref<64xf32>
    %a = affine.load %A[%i] : memref<64xf32>
    // CHECK-NEXT: %t = arith.addf %acc, %a : f32
    %t = arith.addf %acc, %a : f32
    // CHECK-NEXT: affine.yield %t : f32
    affine.yield %t : f32
  // CHECK-NEXT: }
  }
  // CHECK-NEXT: return %s : f32
  return %s : f32
}

// CHECK-LABEL: func.func @min_max(%A: memref<64xf32>, %init: f32) -> f32 {
func.func @min_max(%A: memref<64xf32>, %init: f32) -> f32 {
  // CHECK-NEXT: %r:2 = affine.for %i = 0 to 64 iter_args(%lo = %init, %hi = %init) -> (f32, f32) {
  %r:2 = affine.for %i = 0 to 64 iter_args(%lo = %init, %hi = %init) -> (f32, f32) {
    %a = affine.load %A[%i] : memref<64xf32>
    %l = arith.minimumf %lo, %a : f32
    %h = arith.maximumf %hi, %a : f32
    // CHECK: affine.yield %l, %h : f32, f32
    affine.yield %l, %h : f32, f32
  }
  // CHECK: %d = arith.subf %r#1, %r#0 : f32
  %d = arith.subf %r#1, %r : f32
  return %d : f32
}

// Values MLIR numbers (%0, %1) stay numbered, in order.
// CHECK-LABEL: func.func @numbered(%arg0: f32) -> f32 {
func.func @numbered(%arg0: f32) -> f32 {
  // CHECK-NEXT: %0:2 = affine.for %arg1 = 0 to 4 iter_args(%arg2 = %arg0, %arg3 = %arg0) -> (f32, f32) {
  %0:2 = affine.for %arg1 = 0 to 4 iter_args(%arg2 = %arg0, %arg3 = %arg0) -> (f32, f32) {
    // CHECK-NEXT: %1 = arith.mulf %arg2, %arg3 : f32
    %7 = arith.mulf %arg2, %arg3 : f32
    affine.yield %7, %arg3 : f32, f32
  }
  // CHECK: return %0#0 : f32
  return %0#0 : f32
}
