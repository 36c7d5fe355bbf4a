"""``gpu-map-reductions`` (``transforms.gpu.gpu_reduce``): row reductions as one block per row.

Every output verifies, prints/parses to a fixpoint and is a host function; it runs on the
interpreter's launch emulation against the input under both thread orders (a missing barrier
shows as a difference; two tests remove one and watch the check fail). Results are compared
exactly where reassociation cannot change them (max/min, integer reductions, sums of
integer-valued data), within a tolerance otherwise (float sums of inexact terms: the block
reduction sums in another order). The CUDA C compiles with NVRTC for sm_90 with an empty log;
the ``gpu`` tests (skipped without a GPU) run it against the interpreter and numpy.

Attention goes through the default GPU pipeline (fusion, ``affine-privatize``): its score,
probability and accumulator rows become workgroup row buffers and its row loops hold loops;
on inputs whose exponentials are exactly 0 or 1 the mapped program gives the original's bits
in both thread orders, on normal data it agrees within the output's tolerance.
"""

from __future__ import annotations

import math
from collections import Counter

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
import runtime
from affine_ir import library as L
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.gpu import BarrierOp, LaunchOp
from affine_ir.interp import reversed_schedule
from affine_ir.library import reference
from affine_ir.testing import (
    assert_equivalent,
    assert_same_bits_in_both_thread_orders,
    fusion_programs_with_inputs,
    numpy_dtype,
    run,
)
from transforms import PipelineError
from transforms.gpu.gpu_map import check_host_function
from transforms.gpu.gpu_reduce import GpuMapReductions, map_row_reductions, map_rows
from transforms.gpu.gpu_reduce_plan import block_size_for, plan_row_reductions
from transforms.pass_manager import PassManager
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import assert_refused_unchanged, map_to_gpu, run_pipeline

FUSE = "canonicalize,affine-loop-fusion,affine-scalrep,canonicalize"
GPU = runtime.gpu_available()


def pipeline(block: int = 256) -> str:
    """The GPU pipeline this pass belongs in: fusion, then row reductions, then the rest."""
    return f"{FUSE},gpu-map-reductions{{block-size={block}}},gpu-map"


def mapped(module, pipe: str):
    """``module`` through ``pipe``, checked like gpu-map's output (:func:`transforms.testing.map_to_gpu`);
    returns it and the decisions of gpu-map-reductions."""
    out, decisions = map_to_gpu(module, pipe)
    return out, [d for d in decisions if d.pass_name == "gpu-map-reductions"]


def launches(module) -> list[LaunchOp]:
    return [op for op in module.walk() if isinstance(op, LaunchOp)]


def block_of(launch: LaunchOp) -> tuple:
    return tuple(v.owner.value for v in launch.block_size)


def tolerance(dtype) -> float:
    return {np.dtype(np.float16): 2e-3, np.dtype(ml_dtypes.bfloat16): 1.6e-2}.get(np.dtype(dtype), 2e-6)


def assert_close(before, after, args, exact: bool) -> None:
    """``after`` computes what ``before`` computes, in both thread orders: exactly, or within the
    output type's tolerance (reassociated float sums)."""
    if exact:
        assert_equivalent(before, after, args)
        with reversed_schedule():
            assert_equivalent(before, after, args)
        return
    want = run(before, args)
    for schedule in (False, True):
        if schedule:
            with reversed_schedule():
                got = run(after, args)
        else:
            got = run(after, args)
        for w, g in zip(want, got):
            tol = tolerance(w.dtype)
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


def integer_data(module, shapes=None, symbols=(), seed=0, low=-4, high=5) -> list:
    """Integer-valued arrays (sums of them are exact in any order) for the memref arguments of
    ``shapes`` (default: their static shapes), then ``symbols`` for the index arguments."""
    rng = np.random.default_rng(seed)
    mems = [a.type for a in module.functions[0].args if hasattr(a.type, "shape")]
    shapes = shapes or [t.shape for t in mems]
    out = [rng.integers(low, high, size=shape).astype(np.float32).astype(air.testing.numpy_dtype(t.element_type))
           for t, shape in zip(mems, shapes)]
    return out + list(symbols)


# -- structure -----------------------------------------------------------------------------------------------------
def test_softmax_is_one_launch_with_one_block_per_row():
    m = L.softmax((5, 70))
    out, decisions = mapped(m, pipeline(16))
    (launch,) = launches(out)
    assert block_of(launch) == (16, 1, 1)
    assert [v.owner.value for v in launch.grid_size] == [5, 1, 1]
    assert [(d.kind, d.message) for d in decisions] == [(
        "applied", "mapped rows (%i) to blocks (x): grid (5, 1, 1), block (16, 1, 1); 3 row loop(s) strided over the "
                   "threads (%j, %j, %j); block reductions: maximumf in loop 1 (%j), addf in loop 2 (%j)")]
    loops = [op for op in launch.walk() if isinstance(op, AffineForOp)]
    assert [lp.step for lp in loops] == [16, 16, 16]
    assert all(lp.lower_bound_operands[-1] is launch.thread_ids[0] for lp in loops)
    # two reductions: partials stored, then log2(16) = 4 tree steps, each between barriers
    barriers = [op for op in launch.body.ops if isinstance(op, BarrierOp)]
    assert len(barriers) == 2 * (4 + 1)
    assert all(op.parent is launch.body for op in launch.walk() if isinstance(op, BarrierOp))
    text = str(out)
    assert text.count("memref<16xf32, #gpu.address_space<workgroup>>") >= 2
    assert "affine.if" in text and "arith.constant -0.000000e+00 : f32" in text and "0xFF800000" in text
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 70)).astype(np.float32)
    assert_close(m, out, [X, np.zeros_like(X)], exact=False)


