// PolyBench/C 4.2 trisolv: solve L*x = b by forward substitution (L: N x N lower triangular).
#map = affine_map<(d0) -> (d0)>
func.func @trisolv(%n: index, %L: memref<?x?xf32>, %x: memref<?xf32>, %b: memref<?xf32>) {
  affine.for %i = 0 to %n {
    %bi = affine.load %b[%i] : memref<?xf32>
    affine.store %bi, %x[%i] : memref<?xf32>
    affine.for %j = 0 to #map(%i) {
      %l = affine.load %L[%i, %j] : memref<?x?xf32>
      %xj = affine.load %x[%j] : memref<?xf32>
      %p = arith.mulf %l, %xj : f32
      %xi = affine.load %x[%i] : memref<?xf32>
      %s = arith.subf %xi, %p : f32
      affine.store %s, %x[%i] : memref<?xf32>
    }
    %xi = affine.load %x[%i] : memref<?xf32>
    %d = affine.load %L[%i, %i] : memref<?x?xf32>
    %q = arith.divf %xi, %d : f32
    affine.store %q, %x[%i] : memref<?xf32>
  }
  return
}
