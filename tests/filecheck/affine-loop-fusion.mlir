// RUN: affine-opt %s -split-input-file -affine-loop-fusion | filecheck %s

// Producer-consumer fusion at the default options (compute-tolerance 0.30, greedy). Most
// inputs are MLIR's mlir/test/Dialect/Affine/loop-fusion.mlir cases with their results
// stored to function arguments (MLIR's inputs mostly end in dead loads, so nothing would be
// observable); every case was run through the interpreter before and after the pass on
// random integer inputs and computes the same arrays. "MLIR:" notes compare with
// `mlir-opt --affine-loop-fusion` (iree-opt) on the same input. Slice loops that run once
// are replaced by their bodies with the IVs substituted into the accesses (MLIR leaves an
// `affine.apply` per promoted loop, dead or not).

// A RAW pair fuses for locality; the intermediate shrinks to one element (MLIR's
// should_fuse_raw_dep_for_locality). MLIR: same, except that the dealloc of %m makes MLIR
// keep memref<10xf32> (it does not privatize a memref with a non-affine user).
// CHECK-LABEL: func.func @should_fuse_raw_dep_for_locality
// CHECK-NEXT:    %m_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %j = 0 to 10 {
// CHECK-NEXT:      %a = affine.load %A[%j] : memref<10xf32>
// CHECK-NEXT:      %b = arith.addf %a, %a : f32
// CHECK-NEXT:      affine.store %b, %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %v = affine.load %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %w = arith.mulf %v, %v : f32
// CHECK-NEXT:      affine.store %w, %C[%j] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %m_private : memref<1xf32>
// CHECK-NEXT:    return
func.func @should_fuse_raw_dep_for_locality(%A: memref<10xf32>, %C: memref<10xf32>) {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    %b = arith.addf %a, %a : f32
    affine.store %b, %m[%i] : memref<10xf32>
  }
  affine.for %j = 0 to 10 {
    %v = affine.load %m[%j] : memref<10xf32>
    %w = arith.mulf %v, %v : f32
    affine.store %w, %C[%j] : memref<10xf32>
  }
  memref.dealloc %m : memref<10xf32>
  return
}

// -----

// A chain of three: initialisation -> row reduction -> point-wise copy (MLIR's
// should_fuse_reduction_to_pointwise with the reduction initialised). The whole reduction
// loop %i1 goes into each iteration of the consumer, and %b becomes a one-element
// accumulator. MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_reduction_to_pointwise
// CHECK:         %b_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      affine.store %zero, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.for %i1 = 0 to 10 {
// CHECK-NEXT:        %v0 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:        %v1 = affine.load %A[%i2, %i1] : memref<10x10xf32>
// CHECK-NEXT:        %v3 = arith.addf %v0, %v1 : f32
// CHECK-NEXT:        affine.store %v3, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %v4 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v4, %C[%i2] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_reduction_to_pointwise(%A: memref<10x10xf32>, %C: memref<10xf32>) {
  %b = memref.alloc() : memref<10xf32>
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 10 {
    affine.store %zero, %b[%i] : memref<10xf32>
  }
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %v0 = affine.load %b[%i0] : memref<10xf32>
      %v1 = affine.load %A[%i0, %i1] : memref<10x10xf32>
      %v3 = arith.addf %v0, %v1 : f32
      affine.store %v3, %b[%i0] : memref<10xf32>
    }
  }
  affine.for %i2 = 0 to 10 {
    %v4 = affine.load %b[%i2] : memref<10xf32>
    affine.store %v4, %C[%i2] : memref<10xf32>
  }
  return
}

// -----