def test_block_size_clamps_and_shrinks_to_the_rows():
    assert [block_size_for(b) for b in (1, 2, 3, 255, 256, 300, 1024, 5000)] == [1, 2, 2, 128, 256, 256, 1024, 1024]
    out, _ = mapped(L.softmax((3, 5)), pipeline(256))  # the longest row loop has 5 iterations: 8 threads
    assert block_of(launches(out)[0]) == (8, 1, 1)
    out, _ = mapped(L.softmax((3, 300)), pipeline(1000))
    assert block_of(launches(out)[0]) == (512, 1, 1)
    out, _ = mapped(L.softmax(("M", 5)), pipeline(300))
    assert block_of(launches(out)[0]) == (8, 1, 1)
    out, _ = mapped(L.softmax((3, "N")), pipeline(300))  # symbolic row length: the clamped request
    assert block_of(launches(out)[0]) == (256, 1, 1)
    assert str(GpuMapReductions(block_size=64)) == "gpu-map-reductions{block-size=64}"
    assert str(GpuMapReductions()) == "gpu-map-reductions"
    with pytest.raises(PipelineError, match="a positive integer is needed"):
        PassManager.parse("gpu-map-reductions{block-size=0}")


# -- library ops ---------------------------------------------------------------------------------------------------
# (name, build, exact, block): exact where no inexact value is summed (integer-valued data)
CASES = [
    ("softmax_rows_5", lambda: L.softmax((5, 70)), False, 16),        # N not a multiple of B
    ("softmax_short", lambda: L.softmax((3, 5)), False, 16),          # N < B: B shrinks to 8, 3 idle threads
    ("softmax_exact_multiple", lambda: L.softmax((2, 64)), False, 16),
    ("softmax_two_columns", lambda: L.softmax((7, 2)), False, 16),    # B = 2: one tree step
    ("softmax_one_thread", lambda: L.softmax((3, 9)), False, 1),      # B = 1: no tree step
    ("softmax_f16", lambda: L.softmax((4, 20), dtype="f16"), False, 8),
    ("softmax_bf16", lambda: L.softmax((3, 33), dtype="bf16"), False, 8),
    ("layernorm", lambda: L.layernorm(5, 32), True, 8),               # N = 32: mean and squares exact
    ("layernorm_odd", lambda: L.layernorm(4, 23), False, 8),
    ("layernorm_no_affine", lambda: L.layernorm(3, 16, affine=False), True, 4),
    ("layernorm_bf16", lambda: L.layernorm(3, 30, dtype="bf16"), False, 8),
    ("reduce_sum", lambda: L.reduce("sum", (6, 70), 1), True, 16),
    ("reduce_max", lambda: L.reduce("max", (5, 130), 1), True, 32),
    ("reduce_mean", lambda: L.reduce("mean", (4, 33), -1), True, 8),
    ("reduce_max_f16_3d", lambda: L.reduce("max", (3, 2, 45), -1, dtype="f16"), True, 8),  # rows (i, j)
    ("reduce_sum_bf16", lambda: L.reduce("sum", (3, 50), -1, dtype="bf16"), True, 8),
]


@pytest.mark.parametrize("name,build,exact,block", CASES, ids=[c[0] for c in CASES])
def test_library_ops_on_the_interpreter(name, build, exact, block):
    m = build()
    out, decisions = mapped(m, pipeline(block))
    assert [d.kind for d in decisions] == ["applied"], [str(d) for d in decisions]
    (launch,) = launches(out)
    rows = math.prod(v.owner.value for v in launch.grid_size)
    shape = m.functions[0].args[0].type.shape
    assert rows == math.prod(shape[:-1])
    for seed in range(2):
        assert_close(m, out, integer_data(m, seed=seed), exact)


def _mn(*shapes):
    """Argument shapes over (M, N) -> the shapes and the symbol values."""
    return lambda M, N: ([tuple({"M": M, "N": N}.get(d, d) for d in sh) for sh in shapes], [M, N])


SYMBOLIC = [
    ("softmax", lambda: L.softmax(("M", "N")), _mn("MN", "MN"), [(3, 37), (2, 5), (1, 16), (0, 4), (3, 0)], False),
    ("layernorm", lambda: L.layernorm("M", "N"), _mn("MN", "N", "N", "MN"), [(3, 19), (2, 32), (1, 1), (0, 3)], False),
    ("layernorm_static_n", lambda: L.layernorm("M", 16, affine=False),
     lambda M, N: ([(M, 16), (M, 16)], [M]), [(3, 0), (0, 0)], True),
    ("reduce_sum", lambda: L.reduce("sum", ("M", "N"), 1), _mn("MN", "M"), [(4, 37), (3, 2), (2, 0)], True),
]


@pytest.mark.parametrize("name,build,shapes,values,exact", SYMBOLIC, ids=[c[0] for c in SYMBOLIC])
def test_symbolic_shapes(name, build, shapes, values, exact):
    """Grids from the host, row lengths below, at and above the block, empty rows and grids.
    Fusion keeps scratch buffers here (scalar replacement does not promote a loop that may
    not run): they become thread-private."""
    m = build()
    out, decisions = mapped(m, pipeline(16))
    assert [d.kind for d in decisions] == ["applied"], [str(d) for d in decisions]
    assert "%i_grid" in decisions[0].message
    for M, N in values:
        arg_shapes, symbols = shapes(M, N)
        assert_close(m, out, integer_data(m, arg_shapes, symbols), exact)


def test_scratch_buffers_become_thread_private():
    m = L.softmax(("M", "N"))
    out, decisions = mapped(m, pipeline(16))
    assert decisions[0].message.endswith("thread-private: %max_private, %sum_private")
    text = str(out)
    assert "%max_private = memref.alloca() : memref<1xf32>" in text and "memref.dealloc" not in text
    top = [op.name for op in out.functions[0].body.ops]
    assert "memref.alloc" not in top


def test_rows_left_to_gpu_map():
    """Matmul reads B[k, j] along its rows (one thread per row is coalesced), a reduction along the
    first axis likewise; elementwise nests have nothing to reduce. gpu-map maps them as alone."""
    for build in (lambda: L.matmul(8, 12, 6), lambda: L.softmax((4, 6), 0), lambda: L.gelu((3, 5)),
                  lambda: L.mlp(4, 8, 3)):
        m = build()
        out, decisions = mapped(m, pipeline())
        assert decisions and all(d.kind == "note" and d.message.startswith("left for gpu-map") for d in decisions)
        assert str(out) == str(mapped(m, f"{FUSE},gpu-map")[0])
    _, decisions = mapped(L.matmul(8, 12, 6), pipeline())
    assert decisions[-1].message == ("left for gpu-map: %B is read along a row index in its last dimension in %k: "
                                     "one thread per row reads it coalesced")


