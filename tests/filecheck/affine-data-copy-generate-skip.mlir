// RUN: affine-opt %s -split-input-file -affine-data-copy-generate="fast-mem-space=1" | filecheck %s

// A memref also accessed by a non-affine op (memref.load) is not copied; the others are.

// CHECK-LABEL: func.func @non_affine
// CHECK:       %[[BUF:.*]] = memref.alloc() : memref<16xf32, 1>
// CHECK-NOT:   memref.alloc
// CHECK:       affine.for %{{.*}} = 0 to 16 {
// CHECK:       affine.for %[[I:.*]] = 0 to 16 {
// CHECK-NEXT:    memref.load %[[A:.*]][%[[I]]] : memref<16xf32>
// CHECK-NEXT:    affine.load %[[BUF]][%[[I]]] : memref<16xf32, 1>
// CHECK-NEXT:    arith.addf
// CHECK-NEXT:    affine.store %{{.*}}, %[[A]][%[[I]]] : memref<16xf32>
func.func @non_affine(%A: memref<16xf32>, %B: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %a = memref.load %A[%i] : memref<16xf32>
    %b = affine.load %B[%i] : memref<16xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%i] : memref<16xf32>
  }
  return
}

// -----

// A memref already in another memory space (here the fast one) is left alone, and a memref
// allocated inside the loop too (MLIR's @memref_def_inside).

// CHECK-LABEL: func.func @other_space
// CHECK-NOT:   memref.alloc() : memref<8xf32, 1>
// CHECK:       affine.load %{{.*}}[%{{.*}}] : memref<8xf32, 1>
// CHECK:       memref.alloc() : memref<1xf32>
// CHECK-NEXT:  affine.store
// CHECK-NOT:   memref.alloc
// CHECK:       return
func.func @other_space(%F: memref<8xf32, 1>) {
  %cst = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {
    %f = affine.load %F[%i] : memref<8xf32, 1>
    affine.store %f, %F[%i] : memref<8xf32, 1>
  }
  affine.for %i = 0 to 29 {
    %m = memref.alloc() : memref<1xf32>
    affine.store %cst, %m[0] : memref<1xf32>
  }
  return
}

// -----

// Strided stores: the region of %A is [0, 15) but only even elements are written. Ours copies
// a written region in as well as out, so the odd elements keep their values (MLIR copies a
// write-only region out only, writing back whatever the buffer held there).

// CHECK-LABEL: func.func @strided_store
// CHECK:       %[[BUF:.*]] = memref.alloc() : memref<15xf32, 1>
// CHECK-NEXT:  affine.for %[[X:.*]] = 0 to 15 {
// CHECK-NEXT:    affine.load %[[A:.*]][%[[X]]] : memref<16xf32>
// CHECK-NEXT:    affine.store %{{.*}}, %[[BUF]][%[[X]]] : memref<15xf32, 1>
// CHECK:       affine.for %[[I:.*]] = 0 to 8 {
// CHECK-NEXT:    affine.store %{{.*}}, %[[BUF]][%[[I]] * 2] : memref<15xf32, 1>
// CHECK:       affine.for %[[Y:.*]] = 0 to 15 {
// CHECK-NEXT:    affine.load %[[BUF]][%[[Y]]] : memref<15xf32, 1>
// CHECK-NEXT:    affine.store %{{.*}}, %[[A]][%[[Y]]] : memref<16xf32>
func.func @strided_store(%A: memref<16xf32>) {
  %cst = arith.constant 1.000000e+00 : f32
  affine.for %i = 0 to 8 {
    affine.store %cst, %A[%i * 2] : memref<16xf32>
  }
  return
}