// A point-wise producer fuses into a reduction consumer at depth 2 (one producer iteration
// per consumer iteration; the accumulator %C stays where it is). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_pointwise_to_reduction
// CHECK-NEXT:    %t_private = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      affine.for %j2 = 0 to 10 {
// CHECK-NEXT:        %a = affine.load %A[%i2, %j2] : memref<10x10xf32>
// CHECK-NEXT:        %s = arith.mulf %a, %a : f32
// CHECK-NEXT:        affine.store %s, %t_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %c = affine.load %C[%i2] : memref<10xf32>
// CHECK-NEXT:        %v = affine.load %t_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %s_0 = arith.addf %c, %v : f32
// CHECK-NEXT:        affine.store %s_0, %C[%i2] : memref<10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_pointwise_to_reduction(%A: memref<10x10xf32>, %C: memref<10xf32>) {
  %t = memref.alloc() : memref<10x10xf32>
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %a = affine.load %A[%i, %j] : memref<10x10xf32>
      %s = arith.mulf %a, %a : f32
      affine.store %s, %t[%i, %j] : memref<10x10xf32>
    }
  }
  affine.for %i2 = 0 to 10 {
    affine.for %j2 = 0 to 10 {
      %c = affine.load %C[%i2] : memref<10xf32>
      %v = affine.load %t[%i2, %j2] : memref<10x10xf32>
      %s = arith.addf %c, %v : f32
      affine.store %s, %C[%i2] : memref<10xf32>
    }
  }
  return
}

// -----

// Two producers (of %a and of %b) fuse into their common consumer, each intermediate
// becoming one element (MLIR's should_fuse_all_loops). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_all_loops
// CHECK-NEXT:    %b_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    %a_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      %x = affine.load %A[%i2] : memref<10xf32>
// CHECK-NEXT:      %y = arith.addf %x, %x : f32
// CHECK-NEXT:      affine.store %y, %a_private[0] : memref<1xf32>
// CHECK-NEXT:      %x_0 = affine.load %B[%i2] : memref<10xf32>
// CHECK-NEXT:      %y_0 = arith.mulf %x_0, %x_0 : f32
// CHECK-NEXT:      affine.store %y_0, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %v0 = affine.load %a_private[0] : memref<1xf32>
// CHECK-NEXT:      %v1 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %s = arith.subf %v0, %v1 : f32
// CHECK-NEXT:      affine.store %s, %C[%i2] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_all_loops(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>) {
  %a = memref.alloc() : memref<10xf32>
  %b = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %x = affine.load %A[%i0] : memref<10xf32>
    %y = arith.addf %x, %x : f32
    affine.store %y, %a[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %x = affine.load %B[%i1] : memref<10xf32>
    %y = arith.mulf %x, %x : f32
    affine.store %y, %b[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %v0 = affine.load %a[%i2] : memref<10xf32>
    %v1 = affine.load %b[%i2] : memref<10xf32>
    %s = arith.subf %v0, %v1 : f32
    affine.store %s, %C[%i2] : memref<10xf32>
  }
  return
}

// -----

// A chain of three 2-d nests with a transposed read in the middle: %a and %b both become
// 1x1 (MLIR's should_fuse_loop_nest). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_loop_nest
// CHECK:         %a_private = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:    %b_private = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:    affine.for %i4 = 0 to 10 {
// CHECK-NEXT:      affine.for %i5 = 0 to 10 {
// CHECK-NEXT:        %x = affine.load %A[%i5, %i4] : memref<10x10xf32>
// CHECK-NEXT:        %y = arith.addf %x, %cf7 : f32
// CHECK-NEXT:        affine.store %y, %a_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %v0 = affine.load %a_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        affine.store %v0, %b_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %v1 = affine.load %b_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %v2 = arith.mulf %v1, %v1 : f32
// CHECK-NEXT:        affine.store %v2, %C[%i4, %i5] : memref<10x10xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_loop_nest(%A: memref<10x10xf32>, %C: memref<10x10xf32>) {
  %a = memref.alloc() : memref<10x10xf32>
  %b = memref.alloc() : memref<10x10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %x = affine.load %A[%i0, %i1] : memref<10x10xf32>
      %y = arith.addf %x, %cf7 : f32
      affine.store %y, %a[%i0, %i1] : memref<10x10xf32>
    }
  }
  affine.for %i2 = 0 to 10 {
    affine.for %i3 = 0 to 10 {
      %v0 = affine.load %a[%i3, %i2] : memref<10x10xf32>
      affine.store %v0, %b[%i2, %i3] : memref<10x10xf32>
    }
  }
  affine.for %i4 = 0 to 10 {
    affine.for %i5 = 0 to 10 {
      %v1 = affine.load %b[%i4, %i5] : memref<10x10xf32>
      %v2 = arith.mulf %v1, %v1 : f32
      affine.store %v2, %C[%i4, %i5] : memref<10x10xf32>
    }
  }
  return
}

