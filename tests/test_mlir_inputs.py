# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""MLIR's own test inputs parse (DESIGN.md): excerpts of ``mlir/test/Dialect/Affine/*.mlir``.

Each excerpt is a few functions copied as they stand in llvm-project (CHECK lines left
out). For each: it parses (with ``allow_unregistered`` where it uses ``"test.foo"(...)``
ops), verifies, prints -> parses -> prints to a fixpoint with a structurally equal module,
and, where ``iree-opt`` (upstream MLIR) is on PATH, MLIR accepts our printed text and
reads it back to the same program, and we read MLIR's printing of it back to ours.
Constructs of those files outside our dialect subset give a clear ParseError, and some
of ``invalid.mlir``'s cases are refused here too.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import affine_ir as air
from affine_ir.dialects.unregistered import UnregisteredOp

LOOP_TILING = """\
func.func @loop_tiling() {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 512 {
      affine.for %k = 0 to 1024 {
        "test.foo"(%i, %j, %k) : (index, index, index) -> ()
      }
    }
  }

  affine.for %x = 0 to 50 {
    "test.bar"(%x, %x) : (index, index) -> ()
  }

  // Intra-tile loop won't need a min expression.
  affine.for %y = 0 to 21 {
    "test.foobar"(%y) : (index) -> ()
  }

  return
}

// -----

#lb = affine_map<()[s0] -> (0, s0)>
#ub = affine_map<()[s0, s1] -> (s0, 4096 floordiv s1)>  // SEMI_AFFINE
func.func @loop_max_min_bound(%A : memref<? x i32>, %L : index, %U : index) {
  %c0 = arith.constant 0 : index
  %M = memref.dim %A, %c0 : memref<? x i32>
  affine.for %i = max #lb()[%L] to min #ub()[%M, %U] {
    arith.addi %i, %i : index
  }
  return
}

// -----

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

func.func @tile_using_loop_upper_bounds_in_two_symbols(%arg0: memref<?xf32>, %limit: index) {
  %c0 = arith.constant 0 : index
  %dim0 = memref.dim %arg0, %c0 : memref<?xf32>
  affine.for %i0 = 0 to affine_map<()[s0, s1] -> (s0 + s1)> ()[%dim0, %limit] {
    %v0 = affine.load %arg0[%i0] : memref<?xf32>
  }
  return
}

// -----

func.func @tile_loop_with_non_unit_step(%arg0 : memref<50xf32>, %arg1 : index) {
  affine.for %i = 0 to %arg1 step 5 {
    affine.load %arg0[%i] : memref<50xf32>
  }
  return
}

// -----

func.func @tile_size_larger_than_trip_count_symbolic_bound(%M: index, %N :  index) {
  affine.for %i = affine_map<(d0) -> (d0)>(%M) to affine_map<(d0) -> (d0 + 2)>(%M) {
    affine.for %j = affine_map<(d0) -> (d0)>(%N) to affine_map<(d0) -> (d0 + 4)>(%N) {
      "test.foo" () : () -> ()
    }
  }
  return
}

// -----

func.func @trip_count_one(%arg0: memref<196608x1xf32>, %arg1: memref<196608x1xf32>)
    -> memref<196608x1xf32> {
  affine.for %i1 = 0 to 196608 {
    affine.for %i3 = 0 to 1 {
      %4 = affine.load %arg0[%i1, %i3] : memref<196608x1xf32>
      affine.store %4, %arg1[%i1, %i3] : memref<196608x1xf32>
    }
  }
  return %arg1 : memref<196608x1xf32>
}

// -----

func.func @yield_values(%init : index) {
  %r = affine.for %i = 0 to 10 iter_args(%s = %init) -> index {
    "test.foo"() : () -> ()
    affine.yield %s : index
  }
  return
}

// -----

func.func @separate_full_tile_1d_max_min(%M : index, %N : index, %P : index, %Q : index) {
  affine.for %i0 = max affine_map<(d0, d1) -> (d0, d1)>  (%M, %N) to min affine_map< (d0, d1) -> (d0, d1)> (%P, %Q) {
  }
  return
}
"""

