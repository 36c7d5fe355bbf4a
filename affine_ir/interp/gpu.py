"""Emulation of ``gpu.launch``: every thread of every block runs the body.

Translation (see :mod:`.translate`): a launch becomes Python loops over the blocks and,
inside, over the threads of a block (x fastest), with the body's 12 arguments bound to the
block ids, thread ids, grid sizes and block sizes; ``gpu.block_id x``, ``gpu.thread_id x``,
``gpu.grid_dim x`` and ``gpu.block_dim x`` give the same values.

- Without ``gpu.barrier`` the threads of a block run one after the other, each to the end
  of the body (one valid schedule of a kernel whose threads do not synchronize).
- With barriers the body becomes a Python generator per thread that yields at each
  ``gpu.barrier``; the threads of a block run in phases: each thread runs to its next
  barrier (or the end), then the next phase starts. All threads of a block must reach
  the same barrier, or all the end, in each phase (CUDA leaves anything else undefined):
  otherwise an InterpretError names the barrier and the threads. Barriers may sit in loops
  and ``affine.if`` bodies as long as every thread of the block gets there.
- Warp-collective ops (:class:`~affine_ir.traits.SubgroupCollective`: ``gpu.subgroup_mma_load_matrix/
  store_matrix/compute``, ``nvgpu.ldmatrix``, ``nvgpu.mma.sync``) also make the body generators: a
  thread yields at one with its operands; once all 32 lanes of its warp (lane = linear thread id in
  the block % 32) are there the op runs once and each lane gets its result (see :mod:`.warp`). A
  lane elsewhere (another op, a barrier, the end), or a warp of fewer than 32 threads, is an
  InterpretError naming the op and the lanes.
- ``memref.alloc`` in ``#gpu.address_space<workgroup>`` (or memory space ``3``, NVVM's number for it,
  as the CUDA emitter takes it) inside a launch (static shape) is
  one zero-filled buffer per block, shared by its threads (allocated when the block starts,
  wherever the op sits in the body, as CUDA hoists ``__shared__`` arrays);
  ``memref.alloca`` is per thread (each thread allocates its own when it runs the op).
- Grid and block sizes are read when the launch runs: a block size below 1, more than 1,024
  threads per block, a block z size above 64, or a grid beyond CUDA's limits (x < 2**31,
  y and z < 65,536) is an InterpretError; a grid size below 1 runs no block (a launch over
  an empty iteration space).

- Thread-block clusters (``gpu.launch clusters(...)``, whose sizes must divide the grid, at most 8 blocks): the
  blocks of a cluster run together (:func:`run_cluster`: their threads take turns; barriers, named barriers
  and collectives stay within a block), so one block may wait for another (the cluster's barrier
  ``nvvm.cluster.arrive/wait``, an mbarrier another block arrives on, a multicast TMA load; see
  :mod:`.hopper`). Body arguments 12-14 and ``gpu.cluster_id`` are the cluster's index in the grid,
  ``gpu.cluster_block_id`` the block's in its cluster, 15-17 the cluster sizes. A launch without clusters
  that uses those ops runs each block as a cluster of one.

Blocks, and threads within a block, run in increasing linear order (x fastest); inside
:func:`reversed_schedule` they run in decreasing order, so a test can run a launch both
ways: a kernel whose threads race (one writes what another reads or writes, without a
barrier between) usually gives a different result; the blocks of a cluster then run one ahead of the
others as far as it can (a block-scoped barrier standing in for the cluster's then shows). Inside
:func:`interleaved_schedule` the threads of a launch that synchronizes take turns at every affine/memref load
and store of shared memory (round-robin), which exposes races between threads that each run a long stretch
without synchronizing.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..core import Operation
from ..dialects.nvgpu import is_shared
from ..traits import SubgroupCollective
from ..types import MemRefType
from . import hopper_ops
from .semantics import Trap, scalar_info

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_CLUSTER_BLOCKS = 8  # the portable cluster size
ID_OPS = {"gpu.block_id": 0, "gpu.thread_id": 1, "gpu.grid_dim": 2, "gpu.block_dim": 3}


# ----------------------------------------------------------------------------------------
# Run time (``_G`` in generated code)
# ----------------------------------------------------------------------------------------


_REVERSED = [False]
#: Inside :func:`interleaved_schedule`: a thread of a launch with barriers yields before each access to shared
#: memory, so the block's threads run round-robin one shared access at a time.
INTERLEAVED = [False]
_PREEMPTED = -2  # the mark of a thread that yielded at a shared access (runnable again at once)


@contextlib.contextmanager
def reversed_schedule() -> Iterator[None]:
    """Within the block, launches run their blocks and threads in decreasing order."""
    saved = _REVERSED[0]
    _REVERSED[0] = True
    try:
        yield
    finally:
        _REVERSED[0] = saved


@contextlib.contextmanager
def interleaved_schedule() -> Iterator[None]:
    """Within the block, threads of launches that synchronize take turns at every shared-memory load and store
    of ``affine``/``memref`` (scalar or ``affine.vector_*``; not ``ldmatrix`` or asynchronous copies), round-robin
    in the launch's thread order, instead of each running to its next barrier or wait: a
    warpgroup that reads a shared buffer another one may overwrite without waiting for it shows, where the
    default schedule lets each thread finish its reads first."""
    saved = INTERLEAVED[0]
    INTERLEAVED[0] = True
    try:
        yield
    finally:
        INTERLEAVED[0] = saved


def ids(z: int, y: int, x: int):
    """Every ``(z, y, x)`` in ``range(z) x range(y) x range(x)``, x fastest (reversed in
    :func:`reversed_schedule`)."""
    if _REVERSED[0]:
        return itertools.product(range(z - 1, -1, -1), range(y - 1, -1, -1), range(x - 1, -1, -1))
    return itertools.product(range(z), range(y), range(x))


def check_launch(gx: int, gy: int, gz: int, sx: int, sy: int, sz: int) -> None:
    """Trap on block or grid sizes a CUDA launch would refuse (a grid size < 1 runs nothing)."""
    block = (sx, sy, sz)
    if min(block) < 1:
        raise Trap(f"block size {block} has a dimension below 1")
    if any(b > m for b, m in zip(block, MAX_BLOCK)) or sx * sy * sz > MAX_THREADS_PER_BLOCK:
        raise Trap(f"block size {block} ({sx * sy * sz} threads) exceeds CUDA's limits (x, y <= 1024, z <= 64, "
                   f"at most {MAX_THREADS_PER_BLOCK} threads per block)")
    grid = (gx, gy, gz)
    if any(g > m for g, m in zip(grid, MAX_GRID)):
        raise Trap(f"grid size {grid} exceeds CUDA's limits (x < 2**31, y and z < 65536)")


_END = (-1, None)  # the mark of a thread that reached the end of the body
WARP = 32


def run_block(threads: list, block: tuple, sizes: tuple, syncs: tuple) -> None:
    """Run the generators ``threads`` (one per thread of ``block``, in schedule order over ``sizes``
    (sx, sy, sz)). A thread yields ``(k, operands)`` at ``syncs[k]``: a barrier (its description), a
    collective op (a ``Collective``, run once all its lanes, a warp or a warpgroup, are there, each
    lane sent its result) or a blocking wait (a ``Blocking``: the thread goes on once its ``ready``
    says so). Threads run until every one waits at a barrier (all at the same one: the next phase
    starts) or has ended; a block where no thread can go on otherwise is an InterpretError."""
    run_cluster([(threads, block)], sizes, syncs)


def run_cluster(blocks: list, sizes: tuple, syncs: tuple, cluster=None) -> None:
    """Run the blocks of one thread-block cluster together (``blocks``: ``(threads, block ids[, rank in the
    cluster])`` each, as :func:`run_block` takes them): the threads of all of them take turns, so one block's
    thread may wait for another block (a cluster barrier, a remote mbarrier arrival, a multicast copy).
    Barriers, named barriers and collectives stay within a block. A block none of whose threads can go on
    starts its next phase when its threads all wait at one barrier; once no thread of the cluster can go on and
    not every thread has ended, the first block that cannot go on is an InterpretError. ``cluster`` (a
    :class:`~.hopper.Cluster`) is told when a block's threads have all ended. In :func:`reversed_schedule` the
    first block (in that order) with a thread that can go on runs alone, so one block runs ahead of the
    others."""
    n = len(blocks[0][0])
    stride = -(-n // 128) * 128  # linear ids of two blocks never share a warp or a warpgroup
    threads = [t for ts, *_ in blocks for t in ts]
    linear = [i // n * stride + (n - 1 - i % n if _REVERSED[0] else i % n) for i in range(len(threads))]
    where = [b[1] for b in blocks]
    ranks = [b[2] if len(b) > 2 else k for k, b in enumerate(blocks)]  # the schedule's order is not the ranks'

    ended = [0] * len(blocks)
    marks: list = [None] * len(threads)
    sent: list = [None] * len(threads)
    ready = set(range(len(threads)))
    while True:
        chosen = _ahead(ready, n) if _REVERSED[0] else ready
        ready = ready - chosen
        for i in sorted(chosen):
            try:
                marks[i] = threads[i].send(sent[i])
            except StopIteration:
                marks[i] = _END
                ended[i // n] += 1
                if cluster is not None and ended[i // n] == n:
                    cluster.exit(ranks[i // n])
            sent[i] = None
        state = (threads, marks, n, where, sizes, syncs)
        ready.update(_run_collectives(threads, marks, sent, linear, where, n, sizes, syncs))
        ready.update(_release_waiters(threads, marks, syncs))
        ready.update(_release_named(state))
        ready.update(i for i in range(len(threads)) if marks[i] is not None and marks[i][0] == _PREEMPTED)
        if ready and len(blocks) == 1:
            continue
        busy = {i // n for i in ready}  # a block none of whose threads can go on starts its next phase if it may
        problems = [None if b in busy else _phase_over(state, b) for b in range(len(blocks))]
        ready.update(i for b, p in enumerate(problems) if p == "next" for i in range(b * n, (b + 1) * n))
        if ready:
            continue
        error = next((p for p in problems if isinstance(p, Trap)), None)
        if error is not None:
            raise error
        return


def _ahead(ready: set, n: int) -> set:
    """The threads of ``ready`` of the first block that has any (in the reversed schedule one block of a cluster runs
    ahead of the others as far as it can: a block that exits while another still reaches it then shows)."""
    first = min(ready) // n
    return {i for i in ready if i // n == first}


def _phase_over(state, b: int):
    """Block ``b`` once no thread of the cluster can go on: "next" (all its threads wait at one barrier), "done"
    (all have ended) or the Trap saying why it cannot go on."""
    threads, marks, n, where, sizes, syncs = state
    block = where[b]
    first = marks[b * n]
    for k in range(n):
        m = marks[b * n + k]
        if m[0] >= 0 and _kind(syncs[m[0]]) in ("wait", "named"):
            there = _waiting_at(marks[b * n:(b + 1) * n], syncs, m[1][0]) if _kind(syncs[m[0]]) == "named" else 0
            what = _state(m[1]) if _kind(syncs[m[0]]) == "wait" else \
                f"barrier {m[1][0]} waits for {m[1][1]} threads, {there} are there"
            return Trap(f"deadlock in block {block}: thread {_coords(k, sizes)} waits at {syncs[m[0]]} and no "
                        f"thread of the block can go on ({what})")
        if m[0] != first[0]:
            return Trap(f"threads of block {block} diverge at a barrier: thread {_coords(0, sizes)} "
                        f"{_reached(first[0], syncs)} but thread {_coords(k, sizes)} {_reached(m[0], syncs)}")
    return "done" if first is _END else "next"


def _kind(sync) -> str:
    """"barrier" (a description string), "collective", "named" (a barrier of some threads: ``nvvm.barrier``)
    or "wait" (a blocking wait)."""
    if isinstance(sync, str):
        return "barrier"
    if hasattr(sync, "lanes"):
        return "collective"
    return "named" if getattr(sync, "named", False) else "wait"


def _waiting_at(marks, syncs, barrier: int) -> int:
    return sum(1 for m in marks if m is not None and m[0] >= 0 and _kind(syncs[m[0]]) == "named"
               and m[1][0] == barrier)


def _release_named(state) -> list[int]:
    """The threads at a named barrier (``nvvm.barrier id, count``) once ``count`` threads of their block wait at
    that id."""
    threads, marks, n, where, _, syncs = state
    waiting: dict[tuple[int, int], list[int]] = {}
    for i, m in enumerate(marks):
        if m is not None and m[0] >= 0 and _kind(syncs[m[0]]) == "named":
            waiting.setdefault((i // n, m[1][0]), []).append(i)
    out = []
    for (b, barrier), ids in waiting.items():
        block = where[b]
        counts = {marks[i][1][1] for i in ids}
        if len(counts) != 1:
            _throw(threads[ids[0]], Trap(f"threads of block {block} wait at barrier {barrier} with different thread "
                                         f"counts {sorted(counts)}"))
        count = counts.pop()
        if count <= 0 or count % WARP:
            _throw(threads[ids[0]], Trap(f"a named barrier's thread count must be a positive multiple of {WARP}, got "
                                         f"{count}"))
        if len(ids) == count:
            for i in ids:
                marks[i] = None
            out += ids
        elif len(ids) > count:
            _throw(threads[ids[0]], Trap(f"{len(ids)} threads of block {block} wait at barrier {barrier} of {count}"))
    return out


def _state(payload) -> str:
    """What an mbarrier wait waits for (its payload: state, group, index, parity), or a cluster barrier's wait."""
    if hasattr(payload, "describe"):
        return payload.describe()
    try:
        _, group, k, parity = payload
        return f"mbarrier {k}: {group.get(k).describe()}, waiting for the phase of parity {int(parity)}"
    except (TypeError, ValueError, AttributeError):
        return "nothing it waits for can complete"


