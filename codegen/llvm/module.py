"""``emit(module) -> LLVMModule``: the whole module as one LLVM module."""

from __future__ import annotations

from llvmlite import ir

from affine_ir.dialects.builtin import ModuleOp
from affine_ir.dialects.func import FuncOp

from . import arith, loops, mathops, memory  # noqa: F401  (register the op handlers)
from .abi import LLVMModule
from .emitter import ModuleContext, Options
from .errors import EmitError
from .functions import declare_function, emit_body, emit_entry, function_abi
from .segments import emit_segments


def emit(module: ModuleOp | FuncOp, fast_math: bool = False, noalias: bool = True,
         segments: bool = True, check_bounds: bool = False) -> LLVMModule:
    """LLVM IR for every function of ``module`` (built with ``llvmlite.ir``).

    Guarantees: each function with a body becomes an LLVM function under the calling
    convention of :mod:`codegen.llvm`, plus a packed entry wrapper and, when its top level
    holds ``affine.parallel`` ops and ``segments`` is true, its thread segments; what runs
    computes what the interpreter computes (see the module docs for the documented
    differences). ``fast_math`` puts fast-math flags on float ops; ``noalias`` declares
    memref arguments of one function disjoint (callers must not pass overlapping arrays);
    ``check_bounds`` checks every access against its memref's dims (see ``failure_sites``).
    Raises :class:`EmitError` naming the op and its location for anything unsupported.
    """
    if isinstance(module, FuncOp):
        funcs = [module]
    elif isinstance(module, ModuleOp):
        funcs = list(module.functions)
    else:
        raise EmitError(f"expected a module or a func.func op, got {type(module).__name__}")
    options = Options(fast_math=fast_math, noalias=noalias, check_bounds=check_bounds)
    ctx = ModuleContext(ir.Module(name="affine_ir"), options)
    for f in funcs:
        if f.is_declaration:
            ctx.func_ops[f.sym_name] = f
        else:
            declare_function(ctx, f)
    abis = {}
    for f in funcs:
        if f.is_declaration:
            continue
        emit_body(ctx, f)
        entry = emit_entry(ctx, f)
        segs, frame = emit_segments(ctx, f) if segments else ([], 0)
        abis[f.sym_name] = function_abi(f, entry, segs, frame)
    return LLVMModule(str(ctx.module), abis, {"fast_math": fast_math, "noalias": noalias, "segments": segments,
                                               "check_bounds": check_bounds},
                      tuple(ctx.failure_sites))