def test_idempotent():
    out, _ = mapped(L.layernorm(4, 24), pipeline(8))
    again, decisions = mapped(out, "gpu-map-reductions,gpu-map")
    assert str(again) == str(out) and decisions == []


# -- hand-written nests ---------------------------------------------------------------------------------------------
MIXED = """
func.func @mixed(%A: memref<3x2x50xi32>, %B: memref<3x2xi32>, %C: memref<3x2xi32>, %F: memref<3x2x50xf32>,
                 %G: memref<3x2xf32>, %N: index) {
  %m = arith.constant -100 : i32
  %one = arith.constant 1.0 : f32
  %ones = arith.constant -1 : i32
  affine.parallel (%i, %k) = (0, 0) to (3, 2) {
    %init = affine.load %B[%i, %k] : memref<3x2xi32>
    %s:2 = affine.for %j = 3 to min affine_map<(d0)[s0] -> (s0, d0 * 10 + 20)>(%i)[%N] step 2
        iter_args(%a = %init, %b = %m) -> (i32, i32) {
      %x = affine.load %A[%i, %k, %j] : memref<3x2x50xi32>
      %a2 = arith.addi %a, %x : i32
      %a3 = arith.addi %a2, %x : i32
      %b2 = arith.maxsi %x, %b : i32
      affine.yield %a3, %b2 : i32, i32
    }
    %t = affine.for %j = 0 to affine_map<(d0) -> (d0 + 3)>(%i) iter_args(%c = %ones) -> (i32) {
      %x = affine.load %A[%i, %k, %j] : memref<3x2x50xi32>
      %c2 = arith.andi %c, %x : i32
      affine.yield %c2 : i32
    }
    %p = affine.for %j = 0 to 7 iter_args(%q = %one) -> (f32) {
      %x = affine.load %F[%i, %k, %j] : memref<3x2x50xf32>
      %q2 = arith.mulf %q, %x : f32
      affine.yield %q2 : f32
    }
    %u = arith.subi %s#0, %s#1 : i32
    %w = arith.xori %u, %t : i32
    affine.store %w, %C[%i, %k] : memref<3x2xi32>
    affine.store %p, %G[%i, %k] : memref<3x2xf32>
  }
  return
}"""


def test_integer_reductions_two_per_loop_row_dependent_bounds_and_a_parallel_band():
    m = air.parse(MIXED)
    out, decisions = mapped(m, "gpu-map-reductions{block-size=8},gpu-map")
    assert decisions[0].message == (
        "mapped rows (%i, %k) to blocks (y, x): grid (2, 3, 1), block (8, 1, 1); 3 row loop(s) strided over the "
        "threads (%j, %j, %j); block reductions: addi in loop 1 (%j), maxsi in loop 1 (%j), andi in loop 2 (%j), "
        "mulf in loop 3 (%j); 2 row-level store(s) in thread 0")
    rng = np.random.default_rng(3)
    A = rng.integers(-50, 50, (3, 2, 50)).astype(np.int32)
    F = (rng.integers(1, 3, (3, 2, 50)) * rng.choice([-1, 1], (3, 2, 50))).astype(np.float32)  # exact products
    for n in (50, 9, 4, 0):
        args = [A, rng.integers(-5, 5, (3, 2)).astype(np.int32), np.zeros((3, 2), np.int32), F,
                np.zeros((3, 2), np.float32), n]
        assert_close(m, out, args, exact=True)


HAZARD = """
func.func @hazard(%X: memref<4x64xf32>, %T: memref<4x64xf32>, %Y: memref<4x64xf32>, %S: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 64 {
      %x = affine.load %X[%i, %j] : memref<4x64xf32>
      %e = arith.mulf %x, %x : f32
      affine.store %e, %T[%i, %j] : memref<4x64xf32>
    }
    %s = affine.for %j = 0 to 64 iter_args(%acc = %z) -> (f32) {
      %t = affine.load %T[%i, 63 - %j] : memref<4x64xf32>
      %a = arith.addf %acc, %t : f32
      affine.yield %a : f32
    }
    affine.store %s, %S[%i] : memref<4xf32>
    %v = affine.load %S[%i] : memref<4xf32>
    affine.for %j = 0 to 64 {
      %t = affine.load %T[%i, 63 - %j] : memref<4x64xf32>
      %y = arith.subf %t, %v : f32
      affine.store %y, %Y[%i, %j] : memref<4x64xf32>
    }
  }
  return
}"""


def _erase_barrier_before(launch: LaunchOp, pred) -> None:
    ops = launch.body.ops
    k = next(k for k, op in enumerate(ops) if k and isinstance(ops[k - 1], BarrierOp) and pred(op))
    ops[k - 1].erase()


def test_barriers_separate_threads_sharing_memory_in_a_row():
    """The reduction reads %T in another order than the first loop wrote it, and every thread
    reads back %S[%i] that thread 0 stored: both need a barrier (the interpreter shows it)."""
    m = air.parse(HAZARD)
    out, decisions = mapped(m, "gpu-map-reductions{block-size=16},gpu-map")
    assert decisions[0].message.endswith("1 row-level store(s) in thread 0; 2 barrier(s) between row statements")
    rng = np.random.default_rng(0)
    args = [rng.integers(1, 4, (4, 64)).astype(np.float32), np.zeros((4, 64), np.float32),
            np.zeros((4, 64), np.float32), np.zeros(4, np.float32)]
    assert_close(m, out, args, exact=True)
    for pred in (lambda op: isinstance(op, AffineForOp) and op.results,  # before the reduction loop
                 lambda op: op.name == "affine.load" and op.memref.name_hint == "S"):  # before reading %S back
        broken = air.parse(str(out))
        _erase_barrier_before(launches(broken)[0], pred)
        with pytest.raises(AssertionError, match="elements differ"):
            assert_close(m, broken, args, exact=True)


