"""Privatizable buffers: a local buffer that each iteration of a loop writes before it reads.

Fusion leaves such buffers behind (MLIR's private memrefs: a row of attention scores, a
softmax row maximum), allocated once before the fused nest. Every iteration of the loops
around their accesses stores into the same buffer, so the dependence analysis sees WAW and
WAR dependences carried by those loops and nothing is parallel. When every read of the
buffer reads an element stored earlier *in the same iteration* of a loop (exact, isl: the
read instances are a subset of the union, over the stores, of the read instances a store of
that iteration reaches), no value flows between iterations of that loop and none flows in
from before it: each iteration may have a buffer of its own (``affine-privatize`` allocates
it in the loop's body, after which :func:`analysis.dependences` sees no dependence across
iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import FuncOp, Operation, Value
from affine_ir.traits import allocating_op, only_frees_memory

from .dependences import DependenceAnalysis
from .fusion import reads_covered_within

__all__ = ["PrivateScope", "private_scope"]


@dataclass(frozen=True)
class PrivateScope:
    """``memref`` may be allocated anew in each iteration of ``loop`` (an affine.for or
    affine.parallel enclosing every access of it), the innermost such loop; ``depth`` is the
    number of IVs from the function down to and including ``loop``'s."""

    memref: Value
    loop: Operation
    depth: int


def private_scope(memref: Value, analysis: DependenceAnalysis | None = None) -> PrivateScope | None:
    """The innermost loop in each of whose iterations ``memref`` (a buffer a ``memref.alloc`` of
    the function allocates) is written before it is read, or None: not a local allocation, used
    by an op other than affine loads and stores and the ops that free it, accessed outside any
    loop or in no common loop, or some read sees a value stored by another iteration (or from
    before the loop) of every enclosing loop. ``analysis``: the function's, to reuse.

    Guarantees: when a scope is returned, allocating the buffer at the start of ``loop``'s body
    (and freeing it at its end) computes exactly what the program computed."""
    alloc = allocating_op(memref)
    if alloc is None:
        return None
    func = next((a for a in alloc.ancestors() if isinstance(a, FuncOp)), None)
    if func is None:
        return None
    if analysis is None or analysis.root is not func:
        analysis = DependenceAnalysis(func)
    stmts = [s for s in analysis.statements if s.memref is memref and not only_frees_memory(s.op)]
    accessing = {s.op for s in stmts}
    if not stmts or any(u.op not in accessing and not only_frees_memory(u.op) for u in memref.uses):
        return None
    if any(not s.is_affine or s.opaque or s.in_unknown_region for s in stmts):
        return None
    common = _common_loops(stmts)
    for loop, depth in reversed(common):
        if loop.is_ancestor_of(alloc):
            break
        if reads_covered_within(analysis, loop, memref, depth):
            return PrivateScope(memref, loop, depth)
    return None


def _common_loops(stmts) -> list[tuple[Operation, int]]:
    """The loop ops enclosing every statement of ``stmts``, outermost first, each with the number
    of IVs down to and including its own."""
    prefix = stmts[0].loops
    for s in stmts[1:]:
        n = 0
        for a, b in zip(prefix, s.loops):
            if a.op is not b.op or a.index != b.index:
                break
            n += 1
        prefix = prefix[:n]
    out: list[tuple[Operation, int]] = []
    for k, lp in enumerate(prefix):
        if lp.index == len(lp.op.induction_vars) - 1:
            out.append((lp.op, k + 1))
    return out