def _release_waiters(threads, marks, syncs) -> list[int]:
    """The threads at a blocking wait whose condition now holds (they run on)."""
    out = []
    for i, m in enumerate(marks):
        if m is not None and m[0] >= 0 and _kind(syncs[m[0]]) == "wait":
            try:
                ready = syncs[m[0]].ready(m[1])
            except Trap as e:
                _throw(threads[i], e)
            if ready:
                marks[i] = None
                out.append(i)
    return out


def _run_collectives(threads, marks, sent, linear, where, n, sizes, syncs) -> list[int]:
    """Run each collective op whose lanes are all there; the lanes that ran."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, m in enumerate(marks):
        if m is not None and m[0] >= 0 and _kind(syncs[m[0]]) == "collective":
            size = syncs[m[0]].lanes
            groups.setdefault((size, linear[i] // size), []).append(i)
    members: dict[tuple[int, int], list[int]] = {}
    if groups:
        for i in range(len(threads)):
            for size in {s for s, _ in groups}:
                members.setdefault((size, linear[i] // size), []).append(i)
    ran = []
    for key, waiting in groups.items():
        ran += _run_collective(threads, members[key], waiting, marks, sent, linear, (where, n), sizes, syncs)
    return ran


def _run_collective(threads, pos, waiting, marks, sent, linear, blocks, sizes, syncs) -> list[int]:
    """Run the collective op the lanes ``waiting`` of one warp or warpgroup (threads ``pos``) wait at;
    the lanes that ran (none while some lane is still on its way: running or at a blocking wait); a
    Trap (thrown into a waiting lane, so it names the op) when the lanes diverge. ``blocks``: (the block ids
    of each block of the cluster, threads per block)."""
    where, n = blocks
    block = where[waiting[0] // n]
    stride = -(-n // 128) * 128
    k = marks[waiting[0]][0]
    op = syncs[k]
    size = op.lanes
    unit = "warp" if size == WARP else "warpgroup"
    lanes = sorted(pos, key=lambda i: linear[i] % size)
    if len(lanes) != size:
        what = "32 lanes of a warp" if size == WARP else f"{size} threads of a warpgroup"
        _throw(threads[waiting[0]], Trap(f"{op} needs the {what}, but {unit} {linear[lanes[0]] % stride // size} "
                                         f"of block {block} has {len(lanes)} threads"))
    if any(marks[i] is None or marks[i][0] == _PREEMPTED or (marks[i][0] >= 0 and _kind(syncs[marks[i][0]]) in
                                                                ("wait", "named")) for i in lanes):
        return []  # some lane is still on its way (waiting, or preempted at a shared access)
    others = [i for i in lanes if marks[i][0] != k]
    if others:
        j = others[0]
        _throw(threads[waiting[0]], Trap(
            f"the lanes of {unit} {linear[j] % stride // size} of block {block} diverge at a {unit}-collective op: "
            f"lane {linear[waiting[0]] % size} (thread {_coords(waiting[0] % n, sizes)}) is at {op} but lane "
            f"{linear[j] % size} (thread {_coords(j % n, sizes)}) {_reached(marks[j][0], syncs)}"))
    try:
        results = op.run([marks[i][1] for i in lanes])
    except Trap as e:
        _throw(threads[lanes[0]], e)
    for i, r in zip(lanes, results):
        sent[i] = r
        marks[i] = None
    return lanes


def _throw(thread, exc: Exception) -> None:
    """Raise ``exc`` where ``thread`` waits (so the error names the op it waits at)."""
    thread.throw(exc)
    raise exc  # not reached: the generated code does not catch it


def _coords(k: int, sizes: tuple) -> tuple:
    sx, sy, sz = sizes
    if _REVERSED[0]:
        k = sx * sy * sz - 1 - k
    return (k % sx, k // sx % sy, k // (sx * sy))


def _reached(k: int, syncs: tuple) -> str:
    return "reached the end of the body" if k < 0 else f"waits at {syncs[k]}"


# ----------------------------------------------------------------------------------------
# Translation
# ----------------------------------------------------------------------------------------


@dataclass
class LaunchContext:
    """What the ops of a launch body need while being translated."""

    names: list[list[str]]                 # block ids, thread ids, grid sizes, block sizes (x, y, z each)
    shared: dict[int, str] = field(default_factory=dict)  # id(alloc op) -> local of the block's buffer
    barriers: dict[int, int] | None = None  # id(barrier or collective op) -> its number, when the body runs as
    # generators
    collectives: dict[int, object] = field(default_factory=dict)  # number -> the warp.Collective of that op
    async_copies: str | None = None  # the local of the thread's mma.AsyncCopies
    mbarriers: dict[int, str] = field(default_factory=dict)  # id(mbarrier.create op) -> local of the block's group
    block_async: str | None = None  # the local of the block's hopper.BlockAsync
    cluster: str | None = None  # the local of the cluster's hopper.Cluster (its blocks run together)
    cluster_size: list[str] = field(default_factory=lambda: ["1", "1", "1"])  # blocks per cluster (x, y, z)


def is_workgroup_alloc(op: Operation) -> bool:
    return op.name == "memref.alloc" and is_shared(op.results[0].type)


def _launch(tr, op) -> None:
    if tr.gpu is not None:
        tr.unsupported(op, "a gpu.launch inside a gpu.launch")
        return
    args = op.body.args
    for a, v in zip(args[6:12], op.operands[:6]):  # grid and block sizes: the operands' values
        tr.exprs[a] = tr.val(v)
        if v in tr.consts:
            tr.consts[a] = tr.consts[v]
        if v in tr.ranges:
            tr.ranges[a] = tr.ranges[v]
    sizes = [tr.val(v) for v in op.operands[:6]]
    names = [[tr.define(a) for a in args[0:3]], [tr.define(a) for a in args[3:6]], sizes[0:3], sizes[3:6]]
    for k in range(3):
        for ids_, size in ((args[k], op.operands[k]), (args[3 + k], op.operands[3 + k])):
            hi = tr.ranges.get(size, (None, None))[1]
            tr.ranges[ids_] = (0, None if hi is None else hi - 1)
    ctx = LaunchContext(names)
    ctx.cluster_size = [tr.val(v) for v in op.cluster_size] or ["1", "1", "1"]
    for k, a in enumerate(args[12:18]):  # cluster ids (in the grid) and sizes (blocks)
        tr.exprs[a] = f"({names[0][k]} // {ctx.cluster_size[k]})" if k < 3 else ctx.cluster_size[k - 3]
    allocs = []
    for inner in op.body.walk():
        if is_workgroup_alloc(inner):
            if inner.operands:
                tr.unsupported(op, "workgroup memory of dynamic size")
                return
            ctx.shared[id(inner)] = tr.fresh(tr.ir_name(inner.results[0]).lstrip("%"), "wg_")
            allocs.append(inner)
    barriers = [b for b in op.body.walk() if b.name == "gpu.barrier" or b.has_trait(SubgroupCollective)
                or b.name in hopper_ops.WARPGROUP_COLLECTIVES or b.name in hopper_ops.BLOCKING]
    if any(inner.name == "nvgpu.device_async_copy" for inner in op.body.walk()):
        ctx.async_copies = tr.fresh("", "_async")
    mbarrier_ops = [b for b in op.body.walk() if b.name == "nvgpu.mbarrier.create"]
    for b in mbarrier_ops:
        ctx.mbarriers[id(b)] = tr.fresh(tr.ir_name(b.results[0]).lstrip("%"), "mb_")
    if any(inner.name in hopper_ops.ASYNC_OPS for inner in op.body.walk()):
        ctx.block_async = tr.fresh("", "_blk")
    if (op.cluster_size and barriers) or any(hopper_ops.uses_cluster(inner) for inner in op.body.walk()):
        ctx.cluster = tr.fresh("", "_cluster")  # the blocks of a cluster run together
        ctx.block_async = ctx.block_async or tr.fresh("", "_blk")
    if barriers or ctx.cluster is not None:
        ctx.barriers = {id(b): k for k, b in enumerate(barriers)}
    (bx, by, bz), (tx, ty, tz), (gx, gy, gz), (sx, sy, sz) = names
    tr.emit(f"_G.check_launch({gx}, {gy}, {gz}, {sx}, {sy}, {sz})")
    if op.cluster_size and ctx.cluster is None:  # run block by block (nothing reaches another block)
        tr.emit(f"_G.check_cluster(({gx}, {gy}, {gz}), ({', '.join(ctx.cluster_size)}))")
    tr.gpu = ctx
    shared = [ctx.shared[id(a)] for a in allocs] + [ctx.mbarriers[id(b)] for b in mbarrier_ops]
    if ctx.block_async is not None:
        shared.append(ctx.block_async)
    if ctx.cluster is not None:
        shared.append(ctx.cluster)
    try:
        if ctx.barriers is not None:
            kernel = tr.fresh("", "_kernel")
            tr.emit(f"def {kernel}({', '.join([bx, by, bz, tx, ty, tz, *shared])}):")
            tr.indent += 1
            tr.emit("if 0: yield  # a generator even if no barrier is reached")
            _thread_body(tr, op, ctx)
            tr.indent -= 1
            tr.cur = tr.op_info(op)
        if ctx.cluster is not None:
            _run_clusters(tr, ctx, (allocs, mbarrier_ops, barriers), kernel, shared)
            return
        tr.emit(f"for {bz}, {by}, {bx} in _G.ids({gz}, {gy}, {gx}):")
        tr.indent += 1
        _block_state(tr, ctx, allocs, mbarrier_ops, shared)
        if barriers:
            threads = f"[{kernel}({', '.join([bx, by, bz, tx, ty, tz, *shared])}) for {tz}, {ty}, {tx} in " \
                      f"_G.ids({sz}, {sy}, {sx})]"
            tr.emit(f"_G.run_block({threads}, ({bx}, {by}, {bz}), ({sx}, {sy}, {sz}), {_syncs(tr, ctx, barriers)})")
            if ctx.block_async is not None:
                tr.emit(f"{ctx.block_async}.finish()")
        else:
            tr.emit(f"for {tz}, {ty}, {tx} in _G.ids({sz}, {sy}, {sx}):")
            tr.indent += 1
            _thread_body(tr, op, ctx)
            tr.indent -= 1
            tr.cur = tr.op_info(op)
            if ctx.block_async is not None:
                tr.emit(f"{ctx.block_async}.finish()")
        tr.indent -= 1
    finally:
        tr.gpu = None


def _syncs(tr, ctx: LaunchContext, barriers: list) -> str:
    """The global of the launch's synchronization points (what :func:`run_cluster` takes as ``syncs``)."""
    return tr.glob(tuple(ctx.collectives.get(k, "'gpu.barrier'" + (f" at {b.location}" if b.location else ""))
                         for k, b in enumerate(barriers)), "BARRIERS")


