"""What ``gpu-schedule`` recognizes and how it sizes the tiles: contraction nests and tiles.

A *contraction nest* is what fusion and scalar replacement make of ``C = epilogue(A @ B)`` and of
a convolution: a perfect band of parallel loops (constant bounds from 0, step 1; or step 1 and
bounds affine in the outer band loops, a *triangular* band run over its constant bounding box
``analysis.band_box`` with its bounds as a guard, when the domain's projections onto the rows
and onto the columns fill their box, so packed copies read only what the band reads) whose innermost
body holds one *reduction chain* -- loops nested perfectly inside each other (constant bounds from
0, step 1), each carrying one value in ``iter_args`` into the next -- between point-wise ops (the
initial value before it, an epilogue and stores after it). The innermost reduction body holds
affine loads, *guarded reads* (an ``affine.if`` yielding a load inside, constants outside: a
zero-padded convolution input) and arithmetic.

The band's loops fall in three groups, by the operands that vary with the reduction: the
**columns** (the loops used by operands that use the innermost band loop), the **rows** (those of
the other operands) and the **batch** (the loops both use, or neither). Each group runs as one
linear index in band order (``(%n, %h, %w)`` of an NCHW convolution as ``n * Ho * Wo + h * Wo +
w``), the reduction chain as one ``k`` in nest order, so a matmul is ``M x N x K`` and a
convolution an implicit GEMM (``F x N*Ho*Wo x C*KH*KW`` for NCHW). Operands varying with ``k`` and
the rows only (side "A") or the columns only (side "B") are packed into shared memory; other reads
of the reduction run per element ("direct").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import analysis
from affine_ir import AffineExpr, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineLoadOp, AffineYieldOp
from affine_ir.dialects.affine_symbols import constant_index_value
from affine_ir.dialects.arith import ConstantOp
from affine_ir.traits import is_memory_effect_free
from analysis.gpu_models import GPUCostModel
from analysis.loops import perfect_band
from analysis.targets import DEFAULT_GPU, GPUTarget

from ..loop_utils import access_subscripts, defined_in, loop_name, loops_text

#: Rows (columns) of a register tile held in consecutive registers and read as one 16-byte word.
GROUP = 4
#: Most band loops a contraction may have.
MAX_BAND = 6

# The cost model's constants and the tile candidates are data of the target: the fitted model
# of ``GPUTarget.schedule_model`` (:mod:`analysis.gpu_models`; the H200's in
# ``analysis/data/gpu_model_h200.json``, with its provenance). The names below are that model's
# values on the default target, kept for scripts (``benchmarks/``) and tests that import them.
#: The H200 fit (the model of the default target).
COST = DEFAULT_GPU.schedule_model
#: The record type of a fitted model (the old name of :class:`analysis.gpu_models.GPUCostModel`).
CostConstants = GPUCostModel
#: (BM, BN, BK, TM, TN) candidates of the default target, largest first; each has 256 threads.
TILE_CONFIGS = COST.tile_configs
#: Most k slices (split-K), and the fewest k steps a slice may have (default target).
MAX_SPLITS = COST.max_splits
MIN_SLICE_STEPS = COST.min_slice_steps
#: The largest k step :func:`aligned_step` may choose (default target).
MAX_ALIGNED_BK = COST.max_aligned_bk


@dataclass(frozen=True)
class TileConfig:
    """Block tile ``BM x BN``, reduction step ``BK``, register tile ``TM x TN`` per thread."""

    BM: int
    BN: int
    BK: int
    TM: int
    TN: int

    @property
    def threads(self) -> tuple[int, int]:
        """Block size (x, y): columns of register tiles, rows of register tiles."""
        return self.BN // self.TN, self.BM // self.TM

    @property
    def thread_count(self) -> int:
        x, y = self.threads
        return x * y

    def offset(self, t: AffineExpr, p: int, side: str) -> AffineExpr:
        """Row (side "A") or column ("B") ``p`` of thread ``t``'s register tile within the block
        tile: runs of ``GROUP`` consecutive rows/columns, the runs of the threads interleaved
        (``t * GROUP + p`` for the first run, then the next run ``BM / runs`` further), so a
        warp reads each run as consecutive 16-byte words of shared memory (no bank conflict)."""
        size, tile = (self.BM, self.TM) if side == "A" else (self.BN, self.TN)
        group = min(GROUP, tile)
        runs = tile // group
        return t * group + (p // group) * (size // runs) + p % group

    def describe(self) -> str:
        x, y = self.threads
        return (f"block tile {self.BM}x{self.BN}, k step {self.BK}, register tile {self.TM}x{self.TN}, "
                f"{x}x{y} threads")


@dataclass
class Contraction:
    """A recognized contraction nest (see the module docstring)."""

    nest: AffineForOp
    batch: list[AffineForOp]
    rows: list[AffineForOp]
    cols: list[AffineForOp]
    red_loops: list[AffineForOp]  # the reduction chain, outermost first
    pre: list[Operation]
    post: list[Operation]
    packs: dict[Operation, str]  # read -> "A" (varies with rows) or "B" (with cols)
    sizes: tuple[int, int, int, int]  # batch, M, N, K
    trips: dict[AffineForOp, int]  # loop -> trip count, for the band and the chain
    direct: list[Operation] = field(default_factory=list)  # reads of the reduction done per element
    band: list[AffineForOp] = field(default_factory=list)  # the band, outermost first
    lows: dict[AffineForOp, int] = field(default_factory=dict)  # a band loop's first value, when not 0
    domain: list[AffineExpr] = field(default_factory=list)  # ``>= 0`` over the band's IVs (d<k>: band[k])

    @property
    def red(self) -> AffineForOp:
        """The outermost reduction loop: its ``iter_args`` init is the initial value, its result the sum."""
        return self.red_loops[0]

    @property
    def inner(self) -> AffineForOp:
        """The innermost reduction loop, whose body computes one term."""
        return self.red_loops[-1]

    @property
    def k_inner(self) -> int:
        """The trip count of the reduction chain without its outermost loop."""
        return math.prod(self.trips[lp] for lp in self.red_loops[1:])

    def side_loops(self, side: str) -> list[AffineForOp]:
        return self.rows if side == "A" else self.cols

    @property
    def triangular(self) -> bool:
        """Whether the band runs over part of its bounding box (``domain`` says which part)."""
        return bool(self.domain)

    def describe(self) -> str:
        b, m, n, k = self.sizes
        shape = "triangular " if self.triangular else ""
        return f"({shape}{'batch ' + str(b) + ', ' if self.batch else ''}{m}x{n}, k {k})"

    def loops_of(self, loops: list[AffineForOp]) -> str:
        return ", ".join(loop_name(lp) for lp in loops)


def delinearized(loops: list[AffineForOp], trips: dict[AffineForOp, int],
                 lows: dict[AffineForOp, int] | None = None) -> list[AffineExpr]:
    """Each loop's induction value as an expression of ``d0``, the linear index of ``loops`` (the
    first outermost): ``low + (d0 floordiv stride) mod trip``, without the parts that are
    identities (``low``: the loop's first value in ``lows``, else 0)."""
    lows = lows or {}
    out = []
    stride = math.prod(trips[lp] for lp in loops)
    for i, lp in enumerate(loops):
        stride //= trips[lp]
        e = AffineExpr.dim(0)
        if stride > 1:
            e = e.floordiv(stride)
        if i > 0:
            e = e % trips[lp]
        out.append(e + lows.get(lp, 0))
    return out


def read_load(op: Operation) -> AffineLoadOp:
    """The load of a packed read: ``op`` itself, or the load inside a guarded read."""
    if isinstance(op, AffineLoadOp):
        return op
    return next(o for o in op.then_block.ops if isinstance(o, AffineLoadOp))


def _is_guarded_read(op: Operation) -> bool:
    """An ``affine.if`` with one result whose then-branch loads (and computes) and whose
    else-branch yields constants: a read that is zero (or another constant) outside a window."""
    if not isinstance(op, AffineIfOp) or len(op.results) != 1 or op.else_block is None:
        return False
    then = [o for o in op.then_block.ops if not isinstance(o, AffineYieldOp)]
    other = [o for o in op.else_block.ops if not isinstance(o, AffineYieldOp)]
    loads = [o for o in then if isinstance(o, AffineLoadOp)]
    plain = all(not o.regions and _load_or_compute(o) for o in then)
    return len(loads) == 1 and plain and all(isinstance(o, ConstantOp) for o in other)


def _load_or_compute(op: Operation) -> bool:
    """An ``affine.load``, or an op without memory effects (arithmetic); not a store, another
    access or an op of unknown effects (a call)."""
    return isinstance(op, AffineLoadOp) or is_memory_effect_free(op)


def _constant_loop(loop: AffineForOp) -> int | None:
    """The trip count of a loop from 0 with step 1 and a constant upper bound, else None."""
    if loop.step != 1 or loop.lower_bound_map.results != (AffineExpr.constant(0),):
        return None
    return analysis.constant_trip_count(loop)


def _leaves(op: Operation) -> list[Value]:
    """The values a read uses: the subscripts of a load; for a guarded read its condition's
    operands, its load's subscripts and every value its branches use from outside it."""
    leaves: list[Value] = []
    if isinstance(op, AffineIfOp):
        leaves += op.operands
        for inner in op.walk():
            if isinstance(inner, AffineLoadOp):
                access_subscripts(inner, leaves)
            if inner is not op:
                leaves += [v for v in inner.operands if not defined_in(v, op)]
    else:
        access_subscripts(op, leaves)
    return leaves


def _uses(op: Operation, loops: dict[Value, AffineForOp], nest: Operation) -> set[AffineForOp] | None:
    """The loops of the band and chain whose IVs a read uses; None when it uses another value
    computed in ``nest``."""
    out = set()
    for v in _leaves(op):
        if v in loops:
            out.add(loops[v])
        elif defined_in(v, nest):
            return None
    return out


def _chain(red: AffineForOp) -> list[AffineForOp]:
    """``red`` and the reduction loops perfectly nested in it, each one's single carried value
    the next one's init and the next one's result what it yields."""
    chain = [red]
    while True:
        loop = chain[-1]
        ops = [o for o in loop.body.ops if not isinstance(o, AffineYieldOp)]
        if len(ops) != 1 or not isinstance(ops[0], AffineForOp):
            return chain
        inner, term = ops[0], loop.body.ops[-1]
        if (len(inner.iter_args) != 1 or inner.inits[0] is not loop.body.args[1]
                or term.operands[0] is not inner.results[0]):
            return chain
        chain.append(inner)


def plan_contraction(nest: AffineForOp) -> Contraction | str:
    """The contraction of ``nest`` (see the module docstring), or why it is not one."""
    band = perfect_band(nest)
    if not 2 <= len(band) <= MAX_BAND:
        return f"{loops_text(band)}: a contraction needs a band of 2 to {MAX_BAND} parallel loops"
    box = _band_box(band)
    if isinstance(box, str):
        return box
    trips, lows, domain = box
    for lp in band:
        if not analysis.is_parallel(lp):
            return f"({loop_name(lp)}) is not parallel"
    body = [op for op in band[-1].body.ops if not isinstance(op, AffineYieldOp)]
    loops = [op for op in body if isinstance(op, AffineForOp)]
    if len(loops) != 1 or len(loops[0].iter_args) != 1:
        return f"the body of ({loop_name(band[-1])}) must hold one reduction loop carrying one value"
    chain = _chain(loops[0])
    for lp in chain:
        trips[lp] = _constant_loop(lp)
        if trips[lp] is None:
            return f"the reduction ({loop_name(lp)}) must run from 0 by 1 to a constant"
    for op in (o for o in body if o is not loops[0]):
        if op.regions:
            return f"'{op.name}' next to the reduction has regions"
    roles = {lp.induction_var: lp for lp in band + chain}
    reads, why = _reduction_reads(chain[-1], roles, nest)
    if why:
        return why
    groups = _groups(band, chain, reads)
    if isinstance(groups, str):
        return groups
    batch, rows, cols = groups
    if domain:
        why = _box_filled(band, batch, rows, cols)
        if why:
            return why
    packs, direct = _sides(reads, set(chain), set(rows), set(cols))
    k_pos = body.index(loops[0])

    def size(group):
        return math.prod(trips[lp] for lp in group)

    sizes = (size(batch), size(rows), size(cols), size(chain))
    return Contraction(nest, batch, rows, cols, chain, body[:k_pos], body[k_pos + 1:], packs, sizes, trips, direct,
                       band, lows, domain)


def _band_box(band: list[AffineForOp]) -> tuple[dict, dict, list[AffineExpr]] | str:
    """(trip counts, first values other than 0, the bounds as ``>= 0`` constraints over the
    band's IVs) of the band's bounding box; the constraints only for the loops that do not run
    over their whole box (a triangular band: ``for i { for j = 0 to i + 1 }``), or why the band
    has no constant box."""
    trips = {lp: _constant_loop(lp) for lp in band}
    if None not in trips.values():
        return trips, {}, []
    box = analysis.band_box(band)
    if box is None or any(lp.step != 1 for lp in band):
        return f"{loops_text(band)}: the band's loops must run by 1 within constant bounds"
    trips = {lp: hi - lo for lp, lo, hi in zip(band, box.lows, box.highs)}
    lows = {lp: lo for lp, lo in zip(band, box.lows) if lo}
    domain: list[AffineExpr] = []
    for k, lp in enumerate(band):
        if _constant_loop(lp) == trips[lp] and not lows.get(lp):
            continue
        bounds = _bound_exprs(lp, band)
        if bounds is None:
            return f"the bounds of ({loop_name(lp)}) must use only the band's IVs and constants"
        lbs, ubs = bounds
        domain += [AffineExpr.dim(k) - e for e in lbs] + [e - AffineExpr.dim(k) - 1 for e in ubs]
    return trips, lows, domain


def _bound_exprs(lp: AffineForOp, band: list[AffineForOp]) -> tuple[list, list] | None:
    """The lower and upper bound expressions of ``lp`` over the band's IVs (``d<k>``: ``band[k]``),
    or None when they use another value."""
    position = {b.induction_var: k for k, b in enumerate(band)}
    out = []
    for m, operands in ((lp.lower_bound_map, lp.lower_bound_operands), (lp.upper_bound_map, lp.upper_bound_operands)):
        repl = []
        for v in operands:
            c = constant_index_value(v)
            if v in position:
                repl.append(AffineExpr.dim(position[v]))
            elif c is not None:
                repl.append(AffineExpr.constant(c))
            else:
                return None
        out.append([e.replace(repl[:m.num_dims], repl[m.num_dims:]) for e in m.results])
    return out[0], out[1]


def _box_filled(band: list, batch: list, rows: list, cols: list) -> str | None:
    """Why the packed reads of a triangular band could read what the band never reads, or None:
    the domain projected onto the batch and rows (and onto the batch and columns) must be their
    whole box, so every row (column) a block copies is one some iteration reads."""
    box = analysis.band_box(band)
    for side, group in (("rows", rows), ("columns", cols)):
        if not box.fills([band.index(lp) for lp in batch + group]):
            return (f"{loops_text(band)}: the band's domain does not cover its bounding box along the {side} "
                    f"({', '.join(loop_name(lp) for lp in group)}), so packed reads could leave what it reads")
    return None


def _reduction_reads(inner: AffineForOp, roles: dict, nest: Operation) -> tuple[list, str | None]:
    """The reads of the innermost reduction body with the loops they use, or why it is not a
    contraction's body."""
    reads = []
    for op in inner.body.ops:
        if isinstance(op, AffineYieldOp):
            continue
        guarded = _is_guarded_read(op)
        if (op.regions and not guarded) or not (guarded or _load_or_compute(op)):
            return [], f"the reduction ({loop_name(inner)}) holds '{op.name}' (only affine loads and arithmetic)"
        if isinstance(op, AffineLoadOp) or guarded:
            used = _uses(op, roles, nest)
            if used is None:
                return [], f"a read in ({loop_name(inner)}) uses a value computed in the nest (not a loop's IV)"
            reads.append((op, used))
    return reads, None


def _groups(band: list, chain: list, reads: list) -> tuple[list, list, list] | str:
    """(batch, rows, cols) of the band (see the module docstring), each in band order."""
    varying = [used for _, used in reads if used & set(chain) and used & set(band)]
    col_set = set().union(*(u for u in varying if band[-1] in u)) & set(band)
    row_set = set().union(*(u for u in varying if band[-1] not in u)) & set(band)
    both = col_set & row_set
    rows = [lp for lp in band if lp in row_set - both]
    cols = [lp for lp in band if lp in col_set - both]
    if not rows or not cols:
        return (f"no operands of the reduction vary with {'rows' if not rows else 'columns'} and k apart from "
                f"the {'columns' if not rows else 'rows'} ({loops_text(band)})")
    batch = [lp for lp in band if lp not in rows and lp not in cols]
    return batch, rows, cols


def _sides(reads: list, chain: set, rows: set, cols: set) -> tuple[dict[Operation, str], list]:
    """The packed reads with their side, and the reads done per element."""
    packs: dict[Operation, str] = {}
    direct = []
    for op, used in reads:
        on_rows, on_cols = bool(used & rows), bool(used & cols)
        if used & chain and on_rows != on_cols:
            packs[op] = "A" if on_rows else "B"
        elif on_rows or on_cols:
            direct.append(op)
    return packs, direct


def split_reason(c: Contraction) -> str | None:
    """Why the reduction of ``c`` cannot be split along ``k`` into partial sums added afterwards
    (a reassociation of the sum), or None: the innermost body must add one term to the carried
    value (``arith.addf``/``arith.addi``), the term not using it."""
    red = analysis.iter_arg_reduction(c.inner, 0)
    if red is None or red.kind not in ("addf", "addi") or len(red.ops) != 1:
        return f"the reduction ({loop_name(c.inner)}) is not a sum of terms"
    return None


def tile_rate(t: TileConfig, gpu: GPUTarget = DEFAULT_GPU, cost: GPUCostModel | None = None) -> tuple[float, int]:
    """(share of a multiprocessor's fp32 FMA rate its blocks reach with enough warps, how many of
    its blocks fit on a multiprocessor at once): measured for the model's tile configurations
    (``cost.rates`` of ``gpu.schedule_model`` unless ``cost`` is given, whatever ``BK``), else
    scaled from the 8x8 rate by the FMAs per shared read (``TM * TN / (TM + TN)``, 4 for 8x8) with
    as many blocks as ``gpu``'s registers per multiprocessor hold at ``TM * TN`` plus the model's
    overhead registers per thread."""
    cost = cost or gpu.schedule_model
    measured = cost.rate_of((t.BM, t.BN, t.TM, t.TN))
    if measured is not None:
        return measured
    bm, bn, _, tm, tn = cost.tile_configs[0]  # the reference: the largest tiles (8x8 register tiles on the H200)
    rate = cost.rates[(bm, bn, tm, tn)][0] * min(1.0, t.TM * t.TN / (t.TM + t.TN) / (tm * tn / (tm + tn)))
    per_thread = t.TM * t.TN + cost.register_overhead_per_thread
    return rate, max(1, gpu.registers_per_sm // (per_thread * t.thread_count))


def estimate_seconds(sizes: tuple[int, int, int, int], t: TileConfig, splits: int, gpu: GPUTarget,
                     cost: GPUCostModel | None = None) -> float:
    """The time of the kernel(s) for ``(batch, M, N, K)``: the blocks spread evenly over the
    multiprocessors, each doing its padded ``BM x BN x K/splits`` FMAs at :func:`tile_rate` of
    the multiprocessor's fp32 rate, scaled down while fewer than ``cost.latency_warps`` warps are
    resident; plus a launch, and for a split the launch adding the slices and its traffic.
    ``cost``: the model (default: ``gpu.schedule_model``)."""
    cost = cost or gpu.schedule_model
    b, m, n, k = sizes
    blocks = b * -(-m // t.BM) * -(-n // t.BN) * splits
    per_sm = -(-blocks // gpu.sm_count)
    rate, resident = tile_rate(t, gpu, cost)
    warps = min(per_sm, resident) * -(-t.thread_count // gpu.warp_size)
    sm_rate = gpu.simt_flops["fp32"] / gpu.sm_count * rate * min(1.0, warps / cost.latency_warps)
    seconds = cost.launch_s + per_sm * 2 * t.BM * t.BN * -(-k // splits) / sm_rate
    if splits > 1:
        seconds += cost.split_launch_s + 2 * 4 * b * m * n * splits / gpu.dram_bandwidth
    return seconds


def split_candidates(sizes: tuple[int, int, int, int], t: TileConfig, gpu: GPUTarget) -> list[int]:
    """1, and when the tiles alone give fewer blocks than multiprocessors, the slice counts (at
    most the model's ``max_splits``) that divide the k steps of ``t``, leave each slice at least
    ``min_slice_steps`` steps and give at most ``max_split_blocks_per_sm`` blocks per
    multiprocessor (the model of ``gpu.schedule_model``)."""
    cost = gpu.schedule_model
    b, m, n, k = sizes
    blocks = b * -(-m // t.BM) * -(-n // t.BN)
    steps = k // t.BK if k % t.BK == 0 else 0
    if blocks >= gpu.sm_count:
        return [1]
    return [1] + [s for s in range(2, cost.max_splits + 1)
                  if steps % s == 0 and steps // s >= cost.min_slice_steps
                  and blocks * s <= cost.max_split_blocks_per_sm * gpu.sm_count]


def aligned_step(t: TileConfig, k_inner: int, k: int, max_bk: int = MAX_ALIGNED_BK) -> TileConfig:
    """``t`` with ``BK`` raised to a multiple of ``k_inner`` (the trip count of the reduction
    chain's inner loops: ``KH * KW`` of an NCHW convolution) when that is at most ``max_bk``
    (the model's ``max_aligned_bk``), divides ``K`` and keeps whole copies per thread: each k
    step then covers whole iterations of the chain's outer loop, so the inner loops' indices of a
    thread's copies do not change from step to step (no index arithmetic per step)."""
    if k_inner <= 1 or t.BK % k_inner == 0:
        return t
    for bk in range(k_inner * -(-t.BK // k_inner), max_bk + 1, k_inner):
        c = TileConfig(t.BM, t.BN, bk, t.TM, t.TN)
        if k % bk == 0 and (bk * t.BM) % c.thread_count == 0 and (bk * t.BN) % c.thread_count == 0:
            return c
    return t


def best_split(sizes: tuple[int, int, int, int], t: TileConfig, gpu: GPUTarget,
               split: bool = True) -> tuple[float, int]:
    """(estimated seconds, slices) of the fastest of :func:`split_candidates` for tiles ``t``
    (only 1 unless ``split``); ties go to fewer slices."""
    return min((estimate_seconds(sizes, t, s, gpu), s) for s in (split_candidates(sizes, t, gpu) if split else [1]))


def choose_schedule(sizes: tuple[int, int, int, int], gpu: GPUTarget, split: bool = True,
                    k_inner: int = 1) -> tuple[TileConfig, int]:
    """The tiles and k slices for ``(batch, M, N, K)`` on ``gpu``: the least
    :func:`estimate_seconds` over the tile configurations of ``gpu.schedule_model`` (each with
    the k step of :func:`aligned_step` for ``k_inner``) and (when ``split``) the
    :func:`split_candidates`; ties go to fewer slices, then larger tiles."""
    cost = gpu.schedule_model
    configs = [aligned_step(TileConfig(*cfg), k_inner, sizes[3], cost.max_aligned_bk) for cfg in cost.tile_configs]
    (_, splits), _, tiles = min((best_split(sizes, c, gpu, split), rank, c) for rank, c in enumerate(configs))
    return tiles, splits


def forced_tiles(sizes: tuple[int, ...], gpu: GPUTarget = DEFAULT_GPU) -> TileConfig | None:
    """The tiles of ``tile-sizes`` when each thread gets whole copies, its register tile whole runs
    of :data:`GROUP` rows/columns (or fewer), and the block is valid on ``gpu`` (at most its
    ``max_threads_per_block``)."""
    t = TileConfig(*sizes)
    x, y = t.threads
    ok = (t.BM % t.TM == 0 and t.BN % t.TN == 0 and t.TM % min(GROUP, t.TM) == 0 and t.TN % min(GROUP, t.TN) == 0
          and (t.BK * t.BM) % t.thread_count == 0
          and (t.BK * t.BN) % t.thread_count == 0 and x * y <= gpu.max_threads_per_block)
    return t if ok else None


def partial_tile_reason(c: Contraction, tiles: TileConfig) -> str | None:
    """Why ``tiles`` cannot cover ``c`` with partial tiles, or None. The initial values (the ops
    before the reduction) and the reads of the reduction done per element run, where they access
    memory, inside an ``affine.if`` on the element lying within the sizes (and the domain of a
    triangular band), so only ops with regions of their own next to the reduction (never planned)
    are refused."""
    _, m, n, _ = c.sizes
    if not (m % tiles.BM or n % tiles.BN or c.triangular):
        return None
    if any(op.regions for op in c.pre):
        return (f"partial {tiles.BM}x{tiles.BN} tiles of the contraction {c.describe()} would compute its initial "
                f"values past the sizes, and they hold regions")
    return None


def check_schedule_options(tile_sizes: tuple[int, ...], names: str, split_k: int) -> None:
    """ValueError unless ``tile_sizes`` is empty or 5 positive values (``names`` says which, e.g.
    ``"BM,BN,BK,TM,TN"``) and ``split_k`` is not negative: the options gpu-schedule and gpu-map-mma share."""
    if tile_sizes and len(tile_sizes) != 5:
        raise ValueError(f"tile-sizes takes {names}, got {len(tile_sizes)} values")
    if any(t <= 0 for t in tile_sizes):
        raise ValueError(f"tile-sizes must be positive, got {','.join(map(str, tile_sizes))}")
    if split_k < 0:
        raise ValueError(f"split-k must be >= 0, got {split_k}")
