"""The row loops of ``gpu-map-reductions``: what each reduces, and whether its iterations split among threads.

:func:`check_row_loop` reads one row loop (an ``affine.for`` directly in the row body of a nest
that :mod:`.gpu_reduce_plan` plans) and returns its :class:`RowReduction` list, empty for a
parallel loop, or raises :class:`TransformError` with the reason. Nothing here changes the IR.

A row loop may hold inner loops of any depth (each thread runs them whole) and stores to any
memory; what is split among the threads is the row loop's own iterations, so besides its
reductions it must carry no dependence (exact, :func:`analysis.dependences`). Its reductions:

- ``iter_args`` each reduced by one combining op kind (:data:`COMBINING_KINDS`; ``acc - x``
  (``subf``/``subi``, the accumulator on the left) counts as a sum, its partials added; also
  ``truncf(op(extf acc, x))`` for f16/bf16 accumulators), each intermediate value used once, in
  the row loop's own body (a chain that flows through an inner loop is refused);
- memory reductions ``m[f] = m[f] op x`` (a load and a store directly in the body, ``f``
  invariant in the loop, the element touched by nothing else in it, exact): on a *scratch
  buffer* (thread-private, see :mod:`.gpu_reduce_plan`; any other store to one is refused), or
  on other memory (read before the loop when an access to the element directly in the row body
  precedes it or the loop always runs; otherwise *guarded*: read, combined and written after the
  loop's block reduction by thread 0, only where the loop runs, so an element that a loop of no
  iterations never touches is not touched).
"""

from __future__ import annotations

from dataclasses import dataclass

import analysis
from affine_ir import Operation, Value
from affine_ir.core import Block
from affine_ir.dialects import arith
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from affine_ir.interfaces import AffineAccessInterface, LoopLikeOpInterface, MemRefAccessInterface
from affine_ir.types import FloatType, IntegerType, Type

from ..errors import TransformError
from ..loop_utils import access_subscripts, at_location, loop_name, value_name
from ..memory.scalrep import same_element
from .gpu_reduce_rescaled import Rescale, rescaled_reduction

__all__ = ["COMBINING_KINDS", "PASS", "RowReduction", "check_row_loop", "constant_subscripts", "in_block",
           "scalar_access"]

PASS = "gpu-map-reductions"

#: Combining ops recognised (``arith`` name without the dialect): float, then integer kinds.
COMBINING_KINDS = ("addf", "mulf", "maximumf", "minimumf", "addi", "muli", "maxsi", "minsi", "maxui", "minui",
                   "andi", "ori", "xori")
#: The combining op classes and their kinds.
_COMBINING_OPS = {arith.OPS[k]: k for k in COMBINING_KINDS}
#: Subtractions ``acc - x`` and the sum kind that combines their partials.
_SUBTRACTING_OPS = {arith.OPS["subf"]: "addf", arith.OPS["subi"]: "addi"}


@dataclass
class RowReduction:
    """One value reduced over a row loop: the combining ``kind`` (``"addf"``...) on values of
    ``type``; either ``iter_arg`` number ``index`` of ``loop``, or (``index`` None) the memory
    reduction ``load``/``store`` of an element invariant in it; ``wide``: for ``truncf(op(extf
    acc, x))``, the type ``op`` computes in (None: ``op`` works on ``type`` itself)."""

    loop: AffineForOp
    kind: str
    type: Type
    index: int | None = None
    load: AffineLoadOp | None = None
    store: AffineStoreOp | None = None
    wide: Type | None = None
    guarded: bool = False  # a memory reduction whose loop may not run: the element is read and written
    #                        after the loop, only where it runs
    runs: tuple | None = None  # for a guarded one: (IntegerSet, operands) of "thread 0 and the loop runs"
    rescale: Rescale | None = None  # a sum rebased as another reduction changes (:mod:`.gpu_reduce_rescaled`)

    @property
    def name(self) -> str:
        if self.index is None:
            return f"{value_name(self.store.memref)}[...]"
        return value_name(self.loop.iter_args[self.index])

