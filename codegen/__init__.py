"""codegen: printers from optimized affine IR to target code.

- :mod:`codegen.llvm`: LLVM IR built with ``llvmlite.ir`` for the CPU (``codegen.llvm.emit``).
"""

from __future__ import annotations

from . import llvm

__all__ = ["llvm"]
