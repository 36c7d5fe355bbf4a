"""runtime: compile + run.

- ``runtime.compile(module, target="auto"|"cuda"|"cpu")`` (:mod:`runtime.compiler`): the entry point.
- CUDA: :mod:`runtime.cuda` (mapping, CUDA C, NVRTC, launches), :mod:`runtime.nvrtc`
  (``compile_cuda``), :mod:`runtime.cuda_driver` (``gpu_available``, devices, modules, launches,
  buffers, timing), :mod:`runtime.cuda_arrays` (numpy / ``__cuda_array_interface__`` / DLPack).
- CPU: ``runtime.cpu.compile(module)`` JIT-compiles for the host CPU (llvmlite); ``compile_cpu``
  is the same function.
- The command-line entry points live in ``runtime.cli``.

Errors: :class:`CompileError`, :class:`LaunchError`; a loop nest run on one GPU thread warns
:class:`SequentialLaunchWarning` (:mod:`runtime.launch_warnings`). Backends are imported on first use, so
``affine-opt`` stays light.
"""

from __future__ import annotations

import importlib

from .errors import CompileError, LaunchError

_LAZY = {
    "cpu": ("runtime.cpu", None), "compile_cpu": ("runtime.cpu", "compile"),
    "CPUExecutable": ("runtime.cpu", "CPUExecutable"), "CPUKernel": ("runtime.cpu", "CPUKernel"),
    "cuda": ("runtime.cuda", None), "CudaExecutable": ("runtime.cuda", "CudaExecutable"),
    "nvrtc": ("runtime.nvrtc", None), "compile_cuda": ("runtime.nvrtc", "compile_cuda"),
    "CudaImage": ("runtime.nvrtc", "CudaImage"),
    "cuda_driver": ("runtime.cuda_driver", None), "gpu_available": ("runtime.cuda_driver", "gpu_available"),
    "CudaError": ("runtime.cuda_driver", "CudaError"), "DeviceBuffer": ("runtime.cuda_driver", "DeviceBuffer"),
    "GPUUnavailableError": ("runtime.cuda_driver", "GPUUnavailableError"),
    "cuda_arrays": ("runtime.cuda_arrays", None),
    "SequentialLaunchWarning": ("runtime.launch_warnings", "SequentialLaunchWarning"),
    "compile": ("runtime.compiler", "compile"), "resolve_target": ("runtime.compiler", "resolve_target"),
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = importlib.import_module(module)
    return mod if attr is None else getattr(mod, attr)


__all__ = ["CompileError", "LaunchError", *_LAZY]
