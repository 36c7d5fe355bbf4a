"""Types and attributes: ``memref<4x?xf32, 3>``, ``vector<8xf16>``, ``dense<...>``, ``{a = 1 : i64}``."""

from __future__ import annotations

import math
import re
import struct
import warnings

from .attributes import (
    ArrayAttr,
    DenseAttr,
    FloatAttr,
    IntegerAttr,
    OpaqueAttr,
    SymbolRefAttr,
    UnitAttr,
    float_from_bits,
    round_float,
)
from .bigint import decimal_to_int, describe_int
from .core import Operation, Value
from .errors import Location
from .lexer import Token
from .parser_base import describe_token
from .parser_nvgpu_types import NVGPU_TYPE_NAMES, NVGPUTypeParser
from .types import (
    INT64_MAX,
    FloatType,
    FunctionType,
    GPUAddressSpace,
    IndexType,
    IntegerType,
    MemRefType,
    MMAMatrixType,
    Type,
    UnrankedMemRefType,
    VectorType,
    async_token,
    i1,
    i64,
    memref,
    scalar,
    shaped_type_size_problem,
    unranked_memref,
    vector,
)

_describe = describe_token
_SHAPE = re.compile(r"(?:(?:\d+|\?)[ \t\r\n]*x[ \t\r\n]*)*")  # '4x?x', also spaced: '4 x ? x'
_DIM = re.compile(r"\d+|\?")
_UNRANKED = re.compile(r"\*[ \t\r\n]*x")  # the '*x' of 'memref<*xf16>' ('xf16' alone would lex as a name)
_SCALAR_NAMES = re.compile(r"(index|i\d+|f16|bf16|f32|f64|f8E4M3FN|f8E5M2)\Z")
_MAX_INT_WIDTH = (1 << 24) - 1  # MLIR's IntegerType::kMaxWidth


