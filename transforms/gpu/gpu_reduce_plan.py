"""Legality of mapping a nest of row reductions to one block per row (``gpu-map-reductions``).

:func:`plan_row_reductions` reads a top-level nest and returns a :class:`RowPlan` (what
:func:`transforms.gpu.gpu_reduce.map_row_reductions` rewrites) or raises :class:`TransformError`
naming the loop and the reason. Nothing here changes the IR.

The nest must be a band of *row* loops (1 to 3 perfectly nested ``affine.for`` without
``iter_args``, or ``affine.parallel`` without reductions, bounds on host values) whose
innermost body holds, besides uniform ops (computed by every thread of the row's block),
*row loops*: ``affine.for`` ops with no loop inside, bounds on values from outside the row
body, and either

- a *reduction*: every ``iter_arg`` reduced by one combining op kind (``addf``, ``mulf``,
  ``maximumf``, ``minimumf``, ``addi``, ``muli``, ``maxsi``, ``minsi``, ``maxui``, ``minui``,
  ``andi``, ``ori``, ``xori``; also ``truncf(op(extf acc, x))`` for f16/bf16 accumulators),
  and memory reductions ``m[f] = m[f] op x`` (a load and a store directly in the body, ``f``
  invariant in the loop, the element touched by nothing else in it, exact): on a *scratch
  buffer* (below), or on other memory when an access to the element directly in the row body
  precedes the loop or the loop always runs (the element is then read before the loop); no
  other store and no other carried dependence (exact); or
- a parallel loop (no carried dependence, exact), run strided by the threads.

The rows must be parallel (exact dependences, those on scratch buffers aside), the nest
must not use a value computed on the device outside it, nor ops of unknown effect; a
constant grid must fit CUDA's limits (x < 2**31, y and z < 65536: the innermost row is x).

A *scratch buffer* is a static ``memref.alloc`` at the function's top level used only by
this nest (and a later dealloc), through affine accesses with constant subscripts, whose
elements are each first written, in every row, by a store directly in the row body (what
fusion's private buffers are when scalar replacement could not remove them): no value flows
between rows through it, so each thread gets its own copy and the rows stay parallel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import analysis
from affine_ir import FuncOp, Operation, Value
from affine_ir.core import Block
from affine_ir.dialects import arith
from affine_ir.dialects.affine import (
    AffineForOp,
    AffineLoadOp,
    AffineParallelOp,
    AffineStoreOp,
    AffineYieldOp,
)
from affine_ir.dialects.memref import AllocOp
from affine_ir.interfaces import AffineAccessInterface, LoopLikeOpInterface, MemRefAccessInterface
from affine_ir.traits import ConstantLike, EffectKind, RecursiveMemoryEffects
from affine_ir.types import FloatType, IntegerType, MemRefType, Type
from analysis.targets import DEFAULT_GPU, GPUTarget

from ..errors import TransformError
from ..loop_utils import access_subscripts, at_location, loop_name, value_name
from ..memory.scalrep import same_element
from .gpu_map_nest import AXES, BandDim, allocates_result, band_dims, frees_memory, host_value_checker

__all__ = ["COMBINING_KINDS", "DEFAULT_BLOCK_SIZE", "RowPlan", "RowReduction", "block_size_for",
           "plan_row_reductions", "thread_per_row_reason"]

PASS = "gpu-map-reductions"
#: Threads per block unless told otherwise: the default target's (``analysis.targets``).
DEFAULT_BLOCK_SIZE = DEFAULT_GPU.default_threads_per_block
MAX_ROWS = 3

#: Combining ops recognised (``arith`` name without the dialect): float, then integer kinds.
COMBINING_KINDS = ("addf", "mulf", "maximumf", "minimumf", "addi", "muli", "maxsi", "minsi", "maxui", "minui",
                   "andi", "ori", "xori")
#: The combining op classes and their kinds.
_COMBINING_OPS = {arith.OPS[k]: k for k in COMBINING_KINDS}


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

    @property
    def name(self) -> str:
        if self.index is None:
            return f"{value_name(self.store.memref)}[...]"
        return value_name(self.loop.iter_args[self.index])


@dataclass
class RowPlan:
    """What :func:`transforms.gpu.gpu_reduce.map_row_reductions` does with a nest (nothing changed
    yet): the row loops ``rows`` (outermost first, one block each), the row ``body``, its row
    loops ``loops`` (in order), the ``reductions``, the top-level ``scratch`` allocations made
    thread-private, the threads per block and the constant grid size per row (None: symbolic)."""

    op: Operation
    rows: list[BandDim]
    body: Block
    loops: list[AffineForOp] = field(default_factory=list)
    reductions: list[RowReduction] = field(default_factory=list)
    scratch: list[Operation] = field(default_factory=list)
    block_size: int = DEFAULT_BLOCK_SIZE
    grid: list[int | None] = field(default_factory=list)

    @property
    def axes(self) -> list[BandDim]:
        """The rows by launch axis: x (innermost row) first."""
        return list(reversed(self.rows))


def _refuse(op: Operation, reason: str, dep=None) -> TransformError:
    rows = ", ".join(d.name for d in band_dims(op)) if isinstance(op, LoopLikeOpInterface) else op.name
    return TransformError(PASS, f"cannot map the rows ({rows}){at_location(op)} to blocks: {reason}", loops=[op],
                          dependence=dep)


def block_size_for(requested: int, loops=(), gpu: GPUTarget = DEFAULT_GPU) -> int:
    """Threads per block: the largest power of two <= ``min(requested, gpu.max_threads_per_block)``;
    when every row loop in ``loops`` has a constant trip count, at most the power of two covering
    the longest."""
    if not isinstance(requested, int) or isinstance(requested, bool) or requested < 1:
        raise TransformError(PASS, f"block size {requested!r}: a positive integer is needed")
    b = 1 << (min(requested, gpu.max_threads_per_block).bit_length() - 1)
    trips = [analysis.constant_trip_count(lp) for lp in loops]
    if trips and all(t is not None for t in trips):
        longest = max(max(trips), 1)
        b = min(b, 1 << (longest - 1).bit_length())
    return b


def _scalar_access(op: Operation) -> bool:
    """An affine access of one element (``affine.load``/``affine.store``, not a vector access)."""
    return isinstance(op, AffineAccessInterface) and op.vector_type is None


# -- the row band ------------------------------------------------------------------------------------------------
def _has_loop(op: Operation) -> bool:
    return any(isinstance(x, LoopLikeOpInterface) for x in op.walk() if x is not op)


def _row_band(op: Operation, is_host_value) -> tuple[list[Operation], list[BandDim]]:
    ops: list[Operation] = []
    dims: list[BandDim] = []
    cur = op
    while (isinstance(cur, AffineForOp) and not cur.iter_args) or (isinstance(cur, AffineParallelOp) and
                                                                   not cur.results):
        for d in band_dims(cur):
            bad = next((v for v in d.operands if not is_host_value(v)), None)
            if bad is not None:
                raise _refuse(op, f"the bounds of {d.name} use {value_name(bad)}, which is not a host value")
            dims.append(d)
        ops.append(cur)
        inner = [o for o in cur.body.ops if not isinstance(o, AffineYieldOp)]
        if len(inner) != 1 or not isinstance(inner[0], LoopLikeOpInterface) or not _has_loop(inner[0]):
            break
        cur = inner[0]
    if not ops:
        raise TransformError(PASS, f"cannot map '{op.name}'{at_location(op)} to blocks: it is not a band of row "
                                   f"loops (it carries values)", loops=[op])
    return ops, dims


# -- reductions --------------------------------------------------------------------------------------------------
def _kind(op: Operation) -> str | None:
    k = _COMBINING_OPS.get(type(op))
    return k if len(op.operands) == 2 else None


def _chain(start: Value, end: Value, block: Block) -> str | None:
    """The kind of the ops of one combining kind taking ``start`` to ``end`` in ``block`` (each
    value used once, by the next op), or None."""
    kind = None
    v = start
    while v is not end:
        if len(v.uses) != 1:
            return None
        op = v.uses[0].op
        k = _kind(op)
        if op.parent is not block or k is None or sum(o is v for o in op.operands) != 1 or kind not in (None, k):
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
    out = []
    term = loop.body.terminator
    for k, arg in enumerate(loop.iter_args):
        end = term.operands[k]
        found = _reduction(arg, end, loop.body) if len(end.uses) == 1 else None
        if found is None:
            raise TransformError(PASS, f"iter_arg {value_name(arg)} of {loop_name(loop)}{at_location(loop)} is not "
                                       f"a reduction by a recognized combining op (one of {', '.join(COMBINING_KINDS)}"
                                       f", each intermediate value used once)", loops=[loop])
        _check_type(loop, value_name(arg), arg.type, found[0])
        out.append(RowReduction(loop, found[0], arg.type, index=k, wide=found[1]))
    return out


def _subscripts(op: Operation) -> tuple[int, ...] | None:
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
        same = [o for o in loop.walk() if _scalar_access(o) and o is not st and
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
        if not private and not any(_scalar_access(o) and same_element(o, st)
                                   for o in row[: row.index(loop)]) and not analysis.always_runs(loop):
            raise TransformError(PASS, f"row loop {loop_name(loop)}{at_location(loop)} may run zero times and reduces "
                                       f"into {value_name(st.memref)}{at_location(st)}, which nothing before it in "
                                       f"the row accesses", loops=[loop])
        _check_type(loop, value_name(st.memref), st.value.type, found[0])
        out.append(RowReduction(loop, found[0], st.value.type, load=load, store=st, wide=found[1]))
    return out


def _check_row_loop(loop: AffineForOp, body_op: Operation, scratch: set[Value]) -> list[RowReduction]:
    """The reductions of the row loop ``loop`` (empty for a parallel loop), or TransformError."""
    name = f"row loop {loop_name(loop)}{at_location(loop)}"
    for v in loop.operands[: len(loop.operands) - len(loop.inits)]:
        owner = v.owner
        if isinstance(owner, Operation) and body_op.is_ancestor_of(owner):
            raise TransformError(PASS, f"the bounds of {name} use {value_name(v)}, computed in the row (a block "
                                       f"needs them before its threads split the loop)", loops=[loop])
    inner = next((x for x in loop.walk() if x is not loop and isinstance(x, LoopLikeOpInterface)), None)
    if inner is not None:
        raise TransformError(PASS, f"{name} holds the loop {loop_name(inner)}{at_location(inner)}: nested loops deeper "
                                   f"than one level under the rows are not mapped", loops=[loop])
    reds = _iter_arg_reductions(loop) + _memory_reductions(loop, scratch)
    pairs = [{r.load, r.store} for r in reds if r.index is None]
    if reds:
        st = next((x for x in loop.walk() if isinstance(x, MemRefAccessInterface) and x.is_write and
                   not any(x in p for p in pairs)), None)
        if st is not None:
            raise TransformError(PASS, f"{name} reduces and stores to {value_name(st.memref)}{at_location(st)}: "
                                       f"stores in a reduction loop are not mapped", loops=[loop])
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


# -- scratch buffers ---------------------------------------------------------------------------------------------
def _scratch_buffers(op: Operation, body: Block) -> list[Operation]:
    """The top-level allocations that each thread may keep its own copy of (module docstring)."""
    top = op.parent
    where = {o: k for k, o in enumerate(top.ops)}
    order = {o: k for k, o in enumerate(op.walk())}
    out = []
    for a in top.ops:
        if not allocates_result(a) or a.operands or not isinstance(a.results[0].type, MemRefType):
            continue
        mem = a.results[0]
        accesses = []
        ok = True
        for use in mem.uses:
            u = use.op
            if frees_memory(u) and u.parent is top and where[u] > where[op]:
                continue
            if u not in order or not _scalar_access(u) or u.memref is not mem or u.value_to_store is mem or \
                    _subscripts(u) is None:
                ok = False
                break
            accesses.append(u)
        if not ok or not accesses:
            continue
        first: dict[tuple, Operation] = {}
        for u in sorted(accesses, key=lambda x: order[x]):
            first.setdefault(_subscripts(u), u)
        if all(isinstance(u, AffineStoreOp) and u.parent is body for u in first.values()):
            out.append(a)
    return out


def _check_operands(op: Operation) -> None:
    """TransformError when the nest uses a top-level value computed on the device, or an op
    whose effects are unknown."""
    top = op.parent
    is_host = host_value_checker(top)
    memo: dict[Operation, bool] = {}

    def on_host(v: Value) -> bool:
        owner = v.owner
        if not isinstance(owner, Operation):
            return True
        if owner not in memo:
            memo[owner] = owner.has_trait(ConstantLike) or isinstance(owner, AllocOp) or is_host(v) or \
                (owner.is_pure and not owner.regions and all(on_host(w) for w in owner.operands))
        return memo[owner]

    for x in op.walk():
        if x.memory_effects() is None and not x.has_trait(RecursiveMemoryEffects):
            raise _refuse(op, f"'{x.name}'{at_location(x)} cannot run in a row's block")
        for v in x.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent is top and not on_host(v):
                raise _refuse(op, f"it uses {value_name(v)}, computed on the device by '{owner.name}'"
                                  f"{at_location(owner)} before it")


# -- the plan ----------------------------------------------------------------------------------------------------
def plan_row_reductions(op: Operation, block_size: int = DEFAULT_BLOCK_SIZE, is_host_value=None,
                        gpu: GPUTarget = DEFAULT_GPU) -> RowPlan:
    """The mapping of the top-level nest ``op`` to one block per row on ``gpu`` (see
    :class:`RowPlan` and the module docstring), or TransformError naming the loop and the reason
    (also a constant grid beyond ``gpu.max_grid_dims``). Changes nothing."""
    if op.parent is None or not isinstance(op.parent_op, FuncOp):
        raise TransformError(PASS, f"cannot map '{op.name}'{at_location(op)}: not a top-level nest of a function",
                             loops=[op])
    block_size_for(block_size, gpu=gpu)
    is_host_value = is_host_value or host_value_checker(op.parent)
    band, rows = _row_band(op, is_host_value)
    if len(rows) > MAX_ROWS:
        raise _refuse(op, f"{len(rows)} row loops; at most {MAX_ROWS} map to the grid (x, y, z)")
    _check_operands(op)
    body = band[-1].body
    plan = RowPlan(op, rows, body)
    plan.scratch = _scratch_buffers(op, body)
    scratch = {a.results[0] for a in plan.scratch}
    for x in body.ops:
        if isinstance(x, AffineForOp):
            plan.loops.append(x)
            try:
                plan.reductions += _check_row_loop(x, band[-1], scratch)
            except TransformError as e:
                raise _refuse(op, e.reason, e.dependence) from None
        elif isinstance(x, AffineYieldOp):
            continue
        elif x.regions:
            raise _refuse(op, f"'{x.name}'{at_location(x)} in the row body: only row loops may hold regions there")
        elif any(e.kind in (EffectKind.ALLOCATE, EffectKind.FREE) for e in x.memory_effects() or ()):
            raise _refuse(op, f"'{x.name}'{at_location(x)} in the row body: allocations are not mapped")
    if not plan.reductions:
        raise _refuse(op, "no row loop reduces anything (nothing for block reductions)")
    try:
        deps = analysis.dependences(op)
    except Exception as e:  # noqa: BLE001  (an analysis limit: refuse)
        raise _refuse(op, f"no dependence analysis ({e})") from None
    for d in deps:
        if d.kind != "RAR" and d.memref not in scratch and any(d.carried_at(k) for k in range(1, len(rows) + 1)):
            raise _refuse(op, f"the rows are not parallel: {d}", d)
    plan.block_size = block_size_for(block_size, plan.loops, gpu)
    for k, d in enumerate(plan.axes):
        t = d.trip_count
        if t == 0:
            raise _refuse(op, f"the nest runs no iteration ({d.name} has none)")
        limit = gpu.max_grid_dims[k]
        if t is not None and t > limit:
            raise _refuse(op, f"grid size {t} for {d.name} on {AXES[k]} exceeds CUDA's limit {limit}")
    plan.grid = [d.trip_count for d in rows]
    return plan


def thread_per_row_reason(plan: RowPlan) -> str:
    """Why one thread per row (``gpu-map``) may serve the nest better, or '': an access in a
    row loop that moves with it, but whose last (contiguous) subscript moves with a row and not
    with the row loop,
    so consecutive rows touch consecutive elements (matmul's ``B[k, j]``, a reduction along
    the first axis): threads over rows then read coalesced."""
    ivs = {d.iv for d in plan.rows}
    for loop in plan.loops:
        for x in loop.walk():
            if not _scalar_access(x):
                continue
            leaves: list[Value] = []
            subs = access_subscripts(x, leaves)
            if not subs:
                continue
            used = [leaves[k] for k in sorted(subs[-1].used_dims())]
            moves = any(v is loop.induction_var for v in leaves)  # (an element invariant in the loop is promoted)
            if moves and any(v in ivs for v in used) and not any(v is loop.induction_var for v in used):
                return (f"{value_name(x.memref)}{at_location(x)} is read along a row index in its last dimension "
                        f"in {loop_name(loop)}: one thread per row reads it coalesced")
    return ""
