"""Choosing a loop order: the legal permutation whose innermost loop is the best to vectorize.

For the CPU (and the inner loops of a GPU thread), the innermost loop should walk memory with
unit stride and carry no dependence, so that LLVM vectorizes it. :func:`innermost_score`
rates a band loop as the innermost one from its accesses; :func:`choose_permutation` tries the
loops in order of that rating and returns the first legal order that puts one innermost, the
other loops keeping their relative order.

Score of loop ``L`` as the innermost loop, summed over the affine loads and stores under the band:
``+1`` an access invariant in ``L`` (its value stays in a register), ``+2`` an access whose last
subscript moves by +-1 with ``L`` and no other subscript uses ``L`` (unit stride, contiguous),
``-3`` any other use of ``L`` (strided: a gather); ``-5`` when ``L`` carries a dependence (the
vectorizer cannot reorder it without fast-math). Matmul ``(i, j, k)`` scores ``j`` highest
(``A[i, k]`` invariant, ``B[k, j]``, ``C[i, j]`` contiguous, parallel): order ``(i, k, j)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import analysis
from affine_ir import Operation, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.interfaces import AffineAccessInterface

from ..errors import TransformError
from ..loop_utils import depends_on, loop_name
from .permute import check_permutation

__all__ = ["choose_permutation", "innermost_score"]


def _uses_of(v: Value, access: Operation) -> tuple[int, ...]:
    """Per subscript of ``access``: the coefficient of ``v`` (None when it appears other than linearly)."""
    m = access.map
    out = []
    for e in m.results:
        coeff = 0
        for pos, operand in enumerate(access.indices):
            is_dim = pos < m.num_dims
            k = pos if is_dim else pos - m.num_dims
            if operand is v:
                used = (k in e.used_dims()) if is_dim else (k in e.used_symbols())
                lin = e.coefficient_of_dim(k) if is_dim else e.coefficient_of_symbol(k)
                if used and not lin or any(k in (t.expr.used_dims() if is_dim else t.expr.used_symbols())
                                           for t in e.div_terms()):
                    coeff = None
                    break
                coeff += lin
            elif depends_on(operand, v):
                coeff = None
                break
        out.append(coeff)
    return tuple(out)


def innermost_score(band: Sequence[AffineForOp], position: int, deps=None) -> int:
    """How good ``band[position]`` is as the innermost loop (see the module docstring)."""
    loop = band[position]
    iv = loop.induction_var
    score = 0
    for op in band[0].walk():
        if not isinstance(op, AffineAccessInterface) or op.vector_type is not None:
            continue
        coeffs = _uses_of(iv, op)
        if all(c == 0 for c in coeffs):
            score += 1
        elif coeffs and coeffs[-1] in (1, -1) and all(c == 0 for c in coeffs[:-1]):
            score += 2
        else:
            score -= 3
    deps = analysis.dependences(band[0]) if deps is None else deps
    if any(d.kind != "RAR" and d.carried_at(position + 1) for d in deps):
        score -= 5
    return score


def choose_permutation(band: Sequence[AffineForOp]) -> tuple[tuple[int, ...], str] | None:
    """The legal permutation (``permutation[k]`` = new position of loop ``k``, as
    :func:`transforms.loops.permute.permute_loops` takes it) moving the best-scoring loop innermost,
    with a sentence saying why; None when the current order is already the best legal one
    (or no other order is legal). Changes nothing."""
    band = list(band)
    n = len(band)
    if n < 2:
        return None
    deps = analysis.dependences(band[0])
    scores = [innermost_score(band, p, deps) for p in range(n)]
    for p in sorted(range(n), key=lambda q: (-scores[q], -q)):
        if p == n - 1:
            return None  # the innermost loop is already the best legal choice
        if scores[p] <= scores[n - 1]:
            return None
        order = [q for q in range(n) if q != p] + [p]
        perm = tuple(order.index(k) for k in range(n))
        try:
            check_permutation(band, perm)
        except TransformError:
            continue
        why = (f"innermost score {scores[p]} for {loop_name(band[p])} against {scores[n - 1]} for "
               f"{loop_name(band[-1])} (unit-stride or invariant accesses, no carried dependence)")
        return perm, why
    return None

