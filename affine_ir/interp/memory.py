"""Memrefs at run time (:class:`Buffer`), vector helpers, and the conversion of the
caller's arguments and results.

Every buffer is a C-contiguous numpy array in its logical shape plus a flat
``memoryview`` over the same bytes, which the generated code indexes with a linearized
index (f16/bf16 are viewed as their 16-bit patterns). A non-contiguous argument is
copied in and written back after the call.
"""

from __future__ import annotations

import math

import numpy as np

from ..bigint import describe_int
from ..errors import InterpretError
from ..floats import EIGHT_BIT, is_bfloat16_scalar
from ..types import IntegerType, MemRefType, Type, VectorType
from . import semantics as S
from .semantics import OutOfBounds, ScalarInfo, Trap, scalar_info


class Buffer:
    """A memref value: ``array`` (C-contiguous numpy array), ``data`` (flat memoryview),
    ``shape``, ``alive`` (False after ``memref.dealloc``) and ``origin`` (the caller's
    non-contiguous array to write back into, if any)."""

    __slots__ = ("array", "data", "shape", "alive", "origin")

    def __init__(self, array: np.ndarray, info: ScalarInfo, origin: np.ndarray | None = None):
        self.array = array
        self.shape = array.shape
        flat = array.reshape(-1)
        if info.name in ("f16", "bf16"):
            flat = flat.view(np.uint16)
        elif info.name in EIGHT_BIT:
            flat = flat.view(np.uint8)
        self.data = memoryview(flat).cast("B").cast(info.mv_format)
        self.alive = True
        self.origin = origin

    def __repr__(self) -> str:
        state = "" if self.alive else ", deallocated"
        return f"<Buffer {self.array.dtype} {self.shape}{state}>"


def alloc(info: ScalarInfo, shape: tuple) -> Buffer:
    """A new zero-filled buffer (``memref.alloc``/``alloca``)."""
    if any(d < 0 for d in shape):
        raise Trap(f"negative size in {tuple(shape)}")
    if info.np_dtype is None:
        raise Trap(f"no storage for element type {info.name}")
    return Buffer(np.zeros(shape, info.np_dtype), info)


def dealloc(buf: Buffer) -> None:
    if not buf.alive:
        raise Trap("the buffer was already deallocated")
    buf.alive = False
    buf.data.release()  # any later element access through the memoryview raises ValueError


def dim(buf: Buffer, k: int) -> int:
    if not 0 <= k < len(buf.shape):
        raise Trap(f"dimension {k} is out of range for a memref of rank {len(buf.shape)}")
    return buf.shape[k]


# ----------------------------------------------------------------------------------------
# Vectors: numpy arrays of the element dtype (i1 as bool)
# ----------------------------------------------------------------------------------------


def to_list(arr: np.ndarray) -> list:
    """The elements of a vector as interpreter scalars (floats; signed ints; i1 as 0/-1)."""
    k = arr.dtype.kind
    if k == "b":
        return [-x for x in arr.ravel().tolist()]
    if k in "iu":
        return arr.astype(np.int64).ravel().tolist()
    return arr.astype(np.float64).ravel().tolist()


