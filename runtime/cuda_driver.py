"""The CUDA driver through ``cuda.bindings.driver``: devices, the primary context, modules and
functions, checked launches, device memory, events and memory queries.

- :func:`gpu_available` never raises: a missing driver library (cuda.pathfinder's
  ``DynamicLibNotFoundError``), a failing ``cuInit``, zero devices or a driver older than NVRTC
  all give False; :func:`gpu_unavailable_reason` says which.
- Everything runs in the device's *primary* context (the one CuPy and PyTorch use), made current
  in the calling thread on demand, so their device pointers are valid here without copies.
- :func:`launch` checks the launch against the device and the loaded function (threads, block
  and grid dims, static + dynamic shared memory against the opt-in limit, registers, parameter
  count and sizes) *before* launching and raises :class:`LaunchError` as "needs X, limit Y"; it
  opts a function in to more than 48 KiB of dynamic shared memory when a launch asks for it.
  :func:`check_launch` and :func:`pack_arguments` are pure (no device), for tests and tools.
- Driver failures raise :class:`CudaError` (a ``RuntimeError``) naming the ``CUresult``
  (``CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered``); a launch the driver
  refuses raises :class:`LaunchError` with the name.
- Modules are cached (:func:`load_module`, bounded LRU of :data:`MODULE_CACHE_SIZE`); a module or
  a :class:`DeviceBuffer` is released when the last reference goes (or by ``unload``/``free``).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import statistics
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .cuda_launch import Device, FunctionAttributes, check_launch, pack_arguments  # noqa: F401  (re-exported)
from .cuda_python import import_cuda
from .errors import LaunchError
from .nvrtc import CudaImage, check_driver_compatibility, nvrtc_version

#: Modules kept loaded by :func:`load_module` (least recently used ones are dropped).
MODULE_CACHE_SIZE = 64
_DEFAULT_SHARED = 48 * 1024


class CudaError(RuntimeError):
    """A CUDA driver call failed; ``code`` is the ``CUresult`` name."""

    def __init__(self, what: str, code: str, description: str = ""):
        self.code = code
        super().__init__(f"{what} failed: {code}" + (f": {description}" if description else ""))


class GPUUnavailableError(LaunchError):
    """No usable GPU (the message says why); raised only when something needs the device."""


@functools.cache
def _drv():
    """The driver API module (imported once: this is on every launch's path)."""
    return import_cuda("cuda.bindings.driver")


def _name(err) -> str:
    return getattr(err, "name", str(err))


def _describe(err) -> str:
    try:
        e, s = _drv().cuGetErrorString(err)
        return s.decode() if isinstance(s, bytes) else str(s)
    except Exception:
        return ""


def _call(what: str, fn, *args):
    """Call the driver function ``fn``; raise :class:`CudaError` on an error; return the rest."""
    res = fn(*args)
    err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    if err != _drv().CUresult.CUDA_SUCCESS:
        raise CudaError(what, _name(err), _describe(err))
    return rest[0] if len(rest) == 1 else rest


# -- availability, devices, contexts --------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """None when a GPU can be used, else why not. Never raises."""
    try:
        drv = _drv()
        (err,) = drv.cuInit(0)
        if err != drv.CUresult.CUDA_SUCCESS:
            return f"cuInit failed: {_name(err)}"
        err, count = drv.cuDeviceGetCount()
        if err != drv.CUresult.CUDA_SUCCESS or count == 0:
            return "no CUDA device" + (f" ({_name(err)})" if err != drv.CUresult.CUDA_SUCCESS else "")
        reason = check_driver_compatibility(driver_version(), "cubin")
        return reason
    except Exception as e:  # DynamicLibNotFoundError (no driver), ImportError, CompileError (no NVRTC), ...
        return f"{type(e).__name__}: {e}"


def gpu_available() -> bool:
    """True when kernels can be compiled and launched here. Never raises."""
    return gpu_unavailable_reason() is None


def driver_version() -> tuple[int, int]:
    """The CUDA version the driver supports, e.g. (13, 0)."""
    v = int(_call("cuDriverGetVersion", _drv().cuDriverGetVersion))
    return v // 1000, (v % 1000) // 10




_devices: dict[int, Device] = {}
_contexts: dict[int, object] = {}
_ctx_lock = threading.Lock()


def _require_gpu() -> None:
    reason = gpu_unavailable_reason()
    if reason is not None:
        raise GPUUnavailableError(f"no usable GPU: {reason}")


def activate(ordinal: int = 0):
    """Retain the primary context of device ``ordinal`` (once) and make it current in this thread."""
    _require_gpu()
    drv = _drv()
    with _ctx_lock:
        ctx = _contexts.get(ordinal)
        if ctx is None:
            count = int(_call("cuDeviceGetCount", drv.cuDeviceGetCount))
            if not 0 <= ordinal < count:
                raise GPUUnavailableError(f"no CUDA device {ordinal} (there are {count})")
            dev = _call("cuDeviceGet", drv.cuDeviceGet, ordinal)
            ctx = _contexts[ordinal] = _call("cuDevicePrimaryCtxRetain", drv.cuDevicePrimaryCtxRetain, dev)
    current = _call("cuCtxGetCurrent", drv.cuCtxGetCurrent)
    if current is None or int(current) != int(ctx):
        _call("cuCtxSetCurrent", drv.cuCtxSetCurrent, ctx)
    return ctx


def device(ordinal: int = 0) -> Device:
    """The device ``ordinal`` and its limits (cached). Raises :class:`GPUUnavailableError` without a GPU."""
    dev = _devices.get(ordinal)
    if dev is not None:
        return dev
    activate(ordinal)
    drv = _drv()
    handle = _call("cuDeviceGet", drv.cuDeviceGet, ordinal)
    A = drv.CUdevice_attribute

    def attr(name: str) -> int:
        return int(_call(f"cuDeviceGetAttribute({name})", drv.cuDeviceGetAttribute,
                         getattr(A, f"CU_DEVICE_ATTRIBUTE_{name}"), handle))

    raw = _call("cuDeviceGetName", drv.cuDeviceGetName, 256, handle)
    name = (raw if isinstance(raw, bytes) else bytes(raw)).split(b"\0", 1)[0].decode(errors="replace")
    dev = Device(
        ordinal=ordinal, name=name,
        compute_capability=(attr("COMPUTE_CAPABILITY_MAJOR"), attr("COMPUTE_CAPABILITY_MINOR")),
        total_memory=int(_call("cuDeviceTotalMem", drv.cuDeviceTotalMem, handle)),
        sm_count=attr("MULTIPROCESSOR_COUNT"), warp_size=attr("WARP_SIZE"),
        max_threads_per_block=attr("MAX_THREADS_PER_BLOCK"),
        max_block_dims=(attr("MAX_BLOCK_DIM_X"), attr("MAX_BLOCK_DIM_Y"), attr("MAX_BLOCK_DIM_Z")),
        max_grid_dims=(attr("MAX_GRID_DIM_X"), attr("MAX_GRID_DIM_Y"), attr("MAX_GRID_DIM_Z")),
        shared_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK"),
        max_shared_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        shared_per_sm=attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
        regs_per_block=attr("MAX_REGISTERS_PER_BLOCK"), regs_per_sm=attr("MAX_REGISTERS_PER_MULTIPROCESSOR"),
        max_threads_per_sm=attr("MAX_THREADS_PER_MULTIPROCESSOR"), l2_bytes=attr("L2_CACHE_SIZE"))
    _devices[ordinal] = dev
    return dev


def synchronize(ordinal: int = 0) -> None:
    """Wait for all work on the device; raises :class:`CudaError` for a failed kernel (e.g. an illegal address)."""
    activate(ordinal)
    _call("cuCtxSynchronize", _drv().cuCtxSynchronize)


def memory_info(ordinal: int = 0) -> tuple[int, int]:
    """(free, total) device memory in bytes (``cuMemGetInfo``), to check for leaks."""
    activate(ordinal)
    free, total = _call("cuMemGetInfo", _drv().cuMemGetInfo)
    return int(free), int(total)


# -- modules and functions ------------------------------------------------------------------------



def _unload(handle) -> None:
    try:
        _drv().cuModuleUnload(handle)
    except Exception:  # the driver is gone (interpreter exit): nothing to release
        pass


class Module:
    """A loaded CUBIN/PTX image (``cuModuleLoadData``); unloaded by :meth:`unload` or when the last
    reference (including those of its :class:`Function` objects) goes."""

    def __init__(self, handle, image: CudaImage | None, ordinal: int):
        self.handle = handle
        self.image = image
        self.ordinal = ordinal
        self._functions: dict[str, Function] = {}
        self._finalizer = weakref.finalize(self, _unload, handle)
        self._finalizer.atexit = False

    @classmethod
    def load(cls, image: CudaImage | bytes, ordinal: int = 0) -> Module:
        """Load ``image`` on device ``ordinal``; refuses (LaunchError) an image for another architecture
        or PTX newer than the driver, with the reason."""
        dev = device(ordinal)
        data = image.image if isinstance(image, CudaImage) else bytes(image)
        kind = image.kind if isinstance(image, CudaImage) else ("cubin" if data[:4] == b"\x7fELF" else "ptx")
        if kind == "ptx" and not data.endswith(b"\0"):
            data += b"\0"
        if isinstance(image, CudaImage):
            _check_arch(image, dev)
        mismatch = check_driver_compatibility(driver_version(), kind)
        if mismatch is not None:
            raise LaunchError(mismatch)
        activate(ordinal)
        res = _drv().cuModuleLoadData(data)
        if res[0] != _drv().CUresult.CUDA_SUCCESS:
            raise LaunchError(f"the driver (CUDA {'.'.join(map(str, driver_version()))}) cannot load the {kind} "
                              f"for {dev.name} ({dev.arch}): {_name(res[0])}: {_describe(res[0])} "
                              f"(NVRTC {'.'.join(map(str, nvrtc_version()))})")
        return cls(res[1], image if isinstance(image, CudaImage) else None, ordinal)

    def function(self, name: str, num_params: int | None = None) -> Function:
        """The ``extern "C" __global__`` function ``name`` with its attributes. ``num_params``,
        when the caller knows it, bounds the parameter-size queries (otherwise the driver is asked
        until it answers "no such parameter", an API error that compute-sanitizer reports)."""
        fn = self._functions.get(name)
        if fn is None:
            if not self._finalizer.alive:
                raise LaunchError(f"module unloaded: cannot get function {name!r}")
            activate(self.ordinal)
            res = _drv().cuModuleGetFunction(self.handle, name.encode())
            if res[0] != _drv().CUresult.CUDA_SUCCESS:
                raise LaunchError(f"no kernel {name!r} in the module ({_name(res[0])}); a kernel must be declared "
                                  f'extern "C" __global__')
            fn = self._functions[name] = Function(self, res[1], name, num_params)
        return fn

    def unload(self) -> None:
        self._functions.clear()
        self._finalizer()


def _check_arch(image: CudaImage, dev: Device) -> None:
    digits = "".join(ch for ch in image.arch.split("_", 1)[1] if ch.isdigit())
    major, minor = int(digits[:-1]), int(digits[-1])
    cc = dev.compute_capability
    ok = (major, minor) <= cc if image.kind == "ptx" else (major == cc[0] and minor <= cc[1])
    if image.kind == "cubin" and image.arch[-1] in "af":  # sm_90a: that exact device only
        ok = (major, minor) == cc
    if not ok and image.arch[-1] == "a" and major == 9:
        raise LaunchError(f"the {image.kind} was compiled for {image.arch}, Hopper's own target (wgmma, setmaxnreg: "
                          f"sm_90 devices only), which cannot run on {dev.name} ({dev.arch})")
    if not ok:
        raise LaunchError(f"the {image.kind} was compiled for {image.arch}, which cannot run on {dev.name} "
                          f"({dev.arch}); compile with arch={dev.arch!r}")


class Function:
    """A kernel of a loaded :class:`Module`; ``attributes`` (and the shortcuts ``num_regs``,
    ``max_threads_per_block``, ``static_shared_bytes``, ``local_bytes``) come from the driver."""

    def __init__(self, module: Module, handle, name: str, num_params: int | None = None):
        self.module = module
        self.handle = handle
        self.name = name
        drv = _drv()
        F = drv.CUfunction_attribute

        def attr(a: str) -> int:
            return int(_call(f"cuFuncGetAttribute({a})", drv.cuFuncGetAttribute,
                             getattr(F, f"CU_FUNC_ATTRIBUTE_{a}"), handle))

        self.attributes = FunctionAttributes(
            name=name, num_regs=attr("NUM_REGS"), max_threads_per_block=attr("MAX_THREADS_PER_BLOCK"),
            static_shared_bytes=attr("SHARED_SIZE_BYTES"), local_bytes=attr("LOCAL_SIZE_BYTES"),
            max_dynamic_shared_bytes=attr("MAX_DYNAMIC_SHARED_SIZE_BYTES"),
            param_sizes=_param_sizes(handle, num_params))
        self._dynamic_limit = self.attributes.max_dynamic_shared_bytes

    num_regs = property(lambda self: self.attributes.num_regs)
    max_threads_per_block = property(lambda self: self.attributes.max_threads_per_block)
    static_shared_bytes = property(lambda self: self.attributes.static_shared_bytes)
    local_bytes = property(lambda self: self.attributes.local_bytes)

    def ensure_dynamic_shared(self, nbytes: int) -> None:
        """Opt in to ``nbytes`` of dynamic shared memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)."""
        if nbytes > self._dynamic_limit:
            drv = _drv()
            _call("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", drv.cuFuncSetAttribute, self.handle,
                  drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes))
            self._dynamic_limit = int(nbytes)

    def __repr__(self) -> str:
        a = self.attributes
        return (f"Function({self.name}: {a.num_regs} regs, {a.static_shared_bytes} B static shared, "
                f"{a.local_bytes} B local, <= {a.max_threads_per_block} threads)")


