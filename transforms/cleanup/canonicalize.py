"""``canonicalize``: fold, compose and simplify affine/arith IR in place, to a fixpoint.

The pass (MLIR's ``canonicalize``) and its utility :func:`canonicalize` are the greedy
pattern driver (:func:`affine_ir.rewrite_driver.apply_patterns_greedily`: dead ops erased,
folders first, then patterns, revisits after each change) run with the folders and patterns
of :mod:`.canonicalize_patterns`, plus one step that is no pattern (as in MLIR, where the
folder does it): constants are hoisted to the top of the function and duplicates merged
(:func:`hoist_constants`) before each driver iteration but the first and after the last (run
again when that changed anything). Constants are uniqued before they are garbage-collected:
the driver leaves dead constants alone, the merge keeps the first of each set of equal
constants in program order (dead or alive), then the unused ones are erased; so which one
survives does not depend on the order in which the worklist saw duplicates die. They
rewrite, until nothing changes (every rewrite is exact, so the program computes the same
results):

- **constants**: ``arith``/``math`` ops on constant operands fold with the interpreter's
  exact semantics (ints wrap; floats only where IEEE rounding is reproducible, never to a
  NaN; see :mod:`.canonicalize_fold`), identities (``x + 0``, ``x * 1``, ``x - 0.0``,
  ``x * 1.0``; not ``x + 0.0``), ``arith.select`` on a constant condition or equal
  choices, a constant operand of a commutative op moves to the right; constants are
  hoisted to the top of the function and duplicates merged (as MLIR's folder does);
- **maps** (``affine.apply/min/max``, load/store subscripts, loop bounds, ``affine.if``
  conditions; :mod:`.canonicalize_maps`): ``affine.apply`` operands are composed in,
  constant operands folded in, valid symbols become symbols, unused and duplicate operands
  dropped; results are simplified with the ranges of the loop IVs (``floordiv``/``mod``
  that are constant or the identity on the IV's range, results that have one value);
  ``min``/``max`` results that never win are dropped; an ``affine.apply`` of one operand
  or a constant, and a ``min``/``max`` with one result, fold;
- **loops and conditionals** (:mod:`.canonicalize_loops`): loops that never run are erased
  (results = inits), loops that run once are inlined (IV = lower bound), loops whose body
  only yields fold, unused iter_args are removed; an ``affine.if`` whose condition always
  (never) holds in its loops is replaced by its then (else) block;
- **dead code**: unused results of ops without side effects (``is_pure`` ops, loads,
  ``memref.dim``, allocations, loops/ifs without effects inside) are erased.

Pass options (MLIR's): ``max-iterations`` (10) bounds the driver's iterations,
``test-convergence`` records a refusal for a function the driver stopped before a fixpoint.
Helpers other passes may call:
:func:`canonicalize` (any op), :func:`simplify_loop_bounds`, :func:`promote_if_single_iteration`,
:func:`fold_constant_operands`, :func:`trip_count_range`, :func:`hoist_constants`,
:func:`is_trivially_dead`.

Differences from MLIR's canonicalizer (on purpose, all exact): loops of one iteration are
promoted (MLIR leaves that to other passes); loops of zero iterations without results are
erased (MLIR keeps ``affine.for %i = 0 to 0 {...}``); loop ranges are used to drop
``min``/``max`` results and decide ``affine.if`` conditions (MLIR only simplifies loop
bounds that way); unused iter_args are removed; constants stay in first-use order (MLIR's
folder puts each new one first); floats are
not folded through ``math`` transcendental functions or to NaN (MLIR folds ``math.exp`` and
``0.0 / 0.0``); ``affine.parallel`` and ``gpu`` ops are left alone (only their operands'
producers are folded) and constants are not hoisted out of ``gpu.launch``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from affine_ir import FuncOp, ModuleOp, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.rewrite import PatternRewriter
from affine_ir.rewrite_driver import GreedyRewriteConfig, RewriteResult, apply_patterns_greedily
from affine_ir.traits import ConstantLike, IsolatedFromAbove, RecursiveMemoryEffects

from ..errors import TransformError
from ..pass_base import Pass, PassContext, option, register_pass
from .canonicalize_fold import fold_op, make_constant, swap_commutative
from .canonicalize_loops import promote_if_single_iteration, simplify_loop_bounds, trip_count_range
from .canonicalize_patterns import (
    ACCESS_OPS,
    CanonicalizeAccess,
    CanonicalizeMapValue,
    CanonicalizeState,
    canonicalization_patterns,
)
from .dce import has_only_read_effects, is_trivially_dead

__all__ = [
    "Canonicalize", "canonicalize", "fold_constant_operands", "has_side_effects", "hoist_constants",
    "is_trivially_dead", "promote_if_single_iteration", "simplify_loop_bounds", "summary_text", "trip_count_range",
]

MAX_SWEEPS = 32

# What the summary note says, in this order.
_LABELS = (
    ("folded", "folded {} constants"), ("simplified", "simplified {} ops"),
    ("composed", "composed {} affine.apply"), ("maps", "simplified {} maps"),
    ("zero_trip", "removed {} zero-trip loops"), ("promoted", "promoted {} single-iteration loops"),
    ("guarded", "turned {} loops of at most one iteration into affine.if"),
    ("empty_loops", "folded {} empty loops"), ("iter_args", "removed unused iter_args of {} loops"),
    ("ifs", "folded {} affine.if"), ("dead", "removed {} dead ops"), ("merged", "merged {} duplicate constants"),
    ("hoisted", "hoisted {} constants"),
)

# The driver's counts of folds and erasures, as the summary's kinds.
_DRIVER_KINDS = {"erased": "dead", "folded_to_constant": "folded", "folded_to_value": "simplified",
                 "folded_in_place": "simplified"}


def has_side_effects(op: Operation) -> bool:
    """Whether ``op`` (with what it holds) may write memory or do anything but compute its results
    (the complement of :func:`transforms.cleanup.dce.has_only_read_effects`)."""
    return not has_only_read_effects(op)


def fold_constant_operands(op: Operation, stats: Counter | None = None,
                           rewriter: PatternRewriter | None = None) -> bool:
    """Fold ``op`` if it is a scalar ``arith``/``math`` op that folds (all operands constant, an
    identity, a select on a constant): its uses take the folded value and it is erased.
    Exactly the interpreter's semantics (see :mod:`.canonicalize_fold`). Returns whether it changed.

    ``%c = arith.addi %c2, %c3 : i32`` -> ``%c = arith.constant 5 : i32``;
    ``%y = arith.mulf %x, %one : f32`` -> uses of ``%y`` use ``%x``.
    """
    stats = stats if stats is not None else Counter()
    rewriter = rewriter or PatternRewriter()
    swapped = swap_commutative(op)
    folded = fold_op(op)
    if folded is None:
        if swapped:
            rewriter.notify_op_modified(op)
            stats["simplified"] += 1
        return swapped
    if folded is op.results[0]:  # rewritten in place (constants reassociated)
        rewriter.notify_op_modified(op)
        stats["simplified"] += 1
    elif isinstance(folded, Value):
        rewriter.replace_op(op, folded)
        stats["simplified"] += 1
    else:
        const = rewriter.insert_op_before(op, make_constant(folded, op.location))
        rewriter.replace_op(op, const.results[0])
        stats["folded"] += 1
    return True


def compose_affine_maps(root: Operation) -> bool:
    """Fold ``affine.apply`` ops under ``root`` into the affine accesses, bounds and applies that
    use them (and simplify those maps), erasing applies left unused; nothing else changes.
    What a transform that introduces applies (a promoted loop's IV) calls on what it made.
    Returns whether anything changed (one pass in program order, not a fixpoint)."""
    state, rewriter = CanonicalizeState(), PatternRewriter()
    apply_pattern, access_pattern = CanonicalizeMapValue(state), CanonicalizeAccess(state)
    changed = False
    for op in list(root.walk()):
        if op.parent is None:
            continue
        rewriter.start(op)
        if isinstance(op, AffineApplyOp):
            changed |= apply_pattern.match_and_rewrite(op, rewriter)
        elif isinstance(op, ACCESS_OPS):
            changed |= access_pattern.match_and_rewrite(op, rewriter)
        elif isinstance(op, AffineForOp):
            changed |= simplify_loop_bounds(op, state.ctx, state.stats, rewriter)
    for op in reversed(list(root.walk())):
        if isinstance(op, AffineApplyOp) and op.parent is not None and not op.results[0].uses:
            rewriter.erase_op(op)
            changed = True
    return changed


def _hoistable(c: ConstantOp, func: FuncOp) -> bool:
    """Constants with no other attribute, nested in ``func`` only through structured control flow
    (ops with ``RecursiveMemoryEffects``: ``affine.for/if/parallel``), not inside a kernel, an
    op of unknown effects or any other op with regions."""
    if set(c.attributes) != {"value"}:
        return False
    for a in c.ancestors():
        if a is func:
            return True
        if not a.has_trait(RecursiveMemoryEffects):
            return False
    return False


def hoist_constants(func: FuncOp, stats: Counter | None = None) -> bool:
    """Move the ``arith.constant`` ops of ``func`` (outside ``gpu.launch`` and unregistered ops)
    to the top of its body, in order of first appearance, merging equal ones (same type and
    printed value: ``-0.0`` and ``0.0`` stay apart). Returns whether it changed."""
    stats = stats if stats is not None else Counter()
    if func.is_declaration:
        return False
    body = func.body
    reps: dict[tuple, ConstantOp] = {}
    order: list[ConstantOp] = []
    changed = False
    for op in list(func.walk()):
        if not isinstance(op, ConstantOp) or not _hoistable(op, func):
            continue
        key = (str(op.result.type), str(op.attributes["value"]))
        rep = reps.get(key)
        if rep is None:
            reps[key] = op
            order.append(op)
        else:
            op.result.replace_all_uses_with(rep.result)
            op.erase()
            stats["merged"] += 1
            changed = True
    prev = None  # order[:k] are the first k ops of the body
    for c in order:
        in_place = c.parent is body and (body.ops[0] is c if prev is None else prev.next_op is c)
        if not in_place:
            c.detach()
            if prev is None:
                body.insert(0, c)
            else:
                body.insert_after(prev, c)
            stats["hoisted"] += 1
            changed = True
        prev = c
    return changed


def _functions(root: Operation) -> list[FuncOp]:
    if isinstance(root, FuncOp):
        return [root]
    return [op for op in root.walk() if isinstance(op, FuncOp)] if isinstance(root, ModuleOp) else []


def canonicalize(op: Operation, stats: Counter | None = None, max_iterations: int = MAX_SWEEPS) -> bool:
    """Canonicalize ``op`` in place (a module, a function, a loop or any op and what it holds) to
    a fixpoint; returns whether anything changed. The result verifies and computes exactly
    what ``op`` computed; running it again changes nothing (``max_iterations`` bounds the
    driver's iterations). ``stats`` (a Counter) receives counts by kind (``folded``,
    ``composed``, ``promoted``...).

    A loop given as ``op`` may itself be removed or inlined (then its parent holds the result).

    Example::

        %c4 = arith.constant 4 : index                    affine.for %i = 0 to 16 {
        affine.for %i = 0 to 16 {                   ->      %v = affine.load %A[%i floordiv 4]
          %a = affine.apply (d0)[s0] -> (d0 floordiv s0)(%i)[%c4]
          %v = affine.load %A[%a]
    """
    return _canonicalize(op, stats if stats is not None else Counter(), max_iterations)[0]


def _hoist_all(op: Operation, stats: Counter, dead_constants: _DeadConstants) -> bool:
    """Hoist and merge the constants of every function in ``op``, then erase the constants that
    died in the driver's iteration and are still unused (see :class:`_DeadConstants`)."""
    changed = False
    for f in _functions(op):
        changed |= hoist_constants(f, stats)
    return dead_constants.erase(op, stats) or changed


class _DeadConstants:
    """The driver's dead test in ``canonicalize``: trivially dead ops but constants, which it
    records instead. A constant that dies in an iteration still takes part in the merge that
    follows it and is erased after it, so the constant a merge keeps is the first of the equal
    constants in program order, whichever of them the worklist saw die first (constant uniquing
    before garbage collection, as MLIR's ``OperationFolder`` keeps a constant until it is erased)."""

    def __init__(self) -> None:
        self.seen: list[Operation] = []

    def __call__(self, op: Operation) -> bool:
        if not is_trivially_dead(op):
            return False
        if op.has_trait(ConstantLike):
            self.seen.append(op)
            return False
        return True

    def erase(self, root: Operation, stats: Counter) -> bool:
        """Erase the recorded constants that are still nested in ``root`` and unused; whether any was."""
        erased = False
        for c in self.seen:
            if c.parent is not None and root.is_ancestor_of(c) and is_trivially_dead(c):
                c.erase()
                stats["dead"] += 1
                erased = True
        self.seen.clear()
        return erased


def _canonicalize(op: Operation, stats: Counter, max_iterations: int) -> tuple[bool, bool]:
    """(changed, converged): the greedy driver with the canonicalization patterns (dead
    constants left to the merge), constants hoisted and merged, then unused ones erased
    (:func:`_hoist_all`) before each iteration after the first and after the last; run again
    when that last step changed something."""
    state = CanonicalizeState(stats)
    dead_constants = _DeadConstants()
    hoisted = [False]

    def new_iteration(iteration: int) -> None:
        state.new_iteration()
        if iteration > 1:
            hoisted[0] |= _hoist_all(op, stats, dead_constants)

    patterns = canonicalization_patterns(state)
    include_root = not op.has_trait(IsolatedFromAbove) and op.parent is not None  # not a function or module
    changed_any = False
    budget = max(1, max_iterations)
    while True:
        config = GreedyRewriteConfig(max_iterations=budget, is_trivially_dead=dead_constants,
                                     on_iteration=new_iteration)
        result = apply_patterns_greedily(op, patterns, config, include_root=include_root)
        _count(result, stats)
        budget -= result.iterations
        changed_after = _hoist_all(op, stats, dead_constants)
        changed_any |= result.changed or hoisted[0] or changed_after
        if not result.converged:
            return changed_any, False
        if not changed_after:
            return changed_any, True
        if budget <= 0:
            return changed_any, False


def _count(result: RewriteResult, stats: Counter) -> None:
    for key, kind in _DRIVER_KINDS.items():
        if result.counts.get(key):
            stats[kind] += result.counts[key]


def summary_text(stats: Counter) -> str:
    """``folded 3 constants, composed 2 affine.apply, ...`` (or ``nothing to simplify``)."""
    parts = [label.format(stats[key]) for key, label in _LABELS if stats.get(key)]
    return ", ".join(parts) if parts else "nothing to simplify"


@register_pass
@dataclass(frozen=True)
class Canonicalize(Pass):
    """MLIR's ``canonicalize`` for affine/arith IR: see :func:`canonicalize`."""

    name = "canonicalize"
    summary = "Fold constants, compose and simplify affine maps, remove trivial loops and dead code"

    max_iterations: int = option(10, "greedy driver iterations over the function at most (as MLIR's)")
    test_convergence: bool = option(False, "refuse (record) a function that has not converged after "
                                           "max-iterations driver iterations")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if func.is_declaration:
            return
        stats: Counter = Counter()
        _, converged = _canonicalize(func, stats, self.max_iterations)
        ctx.note(func, summary_text(stats))
        if self.test_convergence and not converged:
            ctx.refused(func, TransformError(self.name, f"@{func.sym_name} did not converge in "
                                                        f"{self.max_iterations} iterations"))