def test_the_tree_needs_each_barrier():
    m = L.reduce("sum", (3, 40), 1)
    out, _ = mapped(m, pipeline(16))
    args = integer_data(m, low=1, high=4)
    assert_close(m, out, args, exact=True)
    broken = air.parse(str(out))
    _erase_barrier_before(launches(broken)[0], lambda op: op.name == "affine.if")  # between the first two steps
    with pytest.raises(AssertionError, match="elements differ"):
        assert_close(m, broken, args, exact=True)


# -- row buffers and row loops holding loops: attention ----------------------------------------------------------
ROW_BUFFERS = """
func.func @rows(%X: memref<4x64x3xf32>, %Y: memref<4x64xf32>, %Z: memref<4x64xf32>, %W: memref<4x64xf32>) {
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  affine.for %i = 0 to 4 {
    %t = memref.alloc() : memref<64xf32>
    %u = memref.alloc() : memref<64xf32>
    %m = affine.for %j = 0 to 64 iter_args(%acc = %ninf) -> (f32) {
      %d = affine.for %k = 0 to 3 iter_args(%b = %z) -> (f32) {
        %x = affine.load %X[%i, %j, %k] : memref<4x64x3xf32>
        %y = arith.mulf %x, %x : f32
        %b2 = arith.addf %b, %y : f32
        affine.yield %b2 : f32
      }
      affine.store %d, %t[%j] : memref<64xf32>
      %acc2 = arith.maximumf %acc, %d : f32
      affine.yield %acc2 : f32
    }
    affine.for %j = 0 to 64 {
      %a = affine.load %t[63 - %j] : memref<64xf32>
      %b = arith.subf %a, %m : f32
      affine.store %b, %Y[%i, %j] : memref<4x64xf32>
      affine.store %b, %u[%j] : memref<64xf32>
    }
    affine.for %j = 0 to 64 {
      %a = affine.load %u[63 - %j] : memref<64xf32>
      affine.store %a, %Z[%i, %j] : memref<4x64xf32>
    }
    affine.for %j = 0 to 32 {
      %a = affine.load %X[%i, %j, 0] : memref<4x64x3xf32>
      affine.store %a, %W[%i, %j] : memref<4x64xf32>
    }
    affine.for %j = 32 to 64 {
      %a = affine.load %X[%i, %j, 1] : memref<4x64x3xf32>
      affine.store %a, %W[%i, %j] : memref<4x64xf32>
    }
    memref.dealloc %u : memref<64xf32>
    memref.dealloc %t : memref<64xf32>
  }
  return
}"""


def test_row_buffers_are_shared_and_barriers_separate_their_phases():
    """A row loop that reduces (max), stores a row buffer and holds a loop; a parallel loop reads
    that buffer in another order (the tree's barriers separate them) and writes a second one,
    read back in another order (a barrier); two loops writing disjoint halves of %W (none)."""
    m = air.parse(ROW_BUFFERS)
    out, decisions = mapped(m, "gpu-map-reductions{block-size=16},gpu-map")
    assert decisions[0].message == (
        "mapped rows (%i) to blocks (x): grid (4, 1, 1), block (16, 1, 1); 5 row loop(s) strided over the threads "
        "(%j, %j, %j, %j, %j); block reductions: maximumf in loop 1 (%j); row buffers in workgroup memory: %t, %u "
        "(576 B per block); 1 barrier(s) between row statements")
    (launch,) = launches(out)
    allocs = [op for op in launch.body.ops if op.name == "memref.alloc"]
    assert [str(op.results[0].type) for op in allocs] == ["memref<64xf32, #gpu.address_space<workgroup>>"] * 2 + [
        "memref<16xf32, #gpu.address_space<workgroup>>"]
    assert "memref.dealloc" not in str(out) and "memref.alloca" not in str(out)
    inner = [op for op in launch.walk() if isinstance(op, AffineForOp) and op.parent_op is not launch]
    assert [(lp.step, tuple(lp.lower_bound_operands)) for lp in inner] == [(1, ())]  # %k: whole, in each thread
    rng = np.random.default_rng(1)
    args = [rng.integers(-3, 4, (4, 64, 3)).astype(np.float32)] + [np.zeros((4, 64), np.float32) for _ in range(3)]
    assert_close(m, out, args, exact=True)
    broken = air.parse(str(out))
    _erase_barrier_before(launches(broken)[0], lambda op: isinstance(op, AffineForOp) and
                          any(x.name == "affine.load" and x.memref.name_hint == "u" for x in op.walk()))
    with pytest.raises(AssertionError, match="elements differ"):
        assert_close(m, broken, args, exact=True)


def test_a_reduction_loop_may_store():
    """The max loop of attention stores the scores it reduces; here a sum loop stores squares."""
    m = air.parse(_rows("""    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %e = arith.mulf %x, %x : f32
      affine.store %e, %A[%i, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }"""))
    out, decisions = mapped(m, "gpu-map-reductions{block-size=4},gpu-map")
    assert decisions[0].kind == "applied" and "addf in loop 1 (%j)" in decisions[0].message
    args = integer_data(m, seed=2)
    assert_close(m, out, args, exact=True)


ATTENTION = [  # B, H, S, D, dtype, causal
    (1, 2, 13, 5, "f16", True),
    (1, 2, 13, 5, "f16", False),
    (1, 2, 13, 5, "f32", True),
    (2, 1, 16, 8, "f32", False),
    (1, 1, 9, 4, "bf16", True),
]


