"""What ``gpu-schedule`` recognizes and how it sizes the tiles: contraction nests and tiles.

A *contraction nest* is what fusion and scalar replacement make of ``C = epilogue(A @ B)`` and of
a convolution: a perfect band of parallel loops (constant bounds from 0, step 1) whose innermost
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
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp, AffineYieldOp
from affine_ir.dialects.arith import ConstantOp
from analysis.loops import perfect_band
from analysis.targets import GPUTarget

from ..loop_utils import access_subscripts, defined_in, loop_name, loops_text, value_name

#: (BM, BN, BK, TM, TN) candidates, largest first; each has 256 threads. (k steps of 16 for the
#: large tiles: measured faster than 8 on the H200 -- matmul 4096 0.86x cuBLAS instead of 0.77x.)
TILE_CONFIGS = ((128, 128, 16, 8, 8), (128, 64, 16, 8, 4), (64, 64, 8, 4, 4), (32, 32, 8, 2, 2))
#: Rows (columns) of a register tile held in consecutive registers and read as one 16-byte word.
GROUP = 4
#: Most band loops a contraction may have.
MAX_BAND = 6
#: Most k slices (split-K), and the fewest k steps a slice may have.
MAX_SPLITS = 32
MIN_SLICE_STEPS = 8
#: The largest k step :func:`aligned_step` may choose.
MAX_ALIGNED_BK = 36


@dataclass(frozen=True)
class CostConstants:
    """The constants of :func:`estimate_seconds`: per tile configuration (``(BM, BN, TM, TN)``) the
    share of the fp32 FMA rate its blocks reach and how many of them fit on a multiprocessor
    (registers); the warps per multiprocessor that hide load latency; the fixed cost of a launch
    and of the launch adding split slices."""

    rates: dict = field(hash=False)
    latency_warps: float
    launch_s: float
    split_launch_s: float


#: Fitted (least squares in log) to 137 kernels measured on the H200: the configurations' tiles
#: and splits on the 12 ResNet-50 convolutions of ``benchmarks/gpu.py`` and matmul 1024/4096
#: (``benchmarks/gpu_tiles.py``, 2026-11-29; data in ``benchmarks/data/``, fit by
#: ``benchmarks/fit_gpu_tiles.py``; RMS error of the estimate 20%).
COST = CostConstants(rates={(128, 128, 8, 8): (0.53, 2), (128, 64, 8, 4): (0.45, 3), (64, 64, 4, 4): (0.22, 4),
                            (32, 32, 2, 2): (0.086, 8)},
                     latency_warps=13, launch_s=6.6e-6, split_launch_s=15.5e-6)


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
    packs: dict[int, str]  # id(read) -> "A" (varies with rows) or "B" (with cols)
    sizes: tuple[int, int, int, int]  # batch, M, N, K
    trips: dict[int, int]  # id(loop) -> trip count, for the band and the chain
    direct: list[Operation] = field(default_factory=list)  # reads of the reduction done per element
    band: list[AffineForOp] = field(default_factory=list)  # the band, outermost first

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
        return math.prod(self.trips[id(lp)] for lp in self.red_loops[1:])

    def side_loops(self, side: str) -> list[AffineForOp]:
        return self.rows if side == "A" else self.cols

    def describe(self) -> str:
        b, m, n, k = self.sizes
        return f"({'batch ' + str(b) + ', ' if self.batch else ''}{m}x{n}, k {k})"

    def loops_of(self, loops: list[AffineForOp]) -> str:
        return ", ".join(loop_name(lp) for lp in loops)


def delinearized(loops: list[AffineForOp], trips: dict[int, int]) -> list[AffineExpr]:
    """Each loop's induction value as an expression of ``d0``, the linear index of ``loops`` (the
    first outermost): ``(d0 floordiv stride) mod trip``, without the parts that are identities."""
    out = []
    stride = math.prod(trips[id(lp)] for lp in loops)
    for i, lp in enumerate(loops):
        stride //= trips[id(lp)]
        e = AffineExpr.dim(0)
        if stride > 1:
            e = e.floordiv(stride)
        if i > 0:
            e = e % trips[id(lp)]
        out.append(e)
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
    plain = all(not o.regions and not isinstance(o, AffineStoreOp) and o.name not in _MEMORY_OPS for o in then)
    return len(loads) == 1 and plain and all(isinstance(o, ConstantOp) for o in other)


_MEMORY_OPS = ("memref.store", "memref.load", "func.call")


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


def _uses(op: Operation, loops: dict[int, AffineForOp], nest: Operation) -> set[AffineForOp] | None:
    """The loops of the band and chain whose IVs a read uses; None when it uses another value
    computed in ``nest``."""
    out = set()
    for v in _leaves(op):
        if id(v) in loops:
            out.add(loops[id(v)])
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
    trips = {id(lp): _constant_loop(lp) for lp in band}
    if None in trips.values():
        return f"{loops_text(band)}: the band's loops must run from 0 by 1 to a constant"
    for lp in band:
        if not analysis.is_parallel(lp):
            return f"({loop_name(lp)}) is not parallel"
    body = [op for op in band[-1].body.ops if not isinstance(op, AffineYieldOp)]
    loops = [op for op in body if isinstance(op, AffineForOp)]
    if len(loops) != 1 or len(loops[0].iter_args) != 1:
        return f"the body of ({loop_name(band[-1])}) must hold one reduction loop carrying one value"
    chain = _chain(loops[0])
    for lp in chain:
        trips[id(lp)] = _constant_loop(lp)
        if trips[id(lp)] is None:
            return f"the reduction ({loop_name(lp)}) must run from 0 by 1 to a constant"
    for op in (o for o in body if o is not loops[0]):
        if op.regions:
            return f"'{op.name}' next to the reduction has regions"
    roles = {id(lp.induction_var): lp for lp in band + chain}
    reads, why = _reduction_reads(chain[-1], roles, nest)
    if why:
        return why
    groups = _groups(band, chain, reads)
    if isinstance(groups, str):
        return groups
    batch, rows, cols = groups
    packs, direct = _sides(reads, set(chain), set(rows), set(cols))
    k_pos = body.index(loops[0])

    def size(group):
        return math.prod(trips[id(lp)] for lp in group)

    sizes = (size(batch), size(rows), size(cols), size(chain))
    return Contraction(nest, batch, rows, cols, chain, body[:k_pos], body[k_pos + 1:], packs, sizes, trips, direct,
                       band)


def _reduction_reads(inner: AffineForOp, roles: dict, nest: Operation) -> tuple[list, str | None]:
    """The reads of the innermost reduction body with the loops they use, or why it is not a
    contraction's body."""
    reads = []
    for op in inner.body.ops:
        if isinstance(op, AffineYieldOp):
            continue
        guarded = _is_guarded_read(op)
        if (op.regions and not guarded) or isinstance(op, AffineStoreOp) or op.name in _MEMORY_OPS:
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


