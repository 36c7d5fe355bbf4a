"""Base classes for ops written ``%r = name %a, %b : type`` (elementwise arith/math ops)."""

from __future__ import annotations

from ..core import Operation
from ..types import VectorType, element_type_of, is_float, is_int_or_index


class ElementwiseOp(Operation):
    """``%r = op %a, %b, ... : T`` with all operands and the result of type T.

    Subclasses set ``arity`` and ``operand_kind`` ("float", "int" or "any") and ``is_pure``.
    """

    arity = 2
    operand_kind = "float"
    is_pure = True

    def __init__(self, *operands, location=None, name_hint=None):
        if len(operands) != self.arity:
            raise TypeError(f"{self.name} takes {self.arity} operands, got {len(operands)}")
        super().__init__(operands, [operands[0].type], location=location, result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"{self.name} {p.values(self.operands)}{p.attr_dict(self)} : {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        vals = [p.parse_operand()]
        for _ in range(cls.arity - 1):
            p.expect(",")
            vals.append(p.parse_operand())
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        t = p.parse_colon_type()
        for v in vals:
            p.check_type(v, t, tloc)
        _check_kind(p, cls, t, tloc)
        op = cls(*vals, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        t = self.result.type
        if any(v.type != t for v in self.operands):
            raise self.error(f"operands and result must all have type {t}")
        if not kind_ok(self.operand_kind, t):
            raise self.error(f"expects {self.operand_kind} operands, got {t}")


def kind_ok(kind: str, t) -> bool:
    el = element_type_of(t)
    if isinstance(t, VectorType) or el is t:
        if kind == "float":
            return is_float(el)
        if kind == "int":
            return is_int_or_index(el)
        return True
    return False


def _check_kind(p, cls, t, loc) -> None:
    if not kind_ok(cls.operand_kind, t):
        raise p.error(f"'{cls.name}' expects {cls.operand_kind} operands, got {t}", loc)
