// RUN: affine-opt %s -split-input-file -allow-unregistered-dialect -affine-loop-permute="permutation=1,0" -explain 2>&1 | filecheck %s

// A carried dependence whose distance (1, -1) interchange would reverse: refused, unchanged.

// CHECK: remark: affine-loop-permute: refused: cannot permute (%i, %j) to (%j, %i): RAW %A: S1 (affine.store at {{.*}}) -> S0 (affine.load at {{.*}}) carried by %i, distance (1, -1): the pair at distance (1, -1) would run in reverse order, at distance (-1, 1)
// CHECK-LABEL: func.func @skewed
// CHECK-NEXT:    affine.for %i = 1 to 10 {
// CHECK-NEXT:      affine.for %j = 0 to 9 {
func.func @skewed(%A: memref<10x10xf32>) {
  affine.for %i = 1 to 10 {
    affine.for %j = 0 to 9 {
      %v = affine.load %A[%i - 1, %j + 1] : memref<10x10xf32>
      affine.store %v, %A[%i, %j] : memref<10x10xf32>
    }
  }
  return
}

// -----

// Distance (1, 1): interchange keeps it positive.

// CHECK: remark: affine-loop-permute: applied: permuted (%i, %j) to (%j, %i)
// CHECK-LABEL: func.func @diagonal
// CHECK-NEXT:    affine.for %j = 1 to 10 {
// CHECK-NEXT:      affine.for %i = 1 to 10 {
func.func @diagonal(%A: memref<10x10xf32>) {
  affine.for %i = 1 to 10 {
    affine.for %j = 1 to 10 {
      %v = affine.load %A[%i - 1, %j - 1] : memref<10x10xf32>
      affine.store %v, %A[%i, %j] : memref<10x10xf32>
    }
  }
  return
}

// -----

// A triangular nest gets new bounds (MLIR's permuteLoops would not rewrite them).

// CHECK: remark: affine-loop-permute: applied: permuted (%i, %j) to (%j, %i)
// CHECK-NEXT: #[[LB:.*]] = affine_map<(d0) -> (0, d0)>
// CHECK-LABEL: func.func @triangular
// CHECK-NEXT:    affine.for %j = 0 to 8 {
// CHECK-NEXT:      affine.for %i = max #[[LB]](%j) to 8 {
// CHECK-NEXT:        affine.load %A[%i, %j]
func.func @triangular(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %v = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %v, %A[%j, %i] : memref<8x8xf32>
    }
  }
  return
}

// -----

// MLIR's @check_validity_with_iter_args: an innermost loop with iter_args keeps its place
// (here it stays innermost: the two outer loops are interchanged).

// CHECK: remark: affine-loop-permute: applied: permuted (%arg0, %arg1) to (%arg1, %arg0)
// CHECK-LABEL: func.func @check_validity_with_iter_args
// CHECK-NEXT:    %buf = memref.alloc()
// CHECK:         affine.for %arg1 = 0 to %U1 {
// CHECK-NEXT:      affine.for %arg0 = 0 to %U0 {
// CHECK-NEXT:        affine.for %arg2 = 0 to %U2 iter_args(
func.func @check_validity_with_iter_args(%U0 : index, %U1 : index, %U2 : index) {
  %buf = memref.alloc() : memref<100x100xf32>
  %cst = arith.constant 1.0 : f32
  affine.for %arg0 = 0 to %U0 {
    affine.for %arg1 = 0 to %U1 {
      %res = affine.for %arg2 = 0 to %U2 iter_args(%iter1 = %cst) -> (f32) {
        %val = affine.load %buf[%arg0 + 10, %arg1 + 20] : memref<100x100xf32>
        %newVal = arith.addf %val, %cst : f32
        affine.store %newVal, %buf[%arg0 + 10, %arg1 + 20] : memref<100x100xf32>
        %newVal2 = arith.addf %newVal, %iter1 : f32
        affine.yield %iter1 : f32
      }
    }
  }
  return
}

// -----

// MLIR's @permute: "foo" and "bar" have unknown effects; MLIR's test pass reorders them
// (it checks nothing by default), ours refuses.

// CHECK: remark: affine-loop-permute: refused: cannot permute (%arg0, %arg1) to (%arg1, %arg0): 'foo' at {{.*}} has unknown side effects
// CHECK-LABEL: func.func @permute
// CHECK:         affine.for %arg0 = 0 to %U0 {
// CHECK-NEXT:      affine.for %arg1 = 0 to %U1 {
func.func @permute(%U0 : index, %U1 : index, %U2 : index) {
  "abc"() : () -> ()
  affine.for %arg0 = 0 to %U0 {
    affine.for %arg1 = 0 to %U1 {
      affine.for %arg2 = 0 to %U2 {
        "foo"(%arg0, %arg1) : (index, index) -> ()
        "bar"(%arg2) : (index) -> ()
      }
    }
  }
  "xyz"() : () -> ()
  return
}
