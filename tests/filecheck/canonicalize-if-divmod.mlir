// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -canonicalize | filecheck %s

// affine.if conditions composed and simplified, decided by the enclosing loops; floordiv/mod
// simplified with the ranges of the IVs. Inputs from MLIR's mlir/test/Dialect/Affine/canonicalize.mlir
// unless noted; where MLIR keeps a constraint that the loop bounds make trivially true, we drop it.

// MLIR: (d0 >= 0, -d0 + 1022 >= 0, d1 >= 0, -d1 + s0 - 2 >= 0); `d0 >= 0` and `d1 >= 0` always
// hold in the loops, so we drop them.
// CHECK: #[[$SET:.*]] = affine_set<(d0, d1)[s0] : (-d0 + 1022 >= 0, -d1 + s0 - 2 >= 0)>
// CHECK-LABEL: func.func @canonicalize_affine_if
// CHECK-SAME:    (%[[M:.*]]: index, %[[N:.*]]: index)
// CHECK:         affine.if #[[$SET]](%{{.*}}, %{{.*}})[%[[N]]]
func.func @canonicalize_affine_if(%M : index, %N : index) {
  %c1022 = arith.constant 1022 : index
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to %N {
      affine.if affine_set<(d0, d1, d2, d3)[s0] : (d1 >= 0, d0 - d1 >= 0, d2 >= 0, d3 - d2 - 2 >= 0)>
          (%c1022, %i, %j, %N)[%M] {
        "test.foo"() : () -> ()
      }
      "test.bar"() : () -> ()
    }
  }
  return
}

// -----

// CHECK: #[[$SET:.*]] = affine_set<(d0, d1)[s0] : (d0 - 1 >= 0, d1 - 1 == 0, -d0 + s0 + 10 >= 0)>
// CHECK-LABEL: func.func @canonicalize_affine_if_compose_apply
// CHECK-SAME:    %[[N:.*]]: index
// CHECK-NEXT:    affine.for %[[I:.*]] =
// CHECK-NEXT:      affine.for %[[J:.*]] =
// CHECK-NEXT:        affine.if #[[$SET]](%[[I]], %[[J]])[%[[N]]]
func.func @canonicalize_affine_if_compose_apply(%N: index) {
  %M = affine.apply affine_map<()[s0] -> (s0 + 10)> ()[%N]
  affine.for %i = 0 to 1024 {
    affine.for %j = 0 to 100 {
      %j_ = affine.apply affine_map<(d0)[] -> (d0 + 1)> (%j)
      affine.if affine_set<(d0, d1)[s0] : (d0 - 1 >= 0, d1 - 2 == 0, -d0 + s0 >= 0)>(%i, %j_)[%M] {
        "test.foo"() : () -> ()
      }
    }
  }
  return
}

// -----

