"""Base classes and helpers shared by the dialects: ops written ``%r = name %a, %b : type``
(elementwise arith/math ops), ``%r = name %a : T1 to T2`` (casts, broadcasts), and small
helpers for building ops from their parsed parts."""

from __future__ import annotations

from ..core import Operation
from ..interfaces import MemRefAccessInterface
from ..traits import Arithmetic, IsTerminator, NoMemoryEffect, Pure, ReturnLike, SameOperandsAndResultType
from ..types import VectorType, element_type_of, is_float, is_int_or_index


def build_from_operands(cls, operands, result_types, attributes, location):
    """``from_generic`` of ops that their operands alone define (terminators, stores):
    ``"func.return"(%a) : (f32) -> ()`` is ``cls([%a])``. See ``parser_generic``."""
    return cls(list(operands), location=location)


class ElementwiseOp(Operation):
    """``%r = op %a, %b, ... : T`` with all operands and the result of type T.

    Subclasses set ``arity`` and ``operand_kind`` ("float", "int" or "any"), and may add traits
    (``Commutative``).
    """

    traits = frozenset({Pure, SameOperandsAndResultType, Arithmetic})
    arity = 2
    operand_kind = "float"
    #: Algebraic facts of a binary op that folders use (declared by the arith ops; None/False: none):
    #: ``x op right_identity == x`` for every ``x`` (a float's sign of zero counts: ``x + -0.0``);
    right_identity: int | float | None = None
    #: ``x op zero_when_rhs_is == 0`` for every ``x`` (``x * 0``, ``x & 0``, ``x rem 1``);
    zero_when_rhs_is: int | None = None
    #: ``x op x == x`` (``x & x``, ``max(x, x)``);
    idempotent = False
    #: ``x op x == 0`` (``x - x``, ``x ^ x`` on integers).
    cancels_itself = False

    def __init__(self, *operands, location=None, name_hint=None):
        if len(operands) != self.arity:
            raise TypeError(f"{self.name} takes {self.arity} operands, got {len(operands)}")
        super().__init__(operands, [operands[0].type], location=location, result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"{self.name} {p.values(self.operands)}{p.attr_dict(self)} : {self.result.type}")

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(*operands, location=location)

    @classmethod
    def parse_(cls, p, loc):
        vals = p.parse_operand_list(cls.arity)
        attrs, t, tloc = p.parse_attrs_and_type(*vals)
        check_kind(p, cls, t, tloc)
        return p.add_attributes(cls(*vals, location=loc), attrs)

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


def check_kind(p, cls, t, loc) -> None:
    """ParseError at ``loc`` unless ``t`` suits ``cls.operand_kind`` ("float", "int" or "any")."""
    if not kind_ok(cls.operand_kind, t):
        raise p.error(f"'{cls.name}' expects {cls.operand_kind} operands, got {t}", loc)


class ConversionOp(Operation):
    """``%r = name %a {attrs} : T1 to T2``: one value made into one of another type (arith casts,
    ``vector.broadcast``). Subclasses define ``convertible(src, dst)`` and the ``verb`` of messages."""

    traits = frozenset({Pure})
    verb = "convert"

    def __init__(self, value, result_type, location=None, name_hint=None):
        super().__init__([value], [result_type], location=location, result_names=[name_hint])

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        (value,), (result_type,) = operands, result_types
        return cls(value, result_type, location=location)

    @classmethod
    def convertible(cls, src, dst) -> bool:
        return True

    def print_(self, p) -> None:
        p.write(f"{self.name} {p.value(self.operands[0])}{p.attr_dict(self)} : {self.operands[0].type} to "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        attrs, src, tloc = p.parse_attrs_and_type(v)
        p.expect("to")
        dst = p.parse_type()
        if not cls.convertible(src, dst):
            raise p.error(f"'{cls.name}' cannot {cls.verb} {src} to {dst}", tloc)
        return p.add_attributes(cls(v, dst, location=loc), attrs)

    def verify_(self) -> None:
        src, dst = self.operands[0].type, self.result.type
        if not self.convertible(src, dst):
            raise self.error(f"cannot {self.verb} {src} to {dst}")


class ValuesTerminator(Operation):
    """``keyword {attrs} %a, %b : f32, i32``: a terminator that passes values on (``return``,
    ``affine.yield``); subclasses set ``keyword``."""

    traits = frozenset({IsTerminator, ReturnLike, NoMemoryEffect})
    keyword = ""
    from_generic = classmethod(build_from_operands)

    def print_(self, p) -> None:
        p.write(self.keyword + p.attr_dict(self) + p.typed_values(self.operands))

    @classmethod
    def parse_(cls, p, loc):
        attrs = p.parse_optional_attr_dict()
        return p.add_attributes(cls(p.parse_typed_operands(), location=loc), attrs)


def verify_terminator(op: Operation, block, term_cls: type, types, verb: str, expecting: str,
                      prefix: str = "") -> None:
    """``block`` of ``op`` ends in a ``term_cls`` op whose operands have ``types``; else a VerifyError
    such as "yields (f32) but the parent 'affine.for' expects (i32)" (``verb``, ``expecting``)."""
    term = block.ops[-1] if block.ops else None
    if not isinstance(term, term_cls):
        raise op.error(f"{prefix}body must end with '{term_cls.name}'")
    got = [v.type for v in term.operands]
    if got != list(types):
        raise term.error(f"{verb} ({', '.join(map(str, got))}) but {expecting} ({', '.join(map(str, types))})")


#: The old name of :class:`affine_ir.interfaces.MemRefAccessInterface` (loads and stores).
MemrefAccess = MemRefAccessInterface


def verify_element_type(op: Operation) -> None:
    """A load's result (a store's value: operand 0, when ``op.memref_index`` is 1) has the element
    type of ``op.memref``."""
    el = op.memref.type.element_type
    if op.memref_index:
        if op.operands[0].type != el:
            raise op.error(f"stores a {op.operands[0].type} into a memref of {el}")
    elif op.result.type != el:
        raise op.error("result type must be the memref's element type")


def set_regions(op: Operation, *regions) -> Operation:
    """``op`` with its regions replaced by ``regions`` (parsed ones, for the empty ones the
    constructor made)."""
    op.regions.clear()
    for region in regions:
        op.add_region(region)
    return op