def _sides(reads: list, chain: set, rows: set, cols: set) -> tuple[dict[int, str], list]:
    """The packed reads with their side, and the reads done per element."""
    packs: dict[int, str] = {}
    direct = []
    for op, used in reads:
        on_rows, on_cols = bool(used & rows), bool(used & cols)
        if used & chain and on_rows != on_cols:
            packs[id(op)] = "A" if on_rows else "B"
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


def tile_rate(t: TileConfig, cost: CostConstants = COST) -> tuple[float, int]:
    """(share of a multiprocessor's fp32 FMA rate its blocks reach with enough warps, how many of
    its blocks fit on a multiprocessor at once): measured for :data:`TILE_CONFIGS`
    (``cost.rates``, whatever ``BK``), else scaled from the 8x8 rate by the FMAs per shared read
    (``TM * TN / (TM + TN)``, 4 for 8x8) with one block per 32K registers of ``TM * TN + 64``
    per thread."""
    key = (t.BM, t.BN, t.TM, t.TN)
    if key in cost.rates:
        return cost.rates[key]
    rate = cost.rates[(128, 128, 8, 8)][0] * min(1.0, t.TM * t.TN / (t.TM + t.TN) / 4)
    return rate, max(1, 65536 // ((t.TM * t.TN + 64) * t.thread_count))


def estimate_seconds(sizes: tuple[int, int, int, int], t: TileConfig, splits: int, gpu: GPUTarget,
                     cost: CostConstants = COST) -> float:
    """The time of the kernel(s) for ``(batch, M, N, K)``: the blocks spread evenly over the
    multiprocessors, each doing its padded ``BM x BN x K/splits`` FMAs at :func:`tile_rate` of
    the multiprocessor's fp32 rate, scaled down while fewer than ``cost.latency_warps`` warps are
    resident; plus a launch, and for a split the launch adding the slices and its traffic."""
    b, m, n, k = sizes
    blocks = b * -(-m // t.BM) * -(-n // t.BN) * splits
    per_sm = -(-blocks // gpu.sm_count)
    rate, resident = tile_rate(t, cost)
    warps = min(per_sm, resident) * -(-t.thread_count // gpu.warp_size)
    sm_rate = gpu.simt_flops["fp32"] / gpu.sm_count * rate * min(1.0, warps / cost.latency_warps)
    seconds = cost.launch_s + per_sm * 2 * t.BM * t.BN * -(-k // splits) / sm_rate
    if splits > 1:
        seconds += cost.split_launch_s + 2 * 4 * b * m * n * splits / gpu.dram_bandwidth
    return seconds


def split_candidates(sizes: tuple[int, int, int, int], t: TileConfig, gpu: GPUTarget) -> list[int]:
    """1, and when the tiles alone give fewer blocks than multiprocessors, the slice counts that
    divide the k steps of ``t``, leave each slice at least :data:`MIN_SLICE_STEPS` steps and give
    at most 4 blocks per multiprocessor."""
    b, m, n, k = sizes
    blocks = b * -(-m // t.BM) * -(-n // t.BN)
    steps = k // t.BK if k % t.BK == 0 else 0
    if blocks >= gpu.sm_count:
        return [1]
    return [1] + [s for s in range(2, MAX_SPLITS + 1)
                  if steps % s == 0 and steps // s >= MIN_SLICE_STEPS and blocks * s <= 4 * gpu.sm_count]


def aligned_step(t: TileConfig, k_inner: int, k: int) -> TileConfig:
    """``t`` with ``BK`` raised to a multiple of ``k_inner`` (the trip count of the reduction
    chain's inner loops: ``KH * KW`` of an NCHW convolution) when that is at most
    :data:`MAX_ALIGNED_BK`, divides ``K`` and keeps whole copies per thread: each k step then
    covers whole iterations of the chain's outer loop, so the inner loops' indices of a
    thread's copies do not change from step to step (no index arithmetic per step)."""
    if k_inner <= 1 or t.BK % k_inner == 0:
        return t
    for bk in range(k_inner * -(-t.BK // k_inner), MAX_ALIGNED_BK + 1, k_inner):
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
    :func:`estimate_seconds` over :data:`TILE_CONFIGS` (each with the k step of
    :func:`aligned_step` for ``k_inner``) and (when ``split``) the :func:`split_candidates`;
    ties go to fewer slices, then larger tiles."""
    configs = [aligned_step(TileConfig(*cfg), k_inner, sizes[3]) for cfg in TILE_CONFIGS]
    (_, splits), _, tiles = min((best_split(sizes, c, gpu, split), rank, c) for rank, c in enumerate(configs))
    return tiles, splits


def forced_tiles(sizes: tuple[int, ...]) -> TileConfig | None:
    """The tiles of ``tile-sizes`` when each thread gets whole copies, its register tile whole runs
    of :data:`GROUP` rows/columns (or fewer), and the block is valid."""
    t = TileConfig(*sizes)
    x, y = t.threads
    ok = (t.BM % t.TM == 0 and t.BN % t.TN == 0 and t.TM % min(GROUP, t.TM) == 0 and t.TN % min(GROUP, t.TN) == 0
          and (t.BK * t.BM) % t.thread_count == 0
          and (t.BK * t.BN) % t.thread_count == 0 and x * y <= 1024)
    return t if ok else None


def partial_tile_reason(c: Contraction, tiles: TileConfig) -> str | None:
    """Why ``tiles`` cannot cover ``c`` with partial tiles, or None: the initial values and the
    reduction run for every element of a partial tile, so they must not access memory by row or
    column except through the packed (guarded) operands."""
    _, m, n, _ = c.sizes
    if not (m % tiles.BM or n % tiles.BN):
        return None
    if any(op.name.startswith(("affine.load", "affine.store", "memref.")) or op.regions for op in c.pre):
        return (f"partial {tiles.BM}x{tiles.BN} tiles of the contraction {c.describe()} would compute its initial "
                f"values past the sizes, and they access memory")
    if c.direct:
        return (f"partial {tiles.BM}x{tiles.BN} tiles of the contraction {c.describe()} would run its reduction past "
                f"the sizes, and it reads {value_name(read_load(c.direct[0]).memref)} by row or column (not packed)")
    return None
