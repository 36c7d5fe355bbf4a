// RUN: affine-opt %s -split-input-file -affine-loop-fusion="fast-mem-space=1 local-buf-threshold=1" | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-fusion="fast-mem-space=workgroup local-buf-threshold=1" | filecheck %s --check-prefix=WG
// RUN: affine-opt %s -split-input-file -affine-loop-fusion | filecheck %s --check-prefix=SLOW

// Private buffers of at most local-buf-threshold KiB go to fast-mem-space: an integer
// memory space (as MLIR's option) or `workgroup` (GPU shared memory,
// #gpu.address_space<workgroup>; MLIR's option takes integers only). Without the option
// they stay in the default space. Every output was run through the interpreter against its
// input on random integer inputs (same arrays). MLIR (iree-opt, fast-mem-space=1
// local-buf-threshold=1): the same buffers in the same spaces.

// A 1x1 private buffer (4 bytes) goes to the fast space.
// CHECK-LABEL: func.func @point_buffer_to_fast_memory
// CHECK-NEXT:    %t_private = memref.alloc() : memref<1x1xf32, 1>
// CHECK-NEXT:    affine.for %i = 0 to 10 {
// CHECK-NEXT:      affine.for %j = 0 to 300 {
// CHECK-NEXT:        %a = affine.load %A[%i, %j] : memref<10x300xf32>
// CHECK-NEXT:        %b = arith.mulf %a, %a : f32
// CHECK-NEXT:        affine.store %b, %t_private[0, 0] : memref<1x1xf32, 1>
// CHECK-NEXT:        %x = affine.load %t_private[0, 0] : memref<1x1xf32, 1>
// CHECK-NEXT:        affine.store %x, %D[%i, %j] : memref<10x300xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// WG-LABEL: func.func @point_buffer_to_fast_memory
// WG-NEXT:    %t_private = memref.alloc() : memref<1x1xf32, #gpu.address_space<workgroup>>
// WG:           affine.store %b, %t_private[0, 0] : memref<1x1xf32, #gpu.address_space<workgroup>>
// WG-NEXT:      %x = affine.load %t_private[0, 0] : memref<1x1xf32, #gpu.address_space<workgroup>>
// SLOW-LABEL: func.func @point_buffer_to_fast_memory
// SLOW-NEXT:    %t_private = memref.alloc() : memref<1x1xf32>
func.func @point_buffer_to_fast_memory(%A: memref<10x300xf32>, %D: memref<10x300xf32>) {
  %t = memref.alloc() : memref<10x300xf32>
  affine.for %i0 = 0 to 10 {
    affine.for %j0 = 0 to 300 {
      %a = affine.load %A[%i0, %j0] : memref<10x300xf32>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %t[%i0, %j0] : memref<10x300xf32>
    }
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 300 {
      %x = affine.load %t[%i, %j] : memref<10x300xf32>
      affine.store %x, %D[%i, %j] : memref<10x300xf32>
    }
  }
  return
}

// -----

// A row buffer of 256 floats is exactly 1 KiB: at the threshold, it goes to the fast space.
// CHECK-LABEL: func.func @row_buffer_at_threshold
// CHECK-NEXT:    %t_private = memref.alloc() : memref<1x256xf32, 1>
// CHECK-NEXT:    affine.for %i = 0 to 10 {
// CHECK-NEXT:      affine.for %j0 = 0 to 256 {
// CHECK-NEXT:        %a = affine.load %A[%i, %j0] : memref<10x256xf32>
// CHECK-NEXT:        %b = arith.mulf %a, %a : f32
// CHECK-NEXT:        affine.store %b, %t_private[0, %j0] : memref<1x256xf32, 1>
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.for %j = 0 to 255 {
// CHECK-NEXT:        %x = affine.load %t_private[0, %j] : memref<1x256xf32, 1>
// CHECK-NEXT:        %y = affine.load %t_private[0, %j + 1] : memref<1x256xf32, 1>
// WG-LABEL: func.func @row_buffer_at_threshold
// WG-NEXT:    %t_private = memref.alloc() : memref<1x256xf32, #gpu.address_space<workgroup>>
// SLOW-LABEL: func.func @row_buffer_at_threshold
// SLOW-NEXT:    %t_private = memref.alloc() : memref<1x256xf32>
func.func @row_buffer_at_threshold(%A: memref<10x256xf32>, %D: memref<10x255xf32>) {
  %t = memref.alloc() : memref<10x256xf32>
  affine.for %i0 = 0 to 10 {
    affine.for %j0 = 0 to 256 {
      %a = affine.load %A[%i0, %j0] : memref<10x256xf32>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %t[%i0, %j0] : memref<10x256xf32>
    }
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 255 {
      %x = affine.load %t[%i, %j] : memref<10x256xf32>
      %y = affine.load %t[%i, %j + 1] : memref<10x256xf32>
      %s = arith.addf %x, %y : f32
      affine.store %s, %D[%i, %j] : memref<10x255xf32>
    }
  }
  return
}

// -----

// A row buffer of 301 floats (1204 bytes) is over 1 KiB: it stays in the default space.
// CHECK-LABEL: func.func @row_buffer_over_threshold
// CHECK-NEXT:    %t_private = memref.alloc() : memref<1x301xf32>
// CHECK-NEXT:    affine.for %i = 0 to 10 {
// CHECK-NEXT:      affine.for %j0 = 0 to 301 {
// CHECK:             affine.store %b, %t_private[0, %j0] : memref<1x301xf32>
// WG-LABEL: func.func @row_buffer_over_threshold
// WG-NEXT:    %t_private = memref.alloc() : memref<1x301xf32>
// SLOW-LABEL: func.func @row_buffer_over_threshold
// SLOW-NEXT:    %t_private = memref.alloc() : memref<1x301xf32>
func.func @row_buffer_over_threshold(%A: memref<10x301xf32>, %D: memref<10x300xf32>) {
  %t = memref.alloc() : memref<10x301xf32>
  affine.for %i0 = 0 to 10 {
    affine.for %j0 = 0 to 301 {
      %a = affine.load %A[%i0, %j0] : memref<10x301xf32>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %t[%i0, %j0] : memref<10x301xf32>
    }
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 300 {
      %x = affine.load %t[%i, %j] : memref<10x301xf32>
      %y = affine.load %t[%i, %j + 1] : memref<10x301xf32>
      %s = arith.addf %x, %y : f32
      affine.store %s, %D[%i, %j] : memref<10x300xf32>
    }
  }
  return
}
