// RUN: affine-opt %s -split-input-file -cse | filecheck %s

// Inputs from MLIR's mlir/test/Transforms/cse.mlir (arguments named, as our parser wants),
// and affine cases. Our cse also merges commutative ops whatever their operand order
// (as MLIR's OperationEquivalence does) but never merges loads (MLIR's CSE merges two
// reads with no write between; here that is affine-scalrep's job).

// CHECK-LABEL: func.func @simple_constant
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    return %[[C1]], %[[C1]] : i32, i32
func.func @simple_constant() -> (i32, i32) {
  %0 = arith.constant 1 : i32
  %1 = arith.constant 1 : i32
  return %0, %1 : i32, i32
}

// -----

// CHECK:       #[[$MAP:.*]] = affine_map<(d0) -> (d0 mod 2)>
// CHECK-LABEL: func.func @basic
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = affine.apply #[[$MAP]](%[[C0]])
// CHECK-NEXT:    return %[[A]], %[[A]] : index, index
#map0 = affine_map<(d0) -> (d0 mod 2)>
func.func @basic() -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 0 : index
  %0 = affine.apply #map0(%c0)
  %1 = affine.apply #map0(%c1)
  return %0, %1 : index, index
}

// -----

// CHECK-LABEL: func.func @many
// CHECK-NEXT:    %[[V0:.*]] = arith.addf %a, %b : f32
// CHECK-NEXT:    %[[V1:.*]] = arith.addf %[[V0]], %[[V0]] : f32
// CHECK-NEXT:    %[[V2:.*]] = arith.addf %[[V1]], %[[V1]] : f32
// CHECK-NEXT:    %[[V3:.*]] = arith.addf %[[V2]], %[[V2]] : f32
// CHECK-NEXT:    return %[[V3]] : f32
func.func @many(%a: f32, %b: f32) -> f32 {
  %c = arith.addf %a, %b : f32
  %d = arith.addf %a, %b : f32
  %e = arith.addf %b, %a : f32
  %f = arith.addf %a, %b : f32
  %g = arith.addf %c, %d : f32
  %h = arith.addf %e, %f : f32
  %i = arith.addf %c, %e : f32
  %j = arith.addf %g, %h : f32
  %k = arith.addf %h, %i : f32
  %l = arith.addf %j, %k : f32
  return %l : f32
}

// -----

// Different operands, attributes or result types: not merged. 0.0 and -0.0 differ.
// CHECK-LABEL: func.func @different
// CHECK-NEXT:    %c0_i32 = arith.constant 0 : i32
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %cst_0 = arith.constant -0.000000e+00 : f32
// CHECK-NEXT:    %0 = arith.cmpi slt, %a, %b : index
// CHECK-NEXT:    %1 = arith.cmpi ne, %a, %b : index
// CHECK-NEXT:    %2 = arith.subi %a, %b : index
// CHECK-NEXT:    %3 = arith.subi %b, %a : index
// CHECK-NEXT:    return
func.func @different(%a: index, %b: index) -> (i32, index, f32, f32, i1, i1, i1, index, index) {
  %0 = arith.constant 0 : i32
  %1 = arith.constant 0 : index
  %2 = arith.constant 0.0 : f32
  %3 = arith.constant -0.0 : f32
  %4 = arith.cmpi slt, %a, %b : index
  %5 = arith.cmpi ne, %a, %b : index
  %6 = arith.cmpi ne, %a, %b : index
  %7 = arith.subi %a, %b : index
  %8 = arith.subi %b, %a : index
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : i32, index, f32, f32, i1, i1, i1, index, index
}

// -----

// Allocations have effects: never merged.
// CHECK-LABEL: func.func @side_effect
// CHECK-NEXT:    %[[M0:.*]] = memref.alloc() : memref<2x1xf32>
// CHECK-NEXT:    %[[M1:.*]] = memref.alloc() : memref<2x1xf32>
// CHECK-NEXT:    return %[[M0]], %[[M1]]
func.func @side_effect() -> (memref<2x1xf32>, memref<2x1xf32>) {
  %0 = memref.alloc() : memref<2x1xf32>
  %1 = memref.alloc() : memref<2x1xf32>
  return %0, %1 : memref<2x1xf32>, memref<2x1xf32>
}

// -----