def _param_sizes(handle, count: int | None = None) -> tuple[int, ...] | None:
    drv = _drv()
    sizes: list[int] = []
    try:
        for k in range(4096 if count is None else count):
            err, _offset, size = drv.cuFuncGetParamInfo(handle, k)
            if err != drv.CUresult.CUDA_SUCCESS:  # past the last parameter; at 0: unknown (no false refusals)
                return tuple(sizes) if k > 0 else None
            sizes.append(int(size))
    except Exception:  # an older driver/binding without cuFuncGetParamInfo
        return None
    return tuple(sizes) if count is not None else None


_modules: OrderedDict[tuple[int, str], Module] = OrderedDict()
_modules_lock = threading.Lock()
_module_stats = {"hits": 0, "loads": 0}


def load_module(image: CudaImage, ordinal: int = 0) -> Module:
    """:meth:`Module.load` through a bounded LRU cache keyed by the image's bytes and the device."""
    key = (ordinal, hashlib.sha256(image.image).hexdigest())
    with _modules_lock:
        mod = _modules.get(key)
        if mod is not None:
            _modules.move_to_end(key)
            _module_stats["hits"] += 1
            return mod
    mod = Module.load(image, ordinal)
    with _modules_lock:
        _module_stats["loads"] += 1
        _modules[key] = mod
        while len(_modules) > max(0, MODULE_CACHE_SIZE):
            _modules.popitem(last=False)  # unloaded once no Function/executable holds it
    return mod