LOOP_FUSION = """\
func.func @should_fuse_raw_dep_for_locality() {
  %m = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 10 {
    affine.store %cf7, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
  }
  return
}

// -----

#set0 = affine_set<(d0) : (1 == 0)>

func.func @should_fuse_despite_affine_if() {
  %m = memref.alloc() : memref<10xf32>
  %cf7 = arith.constant 7.0 : f32

  affine.for %i0 = 0 to 10 {
    affine.store %cf7, %m[%i0] : memref<10xf32>
  }
  affine.for %i1 = 0 to 10 {
    %v0 = affine.load %m[%i1] : memref<10xf32>
  }
  %c0 = arith.constant 4 : index
  affine.if #set0(%c0) {
  }
  return
}

// -----

func.func @fuse_reshape_16_4_64() {
  %in = memref.alloc() : memref<16x4xf32>
  %out = memref.alloc() : memref<64xf32>

  affine.for %i0 = 0 to 16 {
    affine.for %i1 = 0 to 4 {
      %v = affine.load %in[%i0, %i1] : memref<16x4xf32>
      affine.store %v, %out[4*%i0 + %i1] : memref<64xf32>
    }
  }

  affine.for %i2 = 0 to 64 {
    %w = affine.load %out[%i2] : memref<64xf32>
    "foo"(%w) : (f32) -> ()
  }
  return
}

// -----

func.func @R6_to_R2_reshape_square() -> memref<64x9xi32> {
  %in = memref.alloc() : memref<2x2x3x3x16x1xi32>
  %out = memref.alloc() : memref<64x9xi32>
  %live_out = memref.alloc() : memref<64x9xi32>

  // Initialize input.
  affine.for %i0 = 0 to 2 {
    affine.for %i1 = 0 to 2 {
      affine.for %i2 = 0 to 3 {
        affine.for %i3 = 0 to 3 {
          affine.for %i4 = 0 to 16 {
            affine.for %i5 = 0 to 1 {
              %val = "foo"(%i0, %i1, %i2, %i3, %i4, %i5) : (index, index, index, index, index, index) -> i32
              affine.store %val, %in[%i0, %i1, %i2, %i3, %i4, %i5] : memref<2x2x3x3x16x1xi32>
            }
          }
        }
      }
    }
  }

  affine.for %ii = 0 to 64 {
    affine.for %jj = 0 to 9 {
      // Convert output coordinates to linear index.
      %a0 = affine.apply affine_map<(d0, d1) -> (d0 * 9 + d1)> (%ii, %jj)
      %0 = affine.apply affine_map<(d0) -> (d0 floordiv (2 * 3 * 3 * 16 * 1))>(%a0)
      %1 = affine.apply affine_map<(d0) -> ((d0 mod 288) floordiv (3 * 3 * 16 * 1))>(%a0)
      %2 = affine.apply affine_map<(d0) -> (((d0 mod 288) mod 144) floordiv (3 * 16 * 1))>(%a0)
      %3 = affine.apply affine_map<(d0) -> ((((d0 mod 288) mod 144) mod 48) floordiv (16 * 1))>(%a0)
      %4 = affine.apply affine_map<(d0) -> ((((d0 mod 288) mod 144) mod 48) mod 16)>(%a0)
      %5 = affine.apply affine_map<(d0) -> (((((d0 mod 144) mod 144) mod 48) mod 16) mod 1)>(%a0)
      %v = affine.load %in[%0, %1, %2, %3, %4, %5] : memref<2x2x3x3x16x1xi32>
      affine.store %v, %out[%ii, %jj] : memref<64x9xi32>
    }
  }

  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 9 {
      %a = affine.load %out[%i, %j] : memref<64x9xi32>
      %b = arith.muli %a, %a : i32
      affine.store %b, %live_out[%i, %j] : memref<64x9xi32>
    }
  }
  return %live_out : memref<64x9xi32>
}

// -----

func.func @fuse_symbolic_bounds(%M : index, %N : index) {
  %N_plus_5 = affine.apply affine_map<(d0) -> (d0 + 5)>(%N)
  %m = memref.alloc(%M, %N_plus_5) : memref<? x ? x f32>

  %c0 = arith.constant 0.0 : f32
  %s = arith.constant 5 : index

  affine.for %i0 = 0 to %M {
    affine.for %i1 = 0 to affine_map<(d0) -> (d0 + 5)> (%N) {
      affine.store %c0, %m[%i0, %i1] : memref<? x ? x f32>
    }
  }

  affine.for %i2 = 0 to %M {
    affine.for %i3 = 0 to %N {
      %v = affine.load %m[%i2, %i3 + symbol(%s)] : memref<? x ? x f32>
    }
  }

  return
}

// -----

func.func @should_fuse_at_src_depth1_and_dst_depth1() {
  %a = memref.alloc() : memref<100x16xf32>
  %b = memref.alloc() : memref<100x16xf32>

  affine.for %i0 = 0 to 100 {
    affine.for %i1 = 0 to 16 {
      %v0 = affine.load %a[%i0, %i1] : memref<100x16xf32>
      "op0"(%v0) : (f32) -> ()
    }
    affine.for %i2 = 0 to 16 {
      %v1 = "op1"() : () -> (f32)
      affine.store %v1, %b[%i0, %i2] : memref<100x16xf32>
    }
  }

  affine.for %i3 = 0 to 100 {
    affine.for %i4 = 0 to 16 {
      %v2 = affine.load %b[%i3, %i4] : memref<100x16xf32>
      "op2"(%v2) : (f32) -> ()
    }
  }
  return
}
"""

SCALREP = """\
func.func @store_load_affine_apply() -> memref<10x10xf32> {
  %cf7 = arith.constant 7.0 : f32
  %m = memref.alloc() : memref<10x10xf32>
  affine.for %i0 = 0 to 10 {
    affine.for %i1 = 0 to 10 {
      %t0 = affine.apply affine_map<(d0, d1) -> (d1 + 1)>(%i0, %i1)
      %t1 = affine.apply affine_map<(d0, d1) -> (d0)>(%i0, %i1)
      %idx0 = affine.apply affine_map<(d0, d1) -> (d1)> (%t0, %t1)
      %idx1 = affine.apply affine_map<(d0, d1) -> (d0 - 1)> (%t0, %t1)
      affine.store %cf7, %m[%idx0, %idx1] : memref<10x10xf32>
      %v0 = affine.load %m[%i0, %i1] : memref<10x10xf32>
      %v1 = arith.addf %v0, %v0 : f32
    }
  }
  // The memref and its stores won't be erased due to this memref return.
  return %m : memref<10x10xf32>
}

func.func @refs_not_known_to_be_equal(%A : memref<100 x 100 x f32>, %M : index) {
  %N = affine.apply affine_map<(d0) -> (d0 + 1)> (%M)
  %cf1 = arith.constant 1.0 : f32
  affine.for %i = 0 to 100 {
    affine.for %j = 0 to 100 {
      %u = affine.load %A[%i, %j] : memref<100x100xf32>
      affine.store %cf1, %A[%j, %i] : memref<100x100xf32>
      %v = affine.load %A[%i, %j] : memref<100x100xf32>
      // This load should disappear.
      %w = affine.load %A[%j, %i] : memref<100x100xf32>
      "foo" (%u, %v, %w) : (f32, f32, f32) -> ()
    }
  }
  return
}

func.func @vector_forwarding(%in : memref<512xf32>, %out : memref<512xf32>) {
  %tmp = memref.alloc() : memref<512xf32>
  affine.for %i = 0 to 16 {
    %ld0 = affine.vector_load %in[32*%i] : memref<512xf32>, vector<32xf32>
    affine.vector_store %ld0, %tmp[32*%i] : memref<512xf32>, vector<32xf32>
    %ld1 = affine.vector_load %tmp[32*%i] : memref<512xf32>, vector<32xf32>
    affine.vector_store %ld1, %out[32*%i] : memref<512xf32>, vector<32xf32>
  }
  return
}

func.func @reduction_multi_store() -> memref<1xf32> {
  %A = memref.alloc() : memref<1xf32>
  %cf0 = arith.constant 0.0 : f32
  %cf5 = arith.constant 5.0 : f32

 affine.store %cf0, %A[0] : memref<1xf32>
  affine.for %i = 0 to 100 step 2 {
    %l = affine.load %A[0] : memref<1xf32>
    %s = arith.addf %l, %cf5 : f32
    // Store to load forwarding from this store should happen.
    affine.store %s, %A[0] : memref<1xf32>
    %m = affine.load %A[0] : memref<1xf32>
   "test.foo"(%m) : (f32) -> ()
  }

  return %A : memref<1xf32>
}

func.func @vector_load_affine_apply_store_load(%in : memref<512xf32>, %out : memref<512xf32>) {
  %cf1 = arith.constant 1: index
  affine.for %i = 0 to 15 {
    %ld0 = affine.vector_load %in[32*%i] : memref<512xf32>, vector<32xf32>
    %idx = affine.apply affine_map<(d0) -> (d0 + 1)> (%i)
    affine.vector_store %ld0, %in[32*%idx] : memref<512xf32>, vector<32xf32>
    %ld1 = affine.vector_load %in[32*%i] : memref<512xf32>, vector<32xf32>
    %add = arith.addf %ld0, %ld1 : vector<32xf32>
    affine.vector_store %ld1, %out[32*%i] : memref<512xf32>, vector<32xf32>
  }
  return
}

func.func @external_no_forward_load(%in : memref<512xf32>, %out : memref<512xf32>) {
  affine.for %i = 0 to 16 {
    %ld0 = affine.load %in[32*%i] : memref<512xf32>
    affine.store %ld0, %out[32*%i] : memref<512xf32>
    "memop"(%in, %out) : (memref<512xf32>, memref<512xf32>) -> ()
    %ld1 = affine.load %in[32*%i] : memref<512xf32>
    affine.store %ld1, %out[32*%i] : memref<512xf32>
  }
  return
}
"""

