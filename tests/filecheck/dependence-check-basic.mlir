// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// Basics: an empty affine.if, separate nests, different memrefs, constant subscripts.

#set0 = affine_set<(d0) : (1 == 0)>

func.func @store_may_execute_before_load() {
  %m = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  %c0 = arith.constant 4 : index
  affine.if #set0(%c0) {
    affine.for %i0 = 0 to 10 {
      affine.store %cf7, %m[%i0] : memref<10xf32>
      // CHECK:      .mlir:14:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:14:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:14:7: remark: dependence from 0 to 1 at depth 1 = false
    }
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    // CHECK:      .mlir:21:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:21:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:21:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @dependent_loops() {
  %0 = memref.alloc() : memref<10xf32>
  %cst = arith.constant 7.000000e+00 : f32
  affine.for %i0 = 0 to 10 {
    affine.store %cst, %0[%i0] : memref<10xf32>
    // CHECK:      .mlir:35:5: remark: dependence from 0 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:35:5: remark: dependence from 0 to 0 at depth 2 = false
    // CHECK-NEXT: .mlir:35:5: remark: dependence from 0 to 1 at depth 1 = true
  }
  affine.for %i1 = 0 to 10 {
    %1 = affine.load %0[%i1] : memref<10xf32>
    // CHECK:      .mlir:41:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 1 at depth 1 = false
    // CHECK-NEXT: .mlir:41:5: remark: dependence from 1 to 1 at depth 2 = false
  }
  return
}

// -----

func.func @different_memrefs() {
  %m.a = memref.alloc() : memref<100xf32>
  %m.b = memref.alloc() : memref<100xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1.0 : f32
  affine.store %c1, %m.a[%c0] : memref<100xf32>
  // CHECK:      .mlir:56:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:56:3: remark: dependence from 0 to 1 at depth 1 = false
  %v0 = affine.load %m.b[%c0] : memref<100xf32>
  // CHECK:      .mlir:59:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:59:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_different_elements() {
  %m = memref.alloc() : memref<100xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7.0 : f32
  affine.store %c7, %m[%c0] : memref<100xf32>
  // CHECK:      .mlir:72:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:72:3: remark: dependence from 0 to 1 at depth 1 = false
  %v0 = affine.load %m[%c1] : memref<100xf32>
  // CHECK:      .mlir:75:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:75:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @load_store_different_elements() {
  %m = memref.alloc() : memref<100xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7.0 : f32
  %v0 = affine.load %m[%c1] : memref<100xf32>
  // CHECK:      .mlir:88:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:88:3: remark: dependence from 0 to 1 at depth 1 = false
  affine.store %c7, %m[%c0] : memref<100xf32>
  // CHECK:      .mlir:91:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:91:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @store_load_same_element() {
  %m = memref.alloc() : memref<100xf32>
  %c11 = arith.constant 11 : index
  %c7 = arith.constant 7.0 : f32
  affine.store %c7, %m[%c11] : memref<100xf32>
  // CHECK:      .mlir:103:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:103:3: remark: dependence from 0 to 1 at depth 1 = true
  %v0 = affine.load %m[%c11] : memref<100xf32>
  // CHECK:      .mlir:106:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:106:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}

// -----

func.func @load_load_same_element() {
  %m = memref.alloc() : memref<100xf32>
  %c11 = arith.constant 11 : index
  %c7 = arith.constant 7.0 : f32
  %v0 = affine.load %m[%c11] : memref<100xf32>
  // CHECK:      .mlir:118:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:118:3: remark: dependence from 0 to 1 at depth 1 = false
  %v1 = affine.load %m[%c11] : memref<100xf32>
  // CHECK:      .mlir:121:3: remark: dependence from 1 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:121:3: remark: dependence from 1 to 1 at depth 1 = false
  return
}
