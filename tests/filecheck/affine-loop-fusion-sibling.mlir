// RUN: affine-opt %s -split-input-file -affine-loop-fusion -explain 2>&1 | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-fusion="mode=producer" -explain 2>&1 | filecheck %s --check-prefix=PRODUCER
// RUN: affine-opt %s -split-input-file -affine-loop-fusion="mode=sibling" -explain 2>&1 | filecheck %s --check-prefix=SIBLING

// Sibling fusion (nests that read the same memref and do not depend on each other merge
// loop by loop over their outer loops with equal bounds) and the three modes: greedy (the
// default: producer-consumer, then sibling), producer, sibling. Every output was run
// through the interpreter against its input on random integer inputs in each mode (same
// arrays). "MLIR:" notes compare with `mlir-opt --affine-loop-fusion` (iree-opt) with the
// same mode.

// The modes on one function: %i0 produces %t for %i1; %i1 and %i2 both read %B. Greedy
// fuses %i0 into %i1, then %i2 into the result; producer mode only the first, sibling mode
// only the second. MLIR: the same three results.
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: {{.*}}; %t -> private memref<1xf32>
// CHECK: remark: affine-loop-fusion: applied: fused %i2 at {{.*}} into %i1 at {{.*}} at depth 1: sibling loops share %B
// CHECK-LABEL: func.func @modes
// CHECK:         %t_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %a = affine.load %A[%i1] : memref<10xf32>
// CHECK-NEXT:      %s = arith.mulf %a, %a : f32
// CHECK-NEXT:      affine.store %s, %t_private[0] : memref<1xf32>
// CHECK-NEXT:      %x = affine.load %t_private[0] : memref<1xf32>
// CHECK-NEXT:      %b = affine.load %B[%i1] : memref<10xf32>
// CHECK-NEXT:      %s_0 = arith.addf %x, %b : f32
// CHECK-NEXT:      affine.store %s_0, %C[%i1] : memref<10xf32>
// CHECK-NEXT:      %b_0 = affine.load %B[%i1] : memref<10xf32>
// CHECK-NEXT:      %s_1 = arith.mulf %b_0, %c2 : f32
// CHECK-NEXT:      affine.store %s_1, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
// PRODUCER: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: {{.*}}; %t -> private memref<1xf32>
// PRODUCER-NOT: sibling
// PRODUCER-LABEL: func.func @modes
// PRODUCER:         %t_private = memref.alloc() : memref<1xf32>
// PRODUCER-NEXT:    affine.for %i1 = 0 to 10 {
// PRODUCER-NEXT:      %a = affine.load %A[%i1] : memref<10xf32>
// PRODUCER:           affine.store %s_0, %C[%i1] : memref<10xf32>
// PRODUCER-NEXT:    }
// PRODUCER-NEXT:    affine.for %i2 = 0 to 10 {
// PRODUCER-NEXT:      %b_0 = affine.load %B[%i2] : memref<10xf32>
// PRODUCER-NEXT:      %s_1 = arith.mulf %b_0, %c2 : f32
// PRODUCER-NEXT:      affine.store %s_1, %D[%i2] : memref<10xf32>
// PRODUCER-NEXT:    }
// PRODUCER-NEXT:    return
// SIBLING-NOT: slice of
// SIBLING: remark: affine-loop-fusion: applied: fused %i2 at {{.*}} into %i1 at {{.*}} at depth 1: sibling loops share %B
// SIBLING-LABEL: func.func @modes
// SIBLING-NEXT:    %t = memref.alloc() : memref<10xf32>
// SIBLING-NEXT:    %c2 = arith.constant 2.000000e+00 : f32
// SIBLING-NEXT:    affine.for %i0 = 0 to 10 {
// SIBLING-NEXT:      %a = affine.load %A[%i0] : memref<10xf32>
// SIBLING-NEXT:      %s = arith.mulf %a, %a : f32
// SIBLING-NEXT:      affine.store %s, %t[%i0] : memref<10xf32>
// SIBLING-NEXT:    }
// SIBLING-NEXT:    affine.for %i1 = 0 to 10 {
// SIBLING-NEXT:      %x = affine.load %t[%i1] : memref<10xf32>
// SIBLING-NEXT:      %b = affine.load %B[%i1] : memref<10xf32>
// SIBLING-NEXT:      %s_0 = arith.addf %x, %b : f32
// SIBLING-NEXT:      affine.store %s_0, %C[%i1] : memref<10xf32>
// SIBLING-NEXT:      %b_0 = affine.load %B[%i1] : memref<10xf32>
// SIBLING-NEXT:      %s_1 = arith.mulf %b_0, %c2 : f32
// SIBLING-NEXT:      affine.store %s_1, %D[%i1] : memref<10xf32>
// SIBLING-NEXT:    }
// SIBLING-NEXT:    return
func.func @modes(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>, %D: memref<10xf32>) {
  %t = memref.alloc() : memref<10xf32>
  %c2 = arith.constant 2.0 : f32
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    %s = arith.mulf %a, %a : f32
    affine.store %s, %t[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %x = affine.load %t[%i1] : memref<10xf32>
    %b = affine.load %B[%i1] : memref<10xf32>
    %s = arith.addf %x, %b : f32
    affine.store %s, %C[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %b = affine.load %B[%i2] : memref<10xf32>
    %s = arith.mulf %b, %c2 : f32
    affine.store %s, %D[%i2] : memref<10xf32>
  }
  return
}

// -----

// Two matrix-vector products with the same matrix (y0 += M^T x0, y1 += M^T x1): siblings
// sharing %M, merged at depth 2 so each element of %M is loaded by both bodies in one
// iteration (MLIR's sibling fusion test of two matrix-vector products, with the loads of
// %M transposed). Producer mode leaves them apart. MLIR: in greedy mode it interchanges
// both nests (sinking the reduction loop %i1 inward) and merges them at depth 1 (two inner
// loops in one outer loop); with mode=sibling it leaves them apart.
// CHECK: remark: affine-loop-fusion: applied: fused %i2 at {{.*}} into %i0 at {{.*}} at depth 2: sibling loops share %M
// CHECK-LABEL: func.func @two_matrix_vector_products
// CHECK-NEXT:    affine.for %i0 = 0 to 10 {
// CHECK-NEXT:      affine.for %i1 = 0 to 10 {
// CHECK-NEXT:        %v0 = affine.load %M[%i1, %i0] : memref<10x10xf32>
// CHECK-NEXT:        %v1 = affine.load %x0[%i0] : memref<10xf32>
// CHECK-NEXT:        %v2 = arith.mulf %v0, %v1 : f32
// CHECK-NEXT:        %v3 = affine.load %y0[%i1] : memref<10xf32>
// CHECK-NEXT:        %v4 = arith.addf %v2, %v3 : f32
// CHECK-NEXT:        affine.store %v4, %y0[%i1] : memref<10xf32>
// CHECK-NEXT:        %w0 = affine.load %M[%i1, %i0] : memref<10x10xf32>
// CHECK-NEXT:        %w1 = affine.load %x1[%i0] : memref<10xf32>
// CHECK-NEXT:        %w2 = arith.mulf %w0, %w1 : f32
// CHECK-NEXT:        %w3 = affine.load %y1[%i1] : memref<10xf32>
// CHECK-NEXT:        %w4 = arith.addf %w2, %w3 : f32
// CHECK-NEXT:        affine.store %w4, %y1[%i1] : memref<10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
// PRODUCER-LABEL: func.func @two_matrix_vector_products
// PRODUCER:         affine.for %i0 = 0 to 10 {
// PRODUCER:         affine.for %i2 = 0 to 10 {
// SIBLING: remark: affine-loop-fusion: applied: fused %i2 at {{.*}} into %i0 at {{.*}} at depth 2: sibling loops share %M
func.func @two_matrix_vector_products(%M: memref<10x10xf32>, %x0: memref<10xf32>, %x1: memref<10xf32>,
                                      %y0: memref<10xf32>, %y1: memref<10xf32>) {
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %v0 = affine.load %M[%i1, %i0] : memref<10x10xf32>
      %v1 = affine.load %x0[%i0] : memref<10xf32>
      %v2 = arith.mulf %v0, %v1 : f32
      %v3 = affine.load %y0[%i1] : memref<10xf32>
      %v4 = arith.addf %v2, %v3 : f32
      affine.store %v4, %y0[%i1] : memref<10xf32>
    }
  }
  affine.for %i2 = 0 to 10 {
    affine.for %i3 = 0 to 10 {
      %w0 = affine.load %M[%i3, %i2] : memref<10x10xf32>
      %w1 = affine.load %x1[%i2] : memref<10xf32>
      %w2 = arith.mulf %w0, %w1 : f32
      %w3 = affine.load %y1[%i3] : memref<10xf32>
      %w4 = arith.addf %w2, %w3 : f32
      affine.store %w4, %y1[%i3] : memref<10xf32>
    }
  }
  return
}