UNROLL = """\
func.func @loop_nest_simple_iv_use() {
  affine.for %i = 0 to 100 step 2 {
    affine.for %j = 0 to 4 {
      %x = "addi32"(%j, %j) : (index, index) -> i32
    }
  }       // UNROLL-FULL:  }
  return  // UNROLL-FULL:  return
}         // UNROLL-FULL }

// Operations in the loop body have results that are used therein.
func.func @loop_nest_body_def_use() {
  affine.for %i = 0 to 100 step 2 {
    %c0 = arith.constant 0 : index
    affine.for %j = 0 to 4 {
      %x = "affine.apply" (%j) { map = affine_map<(d0) -> (d0 + 1)> } :
        (index) -> (index)
      %y = "addi32"(%x, %c0) : (index, index) -> index
    }
  }       // UNROLL-FULL:  }
  return  // UNROLL-FULL:  return
}         // UNROLL-FULL }

func.func @loop_nest_multiple_results() {
  affine.for %i = 0 to 100 {
    affine.for %j = 0 to 2 step 1 {
      %x = affine.apply affine_map<(d0, d1) -> (d0 + 1)> (%i, %j)
      %y = "addi32"(%x, %x) : (index, index) -> index
      %z = affine.apply affine_map<(d0, d1) -> (d0 + 3)> (%i, %j)
      %w:2 = "fma"(%z, %x, %x) : (index, index, index) -> (index, index)
    }
  }       // UNROLL-FULL:  }
  return  // UNROLL-FULL:  return
}         // UNROLL-FULL }

func.func @loop_nest_seq_multiple() {
  affine.for %j = 0 to 4 {
    %x = "affine.apply" (%j) { map = affine_map<(d0) -> (d0 + 1)> } :
      (index) -> (index)
    "mul"(%x, %x) : (index, index) -> ()
  }

  %k = arith.constant 99 : index
  affine.for %m = 0 to 100 step 2 {
    affine.for %n = 0 to 4 {
      %y = "affine.apply" (%n) { map = affine_map<(d0) -> (d0 + 1)> } :
        (index) -> (index)
      %z = "affine.apply" (%n, %k) { map = affine_map<(d0) [s0] -> (d0 + s0 + 1)> } :
        (index, index) -> (index)
    }     // UNROLL-FULL }
  }       // UNROLL-FULL }
  return  // UNROLL-FULL:  return
}         // UNROLL-FULL }

func.func @thread_partial_execution() {
  %c0 = arith.constant 0 :index
  %c2 = arith.constant 2 : index
  gpu.launch blocks(%bx, %by, %bz) in (%sz_bx = %c2, %sz_by = %c2, %sz_bz = %c2)
             threads(%tx, %ty, %tz) in (%sz_tx = %c2, %sz_ty = %c2, %sz_tz = %c2) {
    affine.for %iv = %tx to 3 step 2 iter_args(%arg = %c0) -> index {
      %sum = arith.addi %arg, %c0 : index
      affine.yield %sum : index
    }
    gpu.terminator
  }
  return
}
"""

UNROLL_JAM = """\
func.func @unroll_jam_imperfect_nest() {
  affine.for %i = 0 to 101 {
    %x = "addi32"(%i, %i) : (index, index) -> i32
    affine.for %j = 0 to 17 {
      %y = "addi32"(%i, %i) : (index, index) -> i32
      %z = "addi32"(%y, %y) : (i32, i32) -> i32
    }
    %w = "foo"(%i, %x) : (index, i32) -> i32
  }
  return
}

func.func @loop_nest_unknown_count_2(%N : index) {
  affine.for %i = %N to affine_map<()[s0] -> (s0+9)> ()[%N] {
    affine.for %j = 1 to 100 {
      "foo"(%i) : (index) -> ()
    }
  }
  return
}

func.func @no_unroll_jam_dependent_ubound(%in0: memref<?xf32, 1>) {
  affine.for %i = 0 to 100 {
    affine.for %k = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %y = "addi32"(%k, %k) : (index, index) -> i32
    }
  }
  return
}

func.func @unroll_jam_one_iter_arg_preserves_attrs() {
  affine.for %i = 0 to 101 {
    %cst = arith.constant 1 : i32
    %x = "addi32"(%i, %i) : (index, index) -> i32
    %red = affine.for %j = 0 to 17 iter_args(%acc = %cst) -> (i32) {
      %y = "bar"(%i, %j, %acc) : (index, index, i32) -> i32
      affine.yield %y : i32
    } {test.keep = "inner"}
    %w = "foo"(%i, %x, %red) : (index, i32, i32) -> i32
  }
  return
}

func.func @unroll_jam_iter_args() {
  affine.for %i = 0 to 101 {
    %cst = arith.constant 0 : i32
    %cst1 = arith.constant 1 : i32
    %x = "addi32"(%i, %i) : (index, index) -> i32
    %red:2 = affine.for %j = 0 to 17 iter_args(%acc = %cst, %acc1 = %cst1) -> (i32, i32) {
      %y = "bar"(%i, %j, %acc) : (index, index, i32) -> i32
      %z = "bar1"(%i, %j, %acc1) : (index, index, i32) -> i32
      affine.yield %y, %z : i32, i32
    }
    %w = "foo"(%i, %x, %red#0, %red#1) : (index, i32, i32, i32) -> i32
  }
  return
}
"""

