// RUN: affine-opt %s -split-input-file -canonicalize | filecheck %s

// Composition of affine.apply into its users (loads, stores, bounds, other applies), constant
// operands folded into maps, unused/duplicate operands dropped, valid symbols promoted to symbols.
// Inputs from MLIR's mlir/test/Dialect/Affine/canonicalize.mlir (memref.load/store replaced by
// affine.load/store, which compose); the outputs are MLIR's (checked with iree-opt --canonicalize).

// CHECK-LABEL: func.func @compose_affine_maps_1dto2d_no_symbols
// CHECK-NEXT:    affine.for %[[I:.*]] = 0 to 15 {
// CHECK-NEXT:      %[[V:.*]] = affine.load %{{.*}}[%[[I]] - 1, %[[I]] - 1]
// CHECK-NEXT:      affine.store %[[V]], %{{.*}}[%[[I]] + 1, %[[I]] + 1]
// CHECK-NEXT:      affine.store %[[V]], %{{.*}}[%[[I]] - 1, %[[I]] + 1]
// CHECK-NEXT:    }
func.func @compose_affine_maps_1dto2d_no_symbols(%A: memref<4x4xf32>) {
  affine.for %i0 = 0 to 15 {
    %x0 = affine.apply affine_map<(d0) -> (d0 - 1)> (%i0)
    %x1_0 = affine.apply affine_map<(d0, d1) -> (d0)> (%x0, %x0)
    %x1_1 = affine.apply affine_map<(d0, d1) -> (d1)> (%x0, %x0)
    %v0 = affine.load %A[%x1_0, %x1_1] : memref<4x4xf32>
    %y0 = affine.apply affine_map<(d0) -> (d0 + 1)> (%i0)
    %y1_0 = affine.apply affine_map<(d0, d1) -> (d0)> (%y0, %y0)
    %y1_1 = affine.apply affine_map<(d0, d1) -> (d1)> (%y0, %y0)
    affine.store %v0, %A[%y1_0, %y1_1] : memref<4x4xf32>
    %xy_0 = affine.apply affine_map<(d0, d1) -> (d0)> (%x0, %y0)
    %xy_1 = affine.apply affine_map<(d0, d1) -> (d1)> (%x0, %y0)
    affine.store %v0, %A[%xy_0, %xy_1] : memref<4x4xf32>
  }
  return
}

// -----

// CHECK: #[[$MAP14:.*]] = affine_map<()[s0, s1] -> ((s0 + s1) floordiv 2)>
// CHECK-LABEL: func.func @compose_affine_maps_multiple_symbols
// CHECK-SAME:    (%[[A0:.*]]: index, %[[A1:.*]]: index)
// CHECK-NEXT:    %[[E:.*]] = affine.apply #[[$MAP14]]()[%[[A1]], %[[A0]]]
// CHECK-NEXT:    return %[[E]]
func.func @compose_affine_maps_multiple_symbols(%arg0: index, %arg1: index) -> index {
  %a = affine.apply affine_map<(d0)[s0] -> (s0 + d0)> (%arg0)[%arg1]
  %c = affine.apply affine_map<(d0) -> (d0 * 4)> (%a)
  %e = affine.apply affine_map<(d0)[s0] -> (d0 floordiv 8)> (%c)[%arg1]
  return %e : index
}

// -----

// CHECK: #[[$MAP15:.*]] = affine_map<()[s0] -> (s0 - 42)>
// CHECK-LABEL: func.func @partial_fold_map
// CHECK-NEXT:    affine.apply #[[$MAP15]]()[%arg1]
func.func @partial_fold_map(%arg1: index, %arg2: index) -> index {
  %c42 = arith.constant 42 : index
  %2 = affine.apply affine_map<(d0, d1) -> (d0 - d1)> (%arg1, %c42)
  return %2 : index
}

// -----

