"""The ``arith`` dialect: constants, integer and float arithmetic, comparisons, casts."""

from __future__ import annotations

from ..attributes import DenseAttr, FloatAttr, IntegerAttr
from ..core import Operation
from ..parser import describe_token as _describe
from ..traits import Arithmetic, Commutative, ConstantLike, ExactFold, Involution, Pure
from ..types import FloatType, IndexType, IntegerType, Type, VectorType, element_type_of, i1, vector
from ._simple import ConversionOp, ElementwiseOp, check_kind, kind_ok


class ConstantOp(Operation):
    """``%c = arith.constant 1.0 : f32`` / ``0 : index`` / ``true`` / ``dense<0.0> : vector<8xf32>``."""

    name = "arith.constant"
    traits = frozenset({Pure, ConstantLike})

    def __init__(self, value, location=None, name_hint=None):
        super().__init__([], [value.type], {"value": value}, location=location, result_names=[name_hint])

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        if operands:
            raise ValueError("arith.constant takes no operands")
        return cls(attributes.pop("value"), location=location)

    @classmethod
    def of(cls, value, type_: Type, location=None, name_hint=None) -> ConstantOp:
        """A constant of ``type_`` from a Python number (rounded as the type stores it)."""
        from ..attributes import round_float

        if isinstance(type_, VectorType):
            el = type_.element_type
            v = round_float(float(value), el) if isinstance(el, FloatType) else int(value)
            return cls(DenseAttr((v,), type_), location, name_hint)
        if isinstance(type_, FloatType):
            return cls(FloatAttr(round_float(float(value), type_), type_), location, name_hint)
        return cls(IntegerAttr(int(value), type_), location, name_hint)

    @property
    def value(self):
        """The Python value (int or float); a tuple for dense vectors."""
        a = self.attributes["value"]
        return a.values if isinstance(a, DenseAttr) else a.value

    def suggest_name(self) -> str:
        t = self.result.type
        a = self.attributes["value"]
        if isinstance(t, IndexType):
            return f"c{a.value}".replace("-", "_")
        if t == i1:
            return "true" if a.value else "false"
        if isinstance(t, IntegerType):
            # A value beyond 64 bits gets a short name (MLIR would spell out all its digits).
            return f"c{a.value}_{t}".replace("-", "_") if abs(a.value) < 1 << 64 else f"c_{t}"
        return "cst"

    def print_(self, p) -> None:
        a = self.attributes["value"]
        head = "arith.constant" + p.attr_dict(self, ("value",))
        if self.result.type == i1:
            p.write(f"{head} {'true' if a.value else 'false'}")
        elif isinstance(a, IntegerAttr) and isinstance(a.type, IntegerType):
            p.write(f"{head} {a}")
        else:
            p.write(f"{head} {a}")

    @classmethod
    def parse_(cls, p, loc):
        """``arith.constant {attrs} 1.0 : f32`` / ``true`` / ``dense<...> : vector<...>``."""
        attrs = p.parse_optional_attr_dict()
        return p.add_attributes(cls._parse_value(p, loc), attrs)

    @classmethod
    def _parse_value(cls, p, loc):
        if p.peek().kind == "id" and p.peek().text in ("true", "false"):
            return cls(IntegerAttr(1 if p.next().text == "true" else 0, i1), location=loc)
        tok = p.peek()
        if tok.kind == "id" and tok.text == "dense":
            return cls(p.parse_attribute(), location=loc)
        neg = p.accept("-")
        tok = p.next()
        if tok.kind not in ("int", "float", "hex"):
            raise p.error(f"expected constant value, found {_describe(tok)}", tok.loc)
        p.expect(":")
        tloc = p.loc()
        t = p.parse_type()
        if not isinstance(t, (IntegerType, IndexType, FloatType)):
            raise p.error(f"arith.constant needs an integer, index or float type (or dense<...> for vectors), "
                          f"got {t}", tloc)
        return cls(p.make_number(tok, neg, t, tok.loc), location=loc)

    def verify_(self) -> None:
        a = self.attributes.get("value")
        if getattr(a, "type", None) != self.result.type:
            raise self.error("value attribute type must match the result type")


class _IntDivisionOp(ElementwiseOp):
    """Integer division and remainder: undefined for a zero divisor (and, for ``divsi`` and
    ``ceildivsi``, for -1, where the quotient can overflow), so speculatable only when the
    divisor is a constant other than those (MLIR's ``ConditionallySpeculatable``)."""

    overflows_at_minus_one = False
    #: Division by a zero divisor (operand 1) traps (the interpreter raises): see ``_TRAPS_ON_ZERO``.
    traps_on_zero_divisor = True

    def is_speculatable(self) -> bool:
        from .affine_symbols import constant_index_value

        divisor = constant_index_value(self.operands[1])
        return divisor is not None and divisor != 0 and not (self.overflows_at_minus_one and divisor == -1)


#: The binary ops whose two operands commute: they declare MLIR's ``Commutative`` trait.
_COMMUTATIVE = frozenset({"addi", "muli", "andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui", "addf", "mulf",
                          "maximumf", "minimumf"})