DMA_GENERATE = """\
func.func @loop_nest_1d() {
  %A = memref.alloc() : memref<256 x f32>
  %B = memref.alloc() : memref<512 x f32>
  %F = memref.alloc() : memref<256 x f32, 2>
  affine.for %i = 0 to 256 {
    affine.load %A[%i] : memref<256 x f32>
    %idx = affine.apply affine_map<(d0) -> (d0 + 256)>(%i)
    affine.load %B[%idx] : memref<512 x f32>
    affine.load %F[%i] : memref<256 x f32, 2>
  }
  return
}

// -----

func.func @loop_nest_high_d(%A: memref<512 x 32 x f32>,
    %B: memref<512 x 32 x f32>, %C: memref<512 x 32 x f32>) {
  // DMAs will be performed at this level (jT is the first loop without a stride).
  // A and B are read, while C is both read and written. A total of three new buffers
  // are allocated and existing load's/store's are replaced by accesses to those buffers.
  affine.for %jT = 0 to 32 {
    affine.for %kT = 0 to 32 {
      affine.for %iT = 0 to 32 {
        affine.for %kk = 0 to 16 { // k intratile
          %k = affine.apply affine_map<(d0, d1) -> (16*d0 + d1)> (%kT, %kk)
          %v0 = affine.load %B[%k, %jT] : memref<512 x 32 x f32>
          "foo"(%v0) : (f32) -> ()
        }
        affine.for %ii = 0 to 16 { // i intratile.
          %i = affine.apply affine_map<(d0, d1) -> (16*d0 + d1)>(%iT, %ii)
          %v1 = affine.load %A[%i, %kT] : memref<512 x 32 x f32>
          "bar"(%v1) : (f32) -> ()
        }
        affine.for %ii_ = 0 to 16 { // i intratile.
          %v2 = "abc_compute"() : () -> f32
          %i_ = affine.apply affine_map<(d0, d1) -> (16*d0 + d1)>(%iT, %ii_)
          %v3 =  affine.load %C[%i_, %jT] : memref<512 x 32 x f32>
          %v4 = "addf32"(%v2, %v3) : (f32, f32) -> (f32)
          affine.store %v4, %C[%i_, %jT] : memref<512 x 32 x f32>
        }
        "foobar"() : () -> ()
      }
    }
  }
  return
}

// -----

func.func @dma_with_symbolic_accesses(%A : memref<100x100xf32>, %M : index) {
  %N = arith.constant 9 : index
  affine.for %i = 0 to 100 {
    affine.for %j = 0 to 100 {
      %idy = affine.apply affine_map<(d0, d1) [s0, s1] -> (d1 + s0 + s1)>(%i, %j)[%M, %N]
      affine.load %A[%i, %idy] : memref<100 x 100 x f32>
    }
  }
  return
}

// -----

func.func @dma_with_symbolic_loop_bounds(%A : memref<100x100xf32>, %M : index, %N: index) {
  %K = arith.constant 9 : index
  affine.for %i = 0 to 100 {
    affine.for %j = %M to %N {
      %idy = affine.apply affine_map<(d1) [s0] -> (d1 + s0)>(%j)[%K]
      affine.load %A[%i, %idy] : memref<100 x 100 x f32>
    }
  }
  return
}
"""

PARALLELIZE = """\
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

func.func @unknown_op_conservative() {
  affine.for %i = 0 to 10 {
    "unknown"() : () -> ()
  }
  return
}

func.func @non_affine_load() {
  %0 = memref.alloc() : memref<100 x f32>
  affine.for %i = 0 to 100 {
    memref.load %0[%i] : memref<100 x f32>
  }
  return
}

func.func @for_with_minmax(%m: memref<?xf32>, %lb0: index, %lb1: index,
                      %ub0: index, %ub1: index) {
  affine.for %i = max affine_map<(d0, d1) -> (d0, d1)>(%lb0, %lb1)
          to min affine_map<(d0, d1) -> (d0, d1)>(%ub0, %ub1) {
    affine.load %m[%i] : memref<?xf32>
  }
  return
}

func.func @use_in_backward_slice() {
  %cst1 = arith.constant 0.0 : f32
  %cst2 = arith.constant 1.0 : f32
  affine.for %i = 0 to 10 iter_args(%it1 = %cst1, %it2 = %cst2) -> (f32, f32) {
    %0 = "test.some_modification"(%it2) : (f32) -> f32
    %1 = arith.addf %it1, %0 : f32
    affine.yield %1, %1 : f32, f32
  }
  return
}

func.func @local_alloc() {
  %cst = arith.constant 0.0 : f32
  affine.for %i = 0 to 100 {
    %m = memref.alloc() : memref<1xf32>
    %ma = memref.alloca() : memref<1xf32>
    affine.store %cst, %m[0] : memref<1xf32>
    memref.dealloc %m : memref<1xf32>
  }
  return
}

func.func @iter_arg_memrefs(%in: memref<10xf32>) {
  %mi = memref.alloc() : memref<f32>
  // Loop-carried memrefs are treated as serializing the loop.
  %mo = affine.for %i = 0 to 10 iter_args(%m_arg = %mi) -> (memref<f32>) {
    affine.yield %m_arg : memref<f32>
  }
  return
}

func.func @explicit_parallel(%arg0: memref<1x123x194xf64>, %arg5: memref<34x99x194xf64>) {
  affine.parallel (%arg7, %arg8) = (0, 0) to (85, 180) {
    affine.for %arg9 = 0 to 18 {
      %0 = affine.load %arg0[0, %arg7 + 19, %arg8 + 7] : memref<1x123x194xf64>
      %1 = affine.load %arg5[%arg9 + 8, %arg7 + 7, %arg8 + 7] : memref<34x99x194xf64>
      %2 = arith.addf %0, %1 {fastmathFlags = #llvm.fastmath<none>} : f64
      affine.store %1, %arg0[0, %arg7 + 19, %arg8 + 7] : memref<1x123x194xf64>
    }
  }
  return
}
"""