def attention_inputs(B, H, S, D, dtype, seed, exact=False) -> list:
    """Q, K, V and a zero O. ``exact``: scores are 0 or at least 100 below the row's max, so every
    exponential is exactly 1 or 0 and the sum of a row is exact in any order; the rest of the
    computation is the same in the mapped program (each thread runs its j's dot product and
    its d's sum over j whole, in the original order): the results are then equal bit for bit."""
    rng = np.random.default_rng(seed)
    dt = numpy_dtype(air.parse(f"func.func @f(%a: memref<1x{dtype}>) {{ return }}").functions[0].args[0].type
                     .element_type)
    shape = (B, H, S, D)
    if exact:
        Q = np.zeros(shape)
        Q[..., 0] = rng.choice([-1.0, 1.0], (B, H, S))
        K = rng.integers(-2, 3, shape).astype(np.float64)
        K[..., 0] = rng.choice([0.0, -300.0 * math.sqrt(D)], (B, H, S))  # a score of 0 or +-300
        K[..., 1:] *= 0  # (d > 0 adds nothing: Q is 0 there)
        V = rng.integers(-4, 5, shape).astype(np.float64)
    else:
        Q, K, V = (rng.standard_normal(shape) for _ in range(3))
    return [a.astype(dt) for a in (Q, K, V)] + [np.zeros(shape, dt)]


@pytest.mark.parametrize("B,H,S,D,dtype,causal", ATTENTION, ids=[f"{c[4]}-S{c[2]}-D{c[3]}{'-causal' * c[5]}"
                                                                for c in ATTENTION])
def test_attention_through_the_gpu_pipeline(B, H, S, D, dtype, causal):
    """One block per row (b, h, i): the score, probability (and accumulator) rows in workgroup
    memory; equal to the original bit for bit where the exponentials are exact, within the
    output's tolerance on normal data, and the same in both thread orders."""
    m = L.attention(B, H, S, D, dtype=dtype, causal=causal)
    out, decisions = mapped(m, GPU_PIPELINE)
    (decision,) = decisions
    assert decision.kind == "applied", decision
    buffers = "%acc_private, %probs_private, %scores_private" if dtype != "f32" else "%probs_private, %scores_private"
    assert f"block reductions: maximumf in loop 1 (%j), addf in loop 2 (%j); row buffers in workgroup memory: " \
           f"{buffers} (" in decision.message
    (launch,) = launches(out)
    assert math.prod(v.owner.value for v in launch.grid_size) == B * H * S
    assert all(op.parent is launch.body for op in launch.walk() if isinstance(op, BarrierOp))
    text = str(out)
    assert f"memref<1x1x1x{S}xf32, #gpu.address_space<workgroup>>" in text
    assert "memref.alloca" not in text and "memref.dealloc" not in text
    want = run(m, attention_inputs(B, H, S, D, dtype, 0, exact=True))
    assert_same_bits_in_both_thread_orders(want, out, attention_inputs(B, H, S, D, dtype, 0, exact=True), "attention")
    assert_close(m, out, attention_inputs(B, H, S, D, dtype, 1), exact=False)
    got = run(out, attention_inputs(B, H, S, D, dtype, 1))  # the tree's order is fixed: both orders agree
    assert_same_bits_in_both_thread_orders(got, out, attention_inputs(B, H, S, D, dtype, 1), "attention")


def test_attention_needs_its_barrier():
    """Without the barrier before the P @ V loop, thread 0 reads probabilities other threads have
    not written yet (forward order): the exact comparison sees it. (S = 13 < 256 threads: each
    thread's share of a row loop runs at most once, so canonicalize made it an affine.if.)"""
    m = L.attention(1, 2, 13, 5, dtype="f16", causal=True)
    out, _ = mapped(m, GPU_PIPELINE)
    args = attention_inputs(1, 2, 13, 5, "f16", 0, exact=True)
    want = run(m, args)
    broken = air.parse(str(out))
    _erase_barrier_before(launches(broken)[0], lambda op: op.regions and
                          any(x.name == "affine.load" and x.memref.name_hint == "probs_private" for x in op.walk()))
    with pytest.raises(AssertionError, match="thread order differs"):
        assert_same_bits_in_both_thread_orders(want, broken, args, "attention")


def test_attention_at_the_issue_size_is_one_block_per_row():
    """attention(4, 16, 2048, 64, f16) through the default pipeline: one kernel, a block of 256
    threads per row (b, h, i), B*H*S = 131072 blocks; 18.25 KiB of static shared memory; NVRTC
    compiles it for sm_90 without a warning."""
    B, H, S, D = 4, 16, 2048, 64
    k = runtime.compile(L.attention(B, H, S, D, dtype="f16"), target="cuda", arch="sm_90")
    assert k.image.kind == "cubin" and not k.image.log.strip(), k.image.log
    (decision,) = [d for d in k.trace.decisions if d.pass_name == "gpu-map-reductions"]
    assert decision.kind == "applied" and decision.message.startswith(
        "mapped rows (%b, %h, %i) to blocks (z, y, x): grid (2048, 16, 4), block (256, 1, 1); 5 row loop(s)")
    assert decision.message.endswith("row buffers in workgroup memory: %acc_private, %probs_private, "
                                     "%scores_private (18688 B per block); 2 barrier(s) between row statements")
    assert not [d for d in k.trace.decisions if d.pass_name == "gpu-map" and d.kind == "applied"]
    (spec,) = k.kernels
    assert spec.block == (256, 1, 1) and math.prod(spec.block) >= 128
    assert math.prod(v.owner.value for v in spec.launch.grid_size) == B * H * S >= B * H * S // 128
    assert (spec.static_shared_bytes, spec.dynamic_shared_bytes) == (18688, 0)


@pytest.mark.parametrize("S,causal,dtype", [(13, True, "f16"), (40, False, "f32"), (8192, False, "bf16")])
def test_attention_cuda_compiles_for_sm90(S, causal, dtype):
    """Odd rows, causal bounds; more than 48 KiB of row buffers go to dynamic shared memory."""
    k = runtime.compile(L.attention(1, 2, S, 5 if S < 100 else 64, dtype=dtype, causal=causal), target="cuda",
                        arch="sm_90")
    assert k.image.kind == "cubin" and not k.image.log.strip(), k.image.log
    assert any(d.pass_name == "gpu-map-reductions" and d.kind == "applied" for d in k.trace.decisions)
    (spec,) = k.kernels
    assert "__syncthreads();" in k.source
    assert spec.dynamic_shared_bytes == (0 if S < 100 else 2 * S * 4 + 64 * 4 + 2 * 256 * 4)


