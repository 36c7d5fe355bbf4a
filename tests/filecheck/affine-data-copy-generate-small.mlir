// RUN: affine-opt %s -split-input-file -affine-data-copy-generate="generate-dma=false fast-mem-space=0 fast-mem-capacity=1" | filecheck %s

// MLIR's @single_elt_buffers with a 1 KiB capacity (MLIR's CHECK-SMALL run): the footprints
// of %i, %j and %k do not fit, so the copies go into the body of %k: 1x1 buffers, %arg2's
// hoisted out of %k (it does not depend on %k). Same structure as MLIR's.

// CHECK-LABEL: func.func @single_elt_buffers
func.func @single_elt_buffers(%arg0: memref<1024x1024xf32>, %arg1: memref<1024x1024xf32>, %arg2: memref<1024x1024xf32>) -> memref<1024x1024xf32> {
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 1024 {
      affine.for %k = 0 to 1024 {
        %6 = affine.load %arg1[%k, %j] : memref<1024x1024xf32>
        %7 = affine.load %arg2[%i, %j] : memref<1024x1024xf32>
        %9 = arith.addf %6, %7 : f32
        affine.store %9, %arg2[%i, %j] : memref<1024x1024xf32>
      }
    }
  }
  return %arg2 : memref<1024x1024xf32>
}
// CHECK:      affine.for %[[I:.*]] = 0 to 1024 {
// CHECK-NEXT:   affine.for %[[J:.*]] = 0 to 1024 {
// CHECK-NEXT:     %[[C:.*]] = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:     %[[V:.*]] = affine.load %arg2[%[[I]], %[[J]]] : memref<1024x1024xf32>
// CHECK-NEXT:     affine.store %[[V]], %[[C]][0, 0] : memref<1x1xf32>
// CHECK-NEXT:     affine.for %[[K:.*]] = 0 to 1024 {
// CHECK-NEXT:       %[[B:.*]] = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:       %[[W:.*]] = affine.load %arg1[%[[K]], %[[J]]] : memref<1024x1024xf32>
// CHECK-NEXT:       affine.store %[[W]], %[[B]][0, 0] : memref<1x1xf32>
// CHECK-NEXT:       affine.load %[[B]][0, 0] : memref<1x1xf32>
// CHECK-NEXT:       affine.load %[[C]][0, 0] : memref<1x1xf32>
// CHECK-NEXT:       arith.addf
// CHECK-NEXT:       affine.store %{{.*}}, %[[C]][0, 0] : memref<1x1xf32>
// CHECK-NEXT:       memref.dealloc %[[B]] : memref<1x1xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     %[[R:.*]] = affine.load %[[C]][0, 0] : memref<1x1xf32>
// CHECK-NEXT:     affine.store %[[R]], %arg2[%[[I]], %[[J]]] : memref<1024x1024xf32>
// CHECK-NEXT:     memref.dealloc %[[C]] : memref<1x1xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// -----

// A capacity of 1 KiB: %A (16 KiB) is copied per 100-element tile of %i (400 B), with the
// tile's min upper bound (MLIR's @min_upper_bound).

// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[UB:map[0-9]*]] = affine_map<(d0) -> (d0 + 100, 4096)>
// CHECK-LABEL: func.func @min_upper_bound
func.func @min_upper_bound(%A: memref<4096xf32>) -> memref<4096xf32> {
  affine.for %i = 0 to 4096 step 100 {
    affine.for %ii = affine_map<(d0) -> (d0)>(%i) to min affine_map<(d0) -> (4096, d0 + 100)>(%i) {
      %5 = affine.load %A[%ii] : memref<4096xf32>
      %6 = arith.mulf %5, %5 : f32
      affine.store %6, %A[%ii] : memref<4096xf32>
    }
  }
  return %A : memref<4096xf32>
}
// CHECK:      affine.for %[[I:.*]] = 0 to 4096 step 100 {
// CHECK-NEXT:   %[[BUF:.*]] = memref.alloc() : memref<100xf32>
// CHECK-NEXT:   affine.for %[[X:.*]] = #[[ID]](%[[I]]) to min #[[UB]](%[[I]]) {
// CHECK-NEXT:     affine.load %{{.*}}[%[[X]]] : memref<4096xf32>
// CHECK-NEXT:     affine.store %{{.*}}, %[[BUF]][%[[X]] - %[[I]]] : memref<100xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   affine.for %[[II:.*]] = #[[ID]](%[[I]]) to min #{{.*}}(%[[I]]) {
// CHECK-NEXT:     affine.load %[[BUF]][%[[II]] - %[[I]]] : memref<100xf32>
// CHECK-NEXT:     arith.mulf
// CHECK-NEXT:     affine.store %{{.*}}, %[[BUF]][%[[II]] - %[[I]]] : memref<100xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   affine.for %[[Y:.*]] = #[[ID]](%[[I]]) to min #[[UB]](%[[I]]) {
// CHECK-NEXT:     affine.load %[[BUF]][%[[Y]] - %[[I]]] : memref<100xf32>
// CHECK-NEXT:     affine.store %{{.*}}, %{{.*}}[%[[Y]]] : memref<4096xf32>
// CHECK-NEXT:   }
// CHECK-NEXT:   memref.dealloc %[[BUF]] : memref<100xf32>
// CHECK-NEXT: }
