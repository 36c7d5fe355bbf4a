"""The mean's case of ``affine-reduce-reduce-fusion``: a sum of squared deviations from a mean fused with the sum
that gives the mean (one-pass layer-norm statistics, Welford's update).

The loops (after ``affine-loop-fusion``, per row)::

    affine.for %j ... { S = S + x[%j] }                 affine.for %j ... {
    mean = S / N            (N: the loop's trip count)     S_old = S;  S = S_old + x[%j]
    V = 0                                        ->        a_old = S_old / max(j, 1);  a_new = S / (j + 1)
    affine.for %j ... { V = V + (x[%j] - mean)^2 }         V = V + (x[%j] - a_old) * (x[%j] - a_new)
                                                         }
                                                         mean = S / N

``a_old`` and ``a_new`` are the means of the elements before and through ``j``, and Welford's
``V += (x - a_old) * (x - a_new)`` keeps ``V`` the sum of squared deviations from the current mean, so after the
last element from the final one: the unfused ``V`` up to reassociation, without the cancellation of
``sum x^2 - n * mean^2``. What is matched: the producer an ``addf`` reduction of a loaded element, the ops between
the loops dividing its value by a constant equal to the loop's trip count (lower bound constant, step 1) and
storing it back (they move after the fused loop), the later loop's terms ``u * u`` with ``u = +-(x - mean)`` and
``x`` the same element of the same memref. Anything else is refused by :func:`plan_mean` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import AffineExpr, AffineMap, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineLoadOp, AffineStoreOp
from affine_ir.dialects.arith import OPS as ARITH
from affine_ir.dialects.arith import ConstantOp
from affine_ir.types import i64
from analysis.loops import Reduction, constant_trip_count

__all__ = ["MeanPlan", "finalizer_of", "mean_values", "plan_mean", "rewrite_squares"]


@dataclass(frozen=True)
class MeanPlan:
    """The finalizer ops (load, divide by the trip count, store) and, per sum of ``c`` that reads the mean, the
    sum and the element ``x`` its square's deviation is of."""

    finalizer: tuple[Operation, ...]
    squares: tuple[tuple[Reduction, Value], ...]
    lower: int


def _same_access(a: Operation, b: Operation, p: AffineForOp, c: AffineForOp) -> bool:
    def key(x):
        return x.memref, x.map, tuple(p.induction_var if v is c.induction_var else v for v in x.indices)
    return isinstance(a, AffineLoadOp) and isinstance(b, AffineLoadOp) and key(a) == key(b)


def finalizer_of(red: Reduction, between: list[Operation], p: AffineForOp) -> tuple[Operation, ...] | str:
    """The ops of ``between`` that divide ``red``'s value by ``p``'s trip count and store it back, or why
    they are not that."""
    touching = [op for op in between if getattr(op, "memref", None) is red.value]
    if len(touching) != 2 or not isinstance(touching[0], AffineLoadOp) or \
            not isinstance(touching[1], AffineStoreOp):
        return "the ops between them read the producer's value other than to divide it by the trip count"
    load, store = touching
    div = store.value.owner
    n = constant_trip_count(p)
    if not isinstance(div, ARITH["divf"]) or div.operands[0] is not load.result or \
            not isinstance(div.operands[1].owner, ConstantOp) or n is None or div.operands[1].owner.value != n:
        return "the ops between them do not divide the producer's value by the loop's trip count"
    if len(load.result.uses) != 1 or len(div.results[0].uses) != 1 or \
            (load.map, list(load.indices)) != (red.store.map, list(red.store.indices)) or \
            (store.map, list(store.indices)) != (red.store.map, list(red.store.indices)):
        return "the mean is not computed in place of the producer's sum"
    return load, div, store