// Not in MLIR's canonicalizer (which keeps all three ifs): conditions that always or never hold
// in the loop are replaced by the then / else block.
// CHECK-LABEL: func.func @if_decided_by_loop_bounds
// CHECK:         affine.for %[[I:.*]] = 0 to 32 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]]]
// CHECK-NEXT:      %[[X:.*]] = affine.load %{{.*}}[%[[I]] + 32]
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[X]]
// CHECK-NEXT:      affine.yield %[[S]]
func.func @if_decided_by_loop_bounds(%A: memref<64xf32>, %N: index) -> f32 {
  %cst = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %r = affine.for %i = 0 to 32 iter_args(%acc = %cst) -> f32 {
    affine.if affine_set<(d0) : (d0 >= 0, -d0 + 31 >= 0)>(%i) {
      affine.store %one, %A[%i] : memref<64xf32>
    }
    affine.if affine_set<(d0) : (d0 - 32 >= 0)>(%i) {
      affine.store %cst, %A[%i] : memref<64xf32>
    }
    %v = affine.if affine_set<(d0)[s0] : (d0 - 40 == 0, s0 >= 0)>(%i)[%N] -> f32 {
      affine.yield %one : f32
    } else {
      %x = affine.load %A[%i + 32] : memref<64xf32>
      affine.yield %x : f32
    }
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  return %r : f32
}

// -----

// CHECK: #[[$MAP_SIMPLER:.*]] = affine_map<(d0, d1) -> (((d0 + d1) mod 458313) floordiv 227)>
// CHECK-LABEL: func.func @simplify_with_operands
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to %{{.*}} step 32 {
// CHECK-NEXT:      affine.for %[[II:.*]] = 0 to 32 {
// CHECK-NEXT:        affine.load %{{.*}}[0, 0]
// CHECK:             affine.load %{{.*}}[%[[I]] floordiv 32, %[[II]] mod 16]
// CHECK:             affine.load %{{.*}}[%[[I]] floordiv 64, (%[[I]] + %[[II]]) mod 64]
// CHECK:             affine.load %{{.*}}[(%[[I]] + %[[II]]) floordiv 16, %[[II]] mod 16]
// CHECK:         affine.load %{{.*}}[%{{.*}} floordiv 32, %{{.*}} mod 32]
// CHECK:         affine.apply #[[$MAP_SIMPLER]]
func.func @simplify_with_operands(%N: index, %A: memref<?x32xf32>) {
  affine.for %i = 0 to %N step 32 {
    affine.for %ii = 0 to 32 {
      %x = affine.load %A[%ii floordiv 32, %i mod 32] : memref<?x32xf32>
      "test.foo"(%x) : (f32) -> ()
      %a = affine.load %A[(%i + %ii) floordiv 32, (%i + %ii) mod 16] : memref<?x32xf32>
      "test.foo"(%a) : (f32) -> ()
      %b = affine.load %A[(%i + %ii) floordiv 64, (%i + %ii) mod 64] : memref<?x32xf32>
      "test.foo"(%b) : (f32) -> ()
      %c = affine.load %A[(%i + %ii) floordiv 16, (%i + %ii) mod 16] : memref<?x32xf32>
      "test.foo"(%c) : (f32) -> ()
    }
  }
  affine.for %i = -1 to 32 {
    %x = affine.load %A[%i floordiv 32, %i mod 32] : memref<?x32xf32>
    "test.foo"(%x) : (f32) -> ()
  }
  affine.for %arg0 = 0 to %N step 128 {
    affine.for %arg4 = 0 to 32 step 32 {
      affine.for %arg5 = 0 to 128 {
        %x = affine.apply affine_map<(d0, d1, d2) -> (((d0 + d2) mod 458313) floordiv 227 + d1 floordiv 256)>(%arg0, %arg4, %arg5)
        "test.foo"(%x) : (index) -> ()
      }
    }
  }
  return
}

// -----

// MLIR's results, except `%i mod 8` for %i in [8, 16), which we write `%i - 8`.
// CHECK-LABEL: func.func @simplify_div_mod_with_operands
// CHECK:         affine.for %[[I:.*]] = 0 to 32 {
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[0]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[1]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]]]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[0]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[0]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]] floordiv 16]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]] mod 16]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[(%[[I]] mod 16) floordiv 15]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I]] mod 31]
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %[[I2:.*]] = -8 to 32 {
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I2]] floordiv 32]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I2]] mod 32]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[0]
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %[[I3:.*]] = 8 to 16 {
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[1]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[2]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I3]] - 8]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[%[[I3]]]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[0]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[1]
// CHECK-NEXT:      affine.store %{{.*}}, %{{.*}}[0]
func.func @simplify_div_mod_with_operands(%N: index, %A: memref<64xf32>, %unknown: index) {
  %cst = arith.constant 1.0 : f32
  affine.for %i = 0 to 32 {
    affine.store %cst, %A[%i floordiv 32] : memref<64xf32>
    affine.store %cst, %A[(%i + 1) ceildiv 32] : memref<64xf32>
    affine.store %cst, %A[%i mod 32] : memref<64xf32>
    affine.store %cst, %A[2 * %i floordiv 64] : memref<64xf32>
    affine.store %cst, %A[(%i mod 16) floordiv 16] : memref<64xf32>
    affine.store %cst, %A[%i floordiv 16] : memref<64xf32>
    affine.store %cst, %A[%i mod 16] : memref<64xf32>
    affine.store %cst, %A[(%i mod 16) floordiv 15] : memref<64xf32>
    affine.store %cst, %A[%i mod 31] : memref<64xf32>
  }
  affine.for %i = -8 to 32 {
    affine.store %cst, %A[%i floordiv 32] : memref<64xf32>
    affine.store %cst, %A[%i mod 32] : memref<64xf32>
    affine.store %cst, %A[2 + (%i - 96) floordiv 64] : memref<64xf32>
  }
  affine.for %i = 8 to 16 {
    affine.store %cst, %A[%i floordiv 8] : memref<64xf32>
    affine.store %cst, %A[(%i + 1) ceildiv 8] : memref<64xf32>
    affine.store %cst, %A[%i mod 8] : memref<64xf32>
    affine.store %cst, %A[%i mod 32] : memref<64xf32>
    affine.store %cst, %A[(%i mod 32) floordiv 16] : memref<64xf32>
    affine.store %cst, %A[(%i mod 16) floordiv 8] : memref<64xf32>
    affine.store %cst, %A[(%unknown mod 16) floordiv 16] : memref<64xf32>
  }
  return
}
