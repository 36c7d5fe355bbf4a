// RUN: affine-opt %s -affine-loop-skew -explain 2>&1 | filecheck %s
// RUN: affine-opt %s -affine-loop-skew="wavefront=false" | filecheck %s --check-prefix=SKEW

// An in-place 1-D stencil (seidel-1d): every loop carries a dependence. The skew (t, t + i) makes
// the band fully permutable; the wavefront w = 2t + i leaves the inner loop parallel. The old IV
// is an affine.apply of the new ones; the bounds scan exactly the skewed domain.

// CHECK: remark: affine-loop-skew: applied: skewed (%t, %i) to (t, t + i), wavefront (2t + i, t + i) as (%wave, %i_skew); parallel: %i_skew
// CHECK: remark: affine-loop-skew: refused: cannot skew (%i, %j): no skew of %j by %i with factors in 0..2 keeps every distance non-negative: {{.*}}RAW %B{{.*}}the pair at distance (1, -3) has 2i + j = -1 < 0 even with the largest factors
// CHECK-DAG: #[[LB:.*]] = affine_map<(d0) -> (d0 - 7, (d0 + 1) ceildiv 2)>
// CHECK-DAG: #[[UB:.*]] = affine_map<(d0) -> (d0 + 1, d0 floordiv 2 + 5)>
// CHECK-DAG: #[[I:.*]] = affine_map<(d0, d1) -> (-d0 + d1 * 2)>
// CHECK-LABEL: func.func @seidel_1d
// CHECK:         affine.for %wave = 1 to 23 {
// CHECK-NEXT:      affine.for %i_skew = max #[[LB]](%wave) to min #[[UB]](%wave) {
// CHECK-NEXT:        %i = affine.apply #[[I]](%wave, %i_skew)
// CHECK-NEXT:        affine.load %A[%i - 1]
// CHECK-NEXT:        affine.load %A[%i + 1]
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        affine.store %s, %A[%i]

// SKEW-LABEL: func.func @seidel_1d
// SKEW:         affine.for %t = 0 to 8 {
// SKEW-NEXT:      affine.for %i_skew = #{{.*}}(%t) to #{{.*}}(%t) {
// SKEW-NEXT:        %i = affine.apply #{{.*}}(%t, %i_skew)
func.func @seidel_1d(%A: memref<10xf32>) {
  affine.for %t = 0 to 8 {
    affine.for %i = 1 to 9 {
      %a = affine.load %A[%i - 1] : memref<10xf32>
      %b = affine.load %A[%i + 1] : memref<10xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %A[%i] : memref<10xf32>
    }
  }
  return
}

// A distance (1, -3) needs the factor 3 (max-skew=3 would skew it): refused, the IR unchanged.
// CHECK-LABEL: func.func @far
// CHECK:         affine.for %i = 1 to 10 {
// CHECK-NEXT:      affine.for %j = 1 to 12 {
func.func @far(%B: memref<10x16xf32>) {
  affine.for %i = 1 to 10 {
    affine.for %j = 1 to 12 {
      %a = affine.load %B[%i - 1, %j + 3] : memref<10x16xf32>
      %b = affine.load %B[%i, %j - 1] : memref<10x16xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %B[%i, %j] : memref<10x16xf32>
    }
  }
  return
}