# -- accesses ----------------------------------------------------------------------------------------------------
def scalar_access(op: Operation) -> bool:
    """An affine access of one element (``affine.load``/``affine.store``, not a vector access)."""
    return isinstance(op, AffineAccessInterface) and op.vector_type is None


def in_block(op: Operation, block: Block) -> Operation:
    """The op of ``block`` that is or holds ``op`` (``op`` nested in ``block``)."""
    while op.parent is not block:
        op = op.parent_op
    return op


# -- reductions --------------------------------------------------------------------------------------------------
def _kind(op: Operation, acc: Value) -> str | None:
    """The combining kind ``op`` applies to the accumulator ``acc`` (one of its operands): its own
    kind, or for ``subf``/``subi`` with ``acc`` on the left the sum kind (``acc - x`` is ``acc + (-x)``:
    each thread's partial starts from ``-0.0``/0 and subtracts, partials and the initial value are
    then added), or None."""
    if len(op.operands) != 2 or sum(o is acc for o in op.operands) != 1:
        return None
    k = _COMBINING_OPS.get(type(op))
    if k is not None:
        return k
    sub = _SUBTRACTING_OPS.get(type(op))
    return sub if sub is not None and op.operands[0] is acc else None


def _chain(start: Value, end: Value, block: Block) -> str | None:
    """The kind of the ops of one combining kind taking ``start`` to ``end`` in ``block`` (each
    value used once, by the next op), or None."""
    kind = None
    v = start
    while v is not end:
        if len(v.uses) != 1:
            return None
        op = v.uses[0].op
        k = _kind(op, v)
        if op.parent is not block or k is None or kind not in (None, k):
            return None
        kind = k
        v = op.results[0]
    return kind


def _only_use(v: Value, cls: type[Operation], block: Block) -> Operation | None:
    if len(v.uses) == 1 and isinstance(v.uses[0].op, cls) and v.uses[0].op.parent is block:
        return v.uses[0].op
    return None


def _reduction(start: Value, end: Value, block: Block) -> tuple[str, Type | None] | None:
    """(kind, wide type) of the reduction chain from ``start`` to ``end``: one combining kind, or
    ``truncf(op(extf start, ...))`` for a narrow float accumulator; None if neither."""
    kind = _chain(start, end, block)
    if kind is not None:
        return kind, None
    ext = _only_use(start, arith.OPS["extf"], block)
    if ext is None or end.owner is None or not isinstance(end.owner, arith.OPS["truncf"]) or \
            end.owner.parent is not block:
        return None
    kind = _chain(ext.results[0], end.owner.operands[0], block)
    if kind is None or len(end.owner.operands[0].uses) != 1:
        return None
    return kind, ext.results[0].type


def _check_type(loop: AffineForOp, what: str, t: Type, kind: str) -> None:
    float_kind = kind in ("addf", "mulf", "maximumf", "minimumf")
    if not isinstance(t, (FloatType, IntegerType)) or (isinstance(t, IntegerType) and t.width < 8) or \
            float_kind != isinstance(t, FloatType):
        raise TransformError(PASS, f"cannot reduce {what} over {loop_name(loop)}: a {kind} of type {t} has no "
                                   f"shared-memory reduction here (floats and integers of 8 bits or more)",
                             loops=[loop])