def test_attention_rows_beyond_shared_memory_are_left_for_gpu_map():
    m = L.attention(1, 1, 32768, 8)
    pm = PassManager.parse(GPU_PIPELINE)
    pm.run(m)
    (note,) = [d for d in pm.trace.decisions if d.pass_name == "gpu-map-reductions"]
    assert note.kind == "note" and note.message == (
        "left for gpu-map: cannot map the rows (%i) to blocks: its row buffers %probs_private (131072 B), "
        "%scores_private (131072 B) and the reduction partials (8 B per thread) need 264192 B of workgroup memory "
        "per block of 256 threads; h200 has 232448 B per block")


SYMBOLIC_PIPELINE = [
    ("softmax", lambda: L.softmax(("M", "N")), _mn("MN", "MN"), [(3, 37), (2, 5), (0, 4), (3, 0)],
     "%sum_private, %max_private"),
    ("layernorm", lambda: L.layernorm("M", "N"), _mn("MN", "N", "N", "MN"), [(3, 19), (1, 1), (2, 0)],
     "%var_private, %mean_private"),
]


@pytest.mark.parametrize("name,build,shapes,values,buffers", SYMBOLIC_PIPELINE, ids=[c[0] for c in SYMBOLIC_PIPELINE])
def test_symbolic_rows_through_the_gpu_pipeline(name, build, shapes, values, buffers):
    """With affine-privatize, the buffers scalar replacement keeps (a loop that may not run) are
    allocated in the row; each element is written at the row level before anything reads it, so
    they become thread-private like the top-level scratch buffers: no workgroup memory, no
    barrier."""
    m = build()
    out, decisions = mapped(m, GPU_PIPELINE)
    (decision,) = decisions
    assert decision.kind == "applied" and decision.message.endswith(f"; thread-private: {buffers}")
    assert "memref.alloca() : memref<1xf32>" in str(out)
    for M, N in values:
        arg_shapes, symbols = shapes(M, N)
        assert_close(m, out, integer_data(m, arg_shapes, symbols), exact=False)


# -- refusals --------------------------------------------------------------------------------------------------------
def _rows(row_body: str, args: str = "%A: memref<8x8xf32>, %B: memref<8xf32>", rows: str = "%i = 0 to 8") -> str:
    """A function holding one row nest ``for rows { row_body; store %s, %B[%i] }``."""
    return f"""
func.func @f({args}) {{
  %z = arith.constant 0.0 : f32
  affine.for {rows} {{
{row_body}
    affine.store %s, %B[%i] : memref<8xf32>
  }}
  return
}}"""


