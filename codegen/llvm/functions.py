"""Functions: the calling convention, function bodies, ``func.call`` and ``func.return``, and
the packed entry wrappers the runtime calls."""

from __future__ import annotations

from llvmlite import ir

from affine_ir.types import MemRefType, VectorType

from .abi import FunctionABI, ParamABI
from .emitter import FunctionEmitter, ModuleContext, handler
from .errors import EmitError
from .types import I8, I64, PTR, VOID, UnsupportedType, element_align, reg_type

ARG_SLOT = 8


def llvm_name(sym: str) -> str:
    """The LLVM symbol of IR function ``@sym`` (prefixed so that it never clashes with libc/libm)."""
    return f"air.{sym}"


def arg_names(f) -> list[str]:
    if f.is_declaration:
        return [f"%arg{i}" for i in range(len(f.function_type.inputs))]
    return [f"%{a.name_hint}" if a.name_hint else f"%arg{i}" for i, a in enumerate(f.args)]


def param_abis(f) -> tuple[ParamABI, ...]:
    """The parameters of ``f`` under the calling convention (see :mod:`codegen.llvm`)."""
    out = []
    for name, t in zip(arg_names(f), f.function_type.inputs):
        if isinstance(t, MemRefType):
            dyn = tuple(k for k, d in enumerate(t.shape) if d is None)
            out.append(ParamABI(name, str(t), "memref", ("ptr",) + ("i64",) * len(dyn), dyn))
        elif isinstance(t, VectorType):
            raise EmitError(f"@{f.sym_name}: vector arguments ({name}: {t}) are not supported by the CPU backend",
                            f.location)
        else:
            try:
                out.append(ParamABI(name, str(t), "scalar", (str(reg_type(t)),)))
            except UnsupportedType as e:
                raise EmitError(f"@{f.sym_name}: argument {name}: {e}", f.location) from None
    return tuple(out)


def _llvm_param_types(f) -> list[ir.Type]:
    types: list[ir.Type] = []
    for t in f.function_type.inputs:
        if isinstance(t, MemRefType):
            types += [PTR] + [I64] * sum(d is None for d in t.shape)
        else:
            types.append(reg_type(t))
    return types


def _result_type(f) -> ir.Type:
    rs = f.function_type.results
    for t in rs:
        if isinstance(t, (MemRefType, VectorType)):
            raise EmitError(f"@{f.sym_name}: returning {t} is not supported by the CPU backend", f.location)
    if not rs:
        return VOID
    if len(rs) == 1:
        return reg_type(rs[0])
    return ir.LiteralStructType([reg_type(t) for t in rs])


def declare_function(ctx: ModuleContext, f) -> ir.Function:
    """The LLVM function of IR function ``f`` (``noalias``/``align`` on memref pointers)."""
    fn = ir.Function(ctx.module, ir.FunctionType(_result_type(f), _llvm_param_types(f)), llvm_name(f.sym_name))
    fn.attributes.add("nounwind")
    k = 0
    for t in f.function_type.inputs:
        if isinstance(t, MemRefType):
            p = fn.args[k]
            if ctx.options.noalias:
                p.add_attribute("noalias")
            p.attributes.align = element_align(t.element_type)
            k += 1 + sum(d is None for d in t.shape)
        else:
            k += 1
    ctx.functions[f.sym_name] = fn
    ctx.func_ops[f.sym_name] = f
    return fn


def name_params(fn: ir.Function, f) -> None:
    """Name the LLVM parameters after the IR arguments (``A``, ``A.dim1``)."""
    k = 0
    for i, a in enumerate(f.args):
        base = a.name_hint or f"arg{i}"
        fn.args[k].name = base
        k += 1
        if isinstance(a.type, MemRefType):
            for j, d in enumerate(a.type.shape):
                if d is None:
                    fn.args[k].name = f"{base}.dim{j}"
                    k += 1


def bind_params(em: FunctionEmitter, f, values: list[ir.Value]) -> None:
    """Bind the IR arguments of ``f`` to flattened LLVM values (calling-convention order)."""
    it = iter(values)
    for a in f.args:
        if isinstance(a.type, MemRefType):
            ptr = next(it)
            em.bind_memref(a, ptr, [next(it) for d in a.type.shape if d is None])
        else:
            em.set(a, next(it))


