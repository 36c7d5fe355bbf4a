"""``affine-loop-distribute``: split a loop into one loop per group of statements (loop fission).

The ops of a loop body are grouped by what must stay together: a cycle of dependences between
them (exact, :func:`analysis.dependences` of the loop: carried by it or not), an op whose
result another op uses (unless it can be recomputed in each group: pure ops without regions,
and loads of memrefs nothing in the loop writes). Each group, in an order every dependence
runs forward in (ties in program order), gets a copy of the loop::

    affine.for %i = 0 to %n {                       affine.for %i = 0 to %n {
      affine.store %zero, %tmp[%i]                    affine.store %zero, %tmp[%i]
      affine.for %j ... { tmp[%i] += A[%i, %j] }      affine.for %j ... { tmp[%i] += A[%i, %j] }
      affine.for %j ... { y[%j] += A[%i, %j] * ... }  }
    }                                               affine.for %i = 0 to %n {
                                                      affine.for %j ... { y[%j] += A[%i, %j] * ... }
                                                    }

The first loop is now parallel (only the second carries the sum into ``y``), and the second is
a perfect band that ``affine-loop-permute`` may interchange. Inner loops are distributed first
(``recursive``). Loops with iter_args, ops of unknown effects, and bodies forming one group
are left as they are. Not an upstream MLIR pass (MLIR's affine dialect has fusion only).
"""

from __future__ import annotations

from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.traits import IsTerminator, RecursiveMemoryEffects

from ..errors import TransformError
from ..loop_utils import loop_name
from ..pass_base import Pass, PassContext, option, register_pass

__all__ = ["LoopDistribute", "distribute_loop", "distribution_groups"]

PASS = "affine-loop-distribute"


def _top(op: Operation, body_ops: dict[Operation, int]) -> int | None:
    """The position in the loop body of the body op holding ``op``."""
    while op is not None and op not in body_ops:
        op = op.parent_op
    return None if op is None else body_ops[op]


def _replicable(op: Operation, written: set) -> bool:
    """Whether ``op`` may be computed again in each group using it: pure without regions, or a
    load of a memref nothing in the loop writes."""
    if op.regions:
        return False
    if op.is_pure:
        return True
    return isinstance(op, MemRefAccessInterface) and not op.is_write and op.memref not in written and \
        op.memory_effects() is not None


def distribution_groups(loop: AffineForOp) -> list[list[int]]:
    """The groups of ``loop``'s body ops (positions, terminator excluded) that
    :func:`distribute_loop` makes loops of, in their new order; one group means nothing to split.
    TransformError for a loop with iter_args or with ops of unknown effects."""
    if loop.iter_args:
        raise TransformError(PASS, f"{loop_name(loop)} carries values in iter_args", loops=[loop])
    for x in loop.walk():
        if x.memory_effects() is None and not x.has_trait(RecursiveMemoryEffects):
            raise TransformError(PASS, f"'{x.name}' in {loop_name(loop)} has unknown effects", loops=[loop])
    ops = [x for x in loop.body.ops if not x.has_trait(IsTerminator)]
    pos = {x: k for k, x in enumerate(ops)}
    written = {x.memref for x in loop.walk() if isinstance(x, MemRefAccessInterface) and x.is_write}
    replicable = {k for k, x in enumerate(ops) if _replicable(x, written)}
    n = len(ops)
    edges: list[set[int]] = [set() for _ in range(n)]
    for k in range(n):  # an op whose result another uses (through replicable ops) stays with it
        if k in replicable:
            continue
        for j in _users_through_replicas(k, ops, pos, replicable):
            edges[k].add(j)
            edges[j].add(k)
    for d in analysis.dependences(loop):
        a, b = _top(d.src, pos), _top(d.dst, pos)
        if a is not None and b is not None and a != b and d.kind != "RAR":
            edges[a].add(b)
    comps = _strongly_connected(n, edges)
    keep = [k for k in range(n) if k not in replicable]
    groups = _order([c for c in comps if any(k not in replicable for k in c)], edges)
    if not keep:
        return [list(range(n))]
    return [sorted(set(g) | _replicas(g, ops, pos, replicable)) for g in groups]


