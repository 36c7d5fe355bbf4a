"""The ``vector`` dialect subset: broadcast a scalar, reduce a vector."""

from __future__ import annotations

from ..core import Operation, Value
from ..traits import Pure
from ..types import VectorType
from ._simple import ConversionOp

VECTOR_REDUCTIONS = ("add", "mul", "maximumf", "minimumf", "maxsi", "minsi", "and", "or", "xor")


class BroadcastOp(ConversionOp):
    """``%v = vector.broadcast %s : f32 to vector<8xf32>``."""

    name = "vector.broadcast"
    verb = "broadcast"

    def __init__(self, value: Value, vector_type: VectorType, location=None, name_hint=None):
        super().__init__(value, vector_type, location=location, name_hint=name_hint)

    @classmethod
    def convertible(cls, src, dst) -> bool:
        return isinstance(dst, VectorType) and dst.element_type == src


class ReductionOp(Operation):
    """``%r = vector.reduction <add>, %v : vector<8xf32> into f32``."""

    name = "vector.reduction"
    traits = frozenset({Pure})

    def __init__(self, kind: str, value: Value, location=None, name_hint=None):
        super().__init__([value], [value.type.element_type], {"kind": kind}, location=location,
                         result_names=[name_hint])

    @property
    def kind(self) -> str:
        return self.attributes["kind"]

    def print_(self, p) -> None:
        p.write(f"vector.reduction <{self.kind}>, {p.value(self.operands[0])}{p.attr_dict(self, ('kind',))} : "
                f"{self.operands[0].type} into {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        p.expect("<")
        kind = p.parse_keyword(VECTOR_REDUCTIONS)
        p.expect(">")
        p.expect(",")
        v = p.parse_operand()
        attrs, _, tloc = p.parse_attrs_and_type(v)
        p.expect("into")
        t = p.parse_type()
        if not isinstance(v.type, VectorType) or t != v.type.element_type:
            raise p.error(f"cannot reduce {v.type} into {t}", tloc)
        return p.add_attributes(cls(kind, v, location=loc), attrs)

    def verify_(self) -> None:
        t = self.operands[0].type
        if not isinstance(t, VectorType) or self.result.type != t.element_type:
            raise self.error("reduces a vector into its element type")
        if self.kind not in VECTOR_REDUCTIONS:
            raise self.error(f"unknown reduction kind {self.kind!r}")
