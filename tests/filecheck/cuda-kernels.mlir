// RUN: cuda-emit %s --specs | filecheck %s

// The CUDA C of mapped kernels (codegen.cuda.emit): one extern "C" __global__ function per
// gpu.launch, IR names as C names, affine indices linearized row-major, guards with the
// negative terms moved right, floor semantics through air_* helpers, f16 storage with f32
// compute, workgroup buffers as __shared__ arrays, barriers as __syncthreads().

// CHECK: // CUDA C printed by codegen.cuda from affine IR.
// CHECK: #include <cuda_fp16.h>
// CHECK: static __device__ __forceinline__ long long air_floordiv(long long x, long long c) {
// CHECK: static __device__ __forceinline__ float air_round_f16(float x) { return __half2float(__float2half_rn(x)); }

func.func @scale(%A: memref<?x64xf16>, %B: memref<?x64xf16>, %N: index) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %gx = affine.apply affine_map<()[s0] -> ((s0 * 64) ceildiv 128)>()[%N]
  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %c1, %sgz = %c1)
             threads(%tx, %ty, %tz) in (%sbx = %c128, %sby = %c1, %sbz = %c1) {
    %e = affine.apply affine_map<(d0, d1) -> (d0 * 128 + d1)>(%bx, %tx)
    %i = affine.apply affine_map<(d0) -> (d0 floordiv 64)>(%e)
    %j = affine.apply affine_map<(d0) -> (d0 mod 64)>(%e)
    affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%N] {
      %v = affine.load %A[%i, %j] : memref<?x64xf16>
      %h = arith.constant 0.5 : f16
      %w = arith.mulf %v, %h : f16
      affine.store %w, %B[%i, %j] : memref<?x64xf16>
    }
    gpu.terminator
  }
  return
}
// CHECK-LABEL: // @scale: gpu.launch at {{.*}}cuda-kernels.mlir:18:3; block (128, 1, 1)
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(128) scale_kernel0(
// CHECK-NEXT:     const __half* __restrict__ A,
// CHECK-NEXT:     long long A_dim0,
// CHECK-NEXT:     __half* __restrict__ B,
// CHECK-NEXT:     long long B_dim0,
// CHECK-NEXT:     long long N) {
// CHECK-NEXT:   long long bx = blockIdx.x;
// CHECK-NEXT:   long long tx = threadIdx.x;
// CHECK-NEXT:   long long e = bx * 128 + tx;
// CHECK-NEXT:   long long i = air_floordiv(e, 64);
// CHECK-NEXT:   long long j = air_mod(e, 64);
// CHECK-NEXT:   if (i < N) {
// CHECK-NEXT:     float v = __half2float(A[i * 64 + j]);
// CHECK-NEXT:     float w = air_round_f16(v * 0.5f);
// CHECK-NEXT:     B[i * 64 + j] = __float2half_rn(w);
// CHECK-NEXT:   }
// CHECK-NEXT: }

func.func @transpose_tile(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c2, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c32, %sz = %c1) {
    %tile = memref.alloc() : memref<32x33xf32, #gpu.address_space<workgroup>>
    %v = affine.load %A[%by * 32 + %ty, %bx * 32 + %tx] : memref<64x64xf32>
    affine.store %v, %tile[%ty, %tx] : memref<32x33xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = affine.load %tile[%tx, %ty] : memref<32x33xf32, #gpu.address_space<workgroup>>
    affine.store %w, %B[%bx * 32 + %ty, %by * 32 + %tx] : memref<64x64xf32>
    gpu.terminator
  }
  return
}
// CHECK-LABEL: // @transpose_tile: gpu.launch at {{.*}}; block (32, 32, 1)
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(1024) transpose_tile_kernel0(
// CHECK-NEXT:     const float* __restrict__ A,
// CHECK-NEXT:     float* __restrict__ B) {
// CHECK-NEXT:   __shared__ __align__(16) float tile[1056];
// CHECK-NEXT:   long long bx = blockIdx.x;
// CHECK-NEXT:   long long by = blockIdx.y;
// CHECK-NEXT:   long long tx = threadIdx.x;
// CHECK-NEXT:   long long ty = threadIdx.y;
// CHECK-NEXT:   float v = A[by * 2048 + ty * 64 + bx * 32 + tx];
// CHECK-NEXT:   tile[ty * 33 + tx] = v;
// CHECK-NEXT:   __syncthreads();
// CHECK-NEXT:   float w = tile[tx * 33 + ty];
// CHECK-NEXT:   B[bx * 2048 + ty * 64 + by * 32 + tx] = w;
// CHECK-NEXT: }

// CHECK: // kernel scale_kernel0: block (128, 1, 1), static shared 0 B, dynamic shared 0 B, params (A, A_dim0=dim0, B, B_dim0=dim0, N)
// CHECK-NEXT: // kernel transpose_tile_kernel0: block (32, 32, 1), static shared 4224 B, dynamic shared 0 B, params (A, B)