// -----

// A producer with two consumers that read all of it: it fuses into the first (it is then
// no longer needed on its own), and the result fuses into the second; one element of %m
// remains. MLIR: same structure.
// CHECK-LABEL: func.func @producer_with_two_consumers
// CHECK-NEXT:    %m_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      %a = affine.load %A[%i2] : memref<10xf32>
// CHECK-NEXT:      %b = arith.mulf %a, %a : f32
// CHECK-NEXT:      affine.store %b, %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %v0 = affine.load %m_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v0, %C[%i2] : memref<10xf32>
// CHECK-NEXT:      %v1 = affine.load %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %v2 = arith.addf %v1, %v1 : f32
// CHECK-NEXT:      affine.store %v2, %D[%i2] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @producer_with_two_consumers(%A: memref<10xf32>, %C: memref<10xf32>, %D: memref<10xf32>) {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    affine.store %v0, %C[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %v1 = affine.load %m[%i2] : memref<10xf32>
    %v2 = arith.addf %v1, %v1 : f32
    affine.store %v2, %D[%i2] : memref<10xf32>
  }
  return
}

// -----

// The nest in between has no dependence on either: the producer fuses past it (MLIR's
// should_fuse_across_intermediate_loop_with_no_deps). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_across_intermediate_loop_with_no_deps
// CHECK:         affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      affine.store %cf7, %C[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %b_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      %v0 = affine.load %A[%i2] : memref<10xf32>
// CHECK-NEXT:      affine.store %v0, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %v1 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v1, %D[%i2] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_across_intermediate_loop_with_no_deps(%A: memref<10xf32>, %C: memref<10xf32>,
                                                             %D: memref<10xf32>) {
  %b = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    %v0 = affine.load %A[%i0] : memref<10xf32>
    affine.store %v0, %b[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    affine.store %cf7, %C[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %v1 = affine.load %b[%i2] : memref<10xf32>
    affine.store %v1, %D[%i2] : memref<10xf32>
  }
  return
}

// -----

// The nest in between overwrites %A, which the producer reads (WAR), and the consumer does
// not depend on it: the fused nest takes the producer's place, before the overwrite (MLIR's
// should_fuse_and_move_to_preserve_war_dep). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_and_move_to_preserve_war_dep
// CHECK:         %b_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 10 {
// CHECK-NEXT:      %v0 = affine.load %A[%i2] : memref<10xf32>
// CHECK-NEXT:      affine.store %v0, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %v1 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v1, %D[%i2] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      affine.store %cf7, %A[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_and_move_to_preserve_war_dep(%A: memref<10xf32>, %D: memref<10xf32>) {
  %b = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    %v0 = affine.load %A[%i0] : memref<10xf32>
    affine.store %v0, %b[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    affine.store %cf7, %A[%i1] : memref<10xf32>
  }
  affine.for %i2 = 0 to 10 {
    %v1 = affine.load %b[%i2] : memref<10xf32>
    affine.store %v1, %D[%i2] : memref<10xf32>
  }
  return
}

// -----

// Producer and consumer index %a with a shift of one: the slice is the producer iteration
// (%i2 - 1, %i3 - 1) and %a becomes 1x1 (MLIR's should_fuse_loop_nests_with_shifts).
// MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_loop_nests_with_shifts
// CHECK:         %a_private = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:    affine.for %i2 = 1 to 10 {
// CHECK-NEXT:      affine.for %i3 = 1 to 10 {
// CHECK-NEXT:        affine.store %cf7, %a_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %v0 = affine.load %a_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        affine.store %v0, %C[%i2 - 1, %i3 - 1] : memref<9x9xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @should_fuse_loop_nests_with_shifts(%C: memref<9x9xf32>) {
  %a = memref.alloc() : memref<10x10xf32>
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 9 {
    affine.for %i1 = 0 to 9 {
      affine.store %cf7, %a[%i0 + 1, %i1 + 1] : memref<10x10xf32>
    }
  }
  affine.for %i2 = 1 to 10 {
    affine.for %i3 = 1 to 10 {
      %v0 = affine.load %a[%i2, %i3] : memref<10x10xf32>
      affine.store %v0, %C[%i2 - 1, %i3 - 1] : memref<9x9xf32>
    }
  }
  return
}