def from_list(vals: list, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A vector of ``dtype`` from interpreter scalars (already exact in the element type)."""
    if dtype.kind == "b":
        return np.array([v != 0 for v in vals], dtype=bool).reshape(shape)
    if dtype.kind in "iu":
        return np.array(vals, dtype=np.int64).astype(dtype).reshape(shape)
    return np.array(vals, dtype=np.float64).astype(dtype).reshape(shape)


def vmap(fn, dtype: np.dtype, *vectors: np.ndarray) -> np.ndarray:
    """``fn`` (the scalar semantics of an op) applied elementwise."""
    lists = [to_list(v) for v in vectors]
    return from_list([fn(*xs) for xs in zip(*lists)], dtype, vectors[0].shape)


def vbroadcast(x, dtype: np.dtype, shape: tuple) -> np.ndarray:
    return from_list([x] * math.prod(shape), dtype, shape)


def vinsert(vec: np.ndarray, pos: tuple, x) -> np.ndarray:
    """``vector.insert``: a copy of ``vec`` with the element (or sub-vector) at ``pos`` set to ``x``."""
    out = vec.copy()
    out[pos] = x
    return out


def vselect(cond, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if isinstance(cond, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


def vreduce(kind: str, vec: np.ndarray, info: ScalarInfo):
    """``vector.reduction``: the elements combined left to right, starting with the first."""
    vals = to_list(vec)
    acc = vals[0]
    if info.is_float:
        rnd = S.ROUNDERS[info.name]
        step = {"add": lambda a, b: rnd(a + b), "mul": lambda a, b: rnd(a * b),
                "maximumf": S.maximumf, "minimumf": S.minimumf}.get(kind)
    else:
        w = info.width
        step = {"add": lambda a, b: S.wrap(a + b, w), "mul": lambda a, b: S.wrap(a * b, w),
                "maxsi": max, "minsi": min, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
                "xor": lambda a, b: a ^ b}.get(kind)
    if step is None:
        raise Trap(f"reduction <{kind}> does not apply to {info.name}")
    for x in vals[1:]:
        acc = step(acc, x)
    return acc


def _vector_slices(buf: Buffer, idx: tuple, vshape: tuple) -> tuple:
    if not buf.alive:
        raise Trap("access to a deallocated buffer")
    shape = buf.shape
    lead = len(shape) - len(vshape)
    if lead < 0:
        raise Trap(f"vector of rank {len(vshape)} does not fit a memref of rank {len(shape)}")
    ok = all(0 <= i < n for i, n in zip(idx[:lead], shape[:lead])) and \
        all(0 <= i and i + v <= n for i, v, n in zip(idx[lead:], vshape, shape[lead:]))
    if not ok:
        raise OutOfBounds(shape, idx, vshape)
    return tuple(idx[:lead]) + tuple(slice(i, i + v) for i, v in zip(idx[lead:], vshape))


def vload(buf: Buffer, idx: tuple, vshape: tuple) -> np.ndarray:
    return buf.array[_vector_slices(buf, idx, vshape)].copy()


def vstore(buf: Buffer, idx: tuple, vec: np.ndarray) -> None:
    buf.array[_vector_slices(buf, idx, vec.shape)] = vec


# ----------------------------------------------------------------------------------------
# Arguments and results
# ----------------------------------------------------------------------------------------


def describe(value) -> str:
    """How an argument reads in an error message."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype} array of shape {value.shape}"
    text = describe_int(int(value)) if isinstance(value, (int, np.integer)) else repr(value)
    return f"{type(value).__name__} {text if len(text) < 40 else text[:37] + '...'}"


def _arg_error(k: int, name: str, t: Type, value) -> InterpretError:
    return InterpretError(f"argument #{k} ({name}): expected {t}, got {describe(value)}")


def memref_arg(value, t: MemRefType, k: int, name: str) -> Buffer:
    """A buffer over the caller's array, after checking dtype, rank and static dims."""
    info = scalar_info(t.element_type)
    if not isinstance(value, np.ndarray) or info.np_dtype is None or value.dtype != info.np_dtype \
            or value.ndim != t.rank or any(d is not None and d != n for d, n in zip(t.shape, value.shape)):
        raise _arg_error(k, name, t, value)
    if value.flags.c_contiguous:
        return Buffer(value, info)
    copy = np.ascontiguousarray(value)
    if not value.flags.writeable:
        copy.flags.writeable = False
    return Buffer(copy, info, origin=value)


def check_copies_do_not_alias(buffers: list, names: list[str]) -> None:
    """A copied-in (non-contiguous) argument must not share memory with another argument."""
    for i, b in enumerate(buffers):
        if not isinstance(b, Buffer) or b.origin is None:
            continue
        for j, other in enumerate(buffers):
            if j == i or not isinstance(other, Buffer):
                continue
            arr = other.origin if other.origin is not None else other.array
            try:
                shared = np.shares_memory(b.origin, arr, max_work=1 << 20)
            except Exception:  # numpy's TooHardError: assume they overlap
                shared = True
            if shared:
                raise InterpretError(f"argument #{i} ({names[i]}) is a non-contiguous array that shares memory "
                                     f"with argument #{j} ({names[j]}); pass contiguous arrays")


def write_back(buffers: list) -> None:
    """Copy non-contiguous arguments back, and let go of the callers' arrays (a memoryview
    kept alive by a traceback would stop numpy from resizing them)."""
    for b in buffers:
        if isinstance(b, Buffer):
            if b.origin is not None and b.origin.flags.writeable:
                np.copyto(b.origin, b.array)
            b.data.release()


def _is_float_scalar(value) -> bool:
    return isinstance(value, (float, np.floating)) or is_bfloat16_scalar(value)


def scalar_arg(value, t: Type, k: int, name: str):
    """The interpreter value of a Python/numpy number passed for a scalar argument."""
    info = scalar_info(t)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    is_int = isinstance(value, (int, np.integer, np.bool_))
    if info.is_float:
        if is_int:
            return S.int_to_float(int(value), info.name)
        if _is_float_scalar(value):
            return S.ROUNDERS[info.name](float(value))
        raise _arg_error(k, name, t, value)
    if not is_int:
        raise _arg_error(k, name, t, value)
    v = int(value)
    w = info.width
    hi = (1 << 63) if info.name == "index" else (1 << w)
    if not -(1 << (w - 1)) <= v < hi:
        raise InterpretError(f"argument #{k} ({name}): {describe_int(v)} does not fit in {t}")
    return S.wrap(v, w)


def vector_arg(value, t: VectorType, k: int, name: str) -> np.ndarray:
    info = scalar_info(t.element_type)
    if not isinstance(value, np.ndarray) or value.dtype != info.np_dtype or value.shape != t.shape:
        raise _arg_error(k, name, t, value)
    return value.copy()


def convert_arg(value, t: Type, k: int, name: str):
    if isinstance(t, MemRefType):
        return memref_arg(value, t, k, name)
    if isinstance(t, VectorType):
        return vector_arg(value, t, k, name)
    try:
        return scalar_arg(value, t, k, name)
    except TypeError:
        raise InterpretError(f"argument #{k} ({name}): cannot pass a value of type {t}") from None


def convert_result(value, t: Type):
    """A result as the caller sees it: arrays for memrefs/vectors, numpy scalars, bool for i1,
    int for index."""
    if isinstance(t, MemRefType):
        return value.origin if value.origin is not None else value.array
    if isinstance(t, VectorType):
        return value.copy()  # vector constants are shared between runs
    info = scalar_info(t)
    if info.is_float:
        return info.np_dtype.type(value)
    if info.name == "index":
        return int(value)
    if isinstance(t, IntegerType) and t.width == 1:
        return bool(value)
    return value if info.np_dtype is None else info.np_dtype.type(value)
