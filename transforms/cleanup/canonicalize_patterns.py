"""The canonicalization patterns and folders of the affine and arith/math ops, keyed by op class.

``canonicalize`` (:mod:`.canonicalize`) is the greedy driver (:mod:`affine_ir.rewrite_driver`)
run with these. They are declared here, next to the ops' rewrites they call, rather than on
the op classes, because they need the value ranges of :class:`RangeContext` (an analysis,
which ``affine_ir`` may not import):

- **folders** (tried first by the driver) of every op with the ``Arithmetic`` trait (the
  ``arith``/``math`` computations, registered by trait): :func:`fold_arith` (constants of
  ``ExactFold`` ops, the identities their classes declare, constant operand of a
  ``Commutative`` op to the right: see :mod:`.canonicalize_fold`);
- **patterns**, by root op class: :class:`ReassociateConstants` (``arith.addi/muli``);
  :class:`CanonicalizeMapValue` (``affine.apply/min/max``); :class:`CanonicalizeAccess`
  (every ``AffineAccessInterface`` op: ``affine.load/store/vector_load/vector_store``); for
  ``affine.for``, in decreasing benefit:
  :class:`SimplifyLoopBounds`, :class:`EraseZeroTripLoop`, :class:`PromoteSingleIterationLoop`,
  :class:`GuardAtMostOneIterationLoop`, :class:`FoldYieldOnlyLoop`, :class:`EraseUnusedIterArgs`; for ``affine.if``:
  :class:`CanonicalizeIfCondition`, then :class:`FoldConstantIf`.

Patterns share one :class:`CanonicalizeState` per run: the range context (rebuilt at the start
of each driver iteration, as each sweep of the canonicalizer rebuilt it) and the counts by kind
that the pass's note reports. Ops defined elsewhere add theirs through
:func:`affine_ir.rewrite.register_patterns` / ``canonicalization_patterns``; ``canonicalize``
runs those too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from affine_ir import Operation
from affine_ir.attributes import IntegerAttr
from affine_ir.core import OP_REGISTRY
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineIfOp, AffineMaxOp, AffineMinOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.rewrite import PatternRewriter, RewritePattern, patterns_of, register_trait_folder
from affine_ir.traits import Arithmetic
from affine_ir.types import index
from analysis.ranges import RangeContext

from .canonicalize_fold import REASSOCIATED, fold_op, make_constant, reassociation, swap_commutative
from .canonicalize_loops import (
    erase_unused_iter_args,
    fold_empty_loop,
    fold_if,
    guard_if_at_most_one_iteration,
    promote_if_single_iteration,
    remove_if_zero_trip,
    simplify_loop_bounds,
)
from .canonicalize_maps import canonical_map, canonical_set, composes

__all__ = [
    "ACCESS_OPS", "CanonicalizeAccess", "CanonicalizeIfCondition", "CanonicalizeMapValue", "CanonicalizeState",
    "EraseUnusedIterArgs", "EraseZeroTripLoop", "FoldConstantIf", "FoldYieldOnlyLoop", "GuardAtMostOneIterationLoop",
    "PromoteSingleIterationLoop",
    "ReassociateConstants", "SimplifyLoopBounds", "canonicalization_patterns", "fold_arith",
]

#: The affine memory accesses (their subscripts are maps over operands): the interface's ops.
ACCESS_OPS = AffineAccessInterface

#: How each map-valued op combines its results (see :data:`.canonicalize_maps.MapKind`).
MAP_KINDS = {AffineApplyOp: "list", AffineMinOp: "min", AffineMaxOp: "max"}


@dataclass
class CanonicalizeState:
    """What the patterns of one ``canonicalize`` run share: value ranges and counts by kind."""

    stats: Counter = field(default_factory=Counter)
    ctx: RangeContext = field(default_factory=RangeContext)

    def new_iteration(self, _iteration: int = 0) -> None:
        """Forget the ranges (the IR changed since they were computed)."""
        self.ctx = RangeContext()


# ----------------------------------------------------------------------------------------
# arith / math
# ----------------------------------------------------------------------------------------

def fold_arith(op: Operation) -> list | None:
    """The folder of the ``arith``/``math`` ops: ``[attribute]`` (a constant result), ``[value]``
    (an identity), ``op``'s own results after moving a constant operand of a commutative op to
    the right, or None. Exactly the interpreter's semantics (:mod:`.canonicalize_fold`); the
    reassociation of constants is the pattern :class:`ReassociateConstants`."""
    swapped = swap_commutative(op)
    folded = fold_op(op, reassociate=False)
    if folded is None:
        return list(op.results) if swapped else None
    return [folded]


class ReassociateConstants(RewritePattern):
    """``(x + c0) + c1 -> x + (c0 + c1)``, also with ``-`` inside and with ``*`` (exact with
    wrap-around): a new constant before the op, the op rewritten in place."""

    root = REASSOCIATED

    def __init__(self, state: CanonicalizeState):
        self.state = state

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        found = reassociation(op)
        if found is None:
            return False
        x, attr = found
        const = rewriter.insert_op_before(op, ConstantOp(attr, location=op.location))
        with rewriter.modify_op_in_place(op):
            op.set_operands([x, const.results[0]])
        self.state.stats["simplified"] += 1
        return True


# ----------------------------------------------------------------------------------------
# Maps
# ----------------------------------------------------------------------------------------

class CanonicalizeMapValue(RewritePattern):
    """``affine.apply/min/max``: the canonical map (:func:`canonical_map`); then fold to a
    constant, to its one operand (an identity map), or (a min/max of one result) to an apply."""

    root = tuple(MAP_KINDS)

    def __init__(self, state: CanonicalizeState):
        self.state = state

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        stats = self.state.stats
        m, ops = canonical_map(self.state.ctx, op.map, op.operands, MAP_KINDS[type(op)])
        changed = False
        if (m, tuple(ops)) != (op.map, op.operands):
            stats["composed" if composes(op.operands) else "maps"] += 1
            with rewriter.modify_op_in_place(op):
                op.attributes["map"] = m
                op.set_operands(ops)
            changed = True
        c = m.single_constant()
        if c is not None:
            const = rewriter.insert_op_before(op, make_constant(IntegerAttr(c, index), op.location))
            rewriter.replace_op(op, const.results[0])
            stats["folded"] += 1
            return True
        if m.num_results == 1:
            e = m.results[0]
            if e.as_dim() == 0 or e.as_symbol() == 0:
                rewriter.replace_op(op, ops[0])
                stats["simplified"] += 1
                return True
            if not isinstance(op, AffineApplyOp):
                new = AffineApplyOp(m, ops, location=op.location, name_hint=op.results[0].name_hint)
                rewriter.replace_op_with_new(op, new)
                stats["simplified"] += 1
                return True
        return changed


class CanonicalizeAccess(RewritePattern):
    """An affine access: its subscript map canonical (applies composed, constants folded in)."""

    root = ACCESS_OPS

    def __init__(self, state: CanonicalizeState):
        self.state = state

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        m, ops = canonical_map(self.state.ctx, op.map, op.indices, "list")
        before = (op.map, op.indices)
        if m == before[0] and tuple(ops) == before[1]:
            return False
        composed = composes(op.indices)
        op.set_access(m, ops)
        if (op.map, op.indices) == before:
            return False
        rewriter.notify_op_modified(op)
        self.state.stats["composed" if composed else "maps"] += 1
        return True


# ----------------------------------------------------------------------------------------
# Loops and conditionals
# ----------------------------------------------------------------------------------------

class _LoopPattern(RewritePattern):
    root = AffineForOp

    def __init__(self, state: CanonicalizeState):
        self.state = state


class SimplifyLoopBounds(_LoopPattern):
    """Both bound maps canonical (see :func:`.canonicalize_loops.simplify_loop_bounds`); when they
    changed, the loop rewrites below are tried right away on the new bounds (what a revisit
    would do, without recomputing the bounds)."""

    benefit = 5

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if not simplify_loop_bounds(op, self.state.ctx, self.state.stats, rewriter=rewriter):
            return False
        for follow_up in (EraseZeroTripLoop, PromoteSingleIterationLoop, GuardAtMostOneIterationLoop, FoldYieldOnlyLoop,
                          EraseUnusedIterArgs):
            if follow_up(self.state).match_and_rewrite(op, rewriter):
                break
        return True


class EraseZeroTripLoop(_LoopPattern):
    """A loop that never runs is erased; its results become its inits."""

    benefit = 4

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        done = remove_if_zero_trip(op, self.state.ctx, rewriter)
        self.state.stats["zero_trip"] += done
        return done


class PromoteSingleIterationLoop(_LoopPattern):
    """A loop that runs once is replaced by its body (IV = lower bound)."""

    benefit = 3

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        done = promote_if_single_iteration(op, self.state.ctx, rewriter)
        self.state.stats["promoted"] += done
        return done


class GuardAtMostOneIterationLoop(_LoopPattern):
    """A loop that runs at most once (not always exactly once) becomes an ``affine.if`` on "it
    runs" around its body, the IV its lower bound (see
    :func:`.canonicalize_loops.guard_if_at_most_one_iteration`)."""

    benefit = 3

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        done = guard_if_at_most_one_iteration(op, self.state.ctx, rewriter)
        self.state.stats["guarded"] += done
        return done


class FoldYieldOnlyLoop(_LoopPattern):
    """A loop whose body only yields is replaced by the values it yields."""

    benefit = 2

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        done = fold_empty_loop(op, self.state.ctx, rewriter)
        self.state.stats["empty_loops"] += done
        return done


class EraseUnusedIterArgs(_LoopPattern):
    """Iter_args whose result is unused and that only feed themselves are removed."""

    benefit = 1

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        done = erase_unused_iter_args(op, rewriter)
        self.state.stats["iter_args"] += done
        return done


class CanonicalizeIfCondition(RewritePattern):
    """An ``affine.if`` condition canonical (:func:`canonical_set`), then :class:`FoldConstantIf`
    tried right away."""

    root = AffineIfOp
    benefit = 2

    def __init__(self, state: CanonicalizeState):
        self.state = state

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        s, ops = canonical_set(self.state.ctx, op.condition, op.operands)
        if (s, tuple(ops)) == (op.condition, op.operands):
            return False
        self.state.stats["composed" if composes(op.operands) else "maps"] += 1
        with rewriter.modify_op_in_place(op):
            op.attributes["condition"] = s
            op.set_operands(ops)
        FoldConstantIf(self.state).match_and_rewrite(op, rewriter)  # on the new condition, right away
        return True


class FoldConstantIf(RewritePattern):
    """An ``affine.if`` that always (never) holds is replaced by its then (else) block."""

    root = AffineIfOp
    benefit = 1

    def __init__(self, state: CanonicalizeState):
        self.state = state

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        done = fold_if(op, rewriter)
        self.state.stats["ifs"] += done
        return done


#: The pattern classes of canonicalization, keyed by the (first) op class they apply to (their
#: ``root`` says all of them); each is made with the run's :class:`CanonicalizeState`.
PATTERN_FACTORIES: dict[type, list[Callable[[CanonicalizeState], RewritePattern]]] = {
    REASSOCIATED[0]: [ReassociateConstants],
    AffineApplyOp: [CanonicalizeMapValue],
    AffineAccessInterface: [CanonicalizeAccess],
    AffineForOp: [SimplifyLoopBounds, EraseZeroTripLoop, PromoteSingleIterationLoop, GuardAtMostOneIterationLoop,
                  FoldYieldOnlyLoop, EraseUnusedIterArgs],
    AffineIfOp: [CanonicalizeIfCondition, FoldConstantIf],
}


def canonicalization_patterns(state: CanonicalizeState) -> list[RewritePattern]:
    """The patterns ``canonicalize`` runs: those of :data:`PATTERN_FACTORIES` made with ``state``
    (each class once: a pattern covers all its root classes), then those the op classes declare
    (``canonicalization_patterns`` or :func:`~affine_ir.rewrite.register_patterns`)."""
    made: list[RewritePattern] = []
    for factories in PATTERN_FACTORIES.values():
        made.extend(factory(state) for factory in factories)
    return made + patterns_of(list(OP_REGISTRY.values()))


register_trait_folder(Arithmetic, fold_arith)
