// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-sizes=16,0" | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-size=32" | filecheck %s --check-prefix=T32
// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-size=32" -explain -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK

// `tile-sizes` as MLIR reads it: one size per loop of the band, a short list padded with 4, a
// long one cut. A size of 0 (ours; MLIR has no such size) leaves the loop untiled: it keeps
// its range and its place among the point loops.

// CHECK-LABEL: func.func @padded(
// CHECK-NEXT:    affine.for %i_tile = 0 to 64 step 16 {
// CHECK-NEXT:      affine.for %k_tile = 0 to 64 step 4 {
// CHECK-NEXT:        affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// CHECK-NEXT:          affine.for %j = 0 to 64 {
// CHECK-NEXT:            affine.for %k_point = #{{map[0-9]*}}(%k_tile) to #{{map[0-9]*}}(%k_tile) {
func.func @padded(%A: memref<64x64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 64 {
        %v = affine.load %A[%i, %j, %k] : memref<64x64x64xf32>
        %w = arith.addf %v, %v : f32
        affine.store %w, %A[%i, %j, %k] : memref<64x64x64xf32>
      }
    }
  }
  return
}

// -----

// CHECK-LABEL: func.func @cut(
// CHECK-NEXT:    affine.for %i_tile = 0 to 64 step 16 {
// CHECK-NEXT:      affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// CHECK-NEXT:        affine.load %A[%i_point]
func.func @cut(%A: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %v = affine.load %A[%i] : memref<64xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %A[%i] : memref<64xf32>
  }
  return
}

// -----

// CHECK-LABEL: func.func @zero_size_untiled(
// CHECK-NEXT:    affine.for %i_tile = 0 to 64 step 16 {
// CHECK-NEXT:      affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// CHECK-NEXT:        affine.for %j = 0 to 64 {
func.func @zero_size_untiled(%A: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %v = affine.load %A[%i, %j] : memref<64x64xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %A[%i, %j] : memref<64x64xf32>
    }
  }
  return
}

// -----

// The innermost loop of the band carries iter_args: the pass leaves it untiled and tiles the
// others (MLIR tiles no band with iter_args; tiling %k would interleave its chain with %i, %j).
// T32-LABEL: func.func @reduction_innermost(
// T32:           affine.for %i_tile = 0 to 64 step 32 {
// T32-NEXT:        affine.for %j_tile = 0 to 64 step 32 {
// T32-NEXT:          affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// T32-NEXT:            affine.for %j_point = #{{map[0-9]*}}(%j_tile) to #{{map[0-9]*}}(%j_tile) {
// T32-NEXT:              %r = affine.for %k = 0 to 64 iter_args(%acc = %cst) -> (f32) {
// REMARK: remark: affine-loop-tile: note: %k carries iter_args: left untiled, the other loops of (%i, %j, %k) are tiled
// REMARK-NEXT: remark: affine-loop-tile: applied: tiled (%i, %j, %k) by 32x32x-
func.func @reduction_innermost(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  %cst = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %r = affine.for %k = 0 to 64 iter_args(%acc = %cst) -> f32 {
        %v = affine.load %A[%i, %k] : memref<64x64xf32>
        %s = arith.addf %acc, %v : f32
        affine.yield %s : f32
      }
    }
  }
  return
}

// -----

// A triangular band: %j's bound uses %i. Tiling %j is refused (as MLIR, which requires the
// band hyper-rectangular); tiling only %i (16,0) is legal: %j keeps its bound, over %i_point.
// CHECK-LABEL: func.func @triangular(
// CHECK-NEXT:    affine.for %i_tile = 0 to 64 step 16 {
// CHECK-NEXT:      affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// CHECK-NEXT:        affine.for %j = 0 to #{{map[0-9]*}}(%i_point) {
// T32-LABEL: func.func @triangular(
// T32-NEXT:    affine.for %i = 0 to 64 {
// T32-NEXT:      affine.for %j = 0 to #{{map[0-9]*}}(%i) {
// REMARK: remark: affine-loop-tile: refused: cannot tile %j in (%i, %j): its upper bound depends on %i (only hyper-rectangular bands are tiled; leave %j untiled: size 0)
func.func @triangular(%A: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %v = affine.load %A[%i, %j] : memref<64x64xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %A[%i, %j] : memref<64x64xf32>
    }
  }
  return
}
