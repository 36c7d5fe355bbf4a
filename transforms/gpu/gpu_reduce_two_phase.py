"""Two-phase reductions (``gpu-map-reductions``): per-block partial results, then a fixed-order combine.

A unit of :mod:`.gpu_reduce_units` (one row: statements and row loops) whose reductions are all
carried by one row loop ``L`` (``for j = lb to ub step s``, ``T`` iterations) runs in one block
while ``T`` is a constant of at most :data:`ELEMENTS_PER_THREAD` x ``B`` (every thread then has at
most 8 elements: a second launch would cost more than it saves). Otherwise, when legal, it
becomes two launches:

1. **phase 1**, a grid of ``P = min(ceildiv(T, B), G)`` blocks of ``B`` threads (``P`` computed on
   the host for a symbolic ``T``; no block when ``T <= 0``): thread ``tid`` of block ``b`` runs
   ``for j = lb + (b * B + tid) * s to ub step G * B * s`` (coalesced, a grid-stride loop: every
   iteration once), from the combining op's identity; the block's tree (:mod:`.gpu_reduce`) leaves
   its partial result, which thread 0 writes to ``partial[b]``, a buffer of ``G`` elements the
   function allocates (one per reduction). ``G`` is ``min(ceildiv(T, 8 B), 4 x SMs)`` for a
   constant ``T`` (about 8 elements per thread), ``4 x SMs`` (528 on the H200: four resident
   blocks of 256 threads per multiprocessor) for a symbolic one; ``P = G`` when ``T`` is constant;
   when ``P < G`` every iteration falls in the first stride (``T <= P * B``), so the stride
   ``G * B * s`` is still right;
2. **phase 2**, ``L`` replaced in the unit by ``for g = 0 to P`` combining ``partial[g]`` into the
   loop's initial value (``iter_args``) or into the element ``m[f]`` (a memory reduction, read and
   written only when ``P > 0``), and the unit mapped to one block (:func:`.map_one_block`): the
   partials are combined by the threads and a tree, in a fixed order, then the unit's other
   statements use the result.

Same bits every run: the partition of the iterations depends only on ``T``, ``B`` and ``G``, and
every combine is in a fixed order (float sums are reassociated, as in every block reduction).
Legal when ``L`` uses no value the unit computes before it, no op before ``L`` in the unit
depends on it or it on them (phase 1 runs first), and the unit has no scratch or row buffers.

``atomic=True`` (``gpu-map-reductions{atomic=true}``), for a unit that is only ``L`` and only
memory reductions ``m[f] = m[f] op x``: no phase 2; thread 0 of each block combines its partial
into ``m[f]`` with ``memref.atomic_rmw`` (one launch). The blocks' order then varies: float sums
differ from run to run by rounding (exact on integer-valued data; max/min and integer kinds are
exact).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import AffineExpr, AffineMap, Operation, Value
from affine_ir.core import OpResult
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineLoadOp, AffineStoreOp, AffineYieldOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.func import FuncOp
from affine_ir.dialects.memref import AllocOp, AtomicRMWOp, DeallocOp
from affine_ir.types import memref
from analysis import reduction_identity
from analysis.targets import DEFAULT_GPU, GPUTarget

from ..errors import TransformError
from ..loop_utils import access_subscripts, loop_name, value_name
from .gpu_map_nest import HostPlan, band_dims
from .gpu_reduce import combine_reduced, map_rows
from .gpu_reduce_plan import DEFAULT_BLOCK_SIZE, PASS, RowPlan, block_size_for, plan_row_reductions
from .gpu_reduce_units import MappedUnit, map_one_block, plan_unit

__all__ = ["ELEMENTS_PER_THREAD", "PARTIALS_PER_SM", "TwoPhase", "choose_two_phase", "map_unit"]

#: One block while every thread reduces at most this many elements (a constant trip count).
ELEMENTS_PER_THREAD = 8
#: Partial results (phase 1's most blocks) per multiprocessor of the target.
PARTIALS_PER_SM = 4
#: ``arith`` combining kinds -> ``memref.atomic_rmw`` kinds.
ATOMIC_KINDS = {"addf": "addf", "addi": "addi", "mulf": "mulf", "muli": "muli", "maximumf": "maximumf",
                "minimumf": "minimumf", "maxsi": "maxs", "minsi": "mins", "maxui": "maxu", "minui": "minu",
                "andi": "andi", "ori": "ori", "xori": "xori"}


@dataclass(frozen=True)
class TwoPhase:
    """A two-phase reduction of ``loop``: ``block_size`` threads per block, ``partials`` = ``G``
    (the stride in blocks and the partial buffer's length), ``atomic``: phase 2 by atomics."""

    loop: AffineForOp
    block_size: int
    partials: int
    atomic: bool = False


def _two_phase_blocker(plan: RowPlan, atomic: bool) -> tuple[AffineForOp | None, str]:
    """The loop carrying all of ``plan``'s reductions when a two-phase reduction is legal, else
    (None, why not)."""
    loops = {r.loop for r in plan.reductions}
    if len(loops) != 1:
        return None, f"{len(loops)} loops reduce (a two-phase reduction splits one)"
    (loop,) = loops
    if plan.scratch or plan.row_buffers:
        return None, "the unit has scratch or row buffers"
    if any(r.rescale is not None for r in plan.reductions):
        return None, "a rescaled sum (online softmax) is combined by one block"
    if any(r.wide is not None for r in plan.reductions) and atomic:
        return None, "a widened (extf/truncf) reduction has no atomic"
    body = plan.body.ops
    before = set(body[: body.index(loop)])
    if any((a, loop) in plan.conflicts or (loop, a) in plan.conflicts for a in before):
        return None, f"{loop_name(loop)} depends on a statement before it in the unit"
    for x in loop.walk():
        values = x.operands[: len(x.operands) - len(loop.inits)] if x is loop else x.operands
        for v in values:
            owner = v.owner
            if isinstance(owner, Operation) and not loop.is_ancestor_of(owner) and owner is not loop and \
                    any(y.is_ancestor_of(owner) or y is owner for y in before):
                return None, f"{loop_name(loop)} uses {value_name(v)}, computed before it in the unit"
    if atomic:
        if any(r.index is not None for r in plan.reductions) or len([x for x in body if x is not
                                                                     body[-1]]) != 1:
            return None, "atomic=true combines memory reductions m[f] = m[f] op x that are alone in their unit"
        if any(r.kind not in ATOMIC_KINDS for r in plan.reductions):
            return None, "a combining kind without an atomic"
    return loop, ""


def choose_two_phase(plan: RowPlan, requested: int, gpu: GPUTarget = DEFAULT_GPU,
                     atomic: bool = False) -> TwoPhase | None:
    """The two-phase reduction of the planned unit (module docstring), or None: one block (a
    constant trip count of at most :data:`ELEMENTS_PER_THREAD` per thread, or not legal). With
    ``atomic``, a unit the atomics cannot serve gets the deterministic second phase."""
    loop, _why = _two_phase_blocker(plan, atomic)
    if loop is None and atomic:  # (no atomics for it: the deterministic second phase)
        atomic = False
        loop, _why = _two_phase_blocker(plan, atomic)
    if loop is None:
        return None
    b = block_size_for(requested, gpu=gpu)
    (d,) = band_dims(loop)
    t = d.trip_count
    most = PARTIALS_PER_SM * gpu.sm_count
    if t is not None:
        if t <= ELEMENTS_PER_THREAD * b:
            return None
        most = min(most, -(-t // (ELEMENTS_PER_THREAD * b)))
    return TwoPhase(loop, b, most, atomic)


def _count_map(loop: AffineForOp, b: int, g: int) -> tuple[AffineMap, list[Value]]:
    """``min(ceildiv(ub - lb, s * B) for every bound pair, G)`` over the loop's bound operands (dims)."""
    (d,) = band_dims(loop)
    dims = [AffineExpr.dim(k) for k in range(len(d.operands))]
    exprs = [(u - lo).replace([], dims).ceildiv(d.step * b) for lo in d.lbs for u in d.ubs]
    return AffineMap(len(dims), 0, (*exprs, AffineExpr.constant(g))), list(d.operands)


def _function_body(op: Operation):
    while not isinstance(op.parent_op, FuncOp):
        op = op.parent_op
    return op.parent, op


def _to_iter_arg(loop: AffineForOp, load: AffineLoadOp, store: AffineStoreOp, init: Value) -> Value:
    """Carry the memory reduction ``load``/``store`` of ``loop`` in a new iter_arg from ``init``;
    returns the loop's new result (the load and store are erased)."""
    arg = loop.body.add_argument(load.result.type, load.result.name_hint or "acc")
    load.result.replace_all_uses_with(arg)
    loop.set_operands([*loop.operands, init])
    term = loop.body.terminator
    term.set_operands([*term.operands, store.value])
    result = OpResult(init.type, loop, len(loop.results), None)
    loop.results.append(result)
    load.erase()
    store.erase()
    return result


def _element(load: AffineLoadOp, at: Operation) -> list[Value]:
    """Index values of the element ``load`` reads, as affine.apply ops before ``at``."""
    leaves: list[Value] = []
    subs = access_subscripts(load, leaves)
    out = []
    for e in subs:
        op = AffineApplyOp(AffineMap(len(leaves), 0, (e,)), leaves, location=load.location)
        at.parent.insert_before(at, op)
        out.append(op.results[0])
    return out


def _phase_one(plan: RowPlan, tp: TwoPhase, count: tuple[AffineMap, list[Value]],
               buffers: list[Value]) -> tuple[AffineForOp, list[Value]]:
    """The first phase as a row nest before the unit: ``for b = 0 to P { L' ; partial[b] = ... }``
    (without the stores for ``atomic``), and the values of ``L'`` reduced."""
    loop, b, g = tp.loop, tp.block_size, tp.partials
    rows = AffineForOp(AffineMap.constant_map(0), [], count[0], count[1], iv_name="part", location=loop.location)
    plan.op.parent.insert_before(plan.op, rows)
    term = rows.body.terminator
    copy = loop.clone({})
    pairs = dict(zip(loop.walk(), copy.walk()))
    rows.body.insert_before(term, copy)
    results = []
    first_init = len(copy.operands) - len(copy.inits)
    for r in plan.reductions:
        ident = ConstantOp.of(reduction_identity(r.kind, r.type), r.type, location=loop.location)
        rows.body.insert_before(copy, ident)
        if r.index is not None:
            copy.set_operand(first_init + r.index, ident.results[0])
            results.append(copy.results[r.index])
        else:
            results.append(_to_iter_arg(copy, pairs[r.load], pairs[r.store], ident.results[0]))
    lbm = copy.lower_bound_map
    nd = lbm.num_dims
    new = AffineMap(nd + 1, lbm.num_symbols, tuple(e + AffineExpr.dim(nd) * (b * loop.step) for e in lbm.results))
    lbo = copy.lower_bound_operands
    copy.set_bounds(new, [*lbo[:nd], rows.induction_var, *lbo[nd:]], copy.upper_bound_map,
                    copy.upper_bound_operands)
    copy.attributes["step"] = g * b * loop.step
    if not tp.atomic:
        for v, buf in zip(results, buffers):
            rows.body.insert_before(term, AffineStoreOp(v, buf, AffineMap(1, 0, (AffineExpr.dim(0),)),
                                                        [rows.induction_var], location=loop.location))
    return rows, results


def _add_atomics(plan: RowPlan, rows: AffineForOp, results: list[Value]) -> None:
    """``memref.atomic_rmw kind %partial, %m[f]`` per memory reduction at the end of the first phase's
    row (added after planning it: the rows combine into one element by design; the mapping gives it
    to thread 0, after the block's tree)."""
    term = rows.body.terminator
    for r, v in zip(plan.reductions, results):
        idx = _element(r.load, term)
        rows.body.insert_before(term, AtomicRMWOp(ATOMIC_KINDS[r.kind], v, r.load.memref, idx,
                                                  location=r.store.location))


def _phase_two(plan: RowPlan, tp: TwoPhase, count: tuple[AffineMap, list[Value]], buffers: list[Value]) -> None:
    """Replace the loop in the unit by ``for g = 0 to P`` combining the partials (module docstring)."""
    loop = tp.loop
    its = [(r, buf) for r, buf in zip(plan.reductions, buffers) if r.index is not None]
    inits = [loop.inits[r.index] for r, _ in its]
    new = AffineForOp(AffineMap.constant_map(0), [], count[0], count[1], 1, inits, iv_name="g",
                      location=loop.location)
    loop.parent.insert_before(loop, new)
    body = new.body
    g = body.args[0]
    anchor = body.terminator if not its else None
    if anchor is None:
        anchor = AffineYieldOp([], location=loop.location)
        body.append(anchor)
    ident = AffineMap(1, 0, (AffineExpr.dim(0),))
    yields = []
    for k, (r, buf) in enumerate(its):
        p = AffineLoadOp(buf, ident, [g], location=loop.location)
        body.insert_before(anchor, p)
        yields.append(combine_reduced(r, body.args[1 + k], p.results[0], body, anchor, loop))
    for r, buf in zip(plan.reductions, buffers):
        if r.index is not None:
            continue
        v = r.load.clone({})
        body.insert_before(anchor, v)
        p = AffineLoadOp(buf, ident, [g], location=loop.location)
        body.insert_before(anchor, p)
        c = combine_reduced(r, v.results[0], p.results[0], body, anchor, loop)
        st = r.store.clone({})
        st.set_operand(0, c)
        body.insert_before(anchor, st)
    anchor.set_operands(yields)
    for k, (r, _) in enumerate(its):
        loop.results[r.index].replace_all_uses_with(new.results[k])
    loop.erase()


def map_two_phase(plan: RowPlan, tp: TwoPhase, host: HostPlan, requested: int,
                  gpu: GPUTarget = DEFAULT_GPU) -> MappedUnit:
    """Map the planned unit to a two-phase reduction (module docstring). TransformError (IR as it
    was, the unit still wrapped) when the first phase cannot be planned."""
    names = [f"{r.kind} of {r.name} over {value_name(r.loop.induction_var)}" for r in plan.reductions]
    count = _count_map(tp.loop, tp.block_size, tp.partials)
    top, outer = _function_body(plan.op)
    buffers: list[Value] = []
    made: list[Operation] = []
    if not tp.atomic:
        for r in plan.reductions:
            a = AllocOp(memref((tp.partials,), r.type), location=tp.loop.location, name_hint="partial")
            top.insert_before(outer, a)
            free = DeallocOp([a.results[0]], location=tp.loop.location)
            top.insert_before(top.terminator, free)
            made += [a, free]
            buffers.append(a.results[0])
    else:
        buffers = [None] * len(plan.reductions)
    rows, results = _phase_one(plan, tp, count, buffers)
    try:
        first = plan_row_reductions(rows, tp.block_size, host.is_host_value, gpu)
    except TransformError:
        rows.erase()
        for x in reversed(made):
            x.erase()
        raise
    first.lane_steps = {first.loops[0]: tp.loop.step}
    if first.block_size != tp.block_size:
        raise TransformError(PASS, f"internal: phase 1 of {loop_name(tp.loop)} got {first.block_size} threads")
    if tp.atomic:
        _add_atomics(plan, rows, results)
        plan.op.erase()
        launches = [map_rows(rows, tp.block_size, host, first, gpu).launch]
        grid = value_name(launches[0].grid_size[0]) if count[1] else tp.partials
        return MappedUnit(launches, tp.block_size, grid, True, tp.partials, True, names)
    _phase_two(plan, tp, count, buffers)
    second = plan_row_reductions(plan.op, requested, host.is_host_value, gpu)
    m1 = map_rows(rows, tp.block_size, host, first, gpu)
    m2 = map_one_block(second, host, gpu)
    return MappedUnit([m1.launch, *m2.launches], tp.block_size, m1.grid[0], True, tp.partials, False, names)


def map_unit(ops: list[Operation], span: list[Operation], host: HostPlan, block_size: int = DEFAULT_BLOCK_SIZE,
             gpu: GPUTarget = DEFAULT_GPU, atomic: bool = False) -> MappedUnit:
    """Map the unit ``ops`` (``span``: its top-level ops from the first to the last) to one block or a
    two-phase reduction (module docstring); TransformError (IR unchanged) when it is not a one-row
    reduction. Guarantees: every iteration of each row loop runs once; each reduction combines
    every element and its initial value exactly once, in an order fixed by the sizes (with
    ``atomic``: in the order the blocks finish)."""
    plan = plan_unit(ops, span, host, block_size, gpu)
    tp = choose_two_phase(plan, block_size, gpu, atomic)
    if tp is not None:
        try:
            return map_two_phase(plan, tp, host, block_size, gpu)
        except TransformError:
            pass
    return map_one_block(plan, host, gpu)