def _block_state(tr, ctx: LaunchContext, allocs: list, mbarrier_ops: list, shared: list) -> None:
    """A block's workgroup buffers, mbarrier groups and asynchronous state, made when it starts."""
    for a, name in zip(allocs, shared):
        t: MemRefType = a.results[0].type
        info = scalar_info(t.element_type)
        tr.emit(f"{name} = _M.alloc({tr.glob(info, f'I_{info.name}')}, {tuple(t.shape)!r})")
    for b in mbarrier_ops:
        tr.emit(f"{ctx.mbarriers[id(b)]} = _H.MBarrierGroup({b.results[0].type.num_barriers})")
    if ctx.block_async is not None:
        tr.emit(f"{ctx.block_async} = _H.BlockAsync()")


def _run_clusters(tr, ctx: LaunchContext, ops: tuple, kernel: str, shared: list) -> None:
    """The blocks in clusters (a block alone when the launch has none), each cluster's blocks run together
    (``ops``: the launch's workgroup allocations, mbarrier groups and synchronization points)."""
    allocs, mbarrier_ops, barriers = ops
    (bx, by, bz), (tx, ty, tz), (gx, gy, gz), (sx, sy, sz) = ctx.names
    cx, cy, cz = ctx.cluster_size
    ids_ = [tr.fresh("", "_cid") for _ in range(3)]
    rank = [tr.fresh("", "_rank") for _ in range(3)]
    blocks = tr.fresh("", "_blocks")
    tr.emit(f"_G.check_cluster(({gx}, {gy}, {gz}), ({cx}, {cy}, {cz}))")
    tr.emit(f"for {ids_[2]}, {ids_[1]}, {ids_[0]} in _G.ids({gz} // {cz}, {gy} // {cy}, {gx} // {cx}):")
    tr.indent += 1
    tr.emit(f"{ctx.cluster} = _H.Cluster({cx} * {cy} * {cz}, {sx} * {sy} * {sz})")
    tr.emit(f"{blocks} = []")
    tr.emit(f"for {rank[2]}, {rank[1]}, {rank[0]} in _G.ids({cz}, {cy}, {cx}):")
    tr.indent += 1
    for b, c, r, size in zip((bx, by, bz), ids_, rank, (cx, cy, cz)):
        tr.emit(f"{b} = {c} * {size} + {r}")
    _block_state(tr, ctx, allocs, mbarrier_ops, shared)
    groups = [ctx.mbarriers[id(b)] for b in mbarrier_ops]
    linear = f"{rank[0]} + {cx} * ({rank[1]} + {cy} * {rank[2]})"
    tr.emit(f"{ctx.cluster}.add_block({linear}, [{', '.join(ctx.shared[id(a)] for a in allocs)}], "
            f"[{', '.join(groups)}], {ctx.block_async})")
    threads = f"[{kernel}({', '.join([bx, by, bz, tx, ty, tz, *shared])}) for {tz}, {ty}, {tx} in " \
              f"_G.ids({sz}, {sy}, {sx})]"
    tr.emit(f"{blocks}.append(({threads}, ({bx}, {by}, {bz}), {linear}))")
    tr.indent -= 1
    tr.emit(f"_G.run_cluster({blocks}, ({sx}, {sy}, {sz}), {_syncs(tr, ctx, barriers)}, {ctx.cluster})")
    tr.emit(f"{ctx.cluster}.finish()")
    tr.indent -= 1