// -----

// The consumer visits the producer's 3-d space in another order: fused at depth 3 with a
// 1x1x1 buffer (MLIR's permute_and_fuse). MLIR: same structure.
// CHECK-LABEL: func.func @permute_and_fuse
// CHECK-NEXT:    %m_private = memref.alloc() : memref<1x1x1xf32>
// CHECK-NEXT:    affine.for %i3 = 0 to 30 {
// CHECK-NEXT:      affine.for %i4 = 0 to 10 {
// CHECK-NEXT:        affine.for %i5 = 0 to 20 {
// CHECK-NEXT:          %a = affine.load %A[%i4, %i5, %i3] : memref<10x20x30xf32>
// CHECK-NEXT:          affine.store %a, %m_private[0, 0, 0] : memref<1x1x1xf32>
// CHECK-NEXT:          %v0 = affine.load %m_private[0, 0, 0] : memref<1x1x1xf32>
// CHECK-NEXT:          affine.store %v0, %D[%i3, %i4, %i5] : memref<30x10x20xf32>
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @permute_and_fuse(%A: memref<10x20x30xf32>, %D: memref<30x10x20xf32>) {
  %m = memref.alloc() : memref<10x20x30xf32>
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 20 {
      affine.for %i2 = 0 to 30 {
        %a = affine.load %A[%i0, %i1, %i2] : memref<10x20x30xf32>
        affine.store %a, %m[%i0, %i1, %i2] : memref<10x20x30xf32>
      }
    }
  }
  affine.for %i3 = 0 to 30 {
    affine.for %i4 = 0 to 10 {
      affine.for %i5 = 0 to 20 {
        %v0 = affine.load %m[%i4, %i5, %i3] : memref<10x20x30xf32>
        affine.store %v0, %D[%i3, %i4, %i5] : memref<30x10x20xf32>
      }
    }
  }
  return
}

// -----

// A reshape 64 -> 16x4 (floordiv/mod in the store): the slice is the single producer
// iteration 4 * %i1 + %i2 (MLIR's fuse_reshape_64_16_4). MLIR: same structure.
// CHECK-LABEL: func.func @fuse_reshape_64_16_4
// CHECK-NEXT:    %out_private = memref.alloc() : memref<1x1xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 16 {
// CHECK-NEXT:      affine.for %i2 = 0 to 4 {
// CHECK-NEXT:        %v = affine.load %in[%i1 * 4 + %i2] : memref<64xf32>
// CHECK-NEXT:        affine.store %v, %out_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        %w = affine.load %out_private[0, 0] : memref<1x1xf32>
// CHECK-NEXT:        affine.store %w, %D[%i1, %i2] : memref<16x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @fuse_reshape_64_16_4(%in: memref<64xf32>, %D: memref<16x4xf32>) {
  %out = memref.alloc() : memref<16x4xf32>
  affine.for %i0 = 0 to 64 {
    %v = affine.load %in[%i0] : memref<64xf32>
    affine.store %v, %out[%i0 floordiv 4, %i0 mod 4] : memref<16x4xf32>
  }
  affine.for %i1 = 0 to 16 {
    affine.for %i2 = 0 to 4 {
      %w = affine.load %out[%i1, %i2] : memref<16x4xf32>
      affine.store %w, %D[%i1, %i2] : memref<16x4xf32>
    }
  }
  return
}

// -----