def _users_through_replicas(k: int, ops: list[Operation], pos: dict, replicable: set[int]) -> set[int]:
    """The body ops (positions, not replicable) using a result of op ``k``, directly or through
    replicable ops."""
    out: set[int] = set()
    seen = {k}
    todo = [k]
    while todo:
        for r in ops[todo.pop()].results:
            for use in r.uses:
                j = _top(use.op, pos)
                if j is None or j in seen:
                    continue
                seen.add(j)
                if j in replicable:
                    todo.append(j)
                else:
                    out.add(j)
    return out


def _replicas(group: list[int], ops: list[Operation], pos: dict, replicable: set[int]) -> set[int]:
    """The replicable ops whose results ``group`` uses (transitively)."""
    need: set[int] = set()
    todo = list(group)
    while todo:
        k = todo.pop()
        for x in ops[k].walk():
            for v in x.operands:
                owner = v.owner
                j = pos.get(owner) if isinstance(owner, Operation) else None
                if j is not None and j in replicable and j not in need and j not in group:
                    need.add(j)
                    todo.append(j)
    return need


def _strongly_connected(n: int, edges: list[set[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components of the graph on ``range(n)``."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    out: list[list[int]] = []

    def visit(v: int) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in range(n):
        if v not in index:
            visit(v)
    return out


def _order(comps: list[list[int]], edges: list[set[int]]) -> list[list[int]]:
    """The components in an order where every edge runs forward; among those ready, the one whose
    first op comes first."""
    where = {k: c for c, comp in enumerate(comps) for k in comp}
    preds = [set() for _ in comps]
    for c, comp in enumerate(comps):
        for k in comp:
            for j in edges[k]:
                if j in where and where[j] != c:
                    preds[where[j]].add(c)
    done: list[int] = []
    left = set(range(len(comps)))
    while left:
        c = min((c for c in left if preds[c] <= set(done)), key=lambda c: comps[c][0])
        done.append(c)
        left.discard(c)
    return [comps[c] for c in done]


def distribute_loop(loop: AffineForOp, recursive: bool = True) -> list[AffineForOp]:
    """Split ``loop`` into one loop per :func:`distribution_groups` group (after distributing the
    loops in its body when ``recursive``), placed where it was; returns the loops (``[loop]``
    when there is nothing to split).

    Guarantees: the program computes exactly what it computed (every dependence between the
    groups runs from an earlier loop to a later one; each op runs once per iteration, replicated
    ops compute the same values). TransformError (IR unchanged) for iter_args or unknown effects."""
    groups = distribution_groups(loop)  # checks before anything changes
    if recursive:
        for x in list(loop.body.ops):
            if isinstance(x, AffineForOp) and not x.iter_args:
                try:
                    distribute_loop(x, True)
                except TransformError:
                    pass
        groups = distribution_groups(loop)
    if len(groups) < 2:
        return [loop]
    out: list[AffineForOp] = []
    for g in groups:
        copy = loop.clone()
        ops = [x for x in copy.body.ops if not x.has_trait(IsTerminator)]
        for k in reversed(range(len(ops))):
            if k not in g:
                ops[k].erase()
        loop.parent.insert_before(loop, copy)
        out.append(copy)
    loop.erase()
    return out


@register_pass
@dataclass(frozen=True)
class LoopDistribute(Pass):
    """``affine-loop-distribute``: see the module docstring."""

    name = PASS
    summary = "Split loops into one loop per group of dependent statements (loop fission)"
    recursive: bool = option(True, "distribute the loops inside each loop first")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        for loop in [x for x in func.body.ops if isinstance(x, AffineForOp)]:
            try:
                loops = distribute_loop(loop, self.recursive)
            except TransformError as e:
                ctx.refused(loop, e)
                continue
            if len(loops) > 1:
                ctx.applied(loops[0], f"distributed {loop_name(loops[0])} into {len(loops)} loops")
