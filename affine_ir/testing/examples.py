# ruff: noqa: E501  (the MLIR text of HOPPER keeps its long lines)
"""Fixed example programs (MLIR text), useful as seeds and as readable test cases.

Each holds one ``func.func @kernel``; all are in bounds for inputs from
:func:`affine_ir.testing.inputs` (symbols in ``SYMBOL_RANGE``) and compute exactly.
"""

from __future__ import annotations

__all__ = ["EXAMPLES"]

MATMUL = """\
func.func @kernel(%A: memref<8x6xf32>, %B: memref<6x5xf32>, %C: memref<8x5xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 5 {
      affine.for %k = 0 to 6 {
        %a = affine.load %A[%i, %k] : memref<8x6xf32>
        %b = affine.load %B[%k, %j] : memref<6x5xf32>
        %c = affine.load %C[%i, %j] : memref<8x5xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<8x5xf32>
      }
    }
  }
  return
}
"""

PRODUCER_CONSUMER = """\
func.func @kernel(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<8xf32>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    %t = arith.mulf %a, %a : f32
    affine.store %t, %B[%i] : memref<10xf32>
  }
  affine.for %i = 0 to 8 {
    %x = affine.load %B[%i] : memref<10xf32>
    %y = affine.load %B[%i + 2] : memref<10xf32>
    %s = arith.subf %y, %x : f32
    affine.store %s, %C[%i] : memref<8xf32>
  }
  return
}
"""

STENCIL = """\
func.func @kernel(%A: memref<8x8xf32>, %B: memref<8x8xf32>) {
  affine.for %t = 0 to 2 {
    affine.for %i = 1 to 7 {
      affine.for %j = 1 to 7 {
        %n = affine.load %A[%i - 1, %j] : memref<8x8xf32>
        %s = affine.load %A[%i + 1, %j] : memref<8x8xf32>
        %w = affine.load %A[%i, %j - 1] : memref<8x8xf32>
        %e = affine.load %A[%i, %j + 1] : memref<8x8xf32>
        %c = affine.load %A[%i, %j] : memref<8x8xf32>
        %ns = arith.addf %n, %s : f32
        %we = arith.addf %w, %e : f32
        %sum = arith.addf %ns, %we : f32
        %r = arith.subf %sum, %c : f32
        affine.store %r, %B[%i, %j] : memref<8x8xf32>
      }
    }
    affine.for %i = 1 to 7 {
      affine.for %j = 1 to 7 {
        %b = affine.load %B[%i, %j] : memref<8x8xf32>
        affine.store %b, %A[%i, %j] : memref<8x8xf32>
      }
    }
  }
  return
}
"""

TRIANGULAR = """\
#map = affine_map<(d0) -> (d0)>
func.func @kernel(%L: memref<8x8xi32>, %x: memref<8xi32>, %N: index) {
  affine.for %i = 0 to %N {
    affine.for %j = 0 to #map(%i) {
      %l = affine.load %L[%i, %j] : memref<8x8xi32>
      %xj = affine.load %x[%j] : memref<8xi32>
      %xi = affine.load %x[%i] : memref<8xi32>
      %p = arith.muli %l, %xj : i32
      %s = arith.subi %xi, %p : i32
      affine.store %s, %x[%i] : memref<8xi32>
    }
  }
  return
}
"""

WINDOW_SUM = """\
#lb = affine_map<(d0) -> (0, d0 - 2)>
#ub = affine_map<(d0) -> (6, d0 + 3)>
func.func @kernel(%A: memref<6xf32>, %S: memref<6xf32>) {
  affine.for %i = 0 to 6 {
    %zero = arith.constant 0.0 : f32
    %sum = affine.for %k = max #lb(%i) to min #ub(%i) iter_args(%acc = %zero) -> (f32) {
      %a = affine.load %A[%k] : memref<6xf32>
      %n = arith.addf %acc, %a : f32
      affine.yield %n : f32
    }
    affine.store %sum, %S[%i] : memref<6xf32>
  }
  return
}
"""

