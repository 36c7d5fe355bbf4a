"""IR types: immutable, interned values printed in MLIR syntax.

Every type is a frozen dataclass; constructing the same type twice gives an equal
(and, through :func:`_intern`, identical) object, so types can be compared with
``==`` or ``is`` and used as dict keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .affine_expr import INDEX_MAX

_INTERNED: dict[object, object] = {}


def _intern(t):
    return _INTERNED.setdefault(t, t)


def intern(t: Type) -> Type:
    """The one interned instance of type ``t`` (an equal type made earlier, or ``t`` itself)."""
    return _intern(t)


class Type:
    """Base of all IR types."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Type({self})"


@dataclass(frozen=True, repr=False)
class IndexType(Type):
    """The ``index`` type: loop IVs and affine values."""

    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True, repr=False)
class IntegerType(Type):
    """Signless integers ``i1``, ``i8``, ``i16``, ``i32``, ``i64``."""

    width: int

    def __str__(self) -> str:
        return f"i{self.width}"


@dataclass(frozen=True, repr=False)
class FloatType(Type):
    """IEEE ``f16``/``f32``/``f64``, ``bf16`` and the 8-bit ``f8E4M3FN`` (no infinities, NaN the all-ones
    pattern; largest finite 448) and ``f8E5M2`` (IEEE-like; largest finite 57344), MLIR's names."""

    name: str
    NAMES: ClassVar[tuple[str, ...]] = ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2")

    def __post_init__(self):
        if self.name not in self.NAMES:
            raise ValueError(f"unknown float type {self.name!r}")

    @property
    def width(self) -> int:
        return 64 if self.name == "f64" else 32 if self.name == "f32" else 8 if self.name.startswith("f8") else 16

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, repr=False)
class ShapedType(Type):
    """Common part of memref and vector types: a shape (None = dynamic) and element type."""

    shape: tuple[int | None, ...]
    element_type: Type

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def has_static_shape(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        n = 1
        for d in self.shape:
            if d is None:
                return None
            n *= d
        return n

    def _shape_str(self) -> str:
        return "".join(("?" if d is None else str(d)) + "x" for d in self.shape)


@dataclass(frozen=True, repr=False)
class MemRefType(ShapedType):
    """``memref<4x?xf32>`` or ``memref<32x32xf32, #gpu.address_space<workgroup>>``.

    ``memory_space`` is ``None`` (global), an int, or a memory-space attribute such as
    :class:`GPUAddressSpace`.
    """

    memory_space: object = None

    def __str__(self) -> str:
        space = "" if self.memory_space is None else f", {self.memory_space}"
        return f"memref<{self._shape_str()}{self.element_type}{space}>"

    def with_shape(self, shape) -> MemRefType:
        return memref(tuple(shape), self.element_type, self.memory_space)


@dataclass(frozen=True, repr=False)
class VectorType(ShapedType):
    """``vector<8xf32>`` (static shapes only)."""

    def __str__(self) -> str:
        return f"vector<{self._shape_str()}{self.element_type}>"


@dataclass(frozen=True, repr=False)
class MMAMatrixType(Type):
    """``!gpu.mma_matrix<16x16xf16, "AOp">``: a warp-level matrix fragment."""

    shape: tuple[int, int]
    element_type: Type
    operand: str

    def __str__(self) -> str:
        return f'!gpu.mma_matrix<{self.shape[0]}x{self.shape[1]}x{self.element_type}, "{self.operand}">'


@dataclass(frozen=True, repr=False)
class DeviceAsyncTokenType(Type):
    """``!nvgpu.device.async.token``: names an asynchronous copy (``nvgpu.device_async_copy``) or a
    group of them (``nvgpu.device_async_create_group``), so waits refer to what they wait for."""

    def __str__(self) -> str:
        return "!nvgpu.device.async.token"


@dataclass(frozen=True, repr=False)
class UnrankedMemRefType(Type):
    """``memref<*xf16>`` or ``memref<*xf16, 3>``: a memref of unknown rank (``memref.cast`` of a ranked
    memref; what ``nvgpu.tma.create.descriptor`` takes). Not a :class:`MemRefType`: nothing indexes it."""

    element_type: Type
    memory_space: object = None

    def __str__(self) -> str:
        space = "" if self.memory_space is None else f", {self.memory_space}"
        return f"memref<*x{self.element_type}{space}>"


@dataclass(frozen=True, repr=False)
class MBarrierGroupType(Type):
    """``!nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>``: a group
    of ``num_barriers`` hardware mbarriers (PTX ``mbarrier``), indexed by ``mbar_id`` in the ops
    (``, num_barriers = N`` is omitted when 1, as upstream prints)."""

    memory_space: object
    num_barriers: int = 1

    def __str__(self) -> str:
        n = "" if self.num_barriers == 1 else f", num_barriers = {self.num_barriers}"
        return f"!nvgpu.mbarrier.group<memorySpace = {self.memory_space}{n}>"


@dataclass(frozen=True, repr=False)
class MBarrierTokenType(Type):
    """``!nvgpu.mbarrier.token``: the state an ``nvgpu.mbarrier.arrive`` returns."""

    def __str__(self) -> str:
        return "!nvgpu.mbarrier.token"


#: The enumerated parameters of ``!nvgpu.tensormap.descriptor`` and their values (upstream's spellings).
TMA_SWIZZLES = ("none", "swizzle_32b", "swizzle_64b", "swizzle_128b")
TMA_L2PROMOS = ("none", "l2promo_64b", "l2promo_128b", "l2promo_256b")
TMA_OOBS = ("zero", "nan")
TMA_INTERLEAVES = ("none", "interleave_16b", "interleave_32b")


def swizzle_bytes(swizzle: str) -> int | None:
    """The span in bytes of a TMA swizzle mode (``swizzle_128b``: 128), None for ``none``."""
    return int(swizzle[len("swizzle_"):-1]) if swizzle.startswith("swizzle_") else None


@dataclass(frozen=True, repr=False)
class TensorMapDescriptorType(Type):
    """``!nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>, swizzle = swizzle_128b, l2promo =
    none, oob = zero, interleave = none>``: a TMA descriptor (CUDA ``CUtensorMap``) whose box is the
    shared-memory tile ``tensor``, with its swizzle, L2 promotion, out-of-bounds fill and interleave."""

    tensor: MemRefType
    swizzle: str = "none"
    l2promo: str = "none"
    oob: str = "zero"
    interleave: str = "none"

    def __post_init__(self):
        for what, value, allowed in (("swizzle", self.swizzle, TMA_SWIZZLES), ("l2promo", self.l2promo, TMA_L2PROMOS),
                                     ("oob", self.oob, TMA_OOBS), ("interleave", self.interleave, TMA_INTERLEAVES)):
            if value not in allowed:
                raise ValueError(f"unknown {what} {value!r} (one of {', '.join(allowed)})")

    def __str__(self) -> str:
        return (f"!nvgpu.tensormap.descriptor<tensor = {self.tensor}, swizzle = {self.swizzle}, l2promo = "
                f"{self.l2promo}, oob = {self.oob}, interleave = {self.interleave}>")


@dataclass(frozen=True, repr=False)
class WarpgroupDescriptorType(Type):
    """``!nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>``: a wgmma matrix descriptor of a
    shared-memory operand tile (its address, layout and swizzle)."""

    tensor: MemRefType

    def __str__(self) -> str:
        return f"!nvgpu.warpgroup.descriptor<tensor = {self.tensor}>"


@dataclass(frozen=True, repr=False)
class WarpgroupAccumulatorType(Type):
    """``!nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>``: a warpgroup's whole M x N
    accumulator tile, held in fragments by its 128 threads (see :mod:`affine_ir.dialects.nvgpu_hopper`)."""

    fragmented: VectorType

    def __str__(self) -> str:
        return f"!nvgpu.warpgroup.accumulator<fragmented = {self.fragmented}>"


@dataclass(frozen=True, repr=False)
class FunctionType(Type):
    """``(i32, f32) -> f32``: the type of a ``func.func``."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.results))})"


@dataclass(frozen=True)
class GPUAddressSpace:
    """The memory-space attribute ``#gpu.address_space<workgroup|private|global>``."""

    name: str

    def __str__(self) -> str:
        return f"#gpu.address_space<{self.name}>"


WORKGROUP = GPUAddressSpace("workgroup")

index = _intern(IndexType())
i1 = _intern(IntegerType(1))
i8 = _intern(IntegerType(8))
i16 = _intern(IntegerType(16))
i32 = _intern(IntegerType(32))
i64 = _intern(IntegerType(64))
f16 = _intern(FloatType("f16"))
bf16 = _intern(FloatType("bf16"))
f32 = _intern(FloatType("f32"))
f64 = _intern(FloatType("f64"))
f8E4M3FN = _intern(FloatType("f8E4M3FN"))
f8E5M2 = _intern(FloatType("f8E5M2"))
async_token = _intern(DeviceAsyncTokenType())
mbarrier_token = _intern(MBarrierTokenType())

_SCALARS = {str(t): t for t in (index, i1, i8, i16, i32, i64, f16, bf16, f32, f64, f8E4M3FN, f8E5M2)}


def scalar(name: str) -> Type:
    """The scalar type named ``name`` (``"f32"``, ``"index"``, ``"i32"``...); ValueError if unknown."""
    try:
        return _SCALARS[name]
    except KeyError:
        if name.startswith("i") and name[1:].isdigit() and int(name[1:]) > 0:
            return _intern(IntegerType(int(name[1:])))
        raise ValueError(f"unknown scalar type {name!r}") from None


def memref(shape, element_type: Type | str, memory_space=None) -> MemRefType:
    """An interned memref type; ``element_type`` may be given by name."""
    if isinstance(element_type, str):
        element_type = scalar(element_type)
    return _intern(MemRefType(tuple(shape), element_type, memory_space))


def unranked_memref(element_type: Type | str, memory_space=None) -> UnrankedMemRefType:
    """An interned ``memref<*x...>`` type; ``element_type`` may be given by name."""
    if isinstance(element_type, str):
        element_type = scalar(element_type)
    return _intern(UnrankedMemRefType(element_type, memory_space))


def vector(shape, element_type: Type | str) -> VectorType:
    """An interned vector type; ``element_type`` may be given by name."""
    if isinstance(element_type, str):
        element_type = scalar(element_type)
    return _intern(VectorType(tuple(shape), element_type))


def is_float(t: Type) -> bool:
    return isinstance(t, FloatType)


def is_int(t: Type) -> bool:
    """True for signless integer types (not index)."""
    return isinstance(t, IntegerType)


def is_int_or_index(t: Type) -> bool:
    return isinstance(t, (IntegerType, IndexType))


def element_type_of(t: Type) -> Type:
    """The element type of a vector, or the type itself for a scalar."""
    return t.element_type if isinstance(t, VectorType) else t


INT64_MAX = INDEX_MAX  # one definition of the 64-bit limits: affine_ir.affine_expr


def element_size_in_bytes(t: Type) -> int | None:
    """Bytes per element of a memref (or of a scalar/vector type): ``ceil(bits / 8)``; index is 8;
    None for a type without a storage size."""
    if isinstance(t, MemRefType):
        t = t.element_type
    if isinstance(t, VectorType):
        inner = element_size_in_bytes(t.element_type)
        return None if inner is None else inner * t.num_elements
    if isinstance(t, (IntegerType, FloatType)):
        return (t.width + 7) // 8
    if isinstance(t, IndexType):
        return 8
    return None


def shaped_type_size_problem(t: ShapedType) -> str | None:
    """Why ``t`` cannot exist on our 64-bit targets, or None: a dimension beyond int64 (MLIR's
    "invalid dimension"), or static dimensions whose total size in bytes overflows int64 (the
    backends compute sizes and linear indices in int64, which would wrap)."""
    dims = [d for d in t.shape if d is not None]
    if any(d > INT64_MAX for d in dims):
        return "invalid dimension: each dimension must fit in 64 bits (at most 2**63 - 1)"
    total = element_size_in_bytes(t.element_type) or 1
    for d in dims:
        total *= d
    if total > INT64_MAX:
        return f"{t} has {total.bit_length()}-bit size in bytes: more than int64 can address (2**63 - 1)"
    return None
