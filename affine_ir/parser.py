"""Recursive-descent parser for the MLIR text this IR prints.

``parse(text)`` returns a module; any error raises :class:`ParseError` with the file,
line and column of the offending token and what was expected there. Op classes parse
their own custom syntax through the helper methods of :class:`Parser`.
"""

from __future__ import annotations

import re
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


class Parser:
    """Parser state: the lexer, value scopes and attribute aliases."""

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0):
        self.lex = Lexer(text, filename, line_offset)
        self.aliases: dict[str, object] = {}
        # Each scope: (names -> values, isolated?)
        self.scopes: list[tuple[dict[str, Value], bool]] = [({}, True)]
        # Entry blocks of regions being parsed that are affine scopes (function bodies):
        # their values are valid symbols before the enclosing op exists.
        self.scope_blocks: set[int] = set()

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

    # -- integers ---------------------------------------------------------------
    def parse_integer(self, what: str = "integer") -> int:
        neg = self.accept("-")
        tok = self.peek()
        if tok.kind == "int":
            self.next()
            return -int(tok.text) if neg else int(tok.text)
        if tok.kind == "hex" and not neg:
            self.next()
            return int(tok.text, 16)
        raise self.error(f"expected {what}, found {_describe(tok)}")

    # -- values -----------------------------------------------------------------
    def push_scope(self, isolated: bool = False) -> None:
        self.scopes.append(({}, isolated))

    def pop_scope(self) -> None:
        self.scopes.pop()

    def define(self, tok: Token, value: Value) -> None:
        """Bind the SSA name in ``tok`` to ``value`` in the innermost scope."""
        name = tok.text
        for names, isolated in reversed(self.scopes):
            if name in names:
                raise self.error(f"redefinition of SSA value '{name}'", tok.loc)
            if isolated:
                break
        self.scopes[-1][0][name] = value
        hint = name[1:]
        value.name_hint = None if hint.isdigit() else hint

    def lookup(self, tok: Token) -> Value:
        for names, isolated in reversed(self.scopes):
            if tok.text in names:
                return names[tok.text]
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
        if type_ is not None and v.type != type_:
            raise self.error(f"'{tok.text}' has type {v.type}, expected {type_}", tok.loc)
        return v

    def parse_operands(self, close: str | None = None) -> list[Value]:
        if close is None and self.peek().kind != "value":
            return []
        return self.parse_comma_list(self.parse_operand, close)

    def check_type(self, v: Value, t: Type, loc: Location) -> None:
        if v.type != t:
            raise self.error(f"operand has type {v.type}, but the op expects {t}", loc)

    # -- types ------------------------------------------------------------------
    def parse_type(self) -> Type:
        tok = self.peek()
        if tok.kind == "id":
            if _SCALAR_NAMES.match(tok.text):
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
        self.expect("(")
        ins = self.parse_comma_list(self.parse_type, ")")
        self.expect("->")
        return FunctionType(tuple(ins), tuple(self.parse_result_types()))

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
            return _unquote(tok.text)
        if tok.kind == "symbol":
            self.next()
            return SymbolRefAttr(tok.text[1:].strip('"'))
        if tok.text in ("true", "false") and tok.kind == "id":
            self.next()
            return tok.text == "true"
        if tok.text == "unit" and tok.kind == "id":
            self.next()
            return UnitAttr()
        if tok.text == "[":
            self.next()
            return ArrayAttr(tuple(self.parse_comma_list(self.parse_attribute, "]")))
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
                if neg:
                    raise self.error("hexadecimal float literal cannot be negative", loc)
                return FloatAttr(float_from_bits(int(tok.text, 16), t), t)
            value = float(tok.text)
            return FloatAttr(round_float(-value if neg else value, t), t)
        if tok.kind == "float":
            raise self.error(f"floating point literal for integer type {t}", loc)
        value = int(tok.text, 0)
        value = -value if neg else value
        if isinstance(t, IntegerType) and t.width > 1 and not -(1 << t.width) < value < (1 << t.width):
            raise self.error(f"integer constant {value} out of range for {t}", loc)
        if t == i1 and value not in (0, 1, -1):
            raise self.error(f"integer constant {value} out of range for i1", loc)
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

    def parse_optional_attr_dict(self) -> dict:
        """``{name = value, flag}`` if present, else ``{}``."""
        if not self.at("{"):
            return {}
        self.next()
        attrs: dict = {}

        def entry():
            tok = self.next()
            if tok.kind not in ("id", "string"):
                raise self.error(f"expected attribute name, found {_describe(tok)}", tok.loc)
            key = _unquote(tok.text) if tok.kind == "string" else tok.text
            attrs[key] = self.parse_attribute() if self.accept("=") else UnitAttr()

        self.parse_comma_list(entry, "}")
        return attrs

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
            if tok.text == "*":
                self.next()
                e = e * self._affine_unary(atom)
            elif tok.kind == "id" and tok.text in ("floordiv", "ceildiv", "mod"):
                self.next()
                rhs = self._affine_unary(atom)
                e = getattr(e, tok.text)(rhs)
            else:
                return e

    def _affine_unary(self, atom) -> AffineExpr:
        if self.accept("-"):
            return -self._affine_unary(atom)
        tok = self.peek()
        if tok.text == "(":
            self.next()
            e = self._affine_sum(atom)
            self.expect(")")
            return e
        if tok.kind == "int":
            self.next()
            return AffineExpr.constant(int(tok.text))
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
        dims = self.parse_operands(")")
        syms = self.parse_operands("]") if self.accept("[") else []
        if len(dims) != m.num_dims or len(syms) != m.num_symbols:
            raise self.error(
                f"map {m} takes {m.num_dims} dims and {m.num_symbols} symbols, "
                f"got {len(dims)} and {len(syms)}",
                loc,
            )
        for v in dims + syms:
            if v.type != index:
                raise self.error(f"affine map operand has type {v.type}, expected index", loc)
        return dims + syms

    # -- regions and ops ------------------------------------------------------------
    def is_valid_symbol(self, v: Value) -> bool:
        """Whether ``v`` may be used as an affine symbol (see ``dialects.affine.is_valid_symbol``)."""
        from .dialects.affine import is_valid_symbol

        return is_valid_symbol(v, self.scope_blocks)

    def parse_region(self, args: list[tuple[Token, Type]] = (), isolated: bool = False,
                     affine_scope: bool | None = None) -> Region:
        """``{ ops }``; ``args`` are the entry block arguments the op syntax already named."""
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
                raise self.error("expected '}' to close the region")
            if self.peek().kind == "block":
                raise self.error("regions with more than one block are not supported")
            block.append(self.parse_op())
        self.next()
        self.pop_scope()
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
        """One op, with its result names bound."""
        results: list[Token] = []
        counts: list[int] = []
        if self.peek().kind == "value":
            while True:
                tok = self.parse_value_name()
                n = 1
                if self.at(":"):
                    self.next()
                    n = self.parse_integer("result count")
                results.append(tok)
                counts.append(n)
                if not self.accept(","):
                    break
            self.expect("=")
        loc = self.loc()
        tok = self.peek()
        if tok.kind == "string":
            raise self.error("the generic op form (\"op.name\"(...)) is not supported; use the custom syntax")
        if tok.kind != "id":
            raise self.error(f"expected operation name, found {_describe(tok)}")
        self.next()
        cls = OP_REGISTRY.get(tok.text) or OP_REGISTRY.get("func." + tok.text) or OP_REGISTRY.get(
            "builtin." + tok.text)
        if cls is None:
            raise self.error(f"unknown operation '{tok.text}'", loc)
        op = cls.parse_(self, loc)
        op.location = loc
        total = sum(counts)
        if total != len(op.results):
            raise self.error(f"'{cls.name}' defines {len(op.results)} results, but {total} names were given", loc)
        k = 0
        for tok, n in zip(results, counts):
            if n == 1:
                self.define(tok, op.results[k])
            else:
                for j in range(n):
                    self.scopes[-1][0][f"{tok.text}#{j}"] = op.results[k + j]
                    op.results[k + j].name_hint = None
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


def _unquote(text: str) -> str:
    body = text[1:-1]
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in '"\\':
                out.append(nxt)
                i += 2
                continue
            if nxt == "n":
                out.append("\n")
                i += 2
                continue
            hx = body[i + 1 : i + 3]
            if re.fullmatch(r"[0-9a-fA-F]{2}", hx):
                out.append(chr(int(hx, 16)))
                i += 3
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of input"
    return f"'{tok.text}'"


def parse(text: str, filename: str = "<string>", line_offset: int = 0) -> Operation:
    """Parse MLIR text into a ``builtin.module`` (ops outside a module are wrapped in one).

    Raises :class:`ParseError` at the first error, with file, line and column. The
    result is not verified; call ``verify`` for that (``affine_ir.parse`` does both).
    """
    return Parser(text, filename, line_offset).parse_module()
