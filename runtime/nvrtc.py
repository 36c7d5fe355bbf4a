"""CUDA C -> CUBIN/PTX through NVRTC (``cuda.bindings.nvrtc``), with an in-memory and on-disk cache.

- NVRTC has no built-in headers: every compile gets ``-I`` to the CUDA include directory found by
  ``cuda.pathfinder`` (``cuda_fp16.h``, ``cuda_bf16.h``, ``mma.h`` live there), ``-std=c++17`` and
  ``-arch=<arch>``; the caller's options come last.
- ``arch="sm_90"`` gives a CUBIN for that device (the default: no JIT at load time); ``ptx=True``
  or ``arch="compute_90"`` gives PTX. PTX is only accepted by a driver at least as new as NVRTC
  (``check_driver_compatibility``); the package pins ``nvidia-cuda-nvrtc`` to the GPU machine's driver.
- A failure raises :class:`runtime.errors.CompileError` carrying the NVRTC log, the options and the
  source; its message quotes the numbered source lines the log points at. Warnings do not fail a
  compile: they stay in :attr:`CudaImage.log` (:attr:`CudaImage.warnings`).
- Images are cached in memory (bounded LRU, :data:`MEMORY_CACHE_SIZE` entries) and on disk in
  :mod:`runtime.cache`'s directory (``$AFFINE_IR_CACHE``, else the user cache dir; bounded in
  size, least recently used entries evicted; shared with the CPU backend), keyed by the sha256 of the
  source, the options, the NVRTC version, the arch, the output kind and the file name.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import cache
from .cuda_python import CUDA_EXTRA, import_cuda
from .errors import CompileError, numbered

#: Entries of the in-memory image cache (least recently used ones are dropped).
MEMORY_CACHE_SIZE = 256
CACHE_FORMAT = "nvrtc-v1"
_ARCH = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


@dataclass(frozen=True)
class CudaImage:
    """A compiled translation unit: ``image`` is a CUBIN (``kind="cubin"``) or NUL-terminated PTX
    (``kind="ptx"``) for ``arch``; ``options`` the full NVRTC option list; ``log`` NVRTC's messages
    (warnings; empty for a clean compile); ``source`` the CUDA C it was compiled from."""

    image: bytes
    kind: str
    arch: str
    options: tuple[str, ...]
    log: str
    source: str
    name: str = "kernel.cu"

    @property
    def warnings(self) -> list[str]:
        """The log's warning lines (``kernel.cu(8): warning #177-D: ...``)."""
        return [line for line in self.log.splitlines() if "warning" in line.lower()]

    @property
    def ptx(self) -> str:
        """The PTX text (``kind="ptx"`` only)."""
        if self.kind != "ptx":
            raise ValueError(f"this image is a {self.kind}, not PTX")
        return self.image.rstrip(b"\0").decode()

    def __repr__(self) -> str:
        return f"CudaImage({self.kind}, {self.arch}, {len(self.image)} bytes, {len(self.warnings)} warnings)"


# -- NVRTC facts -------------------------------------------------------------------------------------

def _nvrtc():
    return import_cuda("cuda.bindings.nvrtc")


