"""The inline math of :mod:`codegen.llvm.vector_math` through ``runtime.cpu.compile``:

- default kind (f32/f16/bf16 computed in double, rounded once): equal to the interpreter's
  result on 2**20 f32 inputs per function drawn from all bit patterns (every exponent, both
  signs, denormals, inf, NaN), 2**18 more in the range where the function varies, and the
  edge values; on every f16 and bf16 input; and on a small array through ``affine_ir.interpret``
  itself. (An exhaustive sweep of all 2**32 f32 inputs, not part of the suite, found no
  difference for any of the six functions.)
- ``fast_math`` (f32 polynomials): max ulp error on the same inputs below the stated bounds,
  special values exact.
- scalars and vectors of 3, 16 and 64 lanes (f32, and f16) give the same values; the
  optimized code of a loop is vectorized and calls nothing; the coefficients re-derive.
"""

from __future__ import annotations

import ctypes
import math

import ml_dtypes
import numpy as np
import pytest
from llvmlite import ir as llvm_ir

import affine_ir as air
import runtime
from affine_ir.floats import ROUNDERS
from affine_ir.interp import semantics
from analysis.targets import host_cpu
from codegen.llvm import emit
from codegen.llvm.vector_math import FITS, FUNCTIONS, emit_math
from runtime import cpu_jit

F32_MAX = float(np.finfo(np.float32).max)
TINY = float.fromhex("0x1p-149")
#: Max error (ulps of the f32 result) of the fast_math kind asserted on the samples: the maxima
#: over all 2**32 inputs (module docstring of codegen.llvm.vector_math), rounded up.
FAST_ULPS = {"exp": 1.07, "exp2": 1.14, "log": 0.86, "log2": 1.04, "tanh": 1.5, "erf": 1.11}
#: Where the function varies (beyond it, it saturates or is covered by the bit patterns).
DENSE = {"exp": (-105.0, 90.0), "exp2": (-152.0, 130.0), "log": (0.25, 4.0), "log2": (0.25, 4.0),
         "tanh": (-10.0, 10.0), "erf": (-4.5, 4.5)}


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(isolated_cpu_cache):
    """Each module compiles into its own cache directory (see conftest)."""


def _loop(fn: str, dtype: str = "f32", lanes: int | None = None) -> air.ModuleOp:
    """``B[i] = fn(A[i])`` over memrefs of any length (a multiple of ``lanes`` for vectors)."""
    t = f"vector<{lanes}x{dtype}>" if lanes else dtype
    load = (f"affine.vector_load %A[%i] : memref<?x{dtype}>, {t}" if lanes
            else f"affine.load %A[%i] : memref<?x{dtype}>")
    store = (f"affine.vector_store %r, %B[%i] : memref<?x{dtype}>, {t}" if lanes
             else f"affine.store %r, %B[%i] : memref<?x{dtype}>")
    return air.parse(f"""func.func @f(%A: memref<?x{dtype}>, %B: memref<?x{dtype}>) {{
  %c0 = arith.constant 0 : index
  %n = memref.dim %A, %c0 : memref<?x{dtype}>
  affine.for %i = 0 to %n step {lanes or 1} {{
    %a = {load}
    %r = math.{fn} %a : {t}
    {store}
  }}
  return
}}""")


def _run(fn: str, x: np.ndarray, fast: bool = False, lanes: int | None = None, dtype: str = "f32") -> np.ndarray:
    y = np.empty_like(x)
    runtime.cpu.compile(_loop(fn, dtype, lanes), threads=1, fast_math=fast)(x, y)
    return y


def _interpreter_fn(fn: str):
    """The interpreter's double function for ``math.<fn>`` (rounded by the caller)."""
    name = semantics.MATH_UNARY[fn]
    return getattr(math, name[5:]) if name.startswith("math.") else getattr(semantics, name)


def _reference(fn: str, x: np.ndarray) -> np.ndarray:
    """The interpreter's f32 results: its double function, rounded once to f32 (numpy's cast
    rounds to nearest even, overflows to inf)."""
    f = _interpreter_fn(fn)
    with np.errstate(over="ignore", invalid="ignore"):  # invalid: signalling NaNs among the inputs
        return np.array([f(v) for v in x.astype(np.float64).tolist()]).astype(np.float32)


def _edge_values() -> list[float]:
    big = [F32_MAX, 1e38, 1e30, 3e9, 1e6, 200.0, 150.0]
    vals = [0.0, TINY, 2 * TINY, float.fromhex("0x1.fffffcp-127"), float.fromhex("0x1p-126"), 1e-30, 2.0 ** -25,
            0.35, 0.5, 1.0, 2.0, 3.92, 4.0, 9.0, 9.02, 10.0, 20.0, 88.72283, 88.72284, 88.7, 89.0, 103.9, 103.98,
            104.0, 126.0, 127.9, 128.0, 149.0, 149.5, 150.0, 151.0, math.inf, *big]
    ints = [float(k) for k in range(-150, 130)]
    out = vals + [-v for v in vals] + ints + [math.nan]
    return [float(np.float32(v)) for v in out]


