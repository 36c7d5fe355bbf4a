"""Common-subexpression elimination: ``cse`` (MLIR's ``-cse``).

An op is replaced by an equivalent op that dominates it: one earlier in the same block or
in an enclosing block (scopes follow regions, as MLIR's CSE walks the dominance tree; an
op isolated from above, such as ``func.func``, starts an empty scope, and so does
``gpu.launch``: a kernel keeps its own constants). Two ops are
equivalent when they have the same name, the same operands (in either order for
commutative ops such as ``arith.addf``, as MLIR's ``OperationEquivalence`` hashes them),
the same attributes (``0.0`` and ``-0.0`` differ) and the same result types.

Only ops without regions and without memory effects are merged (``Pure`` ones: ``arith``/
``math`` ops, constants, ``affine.apply/min/max``, ``memref.dim``...; operands in either order
for ``Commutative`` ones); ops of unknown effects never. Loads are not: MLIR's CSE merges two loads when
no op between them may write memory, here that is ``affine-scalrep``'s job (which knows
the dependences). As MLIR's CSE, the pass also erases the trivially dead ops it finds
(:func:`transforms.cleanup.dce.erase_trivially_dead_ops`); unlike it, chains of dead ops go in one
run (MLIR's CSE leaves the operands of an erased op to a later pass).
"""

from __future__ import annotations

from collections import ChainMap, Counter
from dataclasses import dataclass

from affine_ir import FuncOp, Operation
from affine_ir.attributes import ArrayAttr, DenseAttr, FloatAttr
from affine_ir.dialects.arith import COMMUTATIVE
from affine_ir.traits import Commutative, IsolatedFromAbove, IsTerminator, KernelScope, is_memory_effect_free

from ..pass_base import Pass, PassContext, register_pass
from .dce import erase_trivially_dead_ops, is_trivially_dead

__all__ = ["COMMUTATIVE", "CommonSubexpressionElimination", "eliminate_common_subexpressions", "equivalence_key",
           "starts_empty_scope"]



def _attr_key(a) -> object:
    """A hashable key equal for equal attributes; floats by their printed form (``-0.0`` is not
    ``0.0``, NaNs by their bits), ``True`` is not ``1``."""
    if isinstance(a, (FloatAttr, DenseAttr, ArrayAttr, float)):
        return (type(a).__name__, str(a))
    try:
        hash(a)
    except TypeError:
        return (type(a).__name__, str(a))
    return (type(a).__name__, a)


def equivalence_key(op: Operation) -> tuple:
    """The key under which ``op`` is merged with its equivalents: name, operands (sorted for
    commutative ops), attributes and result types. Two pure ops with equal keys compute the
    same values. Values are keys themselves (they hash by identity); the operands of a
    commutative op are a multiset."""
    operands: tuple | frozenset = op.operands
    if op.has_trait(Commutative):
        operands = frozenset(Counter(operands).items())
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attributes.items()))
    return (op.name, operands, attrs, tuple(r.type for r in op.results))


def _is_candidate(op: Operation) -> bool:
    """An op CSE may merge: results, no regions, not a terminator, and no memory effect (MLIR's
    ``isMemoryEffectFree``: reads are not merged, unknown effects never)."""
    return bool(op.results) and not op.regions and not op.has_trait(IsTerminator) and is_memory_effect_free(op)


def eliminate_common_subexpressions(op: Operation) -> int:
    """Replace each pure op nested in ``op`` by an equivalent op that dominates it (see the
    module docstring), then erase the trivially dead ops. Returns the number of ops removed.

    Guarantees: every replaced value is computed, by an op that dominates all its uses, from
    the same operands by the same pure computation; the values a program computes are
    unchanged. The surviving op keeps its name (or takes the duplicate's when it has none).

    Before::

        %a = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
        %b = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
        %x = arith.addf %u, %v : f32
        %y = arith.addf %v, %u : f32
        affine.store %x, %A[%a] : memref<9xf32>
        affine.store %y, %A[%b] : memref<9xf32>

    After::

        %a = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
        %x = arith.addf %u, %v : f32
        affine.store %x, %A[%a] : memref<9xf32>
        affine.store %x, %A[%a] : memref<9xf32>
    """
    merged = _cse_regions(op, ChainMap())
    return merged + erase_trivially_dead_ops(op)


def starts_empty_scope(op: Operation) -> bool:
    """Whether CSE looks up nothing from outside ``op`` in its regions: ``op`` is isolated from
    above (``func.func``) or a kernel (``KernelScope``: ``gpu.launch`` keeps its own constants;
    MLIR's CSE would merge them with the host's, its kernel outlining sinks them back)."""
    return op.has_trait(IsolatedFromAbove) or op.has_trait(KernelScope)


def _cse_regions(op: Operation, scope: ChainMap) -> int:
    outer = ChainMap() if starts_empty_scope(op) else scope
    count = 0
    for region in op.regions:
        for block in region.blocks:
            count += _cse_block(block, outer.new_child())
    return count


def _cse_block(block, scope: ChainMap) -> int:
    count = 0
    for op in list(block.ops):
        if _is_candidate(op) and is_trivially_dead(op):  # as MLIR: dead ops go before they are looked up
            op.erase()
            count += 1
            continue
        if _is_candidate(op):
            key = equivalence_key(op)
            known = scope.get(key)
            if known is not None:
                _replace(op, known)
                count += 1
                continue
            scope[key] = op
        if op.regions:
            count += _cse_regions(op, scope)
    return count


def _replace(op: Operation, known: Operation) -> None:
    for old, new in zip(op.results, known.results):
        if new.name_hint is None and old.name_hint is not None:
            new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    op.erase()


@register_pass
@dataclass(frozen=True)
class CommonSubexpressionElimination(Pass):
    """``cse``: :func:`eliminate_common_subexpressions` on each function."""

    name = "cse"
    summary = "Eliminate common sub-expressions"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        n = eliminate_common_subexpressions(func)
        if n:
            ctx.applied(func, f"removed {n} redundant or dead ops in @{func.sym_name}")
