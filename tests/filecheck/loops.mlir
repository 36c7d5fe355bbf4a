// RUN: affine-opt %s | filecheck %s

// Loop bounds print as MLIR does: constants and symbols bare, other maps through
// #map aliases (defined once, at the top, in order of first use), max/min for
// multi-result bounds.

// CHECK:      #map = affine_map<(d0)[s0] -> (d0, s0 - 4)>
// CHECK-NEXT: #map1 = affine_map<(d0) -> (d0 + 4, 64)>
// CHECK-NEXT: #map2 = affine_map<(d0) -> (d0)>
// CHECK-NEXT: #map3 = affine_map<()[s0] -> (s0 * 2 + 1)>
// CHECK-NEXT: module {

// CHECK-LABEL: func.func @bounds(%A: memref<?x64xf32>, %N: index) {
func.func @bounds(%A: memref<?x64xf32>, %N: index) {
  // CHECK-NEXT: affine.for %i = 0 to %N step 2 {
  affine.for %i = 0 to %N step 2 {
    // CHECK-NEXT: affine.for %j = max #map(%i)[%N] to min #map1(%i) {
    affine.for %j = max affine_map<(d0)[s0] -> (d0, s0 - 4)>(%i)[%N] to min affine_map<(d0) -> (d0 + 4, 64)>(%i) {
      // CHECK-NEXT: %v = affine.load %A[%i, %j + symbol(%N) * 2 - 1] : memref<?x64xf32>
      %v = affine.load %A[%i, (%j - 1) + 2 * symbol(%N)] : memref<?x64xf32>
      // CHECK-NEXT: affine.store %v, %A[%i floordiv 4, %j mod 64] : memref<?x64xf32>
      affine.store %v, %A[%i floordiv 4, %j mod 64] : memref<?x64xf32>
    // CHECK-NEXT: }
    }
    // A dim bound (%i is no symbol) goes through an identity map.
    // CHECK-NEXT: affine.for %k = -3 to #map2(%i) {
    affine.for %k = -3 to %i {
    }
    // CHECK:      affine.for %k_0 = #map3()[%N] to 64 step 8 {
    affine.for %k = affine_map<()[s0] -> (2 * s0 + 1)>()[%N] to 64 step 8 {
    }
  }
  // CHECK:      return
  return
}
