"""numpy references for the library ops, for tests.

Each function takes the input arrays in the order of the IR function's memref arguments
(then the op's options) and returns the output array. It computes in float64 and casts
the result to the dtype of the first input (``np.float16``, ``ml_dtypes.bfloat16``,
``np.float32``, ``np.float64``), i.e. one rounding per output element.
"""

from __future__ import annotations

import math

import numpy as np

from ._kernel import pair

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f64(*arrays):
    return [np.asarray(a).astype(np.float64) for a in arrays]


def _out(x, like) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.asarray(like).dtype)


def matmul(A, B, transpose_a: bool = False, transpose_b: bool = False, C=None) -> np.ndarray:
    """``A @ B`` (``A`` stored transposed when ``transpose_a``...); ``C + A @ B`` when ``C`` is given."""
    a, b = _f64(A, B)
    r = (a.T if transpose_a else a) @ (b.T if transpose_b else b)
    return _out(r if C is None else r + _f64(C)[0], A)


def scaled_matmul(A, B, scale_a, scale_b, out_dtype) -> np.ndarray:
    """``(A @ B^T) * (scale_a[0] * scale_b[0])`` in f64, then as ``out_dtype`` (a numpy dtype)."""
    a, b = _f64(A, B)
    sa, sb = (np.float32(np.asarray(s).reshape(-1)[0]) for s in (scale_a, scale_b))
    scale = float(np.float32(sa * sb))
    return np.asarray((a @ b.T) * scale).astype(out_dtype)


def batch_matmul(A, B, transpose_a: bool = False, transpose_b: bool = False, C=None) -> np.ndarray:
    """Per-batch :func:`matmul` of ``A[B, ., .]`` and ``B[B, ., .]``."""
    a, b = _f64(A, B)
    r = (a.transpose(0, 2, 1) if transpose_a else a) @ (b.transpose(0, 2, 1) if transpose_b else b)
    return _out(r if C is None else r + _f64(C)[0], A)


def _to_nchw(x, layout):
    return x if layout == "NCHW" else x.transpose(0, 3, 1, 2)


def _from_nchw(x, layout):
    return x if layout == "NCHW" else x.transpose(0, 2, 3, 1)


def _windows(x, KH, KW, stride, padding, dilation, fill):
    """``x[N, C, H, W]`` padded with ``fill`` -> windows ``[N, C, Ho, Wo, KH, KW]``."""
    (sh, sw), (ph, pw), (dh, dw) = pair(stride, "stride"), pair(padding, "padding"), pair(dilation, "dilation")
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=fill)
    n, c, hp, wp = xp.shape
    Ho, Wo = (hp - dh * (KH - 1) - 1) // sh + 1, (wp - dw * (KW - 1) - 1) // sw + 1
    out = np.empty((n, c, Ho, Wo, KH, KW), dtype=xp.dtype)
    for kh in range(KH):
        for kw in range(KW):
            out[..., kh, kw] = xp[:, :, kh * dh: kh * dh + sh * (Ho - 1) + 1: sh,
                                  kw * dw: kw * dw + sw * (Wo - 1) + 1: sw]
    return out


def conv2d(input, filter, stride=1, padding=0, dilation=1, layout: str = "NCHW") -> np.ndarray:
    """NCHW: ``input[N,C,H,W]``, ``filter[F,C,KH,KW]`` -> ``[N,F,Ho,Wo]``; NHWC: ``input[N,H,W,C]``,
    ``filter[KH,KW,C,F]`` -> ``[N,Ho,Wo,F]`` (zero padding, cross-correlation)."""
    x, f = _f64(input, filter)
    x = _to_nchw(x, layout)
    if layout == "NHWC":
        f = f.transpose(3, 2, 0, 1)
    win = _windows(x, f.shape[2], f.shape[3], stride, padding, dilation, 0.0)
    r = np.einsum("nchwyx,fcyx->nfhw", win, f)
    return _out(_from_nchw(r, layout), input)


def depthwise_conv2d(input, filter, stride=1, padding=0, dilation=1, layout: str = "NCHW") -> np.ndarray:
    """NCHW: ``filter[C,KH,KW]``; NHWC: ``filter[KH,KW,C]``; channel multiplier 1."""
    x, f = _f64(input, filter)
    x = _to_nchw(x, layout)
    if layout == "NHWC":
        f = f.transpose(2, 0, 1)
    win = _windows(x, f.shape[1], f.shape[2], stride, padding, dilation, 0.0)
    r = np.einsum("nchwyx,cyx->nchw", win, f)
    return _out(_from_nchw(r, layout), input)


def max_pool2d(input, kernel, stride=None, padding=0, layout: str = "NCHW") -> np.ndarray:
    """Window max; padding acts as ``-inf``."""
    KH, KW = pair(kernel, "kernel")
    x = _to_nchw(_f64(input)[0], layout)
    win = _windows(x, KH, KW, stride if stride is not None else (KH, KW), padding, 1, -np.inf)
    return _out(_from_nchw(win.max(axis=(4, 5)), layout), input)


