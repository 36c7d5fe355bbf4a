"""Loop-invariant code motion for ``affine.for``: ``affine-loop-invariant-code-motion``.

An op directly in a loop's body moves in front of the loop when it computes the same thing
in every iteration:

- a **pure op** (arith, math, ``affine.apply/min/max``, constants, ``memref.dim``...) whose
  operands are defined outside the loop or by ops hoisted before it; integer division and
  remainder only by a non-zero constant (they trap on zero: not speculated);
- a **load** (``affine.load``, ``affine.vector_load``, ``memref.load``) with such operands,
  when no op in the loop may write its memref (stores, deallocs and other ops taking the
  memref) and the loop holds no op of unknown effect (``func.call``, unregistered ops,
  ``gpu.barrier``, non-affine region ops);
- a **store** (``affine.store``, ``affine.vector_store``) of such a value to such an address
  when it is the only op of the loop using its memref (storing the same value to the same
  element once or many times is the same);
- a whole **``affine.if`` or ``affine.for``** whose contents are all of the above (their
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
keep all its memory accesses in place (MLIR asks their effect interfaces).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation, UnregisteredOp, Value
from affine_ir.dialects.affine import (
    AffineForOp,
    AffineIfOp,
    AffineLoadOp,
    AffineParallelOp,
    AffineStoreOp,
    AffineVectorLoadOp,
    AffineVectorStoreOp,
    AffineYieldOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.func import CallOp
from affine_ir.dialects.gpu import BarrierOp
from affine_ir.dialects.memref import LoadOp
from affine_ir.types import MemRefType

from ..loop_utils import defined_in, enclosing_function, loop_name
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["LoopInvariantCodeMotion", "hoist_loop_invariants", "hoist_invariants_in"]

PASS = "affine-loop-invariant-code-motion"
_READS = (AffineLoadOp, AffineVectorLoadOp, LoadOp)
_WRITES = (AffineStoreOp, AffineVectorStoreOp)
_TRAPPING = frozenset(f"arith.{k}" for k in ("divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi",
                                              "ceildivui"))
_STRUCTURED = (AffineForOp, AffineIfOp, AffineYieldOp)


@dataclass
class _LoopFacts:
    """What the ops of one loop do to memory: memrefs written, how many ops use each memref,
    the first op of unknown effect."""

    written: set[int]
    users: Counter
    unknown: Operation | None

    @classmethod
    def of(cls, loop: AffineForOp) -> _LoopFacts:
        written: set[Value] = set()
        users: Counter = Counter()
        unknown = None
        for op in loop.walk():
            mems = {v for v in op.operands if isinstance(v.type, MemRefType)}
            users.update(mems)
            if op is loop or op.is_pure or op.is_terminator or isinstance(op, _READS):
                continue
            if isinstance(op, (CallOp, UnregisteredOp, BarrierOp)) or \
                    (op.regions and not isinstance(op, (*_STRUCTURED, AffineParallelOp))):
                unknown = unknown or op
            written.update(mems)
        return cls(written, users, unknown)

    def can_read(self, op: Operation) -> bool:
        """No op of the loop may write what ``op`` reads."""
        return self.unknown is None and op.memref not in self.written

    def can_write(self, op: Operation) -> bool:
        """``op`` is the only op of the loop using its memref."""
        return self.unknown is None and self.users[op.memref] == 1


def _traps(op: Operation) -> bool:
    if op.name not in _TRAPPING:
        return False
    divisor = op.operands[1].owner
    return not (isinstance(divisor, ConstantOp) and isinstance(divisor.value, int) and divisor.value != 0)


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
        if op.is_terminator:
            return False
        if isinstance(op, (AffineForOp, AffineIfOp)):
            return self._invariant_region_op(op)
        if not all(self.available(v) for v in op.operands):
            return False
        return self._movable(op)

    def _movable(self, op: Operation) -> bool:
        """``op`` alone may run once before the loop instead of in each iteration."""
        if isinstance(op, _READS):
            return self.runs and self.facts.can_read(op)
        if isinstance(op, _WRITES):
            return self.runs and self.facts.can_write(op)
        return op.is_pure and not op.regions and not _traps(op)

    def _invariant_region_op(self, op: Operation) -> bool:
        for inner in op.walk():
            if not all(self.available(v) or defined_in(v, op) for v in inner.operands):
                return False
            if inner is not op and not isinstance(inner, _STRUCTURED) and not self._movable(inner):
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
        elif any(isinstance(op, (*_READS, *_WRITES)) for op in loop.body.walk()):
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
            mem = sum(isinstance(o, (*_READS, *_WRITES)) for op in moved for o in op.walk())
            ctx.applied(loop, f"hoisted {n} loop-invariant op{'s' if n != 1 else ''} ({mem} memory "
                              f"access{'es' if mem != 1 else ''}) out of ({loop_name(loop)})")