LOOP_NORMALIZE = """\
func.func @normalize_parallel() {
  %cst = arith.constant 1.0 : f32
  %0 = memref.alloc() : memref<2x4xf32>
  affine.parallel (%i, %j) = (0, 1) to (10, 5) step (3, 2) {
    affine.parallel (%k) = (%i) to (%j) {
      affine.store %cst, %0[%i, %k] : memref<2x4xf32>
    }
  }
  return
}

// -----

func.func @relative_bounds(%arg: index) {
  affine.for %i = affine_map<(d0) -> (d0)>(%arg) to affine_map<(d0) -> (d0 + 4)>(%arg) {
  }
  return
}

// -----

func.func @simple_loop_nest(){
  affine.for %i0 = 2 to 32 step 2 {
    affine.for %i1 =  0 to 32 step 3 {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}

// -----

func.func @loop_with_multiple_upper_bounds(%arg0: memref<?x?xf32>, %arg1 : index) {
  %c0 = arith.constant 0 : index
  %0 = memref.dim %arg0, %c0 : memref<?x?xf32>
  affine.for %i0 = 2 to %0 step 32{
    affine.for %i1 = 2 to min affine_map<(d0)[] -> (d0, 512)>(%arg1) {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}

// -----

#map0 = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0)[s0] -> (d0 + 32, s0)>
#map3 = affine_map<() -> (0)>
#map4 = affine_map<()[s0] -> (s0)>

func.func @tiled_matmul(%0: memref<1024x1024xf32>, %1: memref<1024x1024xf32>, %2: memref<1024x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %3 = memref.dim %0, %c0 : memref<1024x1024xf32>
  %4 = memref.dim %1, %c1 : memref<1024x1024xf32>
  %5 = memref.dim %0, %c1 : memref<1024x1024xf32>
  affine.for %arg0 = 0 to %3 step 32 {
    affine.for %arg1 = 0 to %4 step 32 {
      affine.for %arg2 = 0 to %5 step 32 {
        affine.for %arg3 = #map1(%arg0) to min #map2(%arg0)[%3] {
          affine.for %arg4 = #map1(%arg1) to min #map2(%arg1)[%4] {
            affine.for %arg5 = #map1(%arg2) to min #map2(%arg2)[%5] {
              %6 = affine.load %0[%arg3, %arg5] : memref<1024x1024xf32>
              %7 = affine.load %1[%arg5, %arg4] : memref<1024x1024xf32>
              %8 = affine.load %2[%arg3, %arg4] : memref<1024x1024xf32>
              %9 = arith.mulf %6, %7 : f32
              %10 = arith.addf %8, %9 : f32
              affine.store %10, %2[%arg3, %arg4] : memref<1024x1024xf32>
            }
          }
        }
      }
    }
  }
  return
}
"""

LOOP_PERMUTE = """\
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

// -----

func.func @check_validity_with_iter_args(%U0 : index, %U1 : index, %U2 : index) {
  %buf = memref.alloc() : memref<100x100xf32>
  %cst = arith.constant 1.0 : f32
  %c10 = arith.constant 10 : index
  %c20 = arith.constant 20 : index

  // Check that the loops are not permuted.
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
"""

OPS = """\
func.func @empty() {
  affine.for %i = 0 to 10 {
  } {some_attr = true}

  affine.if affine_set<() : ()> () {
  } {some_attr = true}

  affine.if affine_set<() : ()> () {
  } else {
    "foo"() : () -> ()
  } {some_attr = true}

  return
}

// Check that an explicit affine.yield is not printed in custom format.
// Check that no extra terminator is introduced.
func.func @affine.yield() {
  affine.for %i = 0 to 10 {
    "affine.yield"() : () -> ()
  }
  return
}

// -----

func.func @affine_min(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = affine.min affine_map<(d0)[s0] -> (1000, d0 + 512, s0)> (%arg0)[%arg1]
  %1 = affine.min affine_map<(d0, d1)[s0] -> (d0 - d1, s0 + 512)> (%arg0, %arg1)[%arg2]
  %2 = affine.min affine_map<()[s0, s1] -> (s0 - s1, 11)> ()[%arg1, %arg2]
  %3 = affine.min affine_map<()[] -> (77, 78, 79)> ()[]
  return
}

func.func @affine_max(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = affine.max affine_map<(d0)[s0] -> (1000, d0 + 512, s0)> (%arg0)[%arg1]
  %1 = affine.max affine_map<(d0, d1)[s0] -> (d0 - d1, s0 + 512)> (%arg0, %arg1)[%arg2]
  %2 = affine.max affine_map<()[s0, s1] -> (s0 - s1, 11)> ()[%arg1, %arg2]
  %3 = affine.max affine_map<()[] -> (77, 78, 79)> ()[]
  return
}

// -----

func.func @parallel(%A : memref<100x100xf32>, %N : index) {
  affine.parallel (%i0, %j0) = (0, 0) to (symbol(%N), 100) step (10, 10) {
    %0:2 = affine.parallel (%i1, %j1) = (%i0, %j0) to (%i0 + 10, %j0 + 10) reduce ("minimumf", "maximumf") -> (f32, f32) {
      %2 = affine.load %A[%i0 + %i0, %j0 + %j1] : memref<100x100xf32>
      affine.yield %2, %2 : f32, f32
    }
  }
  return
}

// -----

func.func @parallel_min_max(%a: index, %b: index, %c: index, %d: index) {
  affine.parallel (%i, %j, %k) = (max(%a, %b), %b, max(%a, %c))
                              to (%c, min(%c, %d), %b) {
    affine.yield
  }
  return
}

// -----

func.func @parallel_no_ivs() {
  affine.parallel () = () to () {
    affine.yield
  }
  return
}

// -----

func.func @affine_if() -> f32 {
  %zero = arith.constant 0.0 : f32
  %0 = affine.if affine_set<() : ()> () -> f32 {
    affine.yield %zero : f32
  } else {
    affine.yield %zero : f32
  }
  return %0 : f32
}

// -----

#set = affine_set<(d0): (d0 - 10 >= 0)>

func.func @yield_loop(%buffer: memref<1024xf32>) -> f32 {
  %sum_init_0 = arith.constant 0.0 : f32
  %res = affine.for %i = 0 to 10 step 2 iter_args(%sum_iter = %sum_init_0) -> f32 {
    %t = affine.load %buffer[%i] : memref<1024xf32>
    %sum_next = affine.if #set(%i) -> (f32) {
      %new_sum = arith.addf %sum_iter, %t : f32
      affine.yield %new_sum : f32
    } else {
      affine.yield %sum_iter : f32
    }
    affine.yield %sum_next : f32
  }
  return %res : f32
}

func.func @affine_for_multiple_yield(%buffer: memref<1024xf32>) -> (f32, f32) {
  %init_0 = arith.constant 0.0 : f32
  %res1, %res2 = affine.for %i = 0 to 10 step 2 iter_args(%iter_arg1 = %init_0, %iter_arg2 = %init_0) -> (f32, f32) {
    %t = affine.load %buffer[%i] : memref<1024xf32>
    %ret1 = arith.addf %t, %iter_arg1 : f32
    %ret2 = arith.addf %t, %iter_arg2 : f32
    affine.yield %ret1, %ret2 : f32, f32
  }
  return %res1, %res2 : f32, f32
}
"""