// CHECK: #[[$MAPC:.*]] = affine_map<()[s0, s1] -> (s0 * 3 + s1)>
// CHECK-LABEL: func.func @symbolic_composition_c
// CHECK-NEXT:    affine.apply #[[$MAPC]]()[%arg0, %arg1]
func.func @symbolic_composition_c(%arg0: index, %arg1: index, %arg2: index, %arg3: index) -> index {
  %0 = affine.apply affine_map<(d0) -> (d0)>(%arg0)
  %1 = affine.apply affine_map<(d0) -> (d0)>(%arg1)
  %2 = affine.apply affine_map<()[s0, s1, s2, s3] -> (s0 + s1 + s2 + s3)>()[%0, %0, %0, %1]
  return %2 : index
}

// -----

// CHECK-LABEL: func.func @mix_dims_and_symbols_f
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    return %[[C0]]
func.func @mix_dims_and_symbols_f(%arg0: index, %arg1: index) -> index {
  %a = affine.apply affine_map<(d0)[s0] -> (d0 - 1 + 42 * s0)> (%arg0)[%arg1]
  %b = affine.apply affine_map<(d0) -> (d0 + 7)> (%a)
  %c = affine.apply affine_map<(d0) -> (d0 * 4)> (%a)
  %d = affine.apply affine_map<()[s0] -> (s0 ceildiv 8)> ()[%b]
  %e = affine.apply affine_map<(d0) -> (d0 floordiv 3)> (%c)
  %f = affine.apply affine_map<(d0, d1)[s0, s1] -> (d0 - s1 +  d1 - s0)> (%d, %e)[%e, %d]
  return %f : index
}

// -----

// The unused operand %u is dropped; a function argument used as a dim becomes a symbol.
// CHECK-LABEL: func.func @compose_into_affine_load_store
// CHECK-NEXT:    affine.for %[[IV:.*]] = 0 to 1023 {
// CHECK-NEXT:      %[[L:.*]] = affine.load %{{.*}}[%[[IV]] + 1]
// CHECK-NEXT:      affine.store %[[L]], %{{.*}}[%[[IV]] + 1]
// CHECK-NEXT:      %[[V:.*]] = affine.vector_load %{{.*}}[%[[IV]]]
// CHECK-NEXT:      affine.vector_store %[[V]], %{{.*}}[%[[IV]] + symbol(%{{.*}})]
func.func @compose_into_affine_load_store(%A : memref<1024xf32>, %u : index) {
  affine.for %i = 0 to 1023 {
    %idx = affine.apply affine_map<(d0, d1) -> (d0 + 1)> (%i, %u)
    %0 = affine.load %A[%idx] : memref<1024xf32>
    affine.store %0, %A[%idx] : memref<1024xf32>
    %copy = affine.apply affine_map<(d0) -> (d0)> (%i)
    %1 = affine.vector_load %A[%copy] : memref<1024xf32>, vector<1xf32>
    affine.vector_store %1, %A[%copy + %u] : memref<1024xf32>, vector<1xf32>
  }
  return
}

// -----

// CHECK-DAG: #[[$LB:.*]] = affine_map<()[s0] -> (s0 - 2)>
// CHECK-DAG: #[[$UB:.*]] = affine_map<()[s0] -> (s0 + 2)>
// CHECK-LABEL: func.func @compose_affine_for_bounds
// CHECK-SAME:    (%[[N:.*]]: index,
// CHECK:         affine.for %{{.*}} = #[[$LB]]()[%[[N]]] to #[[$UB]]()[%[[N]]] {
func.func @compose_affine_for_bounds(%N: index, %A: memref<?xf32>) {
  %u = affine.apply affine_map<(d0) -> (d0 + 2)>(%N)
  %l = affine.apply affine_map<(d0) -> (d0 - 2)>(%N)
  %cst = arith.constant 1.0 : f32
  affine.for %i = %l to %u {
    affine.store %cst, %A[%i] : memref<?xf32>
  }
  return
}
