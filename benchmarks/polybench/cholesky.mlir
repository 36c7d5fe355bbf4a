// PolyBench/C 4.2 cholesky: A = L*L^T in place (L in the lower triangle, diagonal included; A: N x N,
// symmetric positive definite; the strict upper triangle is left as it is).
#map = affine_map<(d0) -> (d0)>
func.func @cholesky(%n: index, %A: memref<?x?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to #map(%i) {
      affine.for %k = 0 to #map(%j) {
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %ajk = affine.load %A[%j, %k] : memref<?x?xf32>
        %p = arith.mulf %aik, %ajk : f32
        %aij = affine.load %A[%i, %j] : memref<?x?xf32>
        %s = arith.subf %aij, %p : f32
        affine.store %s, %A[%i, %j] : memref<?x?xf32>
      }
      %aij = affine.load %A[%i, %j] : memref<?x?xf32>
      %ajj = affine.load %A[%j, %j] : memref<?x?xf32>
      %q = arith.divf %aij, %ajj : f32
      affine.store %q, %A[%i, %j] : memref<?x?xf32>
    }
    affine.for %k = 0 to #map(%i) {
      %aik = affine.load %A[%i, %k] : memref<?x?xf32>
      %p = arith.mulf %aik, %aik : f32
      %aii = affine.load %A[%i, %i] : memref<?x?xf32>
      %s = arith.subf %aii, %p : f32
      affine.store %s, %A[%i, %i] : memref<?x?xf32>
    }
    %aii = affine.load %A[%i, %i] : memref<?x?xf32>
    %r = math.sqrt %aii : f32
    affine.store %r, %A[%i, %i] : memref<?x?xf32>
  }
  return
}
