"""Memrefs: element addressing (row-major, contiguous), ``affine.load/store``,
``affine.vector_load/store``, ``memref.load/store/alloc/alloca/dealloc/dim``.

Memory spaces (``#gpu.address_space<workgroup>``, integer spaces) are plain memory on the
CPU. ``memref.alloc`` is a zero-filled (the interpreter zero-fills; MLIR leaves contents
undefined) 64-byte aligned buffer from ``calloc`` (over-allocated by :data:`HEADER_BYTES`, the
pointer ``calloc`` returned kept just below the aligned start), so untouched pages of a large
buffer are never touched; one larger than the module's :data:`ALLOC_LIMIT_SYMBOL` (set by the
runtime) fails as a failed ``calloc`` does. ``memref.dealloc`` frees the kept pointer.
``memref.alloca`` of a static shape up to :data:`STACK_LIMIT` bytes lives on the stack
(allocated once per call in the entry block, zero-filled where the op runs); larger or
dynamic ones are heap buffers freed at the end of the block that defines them.
Accesses are not bounds-checked (the interpreter checks them).
"""

from __future__ import annotations

import math

from llvmlite import ir

from affine_ir.affine_map import AffineMap
from affine_ir.dialects.memref import AllocaOp
from affine_ir.errors import Location
from affine_ir.types import MemRefType, VectorType

from .emitter import ALLOC_LIMIT_SYMBOL, NO_ALLOC_LIMIT, FunctionEmitter, MemRef, handler
from .loops import affine_map
from .types import (
    I8,
    I32,
    I64,
    PTR,
    element_align,
    intrinsic,
    load_convert,
    reg_type,
    storage_bytes,
    storage_type,
    store_convert,
)

STACK_LIMIT = 64 * 1024
ALLOC_ALIGN = 64


def linear_index(em: FunctionEmitter, m: MemRef, idx: list[ir.Value]) -> ir.Value:
    """Row-major linear index (Horner form: ``(i0 * d1 + i1) * d2 + i2``)."""
    b = em.b
    if not idx:
        return ir.Constant(I64, 0)
    acc = idx[0]
    for d, i in zip(m.dims[1:], idx[1:]):
        acc = b.add(b.mul(acc, d, flags=["nsw"]), i, flags=["nsw"])
    return acc


def element_ptr(em: FunctionEmitter, m: MemRef, idx: list[ir.Value]) -> ir.Value:
    st = storage_type(m.type.element_type)
    return em.b.gep(m.ptr, [linear_index(em, m, idx)], inbounds=True, source_etype=st)


def _indices(em: FunctionEmitter, op) -> list[ir.Value]:
    amap = getattr(op, "map", None)
    if isinstance(amap, AffineMap):
        return affine_map(em, amap, op.indices)
    return [em.get(v) for v in op.indices]


def guard_indices(em: FunctionEmitter, op, m: MemRef, idx: list[ir.Value], lanes: int = 1) -> None:
    """With ``check_bounds``: fail the call (naming ``op``) unless ``0 <= idx[k] < dims[k]`` for
    every k (the last index up to ``lanes`` elements on)."""
    if not em.options.check_bounds or not idx:
        return
    b = em.b
    bad: ir.Value = ir.Constant(ir.IntType(1), 0)
    for k, (i, d) in enumerate(zip(idx, m.dims)):
        last = b.add(i, ir.Constant(I64, lanes - 1)) if k == len(idx) - 1 and lanes > 1 else i
        bad = b.or_(bad, b.or_(b.icmp_unsigned(">=", i, d), b.icmp_unsigned(">=", last, d)))
    em.fail_if(bad, em.ctx.failure_code(f"'{op.name}' of {_name(op.memref)}: an index is outside {m.type}; the "
                                        "call was abandoned", op.location))


def _align(t) -> int:
    return element_align(t.element_type if isinstance(t, MemRefType) else t)


