"""Sinking ops into the parallel loops that use them: ``affine-loop-sink`` (not an upstream MLIR
pass; MLIR's ``control-flow-sink`` moves ops into regions of branch ops, this moves them into loops).

Loop-invariant code motion hoists what an inner loop computes once per outer iteration
(``arith.index_cast %i``, a load of ``A[%i]``) between the loops. On the GPU that costs twice: a
band with an op between its loops is not perfect, so ``gpu-map`` maps only the outer loop (each
thread running a whole inner loop, uncoalesced, few threads); and a device value in the body of a
time loop the host runs (PolyBench fdtd-2d's load of ``fict[%t]`` and its ``vector.broadcast``)
makes a 1x1x1 launch merged with the sweep using it. This pass moves such an op, in the function
body and in every block of a loop or an ``affine.if``, into the one later *parallel* loop (:func:`analysis.is_parallel`)
holding all its uses, at the top of that loop's body; mapped, every thread computes it once::

    affine.for %i = 0 to %n {                        affine.for %i = 0 to %n {
      %c = arith.index_cast %i : index to i32           affine.for %j = 0 to %n {
      %a = affine.load %A[%i] : memref<?xf32>   ->        %a = affine.load %A[%i] : memref<?xf32>
      affine.for %j = 0 to %n {                           %c = arith.index_cast %i : index to i32
        ... %c, %a ...                                    ... %c, %a ...

Guarantees: the program computes exactly what it did. An op moves only when it has no regions
and no memory effect or only reads named memrefs, every use of its results is inside the
loop's body (not its bounds), and no op from it to the loop (the loop included) writes or frees
what it reads: every iteration reads what the op read before, and a loop running no iteration
skips an op without effect or a read. Ops are visited last first, so chains move together. A
sequential loop gets nothing (it would repeat the op in one thread); ops inside ``gpu.launch``
are left alone. The CPU pipeline does not run it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.traits import EffectKind, KernelScope, written_values

from ..loop_utils import loop_name
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["LoopSink", "sink_into_using_loops"]

PASS = "affine-loop-sink"


def _top_user(block, op: Operation) -> Operation | None:
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def _writes_any(op: Operation, values: list) -> bool:
    written = written_values(op)
    return written is None or any(v in written for v in values)


def sink_into_using_loops(block, accept: Callable[[AffineForOp], bool] = lambda loop: True
                          ) -> list[tuple[Operation, AffineForOp]]:
    """Move each op of ``block`` that has no memory effect or only reads named memrefs (no
    regions) and whose every use is inside the body of one later ``affine.for`` of ``block`` that
    ``accept`` takes, to the top of that loop's body, when no op from it to the loop (the loop
    included) writes or frees what it reads. Ops are visited last first, so a chain (a load, the
    ``vector.broadcast`` of it) moves together. Returns the (op, loop) pairs moved, in that order.
    The program computes exactly what it did (each use reads the same value; a loop running no
    iteration skips an op without effect or a read)."""
    ops = list(block.ops)
    position = {op: k for k, op in enumerate(ops)}
    moved: list[tuple[Operation, AffineForOp]] = []
    for op in reversed(ops):
        effects = op.memory_effects()
        if isinstance(op, AffineForOp) or op.regions or not op.results or effects is None:
            continue
        if any(e.kind is not EffectKind.READ or e.value is None for e in effects):
            continue
        uses = [u for r in op.results for u in r.uses]
        users = {_top_user(block, u.op) for u in uses}
        if len(users) != 1:
            continue
        (loop,) = users
        if not isinstance(loop, AffineForOp) or any(u.op is loop for u in uses) or not accept(loop):
            continue
        reads = [e.value for e in effects]
        if reads and any(_writes_any(x, reads) for x in ops[position[op] + 1: position[loop] + 1]):
            continue
        op.detach()
        loop.body.insert(0, op)
        moved.append((op, loop))
    return moved


@register_pass
@dataclass(frozen=True)
class LoopSink(Pass):
    """Move ops used only in one later parallel loop into it (see the module docstring)."""

    name = PASS
    summary = "Sink ops used only in one parallel loop into it (perfect bands for the GPU mapping)"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        parallel: dict[AffineForOp, bool] = {}

        def is_parallel(loop: AffineForOp) -> bool:
            if loop not in parallel:
                parallel[loop] = analysis.is_parallel(loop)
            return parallel[loop]

        blocks = [func.body] + [block for op in func.walk() if op.regions
                                and not op.has_trait(KernelScope)
                                and not any(a.has_trait(KernelScope) for a in op.ancestors())
                                for region in op.regions for block in region.blocks]
        for block in blocks:
            moved = sink_into_using_loops(block, is_parallel)
            for loop in dict.fromkeys(loop for _, loop in moved):
                k = sum(1 for _, x in moved if x is loop)
                ctx.applied(loop, f"sank {k} op{'s' if k != 1 else ''} used only in {loop_name(loop)} into it")
