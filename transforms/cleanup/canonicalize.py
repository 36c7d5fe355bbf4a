"""``canonicalize``: fold, compose and simplify affine/arith IR in place, to a fixpoint.

The pass (MLIR's ``canonicalize``) and its utility :func:`canonicalize` rewrite, until
nothing changes (every rewrite is exact, so the program computes the same results):

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

Pass options (MLIR's): ``max-iterations`` (10) bounds the sweeps, ``test-convergence`` records a
refusal for a function still changing after them. Helpers other passes may call:
:func:`canonicalize` (any op), :func:`simplify_loop_bounds`, :func:`promote_if_single_iteration`,
:func:`fold_constant_operands`, :func:`trip_count_range`, :func:`hoist_constants`,
:func:`is_trivially_dead`.

Differences from MLIR's canonicalizer (on purpose, all exact): loops of one iteration are
promoted (MLIR leaves that to other passes); loops of zero iterations without results are
erased (MLIR keeps ``affine.for %i = 0 to 0 {...}``); loop ranges are used to drop
``min``/``max`` results and decide ``affine.if`` conditions (MLIR only simplifies loop
bounds that way); unused iter_args are removed; constants stay in first-use order; floats are
not folded through ``math`` transcendental functions or to NaN (MLIR folds ``math.exp`` and
``0.0 / 0.0``); ``affine.parallel`` and ``gpu`` ops are left alone (only their operands'
producers are folded) and constants are not hoisted out of ``gpu.launch``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from affine_ir import FuncOp, ModuleOp, Operation, Value
from affine_ir.attributes import IntegerAttr
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineMaxOp,
    AffineMinOp,
    _AccessOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.types import index

from ..errors import TransformError
from ..pass_base import Pass, PassContext, option, register_pass
from .canonicalize_fold import fold_op, make_constant, swap_commutative
from .canonicalize_loops import (
    erase_unused_iter_args,
    fold_empty_loop,
    fold_if,
    promote_if_single_iteration,
    remove_if_zero_trip,
    trip_count_range,
)
from .canonicalize_maps import canonical_map, canonical_set
from .canonicalize_ranges import RangeContext
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
    ("empty_loops", "folded {} empty loops"), ("iter_args", "removed unused iter_args of {} loops"),
    ("ifs", "folded {} affine.if"), ("dead", "removed {} dead ops"), ("merged", "merged {} duplicate constants"),
    ("hoisted", "hoisted {} constants"),
)


def has_side_effects(op: Operation) -> bool:
    """Whether ``op`` (with what it holds) may write memory or do anything but compute its results
    (the complement of :func:`transforms.cleanup.dce.has_only_read_effects`)."""
    return not has_only_read_effects(op)


# ----------------------------------------------------------------------------------------
# Map sites
# ----------------------------------------------------------------------------------------

def _composes(ctx: RangeContext, operands) -> bool:
    return any(isinstance(v.owner, AffineApplyOp) for v in operands)


def _canonicalize_access(op: _AccessOp, ctx: RangeContext, stats: Counter) -> bool:
    m, ops = canonical_map(ctx, op.map, op.indices, "list")
    before = (op.map, op.indices)
    if m == before[0] and tuple(ops) == before[1]:
        return False
    composed = _composes(ctx, op.indices)
    op.set_access(m, ops)
    if (op.map, op.indices) == before:
        return False
    stats["composed" if composed else "maps"] += 1
    return True


def simplify_loop_bounds(loop: AffineForOp, ctx: RangeContext | None = None, stats: Counter | None = None) -> bool:
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
    composed = _composes(ctx, loop.lower_bound_operands + loop.upper_bound_operands)
    loop.set_bounds(lb, lbo, ub, ubo)
    stats["composed" if composed else "maps"] += 1
    return True


def _replace_op(op: Operation, value: Value) -> None:
    op.results[0].replace_all_uses_with(value)
    op.erase()


def _constant_before(op: Operation, attr) -> Value:
    c = make_constant(attr, op.location)
    op.parent.insert_before(op, c)
    return c.results[0]


def _canonicalize_map_value(op: Operation, ctx: RangeContext, stats: Counter) -> bool:
    """affine.apply/min/max: canonical map; fold to a constant, an operand, or an apply."""
    kind = {"affine.apply": "list", "affine.min": "min", "affine.max": "max"}[op.name]
    m, ops = canonical_map(ctx, op.map, op.operands, kind)
    changed = False
    if (m, tuple(ops)) != (op.map, op.operands):
        stats["composed" if _composes(ctx, op.operands) else "maps"] += 1
        op.attributes["map"] = m
        op.set_operands(ops)
        changed = True
    c = m.single_constant()
    if c is not None:
        _replace_op(op, _constant_before(op, IntegerAttr(c, index)))
        stats["folded"] += 1
        return True
    if m.num_results == 1:
        e = m.results[0]
        if e.as_dim() == 0 or e.as_symbol() == 0:
            _replace_op(op, ops[0])
            stats["simplified"] += 1
            return True
        if op.name != "affine.apply":
            new = AffineApplyOp(m, ops, location=op.location, name_hint=op.results[0].name_hint)
            op.parent.insert_before(op, new)
            _replace_op(op, new.results[0])
            stats["simplified"] += 1
            return True
    return changed


def _canonicalize_if(op: AffineIfOp, ctx: RangeContext, stats: Counter) -> bool:
    s, ops = canonical_set(ctx, op.condition, op.operands)
    changed = False
    if (s, tuple(ops)) != (op.condition, op.operands):
        stats["composed" if _composes(ctx, op.operands) else "maps"] += 1
        op.attributes["condition"] = s
        op.set_operands(ops)
        changed = True
    if fold_if(op):
        stats["ifs"] += 1
        return True
    return changed


def _canonicalize_loop(loop: AffineForOp, ctx: RangeContext, stats: Counter) -> bool:
    changed = simplify_loop_bounds(loop, ctx, stats)
    if remove_if_zero_trip(loop, ctx):
        stats["zero_trip"] += 1
        return True
    if promote_if_single_iteration(loop, ctx):
        stats["promoted"] += 1
        return True
    if fold_empty_loop(loop, ctx):
        stats["empty_loops"] += 1
        return True
    if erase_unused_iter_args(loop):
        stats["iter_args"] += 1
        return True
    return changed


# ----------------------------------------------------------------------------------------
# Scalar folding
# ----------------------------------------------------------------------------------------

def fold_constant_operands(op: Operation, stats: Counter | None = None) -> bool:
    """Fold ``op`` if it is a scalar ``arith``/``math`` op that folds (all operands constant, an
    identity, a select on a constant): its uses take the folded value and it is erased.
    Exactly the interpreter's semantics (see :mod:`.canonicalize_fold`). Returns whether it changed.

    ``%c = arith.addi %c2, %c3 : i32`` -> ``%c = arith.constant 5 : i32``;
    ``%y = arith.mulf %x, %one : f32`` -> uses of ``%y`` use ``%x``.
    """
    stats = stats if stats is not None else Counter()
    swapped = swap_commutative(op)
    folded = fold_op(op)
    if folded is None:
        if swapped:
            stats["simplified"] += 1
        return swapped
    if folded is op.results[0]:  # rewritten in place (constants reassociated)
        stats["simplified"] += 1
    elif isinstance(folded, Value):
        _replace_op(op, folded)
        stats["simplified"] += 1
    else:
        _replace_op(op, _constant_before(op, folded))
        stats["folded"] += 1
    return True


# ----------------------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------------------

def _rewrite(op: Operation, ctx: RangeContext, stats: Counter) -> bool:
    if is_trivially_dead(op):
        op.erase()
        stats["dead"] += 1
        return True
    if isinstance(op, (AffineApplyOp, AffineMinOp, AffineMaxOp)):
        return _canonicalize_map_value(op, ctx, stats)
    if isinstance(op, _AccessOp):
        return _canonicalize_access(op, ctx, stats)
    if isinstance(op, AffineForOp):
        return _canonicalize_loop(op, ctx, stats)
    if isinstance(op, AffineIfOp):
        return _canonicalize_if(op, ctx, stats)
    if op.name.startswith(("arith.", "math.")) and op.name != "arith.constant":
        return fold_constant_operands(op, stats)
    return False


def _sweep_block(block, ctx: RangeContext, stats: Counter) -> bool:
    changed = False
    for op in list(block.ops):
        if op.parent is not block:
            continue  # erased or moved by an earlier rewrite
        for region in op.regions:
            for b in region.blocks:
                changed |= _sweep_block(b, ctx, stats)
        if op.parent is block:
            changed |= _rewrite(op, ctx, stats)
    return changed


def _sweep(root: Operation, stats: Counter) -> bool:
    ctx = RangeContext()
    changed = False
    for region in root.regions:
        for b in region.blocks:
            changed |= _sweep_block(b, ctx, stats)
    if not isinstance(root, (FuncOp, ModuleOp)) and root.parent is not None:
        changed |= _rewrite(root, ctx, stats)
    return changed


def compose_affine_maps(root: Operation) -> bool:
    """Fold ``affine.apply`` ops under ``root`` into the affine accesses, bounds and applies that
    use them (and simplify those maps), erasing applies left unused; nothing else changes.
    What a transform that introduces applies (a promoted loop's IV) calls on what it made.
    Returns whether anything changed."""
    ctx, stats = RangeContext(), Counter()
    changed = False
    for op in list(root.walk()):
        if op.parent is None:
            continue
        if isinstance(op, AffineApplyOp):
            changed |= _canonicalize_map_value(op, ctx, stats)
        elif isinstance(op, _AccessOp):
            changed |= _canonicalize_access(op, ctx, stats)
        elif isinstance(op, AffineForOp):
            changed |= simplify_loop_bounds(op, ctx, stats)
    for op in reversed(list(root.walk())):
        if isinstance(op, AffineApplyOp) and op.parent is not None and not op.results[0].uses:
            op.erase()
            changed = True
    return changed


def _hoistable(c: ConstantOp, func: FuncOp) -> bool:
    """Constants with no other attribute, nested only in affine loops/ifs of ``func``."""
    if set(c.attributes) != {"value"}:
        return False
    for a in c.ancestors():
        if a is func:
            return True
        if a.name not in ("affine.for", "affine.if", "affine.parallel"):
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
    what ``op`` computed; running it again changes nothing (random programs need at most 6
    sweeps; ``max_iterations`` bounds them). ``stats`` (a Counter) receives counts by kind
    (``folded``, ``composed``, ``promoted``...).

    A loop given as ``op`` may itself be removed or inlined (then its parent holds the result).

    Example::

        %c4 = arith.constant 4 : index                    affine.for %i = 0 to 16 {
        affine.for %i = 0 to 16 {                   ->      %v = affine.load %A[%i floordiv 4]
          %a = affine.apply (d0)[s0] -> (d0 floordiv s0)(%i)[%c4]
          %v = affine.load %A[%a]
    """
    return _canonicalize(op, stats if stats is not None else Counter(), max_iterations)[0]


def _canonicalize(op: Operation, stats: Counter, max_iterations: int) -> tuple[bool, bool]:
    """(changed, converged)."""
    changed_any = False
    for _ in range(max(1, max_iterations)):
        changed = _sweep(op, stats)
        for f in _functions(op):
            changed |= hoist_constants(f, stats)
        if not changed:
            return changed_any, True
        changed_any = True
    return changed_any, False


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

    max_iterations: int = option(10, "sweeps over the function at most (MLIR: greedy driver iterations)")
    test_convergence: bool = option(False, "refuse (record) a function that has not converged after "
                                           "max-iterations sweeps")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if func.is_declaration:
            return
        stats: Counter = Counter()
        _, converged = _canonicalize(func, stats, self.max_iterations)
        ctx.note(func, summary_text(stats))
        if self.test_convergence and not converged:
            ctx.refused(func, TransformError(self.name, f"@{func.sym_name} did not converge in "
                                                        f"{self.max_iterations} iterations"))
