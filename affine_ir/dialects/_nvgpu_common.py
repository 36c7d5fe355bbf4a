"""Helpers shared by the Hopper ``nvgpu`` ops (:mod:`.nvgpu_hopper`, :mod:`.nvgpu_warpgroup`): optional
``predicate = %p`` operands, ``%b[%id]`` barrier references, and the checks of tensor-map, tile and
accumulator types that several ops make."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Operation, Value
from ..types import (
    FloatType,
    GPUAddressSpace,
    IntegerType,
    MBarrierGroupType,
    MemRefType,
    TensorMapDescriptorType,
    Type,
    VectorType,
    WarpgroupAccumulatorType,
    element_size_in_bytes,
    index,
    swizzle_bytes,
)
from .arith import constant_int
from .nvgpu import is_shared

MAX_BOX_DIM = 256  # elements per TMA box dimension (cuTensorMapEncodeTiled)
MAX_TMA_RANK = 5
TMA_ROW_BYTES = 16  # a box's innermost dimension is a whole number of 16-byte chunks
WGMMA_M = 64  # rows of one wgmma instruction (m64nNk16)
WGMMA_MAX_N = 256


def is_shared_space(space) -> bool:
    """Whether a memory-space attribute is workgroup (shared) memory (``3`` or ``#gpu.address_space<workgroup>``)."""
    return (isinstance(space, GPUAddressSpace) and space.name == "workgroup") or space == 3


def parse_predicate(p) -> Value | None:
    """``, predicate = %p`` if it follows (the operand, its type left to the verifier), else None."""
    if not p.accept(","):
        return None
    p.expect("predicate", "(the only optional operand that follows ',')")
    p.expect("=")
    return p.parse_operand()


def print_predicate(p, pred: Value | None) -> str:
    return "" if pred is None else f", predicate = {p.value(pred)}"


def parse_barrier_ref(p, op_name: str) -> tuple[Value, Value]:
    """``%b[%id]``: the mbarrier group and the index of one mbarrier in it."""
    loc = p.loc()
    b, ids = p.parse_indexed_operand()
    if len(ids) != 1:
        raise p.error(f"'{op_name}' names one mbarrier of the group: '%barriers[%mbar_id]'", loc)
    return b, ids[0]


def check_optional(op: Operation, v: Value | None, t: Type, what: str) -> None:
    if v is not None and v.type != t:
        raise op.error(f"{what} must be {t}, got {v.type}")


def verify_barrier_ref(op: Operation, barriers: Value, mbar_id: Value) -> None:
    """The group is an ``!nvgpu.mbarrier.group``; ``mbar_id`` an index, inside the group when constant."""
    t = barriers.type
    if not isinstance(t, MBarrierGroupType):
        raise op.error(f"expects an !nvgpu.mbarrier.group, got {t}")
    if mbar_id.type != index:
        raise op.error(f"mbar_id must be an index, got {mbar_id.type}")
    k = constant_int(mbar_id)
    if k is not None and not 0 <= k < t.num_barriers:
        raise op.error(f"mbar_id {k} is outside the group of {t.num_barriers} mbarrier"
                       f"{'s' if t.num_barriers != 1 else ''}")


def row_bytes(t: MemRefType) -> int:
    """Bytes of the innermost dimension of a static memref."""
    return t.shape[-1] * (element_size_in_bytes(t.element_type) or 0)


def verify_tensor_map(op: Operation, t: Type) -> TensorMapDescriptorType:
    """A TMA descriptor type whose box (its ``tensor``) TMA can copy: a static tile of 1 to 5 dims in
    shared memory, each at most 256 elements, the innermost a multiple of 16 bytes and within the
    swizzle span."""
    if not isinstance(t, TensorMapDescriptorType):
        raise op.error(f"expects an !nvgpu.tensormap.descriptor, got {t}")
    box = t.tensor
    if not 1 <= box.rank <= MAX_TMA_RANK or not box.has_static_shape:
        raise op.error(f"the tensor map's box must have a static shape of 1 to {MAX_TMA_RANK} dimensions, got {box}")
    if not is_shared(box):
        raise op.error(f"the tensor map's box must be in shared memory (address space 3 or workgroup), got {box}")
    el = box.element_type
    if not isinstance(el, (IntegerType, FloatType)) or el.width % 8:
        raise op.error(f"TMA copies elements of whole bytes, got {el}")
    for k, d in enumerate(box.shape):
        if not 1 <= d <= MAX_BOX_DIM:
            raise op.error(f"box dimension {k} of {box} is {d}: each must be 1 to {MAX_BOX_DIM}")
    last = row_bytes(box)
    if last % TMA_ROW_BYTES:
        raise op.error(f"the last box dimension of {box} is {last} bytes: it must be a multiple of {TMA_ROW_BYTES}")
    span = swizzle_bytes(t.swizzle)
    if span is not None and last > span:
        raise op.error(f"the last box dimension of {box} is {last} bytes: more than the {span}-byte span of "
                       f"{t.swizzle}")
    return t


def verify_swizzle_alignment(op: Operation, tile: Value, swizzle: str, what: str) -> None:
    """A swizzled tile must start at a multiple of the swizzle's repeat (8 rows of its span: 1024 bytes
    for ``swizzle_128b``) within its buffer: checked where the tile is a ``memref.view`` at a constant
    byte shift."""
    from .memref import ViewOp

    span = swizzle_bytes(swizzle)
    owner = tile.owner
    if span is None or not isinstance(owner, ViewOp):
        return
    shift = constant_int(owner.byte_shift)
    if shift is not None and shift % (8 * span):
        raise op.error(f"the {what} starts at byte {shift} of its buffer: {swizzle} needs a {8 * span}-byte "
                       "aligned start")


def verify_accumulator(op: Operation, t: Type, what: str) -> VectorType:
    """A warpgroup accumulator: an M x N f32 tile, M a multiple of 64, N a multiple of 8 up to 256."""
    if not isinstance(t, WarpgroupAccumulatorType):
        raise op.error(f"the {what} must be an !nvgpu.warpgroup.accumulator, got {t}")
    v = t.fragmented
    if v.rank != 2:
        raise op.error(f"the {what} must hold a 2-D M x N tile, got {v}")
    if v.element_type != FloatType("f32"):
        raise op.error(f"f32 accumulators only, for now ({v.element_type} is not supported yet)")
    m, n = v.shape
    if m % WGMMA_M:
        raise op.error(f"the {what} has M = {m}: it must be a multiple of {WGMMA_M}")
    if n % 8 or not 8 <= n <= WGMMA_MAX_N:
        raise op.error(f"the {what} has N = {n}: it must be a multiple of 8 from 8 to {WGMMA_MAX_N}")
    return v


def verify_coordinates(op: Operation, coords: Sequence[Value], box: MemRefType) -> None:
    """One index coordinate per dimension of the box (innermost first)."""
    if len(coords) != box.rank or any(v.type != index for v in coords):
        raise op.error(f"needs {box.rank} index coordinates (innermost first) for the box {box}, got "
                       f"{len(coords)}")


def verify_tile(op: Operation, tile: Value, d: TensorMapDescriptorType, what: str) -> None:
    """The shared-memory tile of a TMA copy: the descriptor's box type, in shared memory, aligned."""
    if tile.type != d.tensor:
        raise op.error(f"the {what} type {tile.type} must be the tensor map's box type {d.tensor}")
    if not is_shared(tile.type):
        raise op.error(f"the {what} must be in shared memory (address space 3 or workgroup), got {tile.type}")
    verify_swizzle_alignment(op, tile, d.swizzle, what)
