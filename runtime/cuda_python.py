"""Importing cuda-python (the ``cuda`` extra) on first use, with an error that says what to install.

The CUDA stack (``cuda-bindings``, ``cuda-pathfinder``, ``nvidia-cuda-nvrtc``/``runtime``/``crt``)
is the optional extra ``affine-ir[cuda]``: without it everything but compiling and launching CUDA
kernels works (``runtime.compile(target="auto")`` picks the CPU, :func:`runtime.gpu_available` is
False, :mod:`codegen.cuda` still prints CUDA C). No module imports cuda-python at import time;
they call :func:`import_cuda` when they need it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import CompileError

__all__ = ["CUDA_EXTRA", "import_cuda"]

#: The command that installs the CUDA stack.
CUDA_EXTRA = "pip install 'affine-ir[cuda]'"


def import_cuda(module: str) -> ModuleType:
    """The cuda-python module ``module`` (``"cuda.bindings.nvrtc"``, ``"cuda.pathfinder"``...).
    Raises :class:`~runtime.errors.CompileError` naming the module and :data:`CUDA_EXTRA` when
    cuda-python is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise CompileError(f"the CUDA backend needs {module} from cuda-python, which is not installed "
                           f"({e}): install the CUDA extra with {CUDA_EXTRA}") from None
