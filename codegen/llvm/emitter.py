"""The per-function emitter: SSA value map, op dispatch, blocks and memref descriptors.

Handlers (one per op name, in :mod:`.loops`, :mod:`.memory`, :mod:`.arith`, :mod:`.mathops`)
are called as ``handler(em, op)`` with the builder positioned where the op's code goes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from llvmlite import ir

from affine_ir.core import Block, Operation, Value
from affine_ir.dialects.affine import AffineYieldOp
from affine_ir.errors import Location
from affine_ir.types import MemRefType

from .abi import FailureSite
from .errors import EmitError
from .types import I64, PTR, UnsupportedType, reg_type


@dataclass
class MemRef:
    """A memref at run time: its data pointer and one i64 per dim (constants for static dims).
    Row-major, contiguous, identity layout."""

    ptr: ir.Value
    dims: list[ir.Value]
    type: MemRefType


@dataclass(frozen=True)
class Options:
    """Emission options: ``fast_math`` (fast-math flags on float ops, f32 math functions),
    ``noalias`` (memref arguments of a function never overlap), ``check_bounds`` (every load
    and store checks its indices against the memref's dims; a failure is reported as a failed
    allocation is)."""

    fast_math: bool = False
    noalias: bool = True
    check_bounds: bool = False


@dataclass
class ModuleContext:
    """What all functions of one LLVM module share."""

    module: ir.Module
    options: Options
    functions: dict[str, ir.Function] = field(default_factory=dict)  # IR symbol -> LLVM function
    func_ops: dict = field(default_factory=dict)  # IR symbol -> FuncOp
    failure_sites: list[FailureSite] = field(default_factory=list)  # what failed, by failure code - 1

    def failure_code(self, message: str, location: Location | None) -> ir.Constant:
        """The i64 code (1-based) under which the run-time failure ``message`` (of the op at
        ``location``) is reported."""
        self.failure_sites.append(FailureSite(message, location))
        return ir.Constant(I64, len(self.failure_sites))

    def failure_flag(self) -> ir.GlobalVariable:
        """The module's i64 :data:`FAILURE_SYMBOL`: 0, or the 1-based site of a failed allocation."""
        g = self.module.globals.get(FAILURE_SYMBOL)
        if g is None:
            g = ir.GlobalVariable(self.module, I64, FAILURE_SYMBOL)
            g.initializer = ir.Constant(I64, 0)
            g.align = 8
        return g

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """An external function (libc/libm), declared once."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn


#: The global the code sets when an allocation fails (the runtime reads and clears it).
FAILURE_SYMBOL = "air.alloc_failure"
#: The i64 global holding the largest byte size a heap allocation may have (larger ones fail as a
#: failed ``calloc`` does); initialized to :data:`NO_ALLOC_LIMIT`, set by the runtime after
#: loading (the limit is a fact of the machine that runs the code, not of the IR).
ALLOC_LIMIT_SYMBOL = "air.alloc_limit"
NO_ALLOC_LIMIT = 2**63 - 1

HANDLERS: dict[str, Callable] = {}


def handler(*names: str):
    """Register the decorated function as the handler of ops ``names``."""
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


class FunctionEmitter:
    """Emits the ops of one IR function (or of a segment of it) into the LLVM function ``fn``."""

    def __init__(self, ctx: ModuleContext, fn: ir.Function, func_op, on_return: Callable | None = None):
        self.ctx = ctx
        self.fn = fn
        self.func_op = func_op
        entry = fn.append_basic_block("entry")
        self.alloca_builder = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.alloca_builder.branch(body)
        self.alloca_builder.position_at_start(entry)
        self.b = ir.IRBuilder(body)
        self.values: dict[Value, ir.Value] = {}
        self.memrefs: dict[Value, MemRef] = {}
        self.on_return = on_return
        #: per open block, what to ``free`` for its heap memref.alloca buffers (calloc's pointers)
        self.block_frees: list[list[ir.Value]] = [[]]

    @property
    def options(self) -> Options:
        return self.ctx.options

    @property
    def module(self) -> ir.Module:
        return self.ctx.module

    # -- values ---------------------------------------------------------------------
    def get(self, v: Value) -> ir.Value:
        try:
            return self.values[v]
        except KeyError:
            raise EmitError(f"value {v!r} is not available here") from None

    def set(self, v: Value, x: ir.Value) -> None:
        self.values[v] = x

    def memref(self, v: Value) -> MemRef:
        m = self.memrefs.get(v)
        if m is None:
            raise EmitError(f"memref {v!r} is not available here")
        return m

    def bind_memref(self, v: Value, ptr: ir.Value, dynamic_dims: list[ir.Value]) -> MemRef:
        """Bind memref ``v`` to ``ptr`` with the given values of its ``?`` dims."""
        t: MemRefType = v.type
        dyn = iter(dynamic_dims)
        dims = [ir.Constant(I64, d) if d is not None else next(dyn) for d in t.shape]
        m = MemRef(ptr, dims, t)
        self.memrefs[v] = m
        self.values[v] = ptr
        return m

    def index(self, v: Value) -> ir.Value:
        """An index/integer operand as i64 (affine operands are index-typed)."""
        return self.get(v)

    # -- code ------------------------------------------------------------------------
    def block(self, block: Block) -> list[ir.Value] | None:
        """Emit the ops of ``block``; the values an ending ``affine.yield`` passes on (else None)."""
        self.block_frees.append([])
        out = None
        for op in block.ops:
            if isinstance(op, AffineYieldOp):
                out = [self.get(v) for v in op.operands]
                break
            self.op(op)
        self.free_buffers(self.block_frees.pop())
        return out

    def op(self, op: Operation) -> None:
        fn = HANDLERS.get(op.name)
        if fn is None:
            raise self.error(op, "no CPU lowering for this op")
        try:
            fn(self, op)
        except UnsupportedType as e:
            raise self.error(op, str(e)) from None

    def error(self, op: Operation, why: str) -> EmitError:
        return EmitError(f"cannot compile '{op.name}' for the CPU: {why}", op.location)

    def append_block(self, name: str) -> ir.Block:
        return self.fn.append_basic_block(name)

    def entry_alloca(self, ty: ir.Type, count: int | None = None, align: int = 16) -> ir.Value:
        """Stack memory in the entry block (allocated once per call)."""
        n = None if count is None else ir.Constant(I64, count)
        p = self.alloca_builder.alloca(ty, size=n)
        p.align = align
        p.type = PTR  # an opaque pointer (llvmlite types allocas as typed pointers)
        return p

    def free_buffers(self, ptrs: list[ir.Value]) -> None:
        """Free heap buffers of ``memref.alloca`` (at the end of the block defining them: an
        alloca's lifetime is its scope, and its value cannot leave the block); ``ptrs`` are the
        pointers ``calloc`` returned (the second result of ``memory.heap_alloc``)."""
        if not ptrs or self.b.block.is_terminated:
            return
        free = self.ctx.declare("free", ir.VoidType(), [PTR])
        for p in ptrs:
            self.b.call(free, [p])

    def finish_return(self) -> None:
        """Free every open block's heap ``memref.alloca`` buffers before a return."""
        for ptrs in self.block_frees:
            self.free_buffers(ptrs)

    def fail_if(self, failed: ir.Value, code: ir.Value | None = None) -> None:
        """When ``failed`` (i1): record ``code`` (default: leave the flag as a callee set it) in the
        module's failure flag, free the heap ``memref.alloca`` buffers of every open block (as a
        return does) and return from this function at once (results undefined; the caller checks
        the flag). Code continues after it where ``failed`` is false."""
        b = self.b
        fail, cont = self.append_block("alloc.failed"), self.append_block("alloc.ok")
        b.cbranch(failed, fail, cont)
        b.position_at_end(fail)
        if code is not None:
            b.store_atomic(code, self.ctx.failure_flag(), "monotonic", 8)
        self.finish_return()
        rt = self.fn.function_type.return_type
        b.ret_void() if isinstance(rt, ir.VoidType) else b.ret(ir.Constant(rt, ir.Undefined))
        b.position_at_end(cont)

    def fail_if_callee_failed(self) -> None:
        """After a call: return at once when the callee recorded a failed allocation."""
        flag = self.b.load_atomic(self.ctx.failure_flag(), "monotonic", 8)
        self.fail_if(self.b.icmp_unsigned("!=", flag, ir.Constant(I64, 0)))

    def reg(self, v: Value) -> ir.Type:
        return reg_type(v.type)
