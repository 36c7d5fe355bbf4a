"""Reductions without row loops (``gpu-map-reductions``): one block for a small constant range, a
two-phase reduction (a grid of per-block partials, then one block combining them in a fixed
order) for a large or symbolic one, inside loops kept on the host too, and ``atomic=true``.
Each test asserts the structure and the exact bits on the launch emulation in both thread
orders (integer-valued data), and the emitted CUDA C compiles with NVRTC."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.gpu import BarrierOp, LaunchOp
from affine_ir.dialects.memref import AllocOp, AtomicRMWOp
from affine_ir.testing import programs_with_inputs, run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms.gpu.gpu_map import check_host_function
from transforms.gpu.sequential_launch import sequential_launches
from transforms.testing import map_to_gpu

PIPE = "gpu-map-reductions,gpu-map"

SUM = """func.func @f(%N: index, %A: memref<?xf32>, %s: memref<1xf32>) {
  affine.for %i = 0 to %N {
    %a = affine.load %A[%i] : memref<?xf32>
    %t = affine.load %s[0] : memref<1xf32>
    %u = arith.addf %t, %a : f32
    affine.store %u, %s[0] : memref<1xf32>
  }
  return
}"""

SUM_CONST = """func.func @f(%A: memref<{n}xf32>, %s: memref<1xf32>) {{
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to {n} iter_args(%acc = %z) -> (f32) {{
    %a = affine.load %A[%i] : memref<{n}xf32>
    %u = arith.addf %acc, %a : f32
    affine.yield %u : f32
  }}
  affine.store %r, %s[0] : memref<1xf32>
  return
}}"""

MAX = """func.func @f(%N: index, %A: memref<?xi32>, %s: memref<1xi32>) {
  %z = arith.constant -100 : i32
  %r = affine.for %i = 0 to %N iter_args(%acc = %z) -> (i32) {
    %a = affine.load %A[%i] : memref<?xi32>
    %u = arith.maxsi %acc, %a : i32
    affine.yield %u : i32
  }
  affine.store %r, %s[0] : memref<1xi32>
  return
}"""

DOT = """func.func @f(%N: index, %A: memref<?xf32>, %B: memref<?xf32>, %s: memref<1xf32>) {
  %z = arith.constant 1.0 : f32
  %r = affine.for %i = 0 to %N iter_args(%acc = %z) -> (f32) {
    %a = affine.load %A[%i] : memref<?xf32>
    %b = affine.load %B[%i] : memref<?xf32>
    %p = arith.mulf %a, %b : f32
    %u = arith.addf %acc, %p : f32
    affine.yield %u : f32
  }
  %q = math.sqrt %r : f32
  affine.store %q, %s[0] : memref<1xf32>
  return
}"""

TRISOLV = """func.func @f(%n: index, %L: memref<?x?xf32>, %x: memref<?xf32>, %b: memref<?xf32>) {
  affine.for %i = 0 to %n {
    %bi = affine.load %b[%i] : memref<?xf32>
    %w = affine.for %j = 0 to affine_map<(d0) -> (d0)>(%i) iter_args(%acc = %bi) -> (f32) {
      %l = affine.load %L[%i, %j] : memref<?x?xf32>
      %xj = affine.load %x[%j] : memref<?xf32>
      %p = arith.mulf %l, %xj : f32
      %s = arith.subf %acc, %p : f32
      affine.yield %s : f32
    }
    %d = affine.load %L[%i, %i] : memref<?x?xf32>
    %q = arith.divf %w, %d : f32
    affine.store %q, %x[%i] : memref<?xf32>
  }
  return
}"""


def _launches(m):
    return [x for x in m.walk() if isinstance(x, LaunchOp)]


def _grid(launch):
    c = launch.grid_size[0].owner
    return c.attributes["value"].value if c is not None and "value" in c.attributes else None


def _partials(m):
    return [x for x in m.functions[0].body.ops if isinstance(x, AllocOp) and x.results[0].name_hint == "partial"]


def _ints(n, mod=13, dtype=np.float32):
    return (np.arange(n) * 7 % mod - mod // 2).astype(dtype)


def _check(m, out, arg_sets):
    for args in arg_sets:
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, str(args[0]))


def test_a_symbolic_full_sum_becomes_a_two_phase_reduction():
    m = air.parse(SUM)
    out, decisions = map_to_gpu(m, PIPE)
    phase1, phase2 = _launches(out)
    assert any("two-phase reduction" in d.message for d in decisions)
    assert _grid(phase1) is None  # computed on the host: min(ceildiv(N, 256), 528)
    assert _grid(phase2) == 1
    (partial,) = _partials(out)
    assert partial.results[0].type.shape == (528,)
    assert sum(isinstance(x, BarrierOp) for x in phase1.walk()) == 9  # after the partials, 8 tree steps
    assert not sequential_launches(decisions)
    _check(m, out, [[n, _ints(n), np.array([3.0], np.float32)] for n in (0, 1, 255, 257, 1000, 70000)])


@pytest.mark.parametrize("n", [100, 2048, 2049, 5000])
def test_a_constant_sum_is_one_block_when_small_two_phase_when_large(n):
    m = air.parse(SUM_CONST.format(n=n))
    out, _ = map_to_gpu(m, PIPE)
    launches = _launches(out)
    if n <= 8 * 256:
        assert len(launches) == 1 and not _partials(out)
    else:
        phase1, _phase2 = launches
        assert _grid(phase1) == -(-n // 2048) > 1  # about 8 elements per thread
        assert _partials(out)[0].results[0].type.shape == (-(-n // 2048),)
    _check(m, out, [[_ints(n), np.zeros(1, np.float32)]])


def test_max_and_dot_product_are_exact_in_both_thread_orders():
    for text, make in ((MAX, lambda n: [n, _ints(n, 1001, np.int32), np.zeros(1, np.int32)]),
                       (DOT, lambda n: [n, _ints(n), _ints(n, 5), np.zeros(1, np.float32)])):
        m = air.parse(text)
        out, _ = map_to_gpu(m, PIPE)
        assert len(_launches(out)) == 2 and _partials(out)
        _check(m, out, [make(n) for n in (0, 3, 600, 9000)])


def test_a_trisolv_like_reduction_in_a_host_loop():
    m = air.parse(TRISOLV)
    out, decisions = map_to_gpu(m, PIPE)
    (loop,) = [x for x in out.functions[0].body.ops if isinstance(x, AffineForOp)]
    assert len([x for x in loop.body.ops if isinstance(x, LaunchOp)]) == 2  # phase 1 and phase 2
    check_host_function(out.functions[0])  # the loop stays on the host: a loop of launches
    assert not sequential_launches(decisions)
    for n in (1, 4, 40):
        L = (np.tril(_ints(n * n, 5).reshape(n, n), -1) + np.eye(n, dtype=np.float32)).astype(np.float32)
        _check(m, out, [[n, L, np.zeros(n, np.float32), _ints(n, 7)]])


def test_the_atomic_option_combines_partials_with_atomic_rmw():
    m = air.parse(SUM)
    out, decisions = map_to_gpu(m, "gpu-map-reductions{atomic=true},gpu-map")
    (launch,) = _launches(out)
    atomics = [x for x in launch.walk() if isinstance(x, AtomicRMWOp)]
    assert [a.kind for a in atomics] == ["addf"] and not _partials(out)
    assert any("atomics into the destination" in d.message for d in decisions)
    _check(m, out, [[n, _ints(n), np.array([3.0], np.float32)] for n in (0, 1, 700, 70000)])


def test_the_atomic_option_is_refused_for_a_value_used_by_later_statements():
    m = air.parse(DOT)
    out, _ = map_to_gpu(m, "gpu-map-reductions{atomic=true},gpu-map")
    assert not any(isinstance(x, AtomicRMWOp) for x in out.walk())
    assert len(_launches(out)) == 2  # the deterministic two-phase reduction


def test_the_emitted_cuda_compiles_with_nvrtc():
    runtime = pytest.importorskip("runtime")
    pytest.importorskip("cuda.bindings.nvrtc")
    for text, pipe in ((SUM, "gpu-map-reductions{atomic=true},gpu-map"), (SUM, PIPE), (TRISOLV, PIPE), (MAX, PIPE)):
        k = runtime.compile(air.parse(text), target="cuda", arch="sm_90", pipeline=pipe)
        assert k.image.kind == "cubin" and not k.image.log.strip(), k.image.log
        assert "__syncthreads();" in k.source
        if "atomic" in pipe:
            assert "atomicAdd(" in k.source


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs_with_inputs())
def test_random_programs_keep_their_meaning(case):
    m, args = case
    out, _ = map_to_gpu(m, PIPE)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args, "random program")


@pytest.mark.gpu
def test_two_phase_and_atomic_reductions_on_the_gpu():
    """On the device: the two-phase sum (deterministic: the same bits on every call), the atomic
    one, the max, the dot product and the trisolv-like host loop equal the interpreter exactly
    (integer-valued data, so any order of the sums gives the same bits)."""
    import runtime

    if not runtime.gpu_available():
        pytest.skip("needs an NVIDIA GPU")
    def numpy_sum(args):
        return [np.array([np.float32(3.0 + np.sum(args[1], dtype=np.float64))], np.float32)]

    def numpy_max(args):
        return [np.array([max(-100, int(args[1].max(initial=-100)))], np.int32)]

    def sum_args(n):
        return [n, _ints(n), np.array([3.0], np.float32)]

    cases = [(SUM, PIPE, sum_args, numpy_sum),
             (SUM, "gpu-map-reductions{atomic=true},gpu-map", sum_args, numpy_sum),
             (MAX, PIPE, lambda n: [n, _ints(n, 1001, np.int32), np.zeros(1, np.int32)], numpy_max),
             (DOT, PIPE, lambda n: [n, _ints(n), _ints(n, 5), np.zeros(1, np.float32)], None)]
    for text, pipe, make, big_reference in cases:
        m = air.parse(text)
        exe = runtime.compile(m, target="cuda", pipeline=pipe)
        for n in (0, 1, 257, 100_000) + ((3_000_001,) if big_reference else ()):
            args = make(n)
            want = big_reference(args) if n > 100_000 else [w for w in run(m, args)][-1:]
            outs = []
            for _ in range(2):
                got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                exe(*got)
                outs.append(got[-1])
            assert np.array_equal(outs[0], want[-1]) and np.array_equal(outs[1], want[-1]), (pipe, n, outs, want)
    m = air.parse(TRISOLV)
    exe = runtime.compile(m, target="cuda", pipeline=PIPE)
    for n in (1, 40, 700):
        L = (np.tril(_ints(n * n, 5).reshape(n, n), -1) + np.eye(n, dtype=np.float32)).astype(np.float32)
        args = [n, L, np.zeros(n, np.float32), _ints(n, 7)]
        want = run(m, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        exe(*got)
        assert all(np.array_equal(g, w) for g, w in zip([a for a in got if isinstance(a, np.ndarray)], want)), n
