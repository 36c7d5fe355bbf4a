"""The project's error hierarchy and source locations.

Every error raised for bad input derives from :class:`IRError` and, where the
input has a place, carries a :class:`Location` so the message reads
``file:line:col: error: ...`` like MLIR's diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A place in a source file: 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class IRError(Exception):
    """Base of every error the library raises for bad input or an illegal request."""

    def __init__(self, message: str, location: Location | None = None):
        self.message = message
        self.location = location
        super().__init__(self.formatted())

    def formatted(self) -> str:
        """The message in ``file:line:col: error: message`` form when located."""
        if self.location is None:
            return f"error: {self.message}"
        return f"{self.location}: error: {self.message}"


class AffineError(IRError, ValueError):
    """An affine expression, map or set that cannot be built (e.g. ``d0 * d1``)."""


class ParseError(IRError):
    """Text that is not valid IR; the location points at the offending token."""


class VerifyError(IRError):
    """An op that breaks an invariant; the message names the op, the location its place."""


class InterpretError(IRError):
    """A failure while interpreting (out-of-bounds access, division by zero, ...)."""
