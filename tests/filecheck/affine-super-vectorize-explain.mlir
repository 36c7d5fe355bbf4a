// RUN: affine-opt %s -split-input-file -affine-super-vectorize -explain -o /dev/null 2>&1 | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-super-vectorize | filecheck %s --check-prefix=SAME

// Refusals, each with its reason naming the loop, the op or dependence and their locations;
// the IR is left as it was (the second run finds no vector op anywhere).
// SAME-NOT: vector

// A stride-2 subscript would need a gather.
// CHECK: {{.*}}:11:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:11:3 by 8: 'affine.load' at {{.*}}:12:5 would need a gather/scatter: %A[%i * 2] is strided in %i (stride 2)
func.func @strided(%A: memref<64xf32>, %B: memref<32xf32>) {
  affine.for %i = 0 to 32 {
    %x = affine.load %A[%i * 2] : memref<64xf32>
    affine.store %x, %B[%i] : memref<32xf32>
  }
  return
}

// -----

// %i in a dimension other than the last would need a gather.
// CHECK: {{.*}}:23:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:23:3 by 8: 'affine.load' at {{.*}}:24:5 would need a gather/scatter: %A[%i, 0] varies with %i in a dimension other than the last
func.func @outer_dim(%A: memref<32x4xf32>, %B: memref<32xf32>) {
  affine.for %i = 0 to 32 {
    %x = affine.load %A[%i, 0] : memref<32x4xf32>
    affine.store %x, %B[%i] : memref<32xf32>
  }
  return
}

// -----

// A[%i + 1] = f(A[%i]): a RAW dependence carried by %i (distance 1).
// CHECK: {{.*}}:35:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:35:3 by 8: a dependence between its iterations forbids it: RAW %A: S1 (affine.store at {{.*}}:38:5) -> S0 (affine.load at {{.*}}:36:5) carried by %i, distance (1)
func.func @carried(%A: memref<33xf32>) {
  affine.for %i = 0 to 32 {
    %x = affine.load %A[%i] : memref<33xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %A[%i + 1] : memref<33xf32>
  }
  return
}

// -----

// A sum through memory: the store to S[0] has the same address in every iteration.
// CHECK: {{.*}}:48:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:48:3 by 8: 'affine.store' at {{.*}}:52:5 writes %S at the same address in every iteration of %i
func.func @memory_sum(%A: memref<32xf32>, %S: memref<1xf32>) {
  affine.for %i = 0 to 32 {
    %x = affine.load %A[%i] : memref<32xf32>
    %s = affine.load %S[0] : memref<1xf32>
    %t = arith.addf %s, %x : f32
    affine.store %t, %S[0] : memref<1xf32>
  }
  return
}

// -----

// iter_args over %j: a reduction, refused without vectorize-reductions.
// CHECK: {{.*}}:62:3: remark: affine-super-vectorize: note: nest %j not vectorized; deepest candidate: cannot vectorize %j at {{.*}}:62:3 by 8: reduction over %j needs vectorize-reductions (iter_arg %acc)
func.func @rowsum(%A: memref<32xf32>, %init: f32) -> f32 {
  %sum = affine.for %j = 0 to 32 iter_args(%acc = %init) -> (f32) {
    %a = affine.load %A[%j] : memref<32xf32>
    %t = arith.addf %acc, %a : f32
    affine.yield %t : f32
  }
  return %sum : f32
}

// -----

// The affine.if condition depends on %i.
// CHECK: {{.*}}:75:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:75:3 by 8: the condition of 'affine.if' at {{.*}}:76:5 depends on %i
func.func @varying_condition(%A: memref<32xf32>) {
  affine.for %i = 0 to 32 {
    affine.if affine_set<(d0) : (d0 - 16 >= 0)>(%i) {
      %x = affine.load %A[%i] : memref<32xf32>
      %y = arith.addf %x, %x : f32
      affine.store %y, %A[%i] : memref<32xf32>
    }
  }
  return
}

// -----

// The IV used as a value (index_cast), not as a subscript.
// CHECK: {{.*}}:90:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:90:3 by 8: 'arith.index_cast' at {{.*}}:91:5 uses %i, an index value that depends on %i (only access subscripts may)
func.func @index_value(%A: memref<32xi32>) {
  affine.for %i = 0 to 32 {
    %v = arith.index_cast %i : index to i32
    affine.store %v, %A[%i] : memref<32xi32>
  }
  return
}

// -----

// The bounds of %j depend on %i, and %j indexes the outer dimension of A: neither is vectorized.
// CHECK: {{.*}}:102:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %j at {{.*}}:103:5 by 8: 'affine.load' at {{.*}}:104:7 would need a gather/scatter: %A[%j, %i] varies with %j in a dimension other than the last
func.func @triangular(%A: memref<32x32xf32>) {
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) {
      %x = affine.load %A[%j, %i] : memref<32x32xf32>
      affine.store %x, %A[%j, %i] : memref<32x32xf32>
    }
  }
  return
}

// -----

// A min upper bound with a trip count that may not be a multiple of 8: no remainder loop can be written.
// CHECK: {{.*}}:116:3: remark: affine-super-vectorize: note: nest %i not vectorized; deepest candidate: cannot vectorize %i at {{.*}}:116:3 by 8: its upper bound is a min of 2 results and its trip count may not be a multiple of 8: the remainder loop's lower bound cannot be written
func.func @min_bound(%A: memref<32xf32>, %N: index) {
  affine.for %i = 0 to min affine_map<()[s0] -> (s0, 32)>()[%N] {
    %x = affine.load %A[%i] : memref<32xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %A[%i] : memref<32xf32>
  }
  return
}