OPS_MODULE_SCOPE = """\
// Test the fact that module op always provides an affine scope.

%idx = "test.foo"() : () -> (index)
"test.func"() ({
^bb0(%A : memref<?xf32>):
  affine.load %A[%idx] : memref<?xf32>
  "terminate"() : () -> ()
}) : () -> ()
"""

# Semi-affine maps (``4096 floordiv s1``: a division by a symbol) cannot be expressed by our
# AffineExpr (a ParseError says so, see below); the excerpt divides by a constant instead.
LOOP_TILING_SEMI_AFFINE = LOOP_TILING
LOOP_TILING = LOOP_TILING.replace("(s0, 4096 floordiv s1)>  // SEMI_AFFINE", "(s0, 4096 floordiv 16)>")

# name -> (text, uses ops of unregistered dialects)
EXCERPTS = {
    "loop-tiling.mlir": (LOOP_TILING, True),
    "loop-fusion.mlir": (LOOP_FUSION, True),
    "scalrep.mlir": (SCALREP, True),
    "unroll.mlir": (UNROLL, True),
    "unroll-jam.mlir": (UNROLL_JAM, True),
    "dma-generate.mlir": (DMA_GENERATE, True),
    "parallelize.mlir": (PARALLELIZE, True),
    "affine-loop-normalize.mlir": (LOOP_NORMALIZE, True),
    "loop-permute.mlir": (LOOP_PERMUTE, True),
    "ops.mlir": (OPS, True),
    "ops.mlir (module scope)": (OPS_MODULE_SCOPE, True),
}
# The same files' functions that use only our dialects parse without the opt-in.
REGISTERED_ONLY = {
    "loop-tiling.mlir": LOOP_TILING.split("// -----")[1] + LOOP_TILING.split("// -----")[2],
    "affine-loop-normalize.mlir": LOOP_NORMALIZE.split("// -----")[4],
    "ops.mlir": OPS.split("// -----")[1],
    # @loop_nest_body_def_use without its "addi32" op
    "unroll.mlir (generic affine.apply)": "func.func @loop_nest_body_def_use()" + UNROLL.split(
        "func.func @loop_nest_multiple_results")[0].split("func.func @loop_nest_body_def_use()")[1].replace(
        '      %y = "addi32"(%x, %c0) : (index, index) -> index\n', ""),
}

IREE_OPT = shutil.which("iree-opt")
needs_iree = pytest.mark.skipif(IREE_OPT is None, reason="iree-opt (pip install iree-base-compiler) not on PATH")


def chunks(text: str) -> list[str]:
    """The ``// -----`` chunks of an excerpt, as ``-split-input-file`` cuts them."""
    return [c for c in re.split(r"^// -----$", text, flags=re.M) if c.strip()]


def parse(text: str, unregistered: bool = True) -> air.ModuleOp:
    return air.parse(text, allow_unregistered=unregistered)


ALL_CHUNKS = {f"{name}#{k}": c for name, (text, _) in EXCERPTS.items() for k, c in enumerate(chunks(text))}


@pytest.mark.parametrize("name", ALL_CHUNKS)
def test_excerpt_parses_verifies_and_round_trips(name):
    m = parse(ALL_CHUNKS[name])  # air.parse verifies
    assert m.functions or any(isinstance(op, UnregisteredOp) for op in m.body.ops)
    text = str(m)
    again = parse(text)
    assert str(again) == text
    assert air.structurally_equal(again, m)


@pytest.mark.parametrize("name", REGISTERED_ONLY)
def test_excerpts_in_our_dialects_need_no_opt_in(name):
    for chunk in chunks(REGISTERED_ONLY[name]):
        m = parse(chunk, unregistered=False)
        assert not any(isinstance(op, UnregisteredOp) for op in m.walk())
        assert str(parse(str(m), unregistered=False)) == str(m)


@pytest.mark.parametrize("name", [n for n, (_, unreg) in EXCERPTS.items() if unreg])
def test_unregistered_ops_need_the_opt_in(name):
    with pytest.raises(air.ParseError, match="generic op form.*allow_unregistered"):
        for chunk in chunks(EXCERPTS[name][0]):
            parse(chunk, unregistered=False)


def test_unregistered_ops_keep_their_parts():
    m = parse(UNROLL_JAM)
    f = m.lookup("unroll_jam_iter_args")
    foo = next(op for op in f.walk() if op.name == "foo")
    assert isinstance(foo, UnregisteredOp) and not foo.is_pure and not foo.is_terminator
    assert [str(v.type) for v in foo.operands] == ["index", "i32", "i32", "i32"]
    assert [str(r.type) for r in foo.results] == ["i32"]
    loop = foo.parent_op
    assert foo.operands[0] is loop.induction_var
    red = next(op for op in loop.body.ops if op.name == "affine.for")
    assert list(foo.operands[2:]) == red.results
    # attributes and regions too; printed back in the generic form
    m = parse(OPS_MODULE_SCOPE)
    func = m.body.ops[1]
    assert func.name == "test.func" and len(func.regions) == 1 and [str(a.type) for a in func.body.args] == [
        "memref<?xf32>"]
    text = str(m)
    assert '"test.func"() ({\n  ^bb0(%A: memref<?xf32>):\n    %0 = affine.load %A[%idx] : memref<?xf32>\n' in text
    assert '}) : () -> ()' in text and '%idx = "test.foo"() : () -> index' in text
    m = parse('func.func @f(%i: index) {\n  %r = "test.op"(%i) {k = 1 : i64, s = "x"} : (index) -> f32\n  return\n}')
    op = m.functions[0].body.ops[0]
    assert set(op.attributes) == {"k", "s"} and '{k = 1 : i64, s = "x"} : (index) -> f32' in str(m)


