"""Element-wise ops: ``unary`` (relu, gelu, exp, tanh, sigmoid, neg, abs, sqrt), ``binary``
with numpy broadcasting (add, sub, mul, div, max, min), ``bias_add``, ``relu``, ``gelu``, and
``elementwise_chain`` (several of them, one nest each, joined by temporaries).

Every element is computed in f32 (f64 for f64) and rounded once when stored, for f16/bf16
too. The scalar emitters :func:`emit_unary` / :func:`emit_binary` are what composites
(``mlp``) use as epilogues.
"""

from __future__ import annotations

import math

from ..core import Value
from ..dialects.builtin import ModuleOp
from ._kernel import DIM_NAMES, Kernel, check_shape, normalize_axis

UNARY_OPS = ("relu", "gelu", "exp", "tanh", "sigmoid", "neg", "abs", "sqrt")
BINARY_OPS = ("add", "sub", "mul", "div", "max", "min")
GELU_APPROXIMATIONS = ("none", "tanh")

_BINARY_ARITH = {"add": "addf", "sub": "subf", "mul": "mulf", "div": "divf", "max": "maximumf", "min": "minimumf"}


def emit_unary(k: Kernel, op: str, x: Value, approximate: str = "none") -> Value:
    """The compute-type value ``op(x)``.

    relu: ``max(x, 0)``; gelu (approximate="none"): ``0.5 x (1 + erf(x / sqrt(2)))``;
    gelu (approximate="tanh"): ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``;
    sigmoid: ``1 / (1 + exp(-x))``; exp, tanh, neg, abs, sqrt as named.
    """
    b = k.b
    if op == "relu":
        return b.maximumf(x, k.const(0.0))
    if op == "gelu":
        if approximate == "none":
            inner = b.erf(b.mulf(x, k.const(1 / math.sqrt(2.0))))
        elif approximate == "tanh":
            cube = b.mulf(b.mulf(x, x), x)
            poly = b.addf(x, b.mulf(k.const(0.044715), cube))
            inner = b.tanh(b.mulf(k.const(math.sqrt(2.0 / math.pi)), poly))
        else:
            raise ValueError(f"gelu approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
        return b.mulf(b.mulf(k.const(0.5), x), b.addf(k.const(1.0), inner))
    if op == "exp":
        return b.exp(x)
    if op == "tanh":
        return b.tanh(x)
    if op == "sigmoid":
        return b.divf(k.const(1.0), b.addf(k.const(1.0), b.exp(b.negf(x))))
    if op == "neg":
        return b.negf(x)
    if op == "abs":
        return b.absf(x)
    if op == "sqrt":
        return b.sqrt(x)
    raise ValueError(f"unknown unary op {op!r}; expected one of {UNARY_OPS}")


def emit_binary(k: Kernel, op: str, a: Value, c: Value) -> Value:
    """The compute-type value ``a op c`` (max/min are ``arith.maximumf``/``minimumf``: NaN-propagating)."""
    if op not in _BINARY_ARITH:
        raise ValueError(f"unknown binary op {op!r}; expected one of {BINARY_OPS}")
    return k.b.op(f"arith.{_BINARY_ARITH[op]}", a, c)


def unary(op: str, shape, dtype: str = "f32", *, approximate: str = "none") -> ModuleOp:
    """``@<op>(%X: memref<shape>, %Y: memref<shape>)``: ``Y = op(X)`` element-wise.

    ``op`` is one of relu, gelu, exp, tanh, sigmoid, neg, abs, sqrt (formulas in
    :func:`emit_unary`; ``approximate`` picks gelu's erf ("none") or tanh form). One
    perfect nest over ``shape`` (IVs %i, %j, %k, ...), computed in f32 and rounded once
    when stored for f16/bf16.
    """
    if op not in UNARY_OPS:
        raise ValueError(f"unknown unary op {op!r}; expected one of {UNARY_OPS}")
    if op == "gelu" and approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"gelu approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
    shape = check_shape(shape)
    k = Kernel(op, dtype, shape)
    with k.function(X=shape, Y=shape) as (X, Y):
        with k.loops(*zip(DIM_NAMES, shape)) as ivs:
            k.store(emit_unary(k, op, k.load(X, ivs), approximate), Y, ivs)
    return k.module


def relu(shape, dtype: str = "f32") -> ModuleOp:
    """``@relu(%X, %Y)``: ``Y = max(X, 0)`` (see :func:`unary`)."""
    return unary("relu", shape, dtype)


def gelu(shape, dtype: str = "f32", approximate: str = "none") -> ModuleOp:
    """``@gelu(%X, %Y)``: ``Y = gelu(X)``, erf form (``approximate="none"``) or tanh form (see :func:`unary`)."""
    return unary("gelu", shape, dtype, approximate=approximate)


def broadcast_shape(shape_a, shape_b) -> tuple:
    """numpy's broadcast of two shapes; a symbolic dim matches itself or 1, nothing else."""
    ra, rb = len(shape_a), len(shape_b)
    n = max(ra, rb)
    a = (1,) * (n - ra) + tuple(shape_a)
    c = (1,) * (n - rb) + tuple(shape_b)
    out = []
    for p, (x, y) in enumerate(zip(a, c)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"shapes {tuple(shape_a)} and {tuple(shape_b)} do not broadcast (dim {p}: {x} vs {y})")
    return tuple(out)


def _broadcast_index(shape, out_shape, ivs) -> list:
    """Indices into an operand of ``shape`` from the IVs over ``out_shape`` (0 on broadcast dims)."""
    off = len(out_shape) - len(shape)
    return [0 if s == 1 and out_shape[off + q] != 1 else ivs[off + q] for q, s in enumerate(shape)]


def binary(op: str, shape_a, shape_b, dtype: str = "f32") -> ModuleOp:
    """``@<op>(%A: memref<shape_a>, %B: memref<shape_b>, %C: memref<out>)``: ``C = A op B``.

    ``op`` is add, sub, mul, div, max or min. Shapes broadcast as in numpy (right-aligned;
    a dim of 1 stretches, and is indexed with 0); ``out`` is the broadcast shape. A
    symbolic dim broadcasts only against itself or 1. One nest over ``out``, computed in
    f32 and rounded once when stored.
    """
    if op not in _BINARY_ARITH:
        raise ValueError(f"unknown binary op {op!r}; expected one of {BINARY_OPS}")
    shape_a, shape_b = check_shape(shape_a, "shape_a"), check_shape(shape_b, "shape_b")
    out = broadcast_shape(shape_a, shape_b)
    k = Kernel(op, dtype, shape_a + shape_b)
    with k.function(A=shape_a, B=shape_b, C=out) as (A, B, C):
        with k.loops(*zip(DIM_NAMES, out)) as ivs:
            a = k.load(A, _broadcast_index(shape_a, out, ivs))
            c = k.load(B, _broadcast_index(shape_b, out, ivs))
            k.store(emit_binary(k, op, a, c), C, ivs)
    return k.module


def bias_add(shape, dtype: str = "f32", axis: int = -1) -> ModuleOp:
    """``@bias_add(%X: memref<shape>, %bias: memref<shape[axis]>, %Y: memref<shape>)``:
    ``Y[..., c, ...] = X[..., c, ...] + bias[c]`` with ``c`` the index along ``axis``."""
    shape = check_shape(shape)
    axis = normalize_axis(axis, len(shape))
    k = Kernel("bias_add", dtype, shape)
    with k.function(X=shape, bias=(shape[axis],), Y=shape) as (X, bias, Y):
        with k.loops(*zip(DIM_NAMES, shape)) as ivs:
            k.store(k.b.addf(k.load(X, ivs), k.load(bias, [ivs[axis]])), Y, ivs)
    return k.module



def elementwise_chain(ops, shape, dtype: str = "f32", *, approximate: str = "none") -> ModuleOp:
    """``@elementwise_chain(%X, %B0, %B1, ..., %Y)``: the element-wise ops ``ops`` applied one
    after the other, ``Y = op_n(... op_2(op_1(X)))``, in the unfused form a framework emits.

    Each item of ``ops`` is a unary op name (``UNARY_OPS``: ``v = op(v)``; ``approximate``
    picks gelu's form) or a binary op name (``BINARY_OPS``: ``v = v op B_j`` with ``B_j`` the
    next fresh input ``%B0, %B1, ...`` of ``shape``, in order); a bare str is a chain of one.
    Every op is its own perfect nest over ``shape`` (IVs %i, %j, ...): op ``t`` reads the
    previous result and writes the temporary ``%t<t>``, the last writes ``%Y``; so ``n`` ops
    give ``n`` nests and ``n - 1`` temporaries, ``memref.alloc``'d (f32; f64 for f64) at the
    top and deallocated at the end. Loads of ``%X``/``%B*`` are extended to f32 and only the
    store into ``%Y`` rounds, so f16/bf16 round once per element as :func:`unary` does.
    """
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    if not ops:
        raise ValueError("elementwise_chain needs at least one op")
    for p, op in enumerate(ops):
        if not isinstance(op, str) or (op not in UNARY_OPS and op not in _BINARY_ARITH):
            raise ValueError(f"elementwise_chain: op {p} ({op!r}) is not an element-wise op; expected one of "
                             f"{UNARY_OPS} (unary) or {BINARY_OPS} (binary)")
    if "gelu" in ops and approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"gelu approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
    shape = check_shape(shape)
    n_binary = sum(op in _BINARY_ARITH for op in ops)
    k = Kernel("elementwise_chain", dtype, shape)
    args = {"X": shape, **{f"B{q}": shape for q in range(n_binary)}, "Y": shape}
    with k.function(**args) as (X, *Bs, Y):
        temps = [k.temp(f"t{t}", shape) for t in range(len(ops) - 1)]
        src, operands = X, iter(Bs)
        for op, dst in zip(ops, [*temps, Y]):
            with k.loops(*zip(DIM_NAMES, shape)) as ivs:
                v = k.load(src, ivs)
                if op in _BINARY_ARITH:
                    v = emit_binary(k, op, v, k.load(next(operands), ivs))
                else:
                    v = emit_unary(k, op, v, approximate)
                k.store(v, dst, ivs)
            src = dst
    return k.module
