"""Demotion of scalar SSA values to one-element device buffers (a preparation step of ``gpu-map``).

``gpu-map`` makes one launch of each top-level nest and of each run of statements; a value computed
in one launch cannot be an SSA operand of another, so a value crossing launches merges them and
everything between into one sequential (1x1x1) launch. Where that merge would take in a nest worth
mapping, ``gpu-map`` passes the value through memory instead (:func:`demote_to_memory`)::

    %s = affine.load %A[0] : memref<4xf32>          %buf = memref.alloc() : memref<1xf32>   (function entry)
    affine.for %i = 0 to 64 {                        %s = affine.load %A[0] : memref<4xf32>
      affine.store %s, %B[%i] : memref<64xf32>       affine.store %s, %buf[0] : memref<1xf32>
    }                                                affine.for %i = 0 to 64 {
                                                       %s_1 = affine.load %buf[0] : memref<1xf32>
                                                       affine.store %s_1, %B[%i] : memref<64xf32>
                                                     }
                                                     memref.dealloc %buf : memref<1xf32>     (before return)

Only integer and float scalars are demoted (index values may be affine operands, which a load is
not). The buffer is written once per execution of the definition, right after it, and read right
before each use that is moved, so every use reads the value its definition gave: the program
computes exactly what it computed.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import AffineMap, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineLoadOp, AffineStoreOp
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.traits import ReturnLike
from affine_ir.types import FloatType, IntegerType, memref

__all__ = ["demote_to_memory", "is_demotable"]

_ELEMENT = AffineMap(0, 0, (0,))


def is_demotable(v: Value) -> bool:
    """Whether ``v`` may go through a one-element buffer: an integer or float scalar."""
    return isinstance(v.type, (IntegerType, FloatType))


def demote_to_memory(func: FuncOp, value: Value, moved_users: Sequence[Operation]) -> Value:
    """Pass ``value`` (an integer or float result of an op of ``func``) to the uses by
    ``moved_users`` through a new one-element buffer: ``memref.alloc() : memref<1xT>`` at the start
    of ``func`` (a ``memref.dealloc`` before each of its returns), ``affine.store`` of the value right
    after its defining op, and before each moved user an ``affine.load`` of the buffer replacing the
    value in it. Other uses keep the value. Returns the buffer.

    Guarantees: every moved use reads what the definition stored last, which is the value it read
    before, provided the definition executes before each moved use (the caller picks users later
    in program order in the block holding the definition, or nested in later ops of it)."""
    if not is_demotable(value) or not isinstance(value.owner, Operation):
        raise ValueError(f"cannot demote {value.name_hint or 'a value'} of type {value.type}")
    definition = value.owner
    loc = definition.location
    name = f"{value.name_hint or 'scalar'}_mem"
    alloc = AllocOp(memref([1], value.type), location=loc, name_hint=name)
    func.body.insert(0, alloc)
    buf = alloc.results[0]
    for ret in [op for op in func.body.ops if op.has_trait(ReturnLike)]:
        func.body.insert_before(ret, DeallocOp([buf], location=loc))
    definition.parent.insert_after(definition, AffineStoreOp(value, buf, _ELEMENT, [], location=loc))
    for user in moved_users:
        load = AffineLoadOp(buf, _ELEMENT, [], location=user.location, name_hint=value.name_hint)
        user.parent.insert_before(user, load)
        for k, v in enumerate(user.operands):
            if v is value:
                user.set_operand(k, load.results[0])
    return buf
