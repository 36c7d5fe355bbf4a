"""Building ops in front of a placeholder: what the kernel builders (``gpu-schedule``, ``gpu-map-mma``) share."""

from __future__ import annotations

from affine_ir import AffineExpr, AffineMap, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp

__all__ = ["Emitter"]


class Emitter:
    """Appends ops before ``anchor`` in its block, with ``location``."""

    def __init__(self, anchor: Operation, location):
        self.anchor = anchor
        self.location = location

    def add(self, op: Operation) -> Operation:
        """Insert ``op`` before the anchor; returns it."""
        self.anchor.parent.insert_before(self.anchor, op)
        return op

    def apply(self, expr: AffineExpr, operands: list[Value], name: str | None = None) -> Value:
        """The value of ``expr`` of ``operands`` (dims), through a new ``affine.apply``."""
        op = AffineApplyOp(AffineMap(len(operands), 0, (expr,)), operands, location=self.location, name_hint=name)
        return self.add(op).results[0]