REFUSALS = {
    "rows carry a dependence": ("""
func.func @f(%A: memref<8x8xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 1 to 8 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i - 1, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    affine.store %s, %A[%i, 0] : memref<8x8xf32>
  }
  return
}""", "the rows are not parallel: RAW %A: S1 (affine.store at <string>:10:5) -> S0 (affine.load at <string>:6:7) "
      "carried by %i, distance (1)"),
    "combining op": (_rows("""    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.subf %x, %acc : f32
      affine.yield %a : f32
    }"""), "iter_arg %acc of %j at <string>:5:5 is not a reduction by a recognized combining op"),
    "reduction loop storing ahead": (_rows("""    %s = affine.for %j = 0 to 7 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %e = arith.mulf %x, %x : f32
      affine.store %e, %A[%i, %j + 1] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }"""), "row loop %j at <string>:5:5 carries RAW %A: S1 (affine.store at <string>:8:7) -> S0 (affine.load at "
           "<string>:6:7) carried by %j, distance (1), which is not a reduction: its iterations cannot be split "
           "among threads"),
    "nested loops": (_rows("""    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %t = affine.for %k = 0 to 8 iter_args(%b = %acc) -> (f32) {
        %x = affine.load %A[%j, %k] : memref<8x8xf32>
        %a = arith.addf %b, %x : f32
        affine.yield %a : f32
      }
      affine.yield %t : f32
    }"""), "iter_arg %acc of %j at <string>:5:5 flows into the loop %k at <string>:6:7: a reduction carried "
           "through an inner loop or region is not mapped"),
    "bounds from the row": (_rows("""    %n = affine.apply affine_map<(d0) -> (8 - d0)>(%i)
    %s = affine.for %j = 0 to %n iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }""", args="%A: memref<8x8xf32>, %B: memref<8xf32>, %I: memref<8xindex>"),
                            "the bounds of row loop %j at <string>:6:5 use %n, computed in the row"),
    "row-level if": (_rows("""    affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%i) {
      affine.store %z, %A[%i, 0] : memref<8x8xf32>
    }
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }"""), "'affine.if' at <string>:5:5 in the row body: only row loops may hold regions there"),
    "no reduction": ("""
func.func @f(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %y = arith.addf %x, %x : f32
      affine.store %y, %A[%i, %j] : memref<8x8xf32>
    }
  }
  return
}""", "no row loop reduces anything (nothing for block reductions)"),
    "grid limit": ("""
func.func @f(%A: memref<?x8xf32>, %B: memref<?xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4294967296 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<?x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    affine.store %s, %B[%i] : memref<?xf32>
  }
  return
}""", "grid size 4294967296 for %i on x exceeds CUDA's limit 2147483647"),
    "four rows": ("""
func.func @f(%T: memref<2x2x2x2x8xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %a = 0 to 2 {
    affine.for %b = 0 to 2 {
      affine.for %c = 0 to 2 {
        affine.for %d = 0 to 2 {
          %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
            %x = affine.load %T[%a, %b, %c, %d, %j] : memref<2x2x2x2x8xf32>
            %y = arith.addf %acc, %x : f32
            affine.yield %y : f32
          }
          affine.store %s, %T[%a, %b, %c, %d, 0] : memref<2x2x2x2x8xf32>
        }
      }
    }
  }
  return
}""", "4 row loops; at most 3 map to the grid (x, y, z)"),
    "row loop carries a dependence through a row buffer": (_rows("""    %t = memref.alloc() : memref<8xf32>
    affine.store %z, %t[0] : memref<8xf32>
    %s = affine.for %j = 1 to 8 iter_args(%acc = %z) -> (f32) {
      %p = affine.load %t[%j - 1] : memref<8xf32>
      %r = affine.for %k = 0 to 8 iter_args(%b = %p) -> (f32) {
        %x = affine.load %A[%j, %k] : memref<8x8xf32>
        %b2 = arith.addf %b, %x : f32
        affine.yield %b2 : f32
      }
      affine.store %r, %t[%j] : memref<8xf32>
      %a = arith.maximumf %acc, %r : f32
      affine.yield %a : f32
    }
    memref.dealloc %t : memref<8xf32>"""), "row loop %j at <string>:7:5 carries RAW %t: S2 (affine.store at "
                                           "<string>:14:7) -> S0 (affine.load at <string>:8:7) carried by %j, "
                                           "distance (1), which is not a reduction"),
    "inner affine.parallel": (_rows("""    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      affine.parallel (%k) = (0) to (8) {
        %x = affine.load %A[%j, %k] : memref<8x8xf32>
        affine.store %x, %C[%i, %j, %k] : memref<8x8x8xf32>
      }
      %y = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %y : f32
      affine.yield %a : f32
    }""", args="%A: memref<8x8xf32>, %B: memref<8xf32>, %C: memref<8x8x8xf32>"),
                              "row loop %j at <string>:5:5 holds 'affine.parallel' at <string>:6:7: inner loops "
                              "must be affine.for"),
    "row buffer too large": (_rows("""    %t = memref.alloc() : memref<60000xf32>
    %s = affine.for %j = 0 to 60000 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x60000xf32>
      affine.store %x, %t[%j] : memref<60000xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    memref.dealloc %t : memref<60000xf32>""", args="%A: memref<8x60000xf32>, %B: memref<8xf32>"),
                             "its row buffers %t (240000 B) and the reduction partials (4 B per thread) need"),
    "row buffer of a dynamic shape": (_rows("""    %t = memref.alloc(%n) : memref<?xf32>
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %x, %t[%j] : memref<?xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    memref.dealloc %t : memref<?xf32>""", args="%A: memref<8x8xf32>, %B: memref<8xf32>, %n: index"),
                                      "'memref.alloc' at <string>:5:5 in the row body: %t has no static shape "
                                      "(memref<?xf32>): a row buffer becomes a fixed workgroup array"),
    "row buffer read by memref.load": (_rows("""    %t = memref.alloc() : memref<8xf32>
    %c0 = arith.constant 0 : index
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %x, %t[%j] : memref<8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    %u = memref.load %t[%c0] : memref<8xf32>
    memref.dealloc %t : memref<8xf32>"""),
                                       "%t is used by 'memref.load' at <string>:13:5: a row buffer may only be "
                                       "accessed by affine loads and stores in the row and freed there"),
    "frees memory of the function": (_rows("""    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<8x8xf32>
      %a = arith.addf %acc, %x : f32
      affine.yield %a : f32
    }
    memref.dealloc %C : memref<8xf32>""", args="%A: memref<8x8xf32>, %B: memref<8xf32>, %C: memref<8xf32>"),
                                     "'memref.dealloc' at <string>:10:5 in the row body: it frees memory allocated "
                                     "outside the row"),
    "not a band": ("""
func.func @f(%B: memref<8xf32>) {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 8 iter_args(%acc = %z) -> (f32) {
    %x = affine.load %B[%i] : memref<8xf32>
    %a = arith.addf %acc, %x : f32
    affine.yield %a : f32
  }
  return
}""", "it is not a band of row loops"),
}


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refusals_leave_the_nest_unchanged(name):
    text, reason = REFUSALS[name]
    m = air.parse(text)
    air.verify(m)
    nest = next(op for op in m.functions[0].body.ops if isinstance(op, AffineForOp))
    err = assert_refused_unchanged(lambda: map_row_reductions(nest, 8), m)
    assert reason in err.reason, err.reason
    assert err.pass_name == "gpu-map-reductions" and err.loops
    pm = PassManager.parse("gpu-map-reductions")
    out = pm.run(m)
    if name in ONE_BLOCK:  # not rows, but a reduction the pass maps to one block (in a host loop)
        assert any(d.kind == "applied" and "to one block" in d.message for d in pm.trace.decisions)
        shape = (8,) if "memref<8xf32>" in text else (8, 8)
        args = [(np.arange(math.prod(shape)) % 7).astype(np.float32).reshape(shape)]
        assert_same_bits_in_both_thread_orders(run(m, args), run_pipeline("gpu-map", out), args, name)
        return
    assert str(out) == str(m)
    assert [d.kind for d in pm.trace.decisions] == ["note"]
    assert reason in pm.trace.decisions[0].message


#: Refusals of the row mapping that the pass maps as a unit of one row (gpu_reduce_units).
ONE_BLOCK = {"not a band", "rows carry a dependence"}


def test_utility_returns_the_launch_of_a_host_function():
    before = L.reduce("max", (4, 9), 1)
    m = run_pipeline(FUSE, before)
    nest = next(op for op in m.functions[0].body.ops if isinstance(op, AffineForOp))
    plan = plan_row_reductions(nest, 64)
    assert plan.block_size == 16 and plan.grid == [4] and [r.kind for r in plan.reductions] == ["maximumf"]
    launch = map_row_reductions(nest, 64)
    assert isinstance(launch, LaunchOp) and block_of(launch) == (16, 1, 1)
    check_host_function(m.functions[0])
    assert_close(before, m, integer_data(before), exact=True)
    m2 = run_pipeline(FUSE, before)
    nest2 = next(op for op in m2.functions[0].body.ops if isinstance(op, AffineForOp))
    mapped_rows = map_rows(nest2, 4)
    assert mapped_rows.launch.parent is m2.functions[0].body and mapped_rows.block_size == 4
    assert mapped_rows.describe() == (
        "mapped rows (%i) to blocks (x): grid (4, 1, 1), block (4, 1, 1); 1 row loop(s) strided over the threads "
        "(%j); block reductions: maximumf in loop 1 (%j); 1 row-level store(s) in thread 0")


