// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-size=32" | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-loop-tile="tile-size=32" -explain -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK

// MLIR's mlir/test/Dialect/Affine/loop-tiling-validity.mlir and loop-tile-anti-dep.mlir: a band
// with a dependence of negative distance along one of its loops is not tiled, and the refusal
// names the loops and the dependence. (The iree-opt on this machine still tiles the last two:
// its check `lb < ub && ub < 0` missed distances like (1, -1); MLIR has since fixed it.)

// CHECK-LABEL: func.func @valid_to_tile()
// CHECK:         affine.for %i_tile = 0 to 64 step 32 {
// CHECK-NEXT:      affine.for %i_point = #{{map[0-9]*}}(%i_tile) to #{{map[0-9]*}}(%i_tile) {
// REMARK: affine-loop-tile-validity.mlir:[[# @LINE + 3]]:3: remark: affine-loop-tile: applied: tiled (%i) by 32
func.func @valid_to_tile() {
  %0 = memref.alloc() : memref<64xf32>
  affine.for %i = 0 to 64 {
    %1 = affine.load %0[%i] : memref<64xf32>
    %2 = arith.addf %1, %1 : f32
    affine.store %2, %0[%i] : memref<64xf32>
  }
  return
}

// -----

// Dependences along the diagonal, of direction (+, -).
// CHECK-LABEL: func.func @illegal_loop_with_diag_dependence()
// CHECK:         affine.for %i = 0 to 64 {
// CHECK-NEXT:      affine.for %j = 0 to 64 {
// REMARK: affine-loop-tile-validity.mlir:[[# @LINE + 3]]:3: remark: affine-loop-tile: refused: cannot tile (%i, %j): the band is not fully permutable: WAR %A: S0 (affine.load at {{.*}}) -> S2 (affine.store at {{.*}}) carried by %i (also loop-independent), distance ([0, 63], [-63, 0]); its distance along %j can be -63
func.func @illegal_loop_with_diag_dependence() {
  %A = memref.alloc() : memref<64x64xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %0 = affine.load %A[%j, %i] : memref<64x64xf32>
      %1 = affine.load %A[%i, %j - 1] : memref<64x64xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %A[%i, %j] : memref<64x64xf32>
    }
  }
  return
}

// -----

// A flow dependence of distance (1, -1).
// CHECK-LABEL: func.func @flow_dep_distance_1_neg1(
// CHECK:         affine.for %i = 1 to 1024 {
// CHECK-NEXT:      affine.for %j = 0 to 1023 {
// CHECK-NOT:     step 32
// REMARK: affine-loop-tile-validity.mlir:[[# @LINE + 2]]:3: remark: affine-loop-tile: refused: cannot tile (%i, %j): the band is not fully permutable: RAW %arr: S1 (affine.store at {{.*}}) -> S0 (affine.load at {{.*}}) carried by %i, distance (1, -1); its distance along %j can be -1
func.func @flow_dep_distance_1_neg1(%arr: memref<1024x1024xi32>) {
  affine.for %i = 1 to 1024 {
    affine.for %j = 0 to 1023 {
      %val = affine.load %arr[%i - 1, %j + 1] : memref<1024x1024xi32>
      affine.store %val, %arr[%i, %j] : memref<1024x1024xi32>
    }
  }
  return
}

// -----

// An anti-dependence of distance (1, -1) (loop-tile-anti-dep.mlir).
// CHECK-LABEL: func.func @anti_dep(
// CHECK:         affine.for %i = 0 to 1023 {
// CHECK-NEXT:      affine.for %j = 1 to 1024 {
// CHECK-NOT:     step 32
// REMARK: affine-loop-tile-validity.mlir:[[# @LINE + 2]]:3: remark: affine-loop-tile: refused: cannot tile (%i, %j): the band is not fully permutable: WAR %arr: S0 (affine.load at {{.*}}) -> S1 (affine.store at {{.*}}) carried by %i, distance (1, -1); its distance along %j can be -1
func.func @anti_dep(%arr: memref<1024x1024xi32>) {
  affine.for %i = 0 to 1023 {
    affine.for %j = 1 to 1024 {
      %val = affine.load %arr[%i + 1, %j - 1] : memref<1024x1024xi32>
      affine.store %val, %arr[%i, %j] : memref<1024x1024xi32>
    }
  }
  return
}

// -----

// Ours: one refused band does not stop the pass; the next band is tiled. A one-loop band is
// always legal (strip-mining keeps the order), whatever its dependences.
// CHECK-LABEL: func.func @refused_then_tiled(
// CHECK:         affine.for %i = 1 to 64 {
// CHECK-NEXT:      affine.for %j = 0 to 63 {
// CHECK:         affine.for %k_tile = 1 to 64 step 32 {
// CHECK-NEXT:      affine.for %k_point =
// REMARK: affine-loop-tile-validity.mlir:[[# @LINE + 3]]:3: remark: affine-loop-tile: refused: cannot tile (%i, %j): the band is not fully permutable: RAW %A
// REMARK: affine-loop-tile-validity.mlir:[[# @LINE + 8]]:3: remark: affine-loop-tile: applied: tiled (%k) by 32
func.func @refused_then_tiled(%A: memref<64x64xf32>, %B: memref<64xf32>) {
  affine.for %i = 1 to 64 {
    affine.for %j = 0 to 63 {
      %v = affine.load %A[%i - 1, %j + 1] : memref<64x64xf32>
      affine.store %v, %A[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %k = 1 to 64 {
    %v = affine.load %B[%k - 1] : memref<64xf32>
    affine.store %v, %B[%k] : memref<64xf32>
  }
  return
}
