"""Tests of ``affine_ir.library``: every op, several shapes (non-square, size-1 dims,
symbolic sizes), every dtype. Each module must verify and round-trip through text; once the
interpreter exists, its result must match ``library.reference`` -- exactly on integer data
for exact ops, within a per-dtype tolerance for transcendental ones."""

from __future__ import annotations

import shutil
import subprocess

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir import library as lib
from affine_ir.library import reference as ref
from affine_ir.types import IndexType

DTYPES = ["f32", "f16", "bf16"]
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64}
# (rtol, atol) for ops with transcendental functions or cancellation (reference: float64, rounded once).
TOL = {"f32": (1e-5, 1e-5), "f16": (1e-2, 1e-2), "bf16": (2e-2, 2e-2), "f64": (1e-12, 1e-12)}


# -- helpers ---------------------------------------------------------------------------------------
def roundtrip(m) -> str:
    """Verify ``m``, print it, parse it back: structurally equal, and the same text again."""
    air.verify(m)
    text = str(m)
    m2 = air.parse(text)
    assert air.structurally_equal(m, m2)
    assert str(m2) == text
    return text


def interpreter():
    try:
        from affine_ir.interpreter import interpret
    except ImportError:  # written concurrently; these checks start running once it lands
        pytest.skip("affine_ir.interpreter is not available yet")
    return interpret


def func_of(m):
    (f,) = [op for op in m.body.ops if isinstance(op, air.FuncOp)]
    return f


def symbol_args(m) -> list[str]:
    """Names of the trailing index arguments of the module's function."""
    return [a.name_hint for a in func_of(m).args if isinstance(a.type, IndexType)]


def concrete(shape, env) -> tuple[int, ...]:
    return tuple(env.get(s, s) if isinstance(s, str) else s for s in shape)


