"""The ``vector`` dialect subset: broadcast a scalar, reduce a vector."""

from __future__ import annotations

from ..core import Operation, Value
from ..types import VectorType

VECTOR_REDUCTIONS = ("add", "mul", "maximumf", "minimumf", "maxsi", "minsi", "and", "or", "xor")


class BroadcastOp(Operation):
    """``%v = vector.broadcast %s : f32 to vector<8xf32>``."""

    name = "vector.broadcast"
    is_pure = True

    def __init__(self, value: Value, vector_type: VectorType, location=None, name_hint=None):
        super().__init__([value], [vector_type], location=location, result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"vector.broadcast {p.value(self.operands[0])}{p.attr_dict(self)} : {self.operands[0].type} to "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.check_type(v, p.parse_colon_type(), tloc)
        p.expect("to")
        t = p.parse_type()
        if not isinstance(t, VectorType) or t.element_type != v.type:
            raise p.error(f"cannot broadcast {v.type} to {t}", tloc)
        op = cls(v, t, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, VectorType) or t.element_type != self.operands[0].type:
            raise self.error(f"cannot broadcast {self.operands[0].type} to {t}")


class ReductionOp(Operation):
    """``%r = vector.reduction <add>, %v : vector<8xf32> into f32``."""

    name = "vector.reduction"
    is_pure = True

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
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.check_type(v, p.parse_colon_type(), tloc)
        p.expect("into")
        t = p.parse_type()
        if not isinstance(v.type, VectorType) or t != v.type.element_type:
            raise p.error(f"cannot reduce {v.type} into {t}", tloc)
        op = cls(kind, v, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        t = self.operands[0].type
        if not isinstance(t, VectorType) or self.result.type != t.element_type:
            raise self.error("reduces a vector into its element type")
        if self.kind not in VECTOR_REDUCTIONS:
            raise self.error(f"unknown reduction kind {self.kind!r}")
