// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-sizes=8,8,4,4 tile-levels=2" | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-sizes=6,4 tile-levels=2" | filecheck %s --check-prefix=ODD
// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-size=3 tile-levels=2 separate" | filecheck %s --check-prefix=SEP

// Multi-level tiling (not in MLIR's pass): `tile-levels=2` with `tile-sizes` = two groups,
// outermost level first (8,8 then 4,4); a group shorter than the band is padded with 4, as
// MLIR pads `tile-sizes`. Loops: %i_l2, %j_l2 (outer tiles), %i_l1, %j_l1 (inner tiles inside
// them), then %i_point, %j_point. Each inner loop runs to min(its own tile end, the enclosing
// tile end, the original bound), without the terms that cannot be the smallest: 4 divides 8
// and 16, so %i needs no min at all; %j (0 to %N) keeps %N.
// `tile-size=3 tile-levels=2` tiles by 9 then 3 (each tile holds 3 tiles of the next level).

// CHECK-DAG: #[[$ID:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[$P8:map[0-9]*]] = affine_map<(d0) -> (d0 + 8)>
// CHECK-DAG: #[[$P8N:map[0-9]*]] = affine_map<(d0)[s0] -> (d0 + 8, s0)>
// CHECK-DAG: #[[$P4:map[0-9]*]] = affine_map<(d0) -> (d0 + 4)>
// CHECK-DAG: #[[$P4N:map[0-9]*]] = affine_map<(d0)[s0] -> (d0 + 4, s0)>
// CHECK-LABEL: func.func @two_levels(
// CHECK-NEXT:    affine.for %i_l2 = 0 to 16 step 8 {
// CHECK-NEXT:      affine.for %j_l2 = 0 to %N step 8 {
// CHECK-NEXT:        affine.for %i_l1 = #[[$ID]](%i_l2) to #[[$P8]](%i_l2) step 4 {
// CHECK-NEXT:          affine.for %j_l1 = #[[$ID]](%j_l2) to min #[[$P8N]](%j_l2)[%N] step 4 {
// CHECK-NEXT:            affine.for %i_point = #[[$ID]](%i_l1) to #[[$P4]](%i_l1) {
// CHECK-NEXT:              affine.for %j_point = #[[$ID]](%j_l1) to min #[[$P4N]](%j_l1)[%N] {
// CHECK-NEXT:                affine.load %A[%i_point, %j_point]

// 6,4 gives (6, 4) then (4, 4) after padding: %j is untiled at the inner level (a tile of 4
// inside a tile of 4 would run once), so it has no %j_l1 loop.
// ODD-LABEL: func.func @two_levels(
// ODD-NEXT:    affine.for %i_l2 = 0 to 16 step 6 {
// ODD-NEXT:      affine.for %j_l2 = 0 to %N step 4 {
// ODD-NEXT:        affine.for %i_l1 = #{{map[0-9]*}}(%i_l2) to min #{{map[0-9]*}}(%i_l2) step 4 {
// ODD-NEXT:          affine.for %i_point = #{{map[0-9]*}}(%i_l1) to min #{{map[0-9]*}}(%i_l1, %i_l2) {
// ODD-NEXT:            affine.for %j_point = #{{map[0-9]*}}(%j_l2) to min #{{map[0-9]*}}(%j_l2)[%N] {

// SEP-DAG: #[[$COND:set[0-9]*]] = affine_set<(d0, d1)[s0] : (-d0 + 13 >= 0, -d1 + s0 - 3 >= 0)>
// SEP-LABEL: func.func @two_levels(
// SEP-NEXT:    affine.for %i_l2 = 0 to 16 step 9 {
// SEP-NEXT:      affine.for %j_l2 = 0 to %N step 9 {
// SEP-NEXT:        affine.for %i_l1 = #{{map[0-9]*}}(%i_l2) to min #{{map[0-9]*}}(%i_l2) step 3 {
// SEP-NEXT:          affine.for %j_l1 = #{{map[0-9]*}}(%j_l2) to min #{{map[0-9]*}}(%j_l2)[%N] step 3 {
// SEP-NEXT:            affine.if #[[$COND]](%i_l1, %j_l1)[%N] {
// SEP-NEXT:              affine.for %i_point = #{{map[0-9]*}}(%i_l1) to #[[$P3:map[0-9]*]](%i_l1) {
// SEP-NEXT:                affine.for %j_point = #{{map[0-9]*}}(%j_l1) to #[[$P3]](%j_l1) {
// SEP:                 } else {
// SEP-NEXT:              affine.for %i_point_0 = #{{map[0-9]*}}(%i_l1) to min
// SEP-NEXT:                affine.for %j_point_0 = #{{map[0-9]*}}(%j_l1) to min
func.func @two_levels(%A: memref<16x100xf32>, %N: index) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to %N {
      %v = affine.load %A[%i, %j] : memref<16x100xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %A[%i, %j] : memref<16x100xf32>
    }
  }
  return
}

// -----

// 20 iterations: by 8 then 4, the inner tiles of the last outer tile (16..19) are full.
// By 6 then 4 (ODD), 4 does not divide 6: the point loop also stops at the outer tile's end.
// CHECK-DAG: #[[$UB8:map[0-9]*]] = affine_map<(d0) -> (d0 + 8, 20)>
// CHECK-DAG: #[[$P4:map[0-9]*]] = affine_map<(d0) -> (d0 + 4)>
// CHECK-LABEL: func.func @not_dividing(
// CHECK-NEXT:    affine.for %i_l2 = 0 to 20 step 8 {
// CHECK-NEXT:      affine.for %i_l1 = #{{map[0-9]*}}(%i_l2) to min #[[$UB8]](%i_l2) step 4 {
// CHECK-NEXT:        affine.for %i_point = #{{map[0-9]*}}(%i_l1) to #[[$P4]](%i_l1) {
// ODD-DAG: #[[$UB6:map[0-9]*]] = affine_map<(d0) -> (d0 + 6, 20)>
// ODD-DAG: #[[$PT:map[0-9]*]] = affine_map<(d0, d1) -> (d0 + 4, d1 + 6, 20)>
// ODD-LABEL: func.func @not_dividing(
// ODD-NEXT:    affine.for %i_l2 = 0 to 20 step 6 {
// ODD-NEXT:      affine.for %i_l1 = #{{map[0-9]*}}(%i_l2) to min #[[$UB6]](%i_l2) step 4 {
// ODD-NEXT:        affine.for %i_point = #{{map[0-9]*}}(%i_l1) to min #[[$PT]](%i_l1, %i_l2) {
// SEP-DAG: #[[$COND:set[0-9]*]] = affine_set<(d0) : (-d0 + 17 >= 0)>
// SEP-LABEL: func.func @not_dividing(
// SEP-NEXT:    affine.for %i_l2 = 0 to 20 step 9 {
// SEP-NEXT:      affine.for %i_l1 = #{{map[0-9]*}}(%i_l2) to min #{{map[0-9]*}}(%i_l2) step 3 {
// SEP-NEXT:        affine.if #[[$COND]](%i_l1) {
func.func @not_dividing(%A: memref<20xf32>) {
  affine.for %i = 0 to 20 {
    %v = affine.load %A[%i] : memref<20xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %A[%i] : memref<20xf32>
  }
  return
}
