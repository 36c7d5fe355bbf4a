// PolyBench/C 4.2 symm: C := alpha*A*B + beta*C with A symmetric, stored in its lower triangle
// (A: M x M, B, C: M x N). temp2 is PolyBench's scalar accumulator: an iter_arg.
func.func @symm(%m: index, %n: index, %alpha: f32, %beta: f32, %C: memref<?x?xf32>, %A: memref<?x?xf32>,
                %B: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to %m {
    affine.for %j = 0 to %n {
      %temp2 = affine.for %k = 0 to affine_map<(d0) -> (d0)>(%i) iter_args(%acc = %zero) -> (f32) {
        %bij = affine.load %B[%i, %j] : memref<?x?xf32>
        %ab = arith.mulf %alpha, %bij : f32
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %p = arith.mulf %ab, %aik : f32
        %ckj = affine.load %C[%k, %j] : memref<?x?xf32>
        %c1 = arith.addf %ckj, %p : f32
        affine.store %c1, %C[%k, %j] : memref<?x?xf32>
        %bkj = affine.load %B[%k, %j] : memref<?x?xf32>
        %aik2 = affine.load %A[%i, %k] : memref<?x?xf32>
        %q = arith.mulf %bkj, %aik2 : f32
        %acc1 = arith.addf %acc, %q : f32
        affine.yield %acc1 : f32
      }
      %cij = affine.load %C[%i, %j] : memref<?x?xf32>
      %bc = arith.mulf %beta, %cij : f32
      %bij = affine.load %B[%i, %j] : memref<?x?xf32>
      %ab = arith.mulf %alpha, %bij : f32
      %aii = affine.load %A[%i, %i] : memref<?x?xf32>
      %p = arith.mulf %ab, %aii : f32
      %s = arith.addf %bc, %p : f32
      %at = arith.mulf %alpha, %temp2 : f32
      %s2 = arith.addf %s, %at : f32
      affine.store %s2, %C[%i, %j] : memref<?x?xf32>
    }
  }
  return
}