def check_cluster(grid: tuple, cluster: tuple) -> None:
    """Trap on cluster sizes a launch would refuse: below 1, more than 8 blocks, or not dividing the grid."""
    if min(cluster) < 1 or cluster[0] * cluster[1] * cluster[2] > MAX_CLUSTER_BLOCKS:
        raise Trap(f"cluster size {tuple(cluster)}: a thread-block cluster has 1 to {MAX_CLUSTER_BLOCKS} blocks")
    if any(g % c for g, c in zip(grid, cluster)):
        raise Trap(f"the grid {tuple(grid)} is not a whole number of clusters of {tuple(cluster)} blocks")


def _thread_body(tr, op, ctx: LaunchContext) -> None:
    """The launch body for one thread (with its asynchronous-copy state, completed at its end)."""
    if ctx.async_copies is not None:
        tr.emit(f"{ctx.async_copies} = _W.AsyncCopies()")
    tr.block(op.body)
    if ctx.async_copies is not None:
        tr.cur = tr.op_info(op)
        tr.emit(f"{ctx.async_copies}.finish()")


def _id(tr, op) -> None:
    if tr.gpu is None:
        tr.unsupported(op, "outside a gpu.launch")
        return
    k = "xyz".index(op.dimension)
    res = op.results[0]
    if op.name in ("gpu.cluster_id", "gpu.cluster_block_id"):  # from the block id (a cluster of 1 without any)
        b, size = tr.gpu.names[0][k], tr.gpu.cluster_size[k]
        tr.exprs[res] = f"({b} // {size})" if op.name == "gpu.cluster_id" else f"({b} % {size})"
        return
    kind = ID_OPS[op.name]
    launch = next(a for a in op.ancestors() if a.name == "gpu.launch")
    arg = launch.body.args[3 * kind + k]
    tr.exprs[res] = tr.exprs[arg]
    for table in (tr.consts, tr.ranges):
        if arg in table:
            table[res] = table[arg]