@handler("affine.load", "memref.load")
def _load(em: FunctionEmitter, op) -> None:
    m = em.memref(op.memref)
    el = m.type.element_type
    idx = _indices(em, op)
    guard_indices(em, op, m, idx)
    p = element_ptr(em, m, idx)
    raw = em.b.load(p, typ=storage_type(el), align=element_align(el))
    em.set(op.results[0], load_convert(em.b, raw, el))


@handler("affine.store", "memref.store")
def _store(em: FunctionEmitter, op) -> None:
    m = em.memref(op.memref)
    el = m.type.element_type
    idx = _indices(em, op)
    guard_indices(em, op, m, idx)
    p = element_ptr(em, m, idx)
    em.b.store(store_convert(em.b, em.get(op.value), el), p, align=element_align(el))


#: ``memref.atomic_rmw`` kinds -> LLVM ``atomicrmw`` operations (the others have none here).
_ATOMIC_RMW = {"addf": "fadd", "addi": "add", "maxs": "max", "mins": "min", "maxu": "umax", "minu": "umin",
               "andi": "and", "ori": "or", "xori": "xor"}


@handler("memref.atomic_rmw")
def _atomic_rmw(em: FunctionEmitter, op) -> None:
    """``atomicrmw`` (sequentially consistent) for the kinds LLVM has; an error for the others
    (``mulf``, ``maximumf``... would need a compare-and-swap loop) and for 16-bit floats."""
    m = em.memref(op.memref)
    el = m.type.element_type
    kind = _ATOMIC_RMW.get(op.kind)
    if kind is None or getattr(el, "name", "") in ("f16", "bf16"):
        raise em.error(op, f"memref.atomic_rmw {op.kind} on {el} is not supported by the CPU emitter (kinds: "
                           f"{', '.join(_ATOMIC_RMW)}; not on f16/bf16)")
    idx = _indices(em, op)
    guard_indices(em, op, m, idx)
    p = element_ptr(em, m, idx)
    em.set(op.results[0], em.b.atomic_rmw(kind, p, em.get(op.value), "seq_cst"))


def _vector_rows(em: FunctionEmitter, m: MemRef, idx: list[ir.Value], vt: VectorType):
    """Per row of the vector (its last dim): (pointer to the row's first element, lane offset)."""
    b = em.b
    lead = len(idx) - vt.rank
    rows = []
    for pos in range(math.prod(vt.shape[:-1])):
        sub, rest = [], pos
        for n in reversed(vt.shape[:-1]):
            sub.append(rest % n)
            rest //= n
        sub.reverse()
        full = list(idx[:lead]) + [b.add(i, ir.Constant(I64, s)) if s else i
                                   for i, s in zip(idx[lead:], [*sub, 0])]
        rows.append((element_ptr(em, m, full), pos * vt.shape[-1]))
    return rows


def _check_vector(em: FunctionEmitter, op, m: MemRef, idx: list[ir.Value], vt: VectorType) -> None:
    """Bounds of a vector access: its first and its last element."""
    lead = len(idx) - vt.rank
    guard_indices(em, op, m, idx, vt.shape[-1])
    if vt.rank > 1:
        last = list(idx[:lead]) + [em.b.add(i, ir.Constant(I64, n - 1)) for i, n in zip(idx[lead:], vt.shape)]
        guard_indices(em, op, m, last)


def _row_type(vt: VectorType) -> ir.VectorType:
    return ir.VectorType(storage_type(vt.element_type), vt.shape[-1])


