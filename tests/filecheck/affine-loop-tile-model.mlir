// RUN: affine-opt %s -split-input-file -affine-loop-tile="cache-size=512" | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-tile="cache-size=512" -explain -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK
// RUN: affine-opt %s -split-input-file -affine-loop-tile="cache-size=16" | filecheck %s --check-prefix=SMALL

// Tile sizes from the cost model (`cache-size`, no explicit sizes): the largest tiles whose
// working set fits the cache, kept dividing the constant trip counts (so no min bounds). The
// choice and its footprint are recorded (REMARK, from -explain).
// MLIR's @simple_matmul (loop-tiling.mlir, MODEL run): MLIR guesses 6x6x6 from the footprint
// (about 49 MiB: vector<64xf32> elements of 256 B) and cuts it to divisors, 4x4x5; its tile
// then uses 14 KiB of the 512 KiB. Ours takes 16x32x25 (428 KiB): the same loops and bounds
// (three tile loops, three point loops without min), larger tiles.

// CHECK-LABEL: func.func @simple_matmul(
// CHECK-NEXT:    affine.for %i_tile = 0 to 256 step 16 {
// CHECK-NEXT:      affine.for %j_tile = 0 to 256 step 32 {
// CHECK-NEXT:        affine.for %k_tile = 0 to 250 step 25 {
// CHECK-NEXT:          affine.for %i_point = #[[$ID:map[0-9]*]](%i_tile) to #{{map[0-9]*}}(%i_tile) {
// CHECK-NEXT:            affine.for %j_point = #[[$ID]](%j_tile) to #{{map[0-9]*}}(%j_tile) {
// CHECK-NEXT:              affine.for %k_point = #[[$ID]](%k_tile) to #{{map[0-9]*}}(%k_tile) {
// CHECK-NEXT:                affine.load %arg0[%i_point, %k_point]
// REMARK: remark: affine-loop-tile: note: cost model: tile sizes 16x32x25 for (%i, %j, %k): tile working set 428.0 KiB fits 512.0 KiB (whole band: 47.2 MiB)
// REMARK-NEXT: remark: affine-loop-tile: applied: tiled (%i, %j, %k) by 16x32x25
// SMALL-LABEL: func.func @simple_matmul(
// SMALL-NEXT:    affine.for %i_tile = 0 to 256 step 4 {
// SMALL-NEXT:      affine.for %j_tile = 0 to 256 step 4 {
// SMALL-NEXT:        affine.for %k_tile = 0 to 250 step 2 {
func.func @simple_matmul(%arg0: memref<256x256xvector<64xf32>>, %arg1: memref<256x256xvector<64xf32>>, %arg2: memref<256x256xvector<64xf32>>) -> memref<256x256xvector<64xf32>> {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      affine.for %k = 0 to 250 {
        %l = affine.load %arg0[%i, %k] : memref<256x256xvector<64xf32>>
        %r = affine.load %arg1[%k, %j] : memref<256x256xvector<64xf32>>
        %o = affine.load %arg2[%i, %j] : memref<256x256xvector<64xf32>>
        %m = arith.mulf %l, %r : vector<64xf32>
        %a = arith.addf %o, %m : vector<64xf32>
        affine.store %a, %arg2[%i, %j] : memref<256x256xvector<64xf32>>
      }
    }
  }
  return %arg2 : memref<256x256xvector<64xf32>>
}

// -----

// The whole band fits (32 KiB): not tiled (MLIR tiles it by 1: loops of one iteration).
// With 16 KiB, only %i is tiled: a tile of 32 rows of %A and 32 columns of %B is 16 KiB, and
// %j keeps its whole range (an untiled loop stays among the point loops).
// CHECK-LABEL: func.func @fits(
// CHECK-NEXT:    affine.for %i = 0 to 64 {
// CHECK-NEXT:      affine.for %j = 0 to 64 {
// REMARK: remark: affine-loop-tile: note: not tiled: the working set of (%i, %j) (32.0 KiB) fits 512.0 KiB (cost model)
// SMALL-LABEL: func.func @fits(
// SMALL-NEXT:    affine.for %i_tile = 0 to 64 step 32 {
// SMALL-NEXT:      affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// SMALL-NEXT:        affine.for %j = 0 to 64 {
func.func @fits(%A: memref<64x64xf32>, %B: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %v = affine.load %A[%i, %j] : memref<64x64xf32>
      affine.store %v, %B[%j, %i] : memref<64x64xf32>
    }
  }
  return
}

// -----

// CHECK-LABEL: func.func @matvec(
// CHECK-NEXT:    affine.for %i_tile = 0 to 4096 step 256 {
// CHECK-NEXT:      affine.for %j_tile = 0 to 4096 step 256 {
// CHECK-NEXT:        affine.for %i_point =
// CHECK-NEXT:          affine.for %j_point =
// REMARK: remark: affine-loop-tile: note: cost model: tile sizes 256x256 for (%i, %j): tile working set 258.0 KiB fits 512.0 KiB (whole band: 64.0 MiB)
// SMALL-LABEL: func.func @matvec(
// SMALL-NEXT:    affine.for %i_tile = 0 to 4096 step 32 {
// SMALL-NEXT:      affine.for %j_tile = 0 to 4096 step 64 {
func.func @matvec(%A: memref<4096x4096xf32>, %x: memref<4096xf32>, %y: memref<4096xf32>) {
  affine.for %i = 0 to 4096 {
    affine.for %j = 0 to 4096 {
      %a = affine.load %A[%i, %j] : memref<4096x4096xf32>
      %b = affine.load %x[%j] : memref<4096xf32>
      %c = affine.load %y[%i] : memref<4096xf32>
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %c, %m : f32
      affine.store %s, %y[%i] : memref<4096xf32>
    }
  }
  return
}
