// RUN: affine-opt %s -split-input-file -gpu-map-reductions="block-size=4" | filecheck %s
// RUN: affine-opt %s -split-input-file -gpu-map-reductions="block-size=4" | affine-opt -split-input-file | filecheck %s
// RUN: affine-opt %s -split-input-file -gpu-map-reductions="block-size=4" -explain -o /dev/null 2>&1 | filecheck %s --check-prefix=REMARK
// RUN: affine-opt %s -split-input-file -gpu-map-reductions="block-size=4" -gpu-map | filecheck %s --check-prefix=GPUMAP

// gpu-map-reductions: a nest of row reductions becomes one gpu.launch, one block (of 4 threads
// here) per row. Each row loop runs strided over the threads (%j = %tx to 10 step 4); a
// reduction starts from the identity in each thread, the partials go to a workgroup buffer,
// a tree of log2(4) = 2 guarded steps between barriers combines them in a fixed order, and
// every thread combines element 0 with the loop's initial value (%ninf) once.

// REMARK: :[[# @LINE + 39]]:3: remark: gpu-map-reductions: applied: mapped rows (%i) to blocks (x): grid (6, 1, 1), block (4, 1, 1); 2 row loop(s) strided over the threads (%j, %j); block reductions: maximumf in loop 1 (%j)
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG:   #[[LT2:set[0-9]*]] = affine_set<(d0) : (-d0 + 1 >= 0)>
// CHECK-DAG:   #[[LT1:set[0-9]*]] = affine_set<(d0) : (-d0 >= 0)>
// CHECK-LABEL: func.func @rowmax(
// CHECK:         gpu.launch blocks(%bx, %by, %bz) in (%gx = %c6, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
// CHECK-NEXT:      %acc_shared = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      %i = affine.apply #[[ROW]](%bx)
// CHECK-NEXT:      %cst = arith.constant 0xFF800000 : f32
// CHECK-NEXT:      %m = affine.for %j = %tx to 10 step 4 iter_args(%acc = %cst) -> (f32) {
// CHECK-NEXT:        %x = affine.load %X[%i, %j] : memref<6x10xf32>
// CHECK-NEXT:        %n = arith.maximumf %acc, %x : f32
// CHECK-NEXT:        affine.yield %n : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.store %m, %acc_shared[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      affine.if #[[LT2]](%tx) {
// CHECK-NEXT:        %[[A:.*]] = affine.load %acc_shared[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:        %[[B:.*]] = affine.load %acc_shared[%tx + 2] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:        %[[C:.*]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT:        affine.store %[[C]], %acc_shared[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      affine.if #[[LT1]](%tx) {
// CHECK:             affine.load %acc_shared[%tx + 1] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK:           }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %[[T:.*]] = affine.load %acc_shared[0] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %ninf, %[[T]] : f32
// CHECK-NEXT:      affine.for %j_0 = %tx to 10 step 4 {
// CHECK-NEXT:        %x_0 = affine.load %X[%i, %j_0] : memref<6x10xf32>
// CHECK-NEXT:        %d = arith.subf %x_0, %[[R]] : f32
// CHECK-NEXT:        affine.store %d, %Y[%i, %j_0] : memref<6x10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @rowmax(%X: memref<6x10xf32>, %Y: memref<6x10xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  affine.for %i = 0 to 6 {
    %m = affine.for %j = 0 to 10 iter_args(%acc = %ninf) -> (f32) {
      %x = affine.load %X[%i, %j] : memref<6x10xf32>
      %n = arith.maximumf %acc, %x : f32
      affine.yield %n : f32
    }
    affine.for %j = 0 to 10 {
      %x = affine.load %X[%i, %j] : memref<6x10xf32>
      %d = arith.subf %x, %m : f32
      affine.store %d, %Y[%i, %j] : memref<6x10xf32>
    }
  }
  return
}

// -----

// Symbolic sizes: the grid is computed on the host. A scratch buffer (what fusion leaves when
// scalar replacement cannot promote: the row loop may run zero times) becomes thread-private
// (memref.alloca), its memory reduction is carried in iter_args; the row-level store to %Y
// runs in thread 0 only.

