"""``gpu-sink-ifs``: move ``affine.if`` ops whose condition the host could decide into the loops they
wrap, so ``gpu-map`` sees the loops (issue 17).

``gpu-map`` makes one launch of each top-level nest and of each run of statements; an ``affine.if``
is a statement, so a parallel loop inside one ran on one thread. For each ``affine.if`` at the top
level of a function, or of the body of a loop the host may run (an
``affine.for`` without iter_args with host bounds, recursively), whose condition operands are host
values there (index arguments, constants, such loops' IVs, affine.apply of them) and whose regions
hold a loop, this pass

0. passes its results, if any (integer or float scalars only), through one-element buffers
   (:func:`.demote_scalars.demote_if_results`: a loop of at most one iteration that canonicalize
   turned into an if keeps its iter_args as results);
   and moves the host index values it computes (``affine.max`` of host values) before it;
1. splits it: ``if c {A; B} else {C}`` -> ``if c {A}; if c {B}; if c {} else {C}``, where no value
   of ``A`` is used by ``B`` (the condition is a pure function of SSA values defined before the
   if: each part sees the same outcome);
2. merges an ``if c1 { if c2 {X} }`` (no else on either) into ``if c1 and c2 {X}``;
3. sinks an if whose one branch holds only an ``affine.for`` without iter_args into it:
   ``if c { for i = lb to ub {S} }`` -> ``for i = lb to ub { if c {S} }`` (legal: ``c``, ``lb`` and
   ``ub`` are defined before the if, so the loop runs ``S`` under ``c`` for the same ``i``), then
   goes on in the loop's body.

The program computes exactly what it computed: every op runs under the same condition, for the
same values, in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import FuncOp, IntegerSet, Operation
from affine_ir.core import Block
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineYieldOp
from affine_ir.interfaces import LoopLikeOpInterface
from affine_ir.traits import AffineMapValue, ConstantLike

from ..loop_utils import value_name
from ..pass_base import Pass, PassContext, register_pass
from .demote_scalars import demote_if_results, is_demotable
from .gpu_map_nest import host_value_checker

__all__ = ["SinkIfs", "merge_nested_if", "nests_after_sinking", "sink_if_into_loop", "sink_ifs", "sinkable_if",
           "split_if", "hoist_host_values"]

PASS = "gpu-sink-ifs"


def _body_ops(block: Block) -> list[Operation]:
    return [op for op in block.ops if not isinstance(op, AffineYieldOp)]


def _segments(ops: list[Operation]) -> list[list[Operation]]:
    """``ops`` cut where no value defined before the cut is used after it."""
    position = {op: k for k, op in enumerate(ops)}
    reach = list(range(len(ops)))
    for k, op in enumerate(ops):
        for inner in op.walk():
            for r in inner.results:
                for use in r.uses:
                    user = use.op
                    while user is not None and user not in position:
                        user = user.parent_op
                    if user is not None:
                        reach[k] = max(reach[k], position[user])
    out, start, end = [], 0, -1
    for k in range(len(ops)):
        end = max(end, reach[k])
        if k == end:
            out.append(ops[start: k + 1])
            start = k + 1
    return out


def hoist_host_values(op: AffineIfOp, is_host) -> int:
    """Move the host index values at the top of ``op``'s blocks (constants, ``AffineMapValue`` ops
    such as ``affine.max`` of host values, ``is_host`` telling those outside) right before ``op``, in
    order; returns how many moved. Such an op has no effect and cannot fail, so computing it when
    the condition is false changes nothing (a loop of at most one iteration that canonicalize
    made an if computes its IV so)."""
    moved = 0
    for block in (op.then_block, op.else_block):
        for x in list(block.ops) if block is not None else []:
            if x.has_trait(ConstantLike) or (x.has_trait(AffineMapValue) and all(map(is_host, x.operands))):
                x.detach()
                op.parent.insert_before(op, x)
                moved += 1
    return moved


def split_if(op: AffineIfOp) -> list[AffineIfOp]:
    """Replace the result-less ``op`` by one if per independent part of its then-block and one
    ``if c {} else {...}`` per part of its else-block (module docstring, step 1), in place; returns
    the new ifs (``[op]`` when there is one part only)."""
    then_parts = _segments(_body_ops(op.then_block))
    else_parts = _segments(_body_ops(op.else_block)) if op.else_block is not None else []
    if len(then_parts) + len(else_parts) <= 1:
        return [op]
    new = []
    for parts, in_else in ((then_parts, False), (else_parts, True)):
        for part in parts:
            piece = AffineIfOp(op.condition, list(op.operands), with_else=in_else, location=op.location)
            block = piece.else_block if in_else else piece.then_block
            for x in part:
                x.detach()
                block.insert_before(block.ops[-1], x)
            op.parent.insert_before(op, piece)
            new.append(piece)
    op.erase()
    return new


def _active_block(op: AffineIfOp) -> Block | None:
    """The one branch of ``op`` holding ops (the other empty), or None."""
    then_ops = _body_ops(op.then_block)
    else_ops = _body_ops(op.else_block) if op.else_block is not None else []
    if bool(then_ops) == bool(else_ops):
        return None
    return op.then_block if then_ops else op.else_block


def merge_nested_if(op: AffineIfOp, is_host=None) -> AffineIfOp | None:
    """``if c1 { if c2 {X} }`` (neither with an else, results or other ops; the operands of ``c2``
    host values when ``is_host`` is given) -> ``if c1 and c2 {X}``, in place; returns the new if
    (None: nothing changed)."""
    ops = _body_ops(op.then_block)
    if op.else_block is not None or len(ops) != 1 or not isinstance(ops[0], AffineIfOp):
        return None
    inner = ops[0]
    if inner.else_block is not None or inner.results or (is_host is not None and
                                                          not all(map(is_host, inner.operands))):
        return None
    c1, c2 = op.condition, inner.condition
    d1, s1 = c1.num_dims, c1.num_symbols
    cons = tuple(c1.constraints) + tuple(e.shift(d1, s1) for e in c2.constraints)
    merged = IntegerSet(d1 + c2.num_dims, s1 + c2.num_symbols, cons, tuple(c1.eq_flags) + tuple(c2.eq_flags))
    operands = [*op.operands[:d1], *inner.operands[:c2.num_dims], *op.operands[d1:], *inner.operands[c2.num_dims:]]
    new = AffineIfOp(merged, operands, location=op.location)
    for x in _body_ops(inner.then_block):
        x.detach()
        new.then_block.insert_before(new.then_block.ops[-1], x)
    op.parent.insert_before(op, new)
    op.erase()
    return new


def sink_if_into_loop(op: AffineIfOp) -> AffineForOp | None:
    """``if c { for i = lb to ub {S} }`` -> ``for i = lb to ub { if c {S} }`` (also for an else-only
    if), in place, when the branch holds only that ``affine.for`` and it has no iter_args; returns the
    loop (None: nothing changed)."""
    block = _active_block(op)
    if block is None or op.results:
        return None
    ops = _body_ops(block)
    if len(ops) != 1 or not isinstance(ops[0], AffineForOp) or ops[0].iter_args:
        return None
    loop = ops[0]
    loop.detach()
    op.parent.insert_before(op, loop)
    op.detach()
    body = _body_ops(loop.body)
    loop.body.insert_before(loop.body.ops[-1], op)
    for x in body:
        x.detach()
        block.insert_before(block.ops[-1], x)
    return loop


def _holds_loop(op: Operation) -> bool:
    return any(isinstance(x, LoopLikeOpInterface) for x in op.walk() if x is not op)


def _candidates(block: Block, is_host) -> list[AffineIfOp]:
    return [op for op in block.ops if sinkable_if(op, is_host)]


def sinkable_if(op: Operation, is_host) -> bool:
    """Whether this pass moves ``op`` (in a block it visits, whose host values ``is_host`` tells): an
    ``affine.if`` of host operands holding a loop, its results (if any) integer or float scalars."""
    return isinstance(op, AffineIfOp) and _holds_loop(op) and all(map(is_host, op.operands)) and \
        all(is_demotable(r) for r in op.results)


def nests_after_sinking(block: Block, is_host) -> list[Operation]:
    """The loop-like ops of ``block`` and those in the ifs this pass would move (recursively through
    nested ifs): the top-level nests ``gpu-map`` sees in ``block`` after the pass. Changes nothing."""
    found: list[Operation] = []
    for op in block.ops:
        if isinstance(op, LoopLikeOpInterface):
            found.append(op)
        elif sinkable_if(op, is_host):
            for b in (op.then_block, op.else_block):
                found += nests_after_sinking(b, is_host) if b is not None else []
    return found


def sink_ifs(func: FuncOp, ctx: PassContext | None = None, block: Block | None = None, is_host=None) -> int:
    """Apply the pass to ``func`` (module docstring), or only to ``block`` of it (the body of a loop
    the host runs, whose host values ``is_host`` tells); returns how many ifs were demoted, split,
    merged or sunk."""
    changed = 0
    work: list[tuple[Block, object]] = [(block or func.body, is_host or host_value_checker(func.body))]
    while work:
        block, is_host = work.pop()
        for op in _candidates(block, is_host):
            if op.results:
                names = ", ".join(value_name(r) for r in op.results)
                op = demote_if_results(func, op)
                changed += 1
                if ctx is not None:
                    ctx.applied(op, f"demoted the results ({names}) of the affine.if to one-element buffers: "
                                    f"without them it can be split and sunk into the loops it holds")
            pending = [op]
            while pending:
                x = pending.pop()
                changed += bool(hoist_host_values(x, is_host))
                parts = split_if(x)
                if len(parts) > 1:
                    changed += 1
                    pending += [p for p in parts if _holds_loop(p)]
                    continue
                merged = merge_nested_if(x, is_host)
                if merged is not None:
                    changed += 1
                    pending.append(merged)
                    continue
                loop = sink_if_into_loop(x)
                if loop is not None:
                    changed += 1
                    if ctx is not None:
                        ctx.applied(loop, f"moved the affine.if{' at ' + str(x.location) if x.location else ''} "
                                          f"into the loop {value_name(loop.induction_var)}")
        for op in block.ops:
            if isinstance(op, AffineForOp) and not op.iter_args and all(map(is_host, op.operands)):
                work.append((op.body, host_value_checker(op.body, is_host)))
    return changed


@register_pass
@dataclass(frozen=True)
class SinkIfs(Pass):
    """``gpu-sink-ifs``: see the module docstring."""

    name = PASS
    summary = "Split affine.if ops of host conditions and sink them into the loops they wrap (for gpu-map)"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if not func.is_declaration:
            sink_ifs(func, ctx)
