"""Errors of the LLVM emitter."""

from __future__ import annotations

from affine_ir import IRError


class EmitError(IRError):
    """The module holds something the CPU backend cannot compile; the message names the op,
    the location is the op's. ``runtime`` reports it as a ``CompileError``."""
