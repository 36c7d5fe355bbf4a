"""Choosing the entry function of a module (shared by the CPU and CUDA paths)."""

from __future__ import annotations

from affine_ir.dialects.builtin import ModuleOp
from affine_ir.dialects.func import CallOp, FuncOp

from .errors import CompileError

__all__ = ["entry_function"]


def entry_function(module: ModuleOp, fn: str | None) -> FuncOp:
    """The function named ``fn``; without a name, the only function with a body, or the only one
    no other function calls. CompileError naming the candidates otherwise."""
    funcs = list(module.functions)
    defined = [f for f in funcs if not f.is_declaration]
    if fn is not None:
        for f in defined:
            if f.sym_name == fn:
                return f
        names = ", ".join("@" + f.sym_name for f in defined) or "none"
        raise CompileError(f"no function @{fn} with a body in the module (functions: {names})")
    if len(defined) == 1:
        return defined[0]
    called = {op.callee for f in defined for op in f.walk() if isinstance(op, CallOp)}
    roots = [f for f in defined if f.sym_name not in called]
    if len(roots) == 1:
        return roots[0]
    if not defined:
        raise CompileError("the module has no function with a body")
    names = ", ".join("@" + f.sym_name for f in (roots or defined))
    raise CompileError(f"the module has several entry functions ({names}); choose one with fn=...")
