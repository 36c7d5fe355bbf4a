"""Rescaled sums in ``gpu-map-reductions``: the sums ``affine-reduce-reduce-fusion`` rebases (online softmax).

After that fusion and scalar replacement a row loop carries ``m`` (a reduction of a recognized kind) and ``s``::

    %m1 = arith.maximumf %m, %x              (m's chain, any recognized kind)
    %r  = ... ratio of %m and %m1 ...       (ops of %m, %m1 and values from outside the loop only)
    %z  = arith.cmpf oeq, %s, %zero          (%zero a 0.0 constant)
    %sr = arith.select %z, %s, (arith.mulf %s, %r)
    %s1 = arith.addf %sr, %t                 (%t any term not using %s)

``s`` is the sum of its terms, each taken against the current ``m``: :func:`rescaled_reduction` recognizes it as
a :class:`Rescale` (the ratio's ops and its two inputs). Each thread's partial ``(m_t, s_t)`` is taken against
its own ``m_t``; :func:`rescale_partial` builds ``s_t`` taken against the block's ``M`` (the ratio's ops cloned
with ``m_t`` and ``M`` in place of ``%m`` and ``%m1``), so the partials add as plain sums: the block reduces ``m``
first, then the rescaled ``s`` (:mod:`.gpu_reduce`).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import Operation, Value
from affine_ir.core import Block
from affine_ir.dialects.affine import AffineForOp, AffineYieldOp
from affine_ir.dialects.arith import OPS as ARITH
from affine_ir.dialects.arith import CmpFOp, ConstantOp, SelectOp

__all__ = ["Rescale", "rescale_partial", "rescaled_reduction"]


@dataclass(frozen=True)
class Rescale:
    """How iter_arg ``index`` of a row loop is rescaled: by ``ratio`` (computed by ``ops``, in order, from
    iter_arg ``base``'s value before (``old``) and after (``new``) an iteration, and values from outside the
    loop)."""

    base: int
    ratio: Value
    old: Value
    new: Value
    ops: tuple[Operation, ...]
    sum_ops: tuple[Operation, ...] = ()  # the sum's own ops: the zero test, the product, the select, the add


def _zero_test(v: Value, s: Value) -> bool:
    op = v.owner
    return isinstance(op, CmpFOp) and op.predicate == "oeq" and op.operands[0] is s and \
        isinstance(op.operands[1].owner, ConstantOp) and op.operands[1].owner.value == 0.0


def rescaled_reduction(loop: AffineForOp, k: int, chains: dict[int, Value]) -> Rescale | None:
    """Iter_arg ``k`` of ``loop`` as a rescaled sum (module docstring) whose ratio uses the iter_arg of
    ``chains`` (index -> the value it yields, for the loop's reductions of a recognized kind), or None."""
    s, body = loop.iter_args[k], loop.body
    term = body.terminator
    if not isinstance(term, AffineYieldOp):
        return None
    add = term.operands[k].owner
    if not isinstance(add, ARITH["addf"]) or add.parent is not body or len(term.operands[k].uses) != 1:
        return None
    sel = next((v.owner for v in add.operands if isinstance(v.owner, SelectOp)), None)
    if sel is None or sel.parent is not body or len(sel.results[0].uses) != 1 or sel.operands[1] is not s or \
            not _zero_test(sel.operands[0], s):
        return None
    mul = sel.operands[2].owner
    if not isinstance(mul, ARITH["mulf"]) or mul.operands[0] is not s or len(mul.results[0].uses) != 1:
        return None
    if {u.op for u in s.uses} != {sel.operands[0].owner, sel, mul} or len(sel.operands[0].uses) != 1:
        return None
    term_value = add.operands[1] if add.operands[0] is sel.results[0] else add.operands[0]
    if _reaches_avoiding(term_value, {s}, set(), body):
        return None
    for base, new in chains.items():
        old = loop.iter_args[base]
        ops = _slice(mul.operands[1], old, new, loop)
        if ops is not None and _rebases(loop, term_value, mul.operands[1], old, new):
            return Rescale(base, mul.operands[1], old, new, ops, (sel.operands[0].owner, mul, sel, add))
    return None


def _based(v: Value, body: Block) -> Value:
    """``v``'s base as affine-reduce-reduce-fusion takes it: ``select(v == c, 0, v)`` when the body computes
    one (``c`` the max's or min's infinite identity), else ``v``."""
    for u in v.uses:
        sel = u.op
        if isinstance(sel, SelectOp) and sel.parent is body and sel.operands[2] is v and \
                _zero_const(sel.operands[1]) and isinstance(sel.operands[0].owner, CmpFOp) and \
                sel.operands[0].owner.predicate == "oeq" and sel.operands[0].owner.operands[0] is v:
            return sel.results[0]
    return v


def _zero_const(v: Value) -> bool:
    return isinstance(v.owner, ConstantOp) and v.owner.value == 0.0


def _rebases(loop: AffineForOp, term: Value, ratio: Value, old: Value, new: Value) -> bool:
    """Whether the sum's invariant holds: ``term`` depends on the running value only through ``new``'s base
    and as a product that rebases (:func:`transforms.fusion.term_factor`), the bases of ``old`` and ``new`` are
    the same function, and ``ratio`` is exactly the factor such terms change by from ``old``'s base to
    ``new``'s (the ops :func:`transforms.fusion.build_ratio` makes, compared op by op). Then every thread's
    partial is the sum of its terms taken against its own running value, and rescaling partials is exact."""
    from ..fusion.fuse_reductions import build_ratio, term_factor  # (the algebra the fusion derived)

    body = loop.body
    b_old, b_new = _based(old, body), _based(new, body)
    if _dag(b_old, {old: "v"}, loop) != _dag(b_new, {new: "v"}, loop):
        return False
    if _reaches_avoiding(term, {old, new}, {b_new}, body):
        return False
    f = term_factor(loop, b_new, term)
    if f is None:
        return False
    leaf_old, leaf_new = (Value(old.type, "old"), Value(new.type, "new"))
    want = build_ratio(_Floating(loop.location), f, leaf_old, leaf_new)
    return _dag(ratio, {b_old: "old", b_new: "new"}, loop) == _dag(want, {leaf_old: "old", leaf_new: "new"}, None)


class _Floating:
    """Builds ops without inserting them (for :func:`_rebases`' comparison)."""

    def __init__(self, location):
        self.location = location

    def add(self, op: Operation) -> Value:
        return op.results[0]

    def arith(self, name: str, *operands: Value) -> Value:
        return ARITH[name](*operands, location=self.location).results[0]


def _dag(v: Value, leaves: dict, loop: AffineForOp | None):
    """A structural key of how ``v`` is computed from ``leaves`` (values computed outside ``loop``, and
    constants, by identity and value)."""
    if v in leaves:
        return "leaf", leaves[v]
    op = v.owner
    if isinstance(op, ConstantOp):
        return "const", str(v.type), repr(op.value)
    if not isinstance(op, Operation) or (loop is not None and not loop.is_ancestor_of(op)):
        return "outside", id(v)
    return op.name, repr(sorted((k, str(a)) for k, a in op.attributes.items())), \
        tuple(_dag(x, leaves, loop) for x in op.operands)


def _reaches_avoiding(v: Value, targets: set, stops: set, body: Block) -> bool:
    """Whether ``v`` is computed from one of ``targets`` in ``body`` other than through ``stops`` (none: any
    way)."""
    work, seen = [v], set()
    while work:
        x = work.pop()
        if x in stops:
            continue
        if x in targets:
            return True
        op = x.owner
        if isinstance(op, Operation) and op.parent is body and op not in seen:
            seen.add(op)
            work += list(op.operands)
    return False


def _slice(ratio: Value, old: Value, new: Value, loop: AffineForOp) -> tuple[Operation, ...] | None:
    """The pure ops computing ``ratio`` from ``old``, ``new`` and values from outside ``loop`` (in body order),
    or None when it needs anything else from the loop."""
    body = loop.body
    need: set[Operation] = set()
    work = [ratio]
    while work:
        v = work.pop()
        if v is old or v is new:
            continue
        op = v.owner
        if not isinstance(op, Operation):
            if v.owner is body:  # another block argument of the loop
                return None
            continue
        if not loop.is_ancestor_of(op):
            continue
        if op.parent is not body or not op.is_pure or op.regions:
            return None
        if op not in need:
            need.add(op)
            work += list(op.operands)
    return tuple(op for op in body.ops if op in need)


def rescale_partial(r: Rescale, s: Value, old: Value, new: Value, block: Block, anchor: Operation,
                    location) -> Value:
    """``s`` (a sum taken against ``old``) taken against ``new``: the ratio's ops cloned before ``anchor`` with
    ``old``/``new`` for the loop's values, then ``s == 0 ? s : s * ratio`` (a zero sum stays: the ratio may
    overflow)."""
    mapping = {r.old: old, r.new: new}
    for op in r.ops:
        block.insert_before(anchor, op.clone(mapping))
    ratio = mapping.get(r.ratio, r.ratio)
    zero = ConstantOp.of(0.0, s.type, location=location)
    is_zero = CmpFOp("oeq", s, zero.results[0], location=location)
    scaled = ARITH["mulf"](s, ratio, location=location)
    sel = SelectOp(is_zero.results[0], s, scaled.results[0], location=location)
    for op in (zero, is_zero, scaled, sel):
        block.insert_before(anchor, op)
    return sel.results[0]