GUARDED = """\
#even = affine_set<(d0) : (d0 mod 2 == 0)>
func.func @kernel(%A: memref<12xi32>, %B: memref<6x2xi32>) {
  affine.for %i = 0 to 12 {
    %a = affine.load %A[%i] : memref<12xi32>
    affine.if #even(%i) {
      %d = arith.addi %a, %a : i32
      affine.store %d, %B[%i floordiv 2, 0] : memref<6x2xi32>
    } else {
      affine.store %a, %B[%i floordiv 2, %i mod 2] : memref<6x2xi32>
    }
  }
  return
}
"""

#: name -> MLIR text of a small program with one ``func.func @kernel``.
EXAMPLES: dict[str, str] = {
    "matmul": MATMUL,
    "producer_consumer": PRODUCER_CONSUMER,
    "stencil": STENCIL,
    "triangular": TRIANGULAR,
    "window_sum": WINDOW_SUM,
    "guarded": GUARDED,
}


# Matmul bodies as format templates (``.format(M=.., N=.., K=..)``), in the three forms the
# interpreter benchmark times and its tests check: accumulate through memory, through
# iter_args, and on dynamic shapes (every access bounds-checked).
STORE_FORM = """
func.func @mm(%A: memref<{M}x{K}xf32>, %B: memref<{K}x{N}xf32>, %C: memref<{M}x{N}xf32>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = 0 to {N} {{
      affine.for %k = 0 to {K} {{
        %a = affine.load %A[%i, %k] : memref<{M}x{K}xf32>
        %b = affine.load %B[%k, %j] : memref<{K}x{N}xf32>
        %c = affine.load %C[%i, %j] : memref<{M}x{N}xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<{M}x{N}xf32>
      }}
    }}
  }}
  return
}}"""

ITER_ARGS_FORM = """
func.func @mm(%A: memref<{M}x{K}xf32>, %B: memref<{K}x{N}xf32>, %C: memref<{M}x{N}xf32>) {{
  affine.for %i = 0 to {M} {{
    affine.for %j = 0 to {N} {{
      %c0 = affine.load %C[%i, %j] : memref<{M}x{N}xf32>
      %r = affine.for %k = 0 to {K} iter_args(%acc = %c0) -> (f32) {{
        %a = affine.load %A[%i, %k] : memref<{M}x{K}xf32>
        %b = affine.load %B[%k, %j] : memref<{K}x{N}xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }}
      affine.store %r, %C[%i, %j] : memref<{M}x{N}xf32>
    }}
  }}
  return
}}"""

DYNAMIC_FORM = """
func.func @mm(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>, %M: index, %N: index, %K: index) {{
  affine.for %i = 0 to %M {{
    affine.for %j = 0 to %N {{
      affine.for %k = 0 to %K {{
        %a = affine.load %A[%i, %k] : memref<?x?xf32>
        %b = affine.load %B[%k, %j] : memref<?x?xf32>
        %c = affine.load %C[%i, %j] : memref<?x?xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<?x?xf32>
      }}
    }}
  }}
  return
}}"""

MATMUL_TEMPLATES: dict[str, str] = {"store": STORE_FORM, "iter_args": ITER_ARGS_FORM, "dynamic": DYNAMIC_FORM}


# Two small functions used as seeds by the parser tests (round trip, mutation fuzzing):
# a shift with an aliased map, and a nest with symbolic, max/min and stepped bounds,
# iter_args, a symbol subscript and an affine.if.
SHIFT = """\
#map = affine_map<(d0) -> (d0 + 1)>
func.func @shift(%A: memref<64xf32>, %B: memref<63xf32>) {
  affine.for %i = 0 to 63 {
    %a = affine.load %A[%i] : memref<64xf32>
    %b = affine.load %A[%i + 1] : memref<64xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %B[%i] : memref<63xf32>
  }
  return
}
"""