#: The binary ops' algebraic facts (see ``ElementwiseOp``): right identities, right operands that
#: make the result 0, idempotent ops, ops whose result on equal operands is 0.
_RIGHT_IDENTITY = {"addi": 0, "subi": 0, "ori": 0, "xori": 0, "shli": 0, "shrsi": 0, "shrui": 0, "muli": 1,
                   "divsi": 1, "divui": 1, "floordivsi": 1, "ceildivsi": 1, "andi": -1, "mulf": 1.0, "divf": 1.0,
                   "addf": -0.0, "subf": 0.0}
_ZERO_WHEN_RHS_IS = {"muli": 0, "andi": 0, "remsi": 1, "remui": 1}
_IDEMPOTENT = frozenset({"andi", "ori", "maxsi", "minsi", "maxui", "minui", "maximumf", "minimumf"})
_CANCELS_ITSELF = frozenset({"subi", "xori"})
#: Integer ops that fault on some divisors: whether -1 is one of them.
_DIVISIONS = {"divsi": True, "ceildivsi": True, "divui": False, "remsi": False, "remui": False}
#: The casts that read their integer operand, or write their integer result, as unsigned.
_UNSIGNED_CASTS = frozenset({"uitofp", "fptoui", "extui"})
#: Ops that trap on a zero divisor but are Pure and speculatable as in MLIR (so their results are
#: valid affine symbols): they declare ``traps_on_zero_divisor`` for the passes that move code
#: to where it runs more often (LICM).
_TRAPS_ON_ZERO = frozenset({"floordivsi"})


def constant_int(v) -> int | None:
    """The value of ``v`` when an ``arith.constant`` of an integer or index type defines it; else None."""
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, int) and not isinstance(owner.value, bool):
        return owner.value
    return None


def _elementwise(op_name: str, arity: int, kind: str, doc: str) -> type:
    short = op_name.split(".")[1]
    base, extra = ElementwiseOp, {}
    if short in _DIVISIONS:
        base, extra = _IntDivisionOp, {"overflows_at_minus_one": _DIVISIONS[short]}
    if short in _TRAPS_ON_ZERO:
        extra["traps_on_zero_divisor"] = True
    traits = {ExactFold}  # every arith computation folds exactly (ints wrap, IEEE rounding)
    if short in _COMMUTATIVE:
        traits.add(Commutative)
    if short == "negf":
        traits.add(Involution)
    extra["traits"] = frozenset(traits)
    extra.update(right_identity=_RIGHT_IDENTITY.get(short), zero_when_rhs_is=_ZERO_WHEN_RHS_IS.get(short),
                 idempotent=short in _IDEMPOTENT, cancels_itself=short in _CANCELS_ITSELF)
    if kind == "int":  # the *ui ops (divui, remui, maxui, minui, shrui) read their operands as unsigned
        extra["unsigned"] = short.endswith("ui")
    cls = type(short.title().replace("_", "") + "Op", (base,),
               {"name": op_name, "arity": arity, "operand_kind": kind, "__doc__": doc, **extra})
    cls.__module__ = __name__
    return cls


FLOAT_BINARY = ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf")
INT_BINARY = ("addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "maxsi",
              "minsi", "maxui", "minui", "andi", "ori", "xori", "shli", "shrsi", "shrui")

OPS: dict[str, type] = {}
for _n in FLOAT_BINARY:
    OPS[_n] = _elementwise(f"arith.{_n}", 2, "float", f"``%r = arith.{_n} %a, %b : f32``.")
for _n in INT_BINARY:
    OPS[_n] = _elementwise(f"arith.{_n}", 2, "int", f"``%r = arith.{_n} %a, %b : i32``.")
OPS["negf"] = _elementwise("arith.negf", 1, "float", "``%r = arith.negf %a : f32``.")
globals().update({cls.__name__: cls for cls in OPS.values()})

#: The names of the ops with the ``Commutative`` trait (a view kept for the code that asks names).
COMMUTATIVE = frozenset(cls.name for cls in OPS.values() if cls.has_trait(Commutative))

CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule",
                   "une", "uno", "true")
CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


