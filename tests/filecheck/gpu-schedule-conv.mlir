// RUN: affine-opt %s -gpu-schedule="tile-sizes=32,32,8,2,2 prefetch=false" | filecheck %s

// A zero-padded NCHW convolution is an implicit GEMM: rows %f (32), columns (%h, %w) as one
// linear index (16), k = (%c, %kh, %kw) as one linear index (18). Each thread's column and
// each copy's column are delinearized once (%h, %w from %j0; %h_1, %w_1 from %g), the k of
// each copy per step (%c, %kh, %kw from %gk); the guarded read (zero outside the window) is
// packed into shared memory as it is, inside the guard for the partial last k step (18 is
// not a multiple of 8; the filter needs only that one, its 32 rows fill the tile).
func.func @conv(%input: memref<1x2x4x4xf32>, %filter: memref<32x2x3x3xf32>, %output: memref<1x32x4x4xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %f = 0 to 32 {
    affine.for %h = 0 to 4 {
      affine.for %w = 0 to 4 {
        %r = affine.for %c = 0 to 2 iter_args(%a0 = %z) -> (f32) {
          %r1 = affine.for %kh = 0 to 3 iter_args(%a1 = %a0) -> (f32) {
            %r2 = affine.for %kw = 0 to 3 iter_args(%a2 = %a1) -> (f32) {
              %x = affine.if affine_set<(d0, d1, d2, d3) : (d0 + d1 - 1 >= 0, -d0 - d1 + 4 >= 0, d2 + d3 - 1 >= 0, -d2 - d3 + 4 >= 0)>(%h, %kh, %w, %kw) -> f32 {
                %v = affine.load %input[0, %c, %h + %kh - 1, %w + %kw - 1] : memref<1x2x4x4xf32>
                affine.yield %v : f32
              } else {
                affine.yield %z : f32
              }
              %y = affine.load %filter[%f, %c, %kh, %kw] : memref<32x2x3x3xf32>
              %p = arith.mulf %x, %y : f32
              %s = arith.addf %a2, %p : f32
              affine.yield %s : f32
            }
            affine.yield %r2 : f32
          }
          affine.yield %r1 : f32
        }
        affine.store %r, %output[0, %f, %h, %w] : memref<1x32x4x4xf32>
      }
    }
  }
  return
}

// CHECK-LABEL: func.func @conv
// CHECK: gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
// CHECK: %h = affine.apply #map{{[0-9]*}}(%j0)
// CHECK-NEXT: %w = affine.apply #map{{[0-9]*}}(%j0)
// CHECK: %input_shared = memref.alloc() : memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %filter_shared = memref.alloc() : memref<8x36xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: %g = affine.apply
// CHECK-NEXT: %h_1 = affine.apply #map{{[0-9]*}}(%g)
// CHECK-NEXT: %w_1 = affine.apply #map{{[0-9]*}}(%g)
// CHECK: affine.for %kt = 0 to 18 step 8
// CHECK-NEXT: %gk = affine.apply
// CHECK-NEXT: %c = affine.apply #map{{[0-9]*}}(%gk)
// CHECK-NEXT: %kh = affine.apply #map{{[0-9]*}}(%gk)
// CHECK-NEXT: %kw = affine.apply #map{{[0-9]*}}(%gk)
// CHECK-NEXT: %5 = affine.if #set{{[0-9]*}}(%g, %gk) -> f32 {
// CHECK-NEXT: %x = affine.if #set{{[0-9]*}}(%h_1, %kh, %w_1, %kw) -> f32 {
// CHECK-NEXT: %v = affine.load %input[0, %c, %h_1 + %kh - 1, %w_1 + %kw - 1] : memref<1x2x4x4xf32>
// CHECK: %y = affine.load %filter[%g_0, %c_0, %kh_0, %kw_0] : memref<32x2x3x3xf32>
// CHECK: affine.store %5, %input_shared[%tid floordiv 32, %tid mod 32]
// CHECK: affine.for %kk = 0 to min #map{{[0-9]*}}(%kt)
// CHECK: affine.store %0#0, %output[0, %i0, %h, %w] : memref<1x32x4x4xf32>
// CHECK: affine.store %0#3, %output[0, %i1, %h_0, %w_0] : memref<1x32x4x4xf32>
