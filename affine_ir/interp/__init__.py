"""The reference interpreter's implementation; the public module is :mod:`affine_ir.interpreter`."""

from __future__ import annotations

from .driver import CompiledFunction, compile_function, interpret
from .gpu import reversed_schedule

__all__ = ["CompiledFunction", "compile_function", "interpret", "reversed_schedule"]
