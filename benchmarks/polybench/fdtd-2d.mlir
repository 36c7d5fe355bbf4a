// PolyBench/C 4.2 fdtd-2d: 2-D finite-difference time-domain kernel, TMAX steps over the fields
// ex, ey, hz (NX x NY); _fict_ (TMAX) gives ey's first row at each step.
func.func @fdtd_2d(%tmax: index, %nx: index, %ny: index, %ex: memref<?x?xf32>, %ey: memref<?x?xf32>,
                   %hz: memref<?x?xf32>, %_fict_: memref<?xf32>) {
  %c05 = arith.constant 5.000000e-01 : f32
  %c07 = arith.constant 0.699999988 : f32
  affine.for %t = 0 to %tmax {
    affine.for %j = 0 to %ny {
      %f = affine.load %_fict_[%t] : memref<?xf32>
      affine.store %f, %ey[0, %j] : memref<?x?xf32>
    }
    affine.for %i = 1 to %nx {
      affine.for %j = 0 to %ny {
        %e = affine.load %ey[%i, %j] : memref<?x?xf32>
        %h0 = affine.load %hz[%i, %j] : memref<?x?xf32>
        %h1 = affine.load %hz[%i - 1, %j] : memref<?x?xf32>
        %d = arith.subf %h0, %h1 : f32
        %m = arith.mulf %c05, %d : f32
        %r = arith.subf %e, %m : f32
        affine.store %r, %ey[%i, %j] : memref<?x?xf32>
      }
    }
    affine.for %i = 0 to %nx {
      affine.for %j = 1 to %ny {
        %e = affine.load %ex[%i, %j] : memref<?x?xf32>
        %h0 = affine.load %hz[%i, %j] : memref<?x?xf32>
        %h1 = affine.load %hz[%i, %j - 1] : memref<?x?xf32>
        %d = arith.subf %h0, %h1 : f32
        %m = arith.mulf %c05, %d : f32
        %r = arith.subf %e, %m : f32
        affine.store %r, %ex[%i, %j] : memref<?x?xf32>
      }
    }
    affine.for %i = 0 to affine_map<()[s0] -> (s0 - 1)>()[%nx] {
      affine.for %j = 0 to affine_map<()[s0] -> (s0 - 1)>()[%ny] {
        %h = affine.load %hz[%i, %j] : memref<?x?xf32>
        %x1 = affine.load %ex[%i, %j + 1] : memref<?x?xf32>
        %x0 = affine.load %ex[%i, %j] : memref<?x?xf32>
        %s1 = arith.subf %x1, %x0 : f32
        %y1 = affine.load %ey[%i + 1, %j] : memref<?x?xf32>
        %s2 = arith.addf %s1, %y1 : f32
        %y0 = affine.load %ey[%i, %j] : memref<?x?xf32>
        %s3 = arith.subf %s2, %y0 : f32
        %m = arith.mulf %c07, %s3 : f32
        %r = arith.subf %h, %m : f32
        affine.store %r, %hz[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
