"""Thread segments: a function whose top level holds ``affine.parallel`` ops is also emitted
as a sequence of host-callable pieces (see :class:`~.abi.SegmentABI`), so the runtime can
run the iterations of each top-level parallel loop in chunks on a thread pool.

Top-level values that one segment defines and a later one uses (constants, ``memref.alloc``
buffers and their sizes, ``affine.apply`` results, reduction results) travel through a
*frame*: 8-byte slots in a host buffer shared by the segments of one call. A segment's body
is an internal function with the calling convention's parameters (memref pointers
``noalias``), called by a wrapper that unpacks the packed argument buffer.
"""

from __future__ import annotations

import math

from llvmlite import ir

from affine_ir.core import Value
from affine_ir.dialects.affine import AffineParallelOp
from affine_ir.dialects.memref import AllocaOp
from affine_ir.types import MemRefType

from .abi import SegmentABI
from .emitter import FunctionEmitter, ModuleContext
from .functions import bind_params, llvm_name, load_slot, slots_of, store_slot, unpack_args, wrapper
from .loops import combine_reduction, emit_loop, emit_parallel, parallel_bounds
from .memory import STACK_LIMIT
from .types import I64, PTR, VOID, reg_type, storage_bytes


def plan(f) -> list[list] | None:
    """The segments of ``f``: runs of top-level ops, each top-level ``affine.parallel`` (with at
    least one loop) alone; None when there is nothing to run in parallel (or a top-level heap
    ``memref.alloca``, whose lifetime is the whole call, would span segments)."""
    ops = list(f.body.ops)
    if not any(isinstance(op, AffineParallelOp) and op.ivs for op in ops):
        return None
    for op in ops:
        if isinstance(op, AllocaOp):
            t: MemRefType = op.results[0].type
            if not t.has_static_shape or storage_bytes(t.element_type) * math.prod(t.shape) > STACK_LIMIT:
                return None
    segs: list[list] = []
    cur: list = []
    for op in ops:
        if isinstance(op, AffineParallelOp) and op.ivs:
            if cur:
                segs.append(cur)
                cur = []
            segs.append([op])
        else:
            cur.append(op)
    if cur:
        segs.append(cur)
    return segs


def _uses(ops) -> dict[Value, None]:
    """The values the ops (and what they hold) use, each once, in walk order (so the frame
    layout, and the LLVM IR, is the same on every run)."""
    out: dict[Value, None] = {}
    for op in ops:
        for o in op.walk():
            out.update(dict.fromkeys(o.operands))
    return out


def _slots(v: Value) -> int:
    if isinstance(v.type, MemRefType):
        return 1 + sum(d is None for d in v.type.shape)
    return slots_of(reg_type(v.type))


class _Frame:
    """Slot assignment of the values crossing segments."""

    def __init__(self, segs: list[list]):
        self.slot: dict[Value, int] = {}
        self.size = 0
        defined_in = {r: k for k, seg in enumerate(segs) for op in seg for r in op.results}
        for k, seg in enumerate(segs):
            for v in sorted(_uses(seg), key=lambda v: defined_in.get(v, -1)):
                if defined_in.get(v, k) < k and v not in self.slot:
                    self.slot[v] = self.size
                    self.size += _slots(v)

    def load(self, em: FunctionEmitter, frame: ir.Value, values) -> None:
        b = em.b
        for v in values:
            k = self.slot.get(v)
            if k is None:
                continue
            if isinstance(v.type, MemRefType):
                ndyn = sum(d is None for d in v.type.shape)
                em.bind_memref(v, load_slot(b, frame, k, PTR), [load_slot(b, frame, k + 1 + j, I64)
                                                                for j in range(ndyn)])
            else:
                em.set(v, load_slot(b, frame, k, reg_type(v.type)))

    def store(self, em: FunctionEmitter, frame: ir.Value, values) -> None:
        b = em.b
        for v in values:
            k = self.slot.get(v)
            if k is None:
                continue
            if isinstance(v.type, MemRefType):
                m = em.memref(v)
                store_slot(b, frame, k, m.ptr)
                for j, d in enumerate(dd for dd, s in zip(m.dims, v.type.shape) if s is None):
                    store_slot(b, frame, k + 1 + j, d)
            else:
                store_slot(b, frame, k, em.get(v))


