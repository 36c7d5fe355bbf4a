"""Call arguments -> device pointers for CUDA kernels, checked against the memref types.

- numpy arrays (and CPU DLPack tensors, through ``np.from_dlpack``) are copied to a temporary
  device buffer, and copied back after the call when the argument is written;
- device arrays are used in place (no copy): ``__cuda_array_interface__`` (CuPy, Numba, PyTorch)
  or DLPack ``__dlpack__`` on a CUDA device (PyTorch, CuPy, JAX; PyTorch bf16 tensors, which have
  no ``__cuda_array_interface__``).

Each argument is checked before anything runs: element type (``f16`` = float16, ``bf16`` =
``ml_dtypes.bfloat16``, ``f8E4M3FN``/``f8E5M2`` = ``ml_dtypes.float8_e4m3fn``/``float8_e5m2``
(PyTorch's ``float8_e4m3fn``/``float8_e5m2`` through DLPack), ``i1`` = bool or uint8, ``index`` = int64),
rank, static dims, C-contiguity, alignment; a failure raises :class:`LaunchError` naming the argument
(``argument #1 (%B): expected dtype float32 for memref<64x?xf32>, got ...``). Only the checks run without a GPU
(:func:`check_array`); :func:`prepare_argument` and :func:`prepare_arguments` need one.

The kernel ABI of a memref (see codegen.cuda): a data pointer, then one ``long long`` per dynamic
dim; :meth:`DeviceArgument.kernel_args` gives those ``(ctype, value)`` pairs for
:func:`runtime.cuda_driver.launch`.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from affine_ir.floats import is_bfloat16_scalar, numpy_float_dtype
from affine_ir.types import FloatType, IndexType, IntegerType, MemRefType, Type

from .errors import LaunchError

_FLOAT_CTYPES = {"f16": "__half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double",
                 "f8E4M3FN": "__nv_fp8_storage_t", "f8E5M2": "__nv_fp8_storage_t"}
_INTS = {8: (np.dtype(np.int8), "signed char"), 16: (np.dtype(np.int16), "short"), 32: (np.dtype(np.int32), "int"),
         64: (np.dtype(np.int64), "long long")}


def element_dtypes(t: Type) -> tuple[np.dtype, ...]:
    """The numpy dtypes accepted for elements of ``t`` (the first is the canonical one); () if none."""
    if isinstance(t, FloatType) and t.name in _FLOAT_CTYPES:
        return (numpy_float_dtype(t.name),)
    if isinstance(t, IndexType):
        return (np.dtype(np.int64),)
    if isinstance(t, IntegerType):
        if t.width == 1:
            return np.dtype(np.bool_), np.dtype(np.uint8)
        return (_INTS[t.width][0],) if t.width in _INTS else ()
    return ()


def element_ctype(t: Type) -> str:
    """The C type of elements of ``t`` in the kernel ABI (``float``, ``__nv_bfloat16``, ``bool``, ``long long``)."""
    if isinstance(t, FloatType) and t.name in _FLOAT_CTYPES:
        return _FLOAT_CTYPES[t.name]
    if isinstance(t, IndexType):
        return "long long"
    if isinstance(t, IntegerType):
        if t.width == 1:
            return "bool"
        if t.width in _INTS:
            return _INTS[t.width][1]
    raise LaunchError(f"no kernel ABI for element type {t}")


def scalar_argument(value, t: Type, position: int, name: str = "") -> tuple[str, object]:
    """``(ctype, value)`` for a scalar argument of type ``t`` (index/integer/float), range-checked."""
    where = _where(position, name)
    ctype = element_ctype(t)
    is_int = isinstance(value, (int, np.integer, bool, np.bool_))
    if isinstance(t, FloatType):
        if not (is_int or isinstance(value, (float, np.floating)) or is_bfloat16_scalar(value)):
            raise LaunchError(f"{where}: expected {t}, got {_kind(value)}")
        return ctype, float(value)
    if not is_int:
        raise LaunchError(f"{where}: expected {t}, got {_kind(value)}")
    v = int(value)
    w = 64 if isinstance(t, IndexType) else t.width
    if w == 1:
        if v not in (0, 1):
            raise LaunchError(f"{where}: {v} does not fit in i1")
        return ctype, bool(v)
    if not -(1 << (w - 1)) <= v < (1 << w):  # signless: accept the unsigned range too, wrap it
        raise LaunchError(f"{where}: {v} does not fit in {t}")
    if v >= 1 << (w - 1):
        v -= 1 << w
    return ctype, v


def _where(position: int, name: str) -> str:
    return f"argument #{position}" + (f" ({name})" if name else "")


def _kind(value) -> str:
    if isinstance(value, np.ndarray):
        return f"numpy array {value.dtype}{list(value.shape)}"
    return type(value).__name__


# -- looking at an argument (no device needed) -----------------------------------------------------

@dataclass
class ArrayView:
    """What an array argument is: ``kind`` "numpy" (host: ``host`` set, ``ptr`` None) or
    "torch"/"cuda_array_interface"/"dlpack" (device: ``ptr`` its device address); ``keep`` holds what must
    stay alive while ``ptr`` is used (a DLPack capsule); ``stream``: the producer's stream (CAI v3)."""

    kind: str
    shape: tuple[int, ...]
    dtype: np.dtype
    c_contiguous: bool
    readonly: bool
    ptr: int | None = None
    host: np.ndarray | None = None
    device_id: int | None = None
    stream: int | None = None
    keep: object = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def _c_contiguous(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> bool:
    """Whether byte ``strides`` describe the row-major layout of ``shape`` (extent-1 dims and empty arrays
    are free)."""
    if strides is None or 0 in shape:
        return True
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_DTYPES = {(0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64, (1, 8): np.uint8,
              (1, 16): np.uint16, (1, 32): np.uint32, (1, 64): np.uint64, (2, 16): np.float16, (2, 32): np.float32,
              (2, 64): np.float64, (4, 16): "bf16", (6, 8): np.bool_, (10, 8): "f8E4M3FN",
              (12, 8): "f8E5M2"}  # names: numpy_float_dtype (ml_dtypes)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


def _capsule_tensor(capsule) -> tuple[_DLTensor, bool]:
    """The DLTensor inside a (not consumed) DLPack capsule, and whether it is read-only."""
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    name = api.PyCapsule_GetName(capsule)
    ptr = api.PyCapsule_GetPointer(capsule, name)
    if name == b"dltensor_versioned":
        m = _DLManagedTensorVersioned.from_address(ptr)
        return m.dl_tensor, bool(m.flags & 1)
    if name == b"dltensor":
        return _DLManagedTensor.from_address(ptr).dl_tensor, False
    raise ValueError(f"not a DLPack capsule ({name!r})")


def _from_dlpack_device(value) -> ArrayView:
    try:
        capsule = value.__dlpack__(stream=1)  # our launches use the legacy default stream
    except TypeError:
        capsule = value.__dlpack__()
    t, readonly = _capsule_tensor(capsule)
    shape = tuple(int(t.shape[k]) for k in range(t.ndim))
    key = (int(t.dtype.code), int(t.dtype.bits))
    if key not in _DL_DTYPES or t.dtype.lanes != 1:
        raise ValueError(f"unsupported DLPack dtype (code {key[0]}, {key[1]} bits, {t.dtype.lanes} lanes)")
    name = _DL_DTYPES[key]
    dtype = numpy_float_dtype(name) if isinstance(name, str) else np.dtype(name)
    strides = None if not t.strides else tuple(int(t.strides[k]) * dtype.itemsize for k in range(t.ndim))
    return ArrayView("dlpack", shape, dtype, _c_contiguous(shape, strides, dtype.itemsize), readonly,
                     ptr=int(t.data or 0) + int(t.byte_offset), device_id=int(t.device.device_id), keep=capsule)


#: PyTorch's dtypes by name, as numpy dtypes (names: :func:`numpy_float_dtype`, ml_dtypes).
_TORCH_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
                 "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8, "bool": np.bool_,
                 "bfloat16": "bf16", "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2"}


def _from_torch(value) -> ArrayView | None:
    """A PyTorch CUDA tensor's view read from the tensor itself (its pointer, shape, dtype, contiguity:
    C calls), or None for anything else (and for a tensor that requires gradients: the general path
    refuses it with PyTorch's own error). ``__cuda_array_interface__`` builds the same facts in Python
    (a dict, a numpy type string), which was most of a small graph's host time per call."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor) or not value.is_cuda or value.requires_grad \
            or value.is_sparse:
        return None
    name = _TORCH_DTYPES.get(str(value.dtype).removeprefix("torch."))
    if name is None:
        return None
    dtype = numpy_float_dtype(name) if isinstance(name, str) else np.dtype(name)
    return ArrayView("torch", tuple(value.shape), dtype, value.is_contiguous(), False,
                     ptr=value.data_ptr() if value.numel() else 0, device_id=value.device.index, keep=value)


def inspect_array(value) -> ArrayView:
    """What ``value`` is as an array (no device needed). Raises ``TypeError``/``ValueError`` (or the
    producer's error) for anything else; :func:`check_array` turns them into a LaunchError."""
    if isinstance(value, np.ndarray):
        return ArrayView("numpy", value.shape, value.dtype, value.flags.c_contiguous, not value.flags.writeable,
                         host=value)
    view = _from_torch(value)
    if view is not None:
        return view
    problem = None
    if hasattr(type(value), "__cuda_array_interface__") or hasattr(value, "__cuda_array_interface__"):
        try:
            cai = value.__cuda_array_interface__
            if cai.get("mask") is not None:
                raise ValueError("masked arrays are not supported")
            shape = tuple(int(n) for n in cai["shape"])
            dtype = np.dtype(cai["typestr"])
            if dtype.kind == "V" and hasattr(value, "__dlpack__"):  # PyTorch bf16 is "|V2" here
                raise ValueError(f"untyped elements {cai['typestr']}")
            strides = cai.get("strides")
            ptr, ro = cai["data"]
            return ArrayView("cuda_array_interface", shape, dtype, _c_contiguous(shape, strides, dtype.itemsize),
                             bool(ro), ptr=int(ptr or 0), stream=cai.get("stream"), keep=value)
        except Exception as e:  # e.g. PyTorch bf16 or requires_grad: try DLPack
            problem = f"__cuda_array_interface__ failed: {e}"
    if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        dev_type, dev_id = value.__dlpack_device__()
        if int(dev_type) == _DL_CPU:
            return inspect_array(np.from_dlpack(value))
        if int(dev_type) in (_DL_CUDA, _DL_CUDA_MANAGED):
            view = _from_dlpack_device(value)
            view.device_id = int(dev_id)
            return view
        raise ValueError(f"DLPack device type {int(dev_type)} is neither the CPU nor a CUDA device")
    if problem:
        raise ValueError(problem)
    raise TypeError(f"expected an array (numpy, or a device array with __cuda_array_interface__ or __dlpack__), "
                    f"got {_kind(value)}")


def check_array(value, t: MemRefType, position: int, name: str = "", ordinal: int = 0) -> ArrayView:
    """Check ``value`` against the memref type ``t`` (dtype, rank, static dims, C-contiguity, alignment,
    device) without touching the device; LaunchError names the argument."""
    where = _where(position, name)
    try:
        view = inspect_array(value)
    except Exception as e:  # TypeError/ValueError from us, BufferError/RuntimeError from the producer
        raise LaunchError(f"{where}: {e}") from None
    desc = f"{view.dtype}{list(view.shape)}" + ("" if view.kind == "numpy" else f" on the device ({view.kind})")
    want = element_dtypes(t.element_type)
    if not want:
        raise LaunchError(f"{where}: memrefs of {t.element_type} cannot be passed to a kernel")
    if view.dtype not in want:
        raise LaunchError(f"{where}: expected dtype {' or '.join(map(str, want))} for {t}, got {desc}")
    dims = tuple("?" if d is None else d for d in t.shape)
    if len(view.shape) != len(t.shape) or any(d is not None and d != n for d, n in zip(t.shape, view.shape)):
        raise LaunchError(f"{where}: expected shape {dims} for {t}, got {desc}")
    if not view.c_contiguous:
        hint = " (pass np.ascontiguousarray(...))" if view.kind == "numpy" else " (pass a .contiguous() copy)"
        raise LaunchError(f"{where}: the array is not C-contiguous{hint}")
    if view.ptr is not None and view.ptr % view.dtype.itemsize:
        raise LaunchError(f"{where}: device address {view.ptr:#x} is not aligned to {view.dtype.itemsize} bytes")
    if view.host is not None and not view.host.flags.aligned:
        raise LaunchError(f"{where}: the array is not aligned to its element size")
    if view.device_id is not None and view.device_id != ordinal:
        raise LaunchError(f"{where}: the array is on CUDA device {view.device_id}, the kernel runs on device {ordinal}")
    return view


# -- arguments on the device -----------------------------------------------------------------------

@dataclass
class DeviceArgument:
    """A memref argument on the device: ``ptr`` (device address), its ``shape`` and ``dtype``; for a
    numpy argument ``host`` is the array and ``buffer`` the temporary device copy (freed by
    :meth:`release`), copied back by :meth:`copy_back` when ``written``."""

    position: int
    name: str
    type: MemRefType
    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    written: bool = True
    host: np.ndarray | None = None
    buffer: object = None
    keep: object = field(default=None, repr=False)

    @property
    def dynamic_dims(self) -> list[int]:
        """The sizes of the memref's dynamic dims, in order (the ``long long`` kernel parameters)."""
        return [n for d, n in zip(self.type.shape, self.shape) if d is None]

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def kernel_args(self) -> list[tuple[str, object]]:
        """The ``(ctype, value)`` launch arguments of this memref: the pointer, then its dynamic dims."""
        return [(element_ctype(self.type.element_type) + "*", self.ptr)] + [("long long", n) for n in self.dynamic_dims]

    def copy_back(self) -> None:
        """Copy a written numpy argument back from the device (synchronous)."""
        if self.host is not None and self.written and self.buffer is not None:
            self.buffer.to_host(self.host.reshape(-1).view(np.uint8))

    def release(self) -> None:
        """Free the temporary device copy (device arrays: drop the reference)."""
        if self.buffer is not None:
            self.buffer.free()
            self.buffer = None
        self.keep = None


def prepare_argument(value, t: MemRefType, position: int, name: str = "", *, written: bool = True,
                     ordinal: int = 0) -> DeviceArgument:
    """Check ``value`` (:func:`check_array`) and give its device pointer: device arrays in place, numpy
    arrays copied into a new device buffer (copied back by ``copy_back`` when ``written``)."""
    return _on_device(check_array(value, t, position, name, ordinal), t, position, name, written, ordinal)


def _check_writable(view: ArrayView, position: int, name: str, written: bool) -> None:
    if written and view.readonly:
        raise LaunchError(f"{_where(position, name)}: the kernel writes this argument but the array is read-only")


def _on_device(view: ArrayView, t: MemRefType, position: int, name: str, written: bool, ordinal: int) -> DeviceArgument:
    from . import cuda_driver

    _check_writable(view, position, name, written)
    if view.host is None:
        if isinstance(view.stream, int) and view.stream not in (0, 1, 2):  # CAI v3: wait for the producer's stream
            cuda_driver.stream_synchronize(view.stream)
        return DeviceArgument(position, name, t, view.ptr, view.shape, view.dtype, written, keep=view.keep)
    buf = cuda_driver.DeviceBuffer.from_host(view.host, ordinal)
    return DeviceArgument(position, name, t, buf.ptr, view.shape, view.dtype, written, host=view.host, buffer=buf)


class PreparedArguments:
    """The device arguments of one call; a context manager: on normal exit the written numpy
    arguments are copied back, and in any case the temporaries are freed."""

    def __init__(self, args: list[DeviceArgument]):
        self.args = args

    def __iter__(self):
        return iter(self.args)

    def __getitem__(self, k: int) -> DeviceArgument:
        return self.args[k]

    def __len__(self) -> int:
        return len(self.args)

    def copy_back(self) -> None:
        for a in self.args:
            a.copy_back()

    def release(self) -> None:
        for a in self.args:
            a.release()

    def __enter__(self) -> PreparedArguments:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        try:
            if exc_type is None:
                self.copy_back()
        finally:
            self.release()


def _ranges_overlap(a: ArrayView, b: ArrayView) -> bool:
    def span(v: ArrayView):
        if v.host is not None:
            base = v.host.__array_interface__["data"][0]
            return ("host", base, base + v.nbytes)
        return ("device", v.ptr, v.ptr + v.nbytes)

    (ka, a0, a1), (kb, b0, b1) = span(a), span(b)
    return ka == kb and a.nbytes > 0 and b.nbytes > 0 and a0 < b1 and b0 < a1


def prepare_arguments(values: Sequence, types: Sequence[MemRefType], names: Sequence[str] | None = None, *,
                      written: Sequence[bool] | None = None, positions: Sequence[int] | None = None,
                      ordinal: int = 0) -> PreparedArguments:
    """Prepare every memref argument (all checked before any device work). ``written[k]`` (default
    True) says whether the kernel may write argument k. Two arguments whose memory overlaps, one of
    them written, are refused: the kernels take ``__restrict__`` pointers."""
    n = len(values)
    if len(types) != n:
        raise LaunchError(f"expected {len(types)} array arguments, got {n}")
    names = list(names) if names is not None else [""] * n
    written = [True] * n if written is None else [bool(w) for w in written]
    positions = list(range(n)) if positions is None else list(positions)
    views = [check_array(v, t, p, nm, ordinal) for v, t, p, nm in zip(values, types, positions, names)]
    for view, p, nm, w in zip(views, positions, names, written):
        _check_writable(view, p, nm, w)
    for i in range(n):
        for j in range(i + 1, n):
            if (written[i] or written[j]) and _ranges_overlap(views[i], views[j]):
                raise LaunchError(f"{_where(positions[i], names[i])} and {_where(positions[j], names[j])} overlap in "
                                  f"memory and one is written; the kernels assume distinct arrays (__restrict__)")
    prepared = PreparedArguments([])
    try:
        for view, t, p, nm, w in zip(views, types, positions, names, written):
            prepared.args.append(_on_device(view, t, p, nm, w, ordinal))
    except BaseException:
        prepared.release()
        raise
    return prepared


__all__ = ["ArrayView", "DeviceArgument", "PreparedArguments", "check_array", "element_ctype", "element_dtypes",
           "inspect_array", "prepare_argument", "prepare_arguments", "scalar_argument"]
