"""Exact legality of a loop permutation against one dependence (isl).

A permutation of the outermost ``n`` common loops of a dependence keeps it when every
dependent pair carried by one of those loops still runs source first: its distance vector
over the ``n`` loops, reordered as the loops are, stays lexicographically positive. Pairs
equal on all ``n`` loops (carried deeper, or loop-independent) keep their order whatever
the permutation.

The permutation follows MLIR's ``permuteLoops``: ``permutation[k]`` is the new position of
loop ``k`` (outermost first), so ``(1, 2, 0)`` turns the nest ``(i, j, k)`` into ``(k, i, j)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl

from .dependences import Dependence
from .isl_results import val_to_int

__all__ = ["permutation_violation"]

_DT = isl.dim_type


def permutation_violation(dep: Dependence, permutation: Sequence[int]) -> tuple[int, ...] | None:
    """A distance vector (``dst - src`` over the first ``len(permutation)`` loops of ``dep``, in
    their original order) of a dependent pair that the permuted nest would run in reverse
    order, or None when the permutation keeps every pair of ``dep`` in order.

    Exact for exact dependences, for some values of the symbols (as the dependence's
    ranges); conservative (over-approximated pairs) for may-dependences. ``dep`` must be
    analysed from the permuted band's outermost loop, so that its first common loops are
    the band's.

    Example: ``A[i][j] = A[i - 1][j + 1]`` in ``(i, j)`` has the distance ``(1, -1)``;
    ``permutation_violation(dep, (1, 0))`` returns ``(1, -1)`` (it would become ``(-1, 1)``).
    """
    n = len(permutation)
    if sorted(permutation) != list(range(n)) or n > dep.common_depth:
        raise ValueError(f"{tuple(permutation)} is not a permutation of {dep.common_depth} or fewer common loops")
    if dep.kind == "RAR":
        return None
    inverse = [0] * n
    for k, p in enumerate(permutation):
        inverse[p] = k
    for depth, m in zip(dep.depths, dep.by_depth):
        if depth > n:
            continue
        found = _violating_delta(m, n, inverse)
        if found is not None:
            return found
    return None


def _violating_delta(m: isl.Map, n: int, inverse: list[int]) -> tuple[int, ...] | None:
    """A delta (over the first ``n`` dims) of ``m`` whose reordering by ``inverse`` (new position
    ``j`` holds old dim ``inverse[j]``) is lexicographically negative, or None."""
    p = m.project_out(_DT.in_, n, m.dim(_DT.in_) - n).project_out(_DT.out, n, m.dim(_DT.out) - n)
    deltas = p.reset_tuple_id(_DT.in_).reset_tuple_id(_DT.out).deltas()
    ctx = deltas.get_ctx()
    zero, minus_one = isl.Val.int_from_si(ctx, 0), isl.Val.int_from_si(ctx, -1)
    universe = isl.Set.universe(deltas.get_space())
    bad = isl.Set.empty(deltas.get_space())
    for k in range(n):
        piece = universe
        for j in range(k):
            piece = piece.fix_val(_DT.set, inverse[j], zero)
        bad = bad.union(piece.upper_bound_val(_DT.set, inverse[k], minus_one))
    hit = deltas.intersect(bad)
    if hit.is_empty():
        return None
    nparam = hit.dim(_DT.param)
    point = hit.move_dims(_DT.set, 0, _DT.param, 0, nparam).sample_point()
    return tuple(val_to_int(point.get_coordinate_val(_DT.set, nparam + k)) for k in range(n))