// One producer nest writes two intermediates that the consumer reads: both become one
// element (MLIR's should_fuse_multi_output_producer). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_multi_output_producer
// CHECK-NEXT:    %a_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    %b_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %x = affine.load %A[%i1] : memref<10xf32>
// CHECK-NEXT:      %y = arith.addf %x, %x : f32
// CHECK-NEXT:      affine.store %x, %a_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %y, %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %v0 = affine.load %a_private[0] : memref<1xf32>
// CHECK-NEXT:      %v1 = affine.load %b_private[0] : memref<1xf32>
// CHECK-NEXT:      %s = arith.mulf %v0, %v1 : f32
// CHECK-NEXT:      affine.store %s, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_multi_output_producer(%A: memref<10xf32>, %D: memref<10xf32>) {
  %a = memref.alloc() : memref<10xf32>
  %b = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %x = affine.load %A[%i0] : memref<10xf32>
    %y = arith.addf %x, %x : f32
    affine.store %x, %a[%i0] : memref<10xf32>
    affine.store %y, %b[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %a[%i1] : memref<10xf32>
    %v1 = affine.load %b[%i1] : memref<10xf32>
    %s = arith.mulf %v0, %v1 : f32
    affine.store %s, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// Escaping buffers keep their size (no private copy): a function argument written by the
// producer and read by the consumer fuses, the argument stays whole (MLIR's
// should_fuse_live_out_arg). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_live_out_arg
// CHECK-NEXT:    %cf7 = arith.constant 7.000000e+00 : f32
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      affine.store %cf7, %arg0[%i1] : memref<10xf32>
// CHECK-NEXT:      %v0 = affine.load %arg0[%i1] : memref<10xf32>
// CHECK-NEXT:      affine.store %v0, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @should_fuse_live_out_arg(%arg0: memref<10xf32>, %D: memref<10xf32>) {
  %cf7 = arith.constant 7.0 : f32
  affine.for %i0 = 0 to 10 {
    affine.store %cf7, %arg0[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %arg0[%i1] : memref<10xf32>
    affine.store %v0, %D[%i1] : memref<10xf32>
  }
  return
}

// -----

// A local buffer that the function returns: fused, the producer goes (every element it
// stores is stored by the fused nest too), %m keeps its 10 elements. MLIR: same structure.
// CHECK-LABEL: func.func @fuse_escaping_returned_memref
// CHECK-NEXT:    %m = memref.alloc() : memref<10xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %a = affine.load %A[%i1] : memref<10xf32>
// CHECK-NEXT:      affine.store %a, %m[%i1] : memref<10xf32>
// CHECK-NEXT:      %v0 = affine.load %m[%i1] : memref<10xf32>
// CHECK-NEXT:      %v1 = arith.addf %v0, %v0 : f32
// CHECK-NEXT:      affine.store %v1, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %m : memref<10xf32>
func.func @fuse_escaping_returned_memref(%A: memref<10xf32>, %D: memref<10xf32>) -> memref<10xf32> {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    affine.store %a, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    %v1 = arith.addf %v0, %v0 : f32
    affine.store %v1, %D[%i1] : memref<10xf32>
  }
  return %m : memref<10xf32>
}

// -----

// A local buffer passed to a call after the two nests: fused, %m stays whole for the call.
// MLIR: same structure.
// CHECK-LABEL: func.func @fuse_memref_passed_to_call
// CHECK-NEXT:    %m = memref.alloc() : memref<10xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %a = affine.load %A[%i1] : memref<10xf32>
// CHECK-NEXT:      %b = arith.mulf %a, %a : f32
// CHECK-NEXT:      affine.store %b, %m[%i1] : memref<10xf32>
// CHECK-NEXT:      %v0 = affine.load %m[%i1] : memref<10xf32>
// CHECK-NEXT:      %v1 = arith.addf %v0, %v0 : f32
// CHECK-NEXT:      affine.store %v1, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.call @reverse_copy(%m, %E) : (memref<10xf32>, memref<10xf32>) -> ()
// CHECK-NEXT:    return
func.func @fuse_memref_passed_to_call(%A: memref<10xf32>, %D: memref<10xf32>, %E: memref<10xf32>) {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    %v1 = arith.addf %v0, %v0 : f32
    affine.store %v1, %D[%i1] : memref<10xf32>
  }
  func.call @reverse_copy(%m, %E) : (memref<10xf32>, memref<10xf32>) -> ()
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

