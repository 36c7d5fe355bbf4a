"""Canonical maps and operands of affine ops: composition, constants, symbols, ranges.

:func:`canonical_map` rewrites a map with its operands (an ``affine.apply/min/max``, the
subscript of an access, a loop bound, an ``affine.if`` condition) into an equal one:

1. operands defined by ``affine.apply`` are composed into the map (transitively), index
   ``arith.constant`` operands are folded into it;
2. a ``min`` (``max``) map merges the results of an ``affine.min`` (``affine.max``) operand
   that is one of its results (MLIR's ``merge_affine_min_ops``);
3. every result is simplified with the ranges of the operands (:mod:`analysis.ranges`):
   a ``floordiv``/``mod``/``ceildiv`` whose operand stays within one block folds (also for
   IVs on a stride, ``%i mod 32`` with ``%i = 0 to %N step 32`` is ``0``), a result with one
   possible value becomes that constant;
4. ``min``/``max`` maps drop results that can never be the minimum (maximum), duplicates,
   and (for ``affine.min/max`` ops) sort the rest; conditions drop constraints that always hold and become the empty
   set when one never holds;
5. operands that are valid symbols become symbols, unused operands are dropped and
   duplicates merged (MLIR's ``canonicalizeMapAndOperands``).

Expressions are handled over "value dims" (``d<k>`` is the k-th value of the
:class:`RangeContext`), so maps over different operand lists combine freely.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from affine_ir import AffineExpr, AffineMap, IntegerSet, Value
from affine_ir.affine_expr import constant, dim, sum_exprs, symbol
from affine_ir.core import OpResult
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineMaxOp, AffineMinOp, is_valid_symbol
from affine_ir.types import IndexType
from analysis.ranges import RangeContext

from .canonicalize_fold import constant_value

__all__ = ["MapKind", "canonical_map", "canonical_set", "composes"]

#: How a map's results are combined: "list" (apply, access), "min" (affine.min, upper
#: bounds), "max" (affine.max, lower bounds).
MapKind = str


class _Lookup:
    """A sparse ``replace`` argument: ``d<k>`` -> ``table[k]``."""

    def __init__(self, table: dict[int, AffineExpr]):
        self.table = table

    def __len__(self) -> int:
        return 1 << 62

    def __getitem__(self, k: int) -> AffineExpr:
        return self.table[k]


def _index_const(v: Value) -> int | None:
    return constant_value(v) if isinstance(v.type, IndexType) else None


def _compose(ctx: RangeContext, exprs: list[AffineExpr]) -> list[AffineExpr]:
    """``exprs`` with every affine.apply value composed in and index constants folded."""
    return [ctx.cached(("compose", e), lambda e=e: _compose_all(ctx, [e])[0]) for e in exprs]


def _compose_all(ctx: RangeContext, exprs: list[AffineExpr]) -> list[AffineExpr]:
    for _ in range(64):
        table: dict[int, AffineExpr] = {}
        for e in exprs:
            for k in e.used_dims():
                if k in table:
                    continue
                v = ctx.value(k)
                c = _index_const(v) if isinstance(v, Value) else None
                if c is not None:
                    table[k] = constant(c)
                elif isinstance(v, OpResult) and isinstance(v.op, AffineApplyOp):
                    table[k] = ctx.exprs(v.op.map, v.op.operands)[0]
        if not table:
            return exprs
        exprs = [e.replace(_Lookup(_Fallback(table)), ()) for e in exprs]
    return exprs


class _Fallback(dict):
    """``table[k]`` or ``d<k>`` itself."""

    def __missing__(self, k: int) -> AffineExpr:
        return dim(k)


def _merge_min_max(ctx: RangeContext, exprs: list[AffineExpr], kind: MapKind) -> list[AffineExpr]:
    """Results that are an affine.min (for "min") / affine.max (for "max") value replaced by its results."""
    op_class = AffineMinOp if kind == "min" else AffineMaxOp
    out: list[AffineExpr] = []
    for e in exprs:
        k = e.as_dim()
        v = ctx.value(k) if k is not None else None
        if isinstance(v, OpResult) and type(v.op) is op_class:
            out.extend(_compose(ctx, ctx.exprs(v.op.map, v.op.operands)))
        else:
            out.append(e)
    return out


def _complexity(e: AffineExpr) -> int:
    return sum(1 + 2 * _complexity(t.expr) for t in e.div_terms()) + len(e.used_dims())


def _simplify(ctx: RangeContext, e: AffineExpr) -> AffineExpr:
    """``e`` simplified on the ranges of its values (div/mod folding, strided IVs, constants)."""
    return ctx.cached(("simplify", e), lambda: _simplify_once(ctx, e))


def _simplify_once(ctx: RangeContext, e: AffineExpr) -> AffineExpr:
    lo, hi = ctx.bounds(e)
    if lo is not None and lo == hi:
        return constant(lo)
    if e.is_pure_linear:
        return e
    s = _split_divs(ctx, e.simplify(ctx))
    strided = _simplify_strided(ctx, s)
    if strided is not None and _complexity(strided) < _complexity(s):
        s = strided
    return s


def _simplify_strided(ctx: RangeContext, e: AffineExpr) -> AffineExpr | None:
    """``e`` with each IV ``%i = c to ... step s`` (s > 1) written ``c + s * t``, simplified,
    and ``t`` written back as ``(%i - c) floordiv s``; None when no such IV is in a div term."""
    ivs = []
    for t in e.div_terms():
        for k in t.expr.used_dims():
            v = ctx.value(k)
            loop = _strided_loop(v)
            if loop is not None and k not in (x[0] for x in ivs):
                ivs.append((k, loop))
    if not ivs:
        return None
    forward: dict[int, AffineExpr] = {}
    back: dict[int, AffineExpr] = {}
    for k, loop in ivs:
        c, s = loop.lower_bound_map.single_constant(), loop.step
        lo, hi = ctx.range(ctx.value(k))
        t = ctx.fresh((0, None if hi is None else (hi - c) // s))
        forward[k] = c + s * dim(t)
        back[t] = (dim(k) - c).floordiv(s)
    e2 = _split_divs(ctx, e.replace(_Lookup(_Fallback(forward)), ()).simplify(ctx))
    return e2.replace(_Lookup(_Fallback(back)), ())


def _split_divs(ctx: RangeContext, e: AffineExpr) -> AffineExpr:
    """``e`` with each ``(g * X + R) floordiv (g * h)`` whose ``R`` stays in ``[0, g)`` written
    ``X floordiv h`` and each such ``mod`` written ``g * (X mod h) + R`` (when simpler)."""
    out = e.linear_part()
    for t in e.div_terms():
        out = out + t.coeff * _split_div(ctx, t.kind, _split_divs(ctx, t.expr), t.divisor)
    return out


def _make_div(kind: str, e: AffineExpr, c: int) -> AffineExpr:
    return e.floordiv(c) if kind == "floordiv" else e.ceildiv(c) if kind == "ceildiv" else e.mod(c)


def _split_div(ctx: RangeContext, kind: str, inner: AffineExpr, c: int) -> AffineExpr:
    default = _make_div(kind, inner, c)
    if kind == "ceildiv" or default.is_constant:
        return default
    parts = [(dim(k), inner.coefficient_of_dim(k)) for k in sorted(inner.linear_part().used_dims())]
    parts += [(_make_div(t.kind, t.expr, t.divisor), t.coeff) for t in inner.div_terms()]
    best = default
    for g in sorted({math.gcd(c, k) for _, k in parts}, reverse=True):
        if g <= 1:
            continue
        qc, rc = divmod(inner.constant_term, g)
        x = sum_exprs(a * (k // g) for a, k in parts if k % g == 0) + qc
        r = sum_exprs(a * k for a, k in parts if k % g) + rc
        lo, hi = ctx.bounds(r)
        if lo is None or hi is None or lo < 0 or hi >= g:
            continue
        h = c // g
        cand = x.floordiv(h) if kind == "floordiv" else g * x.mod(h) + r
        if _complexity(cand) < _complexity(best):
            best = cand
    return best


def _strided_loop(v) -> AffineForOp | None:
    if not isinstance(v, Value) or isinstance(v, OpResult) or v.index != 0:
        return None
    loop = v.block.parent_op
    if isinstance(loop, AffineForOp) and loop.step > 1 and loop.lower_bound_map.is_single_constant:
        return loop
    return None


def _prune(ctx: RangeContext, exprs: list[AffineExpr], kind: MapKind) -> list[AffineExpr]:
    """Drop results of a min (max) that never are smaller (larger) than another kept one, and
    duplicates (the order of the others is kept)."""
    unique: list[AffineExpr] = []
    for e in exprs:
        if e not in unique:
            unique.append(e)
    dropped: set[int] = set()
    for j, ej in enumerate(unique):
        for k, ek in enumerate(unique):
            if k == j or k in dropped:
                continue
            if kind == "min":
                u = ctx.upper(ek - ej)
                if u is not None and u <= 0:
                    dropped.add(j)
                    break
            else:
                lo = ctx.lower(ek - ej)
                if lo is not None and lo >= 0:
                    dropped.add(j)
                    break
    kept = [e for j, e in enumerate(unique) if j not in dropped]
    consts = [e.constant_value for e in kept if e.is_constant]
    if len(consts) > 1:  # keep only the extreme constant
        best = min(consts) if kind == "min" else max(consts)
        kept = [e for e in kept if not e.is_constant or e.constant_value == best]
        kept = [e for i, e in enumerate(kept) if e not in kept[:i]]
    return kept


def _to_map(ctx: RangeContext, exprs: Sequence[AffineExpr], order: Sequence[Value],
            keep_dims: bool) -> tuple[AffineMap, list[Value]]:
    """Value-dim ``exprs`` as a map over operands (dims first, then symbols), operands in ``order``
    then first use; valid symbols are symbols unless ``keep_dims``."""
    used: list[int] = []
    seen: set[int] = set()
    for e in exprs:
        for k in sorted(e.used_dims()):
            if k not in seen:
                seen.add(k)
                used.append(k)
    rank = {ctx.index(v): i for i, v in enumerate(order)}
    first = {k: i for i, k in enumerate(used)}
    used.sort(key=lambda k: (rank.get(k, len(rank)), first[k]))
    dims = [k for k in used if keep_dims or not is_valid_symbol(ctx.value(k))]
    syms = [k for k in used if k not in dims]
    table = {k: dim(i) for i, k in enumerate(dims)}
    table.update({k: symbol(j) for j, k in enumerate(syms)})
    repl = _Lookup(table)
    m = AffineMap(len(dims), len(syms), tuple(e.replace(repl, ()) for e in exprs))
    return m, [ctx.value(k) for k in (*dims, *syms)]


def canonical_map(ctx: RangeContext, m: AffineMap, operands: Sequence[Value], kind: MapKind = "list",
                  use_ranges: bool = True, sort: bool = True) -> tuple[AffineMap, list[Value]]:
    """The canonical form of ``m`` over ``operands`` (see the module doc); equal to it wherever
    the op using it runs. ``kind`` is "list", "min" or "max".

    Example (``%a = affine.apply (d0) -> (d0 + 1)(%i)`` with ``%i = 0 to 32``)::

        affine.min (d0, d1)[s0] -> (d0 floordiv 32 + 64, d1 + 1, s0)(%i, %a)[%c3]
        ->  affine.min () -> (3)()          (later folded to a constant)
    """
    exprs = _compose(ctx, ctx.exprs(m, operands))
    if kind in ("min", "max"):
        exprs = _merge_min_max(ctx, exprs, kind)
    if use_ranges:
        exprs = [_simplify(ctx, e) for e in exprs]
    if kind in ("min", "max"):
        exprs = _prune(ctx, exprs, kind) if use_ranges else _dedupe(exprs)
        if sort:
            exprs = sorted(exprs, key=lambda e: e.sort_key)
    return _to_map(ctx, exprs, operands, keep_dims=False)


def _dedupe(exprs: list[AffineExpr]) -> list[AffineExpr]:
    return [e for i, e in enumerate(exprs) if e not in exprs[:i]]


def canonical_set(ctx: RangeContext, s: IntegerSet, operands: Sequence[Value]) -> tuple[IntegerSet, list[Value]]:
    """The canonical form of an ``affine.if`` condition: operands composed and folded,
    constraints that always hold dropped (the universe when none is left), the empty set
    ``(1 == 0)`` when one never holds; same points wherever the ``affine.if`` runs."""
    m = AffineMap(s.num_dims, s.num_symbols, s.constraints)
    exprs = [_simplify(ctx, e) for e in _compose(ctx, ctx.exprs(m, operands))]
    kept: list[AffineExpr] = []
    flags: list[bool] = []
    for e, eq in zip(exprs, s.eq_flags):
        lo, hi = ctx.bounds(e)
        if (hi is not None and hi < 0) or (eq and lo is not None and lo > 0):
            return IntegerSet.empty(), []
        if lo is not None and lo >= 0 and (not eq or hi == 0):
            continue
        if (e, eq) not in zip(kept, flags):
            kept.append(e)
            flags.append(eq)
    if kept:  # gcd-normalize (over value dims, so that operands dropped here disappear)
        norm = IntegerSet(1 + max(max(e.max_dim() for e in kept), 0), 0, tuple(kept), tuple(flags)).simplify()
        if norm.is_empty_trivially:
            return IntegerSet.empty(), []
        kept, flags = list(norm.constraints), list(norm.eq_flags)
    cm, ops = _to_map(ctx, kept, operands, keep_dims=False)
    return IntegerSet(cm.num_dims, cm.num_symbols, cm.results, tuple(flags)), ops


def composes(operands: Sequence[Value]) -> bool:
    """Whether an ``affine.apply`` result is among ``operands`` (it will be composed in)."""
    return any(isinstance(v.owner, AffineApplyOp) for v in operands)