def ints(shape, dtype, lo=-3, hi=3, seed=0, nonzero=False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(lo, hi + 1, size=shape)
    if nonzero:
        x = np.where(x == 0, 1, x)
    return x.astype(NP[dtype])


def randn(shape, dtype, seed=0, scale=1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(NP[dtype])


def run(m, inputs, out_shapes, env, dtype, outputs=None) -> list[np.ndarray]:
    """Interpret ``m`` on ``inputs`` and fresh outputs (or the given ``outputs``); returns the outputs."""
    interpret = interpreter()
    outs = outputs if outputs is not None else [np.full(s, np.nan, dtype=NP[dtype]) for s in out_shapes]
    interpret(m, *inputs, *outs, *[env[n] for n in symbol_args(m)])
    return outs


def check_exact(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def check_close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


# -- matmul / batch_matmul ---------------------------------------------------------------------------
MATMUL_CASES = [
    ((4, 4, 4), {}, {}),
    ((3, 5, 2), {}, {}),
    ((1, 7, 3), {}, {"transpose_a": True}),
    ((5, 1, 1), {}, {"transpose_b": True}),
    ((3, 4, 6), {}, {"transpose_a": True, "transpose_b": True}),
    ((2, 3, 4), {}, {"accumulate": True}),
    (("M", 5, "K"), {"M": 3, "K": 4}, {}),
    (("M", "N", "K"), {"M": 2, "N": 3, "K": 5}, {"transpose_b": True, "accumulate": True}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", MATMUL_CASES)
def test_matmul(sizes, env, opts, dtype):
    m = lib.matmul(*sizes, dtype=dtype, **opts)
    roundtrip(m)
    M, N, K = concrete(sizes, env)
    A = ints((K, M) if opts.get("transpose_a") else (M, K), dtype, seed=1)
    B = ints((N, K) if opts.get("transpose_b") else (K, N), dtype, seed=2)
    C0 = ints((M, N), dtype, seed=3) if opts.get("accumulate") else np.full((M, N), np.nan, NP[dtype])
    (C,) = run(m, [A, B], [], env, dtype, outputs=[C0.copy()])
    want = ref.matmul(A, B, opts.get("transpose_a", False), opts.get("transpose_b", False),
                      C=C0 if opts.get("accumulate") else None)
    check_exact(C, want)


BATCH_CASES = [
    ((2, 3, 4, 5), {}, {}),
    ((1, 1, 3, 2), {}, {"transpose_a": True, "transpose_b": True}),
    ((3, 2, 1, 4), {}, {"accumulate": True}),
    (("B", 2, 3, "K"), {"B": 2, "K": 3}, {"transpose_b": True}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", BATCH_CASES)
def test_batch_matmul(sizes, env, opts, dtype):
    m = lib.batch_matmul(*sizes, dtype=dtype, **opts)
    roundtrip(m)
    Bt, M, N, K = concrete(sizes, env)
    A = ints((Bt, K, M) if opts.get("transpose_a") else (Bt, M, K), dtype, seed=1)
    B = ints((Bt, N, K) if opts.get("transpose_b") else (Bt, K, N), dtype, seed=2)
    C0 = ints((Bt, M, N), dtype, seed=3) if opts.get("accumulate") else np.full((Bt, M, N), np.nan, NP[dtype])
    (C,) = run(m, [A, B], [], env, dtype, outputs=[C0.copy()])
    want = ref.batch_matmul(A, B, opts.get("transpose_a", False), opts.get("transpose_b", False),
                            C=C0 if opts.get("accumulate") else None)
    check_exact(C, want)


def test_matmul_form_and_names():
    text = roundtrip(lib.matmul("M", 5, "K"))
    assert "func.func @matmul(%A: memref<?x?xf32>, %B: memref<?x5xf32>, %C: memref<?x5xf32>, %M: index, " \
           "%K: index)" in text
    for name in ("%i", "%j", "%k"):
        assert f"affine.for {name}" in text
    assert "affine.for %k = 0 to %K" in text
    assert "memref.alloc" not in text and "arith.extf" not in text
    # f16: f32 accumulator, extf on loads, one truncf per output element, dealloc at the end
    text16 = roundtrip(lib.matmul(8, 8, 8, "f16"))
    assert "%acc = memref.alloc() : memref<8x8xf32>" in text16
    assert text16.count("arith.truncf") == 1 and text16.count("arith.extf") == 2
    assert "memref.dealloc %acc" in text16
    # the accumulation nest is perfect: i { j { k { ... } } }
    f = func_of(lib.matmul(4, 4, 4))
    loops = [op for op in f.body.ops if op.name == "affine.for"]
    assert len(loops) == 2
    i = loops[1]
    j = i.body.ops[0]
    assert j.name == "affine.for" and len([o for o in i.body.ops if not o.is_terminator]) == 1
    assert j.body.ops[0].name == "affine.for" and len([o for o in j.body.ops if not o.is_terminator]) == 1


# -- convolutions -------------------------------------------------------------------------------------
CONV_CASES = [
    ((1, 2, 5, 5, 3, 3, 3), {}, {}),
    ((2, 1, 6, 5, 2, 3, 2), {}, {"stride": 2, "padding": 1}),
    ((1, 3, 7, 6, 2, 2, 3), {}, {"stride": (2, 1), "padding": (1, 0), "dilation": (2, 1), "layout": "NHWC"}),
    ((1, 1, 1, 1, 1, 1, 1), {}, {}),
    ((1, 2, 4, 3, 1, 1, 1), {}, {"layout": "NHWC"}),
    ((1, 2, "H", "W", 2, 3, 3), {"H": 6, "W": 5}, {"stride": 2, "padding": 1, "layout": "NHWC"}),
    (("N", "C", 5, 4, 2, 2, 2), {"N": 2, "C": 2}, {"dilation": 2, "padding": (0, 1)}),
    ((1, 2, 6, 5, 2, "KH", "KW"), {"KH": 3, "KW": 2}, {"stride": 2, "padding": 1, "dilation": (1, 2)}),
]


def _out_hw(H, W, KH, KW, stride=1, padding=0, dilation=1):
    (sh, sw), (ph, pw), (dh, dw) = [(v, v) if isinstance(v, int) else v for v in (stride, padding, dilation)]
    return (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1, (W + 2 * pw - dw * (KW - 1) - 1) // sw + 1


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", CONV_CASES)
def test_conv2d(sizes, env, opts, dtype):
    m = lib.conv2d(*sizes, dtype=dtype, **opts)
    roundtrip(m)
    N, C, H, W, F, KH, KW = concrete(sizes, env)
    geo = {k: v for k, v in opts.items() if k != "layout"}
    Ho, Wo = _out_hw(H, W, KH, KW, **geo)
    nhwc = opts.get("layout") == "NHWC"
    x = ints((N, H, W, C) if nhwc else (N, C, H, W), dtype, seed=1)
    f = ints((KH, KW, C, F) if nhwc else (F, C, KH, KW), dtype, seed=2)
    (y,) = run(m, [x, f], [(N, Ho, Wo, F) if nhwc else (N, F, Ho, Wo)], env, dtype)
    check_exact(y, ref.conv2d(x, f, **opts))


DW_CASES = [
    ((1, 2, 5, 5, 3, 3), {}, {}),
    ((2, 3, 6, 4, 2, 3), {}, {"stride": 2, "padding": 1, "layout": "NHWC"}),
    ((1, 1, 5, 7, 2, 2), {}, {"dilation": (2, 3), "padding": (1, 2)}),
    ((1, "C", "H", 4, 3, 1), {"C": 2, "H": 5}, {"stride": (1, 2), "layout": "NHWC"}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", DW_CASES)
def test_depthwise_conv2d(sizes, env, opts, dtype):
    m = lib.depthwise_conv2d(*sizes, dtype=dtype, **opts)
    roundtrip(m)
    N, C, H, W, KH, KW = concrete(sizes, env)
    Ho, Wo = _out_hw(H, W, KH, KW, **{k: v for k, v in opts.items() if k != "layout"})
    nhwc = opts.get("layout") == "NHWC"
    x = ints((N, H, W, C) if nhwc else (N, C, H, W), dtype, seed=1)
    f = ints((KH, KW, C) if nhwc else (C, KH, KW), dtype, seed=2)
    (y,) = run(m, [x, f], [(N, Ho, Wo, C) if nhwc else (N, C, Ho, Wo)], env, dtype)
    check_exact(y, ref.depthwise_conv2d(x, f, **opts))


def test_conv_padding_is_guarded():
    text = roundtrip(lib.conv2d(1, 1, 4, 4, 1, 3, 3, padding=1))
    assert "affine.if" in text and "affine_set" in text
    assert "affine.if" not in roundtrip(lib.conv2d(1, 1, 4, 4, 1, 3, 3))
    # padding only along w: only w is checked
    assert roundtrip(lib.conv2d(1, 1, 4, 4, 1, 3, 3, padding=(0, 1))).count(">= 0") == 2


# -- pooling ----------------------------------------------------------------------------------------
POOL_CASES = [
    ((1, 2, 4, 6), {}, {"kernel": 2}),
    ((2, 1, 6, 7), {}, {"kernel": 3, "stride": 2, "padding": 1}),
    ((1, 3, 4, 6), {}, {"kernel": (2, 3), "stride": (1, 2), "padding": (1, 1), "layout": "NHWC"}),
    ((1, 1, 1, 1), {}, {"kernel": 1}),
    ((1, "C", "H", "W"), {"C": 2, "H": 5, "W": 4}, {"kernel": 3, "stride": 1, "padding": 1, "layout": "NHWC"}),
]


def _pool_out(sizes, env, opts):
    N, C, H, W = concrete(sizes, env)
    k = opts["kernel"]
    KH, KW = (k, k) if isinstance(k, int) else k
    Ho, Wo = _out_hw(H, W, KH, KW, opts.get("stride", (KH, KW)), opts.get("padding", 0))
    nhwc = opts.get("layout") == "NHWC"
    return ((N, H, W, C) if nhwc else (N, C, H, W)), ((N, Ho, Wo, C) if nhwc else (N, C, Ho, Wo))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", POOL_CASES)
def test_max_pool2d(sizes, env, opts, dtype):
    m = lib.max_pool2d(*sizes, dtype=dtype, **opts)
    roundtrip(m)
    in_shape, out_shape = _pool_out(sizes, env, opts)
    x = ints(in_shape, dtype, lo=-9, hi=9, seed=4)
    (y,) = run(m, [x], [out_shape], env, dtype)
    check_exact(y, ref.max_pool2d(x, **opts))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("sizes,env,opts", POOL_CASES)
def test_avg_pool2d(sizes, env, opts, count_include_pad, dtype):
    m = lib.avg_pool2d(*sizes, dtype=dtype, count_include_pad=count_include_pad, **opts)
    roundtrip(m)
    in_shape, out_shape = _pool_out(sizes, env, opts)
    x = ints(in_shape, dtype, lo=-9, hi=9, seed=5)
    (y,) = run(m, [x], [out_shape], env, dtype)
    # an exact integer sum divided once: correctly rounded in every dtype (f32 -> f16/bf16
    # double rounding of a quotient is innocuous), so equal to the float64 reference rounded once
    check_exact(y, ref.avg_pool2d(x, count_include_pad=count_include_pad, **opts))


# -- element-wise ------------------------------------------------------------------------------------
SHAPES = [((7,), {}), ((3, 4), {}), ((2, 1, 3), {}), ((1,), {}), (("N",), {"N": 5}), (("M", 3), {"M": 2})]
EXACT_UNARY = ("relu", "neg", "abs")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,env", SHAPES)
@pytest.mark.parametrize("op", [*lib.UNARY_OPS, "gelu_tanh"])
def test_unary(op, shape, env, dtype):
    approximate = "tanh" if op == "gelu_tanh" else "none"
    op = "gelu" if op == "gelu_tanh" else op
    m = lib.unary(op, shape, dtype, approximate=approximate)
    assert func_of(m).sym_name == op
    roundtrip(m)
    s = concrete(shape, env)
    if op in EXACT_UNARY:
        x = ints(s, dtype, lo=-5, hi=5, seed=6)
    else:
        x = randn(s, dtype, seed=6, scale=2.0)
        if op == "sqrt":
            x = np.abs(x)
    (y,) = run(m, [x], [s], env, dtype)
    want = ref.unary(op, x, approximate)
    if op in EXACT_UNARY:
        check_exact(y, want)
    else:
        check_close(y, want, dtype)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_relu_gelu_wrappers(approximate):
    g = lib.gelu((2, 3), "f32", approximate=approximate)
    assert str(g) == str(lib.unary("gelu", (2, 3), "f32", approximate=approximate))
    assert ("math.erf" in str(g)) == (approximate == "none") and ("math.tanh" in str(g)) == (approximate == "tanh")
    assert "arith.maximumf" in roundtrip(lib.relu((4,), "bf16"))


BINARY_SHAPES = [
    ((3, 4), (3, 4), {}),
    ((3, 4), (4,), {}),
    ((2, 1, 4), (3, 1), {}),
    ((1,), (5,), {}),
    ((4, 1), (1, 1), {}),
    (("M", 4), (4,), {"M": 3}),
    (("M", 1), (1, "N"), {"M": 2, "N": 3}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape_a,shape_b,env", BINARY_SHAPES)
@pytest.mark.parametrize("op", lib.BINARY_OPS)
def test_binary(op, shape_a, shape_b, env, dtype):
    m = lib.binary(op, shape_a, shape_b, dtype)
    roundtrip(m)
    sa, sb = concrete(shape_a, env), concrete(shape_b, env)
    a = ints(sa, dtype, seed=7)
    b = ints(sb, dtype, seed=8, nonzero=(op == "div"))
    (c,) = run(m, [a, b], [np.broadcast_shapes(sa, sb)], env, dtype)
    # +, -, *, max, min are exact on small integers; one correctly rounded division is too
    check_exact(c, ref.binary(op, a, b))


def test_broadcast_shapes():
    assert lib.broadcast_shape((2, 1, 4), (3, 1)) == (2, 3, 4)
    assert lib.broadcast_shape(("M", 1), (1, "N")) == ("M", "N")
    assert lib.broadcast_shape(("M", 4), ("M", 1)) == ("M", 4)
    for a, b in [((3,), (4,)), (("M",), ("N",)), (("M",), (4,))]:
        with pytest.raises(ValueError):
            lib.binary("add", a, b)
    text = roundtrip(lib.binary("add", (3, 4), (4,)))
    assert "affine.load %B[%j]" in text
    assert "affine.load %B[0, %j]" in roundtrip(lib.binary("mul", (3, 4), (1, 4)))


BIAS_CASES = [((3, 4), -1, {}), ((2, 3, 4), 1, {}), (("M", 5), -1, {"M": 2}), ((1, "C", 2, 2), 1, {"C": 3})]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,env", BIAS_CASES)
def test_bias_add(shape, axis, env, dtype):
    m = lib.bias_add(shape, dtype, axis=axis)
    roundtrip(m)
    s = concrete(shape, env)
    x, bias = ints(s, dtype, seed=9), ints((s[axis],), dtype, seed=10)
    (y,) = run(m, [x, bias], [s], env, dtype)
    check_exact(y, ref.bias_add(x, bias, axis))


# -- reductions -------------------------------------------------------------------------------------
REDUCE_CASES = [
    ((3, 4), -1, False, {}),
    ((3, 4), 0, False, {}),
    ((2, 3, 4), (0, 2), False, {}),
    ((5,), None, False, {}),
    ((2, 3), 1, True, {}),
    ((1, 1), None, True, {}),
    (("M", 4), -1, False, {"M": 3}),
    ((3, "N"), 1, False, {"N": 5}),
    (("M", "N"), None, True, {"M": 2, "N": 3}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,keepdims,env", REDUCE_CASES)
@pytest.mark.parametrize("kind", lib.REDUCE_KINDS)
def test_reduce(kind, shape, axis, keepdims, env, dtype):
    m = lib.reduce(kind, shape, axis, dtype, keepdims=keepdims)
    assert func_of(m).sym_name == f"reduce_{kind}"
    roundtrip(m)
    s = concrete(shape, env)
    x = ints(s, dtype, seed=11)
    want = ref.reduce(kind, x, axis, keepdims)
    (y,) = run(m, [x], [want.shape], env, dtype)
    # small-integer sums are exact; a mean is one correctly rounded division
    check_exact(y, want)


# -- softmax / layer norm -----------------------------------------------------------------------------
SOFTMAX_CASES = [
    ((4, 5), -1, {}),
    ((3, 4), 0, {}),
    ((2, 3, 4), 1, {}),
    ((6,), -1, {}),
    ((1, 1), -1, {}),
    (("M", 5), -1, {"M": 3}),
    ((3, "N"), -1, {"N": 4}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,axis,env", SOFTMAX_CASES)
def test_softmax(shape, axis, env, dtype):
    m = lib.softmax(shape, axis, dtype)
    text = roundtrip(m)
    assert "%max = memref.alloc" in text and "%sum = memref.alloc" in text
    s = concrete(shape, env)
    x = randn(s, dtype, seed=12, scale=3.0)
    (y,) = run(m, [x], [s], env, dtype)
    check_close(y, ref.softmax(x, axis), dtype)


LAYERNORM_CASES = [
    ((3, 8), True, {}),
    ((1, 5), True, {}),
    ((4, 1), True, {}),
    ((2, 6), False, {}),
    (("M", "N"), True, {"M": 3, "N": 7}),
    (("M", 4), False, {"M": 2}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,affine,env", LAYERNORM_CASES)
def test_layernorm(shape, affine, env, dtype):
    m = lib.layernorm(*shape, dtype=dtype, affine=affine)
    text = roundtrip(m)
    assert "%mean = memref.alloc" in text and "%var = memref.alloc" in text
    M, N = concrete(shape, env)
    x = randn((M, N), dtype, seed=13, scale=2.0)
    params = [randn((N,), dtype, seed=14), randn((N,), dtype, seed=15)] if affine else []
    (y,) = run(m, [x, *params], [(M, N)], env, dtype)
    check_close(y, ref.layernorm(x, *params), dtype)


# -- attention / mlp --------------------------------------------------------------------------------
ATTENTION_CASES = [
    ((1, 2, 4, 3), {}, {}),
    ((2, 1, 3, 4), {}, {"causal": True}),
    ((1, 1, 1, 2), {}, {}),
    ((1, 1, 5, 2), {}, {"scale": 0.25}),
    ((1, 2, "S", 4), {"S": 3}, {"causal": True}),
    (("B", 1, "S", "D"), {"B": 2, "S": 3, "D": 2}, {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", ATTENTION_CASES)
def test_attention(sizes, env, opts, dtype):
    m = lib.attention(*sizes, dtype=dtype, **opts)
    text = roundtrip(m)
    for t in ("scores", "max", "sum", "probs"):
        assert f"%{t} = memref.alloc" in text and f"memref.dealloc %{t}" in text
    shape = concrete(sizes, env)
    q, k, v = (randn(shape, dtype, seed=s) for s in (16, 17, 18))
    (o,) = run(m, [q, k, v], [shape], env, dtype)
    check_close(o, ref.attention(q, k, v, **opts), dtype)


MLP_CASES = [
    ((3, 4, 5), {}, {"activation": "gelu"}),
    ((2, 3, 4), {}, {"activation": "gelu", "approximate": "tanh"}),
    ((1, 3, 2), {}, {"activation": "relu"}),
    ((3, 1, 2), {}, {"activation": None}),
    (("M", 3, "K"), {"M": 2, "K": 3}, {"activation": "gelu"}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sizes,env,opts", MLP_CASES)
def test_mlp(sizes, env, opts, dtype):
    m = lib.mlp(*sizes, dtype=dtype, **opts)
    text = roundtrip(m)
    assert "%tmp = memref.alloc" in text
    M, N, K = concrete(sizes, env)
    x, w, bias = ints((M, K), dtype, seed=19), ints((K, N), dtype, seed=20), ints((N,), dtype, seed=21)
    (y,) = run(m, [x, w, bias], [(M, N)], env, dtype)
    want = ref.mlp(x, w, bias, **opts)
    if opts["activation"] in ("relu", None):
        check_exact(y, want)
    else:
        check_close(y, want, dtype)


# -- conventions shared by every op ----------------------------------------------------------------
def _examples():
    return {
        "matmul": lib.matmul(2, 3, 4),
        "scaled_matmul": lib.scaled_matmul(2, 3, 16),
        "batch_matmul": lib.batch_matmul(2, 2, 3, 4),
        "conv2d": lib.conv2d(1, 2, 4, 4, 2, 3, 3, padding=1),
        "depthwise_conv2d": lib.depthwise_conv2d(1, 2, 4, 4, 3, 3),
        "max_pool2d": lib.max_pool2d(1, 2, 4, 4, 2),
        "avg_pool2d": lib.avg_pool2d(1, 2, 4, 4, 2),
        "unary": lib.unary("exp", (3,)),
        "binary": lib.binary("add", (3,), (3,)),
        "bias_add": lib.bias_add((2, 3)),
        "relu": lib.relu((3,)),
        "gelu": lib.gelu((3,)),
        "reduce": lib.reduce("sum", (2, 3), 1),
        "softmax": lib.softmax((2, 3)),
        "layernorm": lib.layernorm(2, 3),
        "attention": lib.attention(1, 1, 2, 2),
        "mlp": lib.mlp(2, 3, 4),
        "elementwise_chain": lib.elementwise_chain(["relu", "add", "exp"], (2, 3)),
        "conv2d_bias_relu": lib.conv2d_bias_relu(1, 2, 4, 4, 2, 3, 3, padding=1),
    }


def test_registry_and_conventions():
    examples = _examples()
    assert set(lib.OPS) == set(examples)
    for name, m in examples.items():
        f = func_of(m)
        assert f.function_type.results == ()
        expected = {"unary": "exp", "binary": "add", "reduce": "reduce_sum"}.get(name, name)
        assert f.sym_name == expected
        ops = list(m.walk())
        allocs = [op for op in ops if op.name == "memref.alloc"]
        deallocs = [op for op in ops if op.name == "memref.dealloc"]
        assert len(allocs) == len(deallocs)
        # allocations and constants are hoisted to the top of the function
        top = [op.name for op in f.body.ops]
        first_loop = top.index("affine.for")
        assert all(op.parent is f.body and f.body.index_of(op) < first_loop for op in allocs)
        assert all(op.parent is f.body for op in ops if op.name == "arith.constant")


def test_symbol_argument_order():
    m = lib.conv2d("N", 3, "H", "H", 4, 3, 3, padding=1)
    assert symbol_args(m) == ["N", "H"]
    assert "memref<?x3x?x?xf32>" in roundtrip(m)
    assert symbol_args(lib.matmul("M", "N", "M")) == ["M", "N"]
    assert symbol_args(lib.binary("add", ("M", 1), (1, "N"))) == ["M", "N"]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_low_precision_computes_in_f32(dtype):
    for m in (lib.softmax((2, 3), dtype=dtype), lib.unary("exp", (3,), dtype), lib.layernorm(2, 3, dtype=dtype)):
        for op in m.walk():
            if op.name.startswith("math.") or op.name in ("arith.addf", "arith.mulf", "arith.divf", "arith.subf"):
                assert str(op.result.type) == "f32", op


F64_CASES = [
    ("matmul", lambda: lib.matmul(2, 3, 4, "f64"), [(2, 4), (4, 3)], (2, 3), lambda a, b: ref.matmul(a, b)),
    ("conv2d", lambda: lib.conv2d(1, 2, 4, 4, 2, 3, 3, padding=1, dtype="f64"), [(1, 2, 4, 4), (2, 2, 3, 3)],
     (1, 2, 4, 4), lambda x, f: ref.conv2d(x, f, padding=1)),
    ("softmax", lambda: lib.softmax((3, 4), dtype="f64"), [(3, 4)], (3, 4), ref.softmax),
    ("layernorm", lambda: lib.layernorm(3, 4, dtype="f64"), [(3, 4), (4,), (4,)], (3, 4), ref.layernorm),
    ("attention", lambda: lib.attention(1, 1, 3, 2, "f64", causal=True), [(1, 1, 3, 2)] * 3, (1, 1, 3, 2),
     lambda q, k, v: ref.attention(q, k, v, causal=True)),
    ("reduce", lambda: lib.reduce("mean", (3, 4), 0, "f64"), [(3, 4)], (4,), lambda x: ref.reduce("mean", x, 0)),
]


@pytest.mark.parametrize("name,build,in_shapes,out_shape,want", F64_CASES, ids=[c[0] for c in F64_CASES])
def test_f64(name, build, in_shapes, out_shape, want):
    m = build()
    text = roundtrip(m)
    assert "f32" not in text  # f64 computes in f64
    xs = [randn(s, "f64", seed=22 + n) for n, s in enumerate(in_shapes)]
    (y,) = run(m, xs, [out_shape], {}, "f64")
    check_close(y, want(*xs), "f64")


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (MLIR) is not installed")
def test_mlir_accepts_library_modules():
    """MLIR itself (iree-opt) parses and verifies what the library prints."""
    mods = [*_examples().values(), lib.matmul("M", 5, "K", "f16", transpose_a=True, accumulate=True),
            lib.conv2d(1, 2, "H", 5, 3, 3, 3, stride=2, padding=1, layout="NHWC", dtype="bf16"),
            lib.avg_pool2d(1, 2, "H", 5, (3, 2), 2, padding=1, count_include_pad=False),
            lib.attention(1, 2, "S", "D", "f16", causal=True), lib.reduce("max", (3,), None, "bf16")]
    text = "\n// -----\n".join(str(m) for m in mods)
    r = subprocess.run(["iree-opt", "--split-input-file", "--verify-each", "-"], input=text, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_bad_arguments():
    with pytest.raises(ValueError):
        lib.matmul(2, 2, 2, "f8")
    with pytest.raises(ValueError):
        lib.matmul(0, 2, 2)
    with pytest.raises(ValueError):
        lib.matmul("M x", 2, 2)
    with pytest.raises(TypeError):
        lib.matmul(2.0, 2, 2)
    with pytest.raises(ValueError):
        lib.unary("cube", (3,))
    with pytest.raises(ValueError):
        lib.gelu((3,), approximate="sigmoid")
    with pytest.raises(ValueError):
        lib.reduce("prod", (3,), 0)
    with pytest.raises(ValueError):
        lib.softmax((3, 4), axis=2)
    with pytest.raises(ValueError):
        lib.conv2d(1, 1, 2, 2, 1, 3, 3)  # window larger than the input
    with pytest.raises(ValueError):
        lib.conv2d(1, 1, 4, 4, 1, 3, 3, layout="CHWN")
    with pytest.raises(ValueError):
        lib.max_pool2d(1, 1, 4, 4, 2, padding=2)
    with pytest.raises(ValueError):
        lib.mlp(2, 2, 2, activation="swish")


# -- composites for fusion: elementwise_chain / conv2d_bias_relu -------------------------------------------
def top_level(m, name: str) -> list:
    return [op for op in func_of(m).body.ops if op.name == name]


def nest_depth(loop) -> int:
    """Depth of a perfect nest of affine.for (each body holds one loop, or no loop at all)."""
    depth = 1
    while True:
        body = [o for o in loop.body.ops if not o.is_terminator]
        inner = [o for o in body if o.name == "affine.for"]
        if not inner:
            return depth
        assert len(body) == 1, "not a perfect nest"
        loop, depth = inner[0], depth + 1


def chain_inputs(ops, shape, dtype, seed=30, transcendental=False):
    """``X`` and one fresh operand per binary op (nonzero for div): small integers, or random
    normals for transcendental chains (which take abs before any sqrt)."""
    gen = (lambda s, n, nz: randn(s, dtype, seed=n)) if transcendental else \
        (lambda s, n, nz: ints(s, dtype, seed=n, nonzero=nz))
    x = gen(shape, seed, False)
    bs = [gen(shape, seed + 1 + q, op == "div") for q, op in enumerate(o for o in ops if o in lib.BINARY_OPS)]
    return x, bs


EXACT_CHAINS = [
    ["relu"],
    ["add"],
    ["neg", "add", "mul", "relu"],
    ["sub", "max", "abs", "min", "mul"],
    ["abs", "add", "div"],  # one correctly rounded division, last
]
CLOSE_CHAINS = [
    ["exp", "add", "tanh"],
    ["sigmoid", "mul", "gelu", "sub", "abs", "sqrt"],
]
CHAIN_SHAPES = [((7,), {}), ((2, 1, 3), {}), (("N",), {"N": 5}), (("M", 3), {"M": 2}), (("M", "N"), {"M": 3, "N": 2})]


@pytest.mark.parametrize("dtype", [*DTYPES, "f64"])
@pytest.mark.parametrize("shape,env", CHAIN_SHAPES)
@pytest.mark.parametrize("ops", EXACT_CHAINS + CLOSE_CHAINS, ids=lambda o: "-".join(o))
def test_elementwise_chain(ops, shape, env, dtype):
    m = lib.elementwise_chain(ops, shape, dtype)
    assert func_of(m).sym_name == "elementwise_chain"
    roundtrip(m)
    s = concrete(shape, env)
    exact = ops in EXACT_CHAINS
    x, bs = chain_inputs(ops, s, dtype, transcendental=not exact)
    (y,) = run(m, [x, *bs], [s], env, dtype)
    want = ref.elementwise_chain(ops, x, *bs)
    if exact:  # small integers: every intermediate is exact, so only the last rounding counts
        check_exact(y, want)
    else:
        check_close(y, want, dtype)


@pytest.mark.parametrize("ops", [["relu"], ["add", "exp"], ["neg", "mul", "gelu", "max", "sqrt", "sub"]],
                         ids=lambda o: "-".join(o))
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_elementwise_chain_form(ops, dtype):
    n, n_bin = len(ops), sum(o in lib.BINARY_OPS for o in ops)
    m = lib.elementwise_chain(ops, ("M", 4, 3), dtype)
    text = roundtrip(m)
    f = func_of(m)
    # arguments: %X, %B0.., %Y, then the symbolic size
    assert [a.name_hint for a in f.args] == ["X", *[f"B{q}" for q in range(n_bin)], "Y", "M"]
    # n perfect nests of depth 3, n - 1 hoisted temporaries %t0.. (f32), all deallocated
    loops = top_level(m, "affine.for")
    assert len(loops) == n and all(nest_depth(lp) == 3 for lp in loops)
    allocs = top_level(m, "memref.alloc")
    assert len(allocs) == n - 1 == len(top_level(m, "memref.dealloc"))
    assert [a.result.name_hint for a in allocs] == [f"t{t}" for t in range(n - 1)]
    assert all(str(a.result.type) == "memref<?x4x3xf32>" for a in allocs)
    # nest t writes %t<t> (the last writes %Y) and reads the previous result
    for t, lp in enumerate(loops):
        stores = [op for op in lp.walk() if op.name == "affine.store"]
        loads = {op.memref.name_hint for op in lp.walk() if op.name == "affine.load"}
        assert len(stores) == 1 and stores[0].memref.name_hint == ("Y" if t == n - 1 else f"t{t}")
        assert ("X" if t == 0 else f"t{t - 1}") in loads
    # low precision: only the store into %Y rounds
    assert text.count("arith.truncf") == (1 if dtype == "bf16" else 0)


def test_elementwise_chain_rounds_once():
    """bf16 keeps intermediates in f32: (256 + 1) - 256 = 1, where rounding 257 to bf16 would give 0."""
    m = lib.elementwise_chain(["add", "sub"], (2,), "bf16")
    x = np.array([256, 3], dtype=ml_dtypes.bfloat16)
    b0 = np.array([1, 1], dtype=ml_dtypes.bfloat16)
    b1 = np.array([256, 2], dtype=ml_dtypes.bfloat16)
    (y,) = run(m, [x, b0, b1], [(2,)], {}, "bf16")
    assert (x.astype(np.float32) + b0.astype(np.float32)).astype(ml_dtypes.bfloat16)[0] == 256  # the premise
    check_exact(y, np.array([1, 2], dtype=ml_dtypes.bfloat16))
    check_exact(y, ref.elementwise_chain(["add", "sub"], x, b0, b1))


@settings(max_examples=40, deadline=None)
@given(ops=st.lists(st.sampled_from(["relu", "neg", "abs", "add", "sub", "mul", "max", "min"]), min_size=1,
                    max_size=6), seed=st.integers(0, 2 ** 16))
def test_elementwise_chain_random(ops, seed):
    m = lib.elementwise_chain(ops, (3, 2), "f32")
    x, bs = chain_inputs(ops, (3, 2), "f32", seed=seed)
    (y,) = run(m, [x, *bs], [(3, 2)], {}, "f32")
    check_exact(y, ref.elementwise_chain(ops, x, *bs))
    assert len(top_level(m, "affine.for")) == len(ops) and len(top_level(m, "memref.alloc")) == len(ops) - 1


def test_elementwise_chain_single_and_gelu_form():
    m = lib.elementwise_chain("relu", (3,))  # a bare name is a chain of one
    assert len(top_level(m, "affine.for")) == 1 and not top_level(m, "memref.alloc")
    assert "math.tanh" in str(lib.elementwise_chain(["gelu"], (3,), approximate="tanh"))
    assert "math.erf" in str(lib.elementwise_chain(["gelu"], (3,)))


def test_elementwise_chain_bad_ops():
    with pytest.raises(ValueError, match=r"op 1 \('cube'\)"):
        lib.elementwise_chain(["relu", "cube", "add"], (3,))
    with pytest.raises(ValueError, match="add:B"):
        lib.elementwise_chain(["add:B"], (3,))
    with pytest.raises(ValueError, match="at least one"):
        lib.elementwise_chain([], (3,))
    with pytest.raises(ValueError, match="None"):
        lib.elementwise_chain(["relu", None], (3,))
    with pytest.raises(ValueError):
        lib.elementwise_chain(["gelu"], (3,), approximate="erf")
    with pytest.raises(ValueError):
        lib.elementwise_chain(["relu"], (0,))


CONV_BIAS_RELU_CASES = [
    ((1, 2, 5, 5, 3, 3, 3), {}, {}),
    ((2, 1, 6, 5, 2, 3, 2), {}, {"stride": 2, "padding": 1}),
    ((1, 3, 7, 6, 2, 2, 3), {}, {"stride": (2, 1), "padding": (1, 0), "dilation": (2, 1)}),
    ((1, 1, 1, 1, 1, 1, 1), {}, {}),
    (("N", "C", 5, 4, 2, 2, 2), {"N": 2, "C": 2}, {"dilation": 2, "padding": (0, 1)}),
    ((1, 2, "H", "W", 3, 3, 3), {"H": 6, "W": 5}, {"stride": 2, "padding": 1}),
]


@pytest.mark.parametrize("dtype", [*DTYPES, "f64"])
@pytest.mark.parametrize("sizes,env,opts", CONV_BIAS_RELU_CASES)
def test_conv2d_bias_relu(sizes, env, opts, dtype):
    m = lib.conv2d_bias_relu(*sizes, dtype=dtype, **opts)
    text = roundtrip(m)
    assert "%acc = memref.alloc" in text and "memref.dealloc %acc" in text
    N, C, H, W, F, KH, KW = concrete(sizes, env)
    Ho, Wo = _out_hw(H, W, KH, KW, **opts)
    x, f = ints((N, C, H, W), dtype, seed=31), ints((F, C, KH, KW), dtype, seed=32)
    bias = ints((F,), dtype, seed=33)
    (y,) = run(m, [x, f, bias], [(N, F, Ho, Wo)], env, dtype)
    # small-integer sums are exact: one rounding, as in the reference
    check_exact(y, ref.conv2d_bias_relu(x, f, bias, **opts))


def test_conv2d_bias_relu_form():
    sizes, opts = (2, 3, 6, 6, 4, 3, 3), {"stride": 1, "padding": 1}
    m = lib.conv2d_bias_relu(*sizes, **opts)
    f = func_of(m)
    assert [a.name_hint for a in f.args] == ["input", "filter", "bias", "output"]
    assert [str(a.type) for a in f.args] == ["memref<2x3x6x6xf32>", "memref<4x3x3x3xf32>", "memref<4xf32>",
                                             "memref<2x4x6x6xf32>"]
    # init nest, accumulation nest (the conv2d one: same loops and body), epilogue nest
    loops = top_level(m, "affine.for")
    assert [nest_depth(lp) for lp in loops] == [4, 7, 4]
    (alloc,) = top_level(m, "memref.alloc")
    assert alloc.result.name_hint == "acc" and str(alloc.result.type) == "memref<2x4x6x6xf32>"
    conv_loops = top_level(lib.conv2d(*sizes, **opts), "affine.for")
    assert [sorted(o.name for o in lp.walk()) for lp in loops[:2]] == \
        [sorted(o.name for o in lp.walk()) for lp in conv_loops]
    epi = {op.name for op in loops[2].walk()}
    assert {"arith.addf", "arith.maximumf"} <= epi and "arith.mulf" not in epi
    assert "affine.load %bias[%f_1] : memref<4xf32>" in str(m)
    # the relu does clip: some outputs are zero, some positive (on data where that happens)
    x, w, b = ints((2, 3, 6, 6), "f32", seed=34), ints((4, 3, 3, 3), "f32", seed=35), ints((4,), "f32", seed=36)
    (y,) = run(m, [x, w, b], [(2, 4, 6, 6)], {}, "f32")
    pre = ref.conv2d(x, w, **opts) + b.reshape(1, -1, 1, 1)
    assert (pre < 0).any() and (pre > 0).any()
    check_exact(y, ref.conv2d_bias_relu(x, w, b, **opts))


def test_conv2d_bias_relu_bad_arguments():
    with pytest.raises(ValueError):
        lib.conv2d_bias_relu(1, 1, 2, 2, 1, 3, 3)  # window larger than the input
    with pytest.raises(ValueError):
        lib.conv2d_bias_relu(1, 1, 4, 4, 1, 3, 3, stride=0)
    with pytest.raises(ValueError):
        lib.conv2d_bias_relu(1, 1, 4, 4, 1, 3, 3, dtype="i8")
