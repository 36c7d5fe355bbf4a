"""Tensor views as index maps: how the PyTorch import reads a tensor without copying it.

A :class:`View` is a buffer, a logical shape and a map from logical indices to the buffer's (an
affine map of the loop indices: a permutation, a broadcast index 0, a slice's ``start + step * i``,
a select's constant, or the row-major delinearization of a reshape, which divides by constants).
:data:`VIEWS` gives the view op of each ATen view overload.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from affine_ir.core import Value
from affine_ir.library import Kernel

__all__ = ["SPLITS", "VIEWS", "View", "expand"]

aten = torch.ops.aten


@dataclass
class View:
    """A tensor as later ops read it: the buffer ``mem``, the logical ``shape``, and ``index``
    mapping logical indices to the buffer's (identity for a buffer of its own)."""

    mem: Value
    shape: tuple[int, ...]
    index: Callable[[Sequence], list]

    @staticmethod
    def of(mem: Value, shape: tuple[int, ...]) -> View:
        return View(mem, shape, list)

    def then(self, shape: tuple[int, ...], fn: Callable[[Sequence], list]) -> View:
        """The view of this one with logical ``shape`` whose index ``ivs`` reads ``self`` at ``fn(ivs)``."""
        inner = self.index
        return View(self.mem, tuple(shape), lambda ivs: inner(fn(list(ivs))))

    def load(self, k: Kernel, ivs: Sequence) -> Value:
        return k.load(self.mem, self.index(ivs))


def _permute(v: View, dims: Sequence[int]) -> View:
    dims = [d % len(v.shape) for d in dims]
    inverse = [dims.index(q) for q in range(len(dims))]
    return v.then([v.shape[d] for d in dims], lambda ivs: [ivs[inverse[q]] for q in range(len(dims))])


def _transpose(v: View, a: int, b: int) -> View:
    dims = list(range(len(v.shape)))
    a, b = a % len(dims), b % len(dims)
    dims[a], dims[b] = dims[b], dims[a]
    return _permute(v, dims)


def _reshape(v: View, shape: Sequence[int]) -> View:
    """Row-major: the logical index's linear position, delinearized into ``v``'s shape."""
    size = math.prod(v.shape)
    shape = list(shape)
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = size // known
    if list(shape) == list(v.shape):
        return v
    src = v.shape

    def fn(ivs):
        linear = 0
        for iv, s in zip(ivs, shape):
            linear = linear * s + iv
        out, rest = [], linear
        for q in range(len(src)):
            inner = math.prod(src[q + 1:])
            out.append((rest // inner) % src[q] if q else rest // inner)
        return out

    return v.then(shape, fn)


def expand(v: View, shape: Sequence[int]) -> View:
    off = len(shape) - len(v.shape)
    shape = [v.shape[q - off] if s == -1 else s for q, s in enumerate(shape)]
    return v.then(shape, lambda ivs: [0 if s == 1 and shape[off + q] != 1 else ivs[off + q]
                                      for q, s in enumerate(v.shape)])


def _unsqueeze(v: View, dim: int) -> View:
    dim = dim % (len(v.shape) + 1)
    shape = list(v.shape[:dim]) + [1] + list(v.shape[dim:])
    return v.then(shape, lambda ivs: ivs[:dim] + ivs[dim + 1:])


def _squeeze(v: View, dims) -> View:
    dims = [dims] if isinstance(dims, int) else list(dims)
    drop = {d % len(v.shape) for d in dims if v.shape[d % len(v.shape)] == 1}
    keep = [q for q in range(len(v.shape)) if q not in drop]

    def fn(ivs):
        it = iter(ivs)
        return [0 if q in drop else next(it) for q in range(len(v.shape))]

    return v.then([v.shape[q] for q in keep], fn)


def _slice(v: View, dim: int = 0, start=None, end=None, step: int = 1) -> View:
    """``v[..., start:end:step, ...]`` along ``dim`` (Python's clamping of ``start``/``end``)."""
    dim = dim % len(v.shape)
    first, stop, step = slice(start, end, step).indices(v.shape[dim])
    shape = list(v.shape)
    shape[dim] = len(range(first, stop, step))
    return v.then(shape, lambda ivs: [*ivs[:dim], ivs[dim] * step + first, *ivs[dim + 1:]])


def _select(v: View, dim: int, index: int) -> View:
    """``v`` at ``index`` along ``dim`` (that dim dropped)."""
    dim = dim % len(v.shape)
    index = index % v.shape[dim]
    return v.then(v.shape[:dim] + v.shape[dim + 1:], lambda ivs: [*ivs[:dim], index, *ivs[dim:]])


def _split(v: View, sizes, dim: int = 0) -> list[View]:
    """``split`` (``sizes`` an int: pieces of that size, the last smaller) and ``split_with_sizes``:
    slices of ``v`` along ``dim``."""
    dim = dim % len(v.shape)
    extent = v.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, extent - start) for start in range(0, extent, sizes)]
    starts = [sum(sizes[:q]) for q in range(len(sizes))]
    return [_slice(v, dim, start, start + size) for start, size in zip(starts, sizes)]


#: The ops giving a list of views (``getitem`` takes one).
SPLITS: dict = {aten.split.Tensor: _split, aten.split_with_sizes.default: _split}

VIEWS: dict = {
    aten.slice.Tensor: _slice,
    aten.select.int: _select,
    aten.t.default: lambda v: _transpose(v, 0, 1) if len(v.shape) == 2 else v,
    aten.transpose.int: _transpose,
    aten.permute.default: _permute,
    aten.view.default: _reshape,
    aten._unsafe_view.default: _reshape,
    aten.reshape.default: _reshape,
    aten.expand.default: expand,
    aten.unsqueeze.default: _unsqueeze,
    aten.squeeze.dim: _squeeze,
    aten.squeeze.dims: _squeeze,
    aten.alias.default: lambda v: v,
    aten.detach.default: lambda v: v,
    aten.clone.default: lambda v, **kw: v,
    aten.contiguous.default: lambda v, **kw: v,
}
