// RUN: affine-opt %s | filecheck %s
// RUN: affine-opt %s | affine-opt | filecheck %s

// memref.atomic_rmw in MLIR's syntax: the kind, the value, the element, then the value's and
// the memref's types and the result (the element as it was) type; it prints back the same.

// CHECK-LABEL: func.func @atomics(
func.func @atomics(%A: memref<?xf32>, %B: memref<4x4xi32>, %v: f32, %w: i32, %i: index) {
  // CHECK-NEXT: %old = memref.atomic_rmw addf %v, %A[%i] : (f32, memref<?xf32>) -> f32
  %old = memref.atomic_rmw addf %v, %A[%i] : (f32, memref<?xf32>) -> f32
  // CHECK-NEXT: %0 = memref.atomic_rmw maximumf %old, %A[%i] : (f32, memref<?xf32>) -> f32
  %0 = memref.atomic_rmw maximumf %old, %A[%i] : (f32, memref<?xf32>) -> f32
  // CHECK-NEXT: %1 = memref.atomic_rmw maxs %w, %B[%i, %i] : (i32, memref<4x4xi32>) -> i32
  %1 = memref.atomic_rmw maxs %w, %B[%i, %i] : (i32, memref<4x4xi32>) -> i32
  // CHECK-NEXT: %2 = memref.atomic_rmw ori %w, %B[%i, %i] : (i32, memref<4x4xi32>) -> i32
  %2 = memref.atomic_rmw ori %w, %B[%i, %i] : (i32, memref<4x4xi32>) -> i32
  return
}