def module_cache_info() -> dict[str, int]:
    """``hits``, ``loads`` since start and ``entries`` now."""
    with _modules_lock:
        return dict(_module_stats, entries=len(_modules))


def clear_module_cache() -> None:
    with _modules_lock:
        _modules.clear()


# -- launching ------------------------------------------------------------------------------------













def _stream(stream):
    if stream is None:
        return _drv().CUstream(0)
    for attr in ("handle", "ptr", "cuda_stream"):  # cuda.core / CuPy / PyTorch streams
        if hasattr(stream, attr) and not isinstance(stream, int):
            stream = getattr(stream, attr)
            break
    return stream if isinstance(stream, _drv().CUstream) else _drv().CUstream(int(stream))


@dataclass
class PreparedLaunch:
    """A launch checked against every limit with its parameters packed (:func:`prepare_launch`);
    calling it launches the kernel (again and again, as long as its arguments' memory lives)."""

    fn: Function
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    params: object  # the packed parameter array (kept alive with ``keep``)
    keep: object

    def __call__(self, stream=None) -> None:
        if 0 in self.grid:
            return
        activate(self.fn.module.ordinal)
        drv = _drv()
        (err,) = drv.cuLaunchKernel(self.fn.handle, *self.grid, *self.block, self.shared_bytes, _stream(stream),
                                    ctypes.addressof(self.params), 0)
        if err != drv.CUresult.CUDA_SUCCESS:
            raise LaunchError(f"kernel {self.fn.name}: the driver refused the launch (grid {self.grid}, block "
                              f"{self.block}, {self.shared_bytes} bytes dynamic shared memory): {_name(err)}: "
                              f"{_describe(err)}")


