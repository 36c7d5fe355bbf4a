// RUN: not cuda-emit %s 2>&1 | filecheck %s

// A loop nest left on the host (not mapped by gpu-map) is an error naming the op and its place.

func.func @unmapped(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %A[%i] : memref<8xf32>
  }
  return
}
// CHECK: cuda-errors.mlir:6:3: error: cannot emit @unmapped as CUDA: 'affine.for' at the top level of a host function is not mapped to the GPU (run gpu-map first; if it ran, its trace says why it left this op)
