"""Guarded ``memref.load/store`` for debug builds (``emit(..., check_bounds=True)``).

The isl analysis (:mod:`analysis.bounds`) proves affine accesses in bounds before compiling;
``memref.load``/``memref.store`` take arbitrary index values, so a ``check_bounds`` build
checks them where they run: every index ``i_d`` against its dimension (``0 <= i_d < size_d``,
one unsigned compare). A failing access is *skipped* (a load gives 0, a store writes
nothing), so memory is never touched outside the memref, and the number of the op
(``1 +`` its position in :func:`guarded_sites`) is recorded in a module global, the first
failure winning (``cmpxchg``). The module exports ``i64 @air.bounds_error.take()``, which
returns the recorded number and resets it to 0; the runtime calls it after each call and
raises an error naming the op. Builds without ``check_bounds`` are unchanged.
"""

from __future__ import annotations

from llvmlite import ir

from affine_ir import Operation
from affine_ir.dialects.builtin import ModuleOp
from affine_ir.dialects.func import FuncOp
from affine_ir.dialects.memref import LoadOp, StoreOp

from . import memory
from .emitter import FunctionEmitter, handler
from .types import I64

__all__ = ["ERROR_GLOBAL", "TAKE_FUNCTION", "emit_take_function", "guarded_sites"]

ERROR_GLOBAL = "air.bounds_error"
TAKE_FUNCTION = "air.bounds_error.take"


def guarded_sites(module: ModuleOp | FuncOp) -> list[Operation]:
    """The ``memref.load``/``memref.store`` ops a ``check_bounds`` build guards, in walk order:
    the op of error number ``k`` is ``guarded_sites(module)[k - 1]``."""
    funcs = [module] if isinstance(module, FuncOp) else list(module.functions)
    return [op for f in funcs for op in f.walk() if isinstance(op, (LoadOp, StoreOp))]


def _error_global(module: ir.Module) -> ir.GlobalVariable:
    g = module.globals.get(ERROR_GLOBAL)
    if g is None:
        g = ir.GlobalVariable(module, I64, ERROR_GLOBAL)
        g.initializer = ir.Constant(I64, 0)
    return g


def emit_take_function(module: ir.Module) -> None:
    """Add ``i64 @air.bounds_error.take()`` (the recorded error number, reset to 0) to ``module``."""
    g = _error_global(module)
    fn = ir.Function(module, ir.FunctionType(I64, []), TAKE_FUNCTION)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.atomic_rmw("xchg", g, ir.Constant(I64, 0), "seq_cst"))


def _in_bounds(em: FunctionEmitter, op) -> ir.Value:
    m = em.memref(op.memref)
    ok = ir.Constant(ir.IntType(1), 1)
    for i, d in zip([em.get(v) for v in op.indices], m.dims):
        ok = em.b.and_(ok, em.b.icmp_unsigned("<", i, d))
    return ok


def _guarded(em: FunctionEmitter, op, access) -> None:
    """Emit ``access(em, op)`` under the bounds test; record ``op``'s number where it fails."""
    b = em.b
    ok = _in_bounds(em, op)
    then_bb, else_bb, join_bb = em.append_block("inbounds"), em.append_block("outofbounds"), em.append_block("join")
    b.cbranch(ok, then_bb, else_bb)
    b.position_at_end(then_bb)
    access(em, op)
    loaded = em.get(op.results[0]) if op.results else None
    then_end = b.block
    b.branch(join_bb)
    b.position_at_end(else_bb)
    site = em.ctx.bounds_sites[op] + 1
    b.cmpxchg(_error_global(em.module), ir.Constant(I64, 0), ir.Constant(I64, site), "monotonic", "monotonic")
    b.branch(join_bb)
    b.position_at_end(join_bb)
    if loaded is not None:
        phi = b.phi(loaded.type)
        phi.add_incoming(loaded, then_end)
        phi.add_incoming(ir.Constant(loaded.type, None), else_bb)
        em.set(op.results[0], phi)


@handler("memref.load")
def _load(em: FunctionEmitter, op) -> None:
    if em.options.check_bounds:
        _guarded(em, op, memory._load)
    else:
        memory._load(em, op)


@handler("memref.store")
def _store(em: FunctionEmitter, op) -> None:
    if em.options.check_bounds:
        _guarded(em, op, memory._store)
    else:
        memory._store(em, op)
