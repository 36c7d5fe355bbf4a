"""TMA descriptors (``CUtensorMap``) for ``nvgpu.tma.create.descriptor``: the arguments of
``cuTensorMapEncodeTiled``, checked before the driver sees them, and the encoded maps, cached.

A kernel takes a tensor map by value (``const __grid_constant__ air_tensormap``, 128 bytes, see
:mod:`codegen.cuda.hopper`). The host side of a function (:mod:`runtime.cuda`) describes each
``create.descriptor`` as a :class:`TensorMapSpec` (what the IR and the memref's dims say) and a
:class:`TensorMapArg` (that spec, the memref it describes and the call's pointer); each launch
passes :func:`encode` of it: ``(16 opaque 64-bit words)``, cached per (pointer, spec), so a
replayed launch plan re-encodes nothing for pointers it has seen.

The encoding (``cuTensorMapEncodeTiled``): data type from the element type (f16 ``FLOAT16``, bf16
``BFLOAT16``, f32 ``FLOAT32``, f64 ``FLOAT64``, i32 ``INT32``, i64/index ``INT64``, i16 ``UINT16``,
i8/i1 and 8-bit floats ``UINT8``: TMA copies bits), rank, global dims innermost first, global
strides in bytes of dims 1.. (row-major, contiguous), the box innermost first (the IR's ``box`` is
outermost first), element strides 1, and interleave, swizzle, L2 promotion and out-of-bounds fill
(``zero``: ``NONE``; ``nan``: ``NAN_REQUEST_ZERO_FMA``) from the descriptor type. The driver's rules
are checked first (:meth:`TensorMapSpec.check`), so a refusal is a :class:`LaunchError` naming the
descriptor, the memref and the rule: the global address 16-byte aligned (32 with ``interleave_32b``),
strides multiples of 16 bytes, box sizes 1 to 256 with an innermost extent a multiple of 16 bytes
within the swizzle span.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from affine_ir import Value

from . import cache
from .errors import LaunchError

__all__ = ["TENSOR_MAP_BYTES", "TensorMapArg", "TensorMapSpec", "clear_cache", "encode", "tensor_map_words"]

TENSOR_MAP_BYTES = 128
#: Encoded maps kept (least recently used ones are dropped).
CACHE_SIZE = 1024
MAX_RANK = 5
MAX_BOX = 256

_DATA_TYPES = {"f16": "FLOAT16", "bf16": "BFLOAT16", "f32": "FLOAT32", "f64": "FLOAT64", "i32": "INT32",
               "i64": "INT64", "index": "INT64", "i16": "UINT16", "i8": "UINT8", "i1": "UINT8",
               "f8E4M3FN": "UINT8", "f8E5M2": "UINT8"}  # TMA moves bytes: 8-bit floats as UINT8
_SWIZZLE = {"none": ("NONE", 0), "swizzle_32b": ("32B", 32), "swizzle_64b": ("64B", 64),
            "swizzle_128b": ("128B", 128)}
_L2 = {"none": "NONE", "l2promo_64b": "L2_64B", "l2promo_128b": "L2_128B", "l2promo_256b": "L2_256B"}
_OOB = {"zero": "NONE", "nan": "NAN_REQUEST_ZERO_FMA"}
_INTERLEAVE = {"none": "NONE", "interleave_16b": "16B", "interleave_32b": "32B"}


@dataclass(frozen=True)
class TensorMapSpec:
    """A tensor map without its address: the element type (its IR name) and size in bytes, the
    memref's dims and the box (both outermost first, as the IR writes them), and the descriptor
    type's swizzle, L2 promotion, out-of-bounds fill and interleave (their IR spellings)."""

    element: str
    element_bytes: int
    dims: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: str = "none"
    l2promo: str = "none"
    oob: str = "zero"
    interleave: str = "none"

    @property
    def data_type(self) -> str:
        """The ``CUtensorMapDataType`` member name."""
        name = _DATA_TYPES.get(self.element)
        if name is None:
            raise LaunchError(f"no TMA data type for elements of type {self.element}")
        return f"CU_TENSOR_MAP_DATA_TYPE_{name}"

    def strides(self) -> tuple[int, ...]:
        """The byte strides of dims 1.. counted from the innermost (row-major, contiguous)."""
        out, step = [], self.element_bytes
        for d in reversed(self.dims[1:]):
            step *= d
            out.append(step)
        return tuple(out)

    def check(self, ptr: int) -> None:
        """Raise :class:`LaunchError` (the rule, with the values) when ``cuTensorMapEncodeTiled``
        would refuse this map at address ``ptr``."""
        rank = len(self.dims)
        if not 1 <= rank <= MAX_RANK or len(self.box) != rank:
            raise LaunchError(f"a tensor map has rank 1 to {MAX_RANK} and one box size per dim, got dims {self.dims} "
                              f"and box {self.box}")
        if self.interleave != "none" and rank < 3:
            raise LaunchError(f"an interleaved tensor map needs rank 3 or more, got {rank}")
        align = 32 if self.interleave == "interleave_32b" else 16
        if ptr % align:
            raise LaunchError(f"the global address {ptr:#x} is not {align}-byte aligned (TMA needs it; a view with an "
                              f"offset? pass a copy)")
        if any(not 1 <= d <= 1 << 32 for d in self.dims):
            raise LaunchError(f"tensor dims must be 1 to 2**32, got {self.dims}")
        bad = [s for s in self.strides() if s % align or s >= 1 << 40]
        if bad:
            raise LaunchError(f"the byte strides {self.strides()} of dims {self.dims} (innermost first) must be "
                              f"multiples of {align} below 2**40 (the innermost dim's {self.dims[-1]} elements of "
                              f"{self.element_bytes} bytes)")
        if any(not 1 <= b <= MAX_BOX for b in self.box):
            raise LaunchError(f"box sizes must be 1 to {MAX_BOX}, got {self.box}")
        inner = self.box[-1] * self.element_bytes
        if self.interleave == "none" and inner % 16:
            raise LaunchError(f"the box's innermost extent must be a multiple of 16 bytes, got {inner}")
        span = _SWIZZLE[self.swizzle][1]
        if self.interleave == "none" and span and inner > span:
            raise LaunchError(f"with {self.swizzle} the box's innermost extent is at most {span} bytes, got {inner}")

    def arguments(self, ptr: int) -> tuple:
        """The arguments of ``cuTensorMapEncodeTiled`` with the enum members by name: (data type,
        rank, address, global dims, global strides, box dims, element strides, interleave, swizzle,
        L2 promotion, OOB fill); lists innermost first."""
        return (self.data_type, len(self.dims), ptr, list(reversed(self.dims)), list(self.strides()),
                list(reversed(self.box)), [1] * len(self.dims),
                f"CU_TENSOR_MAP_INTERLEAVE_{_INTERLEAVE[self.interleave]}",
                f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLE[self.swizzle][0]}",
                f"CU_TENSOR_MAP_L2_PROMOTION_{_L2[self.l2promo]}",
                f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{_OOB[self.oob]}")


