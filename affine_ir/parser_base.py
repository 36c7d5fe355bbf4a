"""The parser's foundation: tokens, literals, names and the scopes of SSA values.

:class:`ParserBase` holds what every part of the parser uses (the lexer, attribute
and type aliases, value scopes); ``parser_types``, ``parser_affine`` and ``parser`` build on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .affine_expr import fits_index
from .bigint import decimal_to_int, describe_int
from .core import Value
from .errors import Location, ParseError
from .lexer import Lexer, Token
from .types import Type

MAX_NESTING = 100  # regions, parentheses, arrays, function types


class ParserBase:
    """Parser state: the lexer, value scopes, attribute and type aliases."""

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0):
        self.lex = Lexer(text, filename, line_offset)
        self.aliases: dict[str, object] = {}
        # Type aliases (``!name = type`` at the top): ``!name`` -> the type.
        self.type_aliases: dict[str, Type] = {}
        # Each scope: (names -> values, isolated?)
        self.scopes: list[tuple[dict[str, list[Value]], bool]] = [({}, True)]
        # Steps that need the finished module (its ops linked to their parents), in order.
        self.finishers: list[Callable[[], None]] = []
        # How each value was last written as an operand (``%x``, ``%r#1``), for messages.
        self.spellings: dict[int, str] = {}
        # Current nesting of regions, parentheses, arrays and function types (see ``enter``).
        self.depth = 0

    def after_module(self, step: Callable[[], None]) -> None:
        """Run ``step`` once the whole module is parsed (``finish_module``)."""
        self.finishers.append(step)

    def finish_module(self) -> None:
        """Run the steps deferred by ``after_module``, in order."""
        for step in self.finishers:
            step()
        self.finishers.clear()

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
            value = int(tok.text, 0) if tok.kind == "hex" else decimal_to_int(tok.text)
            return self.check_int64(-value if neg else value, loc)
        raise self.error(f"expected {what}, found {_describe(tok)}")

    def check_int64(self, value: int, loc: Location) -> int:
        if not fits_index(value):
            raise self.error(f"integer {describe_int(value)} does not fit in 64 bits", loc)
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

    def parse_operand_list(self, n: int) -> list[Value]:
        """Exactly ``n`` operands separated by commas (``%a, %b``)."""
        vals = [self.parse_operand()]
        for _ in range(n - 1):
            self.expect(",")
            vals.append(self.parse_operand())
        return vals

    def parse_indexed_operand(self) -> tuple[Value, list[Value]]:
        """``%m[%i, %j]``: a (memref) operand and its index operands."""
        m = self.parse_operand()
        self.expect("[")
        return m, self.parse_operands("]")

    def check_type(self, v: Value, t: Type, loc: Location) -> None:
        """ParseError at ``loc`` (the written type) unless ``v`` has type ``t``."""
        if v.type != t:
            name = self.spellings.get(id(v), "operand")
            raise self.error(f"type mismatch: {name} has type {v.type}, but the op expects {t}", loc)

    def check_types(self, vals: list[Value], types: list[Type], loc: Location, what: str = "operands") -> None:
        """ParseError at ``loc`` unless ``vals`` are as many as ``types`` and each has its type."""
        if len(vals) != len(types):
            raise self.error(f"{len(vals)} {what} but {len(types)} types", loc)
        for v, t in zip(vals, types):
            self.check_type(v, t, loc)


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


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def describe_token(tok: Token) -> str:
    """``'text'`` of a token for messages, or ``end of input``."""
    if tok.kind == "eof":
        return "end of input"
    return f"'{tok.text}'"


_describe = describe_token