@handler("affine.vector_load")
def _vector_load(em: FunctionEmitter, op) -> None:
    b = em.b
    m = em.memref(op.memref)
    vt: VectorType = op.results[0].type
    idx = _indices(em, op)
    _check_vector(em, op, m, idx, vt)
    rows = _vector_rows(em, m, idx, vt)
    rt = _row_type(vt)
    parts = [b.load(p, typ=rt, align=_align(m.type)) for p, _ in rows]
    raw = parts[0]
    if len(parts) > 1:
        full = ir.VectorType(rt.element, rt.count * len(parts))
        raw = ir.Constant(full, ir.Undefined)
        for part, (_, off) in zip(parts, rows):
            for k in range(rt.count):
                raw = b.insert_element(raw, b.extract_element(part, ir.Constant(I32, k)), ir.Constant(I32, off + k))
    em.set(op.results[0], load_convert(b, raw, vt))


@handler("affine.vector_store")
def _vector_store(em: FunctionEmitter, op) -> None:
    b = em.b
    m = em.memref(op.memref)
    vt: VectorType = op.value.type
    raw = store_convert(b, em.get(op.value), vt)
    idx = _indices(em, op)
    _check_vector(em, op, m, idx, vt)
    rows = _vector_rows(em, m, idx, vt)
    rt = _row_type(vt)
    for p, off in rows:
        part = raw
        if len(rows) > 1:
            part = ir.Constant(rt, ir.Undefined)
            for k in range(rt.count):
                part = b.insert_element(part, b.extract_element(raw, ir.Constant(I32, off + k)), ir.Constant(I32, k))
        b.store(part, p, align=_align(m.type))


def _byte_size(em: FunctionEmitter, t: MemRefType, dims: list[ir.Value]) -> tuple[ir.Value, ir.Value]:
    """The buffer's bytes and an i1 true when they do not fit in 63 bits (a dim is negative, or
    the product overflows)."""
    b = em.b
    umul = intrinsic(em.module, "llvm.umul.with.overflow", ir.LiteralStructType([I64, ir.IntType(1)]), [I64, I64],
                     [I64])
    size: ir.Value = ir.Constant(I64, storage_bytes(t.element_type))
    bad: ir.Value = ir.Constant(ir.IntType(1), 0)
    for d in dims:
        r = b.call(umul, [size, d])
        size = b.extract_value(r, 0)
        bad = b.or_(bad, b.or_(b.extract_value(r, 1), b.icmp_signed("<", d, ir.Constant(I64, 0))))
    return size, b.or_(bad, b.icmp_signed("<", size, ir.Constant(I64, 0)))


def _zero_fill(em: FunctionEmitter, p: ir.Value, size: ir.Value) -> None:
    memset = intrinsic(em.module, "llvm.memset", ir.VoidType(), [PTR, I8, I64, ir.IntType(1)], [PTR, I64])
    em.b.call(memset, [p, ir.Constant(I8, 0), size, ir.Constant(ir.IntType(1), 0)])


#: Bytes a heap buffer is over-allocated by: room to round its start up to :data:`ALLOC_ALIGN`
#: with the pointer ``calloc`` returned stored in the 8 bytes just below that start.
HEADER_BYTES = ALLOC_ALIGN + 8


def alloc_limit(em: FunctionEmitter) -> ir.Value:
    """The i64 byte size above which a heap allocation fails (the module's
    :data:`ALLOC_LIMIT_SYMBOL`, which the runtime sets after loading the code)."""
    g = em.module.globals.get(ALLOC_LIMIT_SYMBOL)
    if g is None:
        g = ir.GlobalVariable(em.module, I64, ALLOC_LIMIT_SYMBOL)
        g.initializer = ir.Constant(I64, NO_ALLOC_LIMIT)
        g.align = 8
    return em.b.load_atomic(g, "monotonic", 8)


