"""``runtime.compile(module, target=...)``: the one entry point for running affine IR.

- ``target="cuda"``: :func:`runtime.cuda.compile` (GPU mapping, CUDA C, NVRTC; works without a
  GPU, calling the result needs one); ``arch`` picks the architecture (default: the GPU's own,
  else ``sm_90``).
- ``target="cpu"``: the CPU pipeline (:data:`transforms.pipelines.CPU_PIPELINE`: fusion, cache
  and register tiling, vectorization, threads) then :func:`runtime.cpu.compile` (LLVM IR,
  llvmlite JIT).
- ``target="auto"``: ``"cuda"`` when :func:`runtime.gpu_available` says a GPU is usable, else ``"cpu"``.

Errors: :class:`runtime.CompileError` (what could not be generated or compiled, with the
compiler's log), :class:`runtime.LaunchError` (bad arguments, resource limits, no GPU).
"""

from __future__ import annotations

from affine_ir import ModuleOp

from .bounds_guard import compile_time_guard
from .errors import CompileError

__all__ = ["TARGETS", "compile", "resolve_target"]

TARGETS = ("auto", "cuda", "cpu")


def resolve_target(target: str) -> str:
    """``"cuda"`` or ``"cpu"`` for ``target`` (``"auto"`` asks :func:`gpu_available`)."""
    if target not in TARGETS:
        raise CompileError(f"unknown target '{target}' (expected one of {', '.join(TARGETS)})")
    if target != "auto":
        return target
    from .cuda_driver import gpu_available

    return "cuda" if gpu_available() else "cpu"


def compile(module: ModuleOp, target: str = "auto", *, fn: str | None = None, arch: str | None = None,
            pipeline: str | None = None, trace_ir: bool = False, guard_module: ModuleOp | None = None, **options):
    """Compile ``module`` (its entry function ``fn``) for ``target``; the executable runs on
    numpy arrays (and device arrays for CUDA), updating memref arguments in place.
    ``pipeline``: the pass pipeline run first (None: the target's default,
    :data:`~transforms.pipelines.GPU_PIPELINE` or :data:`~transforms.pipelines.CPU_PIPELINE`;
    ``""``: none, which CUDA refuses: it needs ``gpu-map`` at least); ``options`` go to the backend
    (CPU: ``opt_level``, ``threads``, ``fast_math``, ``check_bounds``: every load and store checks its indices,
    a debug build; CUDA: ``ptx``, ``options``). The CPU
    pipeline vectorizes reductions along the reduced dimension, which reassociates float
    sums: give ``pipeline=cpu_pipeline(vectorize_reductions=False)`` for the sequential order.
    The result's ``module`` is the program it runs and ``trace`` the pass trace (the time and
    decisions of every pass, and with ``trace_ir=True`` the IR before and after each, for
    ``diff()``: printing the module after every pass costs compile time -- 10 % on the largest
    matrix-unit convolution kernels -- so it is off unless asked; None without passes).

    Bounds: before any pass, isl proves every affine access of the input inside its memref;
    one that is out of bounds whatever the arguments raises
    :class:`~runtime.bounds_guard.BoundsCompileError` (a CompileError, located, with a
    witness); those that depend on index arguments or dynamic sizes are checked on every call
    before anything runs (:class:`~runtime.bounds_guard.BoundsLaunchError`, a LaunchError).
    ``guard_module``: prove the bounds on this module instead (the program ``module`` was made
    from by earlier passes, e.g. a cached pipeline result: the same checks as compiling it)."""
    chosen = resolve_target(target)
    if chosen == "cuda" and options.get("check_bounds"):
        raise CompileError("check_bounds=True (a bounds-checked debug build) is a CPU build option; use target='cpu'")
    guard = compile_time_guard(guard_module if guard_module is not None else module, fn)
    exe = _compile_for(chosen, module, fn, arch, pipeline, trace_ir, options)
    exe.bounds_guard = guard
    return exe


def _compile_for(chosen: str, module: ModuleOp, fn, arch, pipeline, trace_ir: bool, options: dict):
    if chosen == "cuda":
        from . import cuda

        return cuda.compile(module, fn=fn, arch=arch, pipeline=pipeline, trace_ir=trace_ir, **options)
    from . import cpu

    if pipeline is None:
        from transforms.pipelines import CPU_PIPELINE

        pipeline = CPU_PIPELINE
    trace, original = None, module
    if pipeline:
        from transforms import PassManager

        pm = PassManager.parse(pipeline, capture_ir=trace_ir)
        module, trace = pm.run(module), pm.trace
    # the passes assume distinct memrefs: overlapping arrays run the module before them
    exe = cpu.compile(module, fn=fn, overlap_module=original if pipeline else None, **options)
    exe.trace = trace
    return exe
