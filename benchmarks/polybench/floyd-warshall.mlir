// PolyBench/C 4.2 floyd-warshall: all-pairs shortest paths, path (N x N) updated in place for each
// intermediate vertex k: path[i][j] = path[i][j] < path[i][k] + path[k][j] ? path[i][j] : path[i][k] + path[k][j].
func.func @floyd_warshall(%n: index, %path: memref<?x?xf32>) {
  affine.for %k = 0 to %n {
    affine.for %i = 0 to %n {
      affine.for %j = 0 to %n {
        %pij = affine.load %path[%i, %j] : memref<?x?xf32>
        %pik = affine.load %path[%i, %k] : memref<?x?xf32>
        %pkj = affine.load %path[%k, %j] : memref<?x?xf32>
        %s = arith.addf %pik, %pkj : f32
        %lt = arith.cmpf olt, %pij, %s : f32
        %r = arith.select %lt, %pij, %s : f32
        affine.store %r, %path[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
