"""Normalizations: ``softmax`` (3 nests) and ``layernorm`` (3 nests), with f32 temporaries."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core import Value
from ..dialects.builtin import ModuleOp
from ._kernel import DIM_NAMES, NEG_INF, Kernel, check_shape, check_size, normalize_axis


def emit_softmax(k: Kernel, src: Value, dst: Value, rows: Sequence, axis: tuple, index: Callable,
                 row_index: Callable, mx: Value, sm: Value, *, scale: Value | None = None,
                 axis_upper: Callable | None = None) -> None:
    """Emit ``dst = softmax(src * scale)`` along one axis as three nests:

    1. row max: ``for rows { max[r] = -inf; for a: max[r] = maximumf(max[r], x) }``
    2. exp + row sum: ``for rows { sum[r] = 0; for a: sum[r] += exp(x - max[r]) }``
    3. normalize: ``for rows, a: dst[r, a] = exp(x - max[r]) / sum[r]`` (exp recomputed)

    ``rows`` are loop specs of the other dims, ``axis`` is ``(name, size)``;
    ``index(row_ivs, a)`` indexes ``src``/``dst``, ``row_index(row_ivs)`` the f32 row
    temporaries ``mx``/``sm``. ``axis_upper(row_ivs)`` optionally bounds the axis loop
    (causal masking: entries past it are neither read nor written).
    """
    b = k.b

    def x(r, a):
        v = k.load(src, index(r, a))
        return b.mulf(v, scale) if scale is not None else v

    def axis_loop(r):
        return k.loops((axis[0], axis_upper(r) if axis_upper is not None else axis[1]))

    neg_inf, zero = k.const(NEG_INF, mx.type.element_type), k.const(0.0, sm.type.element_type)
    with k.loops(*rows) as r:
        k.store(neg_inf, mx, row_index(r))
        with axis_loop(r) as (a,):
            v = x(r, a)
            k.update(mx, row_index(r), lambda m: b.maximumf(m, v))
    with k.loops(*rows) as r:
        k.store(zero, sm, row_index(r))
        with axis_loop(r) as (a,):
            e = b.exp(b.subf(x(r, a), k.load(mx, row_index(r))))
            k.update(sm, row_index(r), lambda s: b.addf(s, e))
    with k.loops(*rows) as r, axis_loop(r) as (a,):
        e = b.exp(b.subf(x(r, a), k.load(mx, row_index(r))))
        k.store(b.divf(e, k.load(sm, row_index(r))), dst, index(r, a))


def softmax(shape, axis: int = -1, dtype: str = "f32") -> ModuleOp:
    """``@softmax(%X: memref<shape>, %Y: memref<shape>)``: ``Y = exp(X - max) / sum(exp(X - max))``
    along ``axis``.

    Three nests joined by f32 temporaries ``%max`` and ``%sum`` (shape without ``axis``):
    row max, exp + row sum, normalize (see :func:`emit_softmax`); the other dims are the
    outer loops in order, the axis loop is innermost. IVs are named by dim position
    (%i, %j, ...). Computed in f32, rounded once when stored.
    """
    shape = check_shape(shape)
    ax = normalize_axis(axis, len(shape))
    k = Kernel("softmax", dtype, shape)
    rows = [(DIM_NAMES[p], s) for p, s in enumerate(shape) if p != ax]
    row_shape = tuple(s for p, s in enumerate(shape) if p != ax)

    def index(r, a):
        return [*r[:ax], a, *r[ax:]]

    with k.function(X=shape, Y=shape) as (X, Y):
        mx, sm = k.temp("max", row_shape), k.temp("sum", row_shape)
        emit_softmax(k, X, Y, rows, (DIM_NAMES[ax], shape[ax]), index, list, mx, sm)
    return k.module


def layernorm(M, N, eps: float = 1e-5, dtype: str = "f32", affine: bool = True) -> ModuleOp:
    """``@layernorm(%X, %gamma, %beta, %Y)`` (``%gamma``/``%beta`` only when ``affine``):
    layer normalization of each row of ``X[M, N]``.

    ``mean[i] = sum_j X[i, j] / N``; ``var[i] = sum_j (X[i, j] - mean[i])^2 / N`` (biased,
    two-pass); ``Y[i, j] = (X[i, j] - mean[i]) * rsqrt(var[i] + eps) * gamma[j] + beta[j]``
    with ``gamma[N]``, ``beta[N]``. Three nests joined by f32 temporaries ``%mean`` and
    ``%var``: ``for i { mean[i] = 0; for j: mean[i] += x; mean[i] /= N }``, the same for the
    variance, then the normalize nest over ``(%i, %j)``. Computed in f32, rounded once when stored.
    """
    M, N = check_size(M, "M"), check_size(N, "N")
    k = Kernel("layernorm", dtype, (M, N))
    b = k.b
    shapes = dict(X=(M, N), gamma=(N,), beta=(N,), Y=(M, N)) if affine else dict(X=(M, N), Y=(M, N))
    with k.function(**shapes) as args:
        X, Y = args[0], args[-1]
        mean, var = k.temp("mean", (M,)), k.temp("var", (M,))
        n, zero = k.count(N), k.const(0.0)
        for buf in (mean, var):
            with k.loops(("i", M)) as (i,):
                k.store(zero, buf, [i])
                with k.loops(("j", N)) as (j,):
                    x = k.load(X, [i, j])
                    if buf is var:
                        d = b.subf(x, k.load(mean, [i]))
                        x = b.mulf(d, d)
                    k.update(buf, [i], lambda s, x=x: b.addf(s, x))
                k.update(buf, [i], lambda s: b.divf(s, n))
        with k.loops(("i", M), ("j", N)) as (i, j):
            d = b.subf(k.load(X, [i, j]), k.load(mean, [i]))
            y = b.mulf(d, b.rsqrt(b.addf(k.load(var, [i]), k.const(eps))))
            if affine:
                y = b.addf(b.mulf(y, k.load(args[1], [j])), k.load(args[2], [j]))
            k.store(y, Y, [i, j])
    return k.module