def prepare_launch(fn: Function, grid, block, args: Sequence[tuple[str, object]],
                   shared_bytes: int = 0) -> PreparedLaunch:
    """Check a launch of ``fn`` against every limit (:func:`check_launch`), opt in to its dynamic
    shared memory, and pack ``args`` (``(ctype, value)`` pairs, see :func:`pack_arguments`)."""
    dev = device(fn.module.ordinal)
    grid, block = check_launch(dev, fn.attributes, grid, block, shared_bytes)
    params, keep = pack_arguments(args, fn.attributes.param_sizes, fn.name)
    if 0 not in grid and fn.static_shared_bytes + shared_bytes > dev.shared_per_block:
        activate(fn.module.ordinal)
        fn.ensure_dynamic_shared(shared_bytes)
    return PreparedLaunch(fn, grid, block, int(shared_bytes), params, keep)


def launch(fn: Function, grid, block, args: Sequence[tuple[str, object]], shared_bytes: int = 0, stream=None,
           sync: bool = False) -> None:
    """Launch ``fn`` on ``grid`` x ``block`` with ``args`` (``(ctype, value)`` pairs, see
    :func:`pack_arguments`) and ``shared_bytes`` of dynamic shared memory, on ``stream`` (default:
    the legacy default stream). Checks every limit first (:func:`check_launch`); ``sync=True`` waits
    and reports a failing kernel. A grid with a zero dimension launches nothing."""
    prepare_launch(fn, grid, block, args, shared_bytes)(stream)
    if sync:
        synchronize(fn.module.ordinal)