class _CmpOp(Operation):
    predicates: tuple[str, ...] = ()
    operand_kind = "float"
    traits = frozenset({Pure, Arithmetic, ExactFold})

    def __init__(self, predicate: str, lhs, rhs, location=None, name_hint=None):
        t = lhs.type
        rt = vector(t.shape, i1) if isinstance(t, VectorType) else i1
        super().__init__([lhs, rhs], [rt], {"predicate": predicate}, location=location, result_names=[name_hint])

    @property
    def predicate(self) -> str:
        return self.attributes["predicate"]

    def print_(self, p) -> None:
        p.write(f"{self.name} {self.predicate}, {p.values(self.operands)}{p.attr_dict(self, ('predicate',))} "
                f": {self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        pred = p.parse_keyword(cls.predicates)
        p.expect(",")
        a, b = p.parse_operand_list(2)
        attrs, t, tloc = p.parse_attrs_and_type(a, b)
        check_kind(p, cls, t, tloc)
        return p.add_attributes(cls(pred, a, b, location=loc), attrs)

    def verify_(self) -> None:
        a, b = self.operands
        if a.type != b.type or not kind_ok(self.operand_kind, a.type):
            raise self.error(f"expects two {self.operand_kind} operands of one type")
        if self.predicate not in self.predicates:
            raise self.error(f"unknown predicate {self.predicate!r}")


class CmpFOp(_CmpOp):
    """``%r = arith.cmpf olt, %a, %b : f32``."""

    name = "arith.cmpf"
    predicates = CMPF_PREDICATES


class CmpIOp(_CmpOp):
    """``%r = arith.cmpi slt, %a, %b : i32``."""

    name = "arith.cmpi"
    predicates = CMPI_PREDICATES
    operand_kind = "int"


class SelectOp(Operation):
    """``%r = arith.select %cond, %a, %b : f32``."""

    name = "arith.select"
    traits = frozenset({Pure, Arithmetic, ExactFold})

    def __init__(self, cond, a, b, location=None, name_hint=None):
        super().__init__([cond, a, b], [a.type], location=location, result_names=[name_hint])

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(*operands, location=location)

    def print_(self, p) -> None:
        cond = self.operands[0].type
        types = f"{cond}, {self.result.type}" if cond != i1 else str(self.result.type)
        p.write(f"arith.select {p.values(self.operands)}{p.attr_dict(self)} : {types}")

    @classmethod
    def parse_(cls, p, loc):
        """``: T`` with an i1 condition, or ``: vector<8xi1>, vector<8xf32>`` with a vector one."""
        c, a, b = p.parse_operand_list(3)
        attrs, t, tloc = p.parse_attrs_and_type()
        if p.accept(","):
            p.check_type(c, t, tloc)
            t = p.parse_type()
        else:
            p.check_type(c, i1, tloc)
        p.check_type(a, t, tloc)
        p.check_type(b, t, tloc)
        return p.add_attributes(cls(c, a, b, location=loc), attrs)

    def verify_(self) -> None:
        c, a, b = self.operands
        if a.type != b.type:
            raise self.error("both choices must have the same type")
        want = vector(a.type.shape, i1) if isinstance(a.type, VectorType) else i1
        if c.type not in (i1, want):
            raise self.error(f"condition must be i1, got {c.type}")


class _CastOp(ConversionOp):
    """``%r = arith.<cast> %a : T1 to T2``; subclasses set ``valid(src, dst)`` on element types,
    and ``unsigned`` (``uitofp``, ``fptoui``, ``extui``) when they read or write integers as unsigned
    (zero-extending) rather than as signed (sign-extending) numbers."""

    verb = "cast"
    unsigned = False
    traits = frozenset({Arithmetic, ExactFold})

    @staticmethod
    def valid(src: Type, dst: Type) -> bool:
        return True

    @classmethod
    def convertible(cls, src: Type, dst: Type) -> bool:
        if isinstance(src, VectorType) != isinstance(dst, VectorType):
            return False
        if isinstance(src, VectorType) and src.shape != dst.shape:
            return False
        return cls.valid(element_type_of(src), element_type_of(dst))


def _cast(op_name: str, valid, doc: str) -> type:
    cls = type(op_name.split(".")[1].title().replace("_", "") + "Op", (_CastOp,),
               {"name": op_name, "valid": staticmethod(lambda s, d: valid(element_type_of(s), element_type_of(d))),
                "unsigned": op_name.split(".")[1] in _UNSIGNED_CASTS, "__doc__": doc})
    cls.__module__ = __name__
    return cls


def _isint(t):
    return isinstance(t, IntegerType)


def _isfloat(t):
    return isinstance(t, FloatType)


def _width(t):
    return t.width


CASTS = {
    "index_cast": lambda s, d: (isinstance(s, IndexType) and _isint(d)) or (_isint(s) and isinstance(d, IndexType)),
    "sitofp": lambda s, d: _isint(s) and _isfloat(d),
    "uitofp": lambda s, d: _isint(s) and _isfloat(d),
    "fptosi": lambda s, d: _isfloat(s) and _isint(d),
    "fptoui": lambda s, d: _isfloat(s) and _isint(d),
    "extf": lambda s, d: _isfloat(s) and _isfloat(d) and _width(d) > _width(s),
    "truncf": lambda s, d: _isfloat(s) and _isfloat(d) and _width(d) < _width(s),
    "extsi": lambda s, d: _isint(s) and _isint(d) and d.width > s.width,
    "extui": lambda s, d: _isint(s) and _isint(d) and d.width > s.width,
    "trunci": lambda s, d: _isint(s) and _isint(d) and d.width < s.width,
    "bitcast": lambda s, d: s != d and getattr(s, "width", 0) == getattr(d, "width", -1),
}
for _n, _v in CASTS.items():
    OPS[_n] = _cast(f"arith.{_n}", _v, f"``%r = arith.{_n} %a : T1 to T2``.")
    globals()[OPS[_n].__name__] = OPS[_n]
