"""runtime: compile + run. ``runtime.cpu.compile(module)`` JIT-compiles affine IR for the host CPU
(llvmlite); ``compile_cpu`` is the same function. The command-line entry points live in
``runtime.cli``. Errors: :class:`CompileError`, :class:`LaunchError`."""

from __future__ import annotations

from .errors import CompileError, LaunchError


def __getattr__(name: str):
    # The CPU backend imports llvmlite; load it on first use so `affine-opt` stays light.
    if name in ("cpu", "compile_cpu", "CPUExecutable", "CPUKernel"):
        import importlib

        cpu = importlib.import_module("runtime.cpu")
        return {"cpu": cpu, "compile_cpu": cpu.compile, "CPUExecutable": cpu.CPUExecutable,
                "CPUKernel": cpu.CPUKernel}[name]
    raise AttributeError(f"module 'runtime' has no attribute {name!r}")


__all__ = ["CPUExecutable", "CPUKernel", "CompileError", "LaunchError", "compile_cpu", "cpu"]
