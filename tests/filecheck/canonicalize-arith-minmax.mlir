// RUN: affine-opt %s -split-input-file -canonicalize | filecheck %s

// Constant folding with the interpreter's exact semantics, identities, constants hoisted and
// merged; affine.min/max folded, deduplicated, merged and pruned. Compared with iree-opt
// --canonicalize: MLIR also folds `math.exp` and `0.0 / 0.0` (to NaN), which we leave alone on
// purpose (the last bit of exp is library-dependent; NaN payloads are not portable).

// CHECK-LABEL: func.func @int_folds
// CHECK-DAG:     %[[C12:.*]] = arith.constant 12 : i32
// CHECK-DAG:     %[[WRAP:.*]] = arith.constant -56 : i8
// CHECK-DAG:     %[[FD:.*]] = arith.constant -2 : i32
// CHECK-DAG:     %[[C9:.*]] = arith.constant 9 : index
// CHECK-DAG:     %[[TRUE:.*]] = arith.constant true
// CHECK:         %[[Z:.*]] = arith.divsi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    return %[[C12]], %[[WRAP]], %[[FD]], %[[C9]], %[[TRUE]], %[[Z]], %[[FD]]
func.func @int_folds() -> (i32, i8, i32, index, i1, i32, i32) {
  %c7 = arith.constant 7 : i32
  %c5 = arith.constant 5 : i32
  %c100 = arith.constant 100 : i8
  %m = arith.constant -7 : i32
  %c0 = arith.constant 0 : i32
  %a = arith.addi %c7, %c5 : i32
  %w = arith.addi %c100, %c100 : i8
  %d = arith.floordivsi %m, %c5 : i32
  %ci = arith.constant 3 : index
  %x = arith.muli %ci, %ci : index
  %cmp = arith.cmpi slt, %m, %c5 : i32
  %z = arith.divsi %c7, %c0 : i32
  %r = arith.remsi %m, %c5 : i32
  return %a, %w, %d, %x, %cmp, %z, %r : i32, i8, i32, index, i1, i32, i32
}

// -----

// CHECK-LABEL: func.func @float_folds
// CHECK-DAG:     %[[S:.*]] = arith.constant 3.000000e-01 : f32
// CHECK-DAG:     %[[Q:.*]] = arith.constant 3.333333507e-02 : f32
// CHECK-DAG:     %[[I:.*]] = arith.constant 3 : i32
// CHECK:         %[[E:.*]] = math.exp
// CHECK-NEXT:    %[[NAN:.*]] = arith.divf
// CHECK-NEXT:    return %[[S]], %[[Q]], %[[E]], %[[NAN]], %[[I]]
func.func @float_folds() -> (f32, f32, f32, f32, i32) {
  %a = arith.constant 0.1 : f32
  %b = arith.constant 0.2 : f32
  %s = arith.addf %a, %b : f32
  %three = arith.constant 3.0 : f32
  %q = arith.divf %a, %three : f32
  %e = math.exp %a : f32
  %zero = arith.constant 0.0 : f32
  %nan = arith.divf %zero, %zero : f32
  %i = arith.fptosi %three : f32 to i32
  return %s, %q, %e, %nan, %i : f32, f32, f32, f32, i32
}

// -----

// `x + 0.0` is not `x` (for x = -0.0); `x + (-0.0)`, `x - 0.0`, `x * 1.0` are. As MLIR.
// CHECK-LABEL: func.func @identities
// CHECK-SAME:    (%[[X:.*]]: f32, %[[I:.*]]: i32, %{{.*}}: i1)
// CHECK:         %[[ADD0:.*]] = arith.addf %[[X]], %{{.*}} : f32
// CHECK-NEXT:    return %[[X]], %[[X]], %[[ADD0]], %[[X]], %[[I]], %[[I]], %{{.*}}, %{{.*}}, %[[X]], %[[X]] :
func.func @identities(%x: f32, %i: i32, %c: i1) -> (f32, f32, f32, f32, i32, i32, i32, i1, f32, f32) {
  %one = arith.constant 1.0 : f32
  %pz = arith.constant 0.0 : f32
  %nz = arith.constant -0.0 : f32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %true = arith.constant true
  %0 = arith.mulf %one, %x : f32
  %1 = arith.addf %x, %nz : f32
  %2 = arith.addf %x, %pz : f32
  %3 = arith.subf %x, %pz : f32
  %4 = arith.addi %c0, %i : i32
  %5 = arith.muli %i, %c1 : i32
  %6 = arith.subi %i, %i : i32
  %7 = arith.cmpi sle, %i, %i : i32
  %8 = arith.select %true, %x, %one : f32
  %9 = arith.select %c, %x, %x : f32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : f32, f32, f32, f32, i32, i32, i32, i1, f32, f32
}

// -----

