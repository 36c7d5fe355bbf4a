"""Errors of the CUDA C emitter."""

from __future__ import annotations

from affine_ir import IRError


class EmitError(IRError):
    """The module holds something the CUDA backend cannot print (an unmapped loop nest at the top
    level of a host function, an op without a CUDA lowering, an unsupported type); the message
    names the op, the location is the op's. ``runtime`` reports it as a ``CompileError``."""
