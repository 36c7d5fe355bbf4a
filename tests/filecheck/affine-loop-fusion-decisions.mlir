// RUN: affine-opt %s -split-input-file -affine-loop-fusion -explain 2>&1 | filecheck %s

// Legality: every fusion decision is a remark on stderr (before the function's text), a
// refusal naming the dependence, the nest or the cost that forbids it. Each input was run
// through the interpreter before and after the pass on random integer inputs (same arrays);
// for the refused cases the fused program was worked out by hand to read a value before it
// is (re)computed. "MLIR:" notes compare with `mlir-opt --affine-loop-fusion` (iree-opt,
// LLVM 24.0.0git) on the same input; where MLIR fuses a case refused here, its output was
// run through our interpreter and computes different arrays.

// WAR: the consumer writes %A[%i1 + 1], which the producer's next iteration reads. Fused,
// iteration %i1 + 1 would read the value iteration %i1 just stored: refused, the WAR named.
// MLIR: fuses, and %A comes out different.
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: at depth 1: the consumer writes %A, which the producer accesses (WAR on %A from the producer's 'affine.load' at {{.*}}:[[# @LINE + 6]]:5 to the consumer's 'affine.store' at {{.*}}:[[# @LINE + 12]]:5)
// CHECK-LABEL: func.func @should_not_fuse_war_overwrite_ahead
// CHECK:         affine.for %i0 = 0 to 10 {
func.func @should_not_fuse_war_overwrite_ahead(%A: memref<11xf32>, %D: memref<10xf32>) {
  %b = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %v0 = affine.load %A[%i0] : memref<11xf32>
    affine.store %v0, %b[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v1 = affine.load %b[%i1] : memref<10xf32>
    %v2 = arith.addf %v1, %v1 : f32
    affine.store %v2, %A[%i1 + 1] : memref<11xf32>
    affine.store %v2, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// The same WAR the other way round: the consumer overwrites %A[%i1], which the producer
// read in this iteration or earlier ones. Legal: fused, with a one-element %b. MLIR: same.
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: {{.*}}; %b -> private memref<1xf32>
// CHECK-LABEL: func.func @fuse_war_overwrite_behind
// CHECK-NEXT:    %b_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %v0 = affine.load %A[%i1 + 1] : memref<11xf32>
// CHECK-NEXT:      affine.store %v0, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %v1 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %v2 = arith.addf %v1, %v1 : f32
// CHECK-NEXT:      affine.store %v2, %A[%i1] : memref<11xf32>
// CHECK-NEXT:      affine.store %v2, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
func.func @fuse_war_overwrite_behind(%A: memref<11xf32>, %D: memref<10xf32>) {
  %b = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %v0 = affine.load %A[%i0 + 1] : memref<11xf32>
    affine.store %v0, %b[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v1 = affine.load %b[%i1] : memref<10xf32>
    %v2 = arith.addf %v1, %v1 : f32
    affine.store %v2, %A[%i1] : memref<11xf32>
    affine.store %v2, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// The consumer reads %C in reverse and updates %A in place: its iteration %i1 needs the
// producer's iteration 9 - %i1, which reads %A[9 - %i1], overwritten by the consumer's
// earlier iteration 9 - %i1 once %i1 > 4: refused (WAR), and not siblings either.
// MLIR: fuses, and %A comes out different (its upper half).
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: at depth 1: the consumer writes %A, which the producer accesses (WAR on %A from the producer's 'affine.load' {{.*}} to the consumer's 'affine.store' {{.*}})
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: they are not siblings: WAR on %A from 'affine.for' {{.*}} to 'affine.for' {{.*}}
// CHECK-LABEL: func.func @should_not_fuse_reversed_read_after_overwrite
// CHECK:         affine.for %i0 = 0 to 10 {
// CHECK:         affine.for %i1 = 0 to 10 {
func.func @should_not_fuse_reversed_read_after_overwrite(%A: memref<10xf32>, %C: memref<10xf32>) {
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %C[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %a = affine.load %A[%i1] : memref<10xf32>
    %c = affine.load %C[9 - %i1] : memref<10xf32>
    %b = arith.addf %a, %c : f32
    affine.store %b, %A[%i1] : memref<10xf32>
  }
  return
}

// -----

// A prefix sum (each producer iteration reads the previous one's result) consumed in
// reverse: the first consumer iteration would need the last producer iteration before the
// others. Refused: the producer's iterations depend on each other. MLIR: fuses, and %D
// comes out different.
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: at depth 1: the producer's iterations depend on each other (RAW on %t from 'affine.store' {{.*}} to 'affine.load' {{.*}} between different iterations of (%i0))
// CHECK-LABEL: func.func @should_not_fuse_prefix_sum_reversed
// CHECK:         affine.for %i0 = 1 to 11 {
// CHECK:         affine.for %i1 = 0 to 10 {
func.func @should_not_fuse_prefix_sum_reversed(%A: memref<10xf32>, %D: memref<10xf32>) {
  %t = memref.alloc() : memref<11xf32>
  %zero = arith.constant 0.0 : f32
  affine.store %zero, %t[0] : memref<11xf32>
  affine.for %i0 = 1 to 11 {
    %p = affine.load %t[%i0 - 1] : memref<11xf32>
    %a = affine.load %A[%i0 - 1] : memref<10xf32>
    %s = arith.addf %p, %a : f32
    affine.store %s, %t[%i0] : memref<11xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v = affine.load %t[10 - %i1] : memref<11xf32>
    affine.store %v, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// The same prefix sum consumed in order: each producer iteration runs once, in its original
// order, inside the consumer iteration that reads it. Fused; %t keeps its size (an iteration
// reads what the previous one stored). MLIR: same structure.
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i1 at {{.*}} at depth 1: slice of %i0 in %i1 at depth 1 (through %t): %i0 in [%i1 + 1, %i1 + 2); 1 iteration per consumer iteration, computation ratio 0.00; exact
// CHECK-LABEL: func.func @fuse_prefix_sum_in_order
// CHECK:         affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %p = affine.load %t[%i1] : memref<11xf32>
// CHECK-NEXT:      %a = affine.load %A[%i1] : memref<10xf32>
// CHECK-NEXT:      %s = arith.addf %p, %a : f32
// CHECK-NEXT:      affine.store %s, %t[%i1 + 1] : memref<11xf32>
// CHECK-NEXT:      %v = affine.load %t[%i1 + 1] : memref<11xf32>
// CHECK-NEXT:      affine.store %v, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
func.func @fuse_prefix_sum_in_order(%A: memref<10xf32>, %D: memref<10xf32>) {
  %t = memref.alloc() : memref<11xf32>
  %zero = arith.constant 0.0 : f32
  affine.store %zero, %t[0] : memref<11xf32>
  affine.for %i0 = 1 to 11 {
    %p = affine.load %t[%i0 - 1] : memref<11xf32>
    %a = affine.load %A[%i0 - 1] : memref<10xf32>
    %s = arith.addf %p, %a : f32
    affine.store %s, %t[%i0] : memref<11xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v = affine.load %t[%i1 + 1] : memref<11xf32>
    affine.store %v, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// MLIR's should_not_fuse_would_create_cycle (with %a and %c as arguments and the middle
// nest's load stored): %i0 -> %i1 (WAR on %a) and %i1 -> %i2 (WAR on %c), so the fused
// nest can go neither where %i2 is nor where %i0 is. Refused, both dependences named.
// MLIR: same (nothing fuses).
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i2 at {{.*}}: a nest between them depends on the producer (WAR on %a from 'affine.for' {{.*}} to 'affine.for' {{.*}}) and the consumer depends on one between them (WAR on %c from 'affine.for' {{.*}} to 'affine.for' {{.*}})
// CHECK-LABEL: func.func @should_not_fuse_would_create_cycle
// CHECK:         affine.for %i0 = 0 to 10 {
// CHECK:         affine.for %i1 = 0 to 10 {
// CHECK:         affine.for %i2 = 0 to 10 {
func.func @should_not_fuse_would_create_cycle(%a: memref<10xf32>, %c: memref<10xf32>, %D: memref<10xf32>) {
  %b = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    %v0 = affine.load %a[%i0] : memref<10xf32>
    affine.store %v0, %b[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    affine.store %cf7, %a[%i1] : memref<10xf32>
    %v1 = affine.load %c[%i1] : memref<10xf32>
    affine.store %v1, %D[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %v2 = affine.load %b[%i2] : memref<10xf32>
    affine.store %v2, %c[%i2] : memref<10xf32>
  }
  return
}

// -----

// An intervening store: %m[3] is overwritten between the nests and the consumer must see
// that value, so the producer's store of %m[3] cannot move after it. Refused, naming the
// WAW and the RAW through the store. MLIR: same (nothing fuses).
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: a nest between them depends on the producer (WAW on %m from 'affine.for' {{.*}} to 'affine.store' {{.*}}) and the consumer depends on one between them (RAW on %m from 'affine.store' {{.*}} to 'affine.for' {{.*}})
// CHECK-LABEL: func.func @should_not_fuse_intervening_store
// CHECK:         affine.for %i0 = 0 to 10 {
// CHECK:         affine.store %cf7, %m[3] : memref<10xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
func.func @should_not_fuse_intervening_store(%A: memref<10xf32>, %D: memref<10xf32>) {
  %m = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    affine.store %a, %m[%i0] : memref<10xf32>
  }
  affine.store %cf7, %m[3] : memref<10xf32>
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    affine.store %v0, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// A call between the nests overwrites %m (reverse_copy(%E, %m)): refused, the call taken as
// reading and writing its memref operands. MLIR: fuses, placing the fused nest before the
// call, so the consumer reads the producer's values instead of the call's: %D differs.
// CHECK: remark: affine-loop-fusion: refused: cannot fuse %i0 at {{.*}} into %i1 at {{.*}}: a nest between them depends on the producer (WAW on %m from 'affine.for' {{.*}} to 'func.call' {{.*}}) and the consumer depends on one between them (RAW on %m from 'func.call' {{.*}} to 'affine.for' {{.*}})
// CHECK-LABEL: func.func @should_not_fuse_call_writing_between
// CHECK:         affine.for %i0 = 0 to 10 {
// CHECK:         func.call @reverse_copy(%E, %m)
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
func.func @should_not_fuse_call_writing_between(%A: memref<10xf32>, %D: memref<10xf32>, %E: memref<10xf32>) {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %m[%i0] : memref<10xf32>
  }
  func.call @reverse_copy(%E, %m) : (memref<10xf32>, memref<10xf32>) -> ()
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    %v1 = arith.addf %v0, %v0 : f32
    affine.store %v1, %D[%i1] : memref<10xf32>
  }
  return
}
func.func @reverse_copy(%src: memref<10xf32>, %dst: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %v = affine.load %src[9 - %i] : memref<10xf32>
    affine.store %v, %dst[%i] : memref<10xf32>
  }
  return
}

// -----

// WAW: %i1 overwrites what %i0 stored; the consumer reads %i1's values. %i1 fuses into
// %i2 first, then %i0 into the result (its stores come first in each iteration, so the
// WAW order holds); one element of %m remains (MLIR's should_fuse_producer_consumer, whose
// comment expected only the second fusion). MLIR: same structure.
// CHECK: remark: affine-loop-fusion: applied: fused %i1 at {{.*}} into %i2 at {{.*}} at depth 1: {{.*}}exact
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i2 at {{.*}} at depth 1: {{.*}}; %m -> private memref<1xf32>
// CHECK-LABEL: func.func @should_fuse_producer_consumer
// CHECK-NEXT:    %m_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      %x = affine.load %A[%i2] : memref<10xf32>
// CHECK-NEXT:      affine.store %x, %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %y = affine.load %B[%i2] : memref<10xf32>
// CHECK-NEXT:      affine.store %y, %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %v1 = affine.load %m_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v1, %D[%i2] : memref<10xf32>
// CHECK-NEXT:    }
func.func @should_fuse_producer_consumer(%A: memref<10xf32>, %B: memref<10xf32>, %D: memref<10xf32>) {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %x = affine.load %A[%i0] : memref<10xf32>
    affine.store %x, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %y = affine.load %B[%i1] : memref<10xf32>
    affine.store %y, %m[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %v1 = affine.load %m[%i2] : memref<10xf32>
    affine.store %v1, %D[%i2] : memref<10xf32>
  }
  return
}

// -----

// MLIR's should_not_fuse_if_op_in_loop_nest_between_src_and_dest, with %A as input and %D
// as output: the middle nest overwrites %a[%i1] for %i1 >= 5 (an intervening store that
// does not forbid fusion). The exact dependences allow
// both fusions (middle into consumer, then producer into the result: in each iteration the
// producer's store, then the conditional overwrite, then the read). MLIR refuses both
// (an affine.if in a nest between producer and consumer).
// CHECK: remark: affine-loop-fusion: applied: fused %i1 at {{.*}} into %i3 at {{.*}} at depth 1
// CHECK: remark: affine-loop-fusion: applied: fused %i0 at {{.*}} into %i3 at {{.*}} at depth 1: {{.*}}; %a -> private memref<1xf32>
// CHECK-LABEL: func.func @fuse_conditional_overwrite_between
// CHECK:         %a_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i3 = 0 to 10 {
// CHECK-NEXT:      %x = affine.load %A[%i3] : memref<10xf32>
// CHECK-NEXT:      affine.store %x, %a_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.if #set(%i3) {
// CHECK-NEXT:        affine.store %cf7, %a_private[0] : memref<1xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %v0 = affine.load %a_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v0, %D[%i3] : memref<10xf32>
// CHECK-NEXT:    }
func.func @fuse_conditional_overwrite_between(%A: memref<10xf32>, %D: memref<10xf32>) {
  %a = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    %x = affine.load %A[%i0] : memref<10xf32>
    affine.store %x, %a[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    affine.if affine_set<(d0) : (d0 - 5 >= 0)>(%i1) {
      affine.store %cf7, %a[%i1] : memref<10xf32>
    }
  }
  affine.for %i3 = 0 to 10 {
    %v0 = affine.load %a[%i3] : memref<10xf32>
    affine.store %v0, %D[%i3] : memref<10xf32>
  }
  return
}