// Constants hoisted to the top and merged, `(v + 1) + 2` reassociated, dead ops (also a load) erased.
// CHECK-LABEL: func.func @constants_hoisted
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 8 {
// CHECK-NEXT:      %[[V:.*]] = affine.load %{{.*}}[%[[I]]]
// CHECK-NEXT:      %[[T:.*]] = arith.addi %[[V]], %[[C3]] : i32
// CHECK-NEXT:      affine.store %[[T]], %{{.*}}[%[[I]]]
// CHECK-NEXT:    }
func.func @constants_hoisted(%A: memref<8xi32>) {
  affine.for %i = 0 to 8 {
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %v = affine.load %A[%i] : memref<8xi32>
    %s = arith.addi %c1, %v : i32
    %t = arith.addi %s, %c2 : i32
    %c1_0 = arith.constant 1 : i32
    %u = arith.muli %t, %c1_0 : i32
    %dead = arith.muli %u, %u : i32
    %unused = affine.load %A[%i] : memref<8xi32>
    affine.store %u, %A[%i] : memref<8xi32>
  }
  return
}

// -----

// CHECK-LABEL: func.func @affine_min_max_constant
// CHECK-NEXT:    %[[C512:.*]] = arith.constant 512 : index
// CHECK-NEXT:    %[[C1000:.*]] = arith.constant 1000 : index
// CHECK-NEXT:    return %[[C512]], %[[C1000]]
func.func @affine_min_max_constant() -> (index, index) {
  %c511 = arith.constant 511 : index
  %c0 = arith.constant 0 : index
  %0 = affine.min affine_map<(d0)[s0] -> (1000, d0 + 512, s0 + 1)> (%c0)[%c511]
  %1 = affine.max affine_map<(d0)[s0] -> (1000, d0 + 512, s0 + 1)> (%c0)[%c511]
  return %0, %1 : index, index
}

// -----

// CHECK: #[[$MAP:.*]] = affine_map<()[s0, s1] -> (s0 + s1, s0 * 2)>
// CHECK-LABEL: func.func @deduplicate_affine_min_expressions
// CHECK-NEXT:    affine.min #[[$MAP]]()[%{{.*}}, %{{.*}}]
func.func @deduplicate_affine_min_expressions(%i0: index, %i1: index) -> index {
  %0 = affine.min affine_map<()[s0, s1] -> (s0 + s1, s0 * 2, s1 + s0, s0 * 2)> ()[%i0, %i1]
  return %0: index
}

// -----

// The same results as MLIR, in our canonical order.
// CHECK-DAG: #[[$MAP0:.*]] = affine_map<()[s0, s1, s2] -> (16, s0 * 3, s1 - s2)>
// CHECK-DAG: #[[$MAP1:.*]] = affine_map<()[s0, s1, s2] -> (16, s1 - s2, -s0 + 5)>
// CHECK-LABEL: func.func @merge_affine_min_ops
// CHECK-SAME:    (%[[I0:.*]]: index, %[[I1:.*]]: index, %[[I2:.*]]: index, %[[I3:.*]]: index)
// CHECK-NEXT:    affine.min #[[$MAP0]]()[%[[I2]], %[[I0]], %[[I1]]]
// CHECK-NEXT:    affine.min #[[$MAP1]]()[%[[I3]], %[[I0]], %[[I1]]]
func.func @merge_affine_min_ops(%i0: index, %i1: index, %i2: index, %i3: index) -> (index, index) {
  %0 = affine.min affine_map<(d0)[s0] -> (16, d0 - s0)> (%i0)[%i1]
  %1 = affine.min affine_map<(d0)[s0] -> (3 * s0, d0)> (%0)[%i2]
  %2 = affine.min affine_map<(d0)[s0] -> (s0, 5 - d0)> (%i3)[%0]
  return %1, %2: index, index
}

// -----

// CHECK-DAG: #[[$MAP0:.*]] = affine_map<()[s0] -> (s0 + 16)>
// CHECK-DAG: #[[$MAP1:.*]] = affine_map<()[s0] -> (s0 * 4)>
// CHECK-LABEL: func.func @canonicalize_single_min_max
// CHECK-SAME:    (%[[I0:.*]]: index, %[[I1:.*]]: index)
// CHECK-NEXT:    %[[A:.*]] = affine.apply #[[$MAP0]]()[%[[I0]]]
// CHECK-NEXT:    %[[B:.*]] = affine.apply #[[$MAP1]]()[%[[I1]]]
// CHECK-NEXT:    return %[[A]], %[[B]], %[[I0]]
func.func @canonicalize_single_min_max(%i0: index, %i1: index) -> (index, index, index) {
  %0 = affine.min affine_map<()[s0] -> (s0 + 16)> ()[%i0]
  %1 = affine.max affine_map<()[s0] -> (s0 * 4)> ()[%i1]
  %2 = affine.min affine_map<()[s0] -> (s0)> ()[%i0]
  return %0, %1, %2: index, index, index
}

// -----

// Not in MLIR's canonicalizer: loop ranges decide min/max bounds (%i in {0, 32, 64}).
// CHECK: #[[$UB:.*]] = affine_map<(d0) -> (d0 + 32)>
// CHECK-LABEL: func.func @min_max_bounds_pruned_by_loop_ranges
// CHECK:         affine.for %[[I:.*]] = 0 to 96 step 32 {
// CHECK-NEXT:      affine.for %{{.*}} = 0 to #[[$UB]](%[[I]]) {
func.func @min_max_bounds_pruned_by_loop_ranges(%A: memref<100xf32>) {
  affine.for %i = 0 to 96 step 32 {
    affine.for %j = max affine_map<(d0) -> (d0 - 64, 0)>(%i) to min affine_map<(d0) -> (d0 + 32, 96)>(%i) {
      %v = affine.load %A[%j] : memref<100xf32>
      affine.store %v, %A[%j + 1] : memref<100xf32>
    }
  }
  return
}
