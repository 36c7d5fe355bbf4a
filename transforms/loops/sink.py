"""Sinking ops into parallel bands: ``affine-loop-sink`` (not an upstream MLIR pass; MLIR's
``control-flow-sink`` moves ops into regions of branch ops, this moves them into loops).

Loop-invariant code motion hoists what an inner loop computes once per outer iteration
(``arith.index_cast %i``, a load of ``A[%i]``) between the loops, and a band with an op between
its loops is not perfect any more: ``gpu-map`` maps only the outer loop, each GPU thread running
a whole inner loop (uncoalesced, few threads). For a band whose loops are both parallel this
pass moves those ops back to the top of the inner loop's body, so the band is perfect again;
mapped, every thread computes them once, as before::

    affine.for %i = 0 to %n {                        affine.for %i = 0 to %n {
      %c = arith.index_cast %i : index to i32           affine.for %j = 0 to %n {
      %a = affine.load %A[%i] : memref<?xf32>   ->        %c = arith.index_cast %i : index to i32
      affine.for %j = 0 to %n {                           %a = affine.load %A[%i] : memref<?xf32>
        ... %c, %a ...                                    ... %c, %a ...

Guarantees: the program computes exactly what it did. An op moves only when the outer body holds
nothing else than such ops before the one inner loop (and its terminator), every use of its
results is inside the inner loop's body (or by another op that moves), and it has no memory
effect or only reads memrefs that the inner loop neither writes nor frees (so every iteration
reads what the op read before; an inner loop that runs no iteration now runs it no time: an op
without effects, or a read, is not missed). Both loops must be parallel
(:func:`analysis.is_parallel`): a sequential inner loop would repeat the ops in one thread.
Bands are followed from each top-level loop downwards; ops
inside ``gpu.launch`` and other non-loop regions are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.traits import EffectKind, IsTerminator, written_values

from ..loop_utils import loop_name, top_level_loops
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["LoopSink", "sink_into_inner_loop", "sinkable_ops"]

PASS = "affine-loop-sink"


def _reads_only(op: Operation, written: tuple | None) -> bool:
    effects = op.memory_effects()
    if effects is None or op.regions:
        return False
    if not effects:
        return True
    return written is not None and all(e.kind is EffectKind.READ and e.value is not None and e.value not in written
                                       for e in effects)


def sinkable_ops(outer: AffineForOp) -> list[Operation] | None:
    """The ops between ``outer`` and the one loop of its body that :func:`sink_into_inner_loop`
    would move (see the module docstring), or None when the body is not such a band level (no
    single inner loop, an op after it, an op that cannot move). Changes nothing."""
    ops = list(outer.body.ops)
    if outer.iter_args or not ops or not ops[-1].has_trait(IsTerminator) or ops[-1].operands:
        return None
    loops = [k for k, op in enumerate(ops[:-1]) if isinstance(op, AffineForOp)]
    if len(loops) != 1 or loops[0] != len(ops) - 2:
        return None
    inner = ops[loops[0]]
    before = ops[:loops[0]]
    if not before:
        return []
    written = written_values(inner)
    moving = set(before)
    for op in before:
        if not _reads_only(op, written):
            return None
        for r in op.results:
            for use in r.uses:
                if use.op not in moving and (use.op is inner or not inner.is_ancestor_of(use.op)):
                    return None
    return before


def sink_into_inner_loop(outer: AffineForOp) -> int:
    """Move :func:`sinkable_ops` of ``outer`` to the top of its inner loop's body, in order;
    the number moved (0: nothing changed). Legality is the caller's or :class:`LoopSink`'s
    parallelism check; the move itself keeps every value and every read (module docstring)."""
    ops = sinkable_ops(outer)
    if not ops:
        return 0
    inner = list(outer.body.ops)[-2]
    for k, op in enumerate(ops):
        op.detach()
        inner.body.insert(k, op)
    return len(ops)


@register_pass
@dataclass(frozen=True)
class LoopSink(Pass):
    """Move ops between the loops of parallel bands into the inner loop, so the band is perfect
    (see the module docstring)."""

    name = PASS
    summary = "Sink ops between two parallel loops into the inner one (perfect bands for the GPU mapping)"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        for top in top_level_loops(func):
            loop = top
            while isinstance(loop, AffineForOp) and analysis.is_parallel(loop):
                ops = sinkable_ops(loop)
                if ops is None:
                    break
                inner = list(loop.body.ops)[-2]
                if not analysis.is_parallel(inner):
                    break
                if ops:
                    moved = sink_into_inner_loop(loop)
                    ctx.applied(loop, f"sank {moved} op{'s' if moved != 1 else ''} from {loop_name(loop)} into "
                                      f"{loop_name(inner)} (the band is perfect)")
                loop = inner
