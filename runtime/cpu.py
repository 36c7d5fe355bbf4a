"""Compile affine IR for the host CPU and run it on numpy arrays.

::

    import runtime
    k = runtime.cpu.compile(module, fn=None, opt_level=3, threads=None)   # -> CPUExecutable
    k(A, B, C)          # memref arguments updated in place, like affine_ir.interpret

Guarantees
----------
- Arguments are checked before anything runs, with a :class:`~runtime.errors.LaunchError`
  naming the argument: their count; memrefs must be C-contiguous, aligned numpy arrays of
  the element dtype (bf16: ``ml_dtypes.bfloat16``, i1: ``bool``, index: ``int64``) with the
  rank and static dims of the type (``?`` dims are taken from the array); scalars are Python
  or numpy numbers that fit the type. Results come back as the interpreter returns them.
- The result equals the interpreter's (``affine_ir.interpret``) except where
  :mod:`codegen.llvm` documents a difference (traps, math functions, unchecked accesses) and for
  float reductions of ``affine.parallel`` loops split over threads (see below).
- Arrays passed for two memref arguments may overlap (their byte ranges intersect, one of them
  written): the call then runs a build compiled on first need without ``noalias`` from the
  module before any pass that assumes distinct memrefs (``overlap_module``: what
  :func:`runtime.compile` gives is the module before its pipeline), so the result is still the
  interpreter's.
- A read-only array (``flags.writeable`` false: ``setflags(write=False)``, ``np.frombuffer`` of
  ``bytes``, a read-only memmap) is refused for a memref the function may write
  (:func:`runtime.arg_checks.written_arguments`), accepted for one it only reads.
- **Threads**: when a top-level op of the function is an ``affine.parallel`` (what
  ``affine-parallelize`` produces) and ``threads != 1``, the function runs as its
  segments (:mod:`codegen.llvm.segments`): the iterations of the outermost loop of each
  such op are split into contiguous chunks run on a thread pool (ctypes releases the GIL),
  other top-level ops run in order on the calling thread. A reduction's chunks each start
  from the identity and their partial values are combined in chunk order; the chunks of a
  loop with reductions depend only on its trip count (at most :data:`REDUCTION_CHUNKS`), so
  results do not depend on the thread count. ``threads=1`` runs the whole function
  sequentially (the interpreter's order); ``threads=None`` uses ``os.cpu_count()``.
- Compiled objects are cached in memory (bounded LRU, :data:`MEMORY_CACHE_SIZE` entries) and on
  disk (:mod:`runtime.cache`: ``$AFFINE_IR_CACHE`` or the user cache dir, bounded in size),
  keyed by the IR text, the options, the llvmlite version and the host CPU; ``cache_info()``
  counts hits and compiles.
- **Allocations**: a heap buffer (``memref.alloc``, a large ``memref.alloca``) comes zeroed from
  ``calloc``, so pages the code never touches stay untouched. One larger than
  :func:`allocation_limit` bytes (default: physical memory plus swap,
  :func:`machine_memory_bytes`; changed for every loaded object by
  :func:`set_allocation_limit`), or one the C library refuses, abandons the call with a
  :class:`~runtime.errors.LaunchError` naming the op and its location, whatever the OS's
  overcommit policy.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from affine_ir.dialects.builtin import ModuleOp
from affine_ir.dialects.func import FuncOp
from affine_ir.floats import is_bfloat16_scalar, numpy_float_dtype
from affine_ir.types import FloatType, IndexType, IntegerType, MemRefType, Type, VectorType
from codegen.llvm import FAILURE_SYMBOL, EmitError, FailureSite, FunctionABI, LLVMModule, emit

from . import cpu_jit
from .arg_checks import written_arguments
from .cache import LRUCache
from .cpu_jit import allocation_limit, machine_memory_bytes, set_allocation_limit
from .entry import entry_function
from .errors import CompileError, LaunchError

#: Most chunks a parallel loop with reductions is split into (independent of the thread count).
REDUCTION_CHUNKS = 32
_WRAPPER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)

def numpy_dtype(t: Type) -> np.dtype | None:
    """The numpy dtype of arrays holding elements of ``t`` (None if there is none)."""
    if isinstance(t, FloatType):
        return numpy_float_dtype(t.name)
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, IntegerType):
        return {1: np.dtype(np.bool_), 8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32),
                64: np.dtype(np.int64)}.get(t.width)
    return None


# -- the cache ------------------------------------------------------------------------------------

@dataclass
class _Compiled:
    """A loaded object and the ABI of its functions."""

    loaded: cpu_jit.LoadedObject
    functions: dict[str, FunctionABI]
    text: str  # the emitted LLVM IR ('' after a disk hit)
    source: str  # how it was obtained: "compiled", "memory" or "disk"
    failure_sites: tuple[FailureSite, ...] = ()
    #: Held by a call of code that can fail: the failure flag is one global of the loaded code,
    #: so two calls at once could otherwise report each other's failure (or miss their own).
    call_lock: threading.Lock = field(default_factory=threading.Lock)

    def serialized(self):
        """The context a call runs in: the call lock when the code has failure sites."""
        return self.call_lock if self.failure_sites else contextlib.nullcontext()

    def check_failures(self) -> None:
        """LaunchError naming what failed during the last call (an allocation, an access out of
        bounds with ``check_bounds``), the flag cleared."""
        if not self.failure_sites:
            return
        flag = ctypes.c_int64.from_address(self.loaded.address(FAILURE_SYMBOL))
        site, flag.value = flag.value, 0
        if site:
            failed = self.failure_sites[site - 1]
            raise LaunchError(failed.message, failed.location)


#: Entries of the in-memory cache of loaded objects (least recently used ones are dropped).
MEMORY_CACHE_SIZE = 128
_memory: LRUCache[str, _Compiled] = LRUCache(lambda: MEMORY_CACHE_SIZE)
_memory_lock = threading.Lock()
_stats = {"memory_hits": 0, "disk_hits": 0, "compiles": 0}


def cache_info() -> dict[str, int]:
    """Counts since start: ``memory_hits``, ``disk_hits``, ``compiles``, and ``entries`` in memory."""
    with _memory_lock:
        return dict(_stats, entries=len(_memory))


def clear_memory_cache() -> None:
    """Drop the in-memory cache (the disk cache stays)."""
    with _memory_lock:
        _memory.clear()


def _compile_module(module: ModuleOp | FuncOp, opt_level: int, fast_math: bool, noalias: bool,
                    check_bounds: bool = False) -> _Compiled:
    text_ir = str(module)
    options = {"opt_level": opt_level, "fast_math": fast_math, "noalias": noalias}
    if check_bounds:
        options["check_bounds"] = True
    key = cpu_jit.cache_key(text_ir, repr(sorted(options.items())))
    with _memory_lock:
        hit = _memory.get(key)
        if hit is not None:
            _stats["memory_hits"] += 1
            return _Compiled(hit.loaded, hit.functions, hit.text, "memory", hit.failure_sites)
    stored = cpu_jit.disk_load(key)
    if stored is not None:
        obj, abi_json = stored
        try:
            compiled = _Compiled(cpu_jit.LoadedObject(obj, opt_level), LLVMModule.functions_from_json(abi_json), "",
                                 "disk", LLVMModule.failure_sites_from_json(abi_json))
            with _memory_lock:
                _stats["disk_hits"] += 1
                _memory.put(key, compiled)
            return compiled
        except Exception:  # a corrupt entry: compile again
            pass
    try:
        lm = emit(module, fast_math=fast_math, noalias=noalias, check_bounds=check_bounds)
    except EmitError as e:
        raise CompileError(e.message, e.location, options=options) from None
    try:
        obj, _ = cpu_jit.compile_object(lm.text, opt_level)
    except cpu_jit.LLVMFailure as e:
        raise CompileError(f"LLVM rejected the generated module: {e.log.strip().splitlines()[0] if e.log else ''}",
                           log=e.log, options=options, source=lm.text) from None
    compiled = _Compiled(cpu_jit.LoadedObject(obj, opt_level), lm.functions, lm.text, "compiled", lm.failure_sites)
    cpu_jit.disk_store(key, obj, lm.abi_json())
    with _memory_lock:
        _stats["compiles"] += 1
        _memory.put(key, compiled)
    return compiled


# -- entry choice and arguments ---------------------------------------------------------------------

def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {value.shape}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) < 40 else text[:37] + '...'}"


@dataclass(frozen=True)
class _Param:
    name: str
    type: Type
    fmt: str  # struct format of its slots


def _param(name: str, t: Type) -> _Param:
    if isinstance(t, MemRefType):
        return _Param(name, t, "Q" + "q" * sum(d is None for d in t.shape))
    if isinstance(t, FloatType):
        return _Param(name, t, "d" if t.name == "f64" else "f4x")
    return _Param(name, t, "q")


def _scalar(p: _Param, k: int, value):
    t = p.type
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    is_int = isinstance(value, (int, np.integer, np.bool_))
    if isinstance(t, FloatType):
        if not (is_int or isinstance(value, (float, np.floating)) or is_bfloat16_scalar(value)):
            raise LaunchError(f"argument #{k} ({p.name}): expected {t}, got {_describe(value)}")
        x = float(value) if not is_int else float(int(value))
        if t.name == "f64":
            return x
        with np.errstate(over="ignore"):  # rounds to the type (overflow gives inf, as the interpreter)
            return float(np.array(x, dtype=numpy_float_dtype(t.name)).astype(np.float64))
    if not is_int:
        raise LaunchError(f"argument #{k} ({p.name}): expected {t}, got {_describe(value)}")
    v = int(value)
    w = 64 if isinstance(t, IndexType) else t.width
    hi = (1 << 63) if isinstance(t, IndexType) else (1 << w)
    if not -(1 << (w - 1)) <= v < hi:
        raise LaunchError(f"argument #{k} ({p.name}): {v} does not fit in {t}")
    v &= (1 << w) - 1
    if w < 64 and v >= 1 << (w - 1) and w > 1:
        v -= 1 << w
    return v - (1 << 64) if v >= 1 << 63 else v


def _memref(p: _Param, k: int, value, written: bool) -> list[int]:
    t: MemRefType = p.type
    want = numpy_dtype(t.element_type)
    where = f"argument #{k} ({p.name})"
    if isinstance(value, (list, tuple)):
        raise LaunchError(f"{where}: expected a numpy array for {t}, got a Python {type(value).__name__} "
                          f"(pass numpy.asarray(x, dtype={want}))")
    if not isinstance(value, np.ndarray):
        raise LaunchError(f"{where}: expected a numpy array for {t}, got {_describe(value)}")
    if want is None or value.dtype != want:
        raise LaunchError(f"{where}: expected dtype {want} for {t}, got {_describe(value)}")
    if value.ndim != t.rank or any(d is not None and d != n for d, n in zip(t.shape, value.shape)):
        raise LaunchError(f"{where}: expected shape {tuple('?' if d is None else d for d in t.shape)} for {t}, "
                          f"got {_describe(value)}")
    if not value.flags.c_contiguous:
        raise LaunchError(f"{where}: the array is not C-contiguous (pass np.ascontiguousarray(...))")
    if not value.flags.aligned:
        raise LaunchError(f"{where}: the array is not aligned to its element size")
    if written and not value.flags.writeable:
        raise LaunchError(f"{where}: the function writes this argument but the array is read-only")
    return [value.ctypes.data] + [n for d, n in zip(t.shape, value.shape) if d is None]


def _overlap(arrays: list[tuple[np.ndarray, bool]]) -> bool:
    """Whether the byte ranges of two arrays intersect, one of them written (``np.may_share_memory``
    compares the memory bounds, so views of one buffer overlap when their extents do)."""
    for i, (a, wa) in enumerate(arrays):
        for b, wb in arrays[i + 1:]:
            if (wa or wb) and a.nbytes and b.nbytes and np.may_share_memory(a, b):
                return True
    return False


def _result(raw: bytes, t: Type):
    if isinstance(t, FloatType):
        if t.name == "f64":
            return np.float64(struct.unpack_from("<d", raw)[0])
        return numpy_float_dtype(t.name).type(struct.unpack_from("<f", raw)[0])
    v = struct.unpack_from("<q", raw)[0]
    if isinstance(t, IndexType):
        return int(v)
    if t.width == 1:
        return bool(raw[0] & 1)
    w = t.width
    v &= (1 << w) - 1
    v = v - (1 << w) if v >= 1 << (w - 1) else v
    dt = numpy_dtype(t)
    return dt.type(v) if dt is not None else v


# -- the executable ---------------------------------------------------------------------------------

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    with _pools_lock:
        p = _pools.get(threads)
        if p is None:
            p = _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="affine-ir-cpu")
        return p


class CPUExecutable:
    """A compiled function of a module, called as ``k(*arrays_and_scalars)``.

    Attributes: ``name`` (the IR function), ``abi`` (:class:`codegen.llvm.FunctionABI`),
    ``threads``, ``opt_level``, ``cache`` ("compiled", "memory" or "disk": how the code was
    obtained), ``compile_seconds``, ``llvm_ir`` (the emitted LLVM IR text), ``module`` (the
    IR compiled), ``trace`` (the pass trace when :func:`runtime.compile` ran passes first).
    """

    trace = None
    bounds_guard = None  # runtime.compile's launch-time bounds checks (called with the arguments)

    def __init__(self, module: ModuleOp | FuncOp, fn: str | None = None, opt_level: int = 3,
                 threads: int | None = None, fast_math: bool = False,
                 overlap_module: ModuleOp | FuncOp | None = None, check_bounds: bool = False):
        if isinstance(module, FuncOp):
            parent = module.parent_op
            fn = fn or module.sym_name
            module = parent if isinstance(parent, ModuleOp) else module
        elif not isinstance(module, ModuleOp):
            raise CompileError(f"expected a module or a func.func op, got {type(module).__name__}")
        self.module = module
        self._overlap_module = overlap_module.parent_op if isinstance(overlap_module, FuncOp) and \
            isinstance(overlap_module.parent_op, ModuleOp) else overlap_module
        func = entry_function(module, fn) if isinstance(module, ModuleOp) else module
        self._written = written_arguments(func)
        self.name = func.sym_name
        self.opt_level = opt_level
        self.fast_math = fast_math
        self.check_bounds = check_bounds
        self.threads = max(1, threads if threads is not None else (os.cpu_count() or 1))
        names = [f"%{a.name_hint}" if a.name_hint else f"%arg{i}" for i, a in enumerate(func.args)]
        self._params = [_param(n, t) for n, t in zip(names, func.function_type.inputs)]
        for p in self._params:
            if isinstance(p.type, VectorType) or (isinstance(p.type, MemRefType) and
                                                  numpy_dtype(p.type.element_type) is None):
                raise CompileError(f"@{self.name}: argument {p.name} of type {p.type} cannot be passed from Python")
        self._results = list(func.function_type.results)
        self._fmt = "<" + "".join(p.fmt for p in self._params)
        self._variants: dict[bool, tuple] = {}
        t0 = time.perf_counter()
        self._variant(True)
        self.compile_seconds = time.perf_counter() - t0

    def _variant(self, noalias: bool) -> tuple:
        v = self._variants.get(noalias)
        if v is None:
            source = self.module if noalias or self._overlap_module is None else self._overlap_module
            c = _compile_module(source, self.opt_level, self.fast_math, noalias, self.check_bounds)
            abi = c.functions[self.name]
            entry = _WRAPPER(c.loaded.address(abi.entry))
            segs = []
            for s in abi.segments:
                fns = [_WRAPPER(c.loaded.address(sym)) if sym else None
                       for sym in (s.symbol, s.bounds_symbol, s.combine_symbol)]
                segs.append((s, *fns))
            v = self._variants[noalias] = (c, abi, entry, segs)
            if noalias:
                self.cache = c.source
        return v

    @property
    def abi(self) -> FunctionABI:
        return self._variants[True][1]

    @property
    def llvm_ir(self) -> str:
        """The emitted LLVM IR (re-emitted when the code came from the disk cache)."""
        text = self._variants[True][0].text
        return text or emit(self.module, fast_math=self.fast_math, check_bounds=self.check_bounds).text

    def __repr__(self) -> str:
        return f"<CPUExecutable @{self.name} -O{self.opt_level} threads={self.threads}>"

    def pack(self, args) -> tuple[ctypes.Array, bool]:
        """Check ``args`` and pack them (see :class:`codegen.llvm.FunctionABI`); also whether two
        array arguments overlap."""
        if len(args) != len(self._params):
            types = ", ".join(str(p.type) for p in self._params)
            raise LaunchError(f"@{self.name} takes {len(self._params)} arguments ({types}), got {len(args)}")
        flat: list = []
        arrays = []
        for k, (p, a) in enumerate(zip(self._params, args)):
            if isinstance(p.type, MemRefType):
                flat += _memref(p, k, a, k in self._written)
                arrays.append((a, k in self._written))
            else:
                flat.append(_scalar(p, k, a))
        buf = ctypes.create_string_buffer(max(8, struct.calcsize(self._fmt)))
        struct.pack_into(self._fmt, buf, 0, *flat)
        return buf, len(arrays) > 1 and _overlap(arrays)

    def __call__(self, *args):
        buf, overlap = self.pack(args)
        if self.bounds_guard is not None:
            self.bounds_guard(args)
        compiled, abi, entry, segs = self._variant(not overlap)
        out = ctypes.create_string_buffer(8 * max(1, len(self._results)))
        argp, outp = ctypes.addressof(buf), ctypes.addressof(out)
        with compiled.serialized():
            if not segs or self.threads == 1:
                entry(argp, None, 0, 0, outp)
                compiled.check_failures()
            else:
                frame = ctypes.create_string_buffer(max(8, abi.frame_size))
                framep = ctypes.addressof(frame)
                for s, run, bounds, combine in segs:
                    if s.kind == "serial":
                        run(argp, framep, 0, 0, outp)
                    else:
                        self._run_parallel(s, run, bounds, combine, argp, framep)
                    compiled.check_failures()
        raw = out.raw
        results = tuple(_result(raw[8 * k:], t) for k, t in enumerate(self._results))
        if not results:
            return None
        return results[0] if len(results) == 1 else results

    def _run_parallel(self, s, run, bounds, combine, argp: int, framep: int) -> None:
        lbub = (ctypes.c_int64 * 2)()
        bounds(argp, framep, 0, 0, ctypes.addressof(lbub))
        lb, ub = lbub[0], lbub[1]
        trips = max(0, -(-(ub - lb) // s.step))
        limit = REDUCTION_CHUNKS if s.partial_size else self.threads * 4
        n = min(trips, limit)
        partials = ctypes.create_string_buffer(max(8, n * s.partial_size))
        pbase = ctypes.addressof(partials)
        # the last cut is ub, not lb + trips * step, which may pass INT64_MAX
        cuts = [lb + (c * trips // n) * s.step for c in range(n)] + [ub] if n else []

        def chunk(c: int) -> None:
            run(argp, framep, cuts[c], cuts[c + 1], pbase + c * s.partial_size)

        if n == 1:
            chunk(0)
        elif n > 1:
            list(_pool(self.threads).map(chunk, range(n)))
        combine(argp, framep, n, 0, pbase)


CPUKernel = CPUExecutable


def compile(module: ModuleOp | FuncOp, fn: str | None = None, opt_level: int = 3, threads: int | None = None,
            fast_math: bool = False, overlap_module: ModuleOp | FuncOp | None = None,
            check_bounds: bool = False) -> CPUExecutable:
    """Compile function ``fn`` of ``module`` (default: its only function with a body, else the
    only one no other function calls) for the host CPU at ``-O<opt_level>``; see the module
    docs for what calling it guarantees. Raises :class:`~runtime.errors.CompileError` (naming
    the op and its location for IR the backend cannot compile; with LLVM's log otherwise).
    ``overlap_module``: the program to run when array arguments overlap (default ``module``
    itself), e.g. the module before passes that assume distinct memrefs. ``check_bounds``: every
    access checks its indices; one out of bounds abandons the call with a LaunchError naming
    the op and its location (slower; ``affine-run`` uses it for its checked run)."""
    return CPUExecutable(module, fn, opt_level, threads, fast_math, overlap_module, check_bounds)


__all__ = ["CPUExecutable", "CPUKernel", "MEMORY_CACHE_SIZE", "REDUCTION_CHUNKS", "allocation_limit", "cache_info",
           "clear_memory_cache", "compile", "machine_memory_bytes", "numpy_dtype", "set_allocation_limit"]
