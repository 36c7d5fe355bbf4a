// RUN: affine-opt %s | filecheck %s

// GPU ops: a kernel launch, ids, barriers, shuffles, workgroup memory and warp-level MMA.

// CHECK-LABEL: func.func @kernel(%A: memref<64x64xf16>, %C: memref<64x64xf32>) {
func.func @kernel(%A: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  // CHECK: gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // CHECK-NEXT: %buf = memref.alloc() : memref<16x16xf16, #gpu.address_space<workgroup>>
    %buf = memref.alloc() : memref<16x16xf16, #gpu.address_space<workgroup>>
    // CHECK-NEXT: %t = gpu.thread_id x
    %t = gpu.thread_id x
    // CHECK-NEXT: %b = gpu.block_id y
    %b = gpu.block_id y
    // CHECK-NEXT: %0 = gpu.block_dim z
    %3 = gpu.block_dim z
    // CHECK-NEXT: %zero = arith.constant 0.000000e+00 : f32
    %zero = arith.constant 0.0 : f32
    // CHECK-NEXT: %a = gpu.subgroup_mma_load_matrix %A[%bx, %by] leadDimension 64 : memref<64x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    %a = gpu.subgroup_mma_load_matrix %A[%bx, %by] {leadDimension = 64 : index} : memref<64x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    // CHECK-NEXT: %bm = gpu.subgroup_mma_load_matrix %buf[%tx, %ty] leadDimension 16 transpose : memref<16x16xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
    %bm = gpu.subgroup_mma_load_matrix %buf[%tx, %ty] leadDimension 16 transpose : memref<16x16xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
    // CHECK-NEXT: %c = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
    %c = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
    // CHECK-NEXT: %d = gpu.subgroup_mma_compute %a, %bm, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    %d = gpu.subgroup_mma_compute %a, %bm, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
    // CHECK-NEXT: gpu.subgroup_mma_store_matrix %d, %C[%bx, %by] leadDimension 64 : !gpu.mma_matrix<16x16xf32, "COp">, memref<64x64xf32>
    gpu.subgroup_mma_store_matrix %d, %C[%bx, %by] leadDimension 64 : !gpu.mma_matrix<16x16xf32, "COp">, memref<64x64xf32>
    // CHECK-NEXT: gpu.barrier
    gpu.barrier
    %off = arith.constant 1 : i32
    %w = arith.constant 32 : i32
    // CHECK: %sh, %valid = gpu.shuffle xor %zero, %off, %w : f32
    %sh, %valid = gpu.shuffle xor %zero, %off, %w : f32
    // Launch arguments are valid affine symbols inside the launch.
    // CHECK-NEXT: affine.for %i = 0 to %sx {
    affine.for %i = 0 to %sx {
      // CHECK-NEXT: affine.load %buf[%i, symbol(%tx)] : memref<16x16xf16, #gpu.address_space<workgroup>>
      %v = affine.load %buf[%i, symbol(%tx)] : memref<16x16xf16, #gpu.address_space<workgroup>>
    }
    // CHECK: gpu.terminator
    // CHECK-NEXT: }
    gpu.terminator
  }
  return
}
