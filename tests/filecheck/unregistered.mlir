// RUN: affine-opt --allow-unregistered-dialect %s | filecheck %s
// RUN: affine-opt --allow-unregistered-dialect %s | affine-opt --allow-unregistered-dialect | filecheck %s
// RUN: not affine-opt %s 2>&1 | filecheck %s --check-prefix=ERR

// MLIR's test inputs (mlir/test/Dialect/Affine) as affine-opt reads them, after mlir-opt's
// --allow-unregistered-dialect: ops of other dialects in the generic form are kept as
// opaque ops and printed back in the generic form; registered ops written in the generic
// form print in their custom syntax; results may stay unnamed; 'memref<10 x f32>' shapes,
// integer memory spaces and memrefs of vectors; trailing 'loc(...)' is dropped.

// ERR: unregistered.mlir:22:5: error: unregistered operation 'test.foo' in the generic op form; pass allow_unregistered=True (affine-opt --allow-unregistered-dialect)

// CHECK-LABEL: func.func @loop_tiling(%A: memref<?xi32>, %B: memref<10x20xf32, 1>) {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %M = memref.dim %A, %c0 : memref<?xi32>
// CHECK-NEXT:    affine.for %i = 0 to %M {
// CHECK-NEXT:      %0 = "test.foo"(%i, %i) {test.attr = 1 : i64} : (index, index) -> f32
func.func @loop_tiling(%A : memref<? x i32>, %B : memref<10 x 20 x f32, 1>) {
  %c0 = arith.constant 0 : index
  %M = memref.dim %A, %c0 : memref<? x i32>
  affine.for %i = 0 to %M {
    "test.foo"(%i, %i) {test.attr = 1 : i64} : (index, index) -> (f32)
// CHECK-NEXT:      %1 = arith.addi %i, %i : index
    arith.addi %i, %i : index
// CHECK-NEXT:      %2 = affine.load %B[%i, 0] : memref<10x20xf32, 1>
    affine.load %B[%i, 0] : memref<10 x 20 x f32, 1> loc("loop-tiling.mlir":3:5)
// CHECK-NEXT:      %x = affine.apply #map(%i)
    %x = "affine.apply" (%i) { map = affine_map<(d0) -> (d0 + 1)> } :
      (index) -> (index)
// CHECK-NEXT:      "test.region"(%x) ({
// CHECK-NEXT:      ^bb0(%a: index):
// CHECK-NEXT:        %y = "test.use"(%a, %x) : (index, index) -> index
// CHECK-NEXT:        "terminate"() : () -> ()
// CHECK-NEXT:      }) : (index) -> ()
    "test.region"(%x) ({
    ^bb0(%a: index):
      %y = "test.use"(%a, %x) : (index, index) -> index
      "terminate"() : () -> ()
    }) : (index) -> ()
// CHECK-NEXT:    }
  }
// CHECK-NEXT:    return
  return
}

// CHECK-LABEL: func.func @simple_matmul(%arg0: memref<4x4xvector<64xf32>>) {
// CHECK-NEXT:    affine.for %i = 0 to 4 {
// CHECK-NEXT:      %l = affine.load %arg0[%i, %i] : memref<4x4xvector<64xf32>>
// CHECK-NEXT:      %m = arith.mulf %l, %l : vector<64xf32>
// CHECK-NEXT:      affine.store %m, %arg0[%i, %i] : memref<4x4xvector<64xf32>>
func.func @simple_matmul(%arg0: memref<4 x 4 x vector<64xf32>>) {
  affine.for %i = 0 to 4 {
    %l = affine.load %arg0[%i, %i] : memref<4x4xvector<64xf32>>
    %m = arith.mulf %l, %l : vector<64xf32>
    affine.store %m, %arg0[%i, %i] : memref<4x4xvector<64xf32>>
  }
  return
}
