# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""Text round trips over a hand-written corpus that uses every op kind of ``affine_ir.dialects``.

For each program: print -> parse -> print is a fixpoint, the re-parsed module is structurally
equal to the first parse, and, where ``iree-opt`` (upstream MLIR's opt tool) is installed,
MLIR accepts our printed text and our parser reads MLIR's own printing of the program
(``%arg0``, ``%c0``, ``#map`` aliases, ``%0:2``) into the same IR.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

import affine_ir as air
from affine_ir.dialects import affine as affine_d
from affine_ir.dialects import arith, gpu, math, memref, vector
from affine_ir.testing.examples import HOPPER, MINMAX_NEST, SHIFT

SHIFT_AND_MM = SHIFT + MINMAX_NEST

ARITH = """\
func.func @arith(%a: f32, %b: f32, %i: i32, %j: i32, %x: index, %v: vector<8xf32>) -> f32 {
""" + "".join(f"  %f{k} = arith.{op} %a, %b : f32\n" for k, op in enumerate(arith.FLOAT_BINARY)) + """\
  %neg = arith.negf %a : f32
""" + "".join(f"  %i{k} = arith.{op} %i, %j : i32\n" for k, op in enumerate(arith.INT_BINARY)) + """\
  %xi = arith.addi %x, %x : index
  %vv = arith.mulf %v, %v : vector<8xf32>
""" + "".join(f"  %pf{k} = arith.cmpf {p}, %a, %b : f32\n" for k, p in enumerate(arith.CMPF_PREDICATES)) + "".join(
    f"  %pi{k} = arith.cmpi {p}, %i, %j : i32\n" for k, p in enumerate(arith.CMPI_PREDICATES)) + """\
  %px = arith.cmpi ult, %x, %x : index
  %vc = arith.cmpf olt, %v, %v : vector<8xf32>
  %vs = arith.select %vc, %v, %v : vector<8xi1>, vector<8xf32>
  %s = arith.select %pf4, %a, %neg : f32
  %e1 = arith.index_cast %x : index to i32
  %e2 = arith.index_cast %i : i32 to index
  %e3 = arith.sitofp %i : i32 to f32
  %e4 = arith.uitofp %i : i32 to f64
  %e5 = arith.fptosi %a : f32 to i32
  %e6 = arith.fptoui %a : f32 to i64
  %e7 = arith.extf %a : f32 to f64
  %e8 = arith.truncf %a : f32 to f16
  %e9 = arith.truncf %a : f32 to bf16
  %e10 = arith.extsi %i : i32 to i64
  %e11 = arith.extui %i : i32 to i64
  %e12 = arith.trunci %i : i32 to i8
  %e13 = arith.bitcast %a : f32 to i32
  %e14 = arith.extsi %pi0 : i1 to i32
  %e15 = arith.sitofp %vs : vector<8xf32> to vector<8xf32>
  return %s : f32
}
""".replace("  %e15 = arith.sitofp %vs : vector<8xf32> to vector<8xf32>\n", "")

CONSTANTS = """\
func.func @constants() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant -7 : index
  %t = arith.constant true
  %f = arith.constant false
  %i8 = arith.constant -128 : i8
  %u8 = arith.constant 255 : i8
  %i16 = arith.constant 255 : i16
  %i64 = arith.constant 123456789012 : i64
  %f1 = arith.constant 1.5 : f32
  %f2 = arith.constant -2.0e-3 : f64
  %f3 = arith.constant 0.1 : f16
  %f4 = arith.constant 3.140625 : bf16
  %f5 = arith.constant 0.1 : f32
  %f6 = arith.constant 0.1 : f64
  %inf = arith.constant 0x7F800000 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %dinf = arith.constant 0x7FF0000000000000 : f64
  %dnan = arith.constant 0x7FF8000000000000 : f64
  %hinf = arith.constant 0x7C00 : f16
  %hnan = arith.constant 0x7E00 : f16
  %binf = arith.constant 0x7F80 : bf16
  %tiny = arith.constant 0x00000001 : f32
  %v = arith.constant dense<0.0> : vector<8xf32>
  %w = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  %b = arith.constant dense<[true, false]> : vector<2xi1>
  %v2 = arith.constant dense<1.0> : vector<2x4xf16>
  %v3 = arith.constant dense<[1.5, -2.0]> : vector<2xbf16>
  return
}
"""

MEMREF_MATH_VECTOR_CALLS = """\
#map = affine_map<(d0, d1) -> (d0 + d1)>
module attributes {gpu.container_module, test.flag, test.num = 3 : i64} {
  func.func private @ext(memref<?x8xf32>, index) -> f32
  func.func @callee(%a: f32) -> (f32, i32) attributes {llvm.emit_c_interface} {
    %c = arith.constant 7 : i32
    return %a, %c : f32, i32
  }
  func.func @mem(%n: index, %m: index, %A: memref<?x8xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %0 = memref.alloc(%n) : memref<?x8xf32>
    %1 = memref.alloca() : memref<4xf32>
    %2 = memref.alloc(%n, %m) {test.align = 64 : i64} : memref<?x?xf32>
    %3 = memref.alloc() : memref<16x16xf16, #gpu.address_space<workgroup>>
    %4 = memref.alloca() : memref<16xf16, #gpu.address_space<private>>
    %5 = memref.alloc() : memref<16xf16, 3>
    %6 = memref.alloc() : memref<f32>
    %d = memref.dim %0, %c0 : memref<?x8xf32>
    %v = memref.load %0[%c0, %c0] : memref<?x8xf32>
    memref.store %v, %1[%c0] : memref<4xf32>
    %old = memref.atomic_rmw addf %v, %1[%c0] : (f32, memref<4xf32>) -> f32
    %sc = memref.load %6[] : memref<f32>
    %r = func.call @ext(%A, %d) : (memref<?x8xf32>, index) -> f32
    %r2:2 = call @callee(%r) : (f32) -> (f32, i32)
    %s = arith.addf %r2#0, %v : f32
    %e = math.exp %s : f32
    %e2 = math.exp2 %e : f32
    %l = math.log %e2 : f32
    %l2 = math.log2 %l : f32
    %t = math.tanh %l2 : f32
    %q = math.sqrt %t : f32
    %rq = math.rsqrt %q : f32
    %er = math.erf %rq : f32
    %ab = math.absf %er : f32
    %si = math.sin %ab : f32
    %co = math.cos %si : f32
    %fl = math.floor %co : f32
    %ce = math.ceil %fl : f32
    %pw = math.powf %ce, %fl : f32
    %fm = math.fma %pw, %ce, %fl : f32
    %vx = math.exp %vb : vector<8xf32>
    %vb = vector.broadcast %fm : f32 to vector<8xf32>
    %red = vector.reduction <add>, %vb : vector<8xf32> into f32
    %red2 = vector.reduction <maximumf>, %vb : vector<8xf32> into f32
    %ib = vector.broadcast %r2#1 : i32 to vector<4xi32>
    %ired = vector.reduction <xor>, %ib : vector<4xi32> into i32
    %a1 = affine.apply #map(%n, %m)
    %a2 = affine.apply affine_map<()[s0] -> (s0 * 4)>()[%n]
    %mn = affine.min affine_map<(d0)[s0] -> (d0, s0 + 3, 10)>(%a1)[%m]
    %mx = affine.max affine_map<(d0) -> (d0 - 1, 0)>(%mn)
    affine.for %i = 0 to 8 step 4 {
      %vl = affine.vector_load %A[%mx, %i] : memref<?x8xf32>, vector<4xf32>
      affine.vector_store %vl, %A[%mx, %i] : memref<?x8xf32>, vector<4xf32>
    }
    memref.dealloc %0 : memref<?x8xf32>
    memref.dealloc %2 : memref<?x?xf32>
    return %red : f32
  }
}
""".replace("    %vx = math.exp %vb : vector<8xf32>\n", "")

AFFINE = """\
#lb = affine_map<(d0) -> (d0 * 2, 0)>
#ub = affine_map<(d0)[s0] -> (d0 + 32, s0)>
#set0 = affine_set<(d0)[s0] : (d0 >= 0, s0 - d0 - 1 >= 0)>
func.func @affine(%A: memref<?x64xf32>, %B: memref<64x64xf32>, %N: index) -> f32 {
  %cst = arith.constant 0.000000e+00 : f32
  %r:2 = affine.for %i = 0 to 64 iter_args(%s0 = %cst, %s1 = %cst) -> (f32, f32) {
    %a = affine.load %B[%i, %i] : memref<64x64xf32>
    %t0 = arith.addf %s0, %a : f32
    %t1 = arith.mulf %s1, %a : f32
    affine.yield %t0, %t1 : f32, f32
  }
  %sum = arith.addf %r#0, %r#1 : f32
  affine.for %i = 0 to %N {
    affine.for %j = max #lb(%i) to min #ub(%i)[%N] step 4 {
      %v = affine.load %A[%i, %j mod 64] : memref<?x64xf32>
      %w = affine.if #set0(%j)[%N] -> f32 {
        affine.yield %v : f32
      } else {
        affine.yield %cst : f32
      }
      affine.if affine_set<(d0, d1) : (d0 - d1 == 0)>(%i, %j) {
        affine.store %w, %A[%i, (%j + 3) floordiv 4] : memref<?x64xf32>
      } else {
        affine.store %cst, %A[%i, %j ceildiv 4] : memref<?x64xf32>
      }
      %x = affine.load %A[%j floordiv 2 + %i, -%j + symbol(%N) * 3 - 1] : memref<?x64xf32>
    }
    affine.for %k = max #lb(%i) to %N {
    }
    affine.for %k = affine_map<()[s0] -> (s0 - 1)>()[%N] to affine_map<(d0) -> (d0 + 7)>(%i) {
    }
    affine.for %k = -4 to 4 step 3 {
    }
  }
  affine.parallel (%i, %j) = (0, 0) to (64, 64) {
    %v = affine.load %B[%i, %j] : memref<64x64xf32>
    affine.store %v, %B[%j, %i] : memref<64x64xf32>
  }
  %p = affine.parallel (%i) = (max(0, symbol(%N) - 64)) to (min(64, symbol(%N))) step (2) reduce ("addf") -> (f32) {
    %v = affine.load %B[%i, %i] : memref<64x64xf32>
    affine.yield %v : f32
  }
  %p2:2 = affine.parallel (%i, %j) = (0, 0) to (symbol(%N), 64) step (4, 8) reduce ("maximumf", "addf") -> (f32, f32) {
    %v = affine.load %B[%i, %j] : memref<64x64xf32>
    affine.yield %v, %v : f32, f32
  }
  %out = arith.addf %p, %p2#1 : f32
  return %out : f32
}
"""

GPU = """\
module attributes {gpu.container_module} {
  func.func @gpu(%A: memref<64x64xf16>, %C: memref<64x64xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %smem = arith.constant 0 : i32
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
      %buf = memref.alloc() : memref<16x16xf16, #gpu.address_space<workgroup>>
      %t = gpu.thread_id x
      %tb = gpu.thread_id y upper_bound 32
      %b = gpu.block_id y
      %bd = gpu.block_dim z
      %gd = gpu.grid_dim x
      %zero = arith.constant 0.000000e+00 : f32
      %a = gpu.subgroup_mma_load_matrix %A[%bx, %by] leadDimension 64 : memref<64x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %bm = gpu.subgroup_mma_load_matrix %buf[%tx, %ty] leadDimension 16 transpose : memref<16x16xf16, #gpu.address_space<workgroup>> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %c = gpu.subgroup_mma_constant_matrix %zero : !gpu.mma_matrix<16x16xf32, "COp">
      %d = gpu.subgroup_mma_compute %a, %bm, %c : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.subgroup_mma_store_matrix %d, %C[%bx, %by] leadDimension 64 : !gpu.mma_matrix<16x16xf32, "COp">, memref<64x64xf32>
      gpu.barrier
      %off = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %sh, %valid = gpu.shuffle xor %zero, %off, %w : f32
      %dn, %ok = gpu.shuffle down %sh, %off, %w : f32
      affine.for %i = 0 to %sx {
        %v = affine.load %buf[%i, symbol(%tx)] : memref<16x16xf16, #gpu.address_space<workgroup>>
      }
      gpu.terminator
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) dynamic_shared_memory_size %smem {
      gpu.barrier {test.sync}
      gpu.terminator
    } {test.kernel}
    gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c4, %ncy = %c1, %ncz = %c1) blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) dynamic_shared_memory_size %smem {
      %cid = gpu.cluster_id x
      %cbid = gpu.cluster_block_id y
      %in = arith.addi %cx, %ncx : index
      gpu.terminator
    }
    return
  }
}
"""

ATTRIBUTES = """\
module @m attributes {test.str = "a\\"b\\n", test.arr = [1 : i64, "x", @g], test.unit, test.type = memref<4xf32>} {
  func.func private @g(f32, memref<4xf32>) -> f32 attributes {test.decl}
  func.func @f(%a: f32, %A: memref<4xf32>, %n: index) -> f32 attributes {test.f = 1.5 : f32, test.i = 7 : index} {
    %c = arith.constant {test.c} 2.0 : f32
    %0 = arith.addf %a, %c {test.add = true} : f32
    %1 = arith.cmpf olt, %0, %a {test.cmp} : f32
    %2 = arith.select %1, %0, %a {test.sel} : f32
    %3 = func.call @g(%2, %A) {test.call} : (f32, memref<4xf32>) -> f32
    affine.for %i = 0 to 4 {
      %v = affine.load %A[%i] {test.load} : memref<4xf32>
      affine.store %v, %A[%i] {test.store} : memref<4xf32>
    } {test.loop = "outer"}
    %t = arith.index_cast %n {test.cast} : index to i32
    %r = affine.apply affine_map<(d0) -> (d0 * 2)>(%n) {test.apply}
    %m = memref.alloc(%n) {test.alloc} : memref<?xf32>
    memref.dealloc %m {test.dealloc} : memref<?xf32>
    return {test.ret} %3 : f32
  }
  func.func @"quoted name"() {
    return
  }
}
"""

NVGPU = """\
func.func @nvgpu(%g: memref<64x64xf16>, %sm: memref<64x64xf16, #gpu.address_space<workgroup>>, %s8: memref<32x32xi8, 3>, %sf: memref<16x16xf32, 3>, %gf: memref<16x16xf32>, %i: index, %j: index, %n: index, %c: vector<2x2xf32>, %ci: vector<2x2xi32>, %m: !gpu.mma_matrix<16x16xf16, "COp">, %mi: !gpu.mma_matrix<16x16xi32, "COp">) -> vector<2x2xf32> {
  %t0 = nvgpu.device_async_copy %g[%i, %j], %sm[%i, %j], 8 bypassL1 : memref<64x64xf16> to memref<64x64xf16, #gpu.address_space<workgroup>>
  %t1 = nvgpu.device_async_copy %gf[%i, %j], %sf[%j, %i], 2, %n : memref<16x16xf32> to memref<16x16xf32, 3>
  %grp = nvgpu.device_async_create_group %t0, %t1
  nvgpu.device_async_wait %grp numGroups = 1
  nvgpu.device_async_wait %grp
  %a = nvgpu.ldmatrix %sm[%i, %j] numTiles = 4 transpose = false : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
  %b = nvgpu.ldmatrix %sm[%j, %i] numTiles = 2 transpose = true : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<2x2xf16>
  %d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16] : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  %af = nvgpu.ldmatrix %sf[%i, %j] numTiles = 4 transpose = false : memref<16x16xf32, 3> -> vector<4x1xf32>
  %bf = nvgpu.ldmatrix %sf[%j, %i] numTiles = 2 transpose = false : memref<16x16xf32, 3> -> vector<2x1xf32>
  %d2 = nvgpu.mma.sync(%af, %bf, %d) mmaShape = [16, 8, 8] tf32Enabled : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
  %ai = nvgpu.ldmatrix %s8[%i, %j] numTiles = 4 transpose = false : memref<32x32xi8, 3> -> vector<4x4xi8>
  %bi = nvgpu.ldmatrix %s8[%j, %i] numTiles = 2 transpose = false : memref<32x32xi8, 3> -> vector<2x4xi8>
  %di = nvgpu.mma.sync(%ai, %bi, %ci) mmaShape = [16, 8, 32] : (vector<4x4xi8>, vector<2x4xi8>, vector<2x2xi32>) -> vector<2x2xi32>
  %e = gpu.subgroup_mma_elementwise addf %m, %m : (!gpu.mma_matrix<16x16xf16, "COp">, !gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf16, "COp">
  %x = gpu.subgroup_mma_elementwise extf %e : (!gpu.mma_matrix<16x16xf16, "COp">) -> !gpu.mma_matrix<16x16xf32, "COp">
  %r = gpu.subgroup_mma_elementwise negates %mi : (!gpu.mma_matrix<16x16xi32, "COp">) -> !gpu.mma_matrix<16x16xi32, "COp">
  %x10 = vector.extract %d2[1, 0] : f32 from vector<2x2xf32>
  %row = vector.extract %d2[1] : vector<2xf32> from vector<2x2xf32>
  %ins = vector.insert %x10, %d2 [0, 1] : f32 into vector<2x2xf32>
  %ins2 = vector.insert %row, %ins [0] : vector<2xf32> into vector<2x2xf32>
  %bb = nvgpu.ldmatrix %sm[%j, %i] numTiles = 4 transpose = true : memref<64x64xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
  %b1 = vector.extract_strided_slice %bb offsets = [2, 0], sizes = [2, 2], strides = [1, 1] : vector<4x2xf16> to vector<2x2xf16>
  %b0 = vector.extract_strided_slice %bb offsets = [0], sizes = [2], strides = [1] : vector<4x2xf16> to vector<2x2xf16>
  return %ins2 : vector<2x2xf32>
}
"""

#: thread-block clusters: their barrier, a multicast TMA load, an arrival on another block's mbarrier (ours)
CLUSTERS = """\
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
!tma = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
func.func @k(%d: !tma) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %mask = arith.constant 3 : i16
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c2, %ncy = %c1, %ncz = %c1) blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %smem = memref.alloc() : memref<8192xi8, 3>
    %tile = memref.view %smem[%c0][] : memref<8192xi8, 3> to memref<64x64xf16, 3>
    %b = nvgpu.mbarrier.create -> !bars
    nvvm.cluster.arrive aligned
    nvvm.cluster.wait aligned
    nvgpu.tma.async.load %d[%c0, %c0], %b[%c0] to %tile multicast_mask = %mask : !tma, !bars -> memref<64x64xf16, 3>
    nvgpu.mbarrier.arrive.remote %b[%c0], %c1 : !bars
    nvvm.cluster.arrive
    nvvm.cluster.wait
    gpu.terminator
  }
  return
}
"""

CORPUS = {
    "shift_and_mm": SHIFT_AND_MM,
    "arith": ARITH,
    "constants": CONSTANTS,
    "memref_math_vector_calls": MEMREF_MATH_VECTOR_CALLS,
    "affine": AFFINE,
    "gpu": GPU,
    "nvgpu": NVGPU,
    "attributes": ATTRIBUTES,
    "hopper": HOPPER,
    "clusters": CLUSTERS,
}
#: The corpus upstream MLIR reads: all but the arrival on another block's mbarrier, an op of ours (upstream's nvgpu
#: has none).
UPSTREAM = {name: text.replace("    nvgpu.mbarrier.arrive.remote %b[%c0], %c1 : !bars\n", "")
            for name, text in CORPUS.items()}
IREE_OPT = shutil.which("iree-opt")
needs_iree = pytest.mark.skipif(IREE_OPT is None, reason="iree-opt (pip install iree-base-compiler) not on PATH")


def test_corpus_uses_every_registered_op():
    used = set()
    for text in CORPUS.values():
        used.update(op.name for op in air.parse(text).walk())
    from affine_ir.core import OP_REGISTRY

    ours = {name for name, cls in OP_REGISTRY.items()
            if cls.__module__.startswith("affine_ir.dialects.")}
    assert ours - used == set()
    # and the op tables the dialects export are all in the registry
    for ops in (arith.OPS, math.OPS):
        assert {cls.name for cls in ops.values()} <= used
    assert {affine_d.AffineParallelOp.name, gpu.SubgroupMmaComputeOp.name, memref.AllocaOp.name,
            vector.ReductionOp.name} <= used


@pytest.mark.parametrize("name", CORPUS)
def test_print_parse_print_is_a_fixpoint(name):
    m = air.parse(CORPUS[name])
    text = str(m)
    again = air.parse(text)
    assert str(again) == text
    assert air.structurally_equal(again, m)
    assert air.structurally_equal(air.parse(str(again)), again)


def test_packed_results_print_as_groups():
    m = air.parse(AFFINE)
    text = str(m)
    assert "%r:2 = affine.for %i = 0 to 64 iter_args(%s0 = %cst, %s1 = %cst) -> (f32, f32) {" in text
    assert "%sum = arith.addf %r#0, %r#1 : f32" in text
    assert "%p2:2 = affine.parallel" in text and "%out = arith.addf %p, %p2#1 : f32" in text
    # ops whose results carry their own names keep them
    assert "%sh, %valid = gpu.shuffle xor" in str(air.parse(GPU))


def test_special_float_constants_print_as_hex_and_keep_their_bits():
    text = str(air.parse(CONSTANTS))
    for literal in ("0x7F800000 : f32", "0xFF800000 : f32", "0x7FC00000 : f32", "0x7FF0000000000000 : f64",
                    "0x7FF8000000000000 : f64", "0x7C00 : f16", "0x7E00 : f16", "0x7F80 : bf16"):
        assert f"arith.constant {literal}" in text
    assert "arith.constant 3.140625e+00 : bf16" in text
    assert "arith.constant 1.000000e-01 : f32" in text
    assert "%u8 = arith.constant -1 : i8" in text  # 255 : i8 is -1 as a signless 8-bit integer
    assert "arith.constant dense<[1.500000e+00, -2.000000e+00]> : vector<2xbf16>" in text


def test_access_maps_are_kept_in_printable_form():
    """A subscript's dims are numbered in order of appearance in the printed text, so the
    op built from any equivalent map prints and re-parses to the same IR."""
    from affine_ir.affine_expr import dim, symbol
    from affine_ir.affine_map import AffineMap

    m = air.parse(SHIFT_AND_MM)
    f = m.functions[1]
    load = next(op for op in f.walk() if op.name == "affine.load")
    i, k, n = load.indices
    # (d0, d1, d2)[s0]: the map names k first, repeats n as a dim and leaves d2 unused
    odd = AffineMap(3, 1, (dim(1) + dim(0) - dim(0), dim(0) + symbol(0) * 2 - symbol(0)))
    new = affine_d.AffineLoadOp(load.memref, odd, [k, i, n, n])
    assert str(new.map) == "(d0, d1)[s0] -> (d0, d1 + s0)"
    assert new.indices == (i, k, n)
    load.parent.insert_before(load, new)
    text = str(m)
    assert air.structurally_equal(air.parse(text), m)


@pytest.fixture(scope="module")
def iree_outputs():
    """iree-opt's printing of every corpus program, in one run (``--split-input-file``)."""
    names = list(UPSTREAM)
    joined = "\n// -----\n".join(UPSTREAM[n] for n in names)
    proc = subprocess.run([IREE_OPT, "--split-input-file", "-"], input=joined, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    chunks = proc.stdout.split("// -----")
    assert len(chunks) == len(names)
    return dict(zip(names, chunks))


@needs_iree
def test_mlir_accepts_our_printed_text():
    names = list(UPSTREAM)
    ours = [str(air.parse(UPSTREAM[n])) for n in names]
    proc = subprocess.run([IREE_OPT, "--split-input-file", "-"], input="// -----\n".join(ours),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@needs_iree
@pytest.mark.parametrize("name", UPSTREAM)
def test_we_parse_mlir_printed_text(name, iree_outputs):
    theirs = iree_outputs[name]
    ours = air.parse(UPSTREAM[name])
    assert theirs.strip() != str(ours).strip()  # MLIR's own names (%arg0, %c0, %0:2), not ours
    parsed = air.parse(theirs)
    assert air.structurally_equal(parsed, ours)
    assert air.parse(str(parsed)) is not None and str(air.parse(str(parsed))) == str(parsed)


def test_subscripts_and_parallel_bounds_print_in_the_parsed_form_after_operands_change():
    """Replacing a value by one the map already reads (``%m`` by ``%n``) leaves a dim repeated;
    a value both dim and symbol stays both (the parser keeps ``%n`` and ``symbol(%n)`` apart):
    either way the text is a fixpoint of print -> parse -> print."""
    m = air.parse("""
func.func @f(%A: memref<99xi32>, %B: memref<9x99xi32>, %n: index, %m: index) {
  affine.parallel (%i) = (%n + %m) to (%m + 9) {
    %a = affine.load %A[(%m + 1) floordiv 2 + %i + %n * 3] : memref<99xi32>
    %b = affine.load %B[(-symbol(%n) + 1) floordiv 4, %m + %i] : memref<9x99xi32>
  }
  return
}""")
    f = m.functions[0]
    n, mm = f.body.args[2], f.body.args[3]
    mm.replace_all_uses_with(n)
    text = str(m)
    assert str(air.parse(text)) == text
    assert "(%n * 2) to (%n + 9)" in text and "symbol(%n)" in text


@pytest.mark.parametrize("expr", ["c", "d0 + c", "d0 * c", "d1 + d0 * c + 5", "(d0 + c).floordiv(3)"])
def test_the_most_negative_index_round_trips_in_affine_text(expr):
    """-2**63 has no literal (the parser, like MLIR's, reads none past 2**63 - 1): the printer
    writes it as -9223372036854775807 - 1, and the text parses back to the same map."""
    from affine_ir import AffineExpr

    d0, d1, c = AffineExpr.dim(0), AffineExpr.dim(1), -(2**63)
    e = eval(expr, {"d0": d0, "d1": d1, "c": AffineExpr.constant(c)})
    text = (f"#m = affine_map<(d0, d1) -> ({e})>\nfunc.func @f(%a: index, %b: index) -> index {{\n"
            "  %r = affine.apply #m(%a, %b)\n  return %r : index\n}\n")
    assert "9223372036854775808" not in text
    back = air.parse(text)
    (apply,) = [op for op in back.walk() if op.name == "affine.apply"]
    assert apply.map.results[0] == e
    assert str(air.parse(str(back))) == str(back)


def test_thread_block_clusters_are_read_run_and_printed_as_cuda():
    """``gpu.launch clusters(...)`` (upstream's syntax: 18 body arguments, the cluster ids and sizes last) is
    read, printed and verified; it runs on the interpreter and prints as CUDA with ``__cluster_dims__`` (see
    tests/test_interpreter_clusters.py)."""
    from codegen.cuda import emit

    m = air.parse(GPU)
    launch = next(op for op in m.walk() if isinstance(op, gpu.LaunchOp) and op.cluster_size)
    assert len(launch.body.args) == 18 and launch.dynamic_shared_memory is not None
    assert [v.name_hint for v in launch.body.args[12:]] == ["cx", "cy", "cz", "ncx", "ncy", "ncz"]
    one = air.parse("""func.func @k() {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c2, %ncy = %c1, %ncz = %c1) blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}""")
    air.interpret(one)
    assert "__cluster_dims__(2, 1, 1)" in emit(one).source
