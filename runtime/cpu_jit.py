"""The llvmlite side of the CPU backend: host target machine, the -O pipeline (loop and SLP
vectorization), object code, loading objects into an MCJIT engine, the allocation limit of
loaded code, and the on-disk object cache (:mod:`runtime.cache`).

**Allocation limit**: a heap allocation of the generated code larger than
:func:`allocation_limit` bytes fails (a located ``LaunchError``) instead of being attempted.
It defaults to the machine's physical memory plus swap (:func:`machine_memory_bytes`), so an
allocation that could never be backed fails the same way whatever the OS's overcommit policy
(with overcommit on, ``calloc`` of 4 TiB succeeds and touching it gets the process killed).
The limit lives in each loaded object's ``air.alloc_limit`` global (the IR and object code are
cached across machines, so it cannot be a compile-time constant); :func:`set_allocation_limit`
changes it for every loaded object.

``llvmlite.binding.initialize()`` raises in llvmlite 0.50; only the native target and asm
printer are initialized. LLVM's global state is not thread-safe: compiling is serialized by
a lock (calling compiled code is not).
"""

from __future__ import annotations

import ctypes.util
import hashlib
import os
import threading
import weakref
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from codegen.llvm import ALLOC_LIMIT_SYMBOL, NO_ALLOC_LIMIT

from . import cache

_lock = threading.RLock()
_ready = False
_machines: dict[int, llvm.TargetMachine] = {}
CACHE_FORMAT = "cpu-v4"  # bumped when the generated code changes for the same IR (v2: inline math; v3: overflow-safe
# loops, failure sites; v4: calloc'd heap buffers, the allocation limit)


def _init() -> None:
    global _ready
    if _ready:
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    libm = ctypes.util.find_library("m")
    if libm:
        try:
            llvm.load_library_permanently(libm)
        except RuntimeError:  # pragma: no cover - libm is part of the process anyway
            pass
    _ready = True


def host() -> tuple[str, str]:
    """The host CPU's name and LLVM feature string."""
    with _lock:
        _init()
        return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


def new_target_machine(opt_level: int) -> llvm.TargetMachine:
    """A new target machine for the host CPU."""
    with _lock:
        _init()
        cpu, features = host()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        return target.create_target_machine(cpu=cpu, features=features, opt=min(opt_level, 3), jit=True)


def target_machine(opt_level: int) -> llvm.TargetMachine:
    """The shared target machine of an optimization level (for compiling; an MCJIT engine
    takes ownership of its machine, so each engine gets a new one)."""
    with _lock:
        tm = _machines.get(opt_level)
        if tm is None:
            tm = _machines[opt_level] = new_target_machine(opt_level)
        return tm


def cache_key(*parts: str) -> str:
    """A hex digest of ``parts`` + the llvmlite version + the host CPU (what object code depends on)."""
    h = hashlib.sha256()
    for p in (CACHE_FORMAT, llvmlite.__version__, *host(), *parts):
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


class LLVMFailure(Exception):
    """LLVM rejected the module; ``log`` holds its message."""

    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


def compile_object(text: str, opt_level: int) -> tuple[bytes, str]:
    """Object code for the LLVM IR ``text`` at ``-O<opt_level>``, and the optimized IR.
    Raises :class:`LLVMFailure` on invalid IR or an external symbol the process lacks."""
    with _lock:
        tm = target_machine(opt_level)
        try:
            mod = llvm.parse_assembly(text)
            mod.triple = llvm.get_process_triple()
            mod.data_layout = str(tm.target_data)
            mod.verify()
        except RuntimeError as e:
            raise LLVMFailure(str(e)) from None
        if opt_level > 0:
            pto = llvm.create_pipeline_tuning_options(speed_level=min(opt_level, 3))
            pto.loop_vectorization = opt_level >= 2
            pto.slp_vectorization = opt_level >= 2
            pto.loop_unrolling = opt_level >= 2
            pb = llvm.create_pass_builder(tm, pto)
            pb.getModulePassManager().run(mod, pb)
        missing = [f.name for f in mod.functions if f.is_declaration and not f.name.startswith("llvm.")
                   and not llvm.address_of_symbol(f.name)]
        if missing:
            raise LLVMFailure(f"external symbols not found in the process: {', '.join(missing)}")
        return tm.emit_object(mod), str(mod)