def encode_tensor_map(spec, ptr: int, what: str = "a TMA descriptor") -> tuple[int, ...]:
    """The 16 words of the ``CUtensorMap`` of ``spec`` (a :class:`runtime.tensor_maps.TensorMapSpec`)
    for the global address ``ptr`` (``cuTensorMapEncodeTiled``, cached); :class:`LaunchError`
    starting with ``what`` when the driver's rules refuse it."""
    from . import tensor_maps

    return tensor_maps.encode(spec, ptr, _drv(), what)


# -- memory ---------------------------------------------------------------------------------------

_live = {"buffers": 0, "bytes": 0}
_live_lock = threading.Lock()


def _free(ptr: int, nbytes: int) -> None:
    with _live_lock:
        _live["buffers"] -= 1
        _live["bytes"] -= nbytes
    try:
        _drv().cuMemFree(ptr)
    except Exception:  # the driver is gone (interpreter exit)
        pass


def live_allocations() -> dict[str, int]:
    """``buffers`` and ``bytes`` of :class:`DeviceBuffer` allocations not yet freed."""
    with _live_lock:
        return dict(_live)


class DeviceBuffer:
    """``nbytes`` of global device memory (``cuMemAlloc``) at ``ptr``; freed by :meth:`free`, on leaving
    a ``with`` block or when garbage-collected. A zero-byte buffer has ``ptr == 0`` and no allocation."""

    def __init__(self, nbytes: int, ordinal: int = 0):
        self.nbytes = int(nbytes)
        self.ordinal = ordinal
        self.ptr = 0
        self._finalizer = None
        if self.nbytes < 0:
            raise ValueError(f"negative buffer size {nbytes}")
        if self.nbytes:
            activate(ordinal)
            res = _drv().cuMemAlloc(self.nbytes)
            if res[0] != _drv().CUresult.CUDA_SUCCESS:
                raise LaunchError(f"needs {self.nbytes} bytes of device memory: cuMemAlloc failed: {_name(res[0])}")
            self.ptr = int(res[1])
            with _live_lock:
                _live["buffers"] += 1
                _live["bytes"] += self.nbytes
            self._finalizer = weakref.finalize(self, _free, self.ptr, self.nbytes)
            self._finalizer.atexit = False

    @classmethod
    def alloc(cls, nbytes: int, ordinal: int = 0) -> DeviceBuffer:
        return cls(nbytes, ordinal)

    @classmethod
    def from_host(cls, array: np.ndarray, ordinal: int = 0) -> DeviceBuffer:
        """A new buffer holding a copy of ``array`` (made C-contiguous)."""
        buf = cls(np.asarray(array).nbytes, ordinal)
        buf.copy_from_host(array)
        return buf

    def _host(self, array: np.ndarray) -> np.ndarray:
        if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
            raise ValueError("host copies need a C-contiguous numpy array")
        if array.nbytes > self.nbytes:
            raise ValueError(f"host array of {array.nbytes} bytes does not fit the {self.nbytes}-byte buffer")
        if self.nbytes and self.ptr == 0:
            raise ValueError("the buffer was freed")
        return array

    def copy_from_host(self, array: np.ndarray) -> None:
        a = self._host(np.ascontiguousarray(array))
        if a.nbytes:
            activate(self.ordinal)
            _call("cuMemcpyHtoD", _drv().cuMemcpyHtoD, self.ptr, a.ctypes.data, a.nbytes)

    def to_host(self, out: np.ndarray | None = None) -> np.ndarray:
        """Copy the buffer into ``out`` (C-contiguous; its nbytes first bytes), or into a new uint8 array.
        Synchronous: waits for the work queued before it on the default stream."""
        out = np.empty(self.nbytes, np.uint8) if out is None else self._host(out)
        if out.nbytes:
            activate(self.ordinal)
            _call("cuMemcpyDtoH", _drv().cuMemcpyDtoH, out.ctypes.data, self.ptr, out.nbytes)
        return out

    def memset(self, byte: int = 0) -> None:
        if self.nbytes:
            activate(self.ordinal)
            _call("cuMemsetD8", _drv().cuMemsetD8, self.ptr, int(byte) & 0xFF, self.nbytes)

    def free(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self.ptr = 0

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"DeviceBuffer({self.nbytes} bytes at {self.ptr:#x})"


# -- timing ---------------------------------------------------------------------------------------

def time_all_ms(fn: Callable[[], object], repeat: int = 10, warmup: int = 1, stream=None,
                ordinal: int = 0) -> list[float]:
    """Milliseconds of each of ``repeat`` calls of ``fn`` (after ``warmup`` calls), measured with CUDA
    events recorded around each call on ``stream``."""
    activate(ordinal)
    drv = _drv()
    s = _stream(stream)
    for _ in range(warmup):
        fn()
    start = _call("cuEventCreate", drv.cuEventCreate, drv.CUevent_flags.CU_EVENT_DEFAULT)
    end = _call("cuEventCreate", drv.cuEventCreate, drv.CUevent_flags.CU_EVENT_DEFAULT)
    try:
        times = []
        for _ in range(repeat):
            _call("cuEventRecord", drv.cuEventRecord, start, s)
            fn()
            _call("cuEventRecord", drv.cuEventRecord, end, s)
            _call("cuEventSynchronize", drv.cuEventSynchronize, end)
            times.append(float(_call("cuEventElapsedTime", drv.cuEventElapsedTime, start, end)))
        return times
    finally:
        drv.cuEventDestroy(start)
        drv.cuEventDestroy(end)


def time_ms(fn: Callable[[], object], repeat: int = 10, warmup: int = 1, stream=None, ordinal: int = 0) -> float:
    """Median milliseconds of ``fn`` over ``repeat`` calls (see :func:`time_all_ms`)."""
    return statistics.median(time_all_ms(fn, repeat, warmup, stream, ordinal))


def stream_synchronize(stream) -> None:
    """Wait for the work queued on ``stream`` (a CUstream, an int handle, or an object with ``.ptr``/``.handle``/
    ``.cuda_stream``)."""
    activate()
    _call("cuStreamSynchronize", _drv().cuStreamSynchronize, _stream(stream))


__all__ = ["MODULE_CACHE_SIZE", "CudaError", "Device", "DeviceBuffer", "Function", "FunctionAttributes",
           "GPUUnavailableError", "Module", "PreparedLaunch", "activate", "check_launch", "clear_module_cache",
           "device", "driver_version", "encode_tensor_map", "gpu_available", "gpu_unavailable_reason", "launch",
           "live_allocations", "load_module", "memory_info", "module_cache_info", "pack_arguments", "prepare_launch",
           "stream_synchronize", "synchronize", "time_all_ms", "time_ms"]
