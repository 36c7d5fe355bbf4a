"""codegen: printers from optimized affine IR to target code.

- :mod:`codegen.llvm`: LLVM IR built with ``llvmlite.ir`` for the CPU (``codegen.llvm.emit``).
- :mod:`codegen.cuda`: CUDA C for mapped IR (``gpu.launch``) for NVRTC (``codegen.cuda.emit``).
"""

from __future__ import annotations

from . import cuda, llvm

__all__ = ["cuda", "llvm"]