def _impl(ctx: ModuleContext, f, name: str, on_return=None):
    """An internal function: the calling convention's parameters + (frame, lo, hi, aux)."""
    target = ctx.functions[f.sym_name]
    params = list(target.function_type.args)
    fn = ir.Function(ctx.module, ir.FunctionType(VOID, params + [PTR, I64, I64, PTR]), name)
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    for k, a in enumerate(target.args):
        for attr in a.attributes:
            fn.args[k].add_attribute(attr)
        fn.args[k].attributes.align = a.attributes.align
    em = FunctionEmitter(ctx, fn, f, on_return)
    bind_params(em, f, list(fn.args[: len(params)]))
    frame, lo, hi, aux = fn.args[len(params):]
    return fn, em, (frame, lo, hi, aux)


def _wrap(ctx: ModuleContext, f, impl: ir.Function, name: str) -> None:
    target = ctx.functions[f.sym_name]
    n = len(target.function_type.args)
    fn, b = wrapper(ctx, name)
    args = unpack_args(b, target.function_type, fn.args[0], n)
    b.call(impl, args + list(fn.args[1:]))
    b.ret_void()


def _finish(em: FunctionEmitter) -> None:
    if not em.b.block.is_terminated:
        em.b.ret_void()


def _partial_layout(op) -> tuple[list[int], int]:
    offs, size = [], 0
    for r in op.results:
        offs.append(size)
        size += slots_of(reg_type(r.type))
    return offs, size


def emit_segments(ctx: ModuleContext, f) -> tuple[list[SegmentABI], int]:
    """Emit the segments of ``f`` (see :func:`plan`); their ABI and the frame size in bytes."""
    segs = plan(f)
    if segs is None:
        return [], 0
    frame_layout = _Frame(segs)
    later_uses = [_uses([op for s in segs[k + 1:] for op in s]) for k in range(len(segs))]
    base = llvm_name(f.sym_name)
    out: list[SegmentABI] = []
    for k, seg in enumerate(segs):
        defined = [r for op in seg for r in op.results if r in later_uses[k]]
        name = f"{base}.seg{k}"
        op = seg[0]
        if not (isinstance(op, AffineParallelOp) and op.ivs and len(seg) == 1):
            aux_box: list = []

            def on_return(em: FunctionEmitter, vals, box=aux_box) -> None:
                for j, v in enumerate(vals):
                    store_slot(em.b, box[0], j, v)

            impl, em, (frame, _, _, aux) = _impl(ctx, f, name + ".impl", on_return)
            aux_box.append(aux)
            frame_layout.load(em, frame, _uses(seg))
            for o in seg:
                em.op(o)
            frame_layout.store(em, frame, defined)
            _finish(em)
            _wrap(ctx, f, impl, name)
            out.append(SegmentABI("serial", name))
            continue
        offs, pslots = _partial_layout(op)
        # the chunk
        impl, em, (frame, lo, hi, aux) = _impl(ctx, f, name + ".impl")
        frame_layout.load(em, frame, _uses(seg))
        for off, v in zip(offs, emit_parallel(em, op, outer=(lo, hi))):
            store_slot(em.b, aux, off, v)
        _finish(em)
        _wrap(ctx, f, impl, name)
        # its bounds
        impl, em, (frame, _, _, aux) = _impl(ctx, f, name + ".bounds.impl")
        frame_layout.load(em, frame, op.operands)
        lb, ub = parallel_bounds(em, op)[0]
        store_slot(em.b, aux, 0, lb)
        store_slot(em.b, aux, 1, ub)
        _finish(em)
        _wrap(ctx, f, impl, name + ".bounds")
        # combining the partials, in chunk order
        impl, em, (frame, n, _, aux) = _impl(ctx, f, name + ".combine.impl")
        types = [r.type for r in op.results]
        from .arith import reduction_identity

        inits = [reduction_identity(kd, t) for kd, t in zip(op.reductions, types)]

        def body(c, accs, em=em, aux=aux, offs=offs, pslots=pslots, op=op, types=types):
            b = em.b
            out_vals = []
            for off, acc, kd, t in zip(offs, accs, op.reductions, types):
                p = b.gep(aux, [b.mul(c, ir.Constant(I64, pslots * 8))], inbounds=True, source_etype=ir.IntType(8))
                out_vals.append(combine_reduction(em, kd, acc, load_slot(b, p, off, reg_type(t)), t))
            return out_vals

        results = emit_loop(em, ir.Constant(I64, 0), n, 1, inits, body, "chunk")
        for r, v in zip(op.results, results):
            em.set(r, v)
        frame_layout.store(em, frame, defined)
        _finish(em)
        _wrap(ctx, f, impl, name + ".combine")
        out.append(SegmentABI("parallel", name, name + ".bounds", name + ".combine", op.steps[0], pslots * 8))
    return out, frame_layout.size * 8