// A top-level load of %m after the nests: fused and the producer removed, but %m is not
// privatized (MLIR's should_fuse_if_top_level_access). MLIR: same structure.
// CHECK-LABEL: func.func @should_fuse_if_top_level_access
// CHECK-NEXT:    %m = memref.alloc() : memref<10xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 10 {
// CHECK-NEXT:      %a = affine.load %A[%i1] : memref<10xf32>
// CHECK-NEXT:      affine.store %a, %m[%i1] : memref<10xf32>
// CHECK-NEXT:      %v0 = affine.load %m[%i1] : memref<10xf32>
// CHECK-NEXT:      affine.store %v0, %D[%i1] : memref<10xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    %v1 = affine.load %m[%c4] : memref<10xf32>
// CHECK-NEXT:    return %v1 : f32
func.func @should_fuse_if_top_level_access(%A: memref<10xf32>, %D: memref<10xf32>) -> f32 {
  %m = memref.alloc() : memref<10xf32>
  affine.for %i0 = 0 to 10 {
    %a = affine.load %A[%i0] : memref<10xf32>
    affine.store %a, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
    affine.store %v0, %D[%i1] : memref<10xf32>
  }
  %c4 = arith.constant 4 : index
  %v1 = affine.load %m[%c4] : memref<10xf32>
  return %v1 : f32
}

// -----

// The consumer needs 17 of the producer's 100 iterations and %m[99] is read afterwards: the
// producer stays, the 17 iterations run again inside the consumer (17% extra work, within the
// tolerance) into a private buffer (MLIR's should_fuse_but_not_remove_src: same result).
// CHECK-LABEL: func.func @should_fuse_but_not_remove_src
// CHECK-NEXT:    %m = memref.alloc() : memref<100xf32>
// CHECK-NEXT:    affine.for %i0 = 0 to 100 {
// CHECK-NEXT:      %a = affine.load %A[%i0] : memref<100xf32>
// CHECK-NEXT:      affine.store %a, %m[%i0] : memref<100xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %m_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 17 {
// CHECK-NEXT:      %a_0 = affine.load %A[%i1] : memref<100xf32>
// CHECK-NEXT:      affine.store %a_0, %m_private[0] : memref<1xf32>
// CHECK-NEXT:      %v0 = affine.load %m_private[0] : memref<1xf32>
// CHECK-NEXT:      affine.store %v0, %C[%i1] : memref<17xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.dealloc %m_private : memref<1xf32>
// CHECK-NEXT:    %v1 = affine.load %m[99] : memref<100xf32>
func.func @should_fuse_but_not_remove_src(%A: memref<100xf32>, %C: memref<17xf32>) -> f32 {
  %m = memref.alloc() : memref<100xf32>
  affine.for %i0 = 0 to 100 {
    %a = affine.load %A[%i0] : memref<100xf32>
    affine.store %a, %m[%i0] : memref<100xf32>
  }
  affine.for %i1 = 0 to 17 {
    %v0 = affine.load %m[%i1] : memref<100xf32>
    affine.store %v0, %C[%i1] : memref<17xf32>
  }
  %v1 = affine.load %m[99] : memref<100xf32>
  return %v1 : f32
}

// -----

// Two consumers each needing part of the producer: fused into the first with the producer
// kept, then into the second, after which nothing else reads %m and the producer goes; each
// consumer gets its own 1-element buffer (MLIR: the same).
// CHECK-LABEL: func.func @producer_with_two_partial_consumers
// CHECK-NEXT:    %m_private = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i1 = 0 to 17 {
// CHECK:           affine.store %{{.*}}, %m_private[0] : memref<1xf32>
// CHECK:         memref.dealloc %m_private : memref<1xf32>
// CHECK-NEXT:    %m_private_0 = memref.alloc() : memref<1xf32>
// CHECK-NEXT:    affine.for %i2 = 0 to 82 {
// CHECK:           affine.store %{{.*}}, %m_private_0[0] : memref<1xf32>
// CHECK-NOT:     affine.for
// CHECK:         return
func.func @producer_with_two_partial_consumers(%A: memref<100xf32>, %C: memref<17xf32>, %D: memref<82xf32>) {
  %m = memref.alloc() : memref<100xf32>
  affine.for %i0 = 0 to 100 {
    %a = affine.load %A[%i0] : memref<100xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %m[%i0] : memref<100xf32>
  }
  affine.for %i1 = 0 to 17 {
    %v0 = affine.load %m[%i1] : memref<100xf32>
    affine.store %v0, %C[%i1] : memref<17xf32>
  }
  affine.for %i2 = 0 to 82 {
    %v1 = affine.load %m[%i2] : memref<100xf32>
    affine.store %v1, %D[%i2] : memref<82xf32>
  }
  return
}
