"""Errors of the runtime: compiling and launching kernels."""

from __future__ import annotations

from affine_ir import IRError, Location


def numbered(source: str) -> str:
    """``source`` with 1-based line numbers, for error reports."""
    lines = source.splitlines()
    w = len(str(len(lines)))
    return "\n".join(f"{k + 1:>{w}} | {line}" for k, line in enumerate(lines))


class CompileError(IRError):
    """Code that could not be generated or compiled. ``log``: the compiler's (LLVM's, NVRTC's)
    messages; ``options``: the options used; ``source``: the generated source (``numbered_source``
    with line numbers). When the IR holds something the backend cannot compile, the message
    names the op and ``location`` is its place."""

    def __init__(self, message: str, location: Location | None = None, *, log: str = "", options=None,
                 source: str = ""):
        self.log = log
        self.options = dict(options or {})
        self.source = source
        super().__init__(message, location)

    @property
    def numbered_source(self) -> str:
        return numbered(self.source)


class LaunchError(IRError):
    """A call that cannot run: wrong arguments (count, dtype, shape, contiguity, read-only,
    overlap), or a resource limit; the message names the argument or the limit. Raised before
    anything runs, except for a heap allocation that fails while the CPU code runs (the message
    names the ``memref.alloc`` and its location; the call is abandoned, its outputs undefined)."""