// Values propagate down into loop bodies, never up out of them nor across siblings.
// CHECK-LABEL: func.func @propagate(%A: memref<8xi32>)
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    affine.for %i = 0 to 4 {
// CHECK-NEXT:      %[[S:.*]] = arith.addi %[[C1]], %[[C1]] : i32
// CHECK-NEXT:      affine.store %[[S]], %A[%i] : memref<8xi32>
// CHECK-NEXT:      affine.store %[[S]], %A[%i + 4] : memref<8xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %i_0 = 0 to 4 {
// CHECK-NEXT:      %[[T:.*]] = arith.addi %[[C1]], %[[C1]] : i32
// CHECK-NEXT:      affine.store %[[T]], %A[%i_0] : memref<8xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[U:.*]] = arith.addi %[[C1]], %[[C1]] : i32
// CHECK-NEXT:    affine.store %[[U]], %A[0] : memref<8xi32>
// CHECK-NEXT:    return
func.func @propagate(%A: memref<8xi32>) {
  %c1 = arith.constant 1 : i32
  affine.for %i = 0 to 4 {
    %c1_0 = arith.constant 1 : i32
    %s = arith.addi %c1, %c1_0 : i32
    %t = arith.addi %c1_0, %c1 : i32
    affine.store %s, %A[%i] : memref<8xi32>
    affine.store %t, %A[%i + 4] : memref<8xi32>
  }
  affine.for %i = 0 to 4 {
    %s = arith.addi %c1, %c1 : i32
    affine.store %s, %A[%i] : memref<8xi32>
  }
  %u = arith.addi %c1, %c1 : i32
  affine.store %u, %A[0] : memref<8xi32>
  return
}

// -----

// Index arithmetic (affine.apply/min/max) is merged; loads are not (memory: affine-scalrep).
// Maps compare as functions ((d0 + 1) == (1 + d0)); min/max results compare in order, as in MLIR.
// (An affine.min result is no valid dim for an affine.store, as in MLIR: memref.store takes it.)
// CHECK:       #[[$MAP:.*]] = affine_map<(d0) -> (d0 + 1)>
// CHECK:       #[[$MIN:.*]] = affine_map<(d0) -> (d0 + 4, 16)>
// CHECK:       #[[$MIN2:.*]] = affine_map<(d0) -> (16, d0 + 4)>
// CHECK-LABEL: func.func @affine_ops
// CHECK-NEXT:    affine.for %i = 0 to 16 {
// CHECK-NEXT:      %[[A:.*]] = affine.apply #[[$MAP]](%i)
// CHECK-NEXT:      %[[M:.*]] = affine.min #[[$MIN]](%i)
// CHECK-NEXT:      %[[N:.*]] = affine.min #[[$MIN2]](%i)
// CHECK-NEXT:      %[[L0:.*]] = affine.load %A[%[[A]]] : memref<17xf32>
// CHECK-NEXT:      %[[L1:.*]] = affine.load %A[%[[A]]] : memref<17xf32>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[L0]], %[[L1]] : f32
// CHECK-NEXT:      memref.store %[[S]], %A[%[[M]]] : memref<17xf32>
// CHECK-NEXT:      memref.store %[[S]], %A[%[[N]]] : memref<17xf32>
// CHECK-NEXT:    }
func.func @affine_ops(%A: memref<17xf32>) {
  affine.for %i = 0 to 16 {
    %a = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
    %b = affine.apply affine_map<(d0) -> (1 + d0)>(%i)
    %m = affine.min affine_map<(d0) -> (d0 + 4, 16)>(%i)
    %m2 = affine.min affine_map<(d0) -> (d0 + 4, 16)>(%i)
    %n = affine.min affine_map<(d0) -> (16, d0 + 4)>(%i)
    %x = affine.load %A[%a] : memref<17xf32>
    %y = affine.load %A[%b] : memref<17xf32>
    %s = arith.addf %x, %y : f32
    %t = arith.addf %y, %x : f32
    memref.store %s, %A[%m2] : memref<17xf32>
    memref.store %t, %A[%n] : memref<17xf32>
  }
  return
}

// -----

// As MLIR's CSE, trivially dead ops go (whole chains here, and effect-free loops).
// CHECK-LABEL: func.func @dead
// CHECK-NEXT:    return %n : index
func.func @dead(%A: memref<8xf32>, %n: index) -> index {
  %c1 = arith.constant 1 : index
  %a = arith.addi %n, %c1 : index
  %b = arith.muli %a, %a : index
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    %w = arith.mulf %v, %v : f32
  }
  return %n : index
}
