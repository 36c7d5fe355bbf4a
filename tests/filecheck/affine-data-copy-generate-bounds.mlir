// RUN: affine-opt %s -split-input-file -affine-data-copy-generate="generate-dma=false fast-mem-space=0 skip-non-unit-stride-loops" | filecheck %s

// MLIR's @max_lower_bound: a lower bound that is a max of symbols. The buffer is 2048x6 with
// its origin at %j * 6 (a symbol); the copy loop also keeps the memref's bounds (0, 516),
// which MLIR leaves out (ours never copies outside the memref, for any %i, %j).

// CHECK-LABEL: func.func @max_lower_bound
// CHECK-SAME:  (%[[M:.*]]: memref<2048x516xf64>, %[[I:.*]]: index, %[[J:.*]]: index)
func.func @max_lower_bound(%M: memref<2048x516xf64>, %i : index, %j : index) {
  affine.for %ii = 0 to 2048 {
    affine.for %jj = max affine_map<()[s0, s1] -> (s0 * 512, s1 * 6)>()[%i, %j] to min affine_map<()[s0, s1] -> (s0 * 512 + 512, s1 * 6 + 6)>()[%i, %j] {
      affine.load %M[%ii, %jj] : memref<2048x516xf64>
    }
  }
  return
}
// CHECK:      %[[BUF:.*]] = memref.alloc() : memref<2048x6xf64>
// CHECK-NEXT: affine.for %[[X:.*]] = 0 to 2048 {
// CHECK-NEXT:   affine.for %[[Y:.*]] = max #{{.*}}()[%[[I]], %[[J]]] to min #{{.*}}()[%[[I]], %[[J]]] {
// CHECK-NEXT:     affine.load %[[M]][%[[X]], %[[Y]]] : memref<2048x516xf64>
// CHECK-NEXT:     affine.store %{{.*}}, %[[BUF]][%[[X]], %[[Y]] - symbol(%[[J]]) * 6] : memref<2048x6xf64>
// CHECK:      affine.for %[[II:.*]] = 0 to 2048 {
// CHECK-NEXT:   affine.for %[[JJ:.*]] = max #{{.*}}()[%[[I]], %[[J]]] to min #{{.*}}()[%[[I]], %[[J]]] {
// CHECK-NEXT:     affine.load %[[BUF]][%[[II]], %[[JJ]] - symbol(%[[J]]) * 6] : memref<2048x6xf64>
// CHECK:      memref.dealloc %[[BUF]] : memref<2048x6xf64>

// -----

// MLIR's @empty_loops: nothing is accessed, so nothing is copied.

// CHECK-LABEL: func.func @empty_loops
// CHECK-NOT:   memref.alloc
// CHECK:       return
func.func @empty_loops(%arg0: memref<1024x1024xf64>) {
  affine.for %i = 0 to 0 {
    affine.load %arg0[0, %i] : memref<1024x1024xf64>
  }
  affine.for %i = 0 to -16 {
    affine.load %arg0[0, %i] : memref<1024x1024xf64>
  }
  return
}

// -----

// MLIR's @affine_parallel: MLIR cannot bound the region (floordiv/mod subscripts under
// affine.parallel) and copies nothing; isl gives the exact footprint (all 2x5x4x2 elements)
// and ours copies it. Better than MLIR.

// CHECK-LABEL: func.func @affine_parallel
// CHECK:       %[[BUF:.*]] = memref.alloc() : memref<2x5x4x2xi64>
// CHECK:       affine.parallel
// CHECK:         affine.parallel
// CHECK:           affine.load %[[BUF]][%{{.*}} floordiv 40, (%{{.*}} floordiv 8) mod 5, (%{{.*}} floordiv 2) mod 4, %{{.*}} mod 2]
// CHECK:       memref.dealloc %[[BUF]]
func.func @affine_parallel(%85:memref<2x5x4x2xi64>) {
  affine.for %arg0 = 0 to 2 {
    affine.parallel (%arg1) = (0) to (5) {
      affine.parallel (%arg2) = (0) to (4) {
        affine.for %arg3 = affine_map<(d0, d1, d2) -> (d0 * 40 + d1 * 8 + d2 * 2)>(%arg0, %arg1, %arg2) to affine_map<(d0, d1, d2) -> (d0 * 40 + d1 * 8 + d2 * 2 + 2)>(%arg0, %arg1, %arg2) {
          %105 = affine.load %85[((%arg3 floordiv 2) floordiv 4) floordiv 5, ((%arg3 floordiv 2) floordiv 4) mod 5, (%arg3 floordiv 2) mod 4, %arg3 mod 2] : memref<2x5x4x2xi64>
        }
      }
    }
  }
  return
}

// -----

// MLIR's @arbitrary_memory_space (in the default memory space here): every loop has a
// non-unit step, so the copies are for the innermost body; MLIR allocates a 1x7 buffer inside
// %arg2. The region does not depend on %arg1 or %arg2 and nothing else touches %alloc, so
// ours hoists the copies into %arg0: the same 1x7 buffer, copied 8 times instead of 128.

// CHECK-LABEL: func.func @arbitrary_memory_space
// CHECK:       affine.for %[[A0:.*]] = 0 to 32 step 4 {
// CHECK:         %[[BUF:.*]] = memref.alloc() : memref<1x7xi8>
// CHECK-NEXT:    affine.for %[[X:.*]] = 1 to 8 {
// CHECK-NEXT:      affine.load %{{.*}}[%[[A0]] + 1, %[[X]]] : memref<256x8xi8>
// CHECK-NEXT:      affine.store %{{.*}}, %[[BUF]][0, %[[X]] - 1] : memref<1x7xi8>
// CHECK:         affine.for %{{.*}} = 0 to 8 step 2 {
// CHECK:           affine.for %{{.*}} = 0 to 8 step 2 {
// CHECK:             affine.load %[[BUF]]
// CHECK-NEXT:        affine.store %{{.*}}, %[[BUF]]
// CHECK:         affine.for %[[Y:.*]] = 1 to 8 {
// CHECK-NEXT:      affine.load %[[BUF]][0, %[[Y]] - 1] : memref<1x7xi8>
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[A0]] + 1, %[[Y]]] : memref<256x8xi8>
// CHECK:         memref.dealloc %[[BUF]] : memref<1x7xi8>
func.func @arbitrary_memory_space() {
  %alloc = memref.alloc() : memref<256x8xi8>
  affine.for %arg0 = 0 to 32 step 4 {
    %0 = affine.apply affine_map<(d0) -> (d0 + 1)>(%arg0)
    affine.for %arg1 = 0 to 8 step 2 {
      %1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%arg1)
      affine.for %arg2 = 0 to 8 step 2 {
        %2 = affine.apply affine_map<(d0) -> (d0 + 1)>(%arg2)
        %3 = affine.load %alloc[%0, %1] : memref<256x8xi8>
        affine.store %3, %alloc[%0, %2] : memref<256x8xi8>
      }
    }
  }
  return
}