def _samples(fn: str) -> np.ndarray:
    """2**20 random f32 bit patterns, 2**18 values uniform in ``DENSE[fn]``, the edge values."""
    rng = np.random.default_rng(1234)
    patterns = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    lo, hi = DENSE[fn]
    dense = rng.uniform(lo, hi, size=1 << 18).astype(np.float32)
    return np.concatenate([patterns, dense, np.array(_edge_values(), dtype=np.float32)])


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: equal values with equal signs (zeros), or both NaN."""
    return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


def _ulp_errors(y: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|y - exact| in ulps of f32 at ``exact`` (double); 0 where both are the same special
    value (inf, NaN, or an overflow of ``exact``), inf where only one is."""
    with np.errstate(over="ignore", invalid="ignore"):
        yd = y.astype(np.float64)
        rf = exact.astype(np.float32).astype(np.float64)
        e = np.frexp(np.abs(exact))[1]
        err = np.abs(yd - exact) / np.ldexp(1.0, np.maximum(e - 1, -126) - 23)
    special = ~np.isfinite(yd) | ~np.isfinite(rf)
    err[special] = np.where(_same(yd, rf)[special], 0.0, np.inf)
    return err


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_default_kind_equals_interpreter_on_sampled_f32(fn):
    x = _samples(fn)
    assert x.size >= 1_000_000
    got, want = _run(fn, x), _reference(fn, x)
    bad = ~_same(got, want)
    assert not bad.any(), f"{fn}: {int(bad.sum())} differ, e.g. x={x[bad][:5]} got {got[bad][:5]} want {want[bad][:5]}"


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_default_kind_equals_interpreter_on_every_16_bit_input(fn, dtype):
    np_dtype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np_dtype)
    got = _run(fn, x, dtype=dtype).astype(np.float64)
    f, rnd = _interpreter_fn(fn), ROUNDERS[dtype]
    with np.errstate(invalid="ignore"):
        want = np.array([rnd(f(v)) for v in x.astype(np.float64).tolist()])
    bad = ~_same(got, want)
    assert not bad.any(), f"{fn} {dtype}: x={x[bad][:5]} got {got[bad][:5]} want {want[bad][:5]}"


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_default_kind_equals_the_interpreter_itself(fn):
    x = np.array(_edge_values()[:64] + [0.1 * k - 3.0 for k in range(64)], dtype=np.float32)
    for lanes in (None, 16):
        m = _loop(fn, lanes=lanes)
        got, want = np.empty_like(x), np.empty_like(x)
        runtime.cpu.compile(m, threads=1)(x, got)
        air.interpret(m, x, want)
        assert _same(got, want).all(), (fn, lanes, x[~_same(got, want)])


def _double_kernel(fn: str):
    """``emit_math`` on doubles, as a function of a float64 array (the default kind before the
    rounding to f32)."""
    d, i64, ptr = llvm_ir.DoubleType(), llvm_ir.IntType(64), llvm_ir.PointerType()
    mod = llvm_ir.Module()
    f = llvm_ir.Function(mod, llvm_ir.FunctionType(llvm_ir.VoidType(), [ptr, ptr, i64]), "kernel")
    entry, loop, done = f.append_basic_block(), f.append_basic_block(), f.append_basic_block()
    b = llvm_ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(llvm_ir.Constant(i64, 0), entry)
    y = emit_math(b, fn, b.load(b.gep(f.args[0], [i], source_etype=d), typ=d))
    b.store(y, b.gep(f.args[1], [i], source_etype=d))
    nxt = b.add(i, llvm_ir.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, f.args[2]), loop, done)
    b.position_at_end(done)
    b.ret_void()
    loaded = cpu_jit.LoadedObject(cpu_jit.compile_object(str(mod), 2)[0], 2)
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(loaded.address("kernel"))

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x)
        call(x.ctypes.data, out.ctypes.data, x.size)
        return out
    run.loaded = loaded  # keeps the code alive
    return run