def _iter_arg_reductions(loop: AffineForOp) -> list[RowReduction]:
    out, pending, relaxed = [], [], {}
    term = loop.body.terminator
    for k, arg in enumerate(loop.iter_args):
        end = term.operands[k]
        found = _reduction(arg, end, loop.body) if len(end.uses) == 1 else None
        inner = next((in_block(u.op, loop.body) for u in arg.uses if u.op.regions or u.op.parent is not loop.body),
                     None)
        if found is None and inner is not None:
            what = f"the loop {loop_name(inner)}" if isinstance(inner, LoopLikeOpInterface) else f"'{inner.name}'"
            raise TransformError(PASS, f"iter_arg {value_name(arg)} of {loop_name(loop)}{at_location(loop)} flows "
                                       f"into {what}{at_location(inner)}: a reduction carried through an inner loop "
                                       f"or region is not mapped (each thread runs its inner loops whole; only the "
                                       f"row loop's own chain is combined across threads)", loops=[loop])
        if found is None:
            kind = _kind(end.owner, arg) if isinstance(end.owner, Operation) and end.owner.parent is loop.body \
                else None
            if kind is not None:
                relaxed[k] = RowReduction(loop, kind, arg.type, index=k)  # valid if rescaled sums use its values
            pending.append(k)
            continue
        _check_type(loop, value_name(arg), arg.type, found[0])
        out.append(RowReduction(loop, found[0], arg.type, index=k, wide=found[1]))
    chains = {r.index: term.operands[r.index] for r in out + list(relaxed.values())}
    rescaled = {}
    for k in [k for k in pending if k not in relaxed]:
        rs = rescaled_reduction(loop, k, chains)
        if rs is None:
            raise _not_a_reduction(loop, k)
        _check_type(loop, value_name(loop.iter_args[k]), loop.iter_args[k].type, "addf")
        rescaled[k] = RowReduction(loop, "addf", loop.iter_args[k].type, index=k, rescale=rs)
    for k, r in relaxed.items():
        if not _only_rescales_use(loop, k, [x.rescale for x in rescaled.values() if x.rescale.base == k]):
            raise _not_a_reduction(loop, k)
        _check_type(loop, value_name(loop.iter_args[k]), r.type, r.kind)
        out.append(r)
    return sorted(out, key=lambda r: r.index) + list(rescaled.values())


def _not_a_reduction(loop: AffineForOp, k: int) -> TransformError:
    return TransformError(PASS, f"iter_arg {value_name(loop.iter_args[k])} of {loop_name(loop)}{at_location(loop)} "
                                f"is not a reduction by a recognized combining op (one of {', '.join(COMBINING_KINDS)}"
                                f", each intermediate value used once, or a sum rescaled as one changes)",
                          loops=[loop])


def _only_rescales_use(loop: AffineForOp, k: int, rescales: list[Rescale]) -> bool:
    """Whether the running values of iter_arg ``k`` (before and after its combining op), besides that op and
    the yield, reach only the ratios and the terms of ``rescales`` (sums taken against it: every thread's
    running value is then right for its own partial), through pure ops of the body."""
    if not rescales:
        return False
    body, term = loop.body, loop.body.terminator
    arg, end = loop.iter_args[k], term.operands[k]
    sinks = {op for rs in rescales for op in rs.sum_ops}
    chain_op = end.owner
    work, seen = [arg, end], set()
    while work:
        v = work.pop()
        for u in v.uses:
            op = u.op
            if (op is chain_op and v is arg) or (op is term and v is end and u.index == k) or op in sinks:
                continue
            if op.parent is not body or not op.is_pure or op.regions or len(op.results) != 1:
                return False
            if op not in seen:
                seen.add(op)
                work.append(op.results[0])
    return True


def constant_subscripts(op: Operation) -> tuple[int, ...] | None:
    """The constant subscripts of an affine access, or None."""
    leaves: list[Value] = []
    subs = access_subscripts(op, leaves)
    return tuple(e.constant_value for e in subs) if all(e.is_constant for e in subs) else None


def _invariant(op: Operation, loop: AffineForOp) -> bool:
    """Every value the subscripts of ``op`` use (through affine.apply) comes from outside ``loop``."""
    leaves: list[Value] = []
    access_subscripts(op, leaves)
    return all(not (isinstance(v.owner, Operation) and loop.is_ancestor_of(v.owner)) and v.owner is not loop.body
               for v in leaves)