def plan_mean(p: AffineForOp, c: AffineForOp, red: Reduction, creds: list[Reduction], reads: list, alg,
              finalizer: tuple[Operation, ...], summands) -> MeanPlan | str:
    """The mean's fusion of ``p`` (summing ``red``) with ``c`` (whose sums ``creds`` read the mean through
    ``reads``), or why not. ``alg``: the algebra of ``c`` over the mean's values; ``summands(r)``: ``r``'s terms."""
    if red.kind != "addf":
        return f"the {red.kind} divided by the trip count is not a mean"
    lb = p.lower_bound_map
    if p.step != 1 or len(lb.results) != 1 or not lb.results[0].is_constant:
        return "the loop does not start at a constant with step 1 (the element counts)"
    x_p = next((v for v in red.ops[0].operands if v is not red.load.result), None)
    if len(red.ops) != 1 or x_p is None or not isinstance(x_p.owner, AffineLoadOp):
        return "the producer does not sum a loaded element"
    squares = []
    for r in creds:
        terms = summands(r)
        if not any(alg.depends(t) for t in terms):
            continue
        if r.kind != "addf" or len(terms) != 1:
            return f"the {r.kind} into {r.value.name_hint} is not a sum of one term"
        sq = terms[0].owner
        if not isinstance(sq, ARITH["mulf"]) or sq.operands[0] is not sq.operands[1]:
            return "a term is not the square of a deviation from the mean"
        u = sq.operands[0].owner
        k = alg.linear(sq.operands[0])
        x = next((v for v in getattr(u, "operands", ()) if not alg.depends(v)), None)
        if not isinstance(u, ARITH["subf"]) or k.muls or k.divs or x is None or \
                not _same_access(x.owner, x_p.owner, p, c):
            return "a term is not the square of the summed element's deviation from the mean"
        squares.append((r, x))
    return MeanPlan(finalizer, tuple(squares), lb.results[0].constant_value)


def mean_values(plan: MeanPlan, p: AffineForOp, red: Reduction, at) -> tuple[Value, Value]:
    """The means before and through the current element (``at`` inserts at the end of ``p``'s body, before the
    later loop's ops move in); the finalizer moves after ``p``."""
    block = p.parent
    for op in reversed(plan.finalizer):
        op.detach()
        block.insert_after(p, op)
    t = red.load.result.type
    loc = at.location
    offset = at.add(AffineApplyOp(AffineMap(1, 0, (AffineExpr.dim(0) - plan.lower,)), [p.induction_var],
                                  location=loc))
    before = at.add(ARITH["sitofp"](at.add(ARITH["index_cast"](offset, i64, location=loc)), t, location=loc))
    one = at.add(ConstantOp.of(1.0, t, location=loc))
    a_old = at.arith("divf", red.load.result, at.arith("maximumf", before, one))
    return a_old, at.arith("divf", red.store.value, at.arith("addf", before, one))


def rewrite_squares(plan: MeanPlan, means: tuple[Value, Value], reads: tuple[Operation, ...]) -> None:
    """Each square's term becomes Welford's ``(x - a_old) * (x - a_new)``; the old term and the later loop's
    reads of the mean go."""
    a_old, a_new = means
    for r, x in plan.squares:
        chain = r.ops[0]
        k = next(i for i, v in enumerate(chain.operands) if v is not r.load.result and not _is_chain(v, r))
        square = chain.operands[k].owner
        ins = _Before(chain)
        chain.set_operand(k, ins.arith("mulf", ins.arith("subf", x, a_old), ins.arith("subf", x, a_new)))
        _erase_dead(square)
    for ld in reads:
        if not ld.result.uses:
            ld.erase()


def _is_chain(v: Value, r: Reduction) -> bool:
    return any(v is op.results[0] for op in r.ops)


class _Before:
    def __init__(self, op: Operation):
        self.op = op

    def arith(self, name: str, *operands: Value) -> Value:
        new = ARITH[name](*operands, location=self.op.location)
        self.op.parent.insert_before(self.op, new)
        return new.results[0]


def _erase_dead(op: Operation) -> None:
    """Erase ``op`` and then each operand's pure defining op left without uses."""
    work = [op]
    while work:
        x = work.pop()
        if not isinstance(x, Operation) or x.parent is None or any(r.uses for r in x.results) or not x.is_pure:
            continue
        owners = [v.owner for v in x.operands]
        x.erase()
        work += owners