def heap_alloc(em: FunctionEmitter, size: ir.Value, site: str = "an allocation", location: Location | None = None,
               too_big: ir.Value | None = None) -> tuple[ir.Value, ir.Value]:
    """A zero-filled 64-byte aligned heap buffer of ``size`` bytes, and the pointer to pass to
    :func:`heap_free` (or ``free``) for it. The zeros come from ``calloc``, so pages the program
    never touches are never touched (large buffers are fresh zero pages from the OS). When
    ``size`` exceeds the module's allocation limit (:func:`alloc_limit`), ``too_big`` is true or
    ``calloc`` fails, the function records ``site`` in the module's failure flag and returns
    (see :meth:`FunctionEmitter.fail_if`)."""
    b = em.b
    code = em.ctx.failure_code(f"out of memory: {site} could not be allocated (size too large or not "
                               "available); the call was abandoned", location)
    refused = b.icmp_unsigned(">", size, alloc_limit(em))
    em.fail_if(refused if too_big is None else b.or_(too_big, refused), code)
    calloc = em.ctx.declare("calloc", PTR, [I64, I64])
    raw = b.call(calloc, [b.add(size, ir.Constant(I64, HEADER_BYTES)), ir.Constant(I64, 1)])
    address = b.ptrtoint(raw, I64)
    em.fail_if(b.icmp_unsigned("==", address, ir.Constant(I64, 0)), code)
    start = b.add(address, ir.Constant(I64, HEADER_BYTES - 1))
    offset = b.sub(b.and_(start, ir.Constant(I64, -ALLOC_ALIGN)), address)  # 8 .. HEADER_BYTES - 1
    p = b.gep(raw, [offset], inbounds=True, source_etype=I8)
    b.store(raw, _header(em, p), align=8)
    return p, raw


def _header(em: FunctionEmitter, p: ir.Value) -> ir.Value:
    return em.b.gep(p, [ir.Constant(I64, -8)], inbounds=True, source_etype=I8)


def heap_free(em: FunctionEmitter, p: ir.Value) -> None:
    """Free the buffer :func:`heap_alloc` returned as ``p`` (through the pointer stored below it)."""
    free = em.ctx.declare("free", ir.VoidType(), [PTR])
    em.b.call(free, [em.b.load(_header(em, p), typ=PTR, align=8)])


@handler("memref.alloc", "memref.alloca")
def _alloc(em: FunctionEmitter, op) -> None:
    t: MemRefType = op.results[0].type
    dyn = [em.get(v) for v in op.operands]
    dyn_iter = iter(dyn)
    dims = [ir.Constant(I64, d) if d is not None else next(dyn_iter) for d in t.shape]
    size, too_big = _byte_size(em, t, dims)
    static = t.has_static_shape
    nbytes = storage_bytes(t.element_type) * math.prod(t.shape) if static else None
    if isinstance(op, AllocaOp) and static and nbytes <= STACK_LIMIT:
        p = em.entry_alloca(I8, max(nbytes, 1), align=ALLOC_ALIGN)
        _zero_fill(em, p, size)
    else:
        p, raw = heap_alloc(em, size, f"'{op.name}' of {t}", op.location, too_big)
        if isinstance(op, AllocaOp):
            em.block_frees[-1].append(raw)
    em.bind_memref(op.results[0], p, dyn)


def _name(v) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a memref"


@handler("memref.dealloc")
def _dealloc(em: FunctionEmitter, op) -> None:
    heap_free(em, em.memref(op.operands[0]).ptr)


@handler("memref.dim")
def _dim(em: FunctionEmitter, op) -> None:
    m = em.memref(op.operands[0])
    k = em.get(op.operands[1])
    if isinstance(k, ir.Constant) and isinstance(k.constant, int) and 0 <= k.constant < len(m.dims):
        em.set(op.results[0], m.dims[k.constant])
        return
    out: ir.Value = ir.Constant(I64, 0)  # out of range: 0 (the interpreter raises)
    for j, d in enumerate(m.dims):
        out = em.b.select(em.b.icmp_signed("==", k, ir.Constant(I64, j)), d, out)
    em.set(op.results[0], out)


__all__ = ["HEADER_BYTES", "alloc_limit", "element_ptr", "heap_alloc", "heap_free", "linear_index", "reg_type"]