@dataclass(frozen=True)
class TensorMapArg:
    """The value of a ``create.descriptor`` on the host: its spec, the memref it describes
    (``root``, a function argument or a host allocation: a replayed plan takes that value's pointer
    in the new call), the pointer of this call, and what to call it in errors."""

    spec: TensorMapSpec
    root: Value
    ptr: int
    what: str = "a TMA descriptor"


_cache: cache.LRUCache[tuple[int, TensorMapSpec], tuple[int, ...]] = cache.LRUCache(lambda: CACHE_SIZE)


def clear_cache() -> None:
    _cache.clear()


def encode(spec: TensorMapSpec, ptr: int, drv, what: str = "a TMA descriptor") -> tuple[int, ...]:
    """The 16 words of the ``CUtensorMap`` of ``spec`` at ``ptr``, from the driver module ``drv``
    (``cuda.bindings.driver``: its ``cuTensorMapEncodeTiled`` and enums), cached per (pointer,
    spec). Raises :class:`LaunchError` starting with ``what`` when the map breaks a rule of the
    driver or the driver refuses it."""
    key = (int(ptr), spec)
    hit = _cache.get(key)
    if hit is not None:
        return hit
    try:
        spec.check(int(ptr))
    except LaunchError as e:
        raise LaunchError(f"{what}: {e.message}") from None
    (dtype, rank, address, dims, strides, box, steps, interleave, swizzle, l2, oob) = spec.arguments(int(ptr))
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t  # the bindings take these, not ints, in the lists
    args = (getattr(drv.CUtensorMapDataType, dtype), rank, address, [u64(d) for d in dims],
            [u64(s) for s in strides], [u32(b) for b in box], [u32(e) for e in steps],
            getattr(drv.CUtensorMapInterleave, interleave), getattr(drv.CUtensorMapSwizzle, swizzle),
            getattr(drv.CUtensorMapL2promotion, l2), getattr(drv.CUtensorMapFloatOOBfill, oob))
    err, tmap = drv.cuTensorMapEncodeTiled(*args)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"{what}: cuTensorMapEncodeTiled refused {dtype}, dims {dims}, strides {strides}, box {box}, "
                          f"{swizzle}, {interleave} at {address:#x}: {getattr(err, 'name', err)}")
    words = tensor_map_words(tmap)
    _cache.put(key, words)
    return words


def tensor_map_words(tmap) -> tuple[int, ...]:
    """The 16 64-bit words of an encoded map (a ``CUtensorMap``: its ``opaque``; or 128 bytes)."""
    if isinstance(tmap, (bytes, bytearray, memoryview)):
        raw = bytes(tmap)
        if len(raw) != TENSOR_MAP_BYTES:
            raise LaunchError(f"a tensor map is {TENSOR_MAP_BYTES} bytes, got {len(raw)}")
        return tuple((ctypes.c_uint64 * 16).from_buffer_copy(raw))
    words = tuple(int(w) for w in tmap.opaque)
    if len(words) != TENSOR_MAP_BYTES // 8:
        raise LaunchError(f"a tensor map is {TENSOR_MAP_BYTES // 8} words, got {len(words)}")
    return words
