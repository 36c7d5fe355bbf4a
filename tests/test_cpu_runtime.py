"""The CPU JIT (``runtime.cpu``) against the reference interpreter: random programs (exact),
random programs after ``affine-parallelize`` run on two threads (exact), argument errors,
unsupported IR, and the in-memory and on-disk object caches."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
import runtime
import transforms
from affine_ir import library as lib
from affine_ir.dialects.builtin import ModuleOp
from affine_ir.testing import programs_with_inputs, run
from runtime import CompileError, LaunchError

BATCH = 4  # random programs compiled together as one module (the JIT has a fixed cost per module)
PARALLELIZE = transforms.PassManager.parse("affine-parallelize{parallel-reductions=true}")


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(isolated_cpu_cache):
    """Each module compiles into its own cache directory (see conftest)."""


def merged(modules: list[ModuleOp]) -> ModuleOp:
    """One module holding the (single) function of each module, renamed ``@kernel<k>``."""
    funcs = []
    for k, m in enumerate(modules):
        (f,) = [g.clone() for g in m.functions]
        f.attributes["sym_name"] = f"kernel{k}"
        funcs.append(f)
    out = ModuleOp(funcs)
    air.verify(out)
    return out


def run_cpu(module: ModuleOp, fn: str, args: list, threads: int = 1) -> list[np.ndarray]:
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    runtime.cpu.compile(module, fn=fn, opt_level=2, threads=threads)(*copies)
    return [a for a in copies if isinstance(a, np.ndarray)]


def assert_same(want: list, got: list, what: str) -> None:
    for k, (w, g) in enumerate(zip(want, got)):
        assert w.dtype == g.dtype and w.shape == g.shape
        if not np.array_equal(w, g):
            idx = tuple(int(i) for i in np.argwhere(w != g)[0])
            raise AssertionError(f"{what}: output {k} differs at {idx}: interpreter {w[idx]}, cpu {g[idx]}")


@settings(max_examples=52, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(programs_with_inputs(), min_size=BATCH, max_size=BATCH))
def test_random_programs_match_interpreter(cases):
    """>= 200 random programs per run: sequential code, then the parallelized program on two
    threads, both exactly equal to the interpreter on the original."""
    wants = [run(m, args) for m, args in cases]
    seq = merged([m for m, _ in cases])
    par = merged([PARALLELIZE.run(m) for m, _ in cases])
    for k, ((m, args), want) in enumerate(zip(cases, wants)):
        assert_same(want, run_cpu(seq, f"kernel{k}", args), f"sequential\n{m}")
        assert_same(want, run_cpu(par, f"kernel{k}", args, threads=2), f"threads=2\n{par.functions[k]}")


def test_parallel_segments_are_used_and_reductions_are_deterministic():
    text = """
    func.func @dot(%A: memref<1000xf32>, %B: memref<1000xf32>, %out: memref<1xf32>) {
      %r = affine.parallel (%i) = (0) to (1000) reduce ("addf") -> (f32) {
        %a = affine.load %A[%i] : memref<1000xf32>
        %b = affine.load %B[%i] : memref<1000xf32>
        %p = arith.mulf %a, %b : f32
        affine.yield %p : f32
      }
      affine.store %r, %out[0] : memref<1xf32>
      return
    }
    """
    m = air.parse(text)
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    outs = []
    for threads in (2, 3, 8):
        k = runtime.cpu.compile(m, threads=threads)
        assert [s.kind for s in k.abi.segments] == ["parallel", "serial"]
        out = np.zeros(1, np.float32)
        k(A, B, out)
        outs.append(out[0])
    assert outs[0] == outs[1] == outs[2]  # the chunks do not depend on the thread count
    seq = np.zeros(1, np.float32)
    runtime.cpu.compile(m, threads=1)(A, B, seq)
    ref = np.zeros(1, np.float32)
    air.interpret(m, A, B, ref)
    assert seq[0] == ref[0]  # threads=1 keeps the interpreter's order
    assert abs(float(outs[0]) - float(ref[0])) < 1e-3


def test_scalar_arguments_and_results():
    m = air.parse("""
    func.func @f(%x: f32, %n: index, %h: f16, %b: bf16, %i: i32) -> (f32, index, f16, bf16, i32, i1) {
      %c = arith.index_cast %n : index to i32
      %s = arith.addi %c, %i : i32
      %y = arith.mulf %x, %x : f32
      %hh = arith.addf %h, %h : f16
      %bb = arith.mulf %b, %b : bf16
      %t = arith.cmpi slt, %s, %i : i32
      return %y, %n, %hh, %bb, %s, %t : f32, index, f16, bf16, i32, i1
    }""")
    args = (1.5, 7, 0.1, 3.3, -2)
    assert runtime.cpu.compile(m)(*args) == air.interpret(m, *args)


# -- errors ---------------------------------------------------------------------------------------

def _matmul_kernel():
    return runtime.cpu.compile(lib.matmul(4, 3, "K"))


def test_wrong_arguments_raise_launch_errors():
    k = _matmul_kernel()
    A, B, C = np.zeros((4, 5), np.float32), np.zeros((5, 3), np.float32), np.zeros((4, 3), np.float32)
    with pytest.raises(LaunchError, match=r"takes 4 arguments"):
        k(A, B, C)
    with pytest.raises(LaunchError, match=r"argument #0 \(%A\): expected dtype float32.*float64"):
        k(A.astype(np.float64), B, C, 5)
    with pytest.raises(LaunchError, match=r"argument #2 \(%C\): expected shape \(4, 3\)"):
        k(A, B, np.zeros((3, 3), np.float32), 5)
    with pytest.raises(LaunchError, match=r"argument #1 \(%B\): the array is not C-contiguous"):
        k(A, np.zeros((3, 5), np.float32).T, C, 5)
    with pytest.raises(LaunchError, match=r"argument #3 \(%K\): expected index"):
        k(A, B, C, 2.5)
    with pytest.raises(LaunchError, match=r"argument #0 \(%A\): expected a numpy array"):
        k([[0.0]], B, C, 5)
    k(A, B, C, 5)  # fine


def test_overlapping_arrays_use_code_without_noalias():
    m = air.parse("""
    func.func @shift(%A: memref<8xf32>, %B: memref<8xf32>) {
      affine.for %i = 0 to 7 {
        %a = affine.load %A[%i + 1] : memref<8xf32>
        affine.store %a, %B[%i] : memref<8xf32>
      }
      return
    }""")
    x = np.arange(8, dtype=np.float32)
    y = x.copy()
    air.interpret(m, y, y)
    runtime.cpu.compile(m)(x, x)
    assert np.array_equal(x, y)


def test_unsupported_op_is_a_compile_error_naming_it():
    m = air.parse(textwrap.dedent("""\
    func.func @k(%A: memref<4xf32>) {
      gpu.barrier
      return
    }"""), "k.mlir")
    with pytest.raises(CompileError, match=r"k.mlir:2:3: error: cannot compile 'gpu.barrier'"):
        runtime.cpu.compile(m)


def test_call_to_a_declaration_is_a_compile_error():
    m = air.parse("""
    func.func private @ext(f32) -> f32
    func.func @k(%x: f32) -> f32 {
      %y = func.call @ext(%x) : (f32) -> f32
      return %y : f32
    }""")
    with pytest.raises(CompileError, match=r"cannot call @ext: it is a declaration"):
        runtime.cpu.compile(m, fn="k")


# -- the caches --------------------------------------------------------------------------------------

def test_second_compile_hits_the_memory_cache():
    m = lib.matmul(6, 5, 4)
    runtime.cpu.compile(m, opt_level=2)
    before = runtime.cpu.cache_info()
    k = runtime.cpu.compile(air.parse(str(m)), opt_level=2)
    after = runtime.cpu.cache_info()
    assert k.cache == "memory" and after["memory_hits"] == before["memory_hits"] + 1
    assert after["compiles"] == before["compiles"]


def test_fresh_process_hits_the_disk_cache(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, runtime
        from affine_ir import library as lib
        k = runtime.cpu.compile(lib.softmax((3, 5)))
        x = np.arange(15, dtype=np.float32).reshape(3, 5); y = np.zeros_like(x)
        k(x, y)
        assert abs(y.sum() - 3) < 1e-5
        print(k.cache, runtime.cpu.cache_info()["compiles"])
    """)
    env = dict(os.environ, AFFINE_IR_CACHE=str(tmp_path), PYTHONPATH=os.getcwd())
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["compiled", "1"]
    assert second.stdout.split() == ["disk", "0"]
    assert any(p.suffix == ".o" for p in tmp_path.iterdir())
