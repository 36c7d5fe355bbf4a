"""Loop and conditional rewrites of canonicalization: trip counts, promotion, folding.

Each function here changes the IR only when the rewrite is exact for every execution
(facts come from :class:`analysis.ranges.RangeContext`) and returns whether it did.
Every change goes through ``rewriter`` (a :class:`~affine_ir.rewrite.PatternRewriter`; a
plain one when not given), so the pattern driver hears of it.
"""

from __future__ import annotations

from collections import Counter

from affine_ir import AffineExpr, Block, IntegerSet, Operation, Value
from affine_ir.attributes import IntegerAttr
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineMaxOp,
    AffineYieldOp,
    affine_scope,
    is_valid_symbol,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.interfaces import AffineAccessInterface, LoopLikeOpInterface
from affine_ir.rewrite import PatternRewriter
from affine_ir.traits import AffineMapValue
from affine_ir.types import index
from analysis import may_hold_at, runs_at_most_once
from analysis.ranges import RangeContext, min_opt

from ..loop_utils import inline_block_before, lower_bound_value, rebuild_loop
from .canonicalize_maps import canonical_map, composes

__all__ = [
    "erase_unused_iter_args", "fold_empty_loop", "fold_if", "guard_if_at_most_one_iteration",
    "inline_block_before", "promote_if_single_iteration",
    "remove_if_zero_trip", "simplify_loop_bounds",
    "trip_count_range",
]


def simplify_loop_bounds(loop: AffineForOp, ctx: RangeContext | None = None, stats: Counter | None = None,
                         rewriter: PatternRewriter | None = None) -> bool:
    """Canonicalize both bound maps of ``loop`` (compose applies, fold constants, drop ``max``
    lower / ``min`` upper results that never decide the bound given the outer loops' ranges,
    drop duplicates); the loop runs exactly the same iterations. Returns whether it changed.

    ``affine.for %j = 0 to min (d0) -> (d0 + 4, 64)(%i)`` with ``%i = 0 to 60 step 4``
    -> ``affine.for %j = 0 to #map(%i)`` where ``#map = (d0) -> (d0 + 4)``.
    """
    ctx = ctx or RangeContext()
    stats = stats if stats is not None else Counter()
    lb, lbo = canonical_map(ctx, loop.lower_bound_map, loop.lower_bound_operands, "max", sort=False)
    ub, ubo = canonical_map(ctx, loop.upper_bound_map, loop.upper_bound_operands, "min", sort=False)
    if (lb, tuple(lbo), ub, tuple(ubo)) == (loop.lower_bound_map, loop.lower_bound_operands,
                                          loop.upper_bound_map, loop.upper_bound_operands):
        return False
    composed = composes(loop.lower_bound_operands + loop.upper_bound_operands)
    with (rewriter or PatternRewriter()).modify_op_in_place(loop):
        loop.set_bounds(lb, lbo, ub, ubo)
    stats["composed" if composed else "maps"] += 1
    return True


