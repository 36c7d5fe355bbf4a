"""Replacing a loop by its body: the one mechanism behind every single-iteration promotion.

:func:`lower_bound_value` materializes the value of a loop's lower bound before the loop;
:func:`inline_block_before` moves a block's ops before an anchor; :func:`inline_loop_body`
replaces a loop that runs once by its body (the IV by a given value, ``iter_args`` by their
inits, the results by the yielded values). canonicalize, affine-loop-normalize and
affine-loop-unroll each decide *when* a loop runs once and *how* the IV's value is written;
this module does the rest.
"""

from __future__ import annotations

from affine_ir import AffineExpr, Block, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineMaxOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.types import index

from .loop_utils import enclosing_function

__all__ = ["inline_block_before", "inline_loop_body", "lower_bound_value"]


def lower_bound_value(loop: AffineForOp, *, name_hint: str | None = None, constant_at_entry: bool = False) -> Value:
    """A value equal to ``loop``'s lower bound, available before the loop: an ``arith.constant``
    (before the loop, or at the top of the function with ``constant_at_entry``), the bound's
    operand itself for a one-result identity bound, an ``affine.apply`` for one result, an
    ``affine.max`` of all the results for several (never one of its terms)."""
    m, ops = loop.lower_bound_map, loop.lower_bound_operands
    if m.is_single_constant:
        const = ConstantOp.of(m.single_constant(), index, location=loop.location)
        func = enclosing_function(loop) if constant_at_entry else None
        if func is not None:
            func.body.insert(0, const)
        else:
            loop.parent.insert_before(loop, const)
        return const.result
    if m.num_results == 1 and m.num_inputs == 1 and m.results[0] in (AffineExpr.dim(0), AffineExpr.symbol(0)):
        return ops[0]  # a max bound is the operand only when it is the bound's one result
    kind = AffineApplyOp if m.num_results == 1 else AffineMaxOp
    new = kind(m, ops, location=loop.location, name_hint=name_hint)
    loop.parent.insert_before(loop, new)
    return new.results[0]


def inline_block_before(block: Block, anchor: Operation, arg_values: list[Value]) -> list[Value]:
    """Move the ops of ``block`` (but its terminator) before ``anchor``, its arguments replaced by
    ``arg_values``; returns the terminator's operands (the values the block yields)."""
    for a, v in zip(block.args, arg_values):
        a.replace_all_uses_with(v)
    term = block.terminator
    yielded = list(term.operands) if term is not None else []
    parent = anchor.parent
    for op in list(block.ops):
        if op is term:
            continue
        op.detach()
        parent.insert_before(anchor, op)
    return yielded


def inline_loop_body(loop: AffineForOp, iv_value: Value) -> None:
    """Replace ``loop`` (which must run exactly once) by its body: the IV by ``iv_value``, the
    ``iter_args`` by the inits, the loop's results by the yielded values; the loop is erased."""
    yielded = inline_block_before(loop.body, loop, [iv_value, *loop.inits])
    for r, v in zip(loop.results, yielded):
        r.replace_all_uses_with(v)
    loop.erase()
