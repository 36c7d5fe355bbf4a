"""Small helpers shared by the transforms: names for messages, bands, functions.

Nothing here changes the IR.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from affine_ir import FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp
from analysis import perfect_band

__all__ = ["all_loops", "at_location", "enclosing_function", "loop_name", "loops_text", "outermost_bands",
           "top_level_loops", "value_name"]


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