#: Where the default kind's double approximates the function (beyond, it returns a value
#: that rounds to the saturated f32 result: clamps of the argument).
UNCLAMPED = {"exp": 200.0, "exp2": 200.0, "log": math.inf, "log2": math.inf, "tanh": 20.0, "erf": 4.0}


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_default_kind_relative_error_is_below_2_to_minus_50(fn):
    mp = pytest.importorskip("mpmath")
    with np.errstate(invalid="ignore"):
        x = _samples(fn)[::64].astype(np.float64)
    x = x[np.isfinite(x) & (np.abs(x) <= UNCLAMPED[fn]) & ((x > 0) if fn.startswith("log") else True)]
    got = _double_kernel(fn)(x)
    exact_fn = {"exp": mp.exp, "exp2": lambda v: mp.power(2, v), "log": mp.log, "log2": lambda v: mp.log(v, 2),
                "tanh": mp.tanh, "erf": mp.erf}[fn]
    worst = mp.mpf(0)
    with mp.workdps(40):
        for v, g in zip(x.tolist(), got.tolist()):
            exact = exact_fn(mp.mpf(v))
            if exact != 0:
                worst = max(worst, abs((mp.mpf(g) - exact) / exact))
    assert x.size > 10_000
    assert worst < mp.mpf(2) ** -50, f"{fn}: relative error 2**{float(mp.log(worst, 2)):.2f}"


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_fast_kind_is_within_its_ulp_bound(fn):
    x = _samples(fn)
    got = _run(fn, x, fast=True)
    f = _interpreter_fn(fn)
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.array([f(v) for v in x.astype(np.float64).tolist()])
    err = _ulp_errors(got, exact)
    worst = int(np.argmax(err))
    assert err[worst] <= FAST_ULPS[fn], f"{fn}: {err[worst]} ulp at x={float(x[worst])!r}"
    assert err[worst] > 0.5  # the bound is not vacuous: the fast kind is not correctly rounded


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
def test_fast_kind_special_values(fn):
    x = np.array([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0], dtype=np.float32)
    assert _same(_run(fn, x, fast=True), _reference(fn, x)).all()


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
@pytest.mark.parametrize("fast", [False, True])
def test_vectors_of_any_lane_count_give_the_scalar_values(fn, fast):
    rng = np.random.default_rng(7)
    lo, hi = DENSE[fn]
    x = np.concatenate([rng.uniform(lo, hi, 192 - 16), [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-40, -1e-40, 1.0,
                                                         2.0, 0.5, 88.8, -104.0, 3.5, -3.5, 1e30, -1e30]])
    x = x.astype(np.float32)
    scalar = _run(fn, x, fast)
    for lanes in (3, 16, 64):
        assert _same(_run(fn, x, fast, lanes), scalar).all(), lanes
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    assert _same(_run(fn, h, fast, 4, "f16"), _run(fn, h, fast, None, "f16")).all()


@pytest.mark.parametrize("fn", sorted(FUNCTIONS))
@pytest.mark.parametrize("fast", [False, True])
def test_loops_vectorize_and_call_nothing(fn, fast):
    _, optimized = cpu_jit.compile_object(emit(_loop(fn), fast_math=fast).text, 3)
    body = optimized[optimized.index("define void @air.f("):]
    body = body[:body.index("\n}\n")]
    called = {line.split("@")[1].split("(")[0].strip('"') for line in body.splitlines() if " call " in line}
    assert all(c.startswith("llvm.") for c in called), called
    bits = host_cpu().vector_bits  # the JIT compiles for the host: 512 with AVX-512, 256 with AVX2
    assert (f"<{bits // 32} x float>" if fast else f"<{bits // 64} x double>") in optimized


def test_f64_math_stays_on_libm():
    text = emit(_loop("exp", "f64")).text
    assert '@"llvm.exp.f64"' in text and "fmuladd" not in text


_MP_TARGETS = {
    "exp_tail": lambda mp, r: (mp.expm1(r) - r) / r**2 if r else mp.mpf(1) / 2,
    "exp2_tail": lambda mp, r: ((mp.expm1(r * mp.log(2)) - r * mp.log(2)) / r**2 if r else mp.log(2) ** 2 / 2),
    "erf_small": lambda mp, t: mp.erf(mp.sqrt(t)) / mp.sqrt(t) - 1 if t else 2 / mp.sqrt(mp.pi) - 1,
    "erfc_scaled": lambda mp, t: mp.erfc(2 * (1 + t) / (1 - t)) * mp.exp((2 * (1 + t) / (1 - t)) ** 2),
    "tanh_small": lambda mp, t: (mp.tanh(mp.sqrt(t)) - mp.sqrt(t)) / mp.sqrt(t) ** 3 if t else -mp.mpf(1) / 3,
    "log_tail": lambda mp, u: ((2 * mp.atanh(mp.sqrt(u)) - 2 * mp.sqrt(u)) / mp.sqrt(u) ** 3 if u
                               else mp.mpf(2) / 3),
}


@pytest.mark.parametrize("key", sorted(FITS))
def test_coefficients_rederive(key):
    mp = pytest.importorskip("mpmath")
    fit = FITS[key]
    with mp.workdps(50):
        c = mp.chebyfit(lambda v: _MP_TARGETS[fit.target](mp, v), [mp.mpf(fit.interval[0]), mp.mpf(fit.interval[1])],
                        len(fit.coefficients))
    derived = [float(v) for v in reversed(c)]
    if fit.fmt == "f32":
        derived = [float(np.float32(v)) for v in derived]
    assert tuple(derived) == fit.coefficients
