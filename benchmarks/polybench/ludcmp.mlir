// PolyBench/C 4.2 ludcmp: A = L*U in place without pivoting (as lu, with a scalar accumulator w), then
// L*y = b by forward and U*x = y by backward substitution (A: N x N; b, x, y: N).
#map = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0)[s0] -> (s0 - d0)>
func.func @ludcmp(%n: index, %A: memref<?x?xf32>, %b: memref<?xf32>, %x: memref<?xf32>, %y: memref<?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to #map(%i) {
      %a0 = affine.load %A[%i, %j] : memref<?x?xf32>
      %w = affine.for %k = 0 to #map(%j) iter_args(%acc = %a0) -> (f32) {
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %akj = affine.load %A[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aik, %akj : f32
        %s = arith.subf %acc, %p : f32
        affine.yield %s : f32
      }
      %ajj = affine.load %A[%j, %j] : memref<?x?xf32>
      %q = arith.divf %w, %ajj : f32
      affine.store %q, %A[%i, %j] : memref<?x?xf32>
    }
    affine.for %j = #map(%i) to %n {
      %a0 = affine.load %A[%i, %j] : memref<?x?xf32>
      %w = affine.for %k = 0 to #map(%i) iter_args(%acc = %a0) -> (f32) {
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %akj = affine.load %A[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aik, %akj : f32
        %s = arith.subf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %w, %A[%i, %j] : memref<?x?xf32>
    }
  }
  affine.for %i = 0 to %n {
    %b0 = affine.load %b[%i] : memref<?xf32>
    %w = affine.for %j = 0 to #map(%i) iter_args(%acc = %b0) -> (f32) {
      %aij = affine.load %A[%i, %j] : memref<?x?xf32>
      %yj = affine.load %y[%j] : memref<?xf32>
      %p = arith.mulf %aij, %yj : f32
      %s = arith.subf %acc, %p : f32
      affine.yield %s : f32
    }
    affine.store %w, %y[%i] : memref<?xf32>
  }
  // for (i = N-1; i >= 0; i--): %ii counts up, i = N-1-ii.
  affine.for %ii = 0 to %n {
    %y0 = affine.load %y[symbol(%n) - %ii - 1] : memref<?xf32>
    %w = affine.for %j = #rev(%ii)[%n] to %n iter_args(%acc = %y0) -> (f32) {
      %aij = affine.load %A[symbol(%n) - %ii - 1, %j] : memref<?x?xf32>
      %xj = affine.load %x[%j] : memref<?xf32>
      %p = arith.mulf %aij, %xj : f32
      %s = arith.subf %acc, %p : f32
      affine.yield %s : f32
    }
    %aii = affine.load %A[symbol(%n) - %ii - 1, symbol(%n) - %ii - 1] : memref<?x?xf32>
    %q = arith.divf %w, %aii : f32
    affine.store %q, %x[symbol(%n) - %ii - 1] : memref<?xf32>
  }
  return
}
