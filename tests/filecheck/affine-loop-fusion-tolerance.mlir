// RUN: affine-opt %s -split-input-file -affine-loop-fusion -explain 2>&1 | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-fusion="compute-tolerance=1.0" -explain 2>&1 | filecheck %s --check-prefix=TOL1
// RUN: affine-opt %s -split-input-file -affine-loop-fusion="compute-tolerance=1.5" -explain 2>&1 | filecheck %s --check-prefix=TOL
// RUN: affine-opt %s -split-input-file -affine-loop-fusion="maximal=true" -explain 2>&1 | filecheck %s --check-prefix=MAX

// The cost model: reads at offsets need multi-iteration slices, and the producer iterations
// that several consumer iterations need are recomputed. The redundancy is MLIR's: the ops run
// after fusion over the producer's and consumer's ops before, minus one; a depth is taken when that is within
// compute-tolerance (default 0.30), the least redundant (then the deepest) winning;
// `maximal` takes the deepest legal depth whatever it costs. Every output was run through
// the interpreter against its input on random integer inputs (same arrays). "MLIR:" notes
// compare with `mlir-opt --affine-loop-fusion` (iree-opt) with the same options; both measure
// the extra work against producer and consumer ops together (ours counts a kept producer too).

// A 3-point stencil on a computed array: each consumer iteration needs 3 producer
// iterations, 30 in all for the producer's 12: 90 ops run where 36 did, beside the consumer's
// 60: 56% extra. Not fused at the default tolerance (the remark says by how much), fused at
// 1.0, 1.5 or `maximal`: a 3-iteration slice and a 3-element private buffer. MLIR: the same.
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: at depth 1: redundant computation 56% > 30% (producer 36 ops, consumer 60 ops)
// CHECK-LABEL: func.func @stencil_recompute
// CHECK-NEXT:    %t = memref.alloc() : memref<12xf32>
// CHECK-NEXT:    affine.for %i0 = 0 to 12 {
// TOL1: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: {{.*}} 56% redundant computation (producer 36 ops, consumer 60 ops, tolerance 100%); %t -> private memref<3xf32>
// TOL1-LABEL: func.func @stencil_recompute
// TOL1-NEXT:    %t_private = memref.alloc() : memref<3xf32>
// TOL: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: slice of %i0 in %i1 at depth 1 (through %t): %i0 in [%i1, %i1 + 3); 3 iterations per consumer iteration, computation ratio 1.50; exact, 56% redundant computation (producer 36 ops, consumer 60 ops, tolerance 150%); %t -> private memref<3xf32>
// TOL-LABEL: func.func @stencil_recompute
// TOL-NEXT:    %t_private = memref.alloc() : memref<3xf32>
// TOL-NEXT:    affine.for %i1 = 0 to 10 {
// TOL-NEXT:      affine.for %i0 = #map(%i1) to #map1(%i1) {
// TOL-NEXT:        %a = affine.load %A[%i0] : memref<12xf32>
// TOL-NEXT:        %b = arith.mulf %a, %a : f32
// TOL-NEXT:        affine.store %b, %t_private[%i0 - %i1] : memref<3xf32>
// TOL-NEXT:      }
// TOL-NEXT:      %x = affine.load %t_private[0] : memref<3xf32>
// TOL-NEXT:      %y = affine.load %t_private[1] : memref<3xf32>
// TOL-NEXT:      %z = affine.load %t_private[2] : memref<3xf32>
// MAX: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: {{.*}} 56% redundant computation {{.*}}; %t -> private memref<3xf32>
// MAX-LABEL: func.func @stencil_recompute
// MAX-NEXT:    %t_private = memref.alloc() : memref<3xf32>
// MAX-NEXT:    affine.for %i1 = 0 to 10 {
// MAX-NEXT:      affine.for %i0 = #map(%i1) to #map1(%i1) {
func.func @stencil_recompute(%A: memref<12xf32>, %D: memref<10xf32>) {
  %t = memref.alloc() : memref<12xf32>
  affine.for %i0 = 0 to 12 {
    %a = affine.load %A[%i0] : memref<12xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %t[%i0] : memref<12xf32>
  }
  affine.for %i1 = 0 to 10 {
    %x = affine.load %t[%i1] : memref<12xf32>
    %y = affine.load %t[%i1 + 1] : memref<12xf32>
    %z = affine.load %t[%i1 + 2] : memref<12xf32>
    %s = arith.addf %x, %y : f32
    %u = arith.addf %s, %z : f32
    affine.store %u, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// Pairs of neighbours within rows of 8 overlapping by one element: at depth 1 a 9-iteration
// slice per row, 72 for the producer's 65 (5% extra work, within the default tolerance); at
// depth 2 two iterations per point, 128 (42%). The default and tolerance 1.5 take depth 1
// (the least redundant) with a 9-element buffer; `maximal` takes depth 2 with a 2-element
// buffer. MLIR: the same at the default and `maximal`; at 1.0 and 1.5 it goes to depth 2
// (2-element buffer), as its measure puts that within those tolerances.
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i at {{.*}} at depth 1: slice of %i0 in %i at depth 1 (through %t): %i0 in [%i * 8, %i * 8 + 9); 9 iterations per consumer iteration, computation ratio 0.11; exact, 5% redundant computation {{.*}}; %t -> private memref<9xf32>
// CHECK-LABEL: func.func @neighbour_pairs
// CHECK-NEXT:    %t_private = memref.alloc() : memref<9xf32>
// CHECK-NEXT:    affine.for %i = 0 to 8 {
// CHECK-NEXT:      affine.for %i0 = #map(%i) to #map1(%i) {
// CHECK-NEXT:        %a = affine.load %A[%i0] : memref<65xf32>
// CHECK-NEXT:        %b = arith.mulf %a, %a : f32
// CHECK-NEXT:        affine.store %b, %t_private[%i0 - %i * 8] : memref<9xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.for %k = 0 to 8 {
// CHECK-NEXT:        %x = affine.load %t_private[%k] : memref<9xf32>
// CHECK-NEXT:        %y = affine.load %t_private[%k + 1] : memref<9xf32>
// CHECK-NEXT:        %s = arith.subf %y, %x : f32
// CHECK-NEXT:        affine.store %s, %D[%i, %k] : memref<8x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// TOL: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i at {{.*}} at depth 1: {{.*}}; %t -> private memref<9xf32>
// TOL-LABEL: func.func @neighbour_pairs
// MAX: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i at {{.*}} at depth 2: slice of %i0 in %i at depth 2 (through %t): %i0 in [%i * 8 + %k, %i * 8 + %k + 2); 2 iterations per consumer iteration, computation ratio 0.97; exact, 42% redundant computation {{.*}}; %t -> private memref<2xf32>
// MAX-LABEL: func.func @neighbour_pairs
// MAX-NEXT:    %t_private = memref.alloc() : memref<2xf32>
// MAX-NEXT:    affine.for %i = 0 to 8 {
// MAX-NEXT:      affine.for %k = 0 to 8 {
// MAX-NEXT:        affine.for %i0 = #map(%i, %k) to #map1(%i, %k) {
// MAX-NEXT:          %a = affine.load %A[%i0] : memref<65xf32>
// MAX-NEXT:          %b = arith.mulf %a, %a : f32
// MAX-NEXT:          affine.store %b, %t_private[%i0 - %i * 8 - %k] : memref<2xf32>
// MAX-NEXT:        }
// MAX-NEXT:        %x = affine.load %t_private[0] : memref<2xf32>
// MAX-NEXT:        %y = affine.load %t_private[1] : memref<2xf32>
func.func @neighbour_pairs(%A: memref<65xf32>, %D: memref<8x8xf32>) {
  %t = memref.alloc() : memref<65xf32>
  affine.for %i0 = 0 to 65 {
    %a = affine.load %A[%i0] : memref<65xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %t[%i0] : memref<65xf32>
  }
  affine.for %i = 0 to 8 {
    affine.for %k = 0 to 8 {
      %x = affine.load %t[%i * 8 + %k] : memref<65xf32>
      %y = affine.load %t[%i * 8 + %k + 1] : memref<65xf32>
      %s = arith.subf %y, %x : f32
      affine.store %s, %D[%i, %k] : memref<8x8xf32>
    }
  }
  return
}

// -----

// Neighbours along a row of a 2-d intermediate: at depth 1 the slice is the whole row (11
// iterations per consumer row, no redundancy), at depth 2 two iterations per point (200 for
// the producer's 110: 37% extra work). Depth 1 everywhere but under `maximal` (a 1x2 buffer); the
// private buffer is one row. MLIR: the same at the default and `maximal`; depth 2 (1x2) at
// tolerances 1.0 and 1.5.
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i at {{.*}} at depth 1: slice of %i0 in %i at depth 1 (through %t): %i0 in [%i, %i + 1), %j0 in [0, 11); 11 iterations per consumer iteration, computation ratio 0.00; exact; %t -> private memref<1x11xf32>
// CHECK-LABEL: func.func @row_neighbours
// CHECK-NEXT:    %t_private = memref.alloc() : memref<1x11xf32>
// CHECK-NEXT:    affine.for %i = 0 to 10 {
// CHECK-NEXT:      affine.for %j0 = 0 to 11 {
// CHECK-NEXT:        %a = affine.load %A[%i, %j0] : memref<10x11xf32>
// CHECK-NEXT:        %b = arith.mulf %a, %a : f32
// CHECK-NEXT:        affine.store %b, %t_private[0, %j0] : memref<1x11xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.for %j = 0 to 10 {
// CHECK-NEXT:        %x = affine.load %t_private[0, %j] : memref<1x11xf32>
// CHECK-NEXT:        %y = affine.load %t_private[0, %j + 1] : memref<1x11xf32>
// TOL: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i at {{.*}} at depth 1: {{.*}}; %t -> private memref<1x11xf32>
// MAX: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i at {{.*}} at depth 2: {{.*}} 2 iterations per consumer iteration, computation ratio 0.82; exact, 37% redundant computation {{.*}}; %t -> private memref<1x2xf32>
func.func @row_neighbours(%A: memref<10x11xf32>, %D: memref<10x10xf32>) {
  %t = memref.alloc() : memref<10x11xf32>
  affine.for %i0 = 0 to 10 {
    affine.for %j0 = 0 to 11 {
      %a = affine.load %A[%i0, %j0] : memref<10x11xf32>
      %b = arith.mulf %a, %a : f32
      affine.store %b, %t[%i0, %j0] : memref<10x11xf32>
    }
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %x = affine.load %t[%i, %j] : memref<10x11xf32>
      %y = affine.load %t[%i, %j + 1] : memref<10x11xf32>
      %s = arith.addf %x, %y : f32
      affine.store %s, %D[%i, %j] : memref<10x10xf32>
    }
  }
  return
}
