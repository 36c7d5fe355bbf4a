"""Legality of mapping a nest of row reductions to one block per row (``gpu-map-reductions``).

:func:`plan_row_reductions` reads a top-level nest and returns a :class:`RowPlan` (what
:func:`transforms.gpu.gpu_reduce.map_row_reductions` rewrites) or raises :class:`TransformError`
naming the loop and the reason. Nothing here changes the IR.

The nest must be a band of *row* loops (1 to 3 perfectly nested ``affine.for`` without
``iter_args``, or ``affine.parallel`` without reductions, bounds on host values) whose
innermost body (the *row body*) holds

- *row loops*: ``affine.for`` ops with bounds on values from outside the row body, holding
  inner loops of any depth or none, each a reduction or a parallel loop, with no dependence
  carried besides its reductions (exact; :mod:`.gpu_reduce_loops` says which reductions:
  ``iter_args`` combined by one op kind, ``m[f] = m[f] op x``). A loop that reduces may store
  (attention's max loop stores the scores row); a parallel loop may hold inner reductions
  (attention's ``for d { for j iter_args }``): it is split among the threads like any other;
- *row buffers*: ``memref.alloc`` ops of a static shape in global memory, used only in the row
  body, by affine accesses (any depth) and a dealloc directly in it (what ``affine-privatize``
  leaves: attention's score, probability and accumulator rows). Each becomes one workgroup
  buffer of the row's block, shared by its threads, unless it is used like a scratch buffer
  (below: the one-element sums of a symbolic softmax), which each thread keeps a copy of;
- uniform ops (computed by every thread of the row's block) and row-level loads and stores.

The rows must be parallel (exact dependences, those on scratch buffers aside; a row buffer is
one per row by construction), the nest must not use a value computed on the device outside
it, nor ops of unknown effect; a constant grid must fit CUDA's limits (x < 2**31, y and z <
65536: the innermost row is x), and the row buffers with the reduction partials (one element
per thread and reduction) must fit the target's shared memory per block (the opt-in limit,
:attr:`analysis.targets.GPUTarget.shared_memory_per_block_optin`: the CUDA printer moves more
than 48 KiB to dynamic shared memory); a refusal names the buffers and their bytes.

The plan also records which row-body ops a barrier must separate (:attr:`RowPlan.conflicts`):
two ops (row loops or row-level statements) with a dependence between them within one row, on
memory the threads share (row buffers, the function's memrefs): their threads may touch the
same element, so the later one waits for the block. Ops that touch disjoint elements (a
vector loop and its scalar epilogue storing one output row) need none.

A *scratch buffer* is a static ``memref.alloc`` at the function's top level used only by this
nest (and a later dealloc), or one in the row body, used through affine accesses with constant
subscripts, whose elements are each first written, in every row, by a store directly in the
row body (what fusion's private buffers are when scalar replacement could not remove them):
no value flows between rows through it, so each thread gets its own copy and the rows stay
parallel; a row loop may store to it only as a reduction.

One block per row or one thread per row (``gpu-map``) is :func:`thread_per_row_reason`'s
choice, documented there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import analysis
from affine_ir import FuncOp, Operation, Value
from affine_ir.core import Block
from affine_ir.dialects.affine import (
    AffineForOp,
    AffineParallelOp,
    AffineStoreOp,
    AffineYieldOp,
)
from affine_ir.dialects.memref import AllocOp
from affine_ir.interfaces import AffineAccessInterface, LoopLikeOpInterface
from affine_ir.traits import ConstantLike, EffectKind, RecursiveMemoryEffects
from affine_ir.types import MemRefType, element_size_in_bytes
from analysis.targets import DEFAULT_GPU, GPUTarget

from ..errors import TransformError
from ..loop_utils import access_subscripts, at_location, loop_name, value_name
from .gpu_map_nest import AXES, BandDim, allocates_result, band_dims, frees_memory, host_value_checker
from .gpu_reduce_loops import (
    COMBINING_KINDS,
    PASS,
    RowReduction,
    check_row_loop,
    constant_subscripts,
    in_block,
    scalar_access,
)

__all__ = ["COMBINING_KINDS", "DEFAULT_BLOCK_SIZE", "RowPlan", "RowReduction", "block_size_for",
           "plan_row_reductions", "thread_per_row_reason"]

#: Threads per block unless told otherwise: the default target's (``analysis.targets``).
DEFAULT_BLOCK_SIZE = DEFAULT_GPU.default_threads_per_block
MAX_ROWS = 3


@dataclass
class RowPlan:
    """What :func:`transforms.gpu.gpu_reduce.map_row_reductions` does with a nest (nothing changed
    yet): the row loops ``rows`` (outermost first, one block each), the row ``body``, its row
    loops ``loops`` (in order), the ``reductions``, the ``scratch`` allocations made thread-private
    (top-level or in the row body), the ``row_buffers`` (the other allocations in the row body,
    moved to workgroup memory),
    the threads per block, the constant grid size per row (None: symbolic), the bytes of workgroup
    memory a block uses (row buffers and reduction partials), and ``conflicts``: the pairs of
    row-body ops ``(a, b)``, ``a`` first, with a dependence between them within one row (on memory
    the block's threads share): a barrier must separate them."""

    op: Operation
    rows: list[BandDim]
    body: Block
    loops: list[AffineForOp] = field(default_factory=list)
    reductions: list[RowReduction] = field(default_factory=list)
    scratch: list[Operation] = field(default_factory=list)
    row_buffers: list[Operation] = field(default_factory=list)
    block_size: int = DEFAULT_BLOCK_SIZE
    grid: list[int | None] = field(default_factory=list)
    shared_bytes: int = 0
    conflicts: set[tuple[Operation, Operation]] = field(default_factory=set)
    #: row loops already spread over a grid (a two-phase reduction's first phase): each thread adds
    #: ``tid * step`` to the lower bound and keeps the loop's step (instead of ``B * step``)
    lane_steps: dict[AffineForOp, int] = field(default_factory=dict)

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


# -- scratch buffers ---------------------------------------------------------------------------------------------
def _scratch_buffers(op: Operation, body: Block, row_allocs: list[Operation]) -> list[Operation]:
    """The allocations that each thread may keep its own copy of (module docstring): at the
    function's top level, or among ``row_allocs`` (allocated in the row body)."""
    top = op.parent
    where = {o: k for k, o in enumerate(top.ops)}
    order = {o: k for k, o in enumerate(op.walk())}
    out = []
    for a in [*top.ops, *row_allocs]:
        if not allocates_result(a) or a.operands or not isinstance(a.results[0].type, MemRefType):
            continue
        mem = a.results[0]
        accesses = []
        ok = True
        for use in mem.uses:
            u = use.op
            if frees_memory(u) and u.parent is a.parent and (a.parent is body or where[u] > where[op]):
                continue
            if u not in order or not scalar_access(u) or u.memref is not mem or u.value_to_store is mem or \
                    constant_subscripts(u) is None:
                ok = False
                break
            accesses.append(u)
        if not ok or not accesses:
            continue
        first: dict[tuple, Operation] = {}
        for u in sorted(accesses, key=lambda x: order[x]):
            first.setdefault(constant_subscripts(u), u)
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


# -- row buffers, workgroup memory, races --------------------------------------------------------------------------
def _row_buffer_problem(a: Operation, body: Block) -> str:
    """Why the allocation ``a`` in the row body cannot become a workgroup buffer, or ''."""
    if not allocates_result(a) or len(a.results) != 1 or not isinstance(a.results[0].type, MemRefType):
        return "it allocates something other than one memref"
    mem = a.results[0]
    t: MemRefType = mem.type
    if a.operands or not t.has_static_shape:
        return f"{value_name(mem)} has no static shape ({t}): a row buffer becomes a fixed workgroup array"
    if t.memory_space is not None:
        return f"{value_name(mem)} is in memory space {t.memory_space}, not global memory"
    if element_size_in_bytes(t) is None:
        return f"{value_name(mem)} has elements of type {t.element_type}, without a storage size"
    row = body.parent_op
    for use in mem.uses:
        u = use.op
        if frees_memory(u) and u.parent is body:
            continue
        if not row.is_ancestor_of(u) or not isinstance(u, AffineAccessInterface) or u.memref is not mem or \
                u.value_to_store is mem:
            return (f"{value_name(mem)} is used by '{u.name}'{at_location(u)}: a row buffer may only be accessed by "
                    f"affine loads and stores in the row and freed there")
    return ""


def _row_buffers(op: Operation, body: Block) -> list[Operation]:
    """The allocations directly in the row body (each becomes one workgroup buffer of the row's
    block); TransformError for one that cannot."""
    out = []
    for a in body.ops:
        if not any(e.kind is EffectKind.ALLOCATE for e in a.memory_effects() or ()):
            continue
        why = _row_buffer_problem(a, body)
        if why:
            raise _refuse(op, f"'{a.name}'{at_location(a)} in the row body: {why}")
        out.append(a)
    return out


def _bytes(t: MemRefType) -> int:
    return t.num_elements * element_size_in_bytes(t)


def _check_shared_memory(plan: RowPlan, gpu: GPUTarget) -> int:
    """The workgroup bytes of one block (row buffers, one partial per thread per reduction), or
    TransformError naming the row buffers when they exceed ``gpu``'s shared memory per block
    (the opt-in limit: the CUDA printer puts more than 48 KiB in dynamic shared memory, which the
    runtime opts in to)."""
    rows = [(value_name(a.results[0]), _bytes(a.results[0].type)) for a in plan.row_buffers]
    per_thread = sum(element_size_in_bytes(r.type) for r in plan.reductions)
    need = sum(n for _, n in rows) + plan.block_size * per_thread
    limit = gpu.shared_memory_per_block_optin
    if need > limit:
        what = ", ".join(f"{name} ({n} B)" for name, n in sorted(rows, key=lambda x: -x[1]))
        what = f"its row buffers {what} and the" if rows else "the"
        raise _refuse(plan.op, f"{what} reduction partials ({per_thread} B per thread) need {need} B of workgroup "
                               f"memory per block of {plan.block_size} threads; {gpu.name} has {limit} B per block")
    return need


def _conflicts(deps, body: Block, depth: int, private: set[Value]) -> set[tuple[Operation, Operation]]:
    """The pairs ``(a, b)`` of ops of the row body, ``a`` first, between which a dependence
    exists within one row (at ``depth + 1``: the rows' IVs equal) on memory the block's threads
    share (not ``private``): their threads may touch an element in another order unless a
    barrier separates them. An op with an effect on memory it does not name conflicts with all."""
    out: set[tuple[Operation, Operation]] = set()
    for d in deps:
        if d.kind == "RAR" or d.memref in private or not d.carried_at(depth + 1):
            continue
        a, b = in_block(d.src, body), in_block(d.dst, body)
        if a is not b:
            out.add((a, b))
    ops = list(body.ops)
    for k, x in enumerate(ops):
        if any(e.value is None for y in x.walk() for e in y.memory_effects() or ()):  # (unknown: refused before)
            out |= {(y, x) for y in ops[:k]} | {(x, y) for y in ops[k + 1:]}
    return out


# -- the plan ----------------------------------------------------------------------------------------------------
def plan_row_reductions(op: Operation, block_size: int = DEFAULT_BLOCK_SIZE, is_host_value=None,
                        gpu: GPUTarget = DEFAULT_GPU) -> RowPlan:
    """The mapping of the top-level nest ``op`` (of a function, or of the body of a loop the caller
    keeps on the host, whose host values ``is_host_value`` tells) to one block per row on ``gpu`` (see
    :class:`RowPlan` and the module docstring), or TransformError naming the loop and the reason
    (also a constant grid beyond ``gpu.max_grid_dims``). Changes nothing."""
    if op.parent is None or not isinstance(op.parent_op, (FuncOp, AffineForOp)):  # op-name: where a nest lies
        raise TransformError(PASS, f"cannot map '{op.name}'{at_location(op)}: not a top-level nest of a function "
                                   f"(or of a loop kept on the host)", loops=[op])
    block_size_for(block_size, gpu=gpu)
    is_host_value = is_host_value or host_value_checker(op.parent)
    band, rows = _row_band(op, is_host_value)
    if len(rows) > MAX_ROWS:
        raise _refuse(op, f"{len(rows)} row loops; at most {MAX_ROWS} map to the grid (x, y, z)")
    _check_operands(op)
    body = band[-1].body
    plan = RowPlan(op, rows, body)
    row_allocs = _row_buffers(op, body)
    plan.scratch = _scratch_buffers(op, body, row_allocs)
    scratch = {a.results[0] for a in plan.scratch}
    plan.row_buffers = [a for a in row_allocs if a.results[0] not in scratch]
    allocs, buffers = set(row_allocs), {a.results[0] for a in row_allocs}
    for x in body.ops:
        if isinstance(x, AffineForOp):
            plan.loops.append(x)
            try:
                plan.reductions += check_row_loop(x, band[-1], scratch)
            except TransformError as e:
                raise _refuse(op, e.reason, e.dependence) from None
        elif isinstance(x, AffineYieldOp) or x in allocs or \
                (frees_memory(x) and any(v in buffers for v in x.operands)):
            continue
        elif x.regions:
            raise _refuse(op, f"'{x.name}'{at_location(x)} in the row body: only row loops may hold regions there")
        elif any(e.kind in (EffectKind.ALLOCATE, EffectKind.FREE) for e in x.memory_effects() or ()):
            raise _refuse(op, f"'{x.name}'{at_location(x)} in the row body: it frees memory allocated outside the "
                              f"row")
    if not plan.reductions:
        raise _refuse(op, "no row loop reduces anything (nothing for block reductions)")
    try:
        deps = analysis.dependences(op)
    except Exception as e:  # noqa: BLE001  (an analysis limit: refuse)
        raise _refuse(op, f"no dependence analysis ({e})") from None
    for d in deps:
        if d.kind != "RAR" and d.memref not in scratch and any(d.carried_at(k) for k in range(1, len(rows) + 1)):
            raise _refuse(op, f"the rows are not parallel: {d}", d)
    plan.conflicts = _conflicts(deps, body, len(rows), scratch)
    plan.block_size = block_size_for(block_size, plan.loops, gpu)
    for k, d in enumerate(plan.axes):
        t = d.trip_count
        if t == 0:
            raise _refuse(op, f"the nest runs no iteration ({d.name} has none)")
        limit = gpu.max_grid_dims[k]
        if t is not None and t > limit:
            raise _refuse(op, f"grid size {t} for {d.name} on {AXES[k]} exceeds CUDA's limit {limit}")
    plan.grid = [d.trip_count for d in rows]
    plan.shared_bytes = _check_shared_memory(plan, gpu)
    return plan


def thread_per_row_reason(plan: RowPlan) -> str:
    """Why one thread per row (``gpu-map``) may serve the nest better, or '' (a block per row).

    - A nest with row buffers keeps a block per row: the block shares one copy of each buffer in
      workgroup memory, where one thread per row would keep a copy per thread in local memory
      (off-chip; attention's score and probability rows are 2 x S floats per row), and a block
      per row has a row's worth of threads where one thread per row has one thread per row. For
      attention this outweighs the broadcast reads one thread per row would get (consecutive rows
      read the same ``K[b, h, j, d]``; with a block per row consecutive threads take consecutive
      ``j`` and read ``K`` rows ``D`` apart, each thread walking its row's ``d`` from the cache).
    - Otherwise, an access in a row loop that moves with it, but whose last (contiguous)
      subscript moves with a row and not with the row loop, so consecutive rows touch
      consecutive elements (matmul's ``B[k, j]``, a reduction along the first axis): threads over
      rows then read coalesced, and one thread per row is chosen. Accesses in inner loops count
      by the same rule (each thread runs its inner loops whole)."""
    if plan.row_buffers:
        return ""
    ivs = {d.iv for d in plan.rows}
    for loop in plan.loops:
        for x in loop.walk():
            if not scalar_access(x):
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