def test_unnamed_results_get_no_name_hint():
    m = parse(chunks(LOOP_TILING)[1])
    add = next(op for op in m.walk() if op.name == "arith.addi")
    assert add.result.name_hint is None and not add.result.uses
    assert "%0 = arith.addi %i, %i : index" in str(m)


def test_generic_form_of_registered_ops_builds_the_same_op():
    generic = parse(REGISTERED_ONLY["unroll.mlir (generic affine.apply)"], unregistered=False)
    custom = parse(str(generic), unregistered=False)
    assert "affine.apply #map(%j)" in str(generic)
    assert air.structurally_equal(generic, custom)
    text = """\
func.func @f(%A: memref<8x8xf32>, %i: index, %a: f32) -> f32 {
  %c = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
  %v = "affine.load"(%A, %i, %i) <{map = affine_map<(d0, d1) -> (d1, d0 + 1)>}> : (memref<8x8xf32>, index, index) -> f32
  %s = "arith.addf"(%v, %c) : (f32, f32) -> f32
  "affine.store"(%s, %A, %i) {map = affine_map<(d0) -> (d0, 0)>} : (f32, memref<8x8xf32>, index) -> ()
  %x = "arith.index_cast"(%i) : (index) -> i32
  "func.return"(%s) : (f32) -> ()
}
"""
    m = parse(text, unregistered=False)
    assert isinstance(m.functions[0].body.ops[0], air.Operation) and "%v = affine.load %A[%i, %i + 1]" in str(m)
    assert air.structurally_equal(parse(str(m), unregistered=False), m)
    A = np.arange(64, dtype=np.float32).reshape(8, 8)
    assert air.interpret(m, A, 3, np.float32(0)) == np.float32(A[3, 4] + 2)


# (excerpt of an MLIR test file, the construct we leave out, phrase of the ParseError)
UNSUPPORTED = [
    ("dma-generate.mlir", "affine.dma_start %A[%i], %B[%i], %tag[%c0], %num : memref<256xf32>, memref<256xf32, 2>, memref<1xi32>",
     "unknown operation 'affine.dma_start'"),
    ("dma-generate.mlir", "affine.dma_wait %tag[%c0], %num : memref<1xi32>", "unknown operation 'affine.dma_wait'"),
    ("ops.mlir", "%1:2 = affine.delinearize_index %i into (%n, %n) : index, index",
     "unknown operation 'affine.delinearize_index'"),
    ("ops.mlir", "%s = memref.subview %A[%c0][%n][%c1] : memref<256xf32> to memref<?xf32, strided<[1], offset: ?>>",
     "unknown operation 'memref.subview'"),
    ("ops.mlir", "test.affine_scope {\n  }", "unknown operation 'test.affine_scope'"),
    ("scalrep.mlir", "%m = gpu.alloc() : memref<10xf32>", "unknown operation 'gpu.alloc'"),
    ("scalrep.mlir", "%m2 = memref.cast %A : memref<256xf32> to memref<?xf32>",
     "'memref.cast' supports only ranked -> unranked casts"),
    ("scalrep.mlir", "scf.for %j = %c0 to %n step %c1 {\n  }", "unknown operation 'scf.for'"),
    ("scalrep.mlir", "%0 = scf.if %b -> (f64) {\n  }", "unknown operation 'scf.if'"),
    ("parallelize.mlir", "%idx0 = index.constant 1", "unknown operation 'index.constant'"),
    ("parallelize.mlir", "%29 = tensor.empty() : tensor<10xf16>", "unknown operation 'tensor.empty'"),
    ("parallelize.mlir", "memref.alloca_scope {\n  }", "unknown operation 'memref.alloca_scope'"),
    ("parallelize.mlir", "%r = memref.reinterpret_cast %A to offset: [0], sizes: [8, 32], strides: [32, 1] : memref<256xf32> to memref<8x32xf32>",
     "unknown operation 'memref.reinterpret_cast'"),
    ("unroll.mlir", "gpu.module @unroll_full {\n  }", "unknown operation 'gpu.module'"),
    ("ops.mlir", '"affine.dma_start"(%A) : (memref<256xf32>) -> ()', "unknown operation 'affine.dma_start'"),
    ("invalid.mlir", '"unknown"() ({\n  ^bb0(%arg: index):\n    cf.br ^bb1\n  ^bb1:\n    cf.br ^bb1\n  }) : () -> ()',
     "unknown operation 'cf.br'"),
    ("loop-tiling.mlir", "%x = arith.constant 1 : index\n  %y = \"test.foo\"(%x) [^bb1] : (index) -> ()", "successors"),
    ("ops.mlir", '"affine.for"() ({\n  }) {lower_bound = affine_map<() -> (0)>, step = 1 : index, upper_bound = affine_map<() -> (10)>} : () -> ()',
     "generic form of a registered op with regions is not supported"),
    ("memref", "%A = memref.alloc() : memref<4xf32, strided<[1]>>", "expected memory space"),
]


@pytest.mark.parametrize("source, line, phrase", UNSUPPORTED, ids=[u[2] for u in UNSUPPORTED])
def test_constructs_outside_our_subset_give_a_clear_parse_error(source, line, phrase):
    text = f"""\
func.func @f(%A: memref<256xf32>, %B: memref<256xf32, 2>, %tag: memref<1xi32>, %i: index, %n: index, %b: i1) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %num = arith.constant 256 : index
  {line}
  return
}}
"""
    with pytest.raises(air.ParseError, match=re.escape(phrase)) as info:
        parse(text)
    assert info.value.location.line >= 5


