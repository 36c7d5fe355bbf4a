"""Recursive-descent parser for the MLIR text this IR prints.

``parse(text)`` returns a module; any error raises :class:`ParseError` with the file,
line and column of the offending token and what was expected there. Op classes parse
their own custom syntax through the helper methods of :class:`Parser`.
"""

from __future__ import annotations

import math
import re
import struct
import warnings
from collections.abc import Callable

from .affine_expr import AffineExpr
from .affine_map import AffineMap, IntegerSet
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
from .core import OP_REGISTRY, Block, Operation, Region, Value
from .errors import AffineError, Location, ParseError
from .lexer import Lexer, Token
from .types import (
    FloatType,
    FunctionType,
    GPUAddressSpace,
    IndexType,
    IntegerType,
    MMAMatrixType,
    Type,
    VectorType,
    i1,
    i64,
    index,
    memref,
    scalar,
    vector,
)

_SHAPE = re.compile(r"((?:(?:\d+|\?)x)*)")
_SCALAR_NAMES = re.compile(r"(index|i\d+|f16|bf16|f32|f64)\Z")
_MAX_INT_WIDTH = (1 << 24) - 1  # MLIR's IntegerType::kMaxWidth
MAX_NESTING = 100  # regions, parentheses, arrays, function types


class Parser:
    """Parser state: the lexer, value scopes and attribute aliases."""

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0):
        self.lex = Lexer(text, filename, line_offset)
        self.aliases: dict[str, object] = {}
        # Each scope: (names -> values, isolated?)
        self.scopes: list[tuple[dict[str, list[Value]], bool]] = [({}, True)]
        # Entry blocks of regions being parsed that are affine scopes (function bodies):
        # their values are valid symbols before the enclosing op exists.
        self.scope_blocks: set[int] = set()
        # How each value was last written as an operand (``%x``, ``%r#1``), for messages.
        self.spellings: dict[int, str] = {}
        # Current nesting of regions, parentheses, arrays and function types (see ``enter``).
        self.depth = 0

    # -- tokens -----------------------------------------------------------------
    def peek(self) -> Token:
        return self.lex.peek()

    def next(self) -> Token:
        return self.lex.next()

    def loc(self) -> Location:
        return self.peek().loc

    def error(self, message: str, loc: Location | None = None) -> ParseError:
        return ParseError(message, loc or self.loc())

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.text == text and tok.kind in ("punct", "id")

    def accept(self, text: str) -> bool:
        """Consume the punctuation or keyword ``text`` if it is next."""
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        tok = self.peek()
        if tok.text != text or tok.kind not in ("punct", "id"):
            raise self.error(f"expected '{text}'{' ' + what if what else ''}, found {_describe(tok)}")
        return self.next()

    def expect_kind(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok.kind != kind:
            raise self.error(f"expected {what}, found {_describe(tok)}")
        return self.next()

    def parse_keyword(self, options: tuple[str, ...] | None = None, what: str = "keyword") -> str:
        tok = self.peek()
        if tok.kind != "id" or (options is not None and tok.text not in options):
            want = " or ".join(f"'{o}'" for o in options) if options else what
            raise self.error(f"expected {want}, found {_describe(tok)}")
        return self.next().text

    def parse_comma_list(self, parse_item: Callable, close: str | None = None) -> list:
        """Items separated by commas; with ``close``, an empty list is allowed and ``close`` consumed."""
        items: list = []
        if close is not None and self.accept(close):
            return items
        items.append(parse_item())
        while self.accept(","):
            items.append(parse_item())
        if close is not None:
            self.expect(close)
        return items

    def enter(self, what: str) -> None:
        """Go one level deeper (a region, a parenthesis, ...); call ``leave`` after.

        Nesting is bounded so that parsing, verifying and printing what was parsed
        stay well inside Python's recursion limit.
        """
        if self.depth >= MAX_NESTING:
            raise self.error(f"{what} nested more than {MAX_NESTING} levels deep")
        self.depth += 1

    def leave(self) -> None:
        self.depth -= 1

    # -- integers ---------------------------------------------------------------
    def parse_integer(self, what: str = "integer") -> int:
        """A (possibly negative) decimal or hex integer that fits in 64 bits, as MLIR's ``int64_t``."""
        loc = self.loc()
        neg = self.accept("-")
        tok = self.peek()
        if tok.kind == "int" or (tok.kind == "hex" and not neg):
            self.next()
            value = int(tok.text, 0) if tok.kind == "hex" else int(tok.text)
            return self.check_int64(-value if neg else value, loc)
        raise self.error(f"expected {what}, found {_describe(tok)}")

    def check_int64(self, value: int, loc: Location) -> int:
        if not -(1 << 63) <= value < (1 << 63):
            raise self.error(f"integer {value} does not fit in 64 bits", loc)
        return value

    def parse_symbol_name(self, what: str = "symbol name (@name)") -> str:
        """``@name`` or ``@"any name"``, without the ``@``."""
        tok = self.expect_kind("symbol", what)
        return self.unquote(tok.text[1:], tok.loc) if tok.text[1] == '"' else tok.text[1:]

    def unquote(self, text: str, loc: Location) -> str:
        """The value of the string literal ``text`` (MLIR escapes: ``\\"``, ``\\\\``, ``\\n``, ``\\t``, ``\\XX``)."""
        try:
            return _unquote(text)
        except ValueError as e:
            raise self.error(str(e), loc) from None

    # -- values -----------------------------------------------------------------
    def push_scope(self, isolated: bool = False) -> None:
        self.scopes.append(({}, isolated))

    def pop_scope(self) -> None:
        self.scopes.pop()

    def define(self, tok: Token, value: Value | list[Value]) -> None:
        """Bind the SSA name in ``tok`` to ``value`` (or a result group ``%r:2``) in the innermost scope."""
        name = tok.text
        for names, isolated in reversed(self.scopes):
            if name in names:
                raise self.error(f"redefinition of SSA value '{name}'", tok.loc)
            if isolated:
                break
        values = value if isinstance(value, list) else [value]
        self.scopes[-1][0][name] = values
        hint = name[1:]
        for v in values:
            v.name_hint = None if hint.isdigit() else hint

    def lookup(self, tok: Token) -> Value:
        """The value ``%name`` or ``%name#k`` (result ``k`` of a group; ``%name`` alone is ``%name#0``)."""
        name, _, number = tok.text.partition("#")
        k = int(number) if number else 0
        for names, isolated in reversed(self.scopes):
            if name in names:
                group = names[name]
                if k >= len(group):
                    raise self.error(f"reference to invalid result number '{tok.text}' ('{name}' has "
                                     f"{len(group)} result{'s' if len(group) != 1 else ''})", tok.loc)
                return group[k]
            if isolated:
                break
        raise self.error(f"use of undefined value '{tok.text}'", tok.loc)

    def parse_value_name(self) -> Token:
        """An SSA name being defined (``%i``)."""
        tok = self.expect_kind("value", "SSA value name")
        if "#" in tok.text:
            raise self.error("a result number ('#') is not allowed in a definition", tok.loc)
        return tok

    def parse_operand(self, type_: Type | None = None) -> Value:
        """A use of an SSA value; checks its type when ``type_`` is given."""
        tok = self.expect_kind("value", "SSA operand")
        v = self.lookup(tok)
        self.spellings[id(v)] = tok.text
        if type_ is not None and v.type != type_:
            raise self.error(f"'{tok.text}' has type {v.type}, expected {type_}", tok.loc)
        return v

    def parse_operands(self, close: str | None = None) -> list[Value]:
        if close is None and self.peek().kind != "value":
            return []
        return self.parse_comma_list(self.parse_operand, close)

    def check_type(self, v: Value, t: Type, loc: Location) -> None:
        """ParseError at ``loc`` (the written type) unless ``v`` has type ``t``."""
        if v.type != t:
            name = self.spellings.get(id(v), "operand")
            raise self.error(f"type mismatch: {name} has type {v.type}, but the op expects {t}", loc)

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
        if tok.kind == "bang" and tok.text == "!gpu.mma_matrix":
            return self._parse_mma_type()
        if tok.text == "(":
            return self.parse_function_type()
        raise self.error(f"expected type, found {_describe(tok)}")

    def parse_colon_type(self) -> Type:
        self.expect(":")
        return self.parse_type()

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
        m = self.lex.match_raw(_SHAPE)
        parts = m.group(1).split("x")[:-1] if m and m.group(1) else []
        return tuple(None if p == "?" else int(p) for p in parts)

    def _parse_shaped_type(self) -> Type:
        kind = self.next().text
        self.expect("<")
        start = self.loc()
        shape = self._parse_shape()
        tok = self.peek()
        if not ((tok.kind == "id" and (_SCALAR_NAMES.match(tok.text) or tok.text in ("memref", "vector")))
                or tok.kind == "bang" or tok.text == "("):
            raise self.error(f"expected a dimension size ('4x', '?x') or the element type in the {kind} type, "
                             f"found {_describe(tok)}")
        elem = self.parse_type()
        if isinstance(elem, (FunctionType, VectorType)) or elem.__class__.__name__ == "MemRefType":
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
        return memref(shape, elem, space)

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
        value = int(tok.text, 16) if tok.kind == "hex" else int(tok.text)
        value = -value if neg else value
        width = t.width if isinstance(t, IntegerType) else 64
        if not -(1 << (width - 1)) <= value < (1 << width):
            raise self.error(f"integer constant {value} out of range for {t}", loc)
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

    # -- affine maps and sets -------------------------------------------------------
    def parse_affine_map_or_set(self):
        """``affine_map<...>`` / ``affine_set<...>`` or an alias bound to one."""
        tok = self.peek()
        if tok.kind == "hash":
            self.next()
            if tok.text not in self.aliases:
                raise self.error(f"undefined attribute alias '{tok.text}'", tok.loc)
            return self.aliases[tok.text]
        kind = self.parse_keyword(("affine_map", "affine_set"))
        self.expect("<")
        result = self._parse_map_or_set_body(kind == "affine_set", tok.loc)
        self.expect(">")
        return result

    def parse_affine_map(self) -> AffineMap:
        loc = self.loc()
        m = self.parse_affine_map_or_set()
        if not isinstance(m, AffineMap):
            raise self.error("expected affine map, found an integer set", loc)
        return m

    def parse_integer_set(self) -> IntegerSet:
        loc = self.loc()
        s = self.parse_affine_map_or_set()
        if not isinstance(s, IntegerSet):
            raise self.error("expected integer set, found an affine map", loc)
        return s

    def _parse_map_or_set_body(self, is_set: bool, loc: Location):
        names: dict[str, AffineExpr] = {}
        self.expect("(")
        dims = self.parse_comma_list(lambda: self._bind_id(names, AffineExpr.dim, len(names)), ")")
        nd = len(dims)
        nsyms = 0
        if self.accept("["):
            syms = self.parse_comma_list(lambda: self._bind_id(names, AffineExpr.symbol, len(names) - nd), "]")
            nsyms = len(syms)
        if is_set:
            self.expect(":")
            self.expect("(")
            cons = self.parse_comma_list(lambda: self._parse_constraint(names), ")")
            return self._build(lambda: IntegerSet(nd, nsyms, tuple(c for c, _ in cons), tuple(e for _, e in cons)), loc)
        self.expect("->")
        self.expect("(")
        results = self.parse_comma_list(lambda: self.parse_affine_expr(lambda t: _lookup_id(self, names, t)), ")")
        return self._build(lambda: AffineMap(nd, nsyms, tuple(results)), loc)

    def _build(self, make, loc):
        try:
            return make()
        except AffineError as e:
            raise self.error(e.message, loc) from None

    def _bind_id(self, names: dict, make, i: int) -> str:
        tok = self.expect_kind("id", "dimension or symbol identifier")
        if tok.text in names:
            raise self.error(f"redefinition of identifier '{tok.text}'", tok.loc)
        names[tok.text] = make(i)
        return tok.text

    def _parse_constraint(self, names: dict) -> tuple[AffineExpr, bool]:
        lhs = self.parse_affine_expr(lambda t: _lookup_id(self, names, t))
        tok = self.next()
        op = tok.text
        if op in (">", "<", "="):
            second = self.next()
            if second.text != "=" or second.pos != tok.pos + 1:
                raise self.error("expected '>=', '<=' or '==' in constraint", tok.loc)
            op += "="
        else:
            raise self.error(f"expected '>=', '<=' or '==' in constraint, found {_describe(tok)}", tok.loc)
        rhs = self.parse_affine_expr(lambda t: _lookup_id(self, names, t))
        if op == ">=":
            return lhs - rhs, False
        if op == "<=":
            return rhs - lhs, False
        return lhs - rhs, True

    def parse_affine_expr(self, atom: Callable[[Token], AffineExpr]) -> AffineExpr:
        """An affine expression; ``atom`` turns an identifier or SSA token into an expr."""
        loc = self.loc()
        try:
            return self._affine_sum(atom)
        except AffineError as e:
            raise self.error(e.message, loc) from None

    def _affine_sum(self, atom) -> AffineExpr:
        e = self._affine_product(atom)
        while self.at("+") or self.at("-"):
            if self.next().text == "+":
                e = e + self._affine_product(atom)
            else:
                e = e - self._affine_product(atom)
        return e

    def _affine_product(self, atom) -> AffineExpr:
        e = self._affine_unary(atom)
        while True:
            tok = self.peek()
            if tok.text == "*" or (tok.kind == "id" and tok.text in ("floordiv", "ceildiv", "mod")):
                self.next()
                rhs = self._affine_unary(atom)
                try:
                    e = e * rhs if tok.text == "*" else getattr(e, tok.text)(rhs)
                except AffineError as err:
                    raise self.error(err.message, tok.loc) from None
            else:
                return e

    def _affine_unary(self, atom) -> AffineExpr:
        negate = False
        while self.accept("-"):
            negate = not negate
        e = self._affine_primary(atom)
        return -e if negate else e

    def _affine_primary(self, atom) -> AffineExpr:
        tok = self.peek()
        if tok.text == "(":
            self.enter("parentheses")
            self.next()
            e = self._affine_sum(atom)
            self.expect(")")
            self.leave()
            return e
        if tok.kind == "int":
            self.next()
            return AffineExpr.constant(self.check_int64(int(tok.text), tok.loc))
        if tok.kind in ("id", "value"):
            return atom(tok)
        raise self.error(f"expected affine expression, found {_describe(tok)}")

    def ssa_map_builder(self) -> SSAMapBuilder:
        """A builder collecting the SSA operands of affine exprs written with ``%values``."""
        return SSAMapBuilder(self)

    def parse_map_of_ssa_ids(self, close: str = "]") -> tuple[AffineMap, list[Value]]:
        """``%i + 1, symbol(%n)`` up to ``close``: a map and its dim+symbol operands.

        Each distinct SSA value becomes a dim in order of appearance, or a symbol when
        written ``symbol(%v)``.
        """
        b = self.ssa_map_builder()
        loc = self.loc()
        exprs = self.parse_comma_list(b.parse_expr, close)
        return b.finish(exprs, loc)

    def parse_dim_and_symbol_list(self, m: AffineMap, loc: Location) -> list[Value]:
        """``(%a, %b)[%s]`` operands of ``m``; checks counts against the map."""
        self.expect("(")
        dims = self.parse_comma_list(self._parse_index_operand, ")")
        syms = self.parse_comma_list(self._parse_index_operand, "]") if self.accept("[") else []
        if len(dims) != m.num_dims or len(syms) != m.num_symbols:
            kind = "set" if isinstance(m, IntegerSet) else "map"
            raise self.error(
                f"{kind} {m} takes {_plural(m.num_dims, 'dim')} and {_plural(m.num_symbols, 'symbol')}, "
                f"but {_plural(len(dims), 'dim operand')} and {_plural(len(syms), 'symbol operand')} were given",
                loc,
            )
        return dims + syms

    def _parse_index_operand(self) -> Value:
        tok = self.peek()
        v = self.parse_operand()
        if v.type != index:
            raise self.error(f"affine operand '{tok.text}' has type {v.type}, expected index", tok.loc)
        return v

    # -- regions and ops ------------------------------------------------------------
    def is_valid_symbol(self, v: Value) -> bool:
        """Whether ``v`` may be used as an affine symbol (see ``dialects.affine.is_valid_symbol``)."""
        from .dialects.affine import is_valid_symbol

        return is_valid_symbol(v, self.scope_blocks)

    def parse_region(self, args: list[tuple[Token, Type]] = (), isolated: bool = False,
                     affine_scope: bool | None = None) -> Region:
        """``{ ops }``; ``args`` are the entry block arguments the op syntax already named."""
        open_loc = self.loc()
        self.enter("regions")
        self.expect("{")
        self.push_scope(isolated)
        block = Block()
        if isolated if affine_scope is None else affine_scope:
            self.scope_blocks.add(id(block))
        for tok, t in args:
            self.define(tok, block.add_argument(t))
        if self.peek().kind == "block":
            self._parse_block_header(block, bool(args))
        while not self.at("}"):
            if self.peek().kind == "eof":
                raise self.error(f"expected '}}' to close the region opened at {open_loc.line}:{open_loc.col}, "
                                 "found end of input")
            if self.peek().kind == "block":
                raise self.error("regions with more than one block are not supported")
            block.append(self.parse_op())
        self.next()
        self.pop_scope()
        self.leave()
        return Region([block])

    def _parse_block_header(self, block: Block, has_args: bool) -> None:
        tok = self.next()
        if has_args:
            raise self.error("entry block arguments are already defined by the op", tok.loc)
        if self.accept("("):

            def arg():
                name = self.parse_value_name()
                self.expect(":")
                self.define(name, block.add_argument(self.parse_type()))

            self.parse_comma_list(arg, ")")
        self.expect(":")

    def parse_op(self) -> Operation:
        """One op, with its result names bound.

        The op's location is where its statement starts: the first result name, or the
        op name when it has no results.
        """
        loc = self.loc()
        results: list[Token] = []
        counts: list[int] = []
        if self.peek().kind == "value":
            while True:
                tok = self.parse_value_name()
                n = 1
                if self.accept(":"):
                    cloc = self.loc()
                    n = self.parse_integer("result count")
                    if n < 1:
                        raise self.error(f"expected a positive result count, found {n}", cloc)
                results.append(tok)
                counts.append(n)
                if not self.accept(","):
                    break
            self.expect("=")
        tok = self.peek()
        if tok.kind == "string":
            raise self.error("the generic op form (\"op.name\"(...)) is not supported; use the custom syntax")
        if tok.kind != "id":
            raise self.error(f"expected operation name, found {_describe(tok)}")
        self.next()
        cls = OP_REGISTRY.get(tok.text) or OP_REGISTRY.get("func." + tok.text) or OP_REGISTRY.get(
            "builtin." + tok.text)
        if cls is None:
            raise self.error(f"unknown operation '{tok.text}'", tok.loc)
        op = cls.parse_(self, loc)
        op.location = loc
        total = sum(counts)
        if total != len(op.results):
            n = len(op.results)
            raise self.error(f"'{cls.name}' defines {n} result{'' if n == 1 else 's'}, but {total} "
                             f"{'name was' if total == 1 else 'names were'} given", loc)
        k = 0
        for tok, n in zip(results, counts):
            self.define(tok, op.results[k : k + n])
            k += n
        return op

    # -- top level -------------------------------------------------------------------
    def parse_module(self) -> Operation:

        self._parse_alias_definitions()
        tok = self.peek()
        if tok.kind == "id" and tok.text in ("module", "builtin.module"):
            module = self.parse_op()
            if self.peek().kind != "eof":
                module = self._wrap([module])
        else:
            module = self._wrap([])
        return module

    def _wrap(self, ops: list[Operation]) -> Operation:
        from .dialects.builtin import ModuleOp

        loc = ops[0].location if ops else self.loc()
        module = ModuleOp(location=loc)
        for op in ops:
            module.body.append(op)
        while self.peek().kind != "eof":
            if self.peek().kind == "hash":
                raise self.error("attribute alias definitions must come before all operations")
            module.body.append(self.parse_op())
        return module

    def _parse_alias_definitions(self) -> None:
        while self.peek().kind == "hash":
            tok = self.next()
            if tok.text in self.aliases:
                raise self.error(f"redefinition of attribute alias '{tok.text}'", tok.loc)
            self.expect("=")
            self.aliases[tok.text] = self.parse_attribute()


class AttrDict(dict):
    """A parsed attribute dictionary; ``loc`` is where it starts (for errors about its entries)."""

    loc: Location | None = None


class SSAMapBuilder:
    """Collects dims and symbols while parsing affine exprs over SSA values."""

    def __init__(self, p: Parser):
        self.p = p
        self.dims: list[Value] = []
        self.syms: list[Value] = []

    def atom(self, tok: Token) -> AffineExpr:
        p = self.p
        if tok.kind == "id" and tok.text == "symbol":
            p.next()
            p.expect("(")
            v = self._index_operand()
            p.expect(")")
            return _index_of(self.syms, v, AffineExpr.symbol)
        if tok.kind != "value":
            raise p.error(f"expected SSA value or 'symbol(...)', found {_describe(tok)}")
        return _index_of(self.dims, self._index_operand(), AffineExpr.dim)

    def _index_operand(self) -> Value:
        tok = self.p.peek()
        v = self.p.parse_operand()
        if v.type != index:
            raise self.p.error(f"affine operand '{tok.text}' has type {v.type}, expected index", tok.loc)
        return v

    def parse_expr(self) -> AffineExpr:
        return self.p.parse_affine_expr(self.atom)

    def finish(self, exprs: list[AffineExpr], loc: Location) -> tuple[AffineMap, list[Value]]:
        """The map of ``exprs`` (dims first, then symbols, in order of appearance) and operands."""
        nd = len(self.dims)
        shift = [AffineExpr.dim(i) for i in range(nd)]
        syms = [AffineExpr.symbol(j) for j in range(len(self.syms))]
        exprs = [e.replace(shift, syms) for e in exprs]
        return self.p._build(lambda: AffineMap(nd, len(self.syms), tuple(exprs)), loc), self.dims + self.syms


def _lookup_id(p: Parser, names: dict, tok: Token) -> AffineExpr:
    if tok.kind != "id" or tok.text not in names:
        raise p.error(f"use of undeclared identifier '{tok.text}' in affine expression", tok.loc)
    p.next()
    return names[tok.text]


def _index_of(vs: list[Value], v: Value, make) -> AffineExpr:
    for i, w in enumerate(vs):
        if w is v:
            return make(i)
    vs.append(v)
    return make(len(vs) - 1)


_NANS: dict[bytes, float] = {}


def _canonical_nan(value: float) -> float:
    """One float object per NaN bit pattern, so equal NaN constants compare equal (``nan != nan``)."""
    if value != value:
        return _NANS.setdefault(struct.pack("<d", value), value)
    return value


_ESCAPES = {'"': b'"', "\\": b"\\", "n": b"\n", "t": b"\t"}
_HEX2 = re.compile(r"[0-9a-fA-F]{2}")


def _unquote(text: str) -> str:
    """The value of a string literal; ``\\XX`` escapes are UTF-8 bytes. ValueError on a bad escape."""
    body = text[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8", "surrogatepass")
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES:
            out += _ESCAPES[nxt]
            i += 2
        elif _HEX2.fullmatch(body, i + 1, i + 3):
            out.append(int(body[i + 1 : i + 3], 16))
            i += 3
        else:
            raise ValueError(f"unknown escape '\\{nxt}' in string literal")
    return out.decode("utf-8", "replace")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def describe_token(tok: Token) -> str:
    """``'text'`` of a token for messages, or ``end of input``."""
    if tok.kind == "eof":
        return "end of input"
    return f"'{tok.text}'"


_describe = describe_token


def parse(text: str, filename: str = "<string>", line_offset: int = 0) -> Operation:
    """Parse MLIR text into a ``builtin.module`` (ops outside a module are wrapped in one).

    Raises :class:`ParseError` at the first error, with file, line and column. The
    result is not verified; call ``verify`` for that (``affine_ir.parse`` does both).
    """
    parser = Parser(text, filename, line_offset)
    try:
        return parser.parse_module()
    except RecursionError:
        # A safety net: ``enter`` bounds the nesting we know of.
        raise parser.error("input nested too deeply to parse") from None