def trip_count_range(loop: AffineForOp, ctx: RangeContext | None = None) -> tuple[int, int | None]:
    """``(lo, hi)``: every execution of ``loop`` runs at least ``lo`` and at most ``hi`` iterations
    (``hi`` None when unbounded). Exact for constant bounds and bounds that differ by a constant;
    uses the ranges of the outer loops otherwise."""
    ctx = ctx or RangeContext()
    lbs = ctx.exprs(loop.lower_bound_map, loop.lower_bound_operands)
    ubs = ctx.exprs(loop.upper_bound_map, loop.upper_bound_operands)
    # min_j ub_j - max_i lb_i == min over (i, j) of ub_j - lb_i
    span_lo: int | None = 0
    span_hi: int | None = None
    first = True
    for u in ubs:
        for lb in lbs:
            lo, hi = ctx.bounds(u - lb)
            span_lo = lo if first else (None if lo is None or span_lo is None else min(span_lo, lo))
            span_hi = min_opt(span_hi, hi)
            first = False
    step = loop.step
    trip_lo = 0 if span_lo is None else max(0, -(-span_lo // step))
    trip_hi = None if span_hi is None else max(0, -(-span_hi // step))
    return trip_lo, trip_hi


def remove_if_zero_trip(loop: AffineForOp, ctx: RangeContext | None = None,
                        rewriter: PatternRewriter | None = None) -> bool:
    """Erase ``loop`` when it never runs an iteration; its results become its inits.

    ``affine.for %i = 0 to 0 iter_args(%a = %x) { ... }`` -> uses of the result use ``%x``.
    """
    if trip_count_range(loop, ctx)[1] != 0:
        return False
    (rewriter or PatternRewriter()).replace_op(loop, list(loop.inits))
    return True


def promote_if_single_iteration(loop: AffineForOp, ctx: RangeContext | None = None,
                                rewriter: PatternRewriter | None = None) -> bool:
    """Replace ``loop`` by its body when it runs exactly one iteration in every execution: the IV
    becomes the lower bound, iter_args their inits, the results the yielded values.

    ``affine.for %i = %j to %j + 1 { S(%i) }`` -> ``%lb = affine.apply (d0) -> (d0)(%j); S(%lb)``
    (the apply is folded by canonicalization).
    """
    lo, hi = trip_count_range(loop, ctx)
    if lo != 1 or hi != 1:
        return False
    iv = loop.induction_var
    if iv.uses and not _max_lower_bound_is_a_dim(loop):
        return False
    rewriter = rewriter or PatternRewriter()
    iv_value = iv
    if iv.uses:
        before = loop.prev_op
        iv_value = lower_bound_value(loop)
        if loop.prev_op is not before:  # lower_bound_value made an op for the bound
            rewriter.notify_op_inserted(loop.prev_op)
    yielded = rewriter.inline_block_before(loop.body, loop, [iv_value, *loop.inits])
    rewriter.replace_op(loop, yielded)
    return True


def guard_if_at_most_one_iteration(loop: AffineForOp, ctx: RangeContext | None = None,
                                   rewriter: PatternRewriter | None = None) -> bool:
    """Replace ``loop`` by an ``affine.if`` on "it runs" (every lower bound below every upper
    bound) holding its body with the IV replaced by the lower bound, when it runs at most one
    iteration in every execution but not always exactly one (exact: the ranges of the outer
    loops, else :func:`analysis.runs_at_most_once`). The if yields the body's yielded values and
    its else the inits; the loop's results become the if's. MLIR's ``promoteIfSingleIteration``
    handles exactly one iteration only (:func:`promote_if_single_iteration` here).

    ``affine.for %k = max(1, %j - 1) to min(%N - 1, 2) { S(%k) }`` ->
    ``affine.if (%j, %N) : (1 >= 0 ... all lb < ub) { S(max(1, %j - 1)) }``: one case per lower
    bound result that can be the bound of a run (``if (runs, 1 >= %j - 1) { S(1) } else { if
    (runs, %j - 1 > 1) { S(%j - 1) } }``), or, with several cases, one ``affine.max`` where that
    is a valid dim for the IV's users (an ``affine.max`` of IVs is none: MLIR's rules).
    """
    lo, hi = trip_count_range(loop, ctx)
    if hi == 0 or (lo, hi) == (1, 1):
        return False  # erased or promoted by the patterns before this one
    if hi is None or hi > 1:
        constant = loop.lower_bound_map.is_single_constant and loop.upper_bound_map.is_single_constant
        if constant or not runs_at_most_once(loop):
            return False
    iv = loop.induction_var
    lbm = loop.lower_bound_map
    cases: list[int | None] = [None]
    if lbm.num_results > 1 and iv.uses:
        cases = [k for k in range(lbm.num_results) if may_hold_at(loop, *_run_condition(loop, k))]
        if len(cases) > 1 and _max_lower_bound_is_a_dim(loop):
            cases = [None]  # one copy of the body, the IV an affine.max
    rewriter = rewriter or PatternRewriter()
    if not cases:  # no lower bound result is ever the bound of a run: it never runs
        rewriter.replace_op(loop, list(loop.inits))
        return True
    guard = _guarded_cases(loop, cases)
    rewriter.insert_op_before(loop, guard)
    rewriter.replace_op(loop, list(guard.results))
    return True


def _run_condition(loop: AffineForOp, case: int | None) -> tuple[IntegerSet, list[Value]]:
    """The set "``loop`` runs" (each upper bound result above each lower one) over the lower then
    the upper bound operands (dims first, then symbols), with ``case``: also lower result ``case``
    is the first of the largest ones (above those before it, at least those after it), so the
    cases are disjoint and one of them holds wherever the loop runs."""
    lm, um = loop.lower_bound_map, loop.upper_bound_map
    lops, uops = loop.lower_bound_operands, loop.upper_bound_operands
    nd, ns = lm.num_dims + um.num_dims, lm.num_symbols + um.num_symbols
    dims = [AffineExpr.dim(k) for k in range(nd)]
    syms = [AffineExpr.symbol(k) for k in range(ns)]
    lows = [e.replace(dims[: lm.num_dims], syms[: lm.num_symbols]) for e in lm.results]
    ups = [e.replace(dims[lm.num_dims:], syms[lm.num_symbols:]) for e in um.results]
    cons = [u - lb - 1 for u in ups for lb in lows]
    if case is not None:
        cons += [lows[case] - other - (1 if q < case else 0) for q, other in enumerate(lows) if q != case]
    operands = [*lops[: lm.num_dims], *uops[: um.num_dims], *lops[lm.num_dims:], *uops[um.num_dims:]]
    return IntegerSet(nd, ns, tuple(cons)), operands


def _guarded_cases(loop: AffineForOp, cases: list[int | None]) -> AffineIfOp:
    """The ``affine.if`` chain replacing ``loop`` (not inserted): case ``k`` (lower result ``k`` is
    the bound; None: the whole lower bound) runs a copy of the body under :func:`_run_condition`,
    the next case (after the last case: the inits) in its else; each if yields the body's values.
    ``cases`` are those whose condition may hold (the others never run the loop)."""
    case, rest = cases[0], cases[1:]
    types = [r.type for r in loop.results]
    cond, operands = _run_condition(loop, case)
    guard = AffineIfOp(cond, operands, types, with_else=bool(rest) or bool(types), location=loop.location)
    then = guard.then_block
    for op in list(then.ops):
        op.erase()
    mapping: dict[Value, Value] = dict(zip(loop.body.args[1:], loop.inits))
    if loop.induction_var.uses:
        mapping[loop.induction_var] = _lower_bound_in(then, loop, case)
    term = loop.body.terminator
    for op in loop.body.ops:
        if op is not term:
            then.append(op.clone(mapping))
    then.append(AffineYieldOp([mapping.get(v, v) for v in (term.operands if term is not None else ())],
                              location=loop.location))
    other = guard.else_block
    if other is not None:
        for op in list(other.ops):
            op.erase()
        if rest:
            inner = _guarded_cases(loop, rest)
            other.append(inner)
            other.append(AffineYieldOp(list(inner.results), location=loop.location))
        else:
            other.append(AffineYieldOp(list(loop.inits), location=loop.location))
    return guard


def _lower_bound_in(block: Block, loop: AffineForOp, case: int | None) -> Value:
    """A value equal to ``loop``'s lower bound (its result ``case`` when given), made at the end of
    ``block``: an ``affine.apply`` of one result, an ``affine.max`` of all of them."""
    m, ops = loop.lower_bound_map, loop.lower_bound_operands
    if case is not None:
        m = m.sub_map([case])
    kind = AffineApplyOp if m.num_results == 1 else AffineMaxOp
    new = kind(m, ops, location=loop.location, name_hint=loop.induction_var.name_hint)
    block.append(new)
    return new.results[0]


def _max_lower_bound_is_a_dim(loop: AffineForOp) -> bool:
    """Whether the IV may become the ``affine.max`` of a multi-result lower bound: when its
    operands are valid symbols, or when no affine op takes the IV as a dim or symbol (MLIR's
    rules make an ``affine.max`` of anything else no valid dim there; ``arith`` ops and
    ``affine.yield`` take any index)."""
    if loop.lower_bound_map.num_results == 1:
        return True
    scope = affine_scope(loop)
    if all(is_valid_symbol(v, scope) for v in loop.lower_bound_operands):
        return True
    return not any(_takes_dims_or_symbols(u.op) for u in loop.induction_var.uses)


def _takes_dims_or_symbols(op: Operation) -> bool:
    """Whether ``op`` reads its index operands as affine dims or symbols: an affine access
    (subscripts), a loop (bounds), an ``affine.if`` (condition) or an affine map value
    (``affine.apply/min/max``); not ``affine.yield``, nor ``arith`` ops, which take any index."""
    return (isinstance(op, (AffineAccessInterface, LoopLikeOpInterface)) or isinstance(op, AffineIfOp)
            or op.has_trait(AffineMapValue))


def fold_empty_loop(loop: AffineForOp, ctx: RangeContext | None = None,
                    rewriter: PatternRewriter | None = None) -> bool:
    """Replace a loop whose body only yields by the values it yields (MLIR's
    ``AffineForEmptyLoopFolder``): an iter_arg yielded in its own place gives its init, a value
    from outside the loop gives itself when the loop runs at least once, the IV gives its last
    value when the trip count is constant. Loops without results are left to dead-code removal."""
    body = loop.body
    if not loop.results or len(body.ops) != 1:
        return False
    trip = None
    out: list[Value | int] = []  # an int: the IV's last value, a constant made once all are known
    for k, y in enumerate(body.ops[0].operands):
        if y is body.args[k + 1]:
            out.append(loop.inits[k])
            continue
        if trip is None:
            trip = trip_count_range(loop, ctx)
        if y is body.args[0]:
            c = loop.lower_bound_map.single_constant()
            if c is None or trip[0] != trip[1] or trip[0] < 1:
                return False
            out.append(c + (trip[0] - 1) * loop.step)
        elif not any(y is a for a in body.args) and trip[0] >= 1:
            out.append(y)
        else:
            return False
    rewriter = rewriter or PatternRewriter()
    values = [v if isinstance(v, Value) else _constant_before(loop, v, rewriter) for v in out]
    rewriter.replace_op(loop, values)
    return True


def _constant_before(loop: AffineForOp, value: int, rewriter: PatternRewriter) -> Value:
    const = ConstantOp(IntegerAttr(value, index), location=loop.location)
    return rewriter.insert_op_before(loop, const).results[0]


def _dead_closure(start: Value, yield_op: Operation, position: int) -> list[Operation] | None:
    """The pure ops through which ``start`` flows only into operand ``position`` of ``yield_op``;
    None when it flows anywhere else."""
    ops: list[Operation] = []
    seen: set[Operation] = set()
    stack = [start]
    while stack:
        v = stack.pop()
        for use in v.uses:
            user = use.op
            if user is yield_op:
                if use.index != position:
                    return None
                continue
            if user in seen:
                continue
            if not user.is_pure or user.regions or user.parent is not yield_op.parent:
                return None
            seen.add(user)
            ops.append(user)
            stack.extend(user.results)
    return ops


def erase_unused_iter_args(loop: AffineForOp, rewriter: PatternRewriter | None = None) -> bool:
    """Remove the iter_args whose result is unused and whose value only feeds its own next
    value (through pure ops in the body), rebuilding the loop without them.

    ``%r:2 = affine.for ... iter_args(%a = %x, %b = %y) { ...; affine.yield %s, %b2 }`` with
    ``%r#1`` unused and ``%b`` only feeding ``%b2`` -> a loop with the iter_arg ``%a`` only.
    """
    body = loop.body
    term = body.terminator
    if not loop.results or not isinstance(term, AffineYieldOp):
        return False
    drop: dict[int, list[Operation]] = {}
    for k, r in enumerate(loop.results):
        if r.uses:
            continue
        closure = _dead_closure(body.args[k + 1], term, k)
        if closure is None:
            continue
        drop[k] = closure
    if not drop:
        return False
    rewriter = rewriter or PatternRewriter()
    keep = [k for k in range(len(loop.results)) if k not in drop]
    new_yield = [term.operands[k] for k in keep]
    with rewriter.modify_op_in_place(term):
        term.set_operands(new_yield)
    for closure in drop.values():
        for op in sorted(closure, key=body.index_of, reverse=True):
            if op.parent is not None and not any(r.uses for r in op.results):
                rewriter.erase_op(op)
    rebuild_loop(loop, keep, rewriter)
    return True


def fold_if(op: AffineIfOp, rewriter: PatternRewriter | None = None) -> bool:
    """Replace an ``affine.if`` whose condition is the universe (the empty set) by its then
    (else) block, yields becoming the results; erase one whose both blocks are empty and
    that has no results. The condition must already be canonical (see ``canonical_set``)."""
    rewriter = rewriter or PatternRewriter()
    cond = op.condition
    if cond.is_universe:
        block: Block | None = op.then_block
    elif cond.is_empty_trivially:
        block = op.else_block
    elif not op.results and len(op.then_block.ops) == 1 and (op.else_block is None or len(op.else_block.ops) == 1):
        rewriter.erase_op(op)
        return True
    else:
        return False
    if block is None:
        rewriter.erase_op(op)
        return True
    yielded = rewriter.inline_block_before(block, op, [])
    rewriter.replace_op(op, yielded)
    return True