class TypeAttrParser(NVGPUTypeParser):
    """Parses types and attributes (and the attribute dictionaries of ops)."""

    # -- types ------------------------------------------------------------------
    def parse_type(self) -> Type:
        tok = self.peek()
        if tok.kind == "id":
            if _SCALAR_NAMES.match(tok.text):
                if tok.text[0] == "i" and tok.text[1:].isdigit() and not 0 < int(tok.text[1:]) <= _MAX_INT_WIDTH:
                    raise self.error(f"invalid integer type '{tok.text}': the width must be 1 to {_MAX_INT_WIDTH}")
                self.next()
                return scalar(tok.text)
            if tok.text in ("memref", "vector"):
                return self._parse_shaped_type()
        if tok.kind == "bang":
            return self._parse_bang_type()
        if tok.text == "(":
            return self.parse_function_type()
        raise self.error(f"expected type, found {_describe(tok)}")

    def _parse_bang_type(self) -> Type:
        """``!alias``, ``!gpu.mma_matrix<...>``, ``!nvgpu.device.async.token`` or an nvgpu type of
        the Hopper ops; a located error for an undefined alias or an unknown dialect type."""
        tok = self.peek()
        if tok.text in self.type_aliases:
            self.next()
            return self.type_aliases[tok.text]
        if tok.text == "!gpu.mma_matrix":
            return self._parse_mma_type()
        self.next()
        if tok.text == "!nvgpu.device.async.token":
            return async_token
        t = self.nvgpu_type_named(tok)
        if t is not None:
            return t
        if "." not in tok.text:
            raise self.error(f"undefined type alias '{tok.text}'", tok.loc)
        raise self.error(f"unknown type '{tok.text}'", tok.loc)

    def parse_colon_type(self) -> Type:
        self.expect(":")
        return self.parse_type()

    def parse_attrs_and_type(self, *typed: Value) -> tuple[AttrDict, Type, Location]:
        """``{attrs} : type``, the tail of most ops: the attribute dictionary (maybe empty), the
        type and where it is written; each value of ``typed`` must have that type."""
        attrs = self.parse_optional_attr_dict()
        tloc = self.loc()
        t = self.parse_colon_type()
        for v in typed:
            self.check_type(v, t, tloc)
        return attrs, t, tloc

    def parse_typed_operands(self) -> list[Value]:
        """``%a, %b : f32, i32``, or nothing when no SSA value follows; the types checked."""
        vals = self.parse_operands()
        if vals:
            tloc = self.loc()
            self.expect(":", "and the types of the values")
            self.check_types(vals, self.parse_comma_list(self.parse_type), tloc, "values")
        return vals

    def parse_function_type(self) -> FunctionType:
        self.enter("function types")
        self.expect("(")
        ins = self.parse_comma_list(self.parse_type, ")")
        self.expect("->")
        ft = FunctionType(tuple(ins), tuple(self.parse_result_types()))
        self.leave()
        return ft

    def parse_result_types(self) -> list[Type]:
        """``f32`` or ``(f32, i32)`` or ``()``."""
        if self.accept("("):
            return self.parse_comma_list(self.parse_type, ")")
        return [self.parse_type()]

    def _parse_shape(self) -> tuple[int | None, ...]:
        loc = self.loc()
        m = self.lex.match_raw(_SHAPE)
        shape = tuple(None if d == "?" else decimal_to_int(d) for d in _DIM.findall(m.group(0)))
        if any(d is not None and d > INT64_MAX for d in shape):
            raise self.error("invalid dimension: each dimension must fit in 64 bits (at most 2**63 - 1)", loc)
        return shape

    def _parse_shaped_type(self) -> Type:
        kind = self.next().text
        self.expect("<")
        start = self.loc()
        if kind == "memref" and self.lex.match_raw(_UNRANKED):
            return self._parse_unranked_rest(start)
        shape = self._parse_shape()
        tok = self.peek()
        if not ((tok.kind == "id" and (_SCALAR_NAMES.match(tok.text) or tok.text in ("memref", "vector")))
                or tok.kind == "bang" or tok.text == "("):
            raise self.error(f"expected a dimension size ('4x', '?x') or the element type in the {kind} type, "
                             f"found {_describe(tok)}")
        elem = self.parse_type()
        # A memref may hold vectors (memref<4x4xvector<8xf32>>, as in MLIR); a vector holds scalars.
        if isinstance(elem, (FunctionType, MemRefType, UnrankedMemRefType, *NVGPU_TYPE_NAMES)) or \
                (kind == "vector" and isinstance(elem, VectorType)):
            raise self.error(f"invalid {kind} element type {elem}", start)
        if kind == "vector":
            if not shape or any(d is None or d <= 0 for d in shape):
                raise self.error("vector types need a static, non-empty, positive shape", start)
            self.expect(">")
            return vector(shape, elem)
        space = None
        if self.accept(","):
            space = self._parse_memory_space()
        self.expect(">")
        t = memref(shape, elem, space)
        problem = shaped_type_size_problem(t)
        if problem is not None:
            raise self.error(problem, start)
        return t

    def _parse_unranked_rest(self, start: Location) -> UnrankedMemRefType:
        """The rest of ``memref<*xf16[, space]>`` after ``*x``."""
        elem = self.parse_type()
        if not isinstance(elem, (IntegerType, FloatType, IndexType, VectorType)):
            raise self.error(f"invalid memref element type {elem}", start)
        space = self._parse_memory_space() if self.accept(",") else None
        self.expect(">")
        return unranked_memref(elem, space)

    def _parse_memory_space(self):
        tok = self.peek()
        if tok.kind == "int":
            return self.parse_integer()
        if tok.kind == "hash" and tok.text == "#gpu.address_space":
            self.next()
            self.expect("<")
            name = self.parse_keyword(("global", "workgroup", "private"))
            self.expect(">")
            return GPUAddressSpace(name)
        raise self.error(f"expected memory space (integer or #gpu.address_space<...>), found {_describe(tok)}")

    def _parse_mma_type(self) -> Type:
        self.next()
        self.expect("<")
        start = self.loc()
        shape = self._parse_shape()
        if len(shape) != 2 or None in shape:
            raise self.error("!gpu.mma_matrix needs a static 2-d shape", start)
        elem = self.parse_type()
        self.expect(",")
        operand = self.expect_kind("string", 'operand kind ("AOp", "BOp" or "COp")').text[1:-1]
        if operand not in ("AOp", "BOp", "COp"):
            raise self.error(f'expected "AOp", "BOp" or "COp", found "{operand}"')
        self.expect(">")
        return MMAMatrixType(shape, elem, operand)

    # -- attributes ---------------------------------------------------------------
    def parse_attribute(self, type_hint: Type | None = None):
        tok = self.peek()
        if tok.kind == "hash":
            return self._parse_hash_attribute()
        if tok.kind == "string":
            self.next()
            return self.unquote(tok.text, tok.loc)
        if tok.kind == "symbol":
            return SymbolRefAttr(self.parse_symbol_name())
        if tok.text in ("true", "false") and tok.kind == "id":
            self.next()
            return tok.text == "true"
        if tok.text == "unit" and tok.kind == "id":
            self.next()
            return UnitAttr()
        if tok.text == "[":
            self.enter("array attributes")
            self.next()
            array = ArrayAttr(tuple(self.parse_comma_list(self.parse_attribute, "]")))
            self.leave()
            return array
        if tok.text in ("affine_map", "affine_set") and tok.kind == "id":
            return self.parse_affine_map_or_set()
        if tok.text == "dense" and tok.kind == "id":
            return self._parse_dense()
        if tok.kind in ("int", "float", "hex") or tok.text == "-":
            return self._parse_number_attribute(type_hint)
        return self.parse_type()

    def _parse_number_attribute(self, type_hint: Type | None):
        loc = self.loc()
        neg = self.accept("-")
        tok = self.next()
        if tok.kind not in ("int", "float", "hex"):
            raise self.error(f"expected number, found {_describe(tok)}", tok.loc)
        t = type_hint
        if self.at(":"):
            self.next()
            t = self.parse_type()
        if t is None:
            t = FloatType("f64") if tok.kind == "float" else i64
        return self.make_number(tok, neg, t, loc)

    def make_number(self, tok: Token, neg: bool, t: Type, loc: Location):
        """An IntegerAttr or FloatAttr for a literal token of type ``t``."""
        if isinstance(t, FloatType):
            if tok.kind == "hex":
                bits = int(tok.text, 16)
                if neg:
                    raise self.error("hexadecimal float literal cannot be negative", loc)
                if bits >> t.width:
                    raise self.error(f"hexadecimal float constant {tok.text} out of range for {t}", loc)
                return FloatAttr(_canonical_nan(float_from_bits(bits, t)), t)
            value = float(tok.text)
            with warnings.catch_warnings():  # numpy warns when a large value rounds to inf
                warnings.simplefilter("ignore", RuntimeWarning)
                rounded = round_float(-value if neg else value, t)
            if math.isinf(rounded) and not math.isinf(value):
                raise self.error(f"float constant {'-' if neg else ''}{tok.text} out of range for {t}", loc)
            return FloatAttr(_canonical_nan(rounded), t)
        if not isinstance(t, (IntegerType, IndexType)):
            raise self.error(f"a number needs an integer, index or float type, found {t}", loc)
        if tok.kind == "float":
            raise self.error(f"floating point literal for integer type {t}", loc)
        value = int(tok.text, 16) if tok.kind == "hex" else decimal_to_int(tok.text)
        value = -value if neg else value
        width = t.width if isinstance(t, IntegerType) else 64
        if not -(1 << (width - 1)) <= value < (1 << width):
            raise self.error(f"integer constant {describe_int(value)} out of range for {t}", loc)
        if t == i1:
            return IntegerAttr(value & 1, t)
        if value >= 1 << (width - 1):
            value -= 1 << width  # signless integers print signed, as MLIR does: 255 : i8 is -1 : i8
        return IntegerAttr(value, t)

    def _parse_dense(self):
        loc = self.loc()
        self.next()
        self.expect("<")
        elems = []

        def item():
            neg = self.accept("-")
            t = self.next()
            if t.kind not in ("int", "float", "hex") and t.text not in ("true", "false"):
                raise self.error(f"expected number in dense literal, found {_describe(t)}", t.loc)
            elems.append((t, neg))

        if self.accept("["):
            self.parse_comma_list(item, "]")
        else:
            item()
        self.expect(">")
        self.expect(":")
        t = self.parse_type()
        if not isinstance(t, VectorType):
            raise self.error(f"dense literal needs a vector type, found {t}", loc)
        if len(elems) not in (1, t.num_elements):
            raise self.error(f"dense literal has {len(elems)} elements, type {t} has {t.num_elements}", loc)
        el = t.element_type
        vals = []
        for tok, neg in elems:
            if tok.text in ("true", "false"):
                if el != i1 or neg:
                    raise self.error(f"'{tok.text}' in a dense literal of {el} elements", tok.loc)
                vals.append(1 if tok.text == "true" else 0)
            else:
                vals.append(self.make_number(tok, neg, el, tok.loc).value)
        return DenseAttr(tuple(vals), t)

    def _parse_hash_attribute(self):
        tok = self.next()
        if tok.text in self.aliases:
            return self.aliases[tok.text]
        if tok.text == "#gpu.address_space":
            self.lex.reset(tok.pos)
            return self._parse_memory_space()
        if not self.at("<"):
            raise self.error(f"undefined attribute alias '{tok.text}'", tok.loc)
        return OpaqueAttr(tok.text + self._balanced_angle_text())

    def _balanced_angle_text(self) -> str:
        start = self.peek().pos
        depth = 0
        while True:
            tok = self.next()
            if tok.kind == "eof":
                raise self.error("unterminated '<' in attribute", tok.loc)
            if tok.text == "<":
                depth += 1
            elif tok.text == ">":
                depth -= 1
                if depth == 0:
                    return self.lex.text[start : tok.pos + 1]

    def parse_optional_attr_dict(self) -> AttrDict:
        """``{name = value, flag}`` if present, else an empty dict; remembers where it was."""
        attrs = AttrDict()
        attrs.loc = self.loc()
        if not self.at("{"):
            return attrs
        self.next()

        def entry():
            tok = self.next()
            if tok.kind not in ("id", "string"):
                raise self.error(f"expected attribute name, found {_describe(tok)}", tok.loc)
            key = self.unquote(tok.text, tok.loc) if tok.kind == "string" else tok.text
            if key in attrs:
                raise self.error(f"duplicate attribute '{key}' in the attribute dictionary", tok.loc)
            attrs[key] = self.parse_attribute() if self.accept("=") else UnitAttr()

        self.parse_comma_list(entry, "}")
        return attrs

    def add_attributes(self, op: Operation, attrs: dict) -> Operation:
        """Add a parsed attribute dictionary to ``op``; it may not name the attributes the op's
        syntax already set (like ``step`` of ``affine.for``)."""
        for key in attrs:
            if key in op.attributes:
                raise self.error(f"'{key}' is set by the syntax of '{op.name}' and cannot appear in its attribute "
                                 "dictionary", getattr(attrs, "loc", None))
        op.attributes.update(attrs)
        return op


class AttrDict(dict):
    """A parsed attribute dictionary; ``loc`` is where it starts (for errors about its entries)."""

    loc: Location | None = None


_NANS: dict[bytes, float] = {}


def _canonical_nan(value: float) -> float:
    """One float object per NaN bit pattern, so equal NaN constants compare equal (``nan != nan``)."""
    if value != value:
        return _NANS.setdefault(struct.pack("<d", value), value)
    return value
