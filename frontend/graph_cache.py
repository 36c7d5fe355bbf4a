"""The compiled-graph cache on disk: a second process compiling the same graph skips the passes
(issue 21).

An entry maps (the imported graph's IR text, the target -- and for the CPU the host's vector
width, caches and cores, which the CPU pipeline schedules for --, the pass pipeline, the compiler's
own files) to the IR the pipeline made of it (``<key>.graph.mlir`` in :func:`runtime.cache.cache_dir`,
bounded and evicted with the other entries, see :mod:`runtime.cache`). On a hit the stored IR is
parsed and handed to the backend with no passes; code generation then finds its object code
(CPU) or cubin (NVRTC) in the same directory, so nothing is recompiled. The key includes a digest of
every source file of the compiler's packages: a changed compiler never reads an old entry.
``$AFFINE_IR_CACHE_MAX_BYTES=0`` turns the disk caches off (compile times "caches off").
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import affine_ir as air
from affine_ir import ModuleOp
from analysis.targets import host_cpu
from runtime import cache

__all__ = ["SUFFIX", "compiler_digest", "key", "load", "store"]

SUFFIX = ".graph.mlir"
_PACKAGES = ("affine_ir", "analysis", "transforms", "codegen", "runtime", "frontend")


@functools.cache
def compiler_digest() -> str:
    """A digest of the compiler: every file of its packages (sources and data, e.g. the cost
    model's fitted constants), by path and content, and the islpy version."""
    import islpy

    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(islpy.__version__.encode())
    for package in _PACKAGES:
        for path in sorted(p for p in (root / package).rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def key(module: ModuleOp, target: str, pipeline: str | None) -> str:
    """The entry of ``module`` compiled for ``target`` through ``pipeline`` (None: the default)."""
    h = hashlib.sha256()
    machine = repr(host_cpu()) if target == "cpu" else ""  # the CPU pipeline schedules for this host
    for part in ("graph-cache-1", compiler_digest(), target, machine, repr(pipeline), air.print_op(module)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(entry: str) -> ModuleOp | None:
    """The module stored under ``entry`` (None: not there, unreadable or not parseable)."""
    data = cache.read_entry(entry, [SUFFIX])
    if data is None:
        return None
    try:
        return air.parse(data[0].decode(), f"{entry}{SUFFIX}")
    except (air.IRError, UnicodeDecodeError):
        return None


def store(entry: str, compiled: ModuleOp) -> None:
    """Keep ``compiled`` (the module after the pipeline) under ``entry``; failures are ignored."""
    cache.write_entry(entry, [(SUFFIX, air.print_op(compiled).encode())])
