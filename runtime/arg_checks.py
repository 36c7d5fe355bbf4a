"""What the IR says about a function's memref arguments, for the run-time argument checks shared
by the CPU and CUDA paths and the ``affine-run`` inputs.

- :func:`written_arguments`: the memref arguments the function may write (through aliases and
  calls): a read-only array is refused for those only.
- :func:`dynamic_dim_sizes`: for each ``?`` dim of a memref argument, the index argument whose
  value it must have at least, when the accesses say so (``%A[%i, ...]`` with ``%i`` from 0 to
  an index argument ``%M``).
"""

from __future__ import annotations

from affine_ir import FuncOp, ModuleOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.func import CallOp
from affine_ir.dialects.nvgpu_hopper import TmaAsyncStoreOp
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.traits import EffectKind
from affine_ir.types import MemRefType, TensorMapDescriptorType, UnrankedMemRefType

__all__ = ["dynamic_dim_sizes", "written_arguments"]


_DERIVED = (MemRefType, UnrankedMemRefType, TensorMapDescriptorType)


def _memref_aliases(v: Value) -> list[Value]:
    """``v`` and every value derived from it that reaches its memory (memref results of ops taking
    it: casts, views; TMA descriptors of it; the ops themselves are judged by :func:`_writes` too)."""
    out, todo = [], [v]
    while todo:
        x = todo.pop()
        out.append(x)
        for use in x.uses:
            todo += [r for r in use.op.results if isinstance(r.type, _DERIVED)]
    return out


def _writes(op: Operation, v: Value, module: ModuleOp | None, seen: set) -> bool:
    """Whether ``op`` may write memref ``v`` (one of its operands), asked of its memory effects: a
    write or free of ``v`` (or of memory not named) writes, reads and size queries do not; a call
    writes when its callee may write the parameter (a declaration always may); an op whose effects
    are unknown is taken to write. Through a TMA descriptor only a TMA store writes (a load, a
    prefetch, a wgmma descriptor read the tensor or nothing)."""
    if isinstance(v.type, TensorMapDescriptorType):
        return isinstance(op, TmaAsyncStoreOp)
    if isinstance(op, CallOp) and module is not None:
        callee = next((f for f in module.functions if f.sym_name == op.callee), None)
        if callee is None or callee.is_declaration:
            return True
        return any(k in written_arguments(callee, module, seen) for k, x in enumerate(op.operands) if x is v)
    effects = op.memory_effects()
    if effects is None:
        return True
    return any(e.kind in (EffectKind.WRITE, EffectKind.FREE) and (e.value is None or e.value is v) for e in effects)


def written_arguments(func: FuncOp, module: ModuleOp | None = None, _seen: set | None = None) -> frozenset[int]:
    """Positions of the memref arguments of ``func`` that it may write: stores, ops with unknown
    effects, and calls writing them, through every alias (views, casts) of the argument. A
    conservative answer: an argument missing from the set is only read (or unused)."""
    seen = set() if _seen is None else _seen
    if func in seen:  # recursion: assume the worst for the cycle
        return frozenset(k for k, a in enumerate(func.args) if isinstance(a.type, MemRefType))
    seen.add(func)
    module = module if module is not None else func.parent_op
    module = module if isinstance(module, ModuleOp) else None
    out = set()
    for k, a in enumerate(func.args):
        if not isinstance(a.type, MemRefType):
            continue
        if any(_writes(use.op, x, module, seen) for x in _memref_aliases(a) for use in x.uses):
            out.add(k)
    seen.discard(func)
    return frozenset(out)


def _argument_bound(v: Value, func: FuncOp) -> Value | None:
    """The index argument ``%N`` when ``v`` is the IV of ``affine.for %i = 0 to %N`` (step 1)."""
    owner = getattr(v, "owner", None)
    loop = getattr(owner, "parent_op", None)
    if not isinstance(loop, AffineForOp) or loop.induction_var is not v:
        return None
    lb, ub = loop.lower_bound_map, loop.upper_bound_map
    if not (lb.is_single_constant and lb.single_constant() == 0 and len(ub.results) == 1):
        return None
    e, ops = ub.results[0], loop.upper_bound_operands
    if e.constant_term != 0 or len(ops) != 1 or ops[0] not in func.args:
        return None
    coeff = e.coefficient_of_dim(0) if ub.num_dims else e.coefficient_of_symbol(0)
    return ops[0] if coeff == 1 and not e.div_terms() else None


def dynamic_dim_sizes(func: FuncOp) -> dict[tuple[int, int], int]:
    """``(argument position, dim)`` -> position of the index argument that sizes that ``?`` dim,
    read off the accesses ``%A[.., %i, ..]`` whose subscript is exactly the IV of a loop from 0
    to that index argument. Dims no access ties to an argument are left out."""
    positions = {a: k for k, a in enumerate(func.args)}
    out: dict[tuple[int, int], int] = {}
    for k, a in enumerate(func.args):
        if not isinstance(a.type, MemRefType):
            continue
        for use in a.uses:
            op = use.op
            amap = getattr(op, "map", None)
            if not isinstance(op, MemRefAccessInterface) or op.memref is not a or amap is None:
                continue
            for d, e in enumerate(amap.results):
                if a.type.shape[d] is not None or (k, d) in out:
                    continue
                dims = [i for i in range(amap.num_dims) if e.coefficient_of_dim(i)]
                if len(dims) != 1 or e.coefficient_of_dim(dims[0]) != 1 or e.constant_term or e.div_terms() or \
                        any(e.coefficient_of_symbol(j) for j in range(amap.num_symbols)):
                    continue
                bound = _argument_bound(op.indices[dims[0]], func)
                if bound is not None:
                    out[(k, d)] = positions[bound]
    return out