@functools.lru_cache(maxsize=1)
def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the loaded NVRTC library, e.g. ``(13, 0)``."""
    try:
        err, major, minor = _nvrtc().nvrtcVersion()
    except CompileError:
        raise
    except Exception as e:  # the library is missing (cuda.pathfinder's DynamicLibNotFoundError) or broken
        raise CompileError(f"NVRTC is not usable: {e} (install nvidia-cuda-nvrtc matching the driver; "
                           f"{CUDA_EXTRA} installs the tested one)") from None
    _check(err, "nvrtcVersion")
    return int(major), int(minor)


@functools.lru_cache(maxsize=1)
def include_dirs() -> list[str]:
    """The directories passed with ``-I``: the CUDA runtime headers (``cuda_fp16.h``, ``cuda_bf16.h``,
    ``mma.h``, ``crt/``). Raises :class:`CompileError` when the headers are not installed."""
    pathfinder = import_cuda("cuda.pathfinder")
    dirs: list[str] = []
    for lib in ("cudart", "nvrtc"):
        try:
            d = pathfinder.find_nvidia_header_directory(lib)
        except Exception:  # pathfinder raises for libraries it does not know in some versions
            d = None
        if d and d not in dirs:
            dirs.append(d)
    # The nvidia-* wheels may be split over several site directories (e.g. nvidia-cuda-crt, which
    # holds crt/mma.h, installed apart from nvidia-cuda-runtime): every nvidia/cu<N>/include on
    # sys.path that has headers, in sys.path order, the one with crt/ first.
    roots = [os.path.join(p, "nvidia") for p in sys.path if p and os.path.isdir(os.path.join(p, "nvidia"))]
    found = [os.path.join(r, sub, "include") for r in roots for sub in sorted(os.listdir(r)) if sub.startswith("cu")]
    found = [d for d in found if os.path.exists(os.path.join(d, "cuda_fp16.h")) or os.path.isdir(d + "/crt")]
    found.sort(key=lambda d: not os.path.exists(os.path.join(d, "crt", "mma.h")))
    dirs = [d for d in found if d not in dirs] + dirs
    if not any(os.path.exists(os.path.join(d, "cuda_fp16.h")) for d in dirs):  # a toolkit install, last resort
        for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
            if root and os.path.exists(os.path.join(root, "include", "cuda_fp16.h")):
                dirs.append(os.path.join(root, "include"))
                break
    if not any(os.path.exists(os.path.join(d, "cuda_fp16.h")) for d in dirs):
        raise CompileError("the CUDA headers (cuda_fp16.h, mma.h) were not found: install nvidia-cuda-runtime and "
                           "nvidia-cuda-crt matching NVRTC " + ".".join(map(str, nvrtc_version())))
    return dirs


def check_driver_compatibility(driver_version: tuple[int, int], kind: str = "ptx") -> str | None:
    """None when a driver of CUDA version ``driver_version`` (major, minor) loads what this NVRTC
    writes (``kind`` "ptx" or "cubin"), else the reason, naming both versions and the fix.

    PTX needs a driver at least as new as NVRTC (NVRTC 13.5 writes PTX ISA 9.5, which a 13.0 driver
    refuses with CUDA_ERROR_UNSUPPORTED_PTX_VERSION); a CUBIN needs the same major version."""
    nv = nvrtc_version()
    drv = tuple(int(x) for x in driver_version)
    pin = f"nvidia-cuda-nvrtc=={drv[0]}.{drv[1]}.*"
    if nv[0] > drv[0] or (kind == "ptx" and nv > drv):
        return (f"NVRTC {nv[0]}.{nv[1]} is newer than the driver (CUDA {drv[0]}.{drv[1]}): the driver cannot load "
                f"its {kind.upper()}; install {pin} (and nvidia-cuda-runtime/nvidia-cuda-crt of the same version) "
                f"or update the driver")
    return None


def _check(err, what: str) -> None:
    nvrtc = _nvrtc()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"{what} failed: {_result_name(err)}")


def _result_name(err) -> str:
    try:
        return err.name
    except AttributeError:
        return str(err)


# -- options, keys, caches ---------------------------------------------------------------------------

def normalize_arch(arch: str, ptx: bool = False) -> tuple[str, str]:
    """(the ``-arch`` value, the output kind) for ``arch`` ("sm_90", "sm_90a", "compute_90", or 90):
    ``compute_*`` or ``ptx=True`` give PTX, ``sm_*`` a CUBIN."""
    a = f"sm_{arch}" if isinstance(arch, int) or str(arch).isdigit() else str(arch)
    m = _ARCH.match(a)
    if m is None:
        raise CompileError(f"unknown CUDA architecture {arch!r} (expected e.g. 'sm_90', 'sm_90a' or 'compute_90')",
                           options={"arch": arch})
    if m.group(1) == "compute" or ptx:
        return f"compute_{m.group(2)}{m.group(3)}", "ptx"
    return a, "cubin"


def nvrtc_options(arch: str, options: Sequence[str] = ()) -> tuple[str, ...]:
    """The full option list for ``arch`` (already normalized): ``-arch``, ``-std=c++17``, the ``-I``
    directories, then ``options``."""
    return (f"-arch={arch}", "-std=c++17", *(f"-I{d}" for d in include_dirs()), *options)


def cache_key(source: str, options: Sequence[str], arch: str, kind: str, name: str = "kernel.cu") -> str:
    """sha256 hex digest of everything the image depends on: the source, the options, the NVRTC
    version, the arch, the output kind and the file name (it appears in the log)."""
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, source, "\x1f".join(options), ".".join(map(str, nvrtc_version())), arch, kind, name):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cache_dir() -> Path:
    """The disk cache's directory, shared with the CPU backend (:func:`runtime.cache.cache_dir`:
    ``$AFFINE_IR_CACHE``, else the user cache dir)."""
    return cache.cache_dir()


_memory: cache.LRUCache[str, CudaImage] = cache.LRUCache(lambda: MEMORY_CACHE_SIZE)
_lock = threading.Lock()
_stats = {"memory_hits": 0, "disk_hits": 0, "compiles": 0}


def cache_info() -> dict[str, int]:
    """Counts since start: ``memory_hits``, ``disk_hits``, ``compiles``; ``entries`` in memory."""
    with _lock:
        return dict(_stats, entries=len(_memory))


def clear_memory_cache() -> None:
    """Drop the in-memory cache (the disk cache stays)."""
    _memory.clear()


def _disk_load(key: str, source: str) -> CudaImage | None:
    try:
        meta = json.loads((cache_dir() / f"{key}.nvrtc.json").read_text())
        data = cache.read_entry(key, (f".{meta['kind']}", ".nvrtc.json"))
        if data is None:
            return None
        return CudaImage(data[0], meta["kind"], meta["arch"], tuple(meta["options"]), meta["log"], source,
                         meta.get("name", "kernel.cu"))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _disk_store(key: str, img: CudaImage) -> None:
    """Atomic (the metadata last, it marks completeness), then bounded by evicting least recently
    used entries; failures are ignored: the cache is an optimization."""
    meta = {"kind": img.kind, "arch": img.arch, "options": list(img.options), "log": img.log, "name": img.name}
    cache.write_entry(key, ((f".{img.kind}", img.image), (".nvrtc.json", json.dumps(meta).encode())))


# -- compiling ---------------------------------------------------------------------------------------

def compile_cuda(source: str, arch: str = "sm_90", *, ptx: bool = False, options: Sequence[str] = (),
                 name: str = "kernel.cu", cache: bool = True) -> CudaImage:
    """Compile the CUDA C translation unit ``source`` for ``arch`` (see :func:`normalize_arch`).

    Raises :class:`CompileError` (``.log``, ``.options``, ``.source``) when NVRTC refuses the source
    or an option. ``cache=False`` neither reads nor writes the caches."""
    arch_flag, kind = normalize_arch(arch, ptx)
    opts = nvrtc_options(arch_flag, tuple(str(o) for o in options))
    key = cache_key(source, opts, arch_flag, kind, name)
    if cache:
        hit = _memory.get(key)
        if hit is not None:
            with _lock:
                _stats["memory_hits"] += 1
            return hit
        hit = _disk_load(key, source)
        if hit is not None:
            with _lock:
                _stats["disk_hits"] += 1
            _memory.put(key, hit)
            return hit
    img = _run_nvrtc(source, arch_flag, kind, opts, name)
    with _lock:
        _stats["compiles"] += 1
    if cache:
        _memory.put(key, img)
        _disk_store(key, img)
    return img


def _run_nvrtc(source: str, arch: str, kind: str, opts: tuple[str, ...], name: str) -> CudaImage:
    nvrtc = _nvrtc()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        encoded = [o.encode() for o in opts]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        log = _program_log(prog)
        if result != ok:
            raise _compile_error(source, arch, kind, opts, name, result, log)
        if kind == "cubin":
            err, size = nvrtc.nvrtcGetCUBINSize(prog)
            _check(err, "nvrtcGetCUBINSize")
            buf = bytes(size)
            (err,) = nvrtc.nvrtcGetCUBIN(prog, buf)
            _check(err, "nvrtcGetCUBIN")
        else:
            err, size = nvrtc.nvrtcGetPTXSize(prog)
            _check(err, "nvrtcGetPTXSize")
            buf = bytes(size)
            (err,) = nvrtc.nvrtcGetPTX(prog, buf)
            _check(err, "nvrtcGetPTX")
        return CudaImage(buf, kind, arch, opts, log, source, name)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _program_log(prog) -> str:
    nvrtc = _nvrtc()
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buf = bytes(size)
    nvrtc.nvrtcGetProgramLog(prog, buf)
    return buf.rstrip(b"\0").decode(errors="replace").strip()


def _compile_error(source: str, arch: str, kind: str, opts: tuple[str, ...], name: str, result, log: str):
    """A CompileError whose message names the first error and quotes the source lines the log mentions."""
    pattern = re.compile(rf"^{re.escape(name)}\((\d+)\): (?:catastrophic )?error[^:]*: (.*)$", re.M)
    errors = pattern.findall(log)
    if errors:
        first = f"{name}:{errors[0][0]}: {errors[0][1].strip()}"
    else:
        lines = [line.strip() for line in log.splitlines() if line.strip()]
        first = lines[0] if lines else _result_name(result)
    msg = f"NVRTC {'.'.join(map(str, nvrtc_version()))} could not compile {name} for {arch}: {first}"
    excerpt = _source_excerpt(source, sorted({int(n) for n, _ in errors}))
    parts = [msg]
    if log:
        parts.append("NVRTC log:\n" + log)
    if excerpt:
        parts.append("source:\n" + excerpt)
    parts.append("options: " + " ".join(opts))
    return CompileError("\n".join(parts), log=log, source=source,
                        options={"arch": arch, "kind": kind, "name": name, "flags": opts})


def _source_excerpt(source: str, lines: list[int], context: int = 1) -> str:
    """The numbered lines ``lines`` (1-based) of ``source`` with ``context`` lines around, gaps as '...'."""
    if not lines:
        return ""
    all_lines = numbered(source).splitlines()
    keep = sorted({k for n in lines for k in range(n - 1 - context, n + context) if 0 <= k < len(all_lines)})
    out: list[str] = []
    prev = None
    for k in keep:
        if prev is not None and k != prev + 1:
            out.append("  ...")
        out.append(all_lines[k] + ("   <-- here" if k + 1 in lines else ""))
        prev = k
    return "\n".join(out)


__all__ = ["CACHE_FORMAT", "MEMORY_CACHE_SIZE", "CudaImage", "cache_dir", "cache_info", "cache_key",
           "check_driver_compatibility", "clear_memory_cache", "compile_cuda", "include_dirs", "normalize_arch",
           "nvrtc_options", "nvrtc_version"]
