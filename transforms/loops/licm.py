"""Loop-invariant code motion for ``affine.for``: ``affine-loop-invariant-code-motion``.

An op directly in a loop's body moves in front of the loop when it computes the same thing
in every iteration:

- a **pure op** (``Pure``: arith, math, ``affine.apply/min/max``, constants, ``memref.dim``...)
  whose operands are defined outside the loop or by ops hoisted before it, when it is
  speculatable (``op.is_speculatable()``) and does not declare ``traps_on_zero_divisor`` with
  a divisor that may be zero (integer division and remainder: not speculated);
- a **load** (an op whose only memory effects READ named memrefs: ``affine.load``,
  ``affine.vector_load``, ``memref.load``...) with such operands, when no op in the loop writes
  or frees what it reads and the loop holds no op of unknown effect (``memory_effects()`` is
  None: ``func.call``, unregistered ops, ``gpu.barrier``, region ops such as ``gpu.launch``);
- a **store** (an op whose only effects WRITE named memrefs) of such a value to such an address
  when it is the only op of the loop using its memref (storing the same value to the same
  element once or many times is the same);
- a whole **region op whose effects are those of its contents** (``RecursiveMemoryEffects``:
  ``affine.if``, ``affine.for``, ``affine.parallel``) whose contents are all of the above (their
  values from outside the op defined outside the loop): the guard or inner loop moves with
  what it protects. Ops inside an ``affine.if`` never leave it on their own: the guard may be
  what keeps an access in bounds.

Loops are visited innermost first, so an op can climb out of several loops. The zero-trip
rule: a load or store (or an op containing one) leaves a loop only when the loop runs at
least once every time it is reached (:func:`analysis.always_runs`, exact): hoisting out of a
loop that may not run would execute an access that did not happen (out of bounds, or a
write that changes the result). Pure ops are always hoisted (they have no effect).

Differences from MLIR (``AffineLoopInvariantCodeMotion.cpp``, compared on
``mlir/test/Dialect/Affine/affine-loop-invariant-code-motion.mlir`` in ``tests/test_licm.py``):
the output has the same structure on every input of it that we parse (``iree-opt``, LLVM 24:
it too keeps loads and stores in loops that may not run; older MLIR hoisted them). We
decide "runs at least once" exactly with isl (``%ii to min(%ii + 32, %N)`` under its tile
loop runs), MLIR from constant trip counts. Calls, unregistered ops and barriers in a loop
keep all its memory accesses in place (MLIR asks their effect interfaces, and so do we: an op
added later is treated by its traits and declared effects).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.affine_symbols import constant_index_value
from affine_ir.traits import EffectKind, IsTerminator, MemoryEffect, NoMemoryEffect, RecursiveMemoryEffects
from affine_ir.types import MemRefType

from ..loop_utils import defined_in, enclosing_function, loop_name
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["LoopInvariantCodeMotion", "hoist_loop_invariants", "hoist_invariants_in"]

PASS = "affine-loop-invariant-code-motion"


def _own_effects(op: Operation) -> tuple[MemoryEffect, ...] | None:
    """``op``'s memory effects, or None when unknown; None also for an op whose effects are
    those of its regions (their ops are visited on their own)."""
    return None if op.has_trait(RecursiveMemoryEffects) else op.memory_effects()


def _only(op: Operation, kind: EffectKind) -> bool:
    """``op`` has effects, each of ``kind`` on a named memref (a load: READ; a store: WRITE)."""
    effects = _own_effects(op)
    return bool(effects) and all(e.kind is kind and e.value is not None for e in effects)


def _accesses_memory(op: Operation) -> bool:
    """``op`` itself (not through its regions) reads or writes a memref."""
    return any(e.kind in (EffectKind.READ, EffectKind.WRITE) for e in _own_effects(op) or ())


@dataclass
class _LoopFacts:
    """What the ops of one loop do to memory: memrefs written (or freed), how many ops use each
    memref, the first op of unknown effect (``func.call``, ``gpu.barrier``, unregistered ops,
    region ops whose effects are not those of their contents, any op declaring no effects)."""

    written: set[Value]
    users: Counter
    unknown: Operation | None

    @classmethod
    def of(cls, loop: AffineForOp) -> _LoopFacts:
        written: set[Value] = set()
        users: Counter = Counter()
        unknown = None
        for op in loop.walk():
            users.update({v for v in op.operands if isinstance(v.type, MemRefType)})
            if op is loop or op.has_trait(RecursiveMemoryEffects):
                continue
            effects = op.memory_effects()
            changed = [e.value for e in effects or () if e.kind in (EffectKind.WRITE, EffectKind.FREE)]
            if effects is None or any(v is None for v in changed):
                unknown = unknown or op
            written.update(v for v in changed if v is not None)
        return cls(written, users, unknown)

    def can_read(self, op: Operation) -> bool:
        """No op of the loop may write what ``op`` reads."""
        return self.unknown is None and all(e.value not in self.written for e in op.memory_effects())

    def can_write(self, op: Operation) -> bool:
        """``op`` is the only op of the loop using the memrefs it writes."""
        return self.unknown is None and all(self.users[e.value] == 1 for e in op.memory_effects())


def _traps(op: Operation) -> bool:
    """An integer division or remainder whose divisor may be zero (the op says it traps then)."""
    if not getattr(op, "traps_on_zero_divisor", False):
        return False
    return constant_index_value(op.operands[1]) in (None, 0)


class _Hoister:
    """Decides which ops of one loop's body are invariant, in body order."""

    def __init__(self, loop: AffineForOp, runs: bool):
        self.loop = loop
        self.runs = runs  # the loop runs at least once whenever reached: loads may move
        self.facts = _LoopFacts.of(loop)
        self.hoisted: set[Operation] = set()

    def available(self, v: Value) -> bool:
        owner = v.owner
        return not defined_in(v, self.loop) or (isinstance(owner, Operation) and owner in self.hoisted)

    def invariant(self, op: Operation) -> bool:
        if op.has_trait(IsTerminator):
            return False
        if op.has_trait(RecursiveMemoryEffects):
            return self._invariant_region_op(op)
        if not all(self.available(v) for v in op.operands):
            return False
        return self._movable(op)

    def _movable(self, op: Operation) -> bool:
        """``op`` alone may run once before the loop instead of in each iteration."""
        if op.regions:
            return False
        if _only(op, EffectKind.READ):
            return self.runs and self.facts.can_read(op)
        if _only(op, EffectKind.WRITE):
            return self.runs and self.facts.can_write(op)
        return op.has_trait(NoMemoryEffect) and op.is_speculatable() and not _traps(op)

    def _invariant_region_op(self, op: Operation) -> bool:
        for inner in op.walk():
            if not all(self.available(v) or defined_in(v, op) for v in inner.operands):
                return False
            structured = inner.has_trait(RecursiveMemoryEffects) or inner.has_trait(IsTerminator)
            if inner is not op and not structured and not self._movable(inner):
                return False
        return True


