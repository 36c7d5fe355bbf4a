// RUN: affine-opt %s -affine-data-copy-generate="fast-mem-space=workgroup fast-mem-capacity=4 padding=1" | filecheck %s

// A 16x16x16-tiled 64x64x64 matmul (affine_ir.library.matmul, tiled by hand), copied into
// GPU shared memory (#gpu.address_space<workgroup>) with one element of padding per row
// (bank conflicts) under 4 KiB: the footprints of %i (A 4 KiB + B 16 KiB + C 4 KiB) and of
// %j do not fit, so the tiles of A, B (16x17 each, per %k) and C (16x17, hoisted out of %k)
// are copied around the point loops: 3 x 1088 B = 3264 B. (MLIR's pass takes integer memory
// spaces only and has no padding.)

#id = affine_map<(d0) -> (d0)>
#ub = affine_map<(d0) -> (d0 + 16)>
// CHECK-DAG: #[[ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[UB:map[0-9]*]] = affine_map<(d0) -> (d0 + 16)>
// CHECK-LABEL: func.func @matmul
func.func @matmul(%A: memref<64x64xf32>, %B: memref<64x64xf32>, %C: memref<64x64xf32>) {
  affine.for %i = 0 to 64 step 16 {
    affine.for %j = 0 to 64 step 16 {
      affine.for %k = 0 to 64 step 16 {
        affine.for %ii = #id(%i) to #ub(%i) {
          affine.for %jj = #id(%j) to #ub(%j) {
            affine.for %kk = #id(%k) to #ub(%k) {
              %a = affine.load %A[%ii, %kk] : memref<64x64xf32>
              %b = affine.load %B[%kk, %jj] : memref<64x64xf32>
              %p = arith.mulf %a, %b : f32
              %c = affine.load %C[%ii, %jj] : memref<64x64xf32>
              %s = arith.addf %c, %p : f32
              affine.store %s, %C[%ii, %jj] : memref<64x64xf32>
            }
          }
        }
      }
    }
  }
  return
}
// CHECK:      affine.for %[[I:.*]] = 0 to 64 step 16 {
// CHECK-NEXT:   affine.for %[[J:.*]] = 0 to 64 step 16 {
// CHECK-NEXT:     %[[CS:.*]] = memref.alloc() : memref<16x17xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:     affine.for %[[X:.*]] = #[[ID]](%[[I]]) to #[[UB]](%[[I]]) {
// CHECK-NEXT:       affine.for %[[Y:.*]] = #[[ID]](%[[J]]) to #[[UB]](%[[J]]) {
// CHECK-NEXT:         affine.load %{{.*}}[%[[X]], %[[Y]]] : memref<64x64xf32>
// CHECK-NEXT:         affine.store %{{.*}}, %[[CS]][%[[X]] - %[[I]], %[[Y]] - %[[J]]] : memref<16x17xf32, #gpu.address_space<workgroup>>
// CHECK:          affine.for %[[K:.*]] = 0 to 64 step 16 {
// CHECK-NEXT:       %[[AS:.*]] = memref.alloc() : memref<16x17xf32, #gpu.address_space<workgroup>>
// CHECK:            %[[BS:.*]] = memref.alloc() : memref<16x17xf32, #gpu.address_space<workgroup>>
// CHECK:            affine.for %[[II:.*]] = #[[ID]](%[[I]]) to #[[UB]](%[[I]]) {
// CHECK-NEXT:         affine.for %[[JJ:.*]] = #[[ID]](%[[J]]) to #[[UB]](%[[J]]) {
// CHECK-NEXT:           affine.for %[[KK:.*]] = #[[ID]](%[[K]]) to #[[UB]](%[[K]]) {
// CHECK-NEXT:             affine.load %[[AS]][%[[II]] - %[[I]], %[[KK]] - %[[K]]] : memref<16x17xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:             affine.load %[[BS]][%[[KK]] - %[[K]], %[[JJ]] - %[[J]]] : memref<16x17xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:             arith.mulf
// CHECK-NEXT:             affine.load %[[CS]][%[[II]] - %[[I]], %[[JJ]] - %[[J]]]
// CHECK-NEXT:             arith.addf
// CHECK-NEXT:             affine.store %{{.*}}, %[[CS]][%[[II]] - %[[I]], %[[JJ]] - %[[J]]]
// CHECK:            memref.dealloc %[[BS]]
// CHECK-NEXT:       memref.dealloc %[[AS]]
// CHECK-NEXT:     }
// CHECK-NEXT:     affine.for
// CHECK-NEXT:       affine.for
// CHECK-NEXT:         affine.load %[[CS]]
// CHECK-NEXT:         affine.store %{{.*}}, %{{.*}} : memref<64x64xf32>
// CHECK:          memref.dealloc %[[CS]] : memref<16x17xf32, #gpu.address_space<workgroup>>
