"""Parsing pass-pipeline text.

Two forms are accepted, and may be mixed:

- the short form ``canonicalize,affine-loop-tile{tile-size=32 separate=true}``;
- MLIR's anchored form ``builtin.module(func.func(canonicalize,affine-loop-tile{tile-size=32}))``
  (anchors ``builtin.module``, ``func.func`` and ``any``).

Options go between braces, separated by spaces: ``name=value``; a value runs to the next
space or ``}`` and may be quoted (``"..."``) or braced (``{32,16}``); a bare ``name`` means
``name=true``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import PipelineError
from .pass_base import Pass, all_passes, get_pass

__all__ = ["ANCHORS", "PipelineEntry", "parse_pipeline"]

#: The words that may open a nested pass list in pipeline text (``builtin.module(func.func(...))``),
#: as MLIR's pipeline parser spells them; they name no op of a program being optimized.
# op-name: a keyword registry of the pipeline-text grammar, compared with parsed words, not with ops
ANCHORS = ("builtin.module", "func.func", "any")


@dataclass(frozen=True)
class PipelineEntry:
    """A pass of a pipeline and the anchors it is nested in (outermost first)."""

    pass_: Pass
    anchors: tuple[str, ...] = ()


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> PipelineError:
        return PipelineError(f"bad pass pipeline: {message}", self.text, (self.pos if pos is None else pos) + 1)

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def accept(self, ch: str) -> bool:
        if self.peek() == ch:
            self.pos += 1
            return True
        return False

    def name(self) -> tuple[str, int]:
        self.skip_space()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "-_."):
            self.pos += 1
        if start == self.pos:
            found = self.text[self.pos] if self.pos < len(self.text) else "end of text"
            raise self.error(f"expected a pass name, found '{found}'")
        return self.text[start:self.pos], start

    def value(self) -> str:
        """An option value: up to a space or '}' at nesting depth 0, quotes and braces balanced."""
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == '"':
                end = self.text.find('"', self.pos + 1)
                if end < 0:
                    raise self.error("unterminated string in option value")
                self.pos = end + 1
                continue
            if ch == "{":
                depth += 1
            elif ch == "}":
                if depth == 0:
                    break
                depth -= 1
            elif ch.isspace() and depth == 0:
                break
            self.pos += 1
        if depth:
            raise self.error("unbalanced '{' in option value", start)
        return self.text[start:self.pos]

    def options(self) -> dict[str, str]:
        opts: dict[str, str] = {}
        while not self.accept("}"):
            if not self.peek():
                raise self.error("expected '}' to close the options")
            key, _ = self.name()
            if self.text[self.pos:self.pos + 1] == "=":
                self.pos += 1
                opts[key] = self.value()
            else:
                opts[key] = "true"
        return opts


def parse_pipeline(text: str) -> list[PipelineEntry]:
    """The passes of a pipeline text (see the module docstring), each with its options applied.

    Raises :class:`PipelineError` (with a caret under the place) for bad syntax, an unknown
    pass (with close matches), an unknown option or a bad option value.
    """
    r = _Reader(text)
    out: list[PipelineEntry] = []
    if r.peek():
        _parse_list(r, (), out)
    if r.peek():
        raise r.error(f"unexpected '{r.peek()}'")
    return out


def _parse_list(r: _Reader, anchors: tuple[str, ...], out: list[PipelineEntry]) -> None:
    while True:
        _parse_element(r, anchors, out)
        if not r.accept(","):
            return


def _parse_element(r: _Reader, anchors: tuple[str, ...], out: list[PipelineEntry]) -> None:
    name, start = r.name()
    if r.peek() == "(":
        if name not in ANCHORS:
            raise r.error(f"'{name}' is not an op anchor (expected one of {', '.join(ANCHORS)})", start)
        r.accept("(")
        if r.peek() != ")":
            _parse_list(r, anchors + (name,), out)
        if not r.accept(")"):
            raise r.error("expected ')' to close the nested pipeline")
        return
    cls = get_pass(name)
    if cls is None:
        raise r.error(f"unknown pass '{name}'{_suggest(name)}", start)
    opts = r.options() if r.accept("{") else {}
    out.append(PipelineEntry(cls.from_options(opts, r.text, start + 1), anchors))


def _suggest(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(all_passes()), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else " (affine-opt --help lists the passes)"