def hoist_loop_invariants(loop: AffineForOp, runs: bool | None = None) -> int:
    """Move the loop-invariant ops of ``loop``'s body (see the module docstring) in front of
    the loop, keeping their order; returns how many ops moved (a moved ``affine.if`` or
    ``affine.for`` counts once). ``runs``: whether the loop runs at least once each time it
    is reached (computed exactly when not given); loads move only then.

    Guarantees: the program computes the same values; moved ops keep their locations.

    Before::

        affine.for %i = 0 to 10 {
          %c = arith.constant 2.0 : f32
          %s = arith.mulf %c, %x : f32
          %v = affine.load %B[%j] : memref<10xf32>
          affine.store %s, %A[%i] : memref<10xf32>
        }

    After::

        %c = arith.constant 2.0 : f32
        %s = arith.mulf %c, %x : f32
        %v = affine.load %B[%j] : memref<10xf32>
        affine.for %i = 0 to 10 {
          affine.store %s, %A[%i] : memref<10xf32>
        }
    """
    if runs is None:
        runs = analysis.always_runs(loop)
    return len(_hoist(loop, runs))


def _hoist(loop: AffineForOp, runs: bool) -> list[Operation]:
    h = _Hoister(loop, runs)
    moved = []
    for op in list(loop.body.ops):
        if h.invariant(op):
            h.hoisted.add(op)
            moved.append(op)
    block = loop.parent
    for op in moved:
        op.detach()
        block.insert_before(loop, op)
    return moved


def hoist_invariants_in(root: Operation) -> list[tuple[AffineForOp, list[Operation]]]:
    """Hoist invariants out of every ``affine.for`` under ``root`` (a function or an op in
    one), innermost loops first (so ops climb out of several loops); returns ``(loop, ops
    moved)`` for each loop that changed. One Scop of the function serves every zero-trip check.

    Before::

        affine.for %i = 0 to 10 {
          affine.for %j = 0 to 10 {
            %s = arith.addf %x, %x : f32
            affine.store %s, %A[%i, %j] : memref<10x10xf32>
          }
        }

    After (``%s`` left ``%j``, then ``%i``)::

        %s = arith.addf %x, %x : f32
        affine.for %i = 0 to 10 {
          affine.for %j = 0 to 10 {
            affine.store %s, %A[%i, %j] : memref<10x10xf32>
          }
        }
    """
    done = []
    scop: list[analysis.Scop] = []
    for loop in reversed([op for op in root.walk() if isinstance(op, AffineForOp)]):
        runs = False
        trips = analysis.constant_trip_count(loop)
        if trips is not None:  # constant bounds: no need for the function's Scop
            runs = trips > 0
        elif any(_accesses_memory(op) for op in loop.body.walk()):
            if not scop:
                scop.append(analysis.Scop(enclosing_function(loop)))
            runs = analysis.always_runs(loop, scop[0])
        moved = _hoist(loop, runs)
        if moved:
            done.append((loop, moved))
    return done


@register_pass
@dataclass(frozen=True)
class LoopInvariantCodeMotion(Pass):
    """``affine-loop-invariant-code-motion``: see the module docstring."""

    name = "affine-loop-invariant-code-motion"
    summary = "Hoist loop-invariant ops (pure ops, loads of memrefs not written in the loop) out of affine.for"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        for loop, moved in hoist_invariants_in(func):
            n = len(moved)
            mem = sum(_accesses_memory(o) for op in moved for o in op.walk())
            ctx.applied(loop, f"hoisted {n} loop-invariant op{'s' if n != 1 else ''} ({mem} memory "
                              f"access{'es' if mem != 1 else ''}) out of ({loop_name(loop)})")