// REMARK: :[[# @LINE + 33]]:3: remark: gpu-map-reductions: applied: mapped rows (%i) to blocks (x): grid (%i_grid, 1, 1), block (4, 1, 1); 1 row loop(s) strided over the threads (%j); block reductions: addf in loop 1 (%j); thread-private: %s; 1 row-level store(s) in thread 0
// CHECK-DAG:   #[[ZERO:set[0-9]*]] = affine_set<(d0) : (d0 == 0)>
// CHECK-LABEL: func.func @rowsum(
// CHECK:         %i_grid = affine.apply #{{map[0-9]*}}()[%M]
// CHECK-NEXT:    gpu.launch blocks(%bx, %by, %bz) in (%gx = %i_grid, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
// CHECK-NEXT:      %s = memref.alloca() : memref<1xf32>
// CHECK-NEXT:      %a_shared = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      %i = affine.apply #{{map[0-9]*}}(%bx)
// CHECK-NEXT:      affine.store %zero, %s[0] : memref<1xf32>
// CHECK-NEXT:      %a = affine.load %s[0] : memref<1xf32>
// CHECK-NEXT:      %cst = arith.constant -0.000000e+00 : f32
// CHECK-NEXT:      %[[P:.*]] = affine.for %j = %tx to %N step 4 iter_args(%a_0 = %cst) -> (f32) {
// CHECK-NEXT:        %x = affine.load %X[%i, %j] : memref<?x?xf32>
// CHECK-NEXT:        %b = arith.addf %a_0, %x : f32
// CHECK-NEXT:        affine.yield %b : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      affine.store %[[P]], %a_shared[%tx] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-2:   gpu.barrier
// CHECK:           gpu.barrier
// CHECK-NEXT:      %[[T:.*]] = affine.load %a_shared[0] : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      %[[R:.*]] = arith.addf %a, %[[T]] : f32
// CHECK-NEXT:      affine.store %[[R]], %s[0] : memref<1xf32>
// CHECK-NEXT:      %r = affine.load %s[0] : memref<1xf32>
// CHECK-NEXT:      affine.if #[[ZERO]](%tx) {
// CHECK-NEXT:        affine.store %r, %Y[%i] : memref<?xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.terminator
// CHECK-NEXT:    }
// CHECK-NOT:     memref.dealloc
// CHECK:         return
func.func @rowsum(%X: memref<?x?xf32>, %Y: memref<?xf32>, %M: index, %N: index) {
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<1xf32>
  affine.for %i = 0 to %M {
    affine.store %zero, %s[0] : memref<1xf32>
    affine.for %j = 0 to %N {
      %x = affine.load %X[%i, %j] : memref<?x?xf32>
      %a = affine.load %s[0] : memref<1xf32>
      %b = arith.addf %a, %x : f32
      affine.store %b, %s[0] : memref<1xf32>
    }
    %r = affine.load %s[0] : memref<1xf32>
    affine.store %r, %Y[%i] : memref<?xf32>
  }
  memref.dealloc %s : memref<1xf32>
  return
}

// -----

// Refusals leave the nest for gpu-map (a note says why; the nest is unchanged): a combining op
// that is not associative (x - acc), a reduction loop whose store
// carries a dependence, a reduction carried through a loop nested in the row loop, a row loop
// bound computed in the row, and (not a refusal of the utility, a choice of the pass) a
// reduction whose rows are contiguous in memory: one thread per row reads %A coalesced there.

// REMARK: :[[# @LINE + 14]]:3: remark: gpu-map-reductions: note: left for gpu-map: cannot map the rows (%i) at {{.*}} to blocks: iter_arg %acc of %j at {{.*}}:[[# @LINE + 15]]:5 is not a reduction by a recognized combining op (one of addf, mulf, maximumf, minimumf, addi, muli, maxsi, minsi, maxui, minui, andi, ori, xori, each intermediate value used once, or a sum rescaled as one changes)
// REMARK: :[[# @LINE + 21]]:3: remark: gpu-map-reductions: note: left for gpu-map: cannot map the rows (%i) at {{.*}} to blocks: row loop %j at {{.*}}:[[# @LINE + 22]]:5 carries RAW %T: S1 (affine.store at {{.*}}:[[# @LINE + 25]]:7) -> S0 (affine.load at {{.*}}:[[# @LINE + 23]]:7) carried by %j, distance (1), which is not a reduction: its iterations cannot be split among threads
// REMARK: :[[# @LINE + 30]]:3: remark: gpu-map-reductions: note: left for gpu-map: cannot map the rows (%i) at {{.*}} to blocks: iter_arg %acc of %j at {{.*}}:[[# @LINE + 31]]:5 flows into the loop %k at {{.*}}:[[# @LINE + 32]]:7: a reduction carried through an inner loop or region is not mapped (each thread runs its inner loops whole; only the row loop's own chain is combined across threads)
// REMARK: :[[# @LINE + 40]]:3: remark: gpu-map-reductions: note: left for gpu-map: cannot map the rows (%i) at {{.*}} to blocks: the bounds of row loop %j at {{.*}}:[[# @LINE + 42]]:5 use %n, computed in the row (a block needs them before its threads split the loop)
// REMARK: :[[# @LINE + 48]]:3: remark: gpu-map-reductions: note: left for gpu-map: %A at {{.*}}:[[# @LINE + 50]]:7 is read along a row index in its last dimension in %j: one thread per row reads it coalesced
// CHECK-LABEL: func.func @refusals(
// CHECK-NOT:     gpu.launch
// CHECK:         return
// GPUMAP-LABEL: func.func @refusals(
// GPUMAP-COUNT-5: gpu.launch blocks
// GPUMAP-NOT:     gpu.launch
// GPUMAP:         return
func.func @refusals(%A: memref<8x8xf32>, %B: memref<8xf32>, %T: memref<8x8xf32>, %I: memref<8xindex>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.subf %x, %acc : f32
      affine.yield %a : f32
    }
    affine.store %s, %B[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %s = affine.for %j = 0 to 7 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %T[%i, %j] : memref<8x8xf32>
      %e = arith.mulf %x, %x : f32
      affine.store %e, %T[%i, %j + 1] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    affine.store %s, %B[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %t = affine.for %k = 0 to 8 iter_args(%acc2 = %acc) -> (f32) {
        %x = affine.load %A[%j, %k] : memref<8x8xf32>
        %a = arith.addf %acc2, %x : f32
        affine.yield %a : f32
      }
      affine.yield %t : f32
    }
    affine.store %s, %B[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %n = affine.apply affine_map<(d0) -> (8 - d0)>(%i)
    %s = affine.for %j = 0 to %n iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    affine.store %s, %B[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%j, %i] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    affine.store %s, %B[%i] : memref<8xf32>
  }
  return
}

