// RUN: affine-opt %s -gpu-schedule="tile-sizes=32,32,8,2,2 split-k=4" | filecheck %s
// RUN: affine-opt %s -gpu-schedule="tile-sizes=32,32,8,2,2 split-k=3" | filecheck %s --check-prefix=NOT

// Split-K: the 16 k steps run in 4 slices on the grid's z; each block's sums start from -0.0
// (the identity of addf) and go to a workspace indexed [slice, %i, %j]; a second launch, a
// thread per element, adds the initial value and the 4 slices in order and stores.
// 3 slices do not divide 16 steps: a note, no split.
func.func @matmul(%A: memref<32x128xf32>, %B: memref<128x32xf32>, %C: memref<32x32xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      %r = affine.for %k = 0 to 128 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<32x128xf32>
        %b = affine.load %B[%k, %j] : memref<128x32xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<32x32xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @matmul
// CHECK: %partial_sums = memref.alloc() : memref<4x32x32xf32>
// CHECK: gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c4)
// CHECK: %slice = affine.apply #map{{[0-9]*}}(%bz)
// CHECK-NEXT: %k_first = affine.apply #map{{[0-9]*}}(%slice)
// CHECK: %cst = arith.constant -0.000000e+00 : f32
// CHECK: affine.for %kt = 0 to 24 step 8 iter_args(%{{[0-9]+}} = %cst,
// CHECK: affine.store %{{.*}}, %partial_sums[%slice, %i0, %j0] : memref<4x32x32xf32>
// CHECK: gpu.launch blocks(%bx_0, %by_0, %bz_0) in (%gx_0 = %c4, %gy_0 = %c1, %gz_0 = %c1) threads(%tx_0, %ty_0, %tz_0) in (%sx_0 = %c256,
// CHECK: %element = affine.apply
// CHECK: %[[P0:.*]] = affine.load %partial_sums[0, %{{.*}}, %{{.*}}] : memref<4x32x32xf32>
// CHECK-NEXT: %[[S0:.*]] = arith.addf %z, %[[P0]] : f32
// CHECK-NEXT: %[[P1:.*]] = affine.load %partial_sums[1,
// CHECK-NEXT: %[[S1:.*]] = arith.addf %[[S0]], %[[P1]] : f32
// CHECK: affine.load %partial_sums[3,
// CHECK: affine.store %{{.*}}, %C[
// CHECK: memref.dealloc %partial_sums : memref<4x32x32xf32>

// NOT-NOT: partial_sums
