"""The attention shape of ``affine-reduce-reduce-fusion``: a parallel loop writing a row of values from a reduction's
result (softmax's probabilities) and the sum over that row under an outer parallel loop (``P @ V``) become one
loop over the row that the reduction's loop can fuse with.

After ``affine-loop-fusion`` a row of attention is, besides the loop of the max and the sum (``P``)::

    affine.for %j ... { probs[%j] = exp(s[%j] - m) / l }                (Q: parallel)
    affine.for %d ... {                                                  (C: parallel over %d)
      O[%d] = 0
      affine.for %j2 ... { O[%d] += probs[%j2] * V[%j2, %d] }           (the sum over the row)
    }

:func:`split_reduction_nest` makes ``C`` ``affine.for %d { O[%d] = 0 }`` and ``affine.for %j2 { affine.for %d {
O[%d] += ... } }`` (legal: ``%d`` carries nothing, so its initialization can run first and the band can be
interchanged; the inner loop's bounds must not use ``%d``); :func:`merge_into` then moves ``Q``'s body into the
row loop's, ``probs[%j2]`` read as the value stored in the same iteration, and drops the row's stores when
nothing reads the buffer any more. Then ``P`` and the merged loop are a reduction and a later loop of sums that
read its values: the pass fuses them (:mod:`.fuse_reductions`), the probabilities never stored.
"""

from __future__ import annotations

import analysis
from affine_ir import Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from affine_ir.dialects.memref import AllocOp
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.traits import EffectKind, IsTerminator

__all__ = ["merge_into", "merge_problem", "split_problem", "split_reduction_nest"]


def _body(loop: AffineForOp) -> list[Operation]:
    return [x for x in loop.body.ops if not x.has_trait(IsTerminator)]


def _inside(v: Value, op: Operation) -> bool:
    owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op
    return owner is op or (owner is not None and op.is_ancestor_of(owner))


def split_problem(c: AffineForOp) -> str | None:
    """Why :func:`split_reduction_nest` cannot split ``c``, or None."""
    ops = _body(c)
    if c.iter_args or not ops or not isinstance(ops[-1], AffineForOp) or ops[-1].iter_args:
        return "it is not a loop of stores ending with one inner loop"
    inner = ops[-1]
    for x in ops[:-1]:
        if not isinstance(x, AffineStoreOp) or _inside(x.value, c):
            return f"'{x.name}' before its inner loop is not a store of a value from outside it"
    if any(_inside(v, c) for v in inner.operands):
        return "the inner loop's bounds use values of the outer loop"
    if not analysis.is_parallel(c):
        return f"{c.induction_var.name_hint or 'its loop'} carries a dependence"
    return None


def split_reduction_nest(c: AffineForOp) -> tuple[AffineForOp, AffineForOp]:
    """``c`` = ``for d { stores; for j { body } }`` (see :func:`split_problem`) replaced, in its place, by
    ``for d { stores }`` and ``for j { for d { body } }``; returns both. The caller checked ``split_problem``."""
    block = c.parent
    init = c.clone()
    _body(init)[-1].erase()
    inner = _body(c)[-1]
    nest = inner.clone()
    outer = c.clone()
    for x in _body(outer):
        x.erase()
    for x in _body(nest):
        x.detach()
        outer.body.insert_before(outer.body.terminator, x)
        for y in x.walk():
            for k, v in enumerate(y.operands):
                if v is c.induction_var:
                    y.set_operand(k, outer.induction_var)
    nest.body.insert_before(nest.body.terminator, outer)
    block.insert_before(c, init)
    block.insert_before(c, nest)
    c.erase()
    return init, nest


def _frees(op: Operation) -> bool:
    effects = op.memory_effects() or ()
    return bool(effects) and all(e.kind is EffectKind.FREE for e in effects)


def _accesses(root: Operation, m: Value) -> list[Operation]:
    return [x for x in root.walk() if isinstance(x, MemRefAccessInterface) and x.memref is m]


def _key(x, loop: AffineForOp, iv: Value) -> tuple:
    return x.map, tuple(iv if v is loop.induction_var else v for v in x.indices)


def merge_problem(q: AffineForOp, row: AffineForOp, scope: Operation) -> str | None:
    """Why :func:`merge_into` cannot merge ``q`` into the later ``row`` loop, or None. ``scope``: the op of
    ``q``'s block holding ``row`` (``row`` itself, or the nest it is the inner loop of): ``q`` must be parallel
    with ``row``'s bounds; each memref ``q`` writes, stored once at its body's top level, is read in ``scope``
    only in ``row`` at that store's subscript (same iteration) by loads; ``scope`` writes nothing ``q``
    accesses; nothing between them touches what ``q`` writes or writes what it reads."""
    if q.iter_args or q.step != row.step or q.lower_bound_map != row.lower_bound_map or \
            q.upper_bound_map != row.upper_bound_map or list(q.operands) != list(row.operands):
        return "their bounds differ"
    if not analysis.is_parallel(q):
        return "the earlier loop carries a dependence"
    stores = [x for x in _body(q) if isinstance(x, AffineStoreOp)]
    written = {x.memref for x in q.walk() if isinstance(x, MemRefAccessInterface) and x.is_write}
    if len(stores) != len(written) or len({s.memref for s in stores}) != len(stores):
        return "the earlier loop writes a memref other than by one store in its body"
    for st in stores:
        for x in _accesses(scope, st.memref):
            if x.is_write or not isinstance(x, AffineLoadOp) or not row.is_ancestor_of(x) or \
                    _key(x, row, q.induction_var) != _key(st, q, q.induction_var):
                return f"{st.memref.name_hint or 'a buffer'} is accessed later other than at the element stored " \
                       f"in the same iteration"
    reads = {x.memref for x in q.walk() if isinstance(x, MemRefAccessInterface)}
    if any(x.is_write and x.memref in reads for x in scope.walk() if isinstance(x, MemRefAccessInterface)):
        return "the later loop writes what the earlier accesses"
    block = q.parent
    for op in block.ops[block.index_of(q) + 1:block.index_of(scope)]:
        mine = {x.memref for x in op.walk() if isinstance(x, MemRefAccessInterface)}
        mine_w = {x.memref for x in op.walk() if isinstance(x, MemRefAccessInterface) and x.is_write}
        if op.memory_effects() is None or mine & written or mine_w & reads:
            return f"'{op.name}' between them touches what the earlier loop accesses"
    return None


def merge_into(q: AffineForOp, row: AffineForOp) -> None:
    """Move ``q``'s body to the start of ``row``'s (``merge_problem`` checked), the loads of what it stored
    replaced by the stored values; stores to a buffer allocated here that nothing reads any more go."""
    first = row.body.ops[0]
    stores = [x for x in _body(q) if isinstance(x, AffineStoreOp)]
    for x in _body(q):
        x.detach()
        row.body.insert_before(first, x)
        for y in x.walk():
            for k, v in enumerate(y.operands):
                if v is q.induction_var:
                    y.set_operand(k, row.induction_var)
    q.erase()
    for st in stores:
        for ld in [x for x in _accesses(row, st.memref) if isinstance(x, AffineLoadOp)]:
            ld.result.replace_all_uses_with(st.value)
            ld.erase()
        mem = st.memref
        if isinstance(mem.owner, AllocOp) and all(isinstance(u.op, AffineStoreOp) or _frees(u.op) for u in mem.uses):
            for u in [u for u in mem.uses if isinstance(u.op, AffineStoreOp)]:
                u.op.erase()
