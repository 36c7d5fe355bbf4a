"""Affine index arithmetic and control flow: ``affine.apply/min/max``, ``affine.for`` (iter_args
as phi nodes), ``affine.if`` (results as phi nodes), ``affine.parallel`` (sequential loops
with its reductions).

Affine expressions are evaluated on i64 exactly as ``AffineExpr.evaluate``: ``floordiv`` and
``mod`` round toward negative infinity (``mod`` is never negative), ``ceildiv`` toward
positive infinity, for negative operands too. Index arithmetic carries ``nsw`` (valid
programs never overflow i64).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from affine_ir.affine_expr import AffineExpr
from affine_ir.affine_map import AffineMap
from affine_ir.core import OP_REGISTRY
from affine_ir.dialects.affine import AffineMinOp
from affine_ir.dialects.affine_parallel import REDUCTION_ARITH_OPS

from ..loop_bounds import constant_upper_limit, may_step_past_int64
from .arith import binary_op, reduction_identity
from .emitter import FunctionEmitter, handler
from .types import I1, I64


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def floordiv(b: ir.IRBuilder, x: ir.Value, c: int) -> ir.Value:
    """``x floordiv c`` for a constant ``c > 0``."""
    q = b.sdiv(x, _c(c))
    r = b.srem(x, _c(c))
    return b.sub(q, b.zext(b.icmp_signed("<", r, _c(0)), I64))


def mod(b: ir.IRBuilder, x: ir.Value, c: int) -> ir.Value:
    """``x mod c`` in ``[0, c)`` for a constant ``c > 0``."""
    r = b.srem(x, _c(c))
    return b.add(r, b.select(b.icmp_signed("<", r, _c(0)), _c(c), _c(0)))


def ceildiv(b: ir.IRBuilder, x: ir.Value, c: int) -> ir.Value:
    """``x ceildiv c`` for a constant ``c > 0``: ``-((-x) floordiv c)``."""
    return b.sub(_c(0), floordiv(b, b.sub(_c(0), x), c))


def affine_expr(b: ir.IRBuilder, e: AffineExpr, dims: Sequence[ir.Value], syms: Sequence[ir.Value]) -> ir.Value:
    """The i64 value of ``e`` with ``d<i>`` = ``dims[i]`` and ``s<j>`` = ``syms[j]``."""
    acc: ir.Value | None = None

    def add(term: ir.Value, coeff: int) -> None:
        nonlocal acc
        if coeff == 0:
            return
        if coeff == -1 and acc is not None:
            acc = b.sub(acc, term, flags=["nsw"])
            return
        t = term if coeff == 1 else b.mul(term, _c(coeff), flags=["nsw"])
        acc = t if acc is None else b.add(acc, t, flags=["nsw"])

    for i, v in enumerate(dims):
        add(v, e.coefficient_of_dim(i))
    for j, v in enumerate(syms):
        add(v, e.coefficient_of_symbol(j))
    for t in e.div_terms():
        inner = affine_expr(b, t.expr, dims, syms)
        fn = {"floordiv": floordiv, "ceildiv": ceildiv, "mod": mod}[t.kind]
        add(fn(b, inner, t.divisor), t.coeff)
    k = e.constant_term
    if acc is None:
        return _c(k)
    return b.add(acc, _c(k), flags=["nsw"]) if k else acc


def affine_map(em: FunctionEmitter, m: AffineMap, operands) -> list[ir.Value]:
    """The i64 results of ``m`` applied to the IR values ``operands`` (dims then symbols)."""
    vals = [em.index(v) for v in operands]
    dims, syms = vals[: m.num_dims], vals[m.num_dims :]
    return [affine_expr(em.b, e, dims, syms) for e in m.results]


def combine(b: ir.IRBuilder, values: list[ir.Value], upper: bool) -> ir.Value:
    """``min`` (upper bounds) or ``max`` (lower bounds) of i64 values."""
    out = values[0]
    for v in values[1:]:
        keep = b.icmp_signed("<" if upper else ">", out, v)
        out = b.select(keep, out, v)
    return out


@handler("affine.apply", "affine.min", "affine.max")
def _apply(em: FunctionEmitter, op) -> None:
    vals = affine_map(em, op.map, op.operands)
    em.set(op.results[0], combine(em.b, vals, isinstance(op, AffineMinOp)) if len(vals) > 1 else vals[0])


def _constant(v: ir.Value) -> int | None:
    return v.constant if isinstance(v, ir.Constant) and isinstance(v.constant, int) else None


def trip_count(b: ir.IRBuilder, lb: ir.Value, ub: ir.Value, step: int) -> ir.Value:
    """Iterations of ``for iv = lb; iv < ub; iv += step`` as an unsigned i64, computed without
    overflow: ``ub > lb ? (ub - lb - 1) udiv step + 1 : 0`` (``ub - lb`` fits in 64 unsigned bits)."""
    span = b.sub(b.sub(ub, lb), _c(1))
    trips = b.add(b.udiv(span, _c(step)), _c(1), flags=["nuw"])
    return b.select(b.icmp_signed(">", ub, lb), trips, _c(0))


def emit_loop(em: FunctionEmitter, lb: ir.Value, ub: ir.Value, step: int, inits: list[ir.Value],
              body: Callable[[ir.Value, list[ir.Value]], list[ir.Value]], name: str = "i",
              ub_limit: int | None = None) -> list[ir.Value]:
    """``for iv = lb; iv < ub; iv += step`` carrying ``inits`` through phis; ``body(iv, carried)``
    emits one iteration and returns the next carried values. Returns the final carried values.
    The loop runs exactly the iterations whose IV is in ``[lb, ub)``, also when the IV after the
    last one would pass INT64_MAX: such loops (:func:`codegen.loop_bounds.may_step_past_int64`) count their
    iterations (:func:`trip_count`) and derive the IV; the others keep the plain ``iv < ub`` form
    (``ub_limit``: a constant the upper bound never exceeds, if known)."""
    b = em.b
    counted = may_step_past_int64(_constant(lb), _constant(ub), step, ub_limit)
    trips = trip_count(b, lb, ub, step) if counted else None
    pre = b.block
    header = em.append_block(f"{name}.header")
    body_bb = em.append_block(f"{name}.body")
    exit_bb = em.append_block(f"{name}.exit")
    b.branch(header)
    b.position_at_end(header)
    counter = b.phi(I64, name=f"{name}.count" if counted else name)
    counter.add_incoming(_c(0) if counted else lb, pre)
    phis = []
    for k, x in enumerate(inits):
        p = b.phi(x.type, name=f"{name}.acc{k}")
        p.add_incoming(x, pre)
        phis.append(p)
    more = b.icmp_unsigned("<", counter, trips) if counted else b.icmp_signed("<", counter, ub)
    b.cbranch(more, body_bb, exit_bb)
    b.position_at_end(body_bb)
    iv = b.add(lb, b.mul(counter, _c(step)), name=name) if counted else counter  # wraps back into [lb, ub)
    nxt = body(iv, list(phis))
    latch = b.block
    counter_next = b.add(counter, _c(1) if counted else _c(step), flags=["nuw"] if counted else ["nsw"])
    b.branch(header)
    counter.add_incoming(counter_next, latch)
    for p, x in zip(phis, nxt):
        p.add_incoming(x, latch)
    b.position_at_end(exit_bb)
    return list(phis)


def _name(v) -> str:
    return (v.name_hint or "iv").replace("#", "_")


@handler("affine.for")
def _for(em: FunctionEmitter, op) -> None:
    lbs = affine_map(em, op.lower_bound_map, op.lower_bound_operands)
    ubs = affine_map(em, op.upper_bound_map, op.upper_bound_operands)
    lb, ub = combine(em.b, lbs, False), combine(em.b, ubs, True)

    def body(iv, carried):
        em.set(op.induction_var, iv)
        for a, x in zip(op.iter_args, carried):
            em.set(a, x)
        return em.block(op.body) or []

    out = emit_loop(em, lb, ub, op.step, [em.get(v) for v in op.inits], body, _name(op.induction_var),
                    constant_upper_limit(op.upper_bound_map))
    for r, x in zip(op.results, out):
        em.set(r, x)


def _condition(em: FunctionEmitter, op) -> ir.Value:
    s = op.condition
    m = AffineMap(s.num_dims, s.num_symbols, s.constraints)
    vals = affine_map(em, m, op.operands)
    cond: ir.Value = ir.Constant(I1, 1)
    for v, eq in zip(vals, s.eq_flags):
        cond = em.b.and_(cond, em.b.icmp_signed("==" if eq else ">=", v, _c(0)))
    return cond


@handler("affine.if")
def _if(em: FunctionEmitter, op) -> None:
    b = em.b
    cond = _condition(em, op)
    then_bb, else_bb, merge = em.append_block("if.then"), em.append_block("if.else"), em.append_block("if.end")
    b.cbranch(cond, then_bb, else_bb)
    incoming = []
    for bb, blk in ((then_bb, op.then_block), (else_bb, op.else_block)):
        b.position_at_end(bb)
        ys = em.block(blk) if blk is not None else []
        incoming.append((ys or [], b.block))
        b.branch(merge)
    b.position_at_end(merge)
    for k, r in enumerate(op.results):
        p = b.phi(em.reg(r))
        for ys, bb in incoming:
            p.add_incoming(ys[k], bb)
        em.set(r, p)


def parallel_bounds(em: FunctionEmitter, op) -> list[tuple[ir.Value, ir.Value]]:
    """Per IV of an ``affine.parallel``: its (lower, upper) bound values."""
    a = op.attributes
    lbs = affine_map(em, a["lower_bounds"], op.lower_operands)
    ubs = affine_map(em, a["upper_bounds"], op.upper_operands)
    out = []
    for lg, ug in zip(a["lower_groups"], a["upper_groups"]):
        lgroup, lbs = lbs[:lg], lbs[lg:]
        ugroup, ubs = ubs[:ug], ubs[ug:]
        out.append((combine(em.b, lgroup, False), combine(em.b, ugroup, True)))
    return out


def combine_reduction(em: FunctionEmitter, kind: str, acc: ir.Value, value: ir.Value, t) -> ir.Value:
    """``acc <kind> value`` with the arith op of the ``affine.parallel`` reduction ``kind``."""
    return binary_op(em, OP_REGISTRY[REDUCTION_ARITH_OPS[kind]], acc, value, t)


def emit_parallel(em: FunctionEmitter, op, outer: tuple[ir.Value, ir.Value] | None = None,
                  inits: list[ir.Value] | None = None) -> list[ir.Value]:
    """The loops of ``op`` run sequentially in lexicographic order, each reduction starting
    from ``inits`` (default: its identity) and combined with each iteration's yield in that
    order. ``outer`` overrides the range of the outermost IV (a thread's chunk)."""
    bounds = parallel_bounds(em, op)
    if outer is not None:
        bounds[0] = outer
    kinds = op.reductions
    types = [r.type for r in op.results]
    if inits is None:
        inits = [reduction_identity(k, t) for k, t in zip(kinds, types)]

    def level(depth: int, carried: list[ir.Value]) -> list[ir.Value]:
        lb, ub = bounds[depth]

        def body(iv, accs):
            em.set(op.ivs[depth], iv)
            if depth + 1 < len(bounds):
                return level(depth + 1, accs)
            ys = em.block(op.body) or []
            return [combine_reduction(em, k, a, y, t) for k, a, y, t in zip(kinds, accs, ys, types)]

        return emit_loop(em, lb, ub, op.steps[depth], carried, body, _name(op.ivs[depth]))

    if not bounds:  # a band of no loops runs its body once
        ys = em.block(op.body) or []
        return [combine_reduction(em, k, a, y, t) for k, a, y, t in zip(kinds, inits, ys, types)]
    return level(0, list(inits))


@handler("affine.parallel")
def _parallel(em: FunctionEmitter, op) -> None:
    for r, x in zip(op.results, emit_parallel(em, op)):
        em.set(r, x)
