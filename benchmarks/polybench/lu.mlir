// PolyBench/C 4.2 lu: A = L*U in place, without pivoting (L unit lower triangular below the diagonal,
// U upper triangular on and above it; A: N x N).
#map = affine_map<(d0) -> (d0)>
func.func @lu(%n: index, %A: memref<?x?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to #map(%i) {
      affine.for %k = 0 to #map(%j) {
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %akj = affine.load %A[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aik, %akj : f32
        %aij = affine.load %A[%i, %j] : memref<?x?xf32>
        %s = arith.subf %aij, %p : f32
        affine.store %s, %A[%i, %j] : memref<?x?xf32>
      }
      %aij = affine.load %A[%i, %j] : memref<?x?xf32>
      %ajj = affine.load %A[%j, %j] : memref<?x?xf32>
      %q = arith.divf %aij, %ajj : f32
      affine.store %q, %A[%i, %j] : memref<?x?xf32>
    }
    affine.for %j = #map(%i) to %n {
      affine.for %k = 0 to #map(%i) {
        %aik = affine.load %A[%i, %k] : memref<?x?xf32>
        %akj = affine.load %A[%k, %j] : memref<?x?xf32>
        %p = arith.mulf %aik, %akj : f32
        %aij = affine.load %A[%i, %j] : memref<?x?xf32>
        %s = arith.subf %aij, %p : f32
        affine.store %s, %A[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