# Cases of mlir/test/Dialect/Affine/invalid.mlir that we refuse as MLIR does (error class, phrase).
INVALID = [
    ("""func.func @affine_apply_operand_non_index(%arg0 : i32) {
  %0 = "affine.apply"(%arg0) {map = affine_map<(d0) -> (d0)>} : (i32) -> (index)
  return
}""", air.ParseError, "map operand has type i32, expected index"),
    ("""func.func @affine_apply_resul_non_index(%arg0 : index) {
  %0 = "affine.apply"(%arg0) {map = affine_map<(d0) -> (d0)>} : (index) -> (i32)
  return
}""", air.ParseError, "'affine.apply' defines results of type (index)"),
    ("""#map0 = affine_map<(d0)[s0] -> (d0 + s0)>
func.func @affine_for_lower_bound_invalid_sym() {
  affine.for %i0 = 0 to 7 {
    affine.for %n0 = #map0(%i0)[%i0] to 7 {
    }
  }
  return
}""", air.VerifyError, "operand cannot be used as a symbol"),
    ("""#set0 = affine_set<(i)[N] : (i >= 0, N - i >= 0)>
func.func @affine_if_invalid_sym() {
  affine.for %i0 = 0 to 7 {
    affine.if #set0(%i0)[%i0] {}
  }
  return
}""", air.VerifyError, "operand cannot be used as a symbol"),
    ("""func.func @affine_store_missing_l_square(%C: memref<4096x4096xf32>) {
  %9 = arith.constant 0.0 : f32
  affine.store %9, %C : memref<4096x4096xf32>
  return
}""", air.ParseError, "expected '['"),
    ("""func.func @affine_store_wrong_value_type(%C: memref<f32>) {
  %c0 = arith.constant 0 : i32
  "affine.store"(%c0, %C) <{map = affine_map<(i) -> (i)>}> : (i32, memref<f32>) -> ()
  return
}""", air.ParseError, "'affine.store'"),
    ("""func.func @affine_min(%arg0 : index, %arg1 : index, %arg2 : index) {
  %0 = affine.min affine_map<(d0) -> (d0)> (%arg0, %arg1)
  return
}""", air.ParseError, "takes 1 dim and 0 symbols, but 2 dim operands"),
    ("""func.func @vector_load_invalid_vector_type() {
  %0 = memref.alloc() : memref<100xf32>
  affine.for %i0 = 0 to 16 step 8 {
    %1 = affine.vector_load %0[%i0] : memref<100xf32>, vector<8xf64>
  }
  return
}""", air.VerifyError, "must have the memref's element type"),
    ("""func.func @vector_load_vector_memref() {
  %0 = memref.alloc() : memref<100xvector<8xf32>>
  affine.for %i0 = 0 to 4 {
    %1 = affine.vector_load %0[%i0] : memref<100xvector<8xf32>>, vector<8xf32>
  }
  return
}""", air.VerifyError, "must have the memref's element type"),
    ("""func.func @affine_for_iter_args_mismatch(%buffer: memref<1024xf32>) -> f32 {
  %sum_0 = arith.constant 0.0 : f32
  %res = affine.for %i = 0 to 10 step 2 iter_args(%sum_iter = %sum_0) -> (f32, f32) {
    %t = affine.load %buffer[%i] : memref<1024xf32>
    affine.yield %t : f32
  }
  return %res : f32
}""", air.ParseError, "1 iter_args but 2 result types"),
    ("""func.func @result_number() {
  affine.for %n0#0 = 0 to 7 {
  }
  return
}""", air.ParseError, "result number ('#') is not allowed"),
    ("""func.func @for_negative_stride() {
  affine.for %i = 1 to 10 step -1
}""", air.ParseError, "step must be positive"),
    ("""func.func @missing_for_max(%arg0: index, %arg1: index, %arg2: memref<100xf32>) {
  affine.for %i0 = affine_map<()[s]->(0,s-1)>()[%arg0] to %arg1 {
  }
  return
}""", air.ParseError, "needs 'max'"),
    ("""func.func @affine_if_with_then_region_args(%N: index) {
  %c = arith.constant 200 : index
  %i = arith.constant 20: index
  affine.if affine_set<(i)[N] : (i - 2 >= 0, 4 - i >= 0)>(%i)[%c]  {
    ^bb0(%arg:i32):
      %w = affine.apply affine_map<(d0,d1)[s0] -> (d0+d1+s0)> (%i, %i) [%N]
  }
  return
}""", air.VerifyError, "then and else blocks take no arguments"),
]


@pytest.mark.parametrize("text, error, phrase", INVALID, ids=[t.split("@")[1].split("(")[0] for t, *_ in INVALID])
def test_invalid_mlir_cases_are_refused(text, error, phrase):
    with pytest.raises(error, match=re.escape(phrase)):
        parse(text)


def test_the_interpreter_refuses_unregistered_ops_when_it_reaches_them():
    m = parse("""\
func.func @f(%A: memref<4xf32>, %n: index) {
  affine.for %i = 0 to %n {
    %v = "test.load"(%A, %i) : (memref<4xf32>, index) -> f32
    affine.store %v, %A[%i] : memref<4xf32>
  }
  return
}
""")
    A = np.zeros(4, np.float32)
    air.interpret(m, A, 0)  # never reached: runs
    with pytest.raises(air.InterpretError, match="cannot interpret 'test.load'"):
        air.interpret(m, A, 2)


def test_semi_affine_maps_are_refused_clearly():
    with pytest.raises(air.ParseError, match=r"non-affine floordiv: divisor \(s1\) of \(4096\) is not a constant"):
        parse(chunks(LOOP_TILING_SEMI_AFFINE)[1])


def test_memrefs_of_vectors():
    m = parse(chunks(LOOP_TILING)[2])
    t = m.functions[0].args[0].type
    assert str(t) == "memref<256x256xvector<64xf32>>" and str(t.element_type) == "vector<64xf32>"
    with pytest.raises(air.ParseError, match="invalid vector element type"):
        parse("func.func @f(%v: vector<4xvector<4xf32>>) {\n  return\n}")


# -- upstream MLIR ------------------------------------------------------------------------------
def _iree(text: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([IREE_OPT, "--allow-unregistered-dialect", "--split-input-file", *args, "-"], input=text,
                          capture_output=True, text=True, timeout=120)


@needs_iree
def test_mlir_accepts_our_printed_excerpts_and_reads_them_as_we_do():
    names = list(ALL_CHUNKS)
    ours = [str(parse(ALL_CHUNKS[n])) for n in names]
    proc = _iree("\n// -----\n".join(ours))
    assert proc.returncode == 0, proc.stderr
    theirs = proc.stdout.split("// -----")
    assert len(theirs) == len(names)
    for name, text, mlir_text in zip(names, ours, theirs):
        # MLIR's printing of our text (its own names, %arg0, %0, generic unregistered ops) reads back to ours
        assert air.structurally_equal(parse(mlir_text), parse(text)), name


@needs_iree
def test_we_read_mlirs_printing_of_the_excerpts():
    names = list(ALL_CHUNKS)
    proc = _iree("\n// -----\n".join(ALL_CHUNKS[n] for n in names))
    assert proc.returncode == 0, proc.stderr
    theirs = proc.stdout.split("// -----")
    for name, mlir_text in zip(names, theirs):
        assert air.structurally_equal(parse(mlir_text), parse(ALL_CHUNKS[name])), name
