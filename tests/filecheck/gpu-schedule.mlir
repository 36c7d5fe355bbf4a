// RUN: affine-opt %s -gpu-schedule="tile-sizes=32,32,8,2,2" | filecheck %s
// RUN: affine-opt %s -gpu-schedule="tile-sizes=32,32,8,2,2 prefetch=false" | filecheck %s --check-prefix=NOPF

// A contraction becomes one launch: 2x2 blocks of 16x16 threads, A and B packed per k step
// into shared memory (A stored transposed, rows padded by 4), each thread a 2x2 register tile.
// With prefetch, the first step's loads come before the k loop, the next step's inside it.
func.func @matmul(%A: memref<64x16xf32>, %B: memref<16x64xf32>, %C: memref<64x64xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %r = affine.for %k = 0 to 16 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<64x16xf32>
        %b = affine.load %B[%k, %j] : memref<16x64xf32>
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
// CHECK: gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c2, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c16, %sz = %c1) {
// CHECK: %A_shared = memref.alloc() : memref<8x36xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %B_shared = memref.alloc() : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK: %a = affine.load %A[%g, %gk] : memref<64x16xf32>
// CHECK: %b = affine.load %B[%gk_0, %g_0] : memref<16x64xf32>
// CHECK-NEXT: %0:6 = affine.for %kt = 0 to 8 step 8 iter_args(%1 = %z, %2 = %z, %3 = %z, %4 = %z, %5 = %a, %6 = %b)
// CHECK-NEXT: affine.store %5, %A_shared[%tid mod 8, %tid floordiv 8]
// CHECK-NEXT: affine.store %6, %B_shared[%tid floordiv 32, %tid mod 32]
// CHECK-NEXT: gpu.barrier
// CHECK: %a_0 = affine.load %A[%g, %gk_1] : memref<64x16xf32>
// CHECK: %7:4 = affine.for %kk = 0 to 8 iter_args(%8 = %1, %9 = %2, %10 = %3, %11 = %4)
// CHECK: %12 = affine.load %A_shared[%kk, %ty * 2] : memref<8x36xf32, #gpu.address_space<workgroup>>
// CHECK: %15 = affine.load %B_shared[%kk, %tx * 2 + 1] : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %p = arith.mulf %12, %14 : f32
// CHECK-NEXT: %s = arith.addf %8, %p : f32
// CHECK: gpu.barrier
// CHECK-NEXT: affine.yield %7#0, %7#1, %7#2, %7#3, %a_0, %b_0
// CHECK: affine.store %0#4, %A_shared
// CHECK: gpu.barrier
// CHECK-NEXT: %16:4 = affine.for %kk_0 = 0 to 8 iter_args(%17 = %0#0, %18 = %0#1, %19 = %0#2, %20 = %0#3)
// CHECK: affine.store %16#0, %C[%i0, %j0] : memref<64x64xf32>
// CHECK: affine.store %16#3, %C[%i1, %j1] : memref<64x64xf32>

// NOPF: %0:4 = affine.for %kt = 0 to 16 step 8 iter_args(%1 = %z, %2 = %z, %3 = %z, %4 = %z)
// NOPF: %a = affine.load %A[%g, %gk] : memref<64x16xf32>
// NOPF: affine.store %a, %A_shared[%tid mod 8, %tid floordiv 8]
// NOPF: gpu.barrier
// NOPF: affine.for %kk = 0 to 8
// NOPF: gpu.barrier
