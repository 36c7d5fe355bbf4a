"""Tokens of MLIR text, produced on demand with their line and column."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import Location, ParseError

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<float>[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+))
  | (?P<hex>0x[0-9a-fA-F]+)
  | (?P<int>\d+)
  | (?P<value>%(?:[A-Za-z_$.\-][A-Za-z0-9_$.\-]*|\d+)(?:\#\d+)?)
  | (?P<symbol>@[A-Za-z_$.][A-Za-z0-9_$.\-]*|@"(?:[^"\\]|\\.)*")
  | (?P<block>\^[A-Za-z0-9_$.\-]+)
  | (?P<hash>\#[A-Za-z_$.][A-Za-z0-9_$.\-]*)
  | (?P<bang>![A-Za-z_$.][A-Za-z0-9_$.\-]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<id>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<punct>->|::|[()\[\]{}<>,:=+\-*?])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # float, hex, int, value, symbol, block, hash, bang, string, id, punct, eof
    text: str
    pos: int
    loc: Location


class Lexer:
    """Lazily splits ``text`` into tokens; the parser may also match raw regexes at ``pos``."""

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0):
        self.text = text
        self.filename = filename
        self.line_offset = line_offset
        self.pos = 0
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._peeked: Token | None = None

    def location(self, pos: int) -> Location:
        lo, hi = 0, len(self._line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return Location(self.filename, lo + 1 + self.line_offset, pos - self._line_starts[lo] + 1)

    def skip_ws(self) -> None:
        while True:
            m = _TOKEN.match(self.text, self.pos)
            if m is None or m.lastgroup != "ws":
                return
            self.pos = m.end()

    def peek(self) -> Token:
        if self._peeked is None:
            self._peeked = self._lex()
        return self._peeked

    def next(self) -> Token:
        tok = self.peek()
        self._peeked = None
        self.pos = tok.pos + len(tok.text)
        return tok

    def reset(self, pos: int) -> None:
        """Move to ``pos`` (used for raw sub-lexing such as shapes)."""
        self.pos = pos
        self._peeked = None

    def _lex(self) -> Token:
        self.skip_ws()
        if self.pos >= len(self.text):
            return Token("eof", "", self.pos, self.location(self.pos))
        m = _TOKEN.match(self.text, self.pos)
        if m is None:
            ch = self.text[self.pos]
            if ch == '"' or self.text.startswith('@"', self.pos):
                raise ParseError("unterminated string literal (missing closing '\"' on this line)",
                                 self.location(self.pos))
            raise ParseError(f"unexpected character {ch!r}", self.location(self.pos))
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "float" and text[0] in "+-":
            # A sign is its own token unless it directly follows a token that takes a literal.
            return Token("punct", text[0], self.pos, self.location(self.pos))
        return Token(kind, text, self.pos, self.location(self.pos))

    def match_raw(self, pattern: re.Pattern) -> re.Match | None:
        """Match ``pattern`` at the current position (after whitespace), consuming it on success."""
        self._peeked = None
        self.skip_ws()
        m = pattern.match(self.text, self.pos)
        if m is not None:
            self.pos = m.end()
        return m
