"""``gpu-schedule``: contractions (matmul, batched matmul, MLP, convolution) as shared-memory tiled kernels.

A *contraction nest* (see :mod:`.schedule_gpu_plan`) is what fusion and scalar replacement make
of ``C = epilogue(A @ B)`` or of a convolution: a perfect band of parallel loops whose innermost
body holds a chain of reduction loops carrying one sum, between point-wise ops (the initial
value before it, an epilogue and stores after it). The band's loops group into batch, rows and
columns, each group one linear index (``M``, ``N``), the chain one linear ``k`` (``K``): a
convolution is an implicit GEMM, its input window packed on the fly. Each such nest becomes
one ``gpu.launch``:

- **blocks** tile ``(rows, columns)`` by ``BM x BN`` (grid ``(N/BN, M/BM, batch)``); **threads**
  (``BN/TN x BM/TM``, 256) each own a ``TM x TN`` **register tile**: ``TM * TN`` sums carried
  in ``iter_args`` through the loops over ``%k``;
- ``k`` is tiled by ``BK``; for each ``BK`` step every read of the reduction that varies with
  ``k`` and only the rows or only the columns (A's and B's) is **packed into shared memory** by
  all threads together -- ``S[kk][p]`` holds the value the read gives at row/column ``p`` of the
  block tile and step ``kk``, whatever its subscripts (a transposed operand, an offset, a
  zero-padded convolution window: the indices are delinearized from ``p`` and ``k``), the
  threads' global reads running along the operand's contiguous dimension -- then a
  ``gpu.barrier``, the ``BK`` steps of the register tile reading the packed
  values (``TM + TN`` shared loads per step for ``TM * TN`` multiply-adds), and a barrier;
- the initial values, the epilogue and the stores run per element of the register tile.

Each sum keeps its order over ``k`` (``k = 0, 1, ...``, the chain's order), so the kernel computes what the nest
computes, operation for operation; with FMA contraction enabled at code generation (the GPU
pipeline's default) products and sums fuse, within an ulp per step. Tile sizes come from the
target (H200 unless ``target=`` names another): the largest of 128x128, 128x64, 64x64, 32x32
(``BK`` 8) that gives at least one block per multiprocessor, preferring tiles that divide the
sizes; otherwise **partial tiles** are guarded: packed loads past a size read 0 (those values
only reach elements that are never stored), the last ``k`` step stops at ``K`` (no extra
terms, so sums stay exact), each element's epilogue and stores run only inside the sizes, and
initial values and per-element reads that access memory run in an ``affine.if`` yielding them
inside the sizes (0 outside). A **triangular band** (``for i { for j <= i }``: syrk, covariance)
runs over its constant bounding box, each element's initial value, epilogue and stores (and
the split-K sum) guarded by the loops' bounds as well.
Nests that are not contractions are left for ``gpu-map`` (a note says why).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import analysis
from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import (
    AffineForOp,
    AffineIfOp,
    AffineLoadOp,
    AffineStoreOp,
    AffineVectorLoadOp,
    AffineVectorStoreOp,
    AffineYieldOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.gpu import BarrierOp
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.traits import is_memory_effect_free
from affine_ir.types import WORKGROUP, f32, memref, vector
from analysis.targets import DEFAULT_GPU, GPUTarget, gpu_target

from ..errors import TransformError
from ..loop_utils import access_subscripts, top_level_loops
from ..pass_base import Pass, PassContext, option, register_pass
from .emitter import Emitter
from .gpu_map_nest import HostPlan, new_launch
from .schedule_gpu_plan import (
    GROUP,
    Contraction,
    TileConfig,
    best_split,
    check_schedule_options,
    choose_schedule,
    delinearized,
    estimate_seconds,
    forced_tiles,
    partial_tile_reason,
    plan_contraction,
    read_load,
    split_reason,
)

__all__ = ["Contraction", "GpuSchedule", "TileConfig", "choose_schedule", "estimate_seconds", "partial_tile_reason",
           "add_partial_sums", "plan_contraction", "schedule_contraction", "split_reason"]

PASS = "gpu-schedule"
#: Extra elements per shared row of an operand stored transposed (its threads write down a
#: column): consecutive rows then start 4 banks apart instead of in the same bank.
SHARED_PAD = 4
#: Lanes of a vector copy into shared memory (16 bytes of f32).
VECTOR = 4


# -- building the kernel ----------------------------------------------------------------------------------------
class _Emitter(Emitter):
    """Appends ops before ``anchor`` in its block; the contraction kernel's helpers."""

    def ivs(self, loops: list[AffineForOp], trips: dict[AffineForOp, int], linear: Value,
            lows: dict[AffineForOp, int] | None = None) -> dict[Value, Value]:
        """The induction values of ``loops`` at the linear index ``linear`` (see
        :func:`~.schedule_gpu_plan.delinearized`; ``lows``: first values other than 0)."""
        if len(loops) == 1 and not (lows or {}).get(loops[0]):
            return {loops[0].induction_var: linear}
        return {lp.induction_var: self.apply(e, [linear], lp.induction_var.name_hint)
                for lp, e in zip(loops, delinearized(loops, trips, lows))}

    def guarded(self, cond: tuple[IntegerSet, list[Value]] | None, ops: list[Operation], mapping: dict,
                results: list[Value]) -> None:
        """Clones of ``ops`` (``mapping`` updated with their results), inside an ``affine.if`` on
        ``cond`` when given: ``results`` (values of ``ops``) are yielded by it, and are 0 where
        the condition does not hold."""
        if cond is None:
            for op in ops:
                self.add(op.clone(mapping))
            return
        guard = self.add(AffineIfOp(cond[0], cond[1], [v.type for v in results], with_else=True,
                                    location=self.location))
        inside = _Emitter(_marker_of(guard.then_block), self.location)
        inner = dict(mapping)
        for op in ops:
            inside.add(op.clone(inner))
        inside.add(AffineYieldOp([inner.get(v, v) for v in results], location=self.location))
        inside.anchor.erase()
        other = _Emitter(_marker_of(guard.else_block), self.location)
        zeros = [other.add(ConstantOp.of(0, v.type, location=self.location)).results[0] for v in results]
        other.add(AffineYieldOp(zeros, location=self.location))
        other.anchor.erase()
        mapping.update(zip(results, guard.results))


