// RUN: affine-opt %s -allow-unregistered-dialect -affine-parallelize | filecheck %s
// RUN: affine-opt %s -allow-unregistered-dialect -affine-parallelize="max-nested=1" | filecheck %s --check-prefix=MAX-NESTED
// RUN: affine-opt %s -allow-unregistered-dialect -affine-parallelize="parallel-reductions=1" | filecheck %s --check-prefix=REDUCE

// Inputs from MLIR's parallelize.mlir; the output has the structure MLIR (iree-opt) gives.

// CHECK-LABEL: func.func @loop_nest_3d_outer_two_parallel
// CHECK:      affine.parallel (%i) = (0) to (symbol(%N)) {
// CHECK-NEXT:   affine.parallel (%j) = (0) to (symbol(%N)) {
// CHECK:          affine.for %k = 0 to %N {
// MAX-NESTED-LABEL: func.func @loop_nest_3d_outer_two_parallel
// MAX-NESTED:      affine.parallel (%i) = (0) to (symbol(%N)) {
// MAX-NESTED-NEXT:   affine.for %j = 0 to %N {
func.func @loop_nest_3d_outer_two_parallel(%N : index) {
  %0 = memref.alloc() : memref<1024 x 1024 x vector<64xf32>>
  %1 = memref.alloc() : memref<1024 x 1024 x vector<64xf32>>
  %2 = memref.alloc() : memref<1024 x 1024 x vector<64xf32>>
  affine.for %i = 0 to %N {
    affine.for %j = 0 to %N {
      %7 = affine.load %2[%i, %j] : memref<1024x1024xvector<64xf32>>
      affine.for %k = 0 to %N {
        %5 = affine.load %0[%i, %k] : memref<1024x1024xvector<64xf32>>
        %6 = affine.load %1[%k, %j] : memref<1024x1024xvector<64xf32>>
        %8 = arith.mulf %5, %6 : vector<64xf32>
        %9 = arith.addf %7, %8 : vector<64xf32>
        affine.store %9, %2[%i, %j] : memref<1024x1024xvector<64xf32>>
      }
    }
  }
  return
}

// CHECK-LABEL: func.func @unknown_op_conservative
// CHECK:         affine.for %i = 0 to 10 {
func.func @unknown_op_conservative() {
  affine.for %i = 0 to 10 {
    "unknown"() : () -> ()
  }
  return
}

// CHECK-LABEL: func.func @nested_for_with_minmax
// CHECK:         affine.parallel (%j) = (0) to (10) {
// CHECK-NEXT:      affine.parallel (%i) = (max(%lb0, %j)) to (min(%ub0, %ub1)) {
func.func @nested_for_with_minmax(%m: memref<?xf32>, %lb0: index,
                             %ub0: index, %ub1: index) {
  affine.for %j = 0 to 10 {
    affine.for %i = max affine_map<(d0, d1) -> (d0, d1)>(%lb0, %j)
            to min affine_map<(d0, d1) -> (d0, d1)>(%ub0, %ub1) {
      affine.load %m[%i] : memref<?xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @iter_args
// CHECK-NOT:     affine.parallel
// CHECK:         return
// REDUCE-LABEL: func.func @iter_args
// REDUCE:         %[[INIT:.*]] = arith.constant
// REDUCE:         %[[RED:.*]] = affine.parallel (%i) = (0) to (10) reduce ("addf") -> (f32) {
// REDUCE-NEXT:      %[[LD:.*]] = affine.load
// REDUCE-NEXT:      affine.yield %[[LD]] : f32
// REDUCE-NEXT:    }
// REDUCE-NEXT:    %final_red = arith.addf %[[INIT]], %[[RED]] : f32
func.func @iter_args(%in: memref<10xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %final_red = affine.for %i = 0 to 10 iter_args(%red_iter = %cst) -> (f32) {
    %ld = affine.load %in[%i] : memref<10xf32>
    %add = arith.addf %red_iter, %ld : f32
    affine.yield %add : f32
  }
  return
}

// A memory reduction (C[i, j] += ...) stays sequential, reductions allowed or not.
// CHECK-LABEL: func.func @max_nested_1
// CHECK:         affine.parallel (%arg3) = (0) to (4096) {
// CHECK-NEXT:      affine.parallel (%arg4) = (0) to (4096) {
// CHECK-NEXT:        affine.for %arg5 = 0 to 4096 {
// REDUCE-LABEL: func.func @max_nested_1
// REDUCE:         affine.for %arg5 = 0 to 4096 {
func.func @max_nested_1(%arg0: memref<4096x4096xf32>, %arg1: memref<4096x4096xf32>, %arg2: memref<4096x4096xf32>) {
  %0 = memref.alloc() : memref<4096x4096xf32>
  affine.for %arg3 = 0 to 4096 {
    affine.for %arg4 = 0 to 4096 {
      affine.for %arg5 = 0 to 4096 {
        %1 = affine.load %arg0[%arg3, %arg5] : memref<4096x4096xf32>
        %2 = affine.load %arg1[%arg5, %arg4] : memref<4096x4096xf32>
        %3 = affine.load %0[%arg3, %arg4] : memref<4096x4096xf32>
        %4 = arith.mulf %1, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %0[%arg3, %arg4] : memref<4096x4096xf32>
      }
    }
  }
  return
}

// An iter arg used twice is not a reduction.
// REDUCE-LABEL: func.func @repeated_use
// REDUCE-NOT:     affine.parallel
// REDUCE:         return
func.func @repeated_use() {
  %cst1 = arith.constant 0.0 : f32
  affine.for %i = 0 to 10 iter_args(%it1 = %cst1) -> (f32) {
    %0 = arith.addf %it1, %it1 : f32
    affine.yield %0 : f32
  }
  return
}

// The outer IVs of an explicit affine.parallel count: %arg9 carries the store -> load pair.
// CHECK-LABEL: func.func @explicit_parallel
// CHECK:         affine.parallel (%arg7, %arg8) = (0, 0) to (85, 180) {
// CHECK-NEXT:      affine.for %arg9 = 0 to 18 {
func.func @explicit_parallel(%arg0: memref<1x123x194xf64>, %arg5: memref<34x99x194xf64>) {
  affine.parallel (%arg7, %arg8) = (0, 0) to (85, 180) {
    affine.for %arg9 = 0 to 18 {
      %0 = affine.load %arg0[0, %arg7 + 19, %arg8 + 7] : memref<1x123x194xf64>
      %1 = affine.load %arg5[%arg9 + 8, %arg7 + 7, %arg8 + 7] : memref<34x99x194xf64>
      %2 = arith.addf %0, %1 : f64
      affine.store %1, %arg0[0, %arg7 + 19, %arg8 + 7] : memref<1x123x194xf64>
    }
  }
  return
}

// Better than MLIR: a loop that only reads (through a non-affine memref.load) carries no
// dependence; MLIR gives up on non-affine accesses and keeps the affine.for.
// CHECK-LABEL: func.func @non_affine_load
// CHECK:         affine.parallel (%i) = (0) to (100) {
func.func @non_affine_load() {
  %0 = memref.alloc() : memref<100 x f32>
  affine.for %i = 0 to 100 {
    memref.load %0[%i] : memref<100 x f32>
  }
  return
}