def _barrier(tr, op) -> None:
    if tr.gpu is None or tr.gpu.barriers is None:
        tr.unsupported(op, "outside a gpu.launch")
        return
    tr.emit(f"yield ({tr.gpu.barriers[id(op)]}, None)")


def _terminator(tr, op) -> None:
    pass


def workgroup_alloc(tr, op) -> bool:
    """Bind the result of a workgroup ``memref.alloc`` in a launch to its block's buffer; False
    when ``op`` is not one (the caller allocates)."""
    name = tr.gpu.shared.get(id(op)) if tr.gpu is not None else None
    if name is None:
        return False
    tr.exprs[op.results[0]] = name
    tr.bind_value(op.results[0])
    return True


HANDLERS = {
    "gpu.launch": _launch,
    "gpu.block_id": _id,
    "gpu.thread_id": _id,
    "gpu.grid_dim": _id,
    "gpu.cluster_id": _id,
    "gpu.cluster_block_id": _id,
    "gpu.block_dim": _id,
    "gpu.barrier": _barrier,
    "gpu.terminator": _terminator,
}

__all__ = ["HANDLERS", "LaunchContext", "check_cluster", "check_launch", "ids", "is_workgroup_alloc",
           "reversed_schedule", "run_block", "run_cluster", "workgroup_alloc"]
