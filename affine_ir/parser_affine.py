"""Affine maps, integer sets and expressions, over named dims (``affine_map<(d0) -> (d0 + 1)>``)
or over SSA values (``%A[%i + 1, symbol(%n)]``)."""

from __future__ import annotations

from collections.abc import Callable

from .affine_expr import AffineExpr
from .affine_map import AffineMap, IntegerSet
from .core import Value
from .errors import AffineError, Location
from .lexer import Token
from .parser_base import describe_token, plural
from .parser_types import TypeAttrParser
from .types import index

_describe = describe_token


class AffineParser(TypeAttrParser):
    """Parses affine maps, sets and expressions, and the operand lists that go with them."""

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
        return self._parse_map_or_set_of(AffineMap)

    def parse_integer_set(self) -> IntegerSet:
        return self._parse_map_or_set_of(IntegerSet)

    def _parse_map_or_set_of(self, kind: type):
        loc = self.loc()
        result = self.parse_affine_map_or_set()
        if not isinstance(result, kind):
            want, got = ("affine map", "an integer set") if kind is AffineMap else ("integer set", "an affine map")
            raise self.error(f"expected {want}, found {got}", loc)
        return result

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
            if len(cons) == 1 and cons[0][1] and cons[0][0] == AffineExpr.constant(0):
                cons = []  # '(0 == 0)' is how a set without constraints prints ('() : ()'), as in MLIR
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
        dims = self.parse_comma_list(self.parse_index_operand, ")")
        syms = self.parse_comma_list(self.parse_index_operand, "]") if self.accept("[") else []
        if len(dims) != m.num_dims or len(syms) != m.num_symbols:
            kind = "set" if isinstance(m, IntegerSet) else "map"
            raise self.error(
                f"{kind} {m} takes {plural(m.num_dims, 'dim')} and {plural(m.num_symbols, 'symbol')}, "
                f"but {plural(len(dims), 'dim operand')} and {plural(len(syms), 'symbol operand')} were given",
                loc,
            )
        return dims + syms

    def parse_index_operand(self) -> Value:
        """An operand of an affine map or set: an SSA value of type ``index``."""
        tok = self.peek()
        v = self.parse_operand()
        if v.type != index:
            raise self.error(f"affine operand '{tok.text}' has type {v.type}, expected index", tok.loc)
        return v


class SSAMapBuilder:
    """Collects dims and symbols while parsing affine exprs over SSA values."""

    def __init__(self, p: AffineParser):
        self.p = p
        self.dims: list[Value] = []
        self.syms: list[Value] = []

    def atom(self, tok: Token) -> AffineExpr:
        p = self.p
        if tok.kind == "id" and tok.text == "symbol":
            p.next()
            p.expect("(")
            v = p.parse_index_operand()
            p.expect(")")
            return _index_of(self.syms, v, AffineExpr.symbol)
        if tok.kind != "value":
            raise p.error(f"expected SSA value or 'symbol(...)', found {_describe(tok)}")
        return _index_of(self.dims, p.parse_index_operand(), AffineExpr.dim)

    def parse_expr(self) -> AffineExpr:
        return self.p.parse_affine_expr(self.atom)

    def finish(self, exprs: list[AffineExpr], loc: Location) -> tuple[AffineMap, list[Value]]:
        """The map of ``exprs`` (dims first, then symbols, in order of appearance) and operands."""
        nd = len(self.dims)
        shift = [AffineExpr.dim(i) for i in range(nd)]
        syms = [AffineExpr.symbol(j) for j in range(len(self.syms))]
        exprs = [e.replace(shift, syms) for e in exprs]
        return self.p._build(lambda: AffineMap(nd, len(self.syms), tuple(exprs)), loc), self.dims + self.syms


def _lookup_id(p: AffineParser, names: dict, tok: Token) -> AffineExpr:
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