MINMAX_NEST = """\
func.func @mm(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>, %N: index) {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  affine.for %i = 0 to %N step 2 {
    affine.for %j = max affine_map<(d0)[s0] -> (d0, s0 - 4)>(%i)[%N] to min affine_map<(d0) -> (d0 + 4, 64)>(%i) {
      %r = affine.for %k = 0 to 10 iter_args(%acc = %cst) -> (f32) {
        %a = affine.load %A[%i, %k + symbol(%N)] : memref<?x?xf32>
        %s = arith.addf %acc, %a : f32
        affine.yield %s : f32
      }
      affine.if affine_set<(d0, d1)[s0] : (d0 - d1 >= 0, s0 - 1 == 0)>(%i, %j)[%N] {
        affine.store %r, %C[%i, %j floordiv 2] : memref<?x?xf32>
      }
    }
  }
  return
}
"""

# The Hopper ops (issue 19): every op and type of affine_ir.dialects.nvgpu_hopper and .nvvm, with
# type aliases, memref.view and memref.cast, as upstream MLIR (iree-opt) parses it. Not a program to
# run (its ops are not in a gpu.launch): a parser and printer case.
HOPPER = """\
!barrierType = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
!tmaA = !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!tmaB = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @f(%a: memref<*xf16>, %g: memref<4096x4096xf16>, %dyn: memref<?xi8, 3>, %smA: memref<128x64xf16, 3>, %smB: memref<64x64xf16, 3>, %out: memref<128x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %cnt = arith.constant 16384 : index
  %ticks = arith.constant 10000000 : index
  %false = arith.constant false
  %u = memref.cast %g : memref<4096x4096xf16> to memref<*xf16>
  %v = memref.view %dyn[%cnt][] : memref<?xi8, 3> to memref<128x64xf16, 3>
  %bar = nvgpu.mbarrier.create -> !barrierType
  nvgpu.mbarrier.init %bar[%c0], %c1 : !barrierType
  nvgpu.mbarrier.init %bar[%c0], %c1, predicate = %false : !barrierType
  %dA = nvgpu.tma.create.descriptor %a box[%c128, %c64] : memref<*xf16> -> !tmaA
  %dB = nvgpu.tma.create.descriptor %a box[%c64, %c64] : memref<*xf16> -> !tmaB
  nvgpu.tma.prefetch.descriptor %dA : !tmaA
  nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %cnt : !barrierType
  %tok = nvgpu.mbarrier.arrive %bar[%c0] : !barrierType -> !nvgpu.mbarrier.token
  nvgpu.tma.async.load %dA[%c0, %c0], %bar[%c0] to %smA : !tmaA, !barrierType -> memref<128x64xf16, 3>
  nvgpu.tma.async.store %smA to %dA[%c0, %c0] : memref<128x64xf16, 3> -> !tmaA
  nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !barrierType
  %wA = nvgpu.warpgroup.generate.descriptor %smA, %dA : memref<128x64xf16, 3>, !tmaA -> !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>
  %wB = nvgpu.warpgroup.generate.descriptor %smB, %dB : memref<64x64xf16, 3>, !tmaB -> !nvgpu.warpgroup.descriptor<tensor = memref<64x64xf16, 3>>
  %acc = nvgpu.warpgroup.mma.init.accumulator -> !nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>>
  %r = nvgpu.warpgroup.mma %wA, %wB, %acc waitGroup = 0 transposeB : !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>, !nvgpu.warpgroup.descriptor<tensor = memref<64x64xf16, 3>>, !nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>> -> !nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>>
  nvgpu.warpgroup.mma.store %r, %out : !nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>> to memref<128x64xf32>
  nvvm.wgmma.fence.aligned
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 0
  nvvm.fence.proxy <async.shared>, space = <cta>
  nvvm.fence.mbarrier.init
  nvvm.setmaxregister increase 240
  nvvm.cp.async.bulk.commit.group
  nvvm.cp.async.bulk.wait_group 0
  %bar_id = arith.constant 1 : i32
  %bar_threads = arith.constant 256 : i32
  nvvm.barrier id = %bar_id number_of_threads = %bar_threads
  nvvm.barrier
  return
}
"""