def emit_body(ctx: ModuleContext, f) -> None:
    fn = ctx.functions[f.sym_name]

    def on_return(em: FunctionEmitter, vals: list[ir.Value]) -> None:
        em.finish_return()
        if not vals:
            em.b.ret_void()
        elif len(vals) == 1:
            em.b.ret(vals[0])
        else:
            agg = ir.Constant(fn.function_type.return_type, ir.Undefined)
            for k, v in enumerate(vals):
                agg = em.b.insert_value(agg, v, k)
            em.b.ret(agg)

    em = FunctionEmitter(ctx, fn, f, on_return)
    name_params(fn, f)
    bind_params(em, f, list(fn.args))
    em.block(f.body)
    if not em.b.block.is_terminated:
        em.b.ret_void() if fn.function_type.return_type == VOID else em.b.unreachable()


@handler("func.return")
def _return(em: FunctionEmitter, op) -> None:
    em.on_return(em, [em.get(v) for v in op.operands])


@handler("func.call")
def _call(em: FunctionEmitter, op) -> None:
    callee = em.ctx.functions.get(op.callee)
    f = em.ctx.func_ops.get(op.callee)
    if callee is None or f.is_declaration:
        why = "it is a declaration without a body" if f is not None else "no such function in the module"
        raise em.error(op, f"cannot call @{op.callee}: {why}")
    args: list[ir.Value] = []
    for v in op.operands:
        if isinstance(v.type, MemRefType):
            m = em.memref(v)
            args.append(m.ptr)
            args += [m.dims[k] for k, d in enumerate(v.type.shape) if d is None]
        else:
            args.append(em.get(v))
    r = em.b.call(callee, args)
    em.fail_if_callee_failed()
    if len(op.results) == 1:
        em.set(op.results[0], r)
    for k, res in enumerate(op.results if len(op.results) > 1 else ()):
        em.set(res, em.b.extract_value(r, k))


# -- packed argument buffers ------------------------------------------------------------------


def slot_ptr(b: ir.IRBuilder, base: ir.Value, slot: int) -> ir.Value:
    return b.gep(base, [ir.Constant(I64, slot * ARG_SLOT)], inbounds=True, source_etype=I8)


def load_slot(b: ir.IRBuilder, base: ir.Value, slot: int, ty: ir.Type) -> ir.Value:
    """A value of LLVM type ``ty`` from 8-byte slot ``slot`` (i1 as a byte)."""
    p = slot_ptr(b, base, slot)
    if ty == ir.IntType(1):
        return b.trunc(b.load(p, typ=I8, align=8), ty)
    return b.load(p, typ=ty, align=8)


def store_slot(b: ir.IRBuilder, base: ir.Value, slot: int, value: ir.Value) -> None:
    p = slot_ptr(b, base, slot)
    if value.type == ir.IntType(1):
        value = b.zext(value, I8)
    b.store(value, p, align=8)


def slots_of(ty: ir.Type) -> int:
    """8-byte slots a register value of ``ty`` takes in a frame or result buffer."""
    if isinstance(ty, ir.VectorType):
        bits = ty.count * (ty.element.width if isinstance(ty.element, ir.IntType) else
                           (64 if ty.element == ir.DoubleType() else 32))
        return max(1, (bits + 63) // 64)
    return 1


def unpack_args(b: ir.IRBuilder, fn_type: ir.FunctionType, base: ir.Value, nparams: int) -> list[ir.Value]:
    return [load_slot(b, base, k, ty) for k, ty in enumerate(fn_type.args[:nparams])]


WRAPPER_TYPE = ir.FunctionType(VOID, [PTR, PTR, I64, I64, PTR])


def wrapper(ctx: ModuleContext, name: str) -> tuple[ir.Function, ir.IRBuilder]:
    """A new host-callable ``void name(ptr args, ptr frame, i64 lo, i64 hi, ptr aux)``."""
    fn = ir.Function(ctx.module, WRAPPER_TYPE, name)
    fn.attributes.add("nounwind")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def emit_entry(ctx: ModuleContext, f) -> str:
    """``<symbol>.entry``: unpack ``args``, call the function, store its results into ``aux``."""
    target = ctx.functions[f.sym_name]
    name = llvm_name(f.sym_name) + ".entry"
    fn, b = wrapper(ctx, name)
    args = unpack_args(b, target.function_type, fn.args[0], len(target.function_type.args))
    r = b.call(target, args)
    rs = f.function_type.results
    if len(rs) == 1:
        store_slot(b, fn.args[4], 0, r)
    elif len(rs) > 1:
        for k in range(len(rs)):
            store_slot(b, fn.args[4], k, b.extract_value(r, k))
    b.ret_void()
    return name


def function_abi(f, entry: str, segments=(), frame_size: int = 0) -> FunctionABI:
    rs = f.function_type.results
    return FunctionABI(f.sym_name, llvm_name(f.sym_name), entry, param_abis(f), tuple(map(str, rs)),
                       "void" if not rs else ("direct" if len(rs) == 1 else "struct"), tuple(segments), frame_size)
