// RUN: affine-opt %s -split-input-file -gpu-map | filecheck %s
// RUN: affine-opt %s -split-input-file -gpu-map | affine-opt -split-input-file | filecheck %s
// RUN: affine-opt %s -split-input-file -gpu-map -explain -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK
// RUN: affine-opt %s -split-input-file -gpu-map="block-sizes=16,16" | filecheck %s --check-prefix=B16

// gpu-map, the unoptimized mapping: each nest becomes a gpu.launch of a host function. The
// parallel band's innermost loop goes to x, the next to y; grid sizes are computed on the host,
// block sizes are constants; a guard keeps partial blocks inside the loop bounds; loops below
// the band (matmul's %k) run sequentially in each thread.

// REMARK: :29:3: remark: gpu-map: applied: mapped (%i) to (x): grid (%i_grid, 1, 1), block (256, 1, 1), guarded
// CHECK-DAG:   #[[GRID:map[0-9]*]] = affine_map<()[s0] -> (s0 ceildiv 256)>
// CHECK-DAG:   #[[IV:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * 256 + d1)>
// CHECK-DAG:   #[[GUARD:set[0-9]*]] = affine_set<(d0)[s0] : (-d0 + s0 - 1 >= 0)>
// CHECK-LABEL: func.func @axpy(
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c256 = arith.constant 256 : index
// CHECK-NEXT:    %i_grid = affine.apply #[[GRID]]()[%N]
// CHECK-NEXT:    gpu.launch blocks(%bx, %by, %bz) in (%gx = %i_grid, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
// CHECK-NEXT:      %i = affine.apply #[[IV]](%bx, %tx)
// CHECK-NEXT:      affine.if #[[GUARD]](%i)[%N] {
// CHECK-NEXT:        %x = affine.load %X[%i] : memref<?xf32>
// CHECK:             affine.store %s, %Y[%i] : memref<?xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @axpy(%X: memref<?xf32>, %Y: memref<?xf32>, %a: f32, %N: index) {
  affine.for %i = 0 to %N {
    %x = affine.load %X[%i] : memref<?xf32>
    %y = affine.load %Y[%i] : memref<?xf32>
    %p = arith.mulf %a, %x : f32
    %s = arith.addf %p, %y : f32
    affine.store %s, %Y[%i] : memref<?xf32>
  }
  return
}

// -----

// REMARK: :58:3: remark: gpu-map: applied: mapped (%i, %j) to (y, x): grid (2, 8, 1), block (32, 8, 1); sequential per thread: (%k)
// CHECK-DAG:   #[[X:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * 32 + d1)>
// CHECK-DAG:   #[[Y:map[0-9]*]] = affine_map<(d0, d1) -> (d0 * 8 + d1)>
// CHECK-LABEL: func.func @matmul(
// CHECK:         gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c8, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c8, %sz = %c1) {
// CHECK-NEXT:      %j = affine.apply #[[X]](%bx, %tx)
// CHECK-NEXT:      %i = affine.apply #[[Y]](%by, %ty)
// CHECK-NEXT:      affine.for %k = 0 to 32 {
// CHECK-NEXT:        %a = affine.load %A[%i, %k] : memref<64x32xf32>
// CHECK:             affine.store %s, %C[%i, %j] : memref<64x64xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.terminator
// B16-LABEL: func.func @matmul(
// B16:         gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c16, %sz = %c1) {
// B16-NEXT:      %j = affine.apply #{{map[0-9]*}}(%bx, %tx)
// B16-NEXT:      %i = affine.apply #{{map[0-9]*}}(%by, %ty)
func.func @matmul(%A: memref<64x32xf32>, %B: memref<32x64xf32>, %C: memref<64x64xf32>) {
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.for %k = 0 to 32 {
        %a = affine.load %A[%i, %k] : memref<64x32xf32>
        %b = affine.load %B[%k, %j] : memref<32x64xf32>
        %c = affine.load %C[%i, %j] : memref<64x64xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<64x64xf32>
      }
    }
  }
  return
}

// -----

// A loop carrying a dependence is not mapped: the nest runs in one thread. A statement outside
// loops gets its own 1x1x1 launch; constants stay on the host.

// REMARK: :92:3: remark: gpu-map: note: 1x1x1 launch running it sequentially: no parallel loop to map (%i is not parallel: RAW %A: S2 (affine.store at {{.*}}:96:5) -> S0 (affine.load at {{.*}}:93:5) carried by %i, distance (1))
// REMARK: :98:3: remark: gpu-map: note: 1x1x1 launch running it sequentially: top-level statements outside loops
// CHECK-LABEL: func.func @sequential(
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
// CHECK-NEXT:      affine.for %i = 1 to 10 {
// CHECK:         gpu.launch blocks(%bx_0, %by_0, %bz_0) in (%gx_0 = %c1, %gy_0 = %c1, %gz_0 = %c1) threads(%tx_0, %ty_0, %tz_0) in (%sx_0 = %c1, %sy_0 = %c1, %sz_0 = %c1) {
// CHECK-NEXT:      affine.store %cst, %A[0] : memref<10xf32>
// CHECK-NEXT:      gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @sequential(%A: memref<10xf32>) {
  %cst = arith.constant 0.0 : f32
  affine.for %i = 1 to 10 {
    %a = affine.load %A[%i - 1] : memref<10xf32>
    %b = affine.load %A[%i] : memref<10xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%i] : memref<10xf32>
  }
  affine.store %cst, %A[0] : memref<10xf32>
  return
}

// -----

// Three parallel loops: x, y, z with 32x4x2 threads, clamped to a small trip count (%c: 3
// iterations, 2 threads in z, guarded). A 4th outer parallel loop runs in each thread.

// REMARK: :117:3: remark: gpu-map: applied: mapped (%b, %c, %d) to (z, y, x): grid (4, 4, 2), block (32, 4, 2), guarded; sequential per thread: (%a)
// CHECK-LABEL: func.func @four(
// CHECK:         gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c2) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c4, %sz = %c2) {
// CHECK-NEXT:      %d = affine.apply #{{map[0-9]*}}(%bx, %tx)
// CHECK-NEXT:      %c = affine.apply #{{map[0-9]*}}(%by, %ty)
// CHECK-NEXT:      %b = affine.apply #{{map[0-9]*}}(%bz, %tz)
// CHECK-NEXT:      affine.if #{{set[0-9]*}}(%b) {
// CHECK-NEXT:        affine.for %a = 0 to 2 {
// CHECK-NEXT:          %v = affine.load %T[%a, %b, %c, %d] : memref<2x3x16x128xf32>
func.func @four(%T: memref<2x3x16x128xf32>) {
  affine.for %a = 0 to 2 {
    affine.for %b = 0 to 3 {
      affine.for %c = 0 to 16 {
        affine.for %d = 0 to 128 {
          %v = affine.load %T[%a, %b, %c, %d] : memref<2x3x16x128xf32>
          %w = arith.addf %v, %v : f32
          affine.store %w, %T[%a, %b, %c, %d] : memref<2x3x16x128xf32>
        }
      }
    }
  }
  return
}