def _memory_reductions(loop: AffineForOp, scratch: set[Value]) -> list[RowReduction]:
    """The memory reductions ``m[f] = m[f] op x`` of ``loop`` (load and store directly in its body,
    ``f`` invariant in it); TransformError for another store to a scratch buffer (each thread
    has its own copy: strided stores would diverge) and for a reduction of other memory that
    the loop may skip while nothing before it in the row touches the element (the load moved
    before the loop could then fall out of bounds)."""
    out = []
    ops = loop.body.ops
    for k, st in enumerate(ops):
        if not isinstance(st, AffineStoreOp):
            continue
        private = st.memref in scratch
        if not private and not _invariant(st, loop):
            continue
        same = [o for o in loop.walk() if scalar_access(o) and o is not st and
                same_element(o, st)]
        load = same[0] if len(same) == 1 and isinstance(same[0], AffineLoadOp) and \
            any(o is same[0] for o in ops[:k]) else None
        found = _reduction(load.result, st.value, loop.body) if load is not None and \
            len(st.value.uses) == 1 else None
        if found is None:
            if private:
                raise TransformError(PASS, f"row loop {loop_name(loop)}{at_location(loop)} stores to the scratch "
                                           f"buffer {value_name(st.memref)}{at_location(st)} other than as a "
                                           f"reduction s[c] = s[c] op x", loops=[loop])
            continue
        row = loop.parent.ops
        guarded = not private and not any(scalar_access(o) and same_element(o, st)
                                          for o in row[: row.index(loop)]) and not analysis.always_runs(loop)
        _check_type(loop, value_name(st.memref), st.value.type, found[0])
        out.append(RowReduction(loop, found[0], st.value.type, load=load, store=st, wide=found[1], guarded=guarded))
    return out


def check_row_loop(loop: AffineForOp, body_op: Operation, scratch: set[Value]) -> list[RowReduction]:
    """The reductions of the row loop ``loop`` (empty for a parallel loop), or TransformError."""
    name = f"row loop {loop_name(loop)}{at_location(loop)}"
    for v in loop.operands[: len(loop.operands) - len(loop.inits)]:
        owner = v.owner
        if isinstance(owner, Operation) and body_op.is_ancestor_of(owner):
            raise TransformError(PASS, f"the bounds of {name} use {value_name(v)}, computed in the row (a block "
                                       f"needs them before its threads split the loop)", loops=[loop])
    inner = next((x for x in loop.walk() if isinstance(x, LoopLikeOpInterface) and not isinstance(x, AffineForOp)),
                 None)
    if inner is not None:
        raise TransformError(PASS, f"{name} holds '{inner.name}'{at_location(inner)}: inner loops must be affine.for "
                                   f"(each thread runs them in order)", loops=[loop])
    reds = _iter_arg_reductions(loop) + _memory_reductions(loop, scratch)
    pairs = [{r.load, r.store} for r in reds if r.index is None]
    st = next((x for x in loop.walk() if isinstance(x, MemRefAccessInterface) and x.is_write and
               x.memref in scratch and not any(x in p for p in pairs)), None)
    if st is not None:  # (in an inner loop: _memory_reductions sees the stores directly in the body)
        raise TransformError(PASS, f"{name} stores to the scratch buffer {value_name(st.memref)}{at_location(st)} "
                                   f"other than as a reduction s[c] = s[c] op x", loops=[loop])
    try:
        deps = analysis.dependences(loop)
    except Exception as e:  # noqa: BLE001  (an analysis limit: refuse)
        raise TransformError(PASS, f"{name}: no dependence analysis ({e})", loops=[loop]) from None
    for d in deps:
        if d.kind == "RAR":
            continue
        ends = {d.src, d.dst}
        inside = any(ends <= p for p in pairs)
        if not inside and any(ends & p for p in pairs):
            raise TransformError(PASS, f"{name} reduces into an element that another access of the loop may touch: "
                                       f"{d}", loops=[loop], dependence=d)
        if d.carried_at(1) and not inside:
            raise TransformError(PASS, f"{name} carries {d}, which is not a reduction: its iterations cannot be "
                                       f"split among threads", loops=[loop], dependence=d)
    return reds
