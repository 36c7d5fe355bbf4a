"""New loop bounds for a permuted non-rectangular band (Fourier-Motzkin on the bound constraints).

The band's iteration domain is the set of integer points satisfying every loop's bound
constraints (``i_k >= lb``, ``i_k < ub`` for each result of the max/min maps) and each
loop's stride (``i_k = lb + step * t``). For the permuted order the constraints are
distributed innermost first: each loop gets the constraints whose innermost loop (in the
new order) it is, and the loop is then eliminated (Fourier-Motzkin, rationally) so that the
loops outside it get the constraints it implies on them. Every original constraint is
applied at some level, and the derived ones are implied by the original ones, so the
permuted loops visit exactly the original points (an outer point that the rational
projection adds only gives an empty inner loop). A coefficient ``a != 1`` gives a
``ceildiv``/``floordiv`` bound.

Refused (a reason string): a band IV inside a ``floordiv``/``mod`` of a bound that would
have to be rewritten, and a loop with ``step > 1`` whose stride anchor (its lower bound)
uses a loop moved inside it or is a ``max`` of several expressions.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import AffineExpr, AffineMap, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.affine_symbols import is_valid_symbol

from ..loop_utils import loop_name

__all__ = ["BoundsError", "permuted_bounds"]

Bounds = tuple[AffineMap, tuple[Value, ...], AffineMap, tuple[Value, ...]]


class BoundsError(Exception):
    """The permuted bounds cannot be written (the reason is the message)."""


def permuted_bounds(band: Sequence[AffineForOp], permutation: Sequence[int]) -> dict[int, Bounds]:
    """The new ``(lower map, operands, upper map, operands)`` of each loop of ``band`` (by its
    original position) whose bounds must change for the permuted order; empty when every
    loop keeps its bounds (no loop's bounds use a loop moved inside it). Raises
    :class:`BoundsError` when they cannot be written (see the module docstring)."""
    n = len(band)
    ivs = [x.induction_var for x in band]
    position = {v: k for k, v in enumerate(ivs)}
    if not any(permutation[position[v]] > permutation[k] for k, x in enumerate(band)
               for v in (*x.lower_bound_operands, *x.upper_bound_operands) if v in position):
        return {}
    space = _Space(ivs)
    lowers = [[space.expr(e, x.lower_bound_map, x.lower_bound_operands) for e in x.lower_bound_map.results]
              for x in band]
    uppers = [[space.expr(e, x.upper_bound_map, x.upper_bound_operands) for e in x.upper_bound_map.results]
              for x in band]
    constraints = [d - lb for k in range(n) for lb, d in ((e, AffineExpr.dim(k)) for e in lowers[k])]
    constraints += [ub - AffineExpr.dim(k) - 1 for k in range(n) for ub in uppers[k]]
    for c in constraints:
        inner = c - c.linear_part()
        if any(k < n for k in inner.used_dims()):
            raise BoundsError(f"a bound uses a loop of the band inside floordiv/mod ({space.text(c)} >= 0)")
    order = [0] * n
    for k, p in enumerate(permutation):
        order[p] = k
    levels = _eliminate(constraints, order)
    out: dict[int, Bounds] = {}
    for k in range(n):
        lo, hi = _solve(levels[k], k)
        if not lo or not hi:
            raise BoundsError(f"{loop_name(band[k])} would have no {'lower' if not lo else 'upper'} bound")
        if set(lo) == set(lowers[k]) and set(hi) == set(uppers[k]):
            continue
        step = band[k].step
        if step > 1:
            lo = _anchored(band[k], k, lowers[k], lo, permutation, position, space)
        out[k] = (*space.map(lo), *space.map(hi))
    return out


def _eliminate(constraints: list[AffineExpr], order: list[int]) -> dict[int, list[AffineExpr]]:
    """Per loop (original position), the constraints ``c >= 0`` applied at its level: those
    left when every loop inside it (``order``: original positions, outermost first) is
    eliminated, that involve it."""
    current = _dedupe(constraints)
    levels: dict[int, list[AffineExpr]] = {}
    for k in reversed(order):
        mine = [c for c in current if c.coefficient_of_dim(k)]
        rest = [c for c in current if not c.coefficient_of_dim(k)]
        levels[k] = mine
        lo = [c for c in mine if c.coefficient_of_dim(k) > 0]
        hi = [c for c in mine if c.coefficient_of_dim(k) < 0]
        derived = [c2 * c1.coefficient_of_dim(k) + c1 * -c2.coefficient_of_dim(k) for c1 in lo for c2 in hi]
        current = _dedupe(rest + [c for c in derived if not c.is_constant])
    return levels


def _solve(constraints: list[AffineExpr], k: int) -> tuple[list[AffineExpr], list[AffineExpr]]:
    """Lower bounds (max) and exclusive upper bounds (min) of ``d<k>`` from ``c >= 0`` constraints."""
    lo: list[AffineExpr] = []
    hi: list[AffineExpr] = []
    for c in constraints:
        a = c.coefficient_of_dim(k)
        rest = c - AffineExpr.dim(k) * a
        if a > 0:
            lo.append((-rest).ceildiv(a) if a != 1 else -rest)
        else:
            hi.append(rest.floordiv(-a) + 1 if a != -1 else rest + 1)
    return _dedupe(lo), _dedupe(hi)


def _anchored(loop: AffineForOp, k: int, old: list[AffineExpr], new: list[AffineExpr], permutation, position,
              space: _Space) -> list[AffineExpr]:
    """Lower bounds of a loop with ``step > 1`` that start on its original lattice ``old + step * t``."""
    if len(old) != 1:
        raise BoundsError(f"{loop_name(loop)} has step {loop.step} and a max lower bound")
    anchor = old[0]
    if any(d < len(position) and permutation[d] > permutation[k] for d in anchor.used_dims()):
        raise BoundsError(f"{loop_name(loop)} has step {loop.step} and its lower bound uses a loop moved inside it")
    s = loop.step
    return _dedupe([e if e == anchor else anchor + ((e - anchor).ceildiv(s)) * s for e in new])


def _dedupe(exprs: list[AffineExpr]) -> list[AffineExpr]:
    out: list[AffineExpr] = []
    for e in exprs:
        if e not in out:
            out.append(e)
    return out


class _Space:
    """Bound expressions over one list of values: the band IVs (dims ``0..n-1``), then every
    other value a bound uses (more dims)."""

    def __init__(self, ivs: list[Value]):
        self.values: list[Value] = list(ivs)

    def index(self, v: Value) -> int:
        for k, x in enumerate(self.values):
            if x is v:
                return k
        self.values.append(v)
        return len(self.values) - 1

    def expr(self, e: AffineExpr, m: AffineMap, operands: Sequence[Value]) -> AffineExpr:
        repl = [AffineExpr.dim(self.index(v)) for v in operands]
        return e.replace(repl[: m.num_dims], repl[m.num_dims :])

    def text(self, e: AffineExpr) -> str:
        return e.to_str([f"%{v.name_hint or '?'}" for v in self.values], [])

    def map(self, exprs: list[AffineExpr]) -> tuple[AffineMap, tuple[Value, ...]]:
        """A bound map of the used values: those that are valid symbols as symbols, the others as dims."""
        used = sorted({d for e in exprs for d in e.used_dims()})
        dims = [d for d in used if not is_valid_symbol(self.values[d])]
        syms = [d for d in used if is_valid_symbol(self.values[d])]
        repl: list[AffineExpr | int] = [0] * len(self.values)
        for j, d in enumerate(dims):
            repl[d] = AffineExpr.dim(j)
        for j, d in enumerate(syms):
            repl[d] = AffineExpr.symbol(j)
        results = tuple(e.replace(repl, []) for e in exprs)
        return AffineMap(len(dims), len(syms), results), tuple(self.values[d] for d in dims + syms)
