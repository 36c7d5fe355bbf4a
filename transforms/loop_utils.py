"""Small helpers shared by the transforms: names for messages, bands, functions, subscripts.

Nothing here changes the IR.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from affine_ir import AffineExpr, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.affine_apply import AffineApplyOp
from affine_ir.dialects.arith import ConstantOp
from analysis import perfect_band

__all__ = ["access_subscripts", "all_loops", "at_location", "defined_in", "enclosing_function", "index_expr",
           "loop_name", "loops_text", "outermost_bands", "top_level_loops", "value_name"]


def value_name(v: Value) -> str:
    """``%name`` from the value's name hint (``%arg<k>`` / ``%<op>#<k>`` without one), for messages."""
    if v.name_hint:
        return f"%{v.name_hint}"
    owner = v.owner
    if isinstance(owner, Operation):
        return f"%{owner.name}#{v.index}"
    return f"%arg{v.index}"


def at_location(op: Operation) -> str:
    """`` at file:line:col`` for a located op, '' otherwise (for messages)."""
    return f" at {op.location}" if op.location else ""


def loop_name(loop: Operation) -> str:
    """The name of a loop's IV (``%i``), or the op name for a loop without one."""
    if isinstance(loop, AffineForOp):
        return value_name(loop.induction_var)
    return loop.name


def loops_text(loops: Sequence[Operation]) -> str:
    """``(%i, %j)``: the loops' IV names, for messages."""
    return "(" + ", ".join(loop_name(x) for x in loops) + ")"


def enclosing_function(op: Operation) -> FuncOp | None:
    """The ``func.func`` containing ``op`` (``op`` itself if it is one), or None."""
    while op is not None and not isinstance(op, FuncOp):
        op = op.parent_op
    return op


def defined_in(v: Value, op: Operation) -> bool:
    """Whether ``v`` is defined by ``op``, inside it, or is an argument of one of its blocks."""
    owner = v.owner
    where = owner if isinstance(owner, Operation) else owner.parent_op
    return where is not None and (where is op or op.is_ancestor_of(where))


def top_level_loops(func: Operation) -> list[AffineForOp]:
    """The ``affine.for`` ops directly in the body of ``func`` (or of any op), in order."""
    return [op for region in func.regions for block in region.blocks for op in block.ops
            if isinstance(op, AffineForOp)]


def outermost_bands(func: Operation) -> list[list[AffineForOp]]:
    """The perfectly nested band of each top-level ``affine.for`` of ``func`` (MLIR's
    ``getTileableBands``), in program order."""
    return [perfect_band(loop) for loop in top_level_loops(func)]


def all_loops(root: Operation) -> Iterator[AffineForOp]:
    """Every ``affine.for`` under ``root`` (pre-order)."""
    for op in root.walk():
        if isinstance(op, AffineForOp):
            yield op


def index_expr(v: Value, leaves: list[Value]) -> AffineExpr:
    """``v`` as an affine expression over ``leaves`` (dims; appended to when ``v`` reaches a new
    value), through ``affine.apply`` ops and integer constants."""
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, int) and not isinstance(owner.value, bool):
        return AffineExpr.constant(int(owner.value))
    if isinstance(owner, AffineApplyOp):
        args = [index_expr(x, leaves) for x in owner.operands]
        m = owner.map
        return m.results[0].replace(args[: m.num_dims], args[m.num_dims:])
    for k, x in enumerate(leaves):
        if x is v:
            return AffineExpr.dim(k)
    leaves.append(v)
    return AffineExpr.dim(len(leaves) - 1)


def access_subscripts(op: Operation, leaves: list[Value]) -> tuple[AffineExpr, ...]:
    """The subscripts of an affine access as expressions over ``leaves`` (see :func:`index_expr`):
    ``A[%t]`` with ``%t = affine.apply (d0) -> (d0 + 1)(%i)`` gives ``(d0 + 1,)`` over ``[%i]``."""
    args = [index_expr(v, leaves) for v in op.indices]
    m = op.map
    return tuple(e.replace(args[: m.num_dims], args[m.num_dims:]) for e in m.results)