def _d(k: int) -> AffineExpr:
    return AffineExpr.dim(k)


def schedule_contraction(c: Contraction, tiles: TileConfig, host: HostPlan | None = None, *,
                         prefetch: bool = True, splits: int = 1, gpu: GPUTarget = DEFAULT_GPU) -> Operation:
    """Replace the contraction nest by its tiled ``gpu.launch`` (see the module docstring);
    returns the launch. Tiles need not divide the sizes: the packed loads past a size read 0,
    the last k step stops at ``K``, and each element's initial value, epilogue and stores run
    only inside the sizes (the caller checked :func:`partial_tile_reason`). With ``prefetch``
    (software pipelining) each thread loads its share of the next k step's operands into
    registers before computing the current one, so global loads overlap the arithmetic; the
    last step is peeled. With ``splits > 1`` (split-K; the caller checked :func:`split_reason`
    and that ``splits * BK`` divides ``K``) the grid's z runs ``splits`` slices of ``k`` too, each
    block's sums start from 0 and go to a workspace, and a point-wise nest after the launch adds
    them to the initial values in slice order and runs the epilogue, a thread per element (blocks
    of ``gpu.default_threads_per_block``)."""
    nest = c.nest
    loc = nest.location
    host = host or HostPlan(nest.parent)
    b, m, n, k_all = c.sizes
    k = k_all // splits  # the k of each block
    tx_n, ty_n = tiles.threads
    grid = [host.constant(-(-n // tiles.BN)), host.constant(-(-m // tiles.BM)), host.constant(b * splits)]
    workspace = None
    if splits > 1:
        shape = (splits, *(c.trips[lp] + c.lows.get(lp, 0) for lp in c.band))
        workspace = AllocOp(memref(shape, c.red.results[0].type), location=loc, name_hint="partial_sums")
        nest.parent.insert_before(nest, workspace)
    launch = new_launch(host, nest, grid, (tx_n, ty_n, 1))
    bx, by, bz, tx, ty = launch.body.args[:5]
    e = _Emitter(launch.body.ops[-1], loc)
    batch_at, koff, slice_at = bz, None, None
    if splits > 1:
        batch_at = e.apply(_d(0) % b, [bz], "batch") if b > 1 else None
        slice_at = e.apply(_d(0).floordiv(b), [bz], "slice")
        koff = e.apply(_d(0) * k, [slice_at], "k_first")
    kernel = _Kernel(c, tiles, e, e.apply(_d(1) * tx_n + _d(0), [tx, ty], "tid"), bx, by, tx, ty,
                     e.ivs(c.batch, c.trips, batch_at, c.lows) if c.batch else {}, koff)
    kernel.rows = [e.apply(_d(0) * tiles.BM + tiles.offset(_d(1), r, "A"), [by, ty], f"i{r}") for r in range(tiles.TM)]
    kernel.cols = [e.apply(_d(0) * tiles.BN + tiles.offset(_d(1), q, "B"), [bx, tx], f"j{q}") for q in range(tiles.TN)]
    kernel.row_ivs = [e.ivs(c.rows, c.trips, v, c.lows) for v in kernel.rows]
    kernel.col_ivs = [e.ivs(c.cols, c.trips, v, c.lows) for v in kernel.cols]
    for ld in kernel.loads:
        p = tiles.BM if c.packs[ld] == "A" else tiles.BN
        row = p + (SHARED_PAD if kernel.k_fast(ld) else 0)
        name = read_load(ld).memref.name_hint or "x"
        kernel.shared[ld] = e.add(AllocOp(memref((tiles.BK, row), ld.results[0].type, WORKGROUP), location=loc,
                                              name_hint=f"{name}_shared")).results[0]
    for ld in kernel.loads:  # each copy's row/column, once, before the k loop
        for p_expr, _ in kernel.copies(ld):
            kernel.row_or_col(c.packs[ld], p_expr)
    zero_sum = _identity(e, c) if splits > 1 else None
    inits = []  # the ops before the reduction, per element of the register tile
    pre_results = [v for op in c.pre for v in op.results]
    for r in range(tiles.TM):
        for q in range(tiles.TN):
            mapping = kernel.element(r, q)
            e.guarded(kernel.inside(r, q) if _accesses_memory(c.pre) else None, c.pre, mapping, pre_results)
            kernel.pre_values[(r, q)] = {v: mapping[v] for v in pre_results}
            inits.append(zero_sum or mapping.get(c.red.inits[0], c.red.inits[0]))
    finals = _k_loops(kernel, e, host, inits, k, prefetch)
    for r in range(tiles.TM):  # the epilogue per element
        for q in range(tiles.TN):
            mapping = kernel.element(r, q)
            mapping[c.red.results[0]] = finals[r * tiles.TN + q]
            at = e
            inside = kernel.inside(r, q)
            if inside is not None:  # only inside the sizes (and the band's domain)
                guard = e.add(AffineIfOp(inside[0], inside[1], location=loc))
                at = _Emitter(guard.then_block.ops[-1], loc)
            if workspace is None:
                for op in c.post:
                    at.add(op.clone(mapping))
                continue
            index = [slice_at] + [mapping[lp.induction_var] for lp in c.band]
            at.add(AffineStoreOp(finals[r * tiles.TN + q], workspace.results[0], AffineMap.identity(len(index)),
                                 index, location=loc))
    if workspace is not None:
        add_partial_sums(c, workspace.results[0], splits, host, gpu.default_threads_per_block)
    nest.erase()
    return launch


def shared_bytes(c: Contraction, tiles: TileConfig) -> int:
    """The shared memory of the kernel of ``c`` with ``tiles``: a ``BK x (BM or BN)`` buffer per
    packed read (rows padded by :data:`SHARED_PAD` for an operand copied along k, counted for
    all)."""
    total = 0
    for op in c.inner.body.ops:
        if op in c.packs:
            p = tiles.BM if c.packs[op] == "A" else tiles.BN
            total += tiles.BK * (p + SHARED_PAD) * max(op.results[0].type.width // 8, 1)
    return total


def _identity(e: _Emitter, c: Contraction) -> Value:
    """The first value of each slice's sums: the identity of the reduction's combining op."""
    rtype = c.red.results[0].type
    kind = analysis.iter_arg_reduction(c.inner, 0).kind
    return e.add(ConstantOp.of(analysis.reduction_identity(kind, rtype), rtype, location=e.location)).results[0]


def _k_loops(kernel: _Kernel, e: _Emitter, host: HostPlan, inits: list[Value], k: int, prefetch: bool) -> list[Value]:
    """The loops over the k steps of one block (``k`` values of the reduction from the block's
    first): shared copies, barriers, register-tile steps; the sums of the register tile."""
    tiles, loc = kernel.tiles, e.location
    if prefetch:
        zero = host.constant(0)
        regs = [v for ld in kernel.loads for v in kernel.global_loads(e, ld, zero)]
        steps = -(-k // tiles.BK) - 1  # full steps in the loop; the last (maybe partial) one peeled
        loop = e.add(AffineForOp(0, [], steps * tiles.BK, [], tiles.BK, inits + regs, iv_name="kt", location=loc))
        body = _Emitter(_marker(loop), loc)
        kt = loop.induction_var
        accs, held = list(loop.body.args[1:1 + len(inits)]), list(loop.body.args[1 + len(inits):])
        kernel.store_shared(body, held)
        body.add(BarrierOp(location=loc))
        nxt = body.apply(_d(0) + tiles.BK, [kt], "kt_next")
        fetched = [v for ld in kernel.loads for v in kernel.global_loads(body, ld, nxt)]
        accs = kernel.compute(body, kt, accs)
        body.add(BarrierOp(location=loc))
        body.add(AffineYieldOp(accs + fetched, location=loc))
        body.anchor.erase()
        last = host.constant(steps * tiles.BK)
        kernel.store_shared(e, list(loop.results[len(inits):]))
        e.add(BarrierOp(location=loc))
        return kernel.compute(e, last, list(loop.results[:len(inits)]), last_step=k - steps * tiles.BK)
    loop = e.add(AffineForOp(0, [], k, [], tiles.BK, inits, iv_name="kt", location=loc))
    body = _Emitter(_marker(loop), loc)
    kt = loop.induction_var
    values = [v for ld in kernel.loads for v in kernel.global_loads(body, ld, kt)]
    kernel.store_shared(body, values)
    body.add(BarrierOp(location=loc))
    accs = kernel.compute(body, kt, list(loop.body.args[1:]), k_bound=k)
    body.add(BarrierOp(location=loc))
    body.add(AffineYieldOp(accs, location=loc))
    body.anchor.erase()
    return list(loop.results)


#: Threads per block of the launch adding split-K slices on the default target.
COMBINE_THREADS = DEFAULT_GPU.default_threads_per_block


def add_partial_sums(c: Contraction, workspace: Value, splits: int, host: HostPlan, threads: int) -> None:
    """After the tiled launch: a launch with a thread per element of the band (its linear index
    delinearized into the band's induction values) running the ops before the reduction, the
    initial value combined with the slices' sums in slice order (the reduction's own combining
    op), then the epilogue; then the workspace freed."""
    loc = c.nest.location
    total = math.prod(c.trips[lp] for lp in c.band)
    one = host.constant(1)
    launch = new_launch(host, c.nest, [host.constant(-(-total // threads)), one, one], (threads, 1, 1))
    bx, tx = launch.body.args[0], launch.body.args[3]
    e = _Emitter(launch.body.ops[-1], loc)
    linear = e.apply(_d(0) * threads + _d(1), [bx, tx], "element")
    if total % threads:
        guard = e.add(AffineIfOp(IntegerSet(1, 0, (AffineExpr.constant(total - 1) - _d(0),)), [linear], location=loc))
        e = _Emitter(guard.then_block.ops[-1], loc)
    mapping = e.ivs(c.band, c.trips, linear, c.lows)
    if c.triangular:
        cond = IntegerSet(len(c.band), 0, tuple(c.domain))
        guard = e.add(AffineIfOp(cond, [mapping[lp.induction_var] for lp in c.band], location=loc))
        e = _Emitter(guard.then_block.ops[-1], loc)
    for op in c.pre:
        e.add(op.clone(mapping))
    combine = analysis.iter_arg_reduction(c.inner, 0).ops[0]
    acc_arg = c.inner.body.args[1]
    term = next(v for v in combine.operands if v is not acc_arg)
    acc = mapping.get(c.red.inits[0], c.red.inits[0])
    ivs = [mapping[lp.induction_var] for lp in c.band]
    for s in range(splits):
        m = AffineMap(len(ivs), 0, (AffineExpr.constant(s), *(_d(i) for i in range(len(ivs)))))
        part = e.add(AffineLoadOp(workspace, m, ivs, location=loc))
        acc = e.add(combine.clone({acc_arg: acc, term: part.results[0]})).results[0]
    mapping[c.red.results[0]] = acc
    for op in c.post:
        e.add(op.clone(mapping))
    c.nest.parent.insert_after(c.nest, DeallocOp([workspace], location=loc))


def _marker(loop: AffineForOp) -> Operation:
    """A placeholder at the end of the body of a loop with ``iter_args`` (no yield yet): ops go
    before it, the real yield last, then the caller erases it."""
    return _marker_of(loop.body)


def _marker_of(block) -> Operation:
    """A placeholder at the end of ``block`` (see :func:`_marker`)."""
    marker = AffineYieldOp([], location=block.parent_op.location if block.parent_op else None)
    block.append(marker)
    return marker


def _accesses_memory(ops: list[Operation]) -> bool:
    """Whether some op of ``ops`` may access memory (so it must not run past the sizes)."""
    return any(not is_memory_effect_free(op) for op in ops)


class _Kernel:
    """What the parts of one contraction kernel share: the plan, the tiles, thread and block ids,
    each thread's rows and columns (linear, and as the band's induction values), the shared
    buffers, and the row/column parts of each copy (computed once, before the k loop)."""

    def __init__(self, c: Contraction, tiles: TileConfig, top: _Emitter, tid: Value, bx: Value, by: Value,
                 tx: Value, ty: Value, base: dict, koff: Value | None = None):
        self.c, self.tiles, self.top, self.tid, self.bx, self.by, self.tx, self.ty = c, tiles, top, tid, bx, by, tx, ty
        self.base = base
        self.koff = koff  # the block's first k (split-K), or None: 0
        self.loads = [op for op in c.inner.body.ops if op in c.packs]
        self.shared: dict[Operation, Value] = {}
        self.rows: list[Value] = []
        self.cols: list[Value] = []
        self.row_ivs: list[dict] = []
        self.col_ivs: list[dict] = []
        self.pre_values: dict[tuple[int, int], dict[Value, Value]] = {}  # the ops before the reduction, cloned
        self._par: dict[tuple[str, AffineExpr], tuple[Value, dict]] = {}
        self._copies: dict[Operation, list[tuple[AffineExpr, AffineExpr]]] = {}

    def element(self, r: int, q: int) -> dict:
        """The value mapping for element (r, q) of the thread's register tile (with the clones of
        the ops before the reduction, once made: the reduction and the epilogue may use them)."""
        return {**self.base, **self.row_ivs[r], **self.col_ivs[q], **self.pre_values.get((r, q), {})}

    def inside(self, r: int, q: int) -> tuple[IntegerSet, list[Value]] | None:
        """The condition (and its operands) that element (r, q) of the register tile lies inside
        the sizes and the band's domain, or None when every element of every block does."""
        c, tiles = self.c, self.tiles
        _, m, n, _ = c.sizes
        nb = len(c.band)
        cons = list(c.domain)
        if m % tiles.BM:
            cons.append(AffineExpr.constant(m - 1) - _d(nb))
        if n % tiles.BN:
            cons.append(AffineExpr.constant(n - 1) - _d(nb + 1))
        if not cons:
            return None
        mapping = self.element(r, q)
        operands = [mapping[lp.induction_var] for lp in c.band] + [self.rows[r], self.cols[q]]
        return IntegerSet(nb + 2, 0, tuple(cons)), operands

    def side(self, side: str) -> tuple[int, int, Value]:
        """(size, block tile, block id) of the rows (side "A") or the columns ("B")."""
        _, m, n, _ = self.c.sizes
        return (m, self.tiles.BM, self.by) if side == "A" else (n, self.tiles.BN, self.bx)

    def partial(self, ld: Operation) -> bool:
        """Whether some copies of ``ld`` fall past a size (M or N for its side, or K)."""
        size, tile, _ = self.side(self.c.packs[ld])
        return bool(size % tile or self.c.sizes[3] % self.tiles.BK)

    def _last_uses(self, ld: Operation) -> set[Value]:
        leaves: list[Value] = []
        subs = access_subscripts(read_load(ld), leaves)
        return {leaves[i] for i in range(len(leaves)) if subs[-1].coefficient_of_dim(i) != 0}

    def k_fast(self, ld: Operation) -> bool:
        """Whether the operand's contiguous (last) subscript moves with ``k`` and not with its
        side's innermost row/column loop: the threads then copy along ``k``."""
        last = self._last_uses(ld)
        side_inner = self.c.side_loops(self.c.packs[ld])[-1].induction_var
        return side_inner not in last and any(lp.induction_var in last for lp in self.c.red_loops)

    def _layout(self, ld: Operation) -> tuple[int, int, AffineExpr, AffineExpr]:
        """(p_size, per_thread, p, kk) of a packed load, p and kk over (copy index, tid): the
        threads' global reads run along the operand's contiguous dimension."""
        tiles = self.tiles
        p_size = self.side(self.c.packs[ld])[1]
        idx = _d(0) * tiles.thread_count + _d(1)
        if self.k_fast(ld):
            return p_size, tiles.BK * p_size // tiles.thread_count, idx.floordiv(tiles.BK), idx % tiles.BK
        return p_size, tiles.BK * p_size // tiles.thread_count, idx % p_size, idx.floordiv(p_size)

    def vector_lanes(self, ld: Operation) -> int:
        """Lanes of the 16-byte copies of a packed load (1: scalar copies): a plain f32 load of
        one row (column) loop, contiguous along it (last subscript ``p + ...`` with no
        floordiv/mod of ``p``, the others free of it), whose per-thread share is a multiple of 4."""
        c = self.c
        par = c.side_loops(c.packs[ld])
        if (not isinstance(ld, AffineLoadOp) or len(par) != 1 or self.k_fast(ld) or ld.result.type != f32
                or self.partial(ld)):
            return 1
        leaves: list[Value] = []
        subs = access_subscripts(ld, leaves)
        ppos = next((i for i, v in enumerate(leaves) if v is par[0].induction_var), None)
        p_size, per_thread, _, _ = self._layout(ld)
        if (ppos is None or subs[-1].coefficient_of_dim(ppos) != 1 or any(ppos in e.used_dims() for e in subs[:-1])
                or any(ppos in t.expr.used_dims() for t in subs[-1].div_terms())):
            return 1
        return VECTOR if per_thread % VECTOR == 0 and p_size % VECTOR == 0 else 1

    def copies(self, ld: Operation) -> list[tuple[AffineExpr, AffineExpr]]:
        """(p, kk) over (tid) of each copy of this thread (the first element of a vector copy)."""
        if ld not in self._copies:
            self._copies[ld] = self._plan_copies(ld)
        return self._copies[ld]

    def _plan_copies(self, ld: Operation) -> list[tuple[AffineExpr, AffineExpr]]:
        p_size, per_thread, p_expr, kk_expr = self._layout(ld)
        n = self.vector_lanes(ld)
        if n == 1:
            at = [[AffineExpr.constant(cp), _d(0)] for cp in range(per_thread)]
            return [(p_expr.replace(a), kk_expr.replace(a)) for a in at]
        idx = AffineExpr.constant(0) + _d(0)
        out = []
        for cp in range(per_thread // n):
            at = idx + cp * self.tiles.thread_count
            out.append(((at % (p_size // n)) * n, at.floordiv(p_size // n)))
        return out

    def row_or_col(self, side: str, p_expr: AffineExpr) -> tuple[Value, dict]:
        """The global row (column) of a copy at block offset ``p_expr(tid)`` and the band's
        induction values there (emitted at the top of the kernel by the first call)."""
        key = (side, p_expr)
        if key not in self._par:
            c = self.c
            _, p_size, block_id = self.side(side)
            g = self.top.apply(_d(1) * p_size + p_expr, [self.tid, block_id], "g")
            self._par[key] = (g, self.top.ivs(c.side_loops(side), c.trips, g, c.lows))
        return self._par[key]

    def global_loads(self, e: _Emitter, ld: Operation, kt: Value) -> list[Value]:
        """This thread's share of what ``ld`` reads for the block at k step ``kt`` (one value per
        copy: scalars, or 16-byte vectors)."""
        c = self.c
        n = self.vector_lanes(ld)
        out = []
        for p_expr, kk_expr in self.copies(ld):
            g_par, par_ivs = self.row_or_col(c.packs[ld], p_expr)
            g_k = self.k_index(e, kk_expr, self.tid, kt, "gk")
            mapping = {**self.base, **par_ivs, **e.ivs(c.red_loops, c.trips, g_k)}
            if n == 1 and self.partial(ld):
                out.append(self._guarded_load(e, ld, mapping, g_par, g_k))
                continue
            if n == 1:
                out.append(e.add(ld.clone(mapping)).results[0])
                continue
            operands = [mapping.get(v, v) for v in ld.indices]
            out.append(e.add(AffineVectorLoadOp(vector((n,), ld.result.type), ld.memref, ld.map, operands,
                                                location=e.location)).results[0])
        return out

    def _guarded_load(self, e: _Emitter, ld: Operation, mapping: dict, g_par: Value, g_k: Value) -> Value:
        """``ld`` at (g_par, g_k) when both lie inside the sizes, else 0 (only the sizes that
        tiles do not divide are checked)."""
        k = self.c.sizes[3]
        size, tile, _ = self.side(self.c.packs[ld])
        bounds = [AffineExpr.constant(size - 1) - _d(0)] if size % tile else []
        bounds += [AffineExpr.constant(k - 1) - _d(1)] if k % self.tiles.BK else []
        cond = IntegerSet(2, 0, tuple(bounds))
        rtype = ld.results[0].type
        guard = e.add(AffineIfOp(cond, [g_par, g_k], [rtype], with_else=True, location=e.location))
        value = ld.clone(mapping)
        guard.then_block.append(value)
        guard.then_block.append(AffineYieldOp([value.results[0]], location=e.location))
        zero = ConstantOp.of(0, rtype, location=e.location)
        guard.else_block.append(zero)
        guard.else_block.append(AffineYieldOp([zero.results[0]], location=e.location))
        return guard.results[0]

    def store_shared(self, e: _Emitter, values: list[Value]) -> None:
        """Store the values of :meth:`global_loads` (every packed load, in order) to shared memory."""
        k = 0
        for ld in self.loads:
            vector_copy = self.vector_lanes(ld) > 1
            for p_expr, kk_expr in self.copies(ld):
                m = AffineMap(1, 0, (kk_expr, p_expr))
                cls = AffineVectorStoreOp if vector_copy else AffineStoreOp
                e.add(cls(values[k], self.shared[ld], m, [self.tid], location=e.location))
                k += 1

    def compute(self, e: _Emitter, kt: Value, accs: list[Value], *, last_step: int | None = None,
                k_bound: int | None = None) -> list[Value]:
        """The BK steps of the register tile from shared memory (a loop over ``kk`` carrying
        ``accs``): packed values read once per row/column, then the reduction body per element.
        ``last_step``: a step of that many iterations (the last, when BK does not divide K);
        ``k_bound``: stop at ``kt + kk = K`` (steps in a loop over ``kt``). Returns the sums."""
        c, tiles = self.c, self.tiles
        if k_bound is not None and k_bound % tiles.BK:
            ub = AffineMap(1, 0, (AffineExpr.constant(tiles.BK), AffineExpr.constant(k_bound) - _d(0)))
            loop = e.add(AffineForOp(0, [], ub, [kt], 1, accs, iv_name="kk", location=e.location))
        else:
            steps = tiles.BK if last_step is None else last_step
            loop = e.add(AffineForOp(0, [], steps, [], 1, accs, iv_name="kk", location=e.location))
        body = _Emitter(_marker(loop), e.location)
        kk = loop.induction_var
        k_ivs = body.ivs(c.red_loops, c.trips, self.k_index(body, _d(0), kk, kt, "k")) if self._k_used() else {}
        packed: dict[Operation, list[Value]] = {}
        for ld in self.loads:
            side = c.packs[ld]
            count, t = (tiles.TM, self.ty) if side == "A" else (tiles.TN, self.tx)
            packed[ld] = [body.add(AffineLoadOp(self.shared[ld],
                                                    AffineMap(2, 0, (_d(0), tiles.offset(_d(1), p, side))), [kk, t],
                                                    location=e.location)).results[0] for p in range(count)]
        out = []
        for r in range(tiles.TM):
            for q in range(tiles.TN):
                mapping = {**self.element(r, q), **k_ivs}
                mapping[c.inner.body.args[1]] = loop.body.args[1 + r * tiles.TN + q]
                for ld in self.loads:
                    mapping[ld.results[0]] = packed[ld][r if c.packs[ld] == "A" else q]
                for op in c.inner.body.ops:
                    if isinstance(op, AffineYieldOp):
                        out.append(mapping.get(op.operands[0], op.operands[0]))
                    elif op in c.direct:
                        body.guarded(self.inside(r, q), [op], mapping, list(op.results))
                    elif op not in c.packs:
                        body.add(op.clone(mapping))
        body.add(AffineYieldOp(out, location=e.location))
        body.anchor.erase()
        return list(loop.results)

    def k_index(self, e: _Emitter, expr: AffineExpr, x: Value, kt: Value, name: str) -> Value:
        """``kt + expr(x)`` plus the block's first k under split-K."""
        if self.koff is None:
            return e.apply(_d(1) + expr, [x, kt], name)
        return e.apply(_d(1) + expr + _d(2), [x, kt, self.koff], name)

    def _k_used(self) -> bool:
        """Whether the reduction body uses the chain's induction values outside the packed reads."""
        ivs = {lp.induction_var for lp in self.c.red_loops}
        for op in self.c.inner.body.ops:
            if op in self.c.packs:
                continue
            for inner in op.walk():
                if any(v in ivs for v in inner.operands):
                    return True
        return False


# -- the pass --------------------------------------------------------------------------------------------------
@register_pass
@dataclass(frozen=True)
class GpuSchedule(Pass):
    """``gpu-schedule``: contraction nests as shared-memory tiled kernels (see the module)."""

    name: ClassVar[str] = PASS
    summary: ClassVar[str] = "Contractions as gpu.launch kernels: block tiles packed in shared memory, register tiles"

    target: str = option(DEFAULT_GPU.name, "the GPU to choose tile sizes for (a name of analysis.targets)")
    tile_sizes: tuple[int, ...] = option((), "force the tiles BM,BN,BK,TM,TN (default: chosen for the target)")
    prefetch: bool = option(True, "software pipelining: load the next k step into registers during the current one")
    split_k: int = option(0, "slices of k run by separate blocks, their sums added after (0: chosen for the target, "
                             "1: never)")

    def __post_init__(self) -> None:
        check_schedule_options(self.tile_sizes, "BM,BN,BK,TM,TN", self.split_k)

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        gpu = gpu_target(self.target)
        host = None
        for nest in top_level_loops(func):
            c = plan_contraction(nest)
            plan = c if isinstance(c, str) else self._schedule(c, gpu)
            if isinstance(plan, str):
                ctx.note(nest, f"left for gpu-map: {plan}")
                continue
            tiles, splits, why = plan
            if why:
                ctx.note(nest, why)
            host = host or HostPlan(func.body)
            try:
                launch = schedule_contraction(c, tiles, host, prefetch=self.prefetch, splits=splits, gpu=gpu)
            except TransformError as err:  # pragma: no cover - the plan checked what the build needs
                ctx.refused(nest, err)
                continue
            ctx.applied(launch, f"contraction {c.describe()} of ({c.loops_of(c.rows)}, {c.loops_of(c.cols)}) over "
                                f"({c.loops_of(c.red_loops)}): {tiles.describe()}, {len(c.packs)} operand(s) packed in "
                                f"shared memory" + (f", k split in {splits} slices" if splits > 1 else ""))

    def _schedule(self, c: Contraction, gpu: GPUTarget) -> tuple[TileConfig, int, str | None] | str:
        """(tiles, k slices, a note when a forced split-k cannot be used) for ``c``: the options'
        or the cost model's; or why ``c`` is left for gpu-map."""
        model_split = self.split_k == 0 and split_reason(c) is None
        if self.tile_sizes:
            tiles = forced_tiles(self.tile_sizes, gpu)
            if tiles is None:
                return (f"tile-sizes={','.join(map(str, self.tile_sizes))} give no valid block (whole copies per "
                        f"thread, TM/TN multiples of {GROUP} or below it, at most {gpu.max_threads_per_block} threads)")
            splits = best_split(c.sizes, tiles, gpu, model_split)[1]
        else:
            tiles, splits = choose_schedule(c.sizes, gpu, split=model_split, k_inner=c.k_inner)
        reason = partial_tile_reason(c, tiles)
        if reason is not None:
            return reason
        need = shared_bytes(c, tiles)
        if need > gpu.shared_memory_per_block_optin:
            return (f"{tiles.describe()} needs {need} bytes of shared memory, {gpu.name} has "
                    f"{gpu.shared_memory_per_block_optin} per block")
        if self.split_k <= 1:
            return tiles, splits, None
        why = split_reason(c)
        steps = c.sizes[3] // tiles.BK if c.sizes[3] % tiles.BK == 0 else 0
        if why is None and (not steps or steps % self.split_k):
            why = f"{self.split_k} slices do not divide the k steps ({c.sizes[3]} by {tiles.BK})"
        return (tiles, 1, f"split-k={self.split_k} not used: {why}") if why else (tiles, self.split_k, None)
