// RUN: affine-opt %s -affine-data-copy-generate="generate-dma=false fast-mem-space=0 skip-non-unit-stride-loops" | filecheck %s

// MLIR's own test input (mlir/test/Dialect/Affine/affine-data-copy.mlir, @matmul), with the
// same options: 128x128 buffers for A, B and C; C's copies are hoisted out of %k (its region
// does not depend on %k and nothing else in %k touches C); A and B are copied inside %k.
// Same structure as MLIR's output (iree-opt), without its dead affine.apply ops.

#id = affine_map<(d0) -> (d0)>
#ub = affine_map<(d0) -> (d0 + 128)>

// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[UB:map[0-9]*]] = affine_map<(d0) -> (d0 + 128)>
// CHECK-LABEL: func.func @matmul
func.func @matmul(%A: memref<4096x4096xf32>, %B: memref<4096x4096xf32>, %C: memref<4096x4096xf32>) -> memref<4096x4096xf32> {
  affine.for %i = 0 to 4096 step 128 {
    affine.for %j = 0 to 4096 step 128 {
      affine.for %k = 0 to 4096 step 128 {
        affine.for %ii = #id(%i) to #ub(%i) {
          affine.for %jj = #id(%j) to #ub(%j) {
            affine.for %kk = #id(%k) to #ub(%k) {
              %5 = affine.load %A[%ii, %kk] : memref<4096x4096xf32>
              %6 = affine.load %B[%kk, %jj] : memref<4096x4096xf32>
              %7 = affine.load %C[%ii, %jj] : memref<4096x4096xf32>
              %8 = arith.mulf %5, %6 : f32
              %9 = arith.addf %7, %8 : f32
              affine.store %9, %C[%ii, %jj] : memref<4096x4096xf32>
            }
          }
        }
      }
    }
  }
  return %C : memref<4096x4096xf32>
}
// CHECK:      affine.for %[[I:.*]] = 0 to 4096 step 128 {
// CHECK-NEXT:   affine.for %[[J:.*]] = 0 to 4096 step 128 {
// CHECK-NEXT:     %[[BUFC:.*]] = memref.alloc() : memref<128x128xf32>
// CHECK-NEXT:     affine.for %[[CI:.*]] = #[[ID]](%[[I]]) to #[[UB]](%[[I]]) {
// CHECK-NEXT:       affine.for %[[CJ:.*]] = #[[ID]](%[[J]]) to #[[UB]](%[[J]]) {
// CHECK-NEXT:         %[[V:.*]] = affine.load %[[C:.*]][%[[CI]], %[[CJ]]] : memref<4096x4096xf32>
// CHECK-NEXT:         affine.store %[[V]], %[[BUFC]][%[[CI]] - %[[I]], %[[CJ]] - %[[J]]] : memref<128x128xf32>
// CHECK:          affine.for %[[K:.*]] = 0 to 4096 step 128 {
// CHECK-NEXT:       %[[BUFA:.*]] = memref.alloc() : memref<128x128xf32>
// CHECK-NEXT:       affine.for %[[AI:.*]] = #[[ID]](%[[I]]) to #[[UB]](%[[I]]) {
// CHECK-NEXT:         affine.for %[[AK:.*]] = #[[ID]](%[[K]]) to #[[UB]](%[[K]]) {
// CHECK-NEXT:           affine.load %{{.*}}[%[[AI]], %[[AK]]] : memref<4096x4096xf32>
// CHECK-NEXT:           affine.store %{{.*}}, %[[BUFA]][%[[AI]] - %[[I]], %[[AK]] - %[[K]]] : memref<128x128xf32>
// CHECK:            %[[BUFB:.*]] = memref.alloc() : memref<128x128xf32>
// CHECK-NEXT:       affine.for %[[BK:.*]] = #[[ID]](%[[K]]) to #[[UB]](%[[K]]) {
// CHECK-NEXT:         affine.for %[[BJ:.*]] = #[[ID]](%[[J]]) to #[[UB]](%[[J]]) {
// CHECK-NEXT:           affine.load %{{.*}}[%[[BK]], %[[BJ]]] : memref<4096x4096xf32>
// CHECK-NEXT:           affine.store %{{.*}}, %[[BUFB]][%[[BK]] - %[[K]], %[[BJ]] - %[[J]]] : memref<128x128xf32>
// CHECK:            affine.for %[[II:.*]] = #[[ID]](%[[I]]) to #[[UB]](%[[I]]) {
// CHECK-NEXT:         affine.for %[[JJ:.*]] = #[[ID]](%[[J]]) to #[[UB]](%[[J]]) {
// CHECK-NEXT:           affine.for %[[KK:.*]] = #[[ID]](%[[K]]) to #[[UB]](%[[K]]) {
// CHECK-NEXT:             affine.load %[[BUFA]][%[[II]] - %[[I]], %[[KK]] - %[[K]]] : memref<128x128xf32>
// CHECK-NEXT:             affine.load %[[BUFB]][%[[KK]] - %[[K]], %[[JJ]] - %[[J]]] : memref<128x128xf32>
// CHECK-NEXT:             affine.load %[[BUFC]][%[[II]] - %[[I]], %[[JJ]] - %[[J]]] : memref<128x128xf32>
// CHECK-NEXT:             arith.mulf
// CHECK-NEXT:             arith.addf
// CHECK-NEXT:             affine.store %{{.*}}, %[[BUFC]][%[[II]] - %[[I]], %[[JJ]] - %[[J]]] : memref<128x128xf32>
// CHECK:            memref.dealloc %[[BUFB]] : memref<128x128xf32>
// CHECK-NEXT:       memref.dealloc %[[BUFA]] : memref<128x128xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.for %[[OI:.*]] = #[[ID]](%[[I]]) to #[[UB]](%[[I]]) {
// CHECK-NEXT:       affine.for %[[OJ:.*]] = #[[ID]](%[[J]]) to #[[UB]](%[[J]]) {
// CHECK-NEXT:         %[[W:.*]] = affine.load %[[BUFC]][%[[OI]] - %[[I]], %[[OJ]] - %[[J]]] : memref<128x128xf32>
// CHECK-NEXT:         affine.store %[[W]], %[[C]][%[[OI]], %[[OJ]]] : memref<4096x4096xf32>
// CHECK:          memref.dealloc %[[BUFC]] : memref<128x128xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