# -- random programs -------------------------------------------------------------------------------------------------
def test_random_fusion_programs():
    """Fusion's test programs through the GPU pipeline: exact on the interpreter in both orders
    (their data are integer-valued), whatever was mapped."""
    stats: Counter = Counter()

    @settings(max_examples=120, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(fusion_programs_with_inputs())
    def check(case):
        module, args = case
        out, decisions = mapped(module, pipeline(4))
        assert_close(module, out, args, exact=True)
        stats["programs"] += 1
        stats["applied"] += sum(d.kind == "applied" for d in decisions)

    check()
    assert stats["programs"] >= 100 and stats["applied"] >= 20, stats  # measured: 29 of 120


def test_random_fusion_programs_unfused():
    """The same programs without fusion: reductions into memory (``C[i] = C[i] + A[i, k]``) are
    carried in iter_args, read before the loop by every thread and stored by thread 0."""
    stats: Counter = Counter()

    @settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(fusion_programs_with_inputs())
    def check(case):
        module, args = case
        out, decisions = mapped(module, "gpu-map-reductions{block-size=4},gpu-map")
        assert_close(module, out, args, exact=True)
        stats["programs"] += 1
        stats["applied"] += sum(d.kind == "applied" for d in decisions)

    check()
    assert stats["programs"] >= 100 and stats["applied"] >= 30, stats  # measured: 45 of 100


def test_random_fusion_programs_privatized():
    """The same programs through fusion and affine-privatize (the GPU pipeline's order): buffers
    allocated per row become workgroup row buffers or thread-private copies; exact in both
    orders."""
    stats: Counter = Counter()
    pipe = f"{FUSE.replace('affine-loop-fusion', 'affine-loop-fusion,affine-privatize')}," \
           f"gpu-map-reductions{{block-size=4}},gpu-map"

    @settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(fusion_programs_with_inputs())
    def check(case):
        module, args = case
        out, decisions = mapped(module, pipe)
        assert_close(module, out, args, exact=True)
        stats["programs"] += 1
        stats["applied"] += sum(d.kind == "applied" for d in decisions)

    check()
    assert stats["programs"] >= 100 and stats["applied"] >= 20, stats  # measured: 37 of 120


# -- CUDA ------------------------------------------------------------------------------------------------------------
CUDA_CASES = {  # name: (build, argument shapes and symbols for the GPU runs)
    "softmax": (lambda: L.softmax((33, 70)), None),
    "softmax_sym": (lambda: L.softmax(("M", "N")), _mn("MN", "MN")(5, 300)),
    "softmax_f16": (lambda: L.softmax((8, 40), dtype="f16"), None),
    "softmax_bf16": (lambda: L.softmax((8, 128), dtype="bf16"), None),
    "layernorm": (lambda: L.layernorm(9, 64), None),
    "layernorm_sym": (lambda: L.layernorm("M", "N"), _mn("MN", "N", "N", "MN")(7, 37)),
    "layernorm_no_affine": (lambda: L.layernorm(9, 100, affine=False), None),
    "reduce_sum": (lambda: L.reduce("sum", (6, 70), 1), None),
    "reduce_max_f16": (lambda: L.reduce("max", (3, 5, 130), -1, dtype="f16"), None),
    "reduce_mean_f64": (lambda: L.reduce("mean", (6, 1000), 1, dtype="f64"), None),
    "mixed_int": (lambda: air.parse(MIXED), (None, [9])),
}


@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_cuda_compiles_for_sm90_without_warnings(name):
    k = runtime.compile(CUDA_CASES[name][0](), target="cuda", arch="sm_90", pipeline=pipeline())
    assert k.image.kind == "cubin" and len(k.image.image) > 0
    assert not k.image.log.strip(), k.image.log
    assert "__syncthreads();" in k.source and "__shared__" in k.source
    assert any(d.pass_name == "gpu-map-reductions" and d.kind == "applied" for d in k.trace.decisions)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_on_gpu_matches_the_interpreter(name):
    build, sizes = CUDA_CASES[name]
    m = build()
    k = runtime.compile(m, target="cuda", pipeline=pipeline())
    shapes, symbols = sizes or (None, [])
    for seed in range(2):
        args = integer_data(m, shapes, symbols, seed)
        rng = np.random.default_rng(seed)  # floats: normal data (inexact sums, compared with a tolerance)
        args = [(rng.standard_normal(a.shape) * 2).astype(a.dtype) if isinstance(a, np.ndarray) and
                a.dtype.kind == "f" else a for a in args]
        want = run(m, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        k(*got)
        for w, g in zip(want, got):
            if isinstance(w, np.ndarray):
                # float sums of normal data in another order than the interpreter's: a looser bound
                tol = 0 if w.dtype.kind == "i" else max(4 * tolerance(w.dtype), 1e-4)
                np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
def test_on_gpu_large_rows_match_numpy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((512, 4096)).astype(np.float32)
    for m, args, want in (
            (L.softmax((512, 4096)), [X, np.zeros_like(X)], reference.softmax(X)),
            (L.layernorm(512, 4096, affine=False), [X, np.zeros_like(X)], reference.layernorm(X)),
            (L.reduce("sum", (512, 4096), 1), [X, np.zeros(512, np.float32)], reference.reduce("sum", X, 1))):
        k = runtime.compile(m, target="cuda", pipeline=pipeline())
        assert any(d.pass_name == "gpu-map-reductions" and d.kind == "applied" for d in k.trace.decisions)
        k(*args)
        np.testing.assert_allclose(args[-1], want, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("causal", [False, True])
def test_on_gpu_attention_matches_numpy(causal):
    B, H, S, D = 2, 4, 300, 64
    m = L.attention(B, H, S, D, dtype="f16", causal=causal)
    k = runtime.compile(m, target="cuda")
    assert any(d.pass_name == "gpu-map-reductions" and d.kind == "applied" for d in k.trace.decisions)
    args = attention_inputs(B, H, S, D, "f16", 3)
    want = reference.attention(*args[:3], causal=causal)
    k(*args)
    np.testing.assert_allclose(args[-1].astype(np.float64), want.astype(np.float64), rtol=5e-3, atol=5e-3)