// -----

// A row buffer (allocated in the row body, as affine-privatize leaves attention's rows) becomes
// one workgroup buffer of the row's block at the top of the launch; its dealloc goes. The row
// loop that fills it reduces (max) and holds a loop, which each thread runs whole; the loop
// that rewrites it in another order runs after the tree's barriers; the loop that reads what
// other threads rewrote waits at a barrier of its own.

// REMARK: :[[# @LINE + 19]]:3: remark: gpu-map-reductions: applied: mapped rows (%i) to blocks (x): grid (6, 1, 1), block (4, 1, 1); 3 row loop(s) strided over the threads (%j, %j, %j); block reductions: maximumf in loop 1 (%j); row buffers in workgroup memory: %t (56 B per block); 1 barrier(s) between row statements
// CHECK-LABEL: func.func @rowbuf(
// CHECK:         gpu.launch
// CHECK-NEXT:      %t = memref.alloc() : memref<10xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:      %acc_shared = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
// CHECK:           %m = affine.for %j = %tx to 10 step 4 iter_args(%acc = %cst) -> (f32) {
// CHECK-NEXT:        %d = affine.for %k = 0 to 3 iter_args(%b = %z) -> (f32) {
// CHECK:             affine.store %d, %t[%j] : memref<10xf32, #gpu.address_space<workgroup>>
// CHECK:           %{{.*}} = affine.load %acc_shared[0]
// CHECK-NEXT:      %[[MAX:.*]] = arith.maximumf %ninf, %{{.*}} : f32
// CHECK-NEXT:      affine.for %j_0 = %tx to 10 step 4 {
// CHECK:           }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      affine.for %j_1 = %tx to 10 step 4 {
// CHECK-NOT:       memref.dealloc
// CHECK:           gpu.terminator
func.func @rowbuf(%X: memref<6x10x3xf32>, %Y: memref<6x10xf32>) {
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  affine.for %i = 0 to 6 {
    %t = memref.alloc() : memref<10xf32>
    %m = affine.for %j = 0 to 10 iter_args(%acc = %ninf) -> (f32) {
      %d = affine.for %k = 0 to 3 iter_args(%b = %z) -> (f32) {
        %x = affine.load %X[%i, %j, %k] : memref<6x10x3xf32>
        %b2 = arith.addf %b, %x : f32
        affine.yield %b2 : f32
      }
      affine.store %d, %t[%j] : memref<10xf32>
      %acc2 = arith.maximumf %acc, %d : f32
      affine.yield %acc2 : f32
    }
    affine.for %j = 0 to 10 {
      %a = affine.load %t[9 - %j] : memref<10xf32>
      %b = arith.subf %a, %m : f32
      affine.store %b, %t[9 - %j] : memref<10xf32>
    }
    affine.for %j = 0 to 10 {
      %a = affine.load %t[%j] : memref<10xf32>
      affine.store %a, %Y[%i, %j] : memref<6x10xf32>
    }
    memref.dealloc %t : memref<10xf32>
  }
  return
}

// -----

// A grid beyond CUDA's limit for x (2**31 - 1 blocks) is refused.

// REMARK: :[[# @LINE + 8]]:3: remark: gpu-map-reductions: note: left for gpu-map: cannot map the rows (%i) at {{.*}} to blocks: grid size 4294967296 for %i on x exceeds CUDA's limit 2147483647
// CHECK-LABEL: func.func @too_many_rows(
// CHECK-NEXT:    %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    affine.for %i = 0 to 4294967296 {
// GPUMAP-LABEL: func.func @too_many_rows(
// GPUMAP:         gpu.launch blocks(%bx, %by, %bz) in (%gx = %c16777216, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
func.func @too_many_rows(%A: memref<?x?xf32>, %B: memref<?xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4294967296 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<?x?xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    affine.store %s, %B[%i] : memref<?xf32>
  }
  return
}
