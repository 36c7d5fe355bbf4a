"""Reductions: ``reduce(kind, shape, axis)`` for sum, max and mean."""

from __future__ import annotations

from ..dialects.builtin import ModuleOp
from ._kernel import DIM_NAMES, NEG_INF, Kernel, check_shape, normalize_axis

REDUCE_KINDS = ("sum", "max", "mean")


def reduce_shape(shape, axes, keepdims: bool) -> tuple:
    """The result shape: ``shape`` without ``axes`` (or with 1 there when ``keepdims``)."""
    return tuple(1 if p in axes else s for p, s in enumerate(shape) if keepdims or p not in axes)


def normalize_axes(axis, rank: int) -> tuple[int, ...]:
    """``axis`` (int, sequence of ints, or None for all) as sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = sorted({normalize_axis(a, rank) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"repeated axis in {axis!r}")
    return tuple(out)


def reduce(kind: str, shape, axis=-1, dtype: str = "f32", keepdims: bool = False) -> ModuleOp:
    """``@reduce_<kind>(%X: memref<shape>, %Y: memref<out>)``: ``Y = kind(X, axis)``.

    ``kind`` is sum, max or mean; ``axis`` an int, a sequence of ints or None (all axes);
    ``out`` drops the reduced dims (keeps them as 1 with ``keepdims``; reducing every axis
    without ``keepdims`` gives a rank-0 memref). Nests: init of the accumulator (0, or
    ``-inf`` for max) over ``out``; the accumulation as one perfect nest over ``shape`` in
    its natural order (IVs %i, %j, %k, ...), ``acc[out index] op= X[...]``; then, for mean
    (divide by the number of reduced elements) and for f16/bf16 sums (round the f32 ``%acc``
    into ``Y``), a last nest over ``out``. max reduces into ``Y`` directly (exact).
    """
    if kind not in REDUCE_KINDS:
        raise ValueError(f"reduce kind must be one of {REDUCE_KINDS}, got {kind!r}")
    shape = check_shape(shape)
    axes = normalize_axes(axis, len(shape))
    out_shape = reduce_shape(shape, axes, keepdims)
    k = Kernel(f"reduce_{kind}", dtype, shape)
    b = k.b
    kept = [p for p in range(len(shape)) if p not in axes]
    out_dims = [p for p in range(len(shape)) if keepdims or p not in axes]
    out_loops = [(DIM_NAMES[p], shape[p]) for p in kept]

    def out_index(kept_ivs) -> list:
        """Index into the output from the IVs of the kept dims (0 on keepdims dims)."""
        by_dim = dict(zip(kept, kept_ivs))
        return [by_dim.get(p, 0) for p in out_dims]

    with k.function(X=shape, Y=out_shape) as (X, Y):
        acc = Y if kind == "max" else k.accumulator(Y, out_shape)
        k.fill(acc, out_loops, out_index, NEG_INF if kind == "max" else 0.0)
        with k.loops(*zip(DIM_NAMES, shape)) as ivs:
            x = k.load(X, ivs)
            idx = out_index([ivs[p] for p in kept])
            k.update(acc, idx, lambda a: b.maximumf(a, x) if kind == "max" else b.addf(a, x))
        fn = None
        if kind == "mean":
            n = k.count(*[shape[p] for p in axes])
            fn = lambda v: b.divf(v, n)  # noqa: E731
        k.copy_out(acc, Y, out_loops, out_index, fn)
    return k.module

