"""Dead-code elimination: ``dce``.

MLIR has no pass of this name: there the work is done by ``canonicalize`` (its driver
erases every op that ``isOpTriviallyDead``), by ``cse`` (which erases the trivially dead
ops it visits) and, for memrefs that are only written, by the ``memref.alloc`` /
``memref.alloca`` canonicalization pattern (``SimplifyDeadAlloc``: an allocation whose
only users are ``memref.store`` into it and deallocations is erased with them; it does not
know ``affine.store``, which this pass counts as well). This pass does all of that on its
own, to a fixpoint, without the other canonicalizations:

- **trivially dead ops**: ops whose results are unused and that have no effect other
  than reading memory or allocating their own result (pure ops, ``affine.load``,
  ``memref.load``, unused ``memref.alloc``), as MLIR's ``wouldOpBeTriviallyDead``;
- **dead loops and conditionals**: ``affine.for``, ``affine.parallel`` and ``affine.if``
  whose results are unused and whose bodies have no such effect (affine loops always
  terminate, so dropping one is safe);
- **write-only memrefs**: a ``memref.alloc``/``alloca`` of the function whose only uses
  are stores *into* it and ``memref.dealloc`` is erased with those stores. A memref
  passed to a call, returned, or used by any other op (a load, ``memref.dim``, an
  unregistered op) escapes or is read, and is kept. Function arguments are never touched.

Erasing a store can leave its value, and then a loop, dead: the pass repeats until nothing
changes, sweeping each block bottom-up so chains of dead ops go in one sweep.
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import FuncOp, Operation, Value
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.traits import EffectKind, MemoryEffect, allocating_op, has_only_read_effects, is_trivially_dead

from ..pass_base import Pass, PassContext, register_pass

# has_only_read_effects and is_trivially_dead are re-exported from here, their old home.
__all__ = ["DeadCodeElimination", "eliminate_dead_code", "erase_trivially_dead_ops", "has_only_read_effects",
           "erase_write_only_allocations", "is_trivially_dead", "write_only_allocations"]


def erase_trivially_dead_ops(root: Operation) -> int:
    """Erase every trivially dead op nested in ``root`` (not ``root`` itself), bottom-up in each
    block so a chain of dead ops goes in one call. Returns the number of ops erased (an erased
    loop counts with the ops in its body).

    Before::

        %a = arith.addi %n, %c1 : index
        %b = arith.muli %a, %a : index        // %b is unused
        affine.for %i = 0 to 8 {
          %v = affine.load %A[%i] : memref<8xf32>
        }

    After: all of it is gone.
    """
    count = 0
    for region in root.regions:
        for block in region.blocks:
            for op in reversed(list(block.ops)):
                count += erase_trivially_dead_ops(op)
                if is_trivially_dead(op):
                    count += _erase(op)
    return count


@dataclass(frozen=True)
class WriteOnlyAllocation:
    """A ``memref.alloc``/``alloca`` whose memref is only stored into (``stores``) and
    deallocated (``deallocs``): nothing ever reads what is written."""

    alloc: Operation
    stores: tuple[Operation, ...]
    deallocs: tuple[Operation, ...]


def write_only_allocations(root: Operation) -> list[WriteOnlyAllocation]:
    """The allocations nested in ``root`` whose memref is never read and does not escape: every
    use is the memref operand of a store (a writing ``MemRefAccessInterface`` op: ``affine.store``,
    ``affine.vector_store``, ``memref.store``) or an op whose one effect frees it (``memref.dealloc``).
    A memref passed to a call, returned, loaded from, measured (``memref.dim``) or used by any
    other op is not listed."""
    out = []
    for op in root.walk():
        if len(op.results) == 1 and allocating_op(op.results[0]) is op:  # an ALLOCATE effect on its result
            found = _write_only_uses(op.results[0])
            if found is not None:
                out.append(WriteOnlyAllocation(op, *found))
    return out


def _write_only_uses(mem: Value) -> tuple[tuple[Operation, ...], tuple[Operation, ...]] | None:
    stores, deallocs = [], []
    for use in mem.uses:
        user = use.op
        if _is_store_into(user, use.index):
            stores.append(user)
        elif _only_frees(user, mem):
            deallocs.append(user)
        else:
            return None
    return tuple(_unique(stores)), tuple(_unique(deallocs))


def _is_store_into(op: Operation, operand_index: int) -> bool:
    """Whether ``op`` is a store (a writing ``MemRefAccessInterface``) whose memref is its operand
    ``operand_index``: it writes that memref and reads no memory."""
    return isinstance(op, MemRefAccessInterface) and op.is_write and operand_index == op.memref_index


def _only_frees(op: Operation, mem: Value) -> bool:
    """Whether the one effect of ``op`` is to FREE ``mem`` (``memref.dealloc``)."""
    return op.memory_effects() == (MemoryEffect(EffectKind.FREE, mem),)


def _unique(ops: list[Operation]) -> list[Operation]:
    return list(dict.fromkeys(ops))  # ops hash by identity; first occurrences in order


def erase_write_only_allocations(root: Operation, erased: list[WriteOnlyAllocation] | None = None) -> int:
    """Erase each allocation of :func:`write_only_allocations` with its stores and deallocs
    (appending each to ``erased`` when given). Returns the number of ops erased."""
    count = 0
    for found in write_only_allocations(root):
        if erased is not None:
            erased.append(found)
        for op in (*found.stores, *found.deallocs):
            count += _erase(op)
        count += _erase(found.alloc)
    return count


def eliminate_dead_code(op: Operation) -> int:
    """Erase the dead code nested in ``op`` (a function, a module, a loop): trivially dead ops,
    loops and ``affine.if`` without effects whose results are unused, and memrefs allocated
    there that are only written (with their stores and deallocs), repeated until nothing
    changes. Returns the number of ops erased (ops in erased regions included).

    Guarantees: every memref the program can observe (arguments, returned or passed to a
    call) holds the same values afterwards, and the returned values are the same.

    Before::

        func.func @f(%A: memref<8xf32>) {
          %t = memref.alloc() : memref<8xf32>
          affine.for %i = 0 to 8 {
            %v = affine.load %A[%i] : memref<8xf32>
            %w = arith.addf %v, %v : f32
            affine.store %w, %t[%i] : memref<8xf32>
          }
          memref.dealloc %t : memref<8xf32>
          return
        }

    After::

        func.func @f(%A: memref<8xf32>) {
          return
        }
    """
    return _eliminate(op, [])


def _eliminate(op: Operation, erased_allocs: list[WriteOnlyAllocation]) -> int:
    total = 0
    while True:
        n = erase_write_only_allocations(op, erased_allocs) + erase_trivially_dead_ops(op)
        if n == 0:
            return total
        total += n


def _erase(op: Operation) -> int:
    n = sum(1 for _ in op.walk())
    op.erase()
    return n


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """``dce``: :func:`eliminate_dead_code` on each function. MLIR has no pass of this name; its
    ``canonicalize`` (and, for trivially dead ops, ``cse``) erases the same code."""

    name = "dce"
    summary = "Erase dead ops, effect-free loops and ifs with unused results, and write-only memrefs"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        allocs: list[WriteOnlyAllocation] = []
        n = _eliminate(func, allocs)
        for found in allocs:
            ctx.note(found.alloc, f"erased a {found.alloc.name} that is only written "
                                  f"({len(found.stores)} stores, {len(found.deallocs)} deallocs)")
        if n:
            ctx.applied(func, f"erased {n} dead ops in @{func.sym_name}")