def avg_pool2d(input, kernel, stride=None, padding=0, layout: str = "NCHW",
               count_include_pad: bool = True) -> np.ndarray:
    """Window mean; divides by ``KH*KW`` when ``count_include_pad``, else by the in-bounds taps."""
    KH, KW = pair(kernel, "kernel")
    st = stride if stride is not None else (KH, KW)
    x = _to_nchw(_f64(input)[0], layout)
    total = _windows(x, KH, KW, st, padding, 1, 0.0).sum(axis=(4, 5))
    if count_include_pad:
        count = float(KH * KW)
    else:
        count = _windows(np.ones_like(x[:1, :1]), KH, KW, st, padding, 1, 0.0).sum(axis=(4, 5))
    return _out(_from_nchw(total / count, layout), input)


def unary(op: str, X, approximate: str = "none") -> np.ndarray:
    """relu, gelu (erf or tanh form), exp, tanh, sigmoid, neg, abs, sqrt."""
    x = _f64(X)[0]
    if op == "relu":
        r = np.maximum(x, 0.0)
    elif op == "gelu" and approximate == "tanh":
        r = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    elif op == "gelu":
        r = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    elif op == "sigmoid":
        r = 1.0 / (1.0 + np.exp(-x))
    else:
        r = {"exp": np.exp, "tanh": np.tanh, "neg": np.negative, "abs": np.abs, "sqrt": np.sqrt}[op](x)
    return _out(r, X)


def relu(X) -> np.ndarray:
    return unary("relu", X)


def gelu(X, approximate: str = "none") -> np.ndarray:
    return unary("gelu", X, approximate)


_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
           "min": np.minimum}


def binary(op: str, A, B) -> np.ndarray:
    """``A op B`` with numpy broadcasting."""
    a, b = _f64(A, B)
    return _out(_BINARY[op](a, b), A)


def elementwise_chain(ops, X, *B, approximate: str = "none") -> np.ndarray:
    """``ops`` applied one after the other to ``X``; each binary op (add, sub, ...) takes the
    next array of ``B`` as its right operand. Intermediates stay float64 (rounded once at the end)."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    v, operands = _f64(X)[0], iter(_f64(*B))
    for op in ops:
        v = _BINARY[op](v, next(operands)) if op in _BINARY else unary(op, v, approximate)
    return _out(v, X)


def bias_add(X, bias, axis: int = -1) -> np.ndarray:
    x, b = _f64(X, bias)
    shape = [1] * x.ndim
    shape[axis] = -1
    return _out(x + b.reshape(shape), X)


def reduce(kind: str, X, axis=-1, keepdims: bool = False) -> np.ndarray:
    """sum, max or mean over ``axis`` (int, tuple, or None for all)."""
    x = _f64(X)[0]
    ax = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    r = {"sum": np.sum, "max": np.max, "mean": np.mean}[kind](x, axis=ax, keepdims=keepdims)
    return _out(r, X)


def softmax(X, axis: int = -1) -> np.ndarray:
    x = _f64(X)[0]
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return _out(e / e.sum(axis=axis, keepdims=True), X)


def layernorm(X, gamma=None, beta=None, eps: float = 1e-5) -> np.ndarray:
    """Row-wise layer norm of ``X[M, N]`` (biased variance), times ``gamma`` plus ``beta`` if given."""
    x = _f64(X)[0]
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if gamma is not None:
        y = y * _f64(gamma)[0] + _f64(beta)[0]
    return _out(y, X)


def attention(Q, K, V, causal: bool = False, scale: float | None = None) -> np.ndarray:
    """``softmax(Q K^T * scale [+ causal mask]) V`` on ``Q [B, H, S, D]`` and ``K, V [B, Hkv, Skv, D]`` arrays
    (``Hkv`` dividing ``H``: each K/V head serves ``H / Hkv`` consecutive query heads)."""
    q, k, v = _f64(Q, K, V)
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if causal:
        S = s.shape[-1]
        s = np.where(np.tril(np.ones((S, S), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return _out((e / e.sum(axis=-1, keepdims=True)) @ v, Q)


def conv2d_bias_relu(input, filter, bias, stride=1, padding=0, dilation=1) -> np.ndarray:
    """``max(conv2d(input, filter) + bias[f], 0)`` in NCHW (see :func:`conv2d`)."""
    x, f, b = _f64(input, filter, bias)
    y = conv2d(x, f, stride, padding, dilation) + b.reshape(1, -1, 1, 1)  # float64 throughout
    return _out(np.maximum(y, 0.0), input)


def mlp(X, W, bias, activation: str | None = "gelu", approximate: str = "none") -> np.ndarray:
    """``activation(X @ W + bias)``."""
    x, w, b = _f64(X, W, bias)
    y = x @ w + b
    if activation is not None:
        y = unary(activation, y, approximate)  # float64 in, float64 out
    return _out(y, X)