# -- the allocation limit of loaded code ---------------------------------------------------------

def machine_memory_bytes() -> int:
    """Physical memory plus swap of this machine in bytes (``NO_ALLOC_LIMIT`` where the OS does
    not tell the physical memory; swap counts as 0 where it does not tell the swap)."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return NO_ALLOC_LIMIT
    if physical <= 0:
        return NO_ALLOC_LIMIT
    return min(NO_ALLOC_LIMIT, physical + _swap_bytes())


def _swap_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("SwapTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


_alloc_limit = machine_memory_bytes()
_limit_lock = threading.Lock()
_loaded: weakref.WeakSet[LoadedObject] = weakref.WeakSet()  # loaded objects that hold the limit global


def allocation_limit() -> int:
    """The byte size above which a heap allocation of loaded code fails (see the module docs)."""
    return _alloc_limit


def set_allocation_limit(nbytes: int | None) -> int:
    """Make ``nbytes`` (clamped to ``0 .. NO_ALLOC_LIMIT``; None: :func:`machine_memory_bytes`)
    the allocation limit of every loaded object, now and loaded later; returns the previous limit."""
    global _alloc_limit
    limit = machine_memory_bytes() if nbytes is None else max(0, min(NO_ALLOC_LIMIT, int(nbytes)))
    with _limit_lock:
        previous, _alloc_limit = _alloc_limit, limit
        for obj in list(_loaded):
            obj.limit_cell.value = limit
    return previous


class LoadedObject:
    """Object code loaded into its own MCJIT engine; ``address(symbol)`` of its functions.
    The code stays valid while this object lives; its allocation limit (where its code
    allocates) is :func:`allocation_limit`."""

    def __init__(self, obj: bytes, opt_level: int):
        with _lock:
            tm = new_target_machine(opt_level)  # owned (and disposed) by the engine
            empty = llvm.parse_assembly("")
            empty.triple = llvm.get_process_triple()
            self.engine = llvm.create_mcjit_compiler(empty, tm)
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.engine.finalize_object()
        self.limit_cell: ctypes.c_int64 | None = None
        try:
            self.limit_cell = ctypes.c_int64.from_address(self.address(ALLOC_LIMIT_SYMBOL))
        except KeyError:  # the code never allocates on the heap
            return
        with _limit_lock:
            self.limit_cell.value = _alloc_limit
            _loaded.add(self)

    def address(self, symbol: str) -> int:
        with _lock:
            addr = self.engine.get_function_address(symbol)
        if not addr:
            raise KeyError(symbol)
        return addr


# -- the disk cache (runtime.cache: one bounded directory shared with NVRTC) ---------------------

def cache_dir() -> Path:
    """The disk cache's directory (:func:`runtime.cache.cache_dir`: ``$AFFINE_IR_CACHE``, else the
    user cache dir)."""
    return cache.cache_dir()


def disk_load(key: str) -> tuple[bytes, str] | None:
    """(object code, ABI JSON) stored under ``key``, or None (a hit marks the entry as used)."""
    data = cache.read_entry(key, (".o", ".json"))
    if data is None:
        return None
    try:
        return data[0], data[1].decode()
    except UnicodeDecodeError:
        return None


def disk_store(key: str, obj: bytes, abi_json: str) -> None:
    """Store atomically, then evict least recently used entries beyond the size bound; failures
    are ignored (the cache is an optimization)."""
    cache.write_entry(key, ((".json", abi_json.encode()), (".o", obj)))  # the .o last: it marks completeness
