// RUN: affine-opt %s -split-input-file -test-memref-dependence-check 2>&1 | filecheck %s

// Ported from MLIR's mlir/test/Dialect/Affine/memref-dependence-check.mlir; the remarks are MLIR's.
// affine.if guards (then/else, partial overlap, interleaved with loops, with symbols, empty set).

#set = affine_set<(d0): (d0 - 50 >= 0)>

func.func @test_affine_for_if_same_block() {
  %0 = memref.alloc() : memref<100xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 100 {
    affine.if #set(%i0) {
      %1 = affine.load %0[%i0] : memref<100xf32>
      // CHECK:      .mlir:14:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:14:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:14:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:14:7: remark: dependence from 0 to 1 at depth 2 = true
      affine.store %cf7, %0[%i0] : memref<100xf32>
      // CHECK:      .mlir:19:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:19:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:19:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:19:7: remark: dependence from 1 to 1 at depth 2 = false
    }
  }

  return
}

// -----

#set = affine_set<(d0): (d0 - 50 >= 0)>

func.func @test_affine_for_if_separated() {
  %0 = memref.alloc() : memref<100xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 10 {
    affine.if #set(%i0) {
      %1 = affine.load %0[%i0] : memref<100xf32>
      // CHECK:      .mlir:40:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:40:7: remark: dependence from 0 to 1 at depth 2 = false
    } else {
      affine.store %cf7, %0[%i0] : memref<100xf32>
      // CHECK:      .mlir:46:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:46:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:46:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:46:7: remark: dependence from 1 to 1 at depth 2 = false
    }
  }

  return
}

// -----

#set1 = affine_set<(d0): (  d0 - 25 >= 0)>
#set2 = affine_set<(d0): (- d0 + 75 >= 0)>

func.func @test_affine_for_if_partially_joined() {
  %0 = memref.alloc() : memref<100xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 100 {
    affine.if #set1(%i0) {
      %1 = affine.load %0[%i0] : memref<100xf32>
      // CHECK:      .mlir:68:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:68:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:68:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:68:7: remark: dependence from 0 to 1 at depth 2 = true
    }
    affine.if #set2(%i0) {
      affine.store %cf7, %0[%i0] : memref<100xf32>
      // CHECK:      .mlir:75:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:75:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:75:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:75:7: remark: dependence from 1 to 1 at depth 2 = false
    }
  }

  return
}

// -----

#set1 = affine_set<(d0): (d0 - 50 >= 0)>
#set2 = affine_set<(d0, d1): (d0 - 75 >= 0, d1 - 50 >= 0)>

func.func @test_interleaved_affine_for_if() {
  %0 = memref.alloc() : memref<100x100xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 100 {
    affine.if #set1(%i0) {
      affine.for %i1 = 0 to 100 {
        %1 = affine.load %0[%i0, %i1] : memref<100x100xf32>
        // CHECK:      .mlir:98:9: remark: dependence from 0 to 0 at depth 1 = false
        // CHECK-NEXT: .mlir:98:9: remark: dependence from 0 to 0 at depth 2 = false
        // CHECK-NEXT: .mlir:98:9: remark: dependence from 0 to 0 at depth 3 = false
        // CHECK-NEXT: .mlir:98:9: remark: dependence from 0 to 1 at depth 1 = false
        // CHECK-NEXT: .mlir:98:9: remark: dependence from 0 to 1 at depth 2 = false
        // CHECK-NEXT: .mlir:98:9: remark: dependence from 0 to 1 at depth 3 = true

        affine.if #set2(%i0, %i1) {
          affine.store %cf7, %0[%i0, %i1] : memref<100x100xf32>
          // CHECK:      .mlir:107:11: remark: dependence from 1 to 0 at depth 1 = false
          // CHECK-NEXT: .mlir:107:11: remark: dependence from 1 to 0 at depth 2 = false
          // CHECK-NEXT: .mlir:107:11: remark: dependence from 1 to 0 at depth 3 = false
          // CHECK-NEXT: .mlir:107:11: remark: dependence from 1 to 1 at depth 1 = false
          // CHECK-NEXT: .mlir:107:11: remark: dependence from 1 to 1 at depth 2 = false
          // CHECK-NEXT: .mlir:107:11: remark: dependence from 1 to 1 at depth 3 = false
        }
      }
    }
  }

  return
}

// -----

#set1 = affine_set<(d0)[s0]: (  d0 - s0 floordiv 2 >= 0)>
#set2 = affine_set<(d0):     (- d0 +            51 >= 0)>

func.func @test_interleaved_affine_for_if_symbols() {
  %0 = memref.alloc() : memref<101xf32>
  %c0 = arith.constant 0 : index
  %N = memref.dim %0, %c0 : memref<101xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 101 {
    affine.if #set1(%i0)[%N] {
      %1 = affine.load %0[%i0] : memref<101xf32>
      // CHECK:      .mlir:135:7: remark: dependence from 0 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:135:7: remark: dependence from 0 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:135:7: remark: dependence from 0 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:135:7: remark: dependence from 0 to 1 at depth 2 = true
    }

    affine.if #set2(%i0) {
      affine.store %cf7, %0[%i0] : memref<101xf32>
      // CHECK:      .mlir:143:7: remark: dependence from 1 to 0 at depth 1 = false
      // CHECK-NEXT: .mlir:143:7: remark: dependence from 1 to 0 at depth 2 = false
      // CHECK-NEXT: .mlir:143:7: remark: dependence from 1 to 1 at depth 1 = false
      // CHECK-NEXT: .mlir:143:7: remark: dependence from 1 to 1 at depth 2 = false
    }
  }

  return
}

// -----

func.func @affine_if_no_dependence() {
  %c1 = arith.constant 1 : index
  %alloc = memref.alloc() : memref<15xi1>
  %true = arith.constant true
  affine.store %true, %alloc[%c1] : memref<15xi1>
  // CHECK:      .mlir:160:3: remark: dependence from 0 to 0 at depth 1 = false
  // CHECK-NEXT: .mlir:160:3: remark: dependence from 0 to 1 at depth 1 = false
  affine.if affine_set<(d0, d1, d2, d3) : ((d0 + 1) mod 8 >= 0, d0 * -8 >= 0)>(%c1, %c1, %c1, %c1){
    %265 = affine.load %alloc[%c1] : memref<15xi1>
    // CHECK:      .mlir:164:5: remark: dependence from 1 to 0 at depth 1 = false
    // CHECK-NEXT: .mlir:164:5: remark: dependence from 1 to 1 at depth 1 = false
  }
  return
}
