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

The iter_args of a loop go through buffers the same way (:func:`demote_iter_args`), where that
lets ``gpu-map`` keep the loop on the host as a loop of launches (its body holds parallel nests),
and so do the results of an ``affine.if`` (:func:`demote_if_results`), where that lets
``gpu-sink-ifs`` split it and sink it into the loops it holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import AffineMap, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.traits import ReturnLike
from affine_ir.types import FloatType, IntegerType, memref

from ..loop_utils import rebuild_loop

__all__ = ["demotable_iter_args", "demote_if_results", "demote_iter_args", "demote_to_memory", "is_demotable"]

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
    buf = _entry_buffer(func, value.type, name, loc)
    definition.parent.insert_after(definition, AffineStoreOp(value, buf, _ELEMENT, [], location=loc))
    for user in moved_users:
        _load_before(user, value, buf)
    return buf


def demotable_iter_args(loop: AffineForOp) -> bool:
    """Whether :func:`demote_iter_args` applies to ``loop``: an ``affine.for`` with iter_args, each
    an integer or float scalar, whose yield passes each iter_arg either a value of its own or the
    iter_arg itself (not another iter_arg: that would read a buffer already overwritten)."""
    if not isinstance(loop, AffineForOp) or not loop.iter_args:
        return False
    args = list(loop.body.args[1:])
    term = loop.body.terminator
    if not all(is_demotable(a) for a in args) or term is None:
        return False
    return all(not any(y is a for a in args) or y is args[k] for k, y in enumerate(term.operands))


def demote_iter_args(func: FuncOp, loop: AffineForOp) -> AffineForOp:
    """Replace ``loop`` (see :func:`demotable_iter_args`) by a loop without iter_args passing each
    through a one-element buffer (allocated at the entry of ``func``, freed before its returns): the
    init stored before the loop, an ``affine.load`` before each user of the iter_arg in the body,
    the yielded value stored before the yield (none when it is the iter_arg itself), and an
    ``affine.load`` before each user of the loop's result. Returns the new loop::

        %r = affine.for %i = 0 to 8 iter_args(%a = %x) -> (f32) {   affine.store %x, %a_mem[0]
          %s = arith.addf %a, %v : f32                              affine.for %i = 0 to 8 {
          affine.yield %s : f32                                       %a_1 = affine.load %a_mem[0]
        }                                                             %s = arith.addf %a_1, %v : f32
        affine.store %r, %B[0]                                        affine.store %s, %a_mem[0]
                                                                    }
                                                                    %r_1 = affine.load %a_mem[0]
                                                                    affine.store %r_1, %B[0]

    Guarantees: each iteration reads what the previous one yielded (the store is the body's last
    op, after every read of the iteration), the first reads the init, and the users after the loop
    read the last yielded value (the init when it runs no iteration): the program computes exactly
    what it computed."""
    if not demotable_iter_args(loop):
        raise ValueError("the loop's iter_args cannot be demoted")
    loc = loop.location
    body, term = loop.body, loop.body.terminator
    args = list(body.args[1:])
    bufs = [_entry_buffer(func, a.type, f"{a.name_hint or 'iter_arg'}_mem", loc) for a in args]
    for init, buf in zip(loop.inits, bufs):
        loop.parent.insert_before(loop, AffineStoreOp(init, buf, _ELEMENT, [], location=loc))
    for k, (y, buf) in enumerate(zip(term.operands, bufs)):
        if y is not args[k]:
            body.insert_before(term, AffineStoreOp(y, buf, _ELEMENT, [], location=loc))
    for a, buf in zip(args, bufs):
        _load_before_users(a, buf, skip=term)
    for r, buf in zip(loop.results, bufs):
        _load_before_users(r, buf)
    term.set_operands([])
    return rebuild_loop(loop, [])


def demote_if_results(func: FuncOp, op: AffineIfOp) -> AffineIfOp:
    """Replace ``op``, an ``affine.if`` whose results are integer or float scalars, by one without
    results passing each through a one-element buffer (allocated at the entry of ``func``, freed
    before its returns): each branch stores what it yielded before its end, and an ``affine.load``
    before each user of a result reads it. Returns the new if::

        %r = affine.if #set(%i) -> f32 {          affine.if #set(%i) {
          affine.yield %a : f32                      affine.store %a, %r_mem[0]
        } else {                           ->      } else {
          affine.yield %b : f32                      affine.store %b, %r_mem[0]
        }                                          }
        affine.store %r, %B[0]                     %r_1 = affine.load %r_mem[0]
                                                   affine.store %r_1, %B[0]

    Guarantees: exactly one branch runs and stores every result last in it, so each user (after
    the if) reads what the branch taken yielded: the program computes exactly what it computed.
    ValueError (nothing changed) when a result is not an integer or float scalar."""
    if not op.results or not all(is_demotable(r) for r in op.results):
        raise ValueError("the if's results cannot be demoted")
    loc = op.location
    bufs = [_entry_buffer(func, r.type, f"{r.name_hint or 'if_result'}_mem", loc) for r in op.results]
    for r, buf in zip(op.results, bufs):
        _load_before_users(r, buf)
    new = AffineIfOp(op.condition, list(op.operands), with_else=op.else_block is not None, location=loc)
    for old_block, new_block in ((op.then_block, new.then_block), (op.else_block, new.else_block)):
        if old_block is None:
            continue
        term = old_block.terminator
        for x in [x for x in old_block.ops if x is not term]:
            x.detach()
            new_block.insert_before(new_block.ops[-1], x)
        for y, buf in zip(term.operands, bufs):
            new_block.insert_before(new_block.ops[-1], AffineStoreOp(y, buf, _ELEMENT, [], location=loc))
    op.parent.insert_before(op, new)
    op.erase()
    return new


def _entry_buffer(func: FuncOp, element, name: str, loc) -> Value:
    """A new ``memref<1xelement>`` allocated at the entry of ``func`` and freed before its returns."""
    alloc = AllocOp(memref([1], element), location=loc, name_hint=name)
    func.body.insert(0, alloc)
    buf = alloc.results[0]
    for ret in [op for op in func.body.ops if op.has_trait(ReturnLike)]:
        func.body.insert_before(ret, DeallocOp([buf], location=loc))
    return buf


def _load_before_users(value: Value, buf: Value, skip: Operation | None = None) -> None:
    """Each user of ``value`` but ``skip`` reads ``buf`` instead, through a load right before it."""
    for user in list(dict.fromkeys(use.op for use in value.uses)):
        if user is not skip:
            _load_before(user, value, buf)


def _load_before(user: Operation, value: Value, buf: Value) -> None:
    """``user`` reads ``buf`` instead of ``value``, through an ``affine.load`` right before it."""
    load = AffineLoadOp(buf, _ELEMENT, [], location=user.location, name_hint=value.name_hint)
    user.parent.insert_before(user, load)
    for k, v in enumerate(user.operands):
        if v is value:
            user.set_operand(k, load.results[0])
