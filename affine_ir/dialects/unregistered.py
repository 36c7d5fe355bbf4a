"""Ops of dialects this IR does not model, kept as opaque passengers in MLIR's generic form.

``"test.foo"(%i, %j) {k = 1 : i64} : (index, index) -> f32`` parses (only with
``allow_unregistered=True``, as ``mlir-opt --allow-unregistered-dialect``) into an
:class:`UnregisteredOp` that keeps the name, operands, result types, attributes and
regions, and prints back in the generic form. Such an op has no semantics here: it is
not pure, not a terminator, not an affine scope, and the interpreter refuses to run it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Operation, Region, Value
from ..errors import Location
from ..types import Type

# Dialects this IR models: an op name in one of them must be one of its registered ops.
KNOWN_DIALECTS = ("affine", "arith", "builtin", "func", "gpu", "math", "memref", "nvgpu", "vector")


def dialect_of(op_name: str) -> str:
    """``"test"`` for ``"test.foo"``; ``""`` for a name without a dialect prefix (``"foo"``)."""
    return op_name.split(".", 1)[0] if "." in op_name else ""


class UnregisteredOp(Operation):
    """An op of an unregistered dialect: a name and its parts, without meaning.

    ``name`` is per instance (the class itself is not registered under any name).
    """

    def __init__(self, op_name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
                 attributes: dict | None = None, regions: Sequence[Region] = (), location: Location | None = None):
        super().__init__(operands, result_types, attributes, list(regions), location)
        self.name = op_name

    def verify_(self) -> None:
        if not self.name or dialect_of(self.name) in KNOWN_DIALECTS:
            raise self.error("is not an op of an unregistered dialect")
