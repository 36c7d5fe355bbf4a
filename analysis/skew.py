"""Skewing a perfectly nested band so that its inner loops are parallel (wavefronts), from the
exact dependences (isl).

A *skew* of a band ``x = (x_0, ..., x_{n-1})`` (outermost first) is a unit lower-triangular
integer matrix ``T``: the new IVs are ``z_k = x_k + sum_{j<k} T[k][j] * x_j``. It is unimodular
and keeps every dependence in order (the first non-zero component of a distance vector ``d``
is that of ``T d``). :func:`find_skew` picks, row by row, the smallest factors in
``{0, ..., max_skew}`` (fewest total first) that make every component of ``T d`` non-negative
for every dependent pair carried in the band: the skewed band is then fully permutable.
Each row is decided on its own (``(T d)_k`` involves row ``k`` only), against the exact
dependence relations (every pair, for every value of the symbols), not their distance hulls.

The *wavefront* adds an outer loop over ``w = z_0 + ... + z_{n-1}``: every pair carried in the
band has ``T d >= 0`` and ``T d != 0``, so ``w`` grows by at least 1 from source to
destination and no loop inside ``w`` carries anything. The new band is
``(w, z_1, ..., z_{n-1})`` (``z_0 = w - z_1 - ...``: the outermost skewed loop, usually
time, is the one left implied, so the inner loops range over the larger space dimensions),
again unimodular. PolyBench seidel-2d (``(t, i, j)``, 9-point in-place update) gets
``T = (t, t + i, 2t + i + j)`` (Pluto's choice) and the wavefront ``w = 4t + 2i + j`` over
``(w, t + i, 2t + i + j)``, both inner loops parallel.

:func:`plan_skew` returns a :class:`SkewPlan`: the matrices, which new loops are parallel
(checked on the transformed dependences, isl), and the new loops' bounds (:mod:`.skew_bounds`),
or a :class:`SkewRefusal` with the reason (the dependence no skew fixes, with a distance of it;
a dependence that is not exact; a bound that cannot be modelled).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import islpy as isl

from affine_ir import Value
from affine_ir.dialects.affine import AffineForOp, AffineYieldOp

from .dependences import Dependence, DependenceAnalysis, value_name
from .isl_bridge import UnsupportedError, op_domain
from .isl_results import val_to_int
from .skew_bounds import LevelBounds, band_rows, inverse_matrix, scan_bounds, transform_map

__all__ = ["SkewPlan", "SkewRefusal", "find_skew", "plan_skew", "wavefront_matrix"]

_DT = isl.dim_type
Matrix = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class SkewRefusal:
    """Why a band cannot be skewed: ``kind`` is ``"dependence"`` (no skew with the factors
    allowed makes it fully permutable; ``dependence`` names one, ``distance`` is a distance vector
    of it that stays negative), ``"inexact"`` (``dependence`` is not exact) or ``"unsupported"``
    (bounds, steps or structure the analysis does not model)."""

    kind: str
    reason: str
    dependence: Dependence | None = None
    distance: tuple[int, ...] | None = None

    def __bool__(self) -> bool:
        return False


@dataclass(frozen=True)
class SkewPlan:
    """How to rewrite ``band``: new IVs ``y = transform . x`` (``x`` the band's IVs), old IVs
    ``x = inverse . y``; ``skew`` is ``T``; ``parallel[k]``: new loop ``k`` carries no dependence;
    ``bounds[k]``: its bounds over the outer new IVs (dims) and ``symbols`` (symbol ``j`` is
    ``symbols[j]``); ``image``: the isl set of new IV tuples (the image of the domain)."""

    band: tuple[AffineForOp, ...]
    skew: Matrix
    wavefront: bool
    transform: Matrix
    inverse: Matrix
    parallel: tuple[bool, ...]
    bounds: tuple[LevelBounds, ...]
    symbols: tuple[Value, ...]
    image: isl.Set | None = None

    def __bool__(self) -> bool:
        return True

    def rows_text(self, matrix: Matrix | None = None) -> str:
        """``(t, t + i, 2t + i + j)``: the rows of ``matrix`` (default: the transformation) over the band's IVs."""
        names = [value_name(lp.induction_var).lstrip("%") for lp in self.band]
        return "(" + ", ".join(_combination(row, names) for row in (matrix or self.transform)) + ")"


def wavefront_matrix(skew: Matrix) -> Matrix:
    """The rows ``(sum of skew's rows, skew[1], ..., skew[n-1])`` (unimodular when ``skew`` is)."""
    n = len(skew)
    total = tuple(sum(row[j] for row in skew) for j in range(n))
    return (total,) + tuple(skew[1:])


def find_skew(deps: Sequence[Dependence], n: int, max_skew: int = 2) -> Matrix | SkewRefusal:
    """The unit lower-triangular ``T`` (factors in ``0..max_skew``, the smallest total per row
    first) with ``(T d)_k >= 0`` for every distance ``d`` of a pair carried by one of the first
    ``n`` common loops of ``deps`` (all analysed from the band's outermost loop), or the refusal
    naming a dependence that rules out every choice of a row."""
    deltas = []
    for dep in deps:
        if dep.kind == "RAR":
            continue
        if not dep.exact:
            return SkewRefusal("inexact", f"{dep} is not exact", dep)
        d = _carried_deltas(dep, n)
        if d is not None:
            deltas.append((dep, d))
    rows = []
    for k in range(n):
        found = None
        for coeffs in _candidates(k, max_skew):
            row = coeffs + (1,) + (0,) * (n - k - 1)
            if all(_negative_point(d, row) is None for _, d in deltas):
                found = row
                break
        if found is None:
            return _no_row(deltas, k, n, max_skew)
        rows.append(found)
    return tuple(rows)


def plan_skew(band: Sequence[AffineForOp], max_skew: int = 2, wavefront: bool = True) -> SkewPlan | SkewRefusal:
    """The skew (and wavefront) of the perfectly nested ``band`` of ``affine.for`` loops of step 1
    (see the module docstring), its parallel loops and bounds, or why there is none.

    Guarantees of a plan: ``transform`` is unimodular, so the new loops visit every iteration of
    the band exactly once (isl checks that the bounds scan exactly the image of the domain);
    every dependent pair carried in the band has a lexicographically positive transformed
    distance, so it still runs source first (pairs of one iteration keep their textual order);
    ``parallel[k]`` is True only when no pair is carried by new loop ``k``."""
    band = tuple(band)
    n = len(band)
    if n < 2:
        return SkewRefusal("unsupported", "a band of one loop has nothing to skew")
    for outer, inner in zip(band, band[1:]):
        if [o for o in outer.body.ops if not isinstance(o, AffineYieldOp)] != [inner]:
            inner_name, outer_name = value_name(inner.induction_var), value_name(outer.induction_var)
            return SkewRefusal("unsupported", f"{inner_name} is not the only op in the body of {outer_name} "
                                              f"(the band is not perfectly nested)")
    carried = next((lp for lp in band if lp.iter_args), None)
    if carried is not None:
        return SkewRefusal("unsupported", f"{value_name(carried.induction_var)} has iter_args")
    bad = next((lp for lp in band if lp.step != 1), None)
    if bad is not None:
        return SkewRefusal("unsupported", f"{value_name(bad.induction_var)} has step {bad.step} (normalize it first)")
    analysis = DependenceAnalysis(band[0])
    deps = [d for d in analysis.all() if d.kind != "RAR"]
    skew = find_skew(deps, n, max_skew)
    if isinstance(skew, SkewRefusal):
        return skew
    matrix = wavefront_matrix(skew) if wavefront else skew
    try:
        domain = op_domain(analysis.scop, band[-1], "L", include_self=True)
        scan = scan_bounds(domain, matrix, band_rows(analysis.scop, band, domain.get_space()))
    except UnsupportedError as e:
        return SkewRefusal("unsupported", f"cannot write the bounds of the skewed loops: {e}")
    deltas = [d for d in (_carried_deltas(dep, n) for dep in deps) if d is not None]
    moved = [d.apply(transform_map(d.get_space(), matrix)) for d in deltas]
    if any(not _lex_positive(m, n) for m in moved):  # cannot happen for a skew: a guard against bugs
        return SkewRefusal("unsupported", "the transformation would reverse a dependence")
    parallel = tuple(all(not _carries(m, k) for m in moved) for k in range(n))
    by_name = {name: v for name, v in analysis.scop.params.values()}
    return SkewPlan(band, skew, wavefront, matrix, inverse_matrix(matrix), parallel, scan.levels,
                    tuple(by_name[p] for p in scan.params), scan.image)


# -- the search ---------------------------------------------------------------------------------------------------
def _candidates(k: int, max_skew: int):
    """Factor tuples for row ``k`` (one per outer loop), fewest total first."""
    return sorted(itertools.product(range(max_skew + 1), repeat=k), key=sum)


def _carried_deltas(dep: Dependence, n: int) -> isl.Set | None:
    """The distance vectors over the first ``n`` common loops of the pairs of ``dep`` carried by
    one of them (None when there are none)."""
    out = None
    for depth, m in zip(dep.depths, dep.by_depth):
        if depth > n:
            continue
        p = m.project_out(_DT.in_, n, m.dim(_DT.in_) - n).project_out(_DT.out, n, m.dim(_DT.out) - n)
        d = p.reset_tuple_id(_DT.in_).reset_tuple_id(_DT.out).deltas()
        out = d if out is None else out.union(d)
    return out


def _negative_point(deltas: isl.Set, row: Sequence[int]) -> tuple[int, ...] | None:
    """A distance vector ``d`` in ``deltas`` with ``row . d < 0`` (for some symbol values), or None."""
    c = isl.Constraint.alloc_inequality(deltas.get_space())  # -row . d - 1 >= 0
    for j, a in enumerate(row):
        if a:
            c = c.set_coefficient_val(_DT.set, j, -a)
    hit = deltas.add_constraint(c.set_constant_val(-1))
    if hit.is_empty():
        return None
    nparam = hit.dim(_DT.param)
    point = hit.move_dims(_DT.set, 0, _DT.param, 0, nparam).sample_point()
    return tuple(val_to_int(point.get_coordinate_val(_DT.set, nparam + j)) for j in range(len(row)))


def _no_row(deltas, k: int, n: int, max_skew: int) -> SkewRefusal:
    """The refusal when no factors fit row ``k``: a dependence that rules out every choice alone
    (with its distance under the largest factors), else the first one each choice meets."""
    choices = [c + (1,) + (0,) * (n - k - 1) for c in _candidates(k, max_skew)]
    largest = choices[-1]
    for dep, d in deltas:
        if all(_negative_point(d, row) is not None for row in choices):
            point = _negative_point(d, largest)
            return SkewRefusal("dependence", _no_row_text(k, max_skew, dep, point, largest, deltas), dep, point)
    dep, d = next((dep, d) for dep, d in deltas if _negative_point(d, largest) is not None)
    point = _negative_point(d, largest)
    return SkewRefusal("dependence", _no_row_text(k, max_skew, dep, point, largest, deltas, alone=False), dep, point)


def _no_row_text(k, max_skew, dep, point, row, deltas, alone=True) -> str:
    band = dep.ivs[: len(row)]
    names = [value_name(v).lstrip("%") for v in band]
    what = (f"no skew of {value_name(band[k])} by {', '.join(value_name(v) for v in band[:k]) or 'nothing'} "
            f"with factors in 0..{max_skew} keeps every distance non-negative")
    skewed = _combination(row, names)
    why = "" if alone else " (each choice is ruled out by some dependence)"
    return (f"{what}{why}: {dep}: the pair at distance ({', '.join(map(str, point))}) has "
            f"{skewed} = {sum(a * b for a, b in zip(row, point))} < 0 even with the largest factors")


# -- checks on transformed distances ------------------------------------------------------------------------------
def _lex_positive(moved: isl.Set, n: int) -> bool:
    for k in range(n):
        piece = moved
        for j in range(k):
            piece = piece.fix_val(_DT.set, j, isl.Val.int_from_si(piece.get_ctx(), 0))
        if not piece.upper_bound_val(_DT.set, k, isl.Val.int_from_si(piece.get_ctx(), -1)).is_empty():
            return False
    zero = moved
    for j in range(n):
        zero = zero.fix_val(_DT.set, j, isl.Val.int_from_si(moved.get_ctx(), 0))
    return zero.is_empty()


def _carries(moved: isl.Set, k: int) -> bool:
    """Whether some transformed distance has zeros before position ``k`` and a non-zero at ``k``."""
    ctx = moved.get_ctx()
    piece = moved
    for j in range(k):
        piece = piece.fix_val(_DT.set, j, isl.Val.int_from_si(ctx, 0))
    return not (piece.lower_bound_val(_DT.set, k, isl.Val.int_from_si(ctx, 1)).is_empty()
                and piece.upper_bound_val(_DT.set, k, isl.Val.int_from_si(ctx, -1)).is_empty())


# -- small helpers -------------------------------------------------------------------------------------------------
def _combination(row: Sequence[int], names: Sequence[str]) -> str:
    """``2t + i + j`` for the row ``(2, 1, 1)`` over ``(t, i, j)``."""
    parts = []
    for a, name in zip(row, names):
        if a:
            term = name if abs(a) == 1 else f"{abs(a)}{name}"
            parts.append(("- " if a < 0 else "+ ") + term)
    if not parts:
        return "0"
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]