// -----

// Siblings that depend on each other (the second reads %C, which the first writes, and
// overwrites %A, which the first reads) are not siblings; their RAW is not fusible either
// (the consumer reads %C in reverse after overwriting %A): nothing fuses in any mode, the
// refusal names the dependence. MLIR: in greedy and producer mode it fuses them as
// producer and consumer, and %A comes out different (see
// affine-loop-fusion-decisions.mlir); in sibling mode nothing.
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: they are not siblings: WAR on %A from 'affine.for' {{.*}} to 'affine.for' {{.*}}
// CHECK-LABEL: func.func @dependent_siblings
// CHECK:         affine.for %i0 = 0 to 10 {
// CHECK:         affine.for %i1 = 0 to 10 {
// SIBLING: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: they are not siblings: WAR on %A from 'affine.for' {{.*}} to 'affine.for' {{.*}}
// SIBLING-LABEL: func.func @dependent_siblings
// SIBLING:         affine.for %i0 = 0 to 10 {
// SIBLING:         affine.for %i1 = 0 to 10 {
func.func @dependent_siblings(%A: memref<10xf32>, %C: memref<10xf32>) {
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %C[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %a = affine.load %A[%i1] : memref<10xf32>
    %c = affine.load %C[9 - %i1] : memref<10xf32>
    %b = arith.addf %a, %c : f32
    affine.store %b, %A[%i1] : memref<10xf32>
  }
  return
}

// -----

// Siblings whose loops have different trip counts: not merged (the refusal prints both
// loops' bounds). MLIR: not merged either.
// SIBLING: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: their outer loops differ (affine.for %i0 = 0 to 10 vs affine.for %i1 = 0 to 8)
// SIBLING-LABEL: func.func @siblings_with_different_bounds
// SIBLING-NEXT:    affine.for %i0 = 0 to 10 {
// SIBLING-NEXT:      %a = affine.load %A[%i0] : memref<10xf32>
// SIBLING-NEXT:      affine.store %a, %C[%i0] : memref<10xf32>
// SIBLING-NEXT:    }
// SIBLING-NEXT:    affine.for %i1 = 0 to 8 {
func.func @siblings_with_different_bounds(%A: memref<10xf32>, %C: memref<10xf32>, %D: memref<10xf32>) {
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    affine.store %a, %C[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 8 {
    %a = affine.load %A[%i1] : memref<10xf32>
    affine.store %a, %D[%i1] : memref<10xf32>
  }
  return
}
