"""Loop bounds that scan the image of a band's iteration domain under a unimodular transformation.

``scan_bounds(domain, matrix, rows)`` maps the band's domain (an isl set over the band's IVs,
with the Scop's parameters) to the new IVs ``y = matrix . x`` and writes, for each new loop
``k`` (outermost first), bounds as ``max`` of lower and ``min`` of upper affine expressions over
the outer new IVs and the parameters. The domain's constraints, as the loop bounds write them
(:func:`band_rows`) and rewritten over ``y``, are distributed innermost first (Fourier-Motzkin):
loop ``k`` gets the constraints whose innermost IV is ``y_k``, then ``y_k`` is eliminated, so
that the loops outside it get the (rationally) implied constraints on them. Every constraint
of the domain is applied at some level and the derived ones are implied by them, so the nest
visits exactly the image's integer points (an outer point the rational projection adds only
gives an empty inner loop); isl checks it (the set the bounds describe equals the image). A
coefficient ``a != 1`` of ``y_k`` gives a ``ceildiv``/``floordiv``; a constraint implied by the
others at its level and those outside it is dropped (isl).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import gcd

import islpy as isl

from affine_ir import AffineExpr
from affine_ir.dialects.affine import AffineForOp

from .dependences import value_name
from .isl_bridge import Scop, UnsupportedError
from .isl_results import val_to_int

__all__ = ["LevelBounds", "ScanBounds", "band_rows", "inverse_matrix", "scan_bounds", "transform_map"]

_DT = isl.dim_type
# A constraint sum(a_k * y_k) + sum(b_j * p_j) + c >= 0 as (a..., b..., c).
Row = tuple[int, ...]


@dataclass(frozen=True)
class LevelBounds:
    """The bounds of one new loop: ``max(lower)`` to ``min(upper)`` (exclusive), expressions over
    dims ``d0..d<k-1>`` (the outer new IVs) and symbols ``s<j>`` (parameter ``j`` of the image)."""

    lower: tuple[AffineExpr, ...]
    upper: tuple[AffineExpr, ...]


@dataclass(frozen=True)
class ScanBounds:
    """What :func:`scan_bounds` computed: the bounds per new loop, the parameter names their
    symbols stand for (in order) and the image (an isl set, for checks)."""

    levels: tuple[LevelBounds, ...]
    params: tuple[str, ...]
    image: isl.Set


def transform_map(space: isl.Space, matrix: Sequence[Sequence[int]]) -> isl.Map:
    """The isl map ``x -> matrix . x`` on unnamed tuples, with the parameters of ``space``."""
    n = len(matrix)
    xs = ", ".join(f"x{k}" for k in range(n))
    ys = ", ".join(f"y{k}" for k in range(n))
    rows = " and ".join(f"y{k} = " + " + ".join(f"{c} * x{j}" for j, c in enumerate(row)).replace("+ -", "- ")
                        for k, row in enumerate(matrix))
    m = isl.Map(f"{{ [{xs}] -> [{ys}] : {rows} }}")
    return m.align_params(space)


def band_rows(scop: Scop, band: Sequence[AffineForOp], space: isl.Space) -> list[Row]:
    """The bound constraints of ``band``'s loops (``x_k >= lb`` for each lower bound, ``x_k < ub``
    for each upper bound) as rows over the band's IVs and the parameters of ``space``, one per
    bound expression, as written (isl simplifies a whole domain: ``0 <= i < min(N + 1, 1)``
    becomes ``i = 0 and N >= 0``, whose constraint on ``N`` alone no loop bound can carry).
    Raises UnsupportedError for a bound with floordiv/mod."""
    n = len(band)
    ivs = [lp.induction_var for lp in band]
    names = [name for name, _ in scop.params.values()]
    prefix = f"[{', '.join(names)}] -> " if names else ""
    dims = ", ".join(f"i{k}" for k in range(n))
    rows: list[Row] = []
    for k, lp in enumerate(band):
        lower = scop.map_exprs(lp.lower_bound_map, lp.lower_bound_operands, ivs[:k])
        upper = scop.map_exprs(lp.upper_bound_map, lp.upper_bound_operands, ivs[:k])
        for text in [f"i{k} >= {e}" for e in lower] + [f"i{k} < {e}" for e in upper]:
            (piece,) = isl.Set(f"{prefix}{{ [{dims}] : {text} }}").align_params(space).get_basic_sets()
            if piece.dim(_DT.div):
                raise UnsupportedError(f"a bound of {value_name(lp.induction_var)} has floordiv/mod")
            rows += _rows(piece, n)
    return _dedupe(rows)


def scan_bounds(domain: isl.Set, matrix: Sequence[Sequence[int]], rows: list[Row]) -> ScanBounds:
    """Bounds of the new loops ``y = matrix . x`` scanning exactly the image of ``domain`` (see
    the module docstring), from the constraints ``rows`` of the domain (:func:`band_rows`, over
    ``x`` and the parameters of ``domain``); ``matrix`` must be unimodular, so that every point
    of ``domain`` is visited exactly once. Raises UnsupportedError when a loop would have no
    lower or upper bound, or when the bounds do not describe the image exactly."""
    n = len(matrix)
    space = domain.get_space()
    image = domain.reset_tuple_id().apply(transform_map(space, matrix)).coalesce()
    if image.is_empty():
        raise UnsupportedError("the band runs no iteration")
    inverse = inverse_matrix(matrix)
    moved = [_normalized(tuple(sum(r[j] * inverse[j][k] for j in range(n)) for k in range(n)) + r[n:], n)
             for r in rows]
    levels = _eliminate(_dedupe(moved), n)
    image_space = image.get_space()
    kept = _prune(image_space, levels)
    scanned = _basic_set(image_space, [r for lv in kept for r in lv])
    if not isl.Set.from_basic_set(scanned).is_equal(image):
        raise UnsupportedError("the loop bounds do not describe the image of the domain exactly")
    nparam = image_space.dim(_DT.param)
    params = tuple(image_space.get_dim_name(_DT.param, j) for j in range(nparam))
    out = []
    for k, lv in enumerate(kept):
        lower, upper = _solve(lv, k, n)
        if not lower or not upper:
            raise UnsupportedError(f"new loop {k} would have no {'lower' if not lower else 'upper'} bound")
        out.append(LevelBounds(tuple(lower), tuple(upper)))
    return ScanBounds(tuple(out), params, image)


def inverse_matrix(matrix: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """The inverse of a unimodular integer matrix (Gauss-Jordan over the rationals)."""
    n = len(matrix)
    a = [[Fraction(x) for x in row] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(matrix)]
    for col in range(n):
        piv = next(r for r in range(col, n) if a[r][col] != 0)
        a[col], a[piv] = a[piv], a[col]
        p = a[col][col]
        a[col] = [x / p for x in a[col]]
        for r in range(n):
            if r != col and a[r][col] != 0:
                f = a[r][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    if any(x.denominator != 1 for row in a for x in row[n:]):
        raise ValueError("the matrix is not unimodular")
    return tuple(tuple(int(x) for x in row[n:]) for row in a)


def _rows(piece: isl.BasicSet, n: int) -> list[Row]:
    """The constraints of ``piece`` as rows (an equality as two inequalities)."""
    nparam = piece.dim(_DT.param)
    out: list[Row] = []
    for c in piece.get_constraints():
        row = tuple([val_to_int(c.get_coefficient_val(_DT.set, k)) for k in range(n)] +
                    [val_to_int(c.get_coefficient_val(_DT.param, j)) for j in range(nparam)] +
                    [val_to_int(c.get_constant_val())])
        out.append(_normalized(row, n))
        if c.is_equality():
            out.append(_normalized(tuple(-x for x in row), n))
    return _dedupe(out)


def _normalized(row: Row, n: int) -> Row:
    """``row`` divided by the gcd of its non-constant coefficients (the constant rounded down:
    the same integer points)."""
    g = 0
    for x in row[:-1]:
        g = gcd(g, x)
    if g <= 1:
        return row
    return tuple(x // g for x in row[:-1]) + (row[-1] // g,)


def _eliminate(rows: list[Row], n: int) -> list[list[Row]]:
    """Per new loop ``k``, the constraints whose innermost IV is ``y_k`` once the loops inside it
    are eliminated (Fourier-Motzkin, innermost first)."""
    levels: list[list[Row]] = [[] for _ in range(n)]
    current = rows
    for k in reversed(range(n)):
        mine = [r for r in current if r[k]]
        rest = [r for r in current if not r[k]]
        levels[k] = mine
        lo = [r for r in mine if r[k] > 0]
        hi = [r for r in mine if r[k] < 0]
        derived = [_normalized(tuple(a * -h[k] + b * lw[k] for a, b in zip(lw, h)), n) for lw in lo for h in hi]
        current = _dedupe(rest + [r for r in derived if any(r[:-1])])
    return levels


def _prune(space: isl.Space, levels: list[list[Row]]) -> list[list[Row]]:
    """``levels`` without the constraints implied (over the integers) by the others of their
    level and those of the loops outside it."""
    kept: list[list[Row]] = []
    outer: list[Row] = []
    for lv in levels:
        mine = list(lv)
        k = 0
        while k < len(mine):
            others = outer + mine[:k] + mine[k + 1:]
            beyond = _basic_set(space, others + [tuple(-x for x in mine[k][:-1]) + (-mine[k][-1] - 1,)])
            if beyond.is_empty():
                del mine[k]
            else:
                k += 1
        kept.append(mine)
        outer += mine
    return kept


def _basic_set(space: isl.Space, rows: list[Row]) -> isl.BasicSet:
    n, nparam = space.dim(_DT.set), space.dim(_DT.param)
    out = isl.BasicSet.universe(space)
    for r in rows:
        c = isl.Constraint.alloc_inequality(space)
        for k in range(n):
            if r[k]:
                c = c.set_coefficient_val(_DT.set, k, r[k])
        for j in range(nparam):
            if r[n + j]:
                c = c.set_coefficient_val(_DT.param, j, r[n + j])
        out = out.add_constraint(c.set_constant_val(r[-1]))
    return out


def _solve(rows: list[Row], k: int, n: int) -> tuple[list[AffineExpr], list[AffineExpr]]:
    """Lower bounds (max) and exclusive upper bounds (min) of ``y_k`` from its level's constraints."""
    lower: list[AffineExpr] = []
    upper: list[AffineExpr] = []
    for r in rows:
        a = r[k]
        rest = AffineExpr.constant(r[-1])
        for j in range(k):
            if r[j]:
                rest = rest + AffineExpr.dim(j) * r[j]
        for j, b in enumerate(r[n:-1]):
            if b:
                rest = rest + AffineExpr.symbol(j) * b
        if a > 0:  # a * y + rest >= 0: y >= ceil(-rest / a)
            lower.append(-rest if a == 1 else (-rest).ceildiv(a))
        else:  # y <= floor(rest / -a)
            upper.append(rest + 1 if a == -1 else rest.floordiv(-a) + 1)
    return _dedupe(lower), _dedupe(upper)


def _dedupe(items: list) -> list:
    out: list = []
    for x in items:
        if x not in out:
            out.append(x)
    return out
