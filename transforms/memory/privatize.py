"""``affine-privatize``: allocate each privatizable buffer in the body of the loop it is private to.

A local buffer (``memref.alloc`` in the function) that every iteration of a loop writes before
it reads (:func:`analysis.private_scope`: exact, with isl) moves to the start of the body of
the innermost such loop, and its ``memref.dealloc`` to the end of that body; the buffer is then
one per iteration, the dependences through it that the loops around it carried are gone and
those loops become parallel::

    %row = memref.alloc() : memref<64xf32>          affine.for %i = 0 to 128 {
    affine.for %i = 0 to 128 {                        %row = memref.alloc() : memref<64xf32>
      affine.for %j = 0 to 64 { ... store %row[%j] }  affine.for %j = 0 to 64 { ... store %row[%j] }
      affine.for %j = 0 to 64 { ... load %row[%j] }   affine.for %j = 0 to 64 { ... load %row[%j] }
    }                                                  memref.dealloc %row : memref<64xf32>
    memref.dealloc %row : memref<64xf32>             }

What fusion leaves behind is of this kind (the private row buffers of fused softmax and attention
nests). On the GPU, ``gpu-map`` then gives each thread its own copy (``memref.alloca``).
Not in upstream MLIR (its fusion allocates private memrefs before the fused nest).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import FuncOp, Operation
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.traits import IsTerminator, only_frees_memory
from analysis.dependences import DependenceAnalysis
from analysis.privatization import CopyOutScope, PrivateScope, copy_out_scope, private_scope

from ..errors import TransformError
from ..loop_utils import value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .privatize_copy_out import privatize_with_copy_out

__all__ = ["Privatize", "privatize_buffers", "sink_allocation"]


def sink_allocation(alloc: AllocOp, scope: PrivateScope) -> None:
    """Move ``alloc`` to the start of ``scope.loop``'s body; its deallocations go, one is added at
    the end of the body (before its terminator). The caller has checked ``scope`` (see
    :func:`analysis.private_scope`)."""
    memref = alloc.results[0]
    for use in list(memref.uses):
        if only_frees_memory(use.op):
            use.op.erase()
    body = scope.loop.regions[0].blocks[0]
    alloc.detach()
    body.insert(0, alloc)
    term = body.ops[-1]
    dealloc = DeallocOp([memref], location=alloc.location)
    if term.has_trait(IsTerminator):
        body.insert_before(term, dealloc)
    else:
        body.append(dealloc)


def privatize_buffers(func: FuncOp, ctx: PassContext | None = None,
                      dynamic_shapes: bool = True) -> list[PrivateScope | CopyOutScope]:
    """Sink every privatizable ``memref.alloc`` of ``func`` into its loop (see the module
    docstring); with ``dynamic_shapes`` false only those of static shape (a GPU thread's private
    buffer needs one). Returns what moved. The program computes exactly what it computed."""
    moved: list[PrivateScope | CopyOutScope] = []
    allocs = [op for op in func.walk() if isinstance(op, AllocOp) and (dynamic_shapes or not op.operands)]
    analysis = None
    for alloc in allocs:
        if analysis is None:
            analysis = DependenceAnalysis(func)
        scope = private_scope(alloc.results[0], analysis)
        if scope is None:
            continue  # (buffers read after their loops: the copy-out below)
        sink_allocation(alloc, scope)
        analysis = None  # the IR changed
        moved.append(scope)
        if ctx is not None:
            ctx.applied(alloc, f"{value_name(alloc.results[0])}: one buffer per iteration of "
                               f"{_loop_name(scope.loop)} (each iteration writes what it reads)")
    moved += privatize_live_buffers(func, ctx)
    return moved


def privatize_live_buffers(func: FuncOp, ctx: PassContext | None = None) -> list[CopyOutScope]:
    """Privatize with a last-value copy-out (:mod:`.privatize_copy_out`) every memref argument of
    ``func`` and every buffer it allocates at its top level whose contents are used after the
    loop (:func:`analysis.copy_out_scope`); records each decision. Returns what was privatized.
    The program computes exactly what it computed, each buffer's final contents included."""
    done: list[CopyOutScope] = []
    candidates = [a for a in func.args if hasattr(a.type, "shape") and hasattr(a.type, "element_type")]
    candidates += [op.results[0] for op in func.body.ops if isinstance(op, AllocOp)]
    for memref in candidates:
        if not any(True for _ in memref.uses):
            continue
        scope = copy_out_scope(memref, DependenceAnalysis(func))
        if scope is None:
            continue
        if isinstance(scope, str):
            if ctx is not None:
                ctx.note(None, f"{value_name(memref)}: not privatized with a copy-out: {scope}")
            continue
        try:
            private = privatize_with_copy_out(scope)
        except TransformError as err:
            if ctx is not None:
                ctx.refused(scope.loop, err)
            continue
        done.append(scope)
        if ctx is not None:
            ctx.applied(scope.loop, f"{value_name(memref)}: one buffer ({value_name(private)}) per iteration of "
                                    f"{_loops_name(scope.loops)} but the last, which writes {value_name(memref)} "
                                    f"(each iteration writes what it reads; the last writes every element the "
                                    f"others write)")
    return done


def _loops_name(loops) -> str:
    return "(" + ", ".join(value_name(lp.induction_var) for lp in loops) + ")"


def _loop_name(loop: Operation) -> str:
    return "(" + ", ".join(value_name(v) for v in loop.induction_vars) + ")"


@register_pass
@dataclass(frozen=True)
class Privatize(Pass):
    """``affine-privatize``: see the module docstring."""

    name = "affine-privatize"
    summary = "Allocate buffers written before read in each iteration of a loop inside that loop (privatization)"
    dynamic_shapes: bool = option(True, "also buffers of dynamic shape (the GPU pipeline: false, a thread's "
                                        "private buffer needs a static shape)")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if not func.is_declaration:
            privatize_buffers(func, ctx, self.dynamic_shapes)
