"""The ``sm_90a`` variant of ``gpu-map-mma``: contractions on Hopper's warpgroup MMA (``wgmma``), fed by
TMA bulk copies into a shared-memory ring whose stages are handed over on mbarriers, with one
producer warpgroup and consumer warpgroups (warp specialization).

What is mapped (:func:`plan_wgmma`): a plan of :func:`~.map_mma_plan.plan_mma` on f16/bf16 (or 8-bit float)
operands with f32 sums whose two operands are read whole from 2-D memrefs of static shape (3-D with one
batch loop), contiguous along k (``A[i, k]``, ``B[j, k]``: "K-major", the layout of ``x @ W^T`` in a linear
layer) or, for 16-bit operands, along their rows/columns (``A[k, i]``, ``B[k, j]``: "MN-major", loaded as
64-wide chunks of 64 k rows and read with wgmma's transposed forms), the rows ``i``, columns ``j`` and ``k``
single loops from 0 with unit subscripts, and the rows of each memref a multiple of 16 bytes (TMA's global
strides); any ``M``, ``N`` otherwise (TMA fills what lies past the edges with zeros; the epilogue is
guarded). With ``wgmma-conv=true``, NHWC convolutions too, as implicit GEMMs whose A tiles are TMA boxes of the
input window (:mod:`.map_wgmma_conv`). Anything else stays on the ``mma.sync`` path, with the reason in the trace.

The kernel, for :class:`WgmmaTiles` ``BM x BN`` (``BM = consumers x rows``), ``BK = 64`` (one
128-byte swizzled row of 16-bit elements) and ``S`` stages::

    host:  %dA = nvgpu.tma.create.descriptor (memref.cast %A) box[BM, 64]   (swizzle_128b)
           %dB = nvgpu.tma.create.descriptor (memref.cast %B) box[BN, 64]
    gpu.launch blocks(N/BN, M/BM) threads(128 * (1 + consumers)) {
      %smem = memref.alloc() : memref<bytes x i8, 3>       stage s: A tile at s * (BM + BN) * 128, B after it
      %full, %empty = nvgpu.mbarrier.create (S each)       thread 0: init full[s] 1, empty[s] consumers
      gpu.barrier
      warpgroup 0 (producer, setmaxregister decrease):  thread 0, for each k step kt, s = kt mod S:
          try_wait.parity %empty[s] (parity (kt / S + 1) mod 2: passes at once in the first round)
          arrive.expect_tx %full[s], (BM + BN) * 128 ; tma.async.load A, B tiles -> views of stage s
      warpgroups 1.. (consumers, setmaxregister increase):  for each k step kt:
          try_wait.parity %full[s] (parity (kt / S) mod 2)
          %acc = nvgpu.warpgroup.mma (its rows of A, B) waitGroup = 1 transposeB   (m64nBNk16 x 4 per part)
          thread 0 of the warpgroup: mbarrier.arrive %empty[(kt - 1) mod S]     (step kt - 1's group is done)
        nvvm.wgmma.wait.group.sync.aligned 0 ; nvvm.barrier (the consumers) ; warpgroup.mma.store into shared
        memory (f32, the ring reused) ; nvvm.barrier ; the epilogue per element, consecutive threads on
        consecutive columns: the nest's ops around the reduction (initial value, truncation, bias, ...)
    }

Schedules (``WgmmaTiles.schedule``, option ``wgmma-schedule``): the above is "blocks", one tile per block.
"persistent": ``min(tiles, multiprocessors)`` blocks (``persistent-blocks``) each loop over tiles
``i * grid + block`` (the raster order as above); producer and consumers count ring steps across tiles
(step ``i * steps + kt``: the phases run on), the consumers hand the last step's stage back too, and the
sums go to a buffer after the ring, so the producer fills the ring with the next tile's steps under the
epilogue. "pingpong": persistent, each consumer warpgroup computing whole tiles (``rows = BM``), tile ``i``
on consumer ``i mod consumers``; mbarriers ``turn[w]`` (tile ``i``'s k loop starts once tile ``i - 1``'s
consumer has waited for all its steps: a wait on ``full`` could otherwise pass on an earlier tile's phase of
the same parity) and ``drained[w]`` (tile ``i`` stores its sums once tile ``i - 1``'s consumer has read them:
one buffer for both), each completed by the 128 threads of the previous consumer.

``wgmma-cluster=C`` (blocks schedule): thread-block clusters of ``C`` blocks (``gpu.launch clusters(C, 1, 1)``, grid
x ``C`` times the tile columns) compute ``C`` consecutive tile rows of one tile column, so they need the same B
tile: block ``r`` of the cluster loads B's columns ``r * BN / C ...`` and multicasts them (``tma.async.load ...
multicast_mask``) into the same place of every block's stage, which expects the whole stage's bytes as before. A
stage is free once the consumers of every block are done with it: ``empty`` counts ``consumers * C`` arrivals, and
thread ``r`` of each consumer warpgroup arrives on block ``r``'s (``nvgpu.mbarrier.arrive.remote``). Cluster
barriers (``nvvm.cluster.arrive/wait``) after the mbarriers' init (no block reaches another before it has started)
and before exiting (no block's shared memory goes while another may still arrive on it). Each block reads ``1/C`` of
B's tile from L2 instead of all of it.

``tma-store=true``: where the nest ends in its only store (at the row and column), the epilogue writes the
output tile into shared memory (in the ring after the sums) and one thread stores it with
``nvgpu.tma.async.store`` after ``nvvm.fence.proxy`` and a barrier of the consumers (off by default: slower
on the H100, a block waiting for the store's reads before it exits).

Descriptor types are the logical tiles, A ``M x K`` and B ``K x N`` (upstream's verifier), a K-major B's
``N x K`` TMA box viewed again as ``K x N``; ``transposeA``/``transposeB`` give their layouts.

Sums: each ``wgmma`` adds 16 products per element (the interpreter: exactly, rounded once to f32),
so integer-valued data gives the nest's bits exactly and other data agrees within the rounding of
a K-term f32 sum, as on the ``mma.sync`` path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from affine_ir import AffineExpr, AffineMap, IntegerSet, Operation, Value
from affine_ir.attributes import UnitAttr
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineStoreOp, AffineYieldOp
from affine_ir.dialects.arith import CmpIOp, ConstantOp, IndexCastOp
from affine_ir.dialects.gpu import BarrierOp
from affine_ir.dialects.memref import AllocOp, CastOp, LoadOp, ViewOp
from affine_ir.dialects.nvgpu_hopper import (
    MBarrierArriveExpectTxOp,
    MBarrierArriveOp,
    MBarrierArriveRemoteOp,
    MBarrierCreateOp,
    MBarrierInitOp,
    MBarrierTryWaitParityOp,
    TmaAsyncLoadOp,
    TmaAsyncStoreOp,
    TmaCreateDescriptorOp,
)
from affine_ir.dialects.nvgpu_warpgroup import (
    K_MAJOR_ONLY,
    WGMMA_INPUTS,
    WarpgroupGenerateDescriptorOp,
    WarpgroupMmaInitAccumulatorOp,
    WarpgroupMmaOp,
    WarpgroupMmaStoreOp,
)
from affine_ir.dialects.nvvm import (
    ClusterArriveOp,
    ClusterWaitOp,
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkWaitGroupOp,
    FenceMbarrierInitOp,
    FenceProxyOp,
    NamedBarrierOp,
    SetMaxRegisterOp,
    WgmmaWaitGroupSyncOp,
)
from affine_ir.types import (
    WORKGROUP,
    MBarrierGroupType,
    MemRefType,
    TensorMapDescriptorType,
    UnrankedMemRefType,
    WarpgroupAccumulatorType,
    WarpgroupDescriptorType,
    f32,
    i8,
    i16,
    i32,
    memref,
    vector,
)
from analysis.targets import GPUTarget

from .emitter import Emitter as _At
from .gpu_map_nest import HostPlan, new_launch
from .map_mma_plan import MmaPlan, epilogue_ops, raster_order, slice_steps
from .map_wgmma_conv import ConvGeometry, plan_conv
from .schedule_gpu import add_partial_sums

__all__ = ["SCHEDULES", "WgmmaPlan", "WgmmaTiles", "choose_wgmma_tiles", "map_to_wgmma", "plan_wgmma"]

WARPGROUP = 128
BK = 64  # one 128-byte (swizzle_128b) row of 16-bit elements (128 of 8-bit ones: :func:`k_step`)
ROW_BYTES = 128


def k_step(element_bytes: int = 2) -> int:
    """The k step of one ring stage: one 128-byte swizzled row of the operands' elements."""
    return ROW_BYTES // element_bytes
#: Registers per thread after ``setmaxregister``: the producer's few, the consumers' many (the
#: block's 384 threads stay within the 64 K registers of a multiprocessor).
PRODUCER_REGISTERS, CONSUMER_REGISTERS = 40, 232
#: How long one ``try_wait`` suspends before trying again (upstream's examples use this).
WAIT_TICKS = 10_000_000
MAX_STAGES = 4
#: How the blocks cover the tiles: one tile per block ("blocks"); a block per multiprocessor looping over
#: tiles with all consumers on each ("persistent"); or with the consumers taking turns on whole tiles, one's
#: epilogue under the other's k loop ("pingpong").
SCHEDULES = ("blocks", "persistent", "pingpong")
#: A consumer thread's f32 sums at most (of its 232 registers after ``setmaxregister``).
MAX_ACCUMULATOR_REGISTERS = 128


def _d(k: int) -> AffineExpr:
    return AffineExpr.dim(k)


@dataclass(frozen=True)
class WgmmaTiles:
    """Block tile ``BM x BN`` (``consumers`` warpgroups of ``BM / consumers`` rows each, a multiple of 64),
    k step one 128-byte row of the operands' ``element_bytes``-byte elements (64 or 128), a ring of
    ``stages``, k in ``splits`` slices (split-K: grid z)."""

    BM: int = 128
    BN: int = 256
    consumers: int = 2
    stages: int = 4
    splits: int = 1
    element_bytes: int = 2
    schedule: str = "blocks"
    grid: int = 0  # persistent: the blocks (0: one per multiprocessor)
    cluster: int = 1  # blocks per thread-block cluster (along M: they share the B tile, multicast by TMA)

    @property
    def persistent(self) -> bool:
        """One block per multiprocessor looping over the tiles (:data:`SCHEDULES`)."""
        return self.schedule != "blocks"

    @property
    def pingpong(self) -> bool:
        return self.schedule == "pingpong"

    @property
    def BK(self) -> int:
        return k_step(self.element_bytes)

    @property
    def rows(self) -> int:
        """Rows of the block tile each consumer warpgroup computes (all of them when the consumers take
        turns on whole tiles)."""
        return self.BM if self.pingpong else self.BM // self.consumers

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.consumers)

    @property
    def a_bytes(self) -> int:
        return self.BM * ROW_BYTES

    @property
    def stage_bytes(self) -> int:
        return (self.BM + self.BN) * ROW_BYTES

    @property
    def ring_bytes(self) -> int:
        return self.stages * self.stage_bytes

    @property
    def epilogue_bytes(self) -> int:
        """The f32 sums the epilogue reads: the block tile's (the consumers taking turns on whole tiles take
        turns on it too)."""
        return self.BM * self.BN * 4

    @property
    def shared_bytes(self) -> int:
        """One block's dynamic shared memory: the epilogue reuses the ring unless the block goes on to
        another tile (persistent), whose loads then fill the ring under the epilogue."""
        if self.persistent:
            return self.ring_bytes + self.epilogue_bytes
        return max(self.ring_bytes, self.epilogue_bytes)

    def invalid(self) -> str | None:
        if self.schedule not in SCHEDULES:
            return f"schedule {self.schedule!r} is not one of {', '.join(SCHEDULES)}"
        if self.consumers < 1 or self.BM % self.consumers and not self.pingpong or self.rows % 64 or self.rows > 256:
            return f"block rows {self.BM} do not split into {self.consumers} warpgroups of a multiple of 64 rows"
        if self.rows * self.BN // WARPGROUP > MAX_ACCUMULATOR_REGISTERS:
            return f"a consumer warpgroup's {self.rows}x{self.BN} f32 sums take {self.rows * self.BN // WARPGROUP} " \
                   f"registers per thread, more than {MAX_ACCUMULATOR_REGISTERS}"
        if self.BN % 8 or not 8 <= self.BN <= 256:
            return f"block columns {self.BN}: wgmma's n is a multiple of 8 up to 256"
        if self.BM > 256:
            return f"block rows {self.BM}: a TMA box has at most 256 rows"
        if self.stages < 2:
            return f"{self.stages} stage(s): the ring needs at least 2"
        return self._cluster_invalid()

    def _cluster_invalid(self) -> str | None:
        c = self.cluster
        if c == 1:
            return None
        if c not in (2, 4, 8):
            return f"clusters of {c} blocks: 1, 2, 4 or 8 (a power of two up to the portable 8)"
        if self.schedule != "blocks":
            return f"clusters of {c} blocks are built for the blocks schedule, not {self.schedule}"
        if self.BN % (8 * c):
            return f"block columns {self.BN} do not split into {c} multicast slices of a multiple of 8 rows"
        return None

    @property
    def b_slice(self) -> int:
        """The B columns each block of a cluster loads and multicasts to all (the whole tile without clusters)."""
        return self.BN // self.cluster

    def describe(self) -> str:
        split = f", k split in {self.splits} slices (partial sums added in slice order by a second launch)" \
            if self.splits > 1 else ""
        turns = " taking turns on whole tiles" if self.pingpong else ""
        schedule = f", persistent ({self.schedule}: a block per multiprocessor over the tiles)" \
            if self.persistent else ""
        if self.cluster > 1:
            schedule += f", clusters of {self.cluster} blocks along M, each loading 1/{self.cluster} of the B tile " \
                        f"and multicasting it to all"
        return (f"block tile {self.BM}x{self.BN}, k step {self.BK}, {self.consumers} consumer warpgroup"
                f"{'s' if self.consumers > 1 else ''} of m{self.rows}n{self.BN}{turns} and a producer, {self.stages} "
                f"stages{split}{schedule}")


@dataclass(frozen=True)
class WgmmaPlan:
    """What :func:`plan_wgmma` found: the matrix-unit plan and the two global operands."""

    mma: MmaPlan
    a: Value  # M x K, or K x M when ``a_mn_major`` (a batch dimension first)
    b: Value  # N x K, or K x N when ``b_mn_major`` (a batch dimension first)
    b_mn_major: bool = False
    batched: bool = False  # one batch loop: the operands' first dimension, grid z
    a_mn_major: bool = False
    conv: ConvGeometry | None = None  # an NHWC convolution: A is the input, B the HWCF filter (implicit GEMM)


def _operand(op, c) -> tuple[Value, bool] | str:
    """(the memref an operand is read whole from, whether it is MN-major: A given ``K x M``, B ``K x N``), or why it is
    not one the kernel takes: indexed by (the batch loop, when there is one,) its row or column loop and
    the k loop, all from 0, in that order (k first for an MN-major B)."""
    ld = op.load
    what = f"the read of %{ld.memref.name_hint or '?'}"
    t = ld.memref.type
    side_loops = c.rows if op.side == "A" else c.cols
    mn_major = not op.k_fast
    if op.gather or op.guard is not None:
        return f"{what} is not a plain tile contiguous along k or along its rows/columns: gathered or padded"
    rank = 2 + len(c.batch)
    if not isinstance(t, MemRefType) or t.rank != rank or None in t.shape:
        return f"{what} is not of a {rank}-D memref of static shape"
    if len(side_loops) != 1 or len(c.red_loops) != 1:
        return f"{what} has more than one row/column or k loop"
    if ld.map.num_symbols or ld.map.results != tuple(_d(i) for i in range(rank)) or len(ld.indices) != rank:
        return f"{what} is not indexed by its loops directly"
    pair = (side_loops[0].induction_var, c.red_loops[0].induction_var)
    want = tuple(lp.induction_var for lp in c.batch) + (pair[::-1] if mn_major else pair)
    if tuple(ld.indices) != want or any(c.lows.get(lp, 0) for lp in (*c.batch, *side_loops, *c.red_loops)):
        return f"{what} is not indexed by ({'the batch, ' if c.batch else ''}" \
               f"{'k, its row/column' if mn_major else 'its row/column, k'}) from 0"
    if (t.shape[-1] * (t.element_type.width // 8)) % 16:
        return f"{what}: rows of {t.shape[-1]} elements are not a multiple of 16 bytes (TMA's strides)"
    return ld.memref, mn_major


def plan_wgmma(plan: MmaPlan, gpu: GPUTarget) -> WgmmaPlan | str:
    """The warpgroup-MMA plan of ``plan`` on ``gpu`` (see the module docstring), or why there is none."""
    if gpu.compute_capability < (9, 0):
        return f"{gpu.name} has no warpgroup MMA (sm_90a)"
    c = plan.c
    if plan.kind.input not in WGMMA_INPUTS or plan.kind.acc != f32:
        return f"warpgroup MMA is built for f16/bf16/f8E4M3FN/f8E5M2 operands with f32 sums, not " \
               f"{plan.kind.describe()}"
    if len(c.batch) > 1:
        return "contractions with more than one batch loop are not mapped to warpgroup MMA yet"
    if plan.kind.input in K_MAJOR_ONLY:
        k_iv = c.red_loops[0].induction_var if len(c.red_loops) == 1 else None
        for op in plan.operands():
            if not op.load.indices or op.load.indices[-1] is not k_iv:
                return f"{plan.kind.input} operands are read K-major only (wgmma has no transposed 8-bit form): " \
                       f"{op.side} is not indexed by k last"
    four_d = any(getattr(op.load.memref.type, "rank", 0) == 4 for op in plan.operands())
    if len(c.rows) > 1 or len(c.red_loops) > 1 or (four_d and not c.batch):  # an NHWC convolution's, or nothing
        conv = plan_conv(plan)
        if isinstance(conv, str):
            return conv
        return WgmmaPlan(plan, conv[0], conv[1], b_mn_major=True, conv=conv[2])
    a, b = (_operand(op, c) for op in plan.operands())
    for x in (a, b):
        if isinstance(x, str):
            return x
    return WgmmaPlan(plan, a[0], b[0], b[1], bool(c.batch), a[1])


#: Candidate block tiles (BM, BN, consumer warpgroups), best first on a tie.
TILE_CANDIDATES = ((128, 256, 2), (128, 128, 2), (64, 256, 1), (64, 128, 1), (128, 64, 2), (64, 64, 1))
#: Splits of k tried when the tiles alone leave multiprocessors idle.
SPLITS = (1, 2, 3, 4, 6, 8, 12, 16)
#: The share of the matrix units' peak the 128 x 256 tile reaches (measured: 0.71-0.79 of 989 TFLOP/s on
#: the H100 at 4096-8192, RESULTS.md 2026-12-07 third session); smaller tiles lose with their reuse.
PEAK_SHARE = 0.75
#: A block's fixed time besides its k steps (barrier init, the pipeline's fill, the epilogue), seconds.
BLOCK_OVERHEAD_S = 3e-6


def estimate_wgmma_seconds(sizes: tuple[int, int, int, int], tiles: WgmmaTiles, gpu: GPUTarget) -> float:
    """The kernel's time for ``tiles`` (with their splits): the blocks in waves over the
    multiprocessors, each block's k steps at the multiprocessor's share of the tensor rate scaled by the
    tile's reuse (``BM*BN/(BM+BN)`` against the 128 x 256 tile's) and by one consumer warpgroup hiding
    less than two, plus a fixed time per block; at least the time to read both operands and write the
    output once at the DRAM bandwidth; a split adds a launch and its f32 slices written and read back."""
    b, m, n, k = sizes
    steps = slice_steps(k, tiles.BK, tiles.splits)
    blocks = b * -(-m // tiles.BM) * -(-n // tiles.BN) * tiles.splits
    waves = -(-blocks // gpu.sm_count)
    reuse = min(1.0, (tiles.BM * tiles.BN / (tiles.BM + tiles.BN)) / (128 * 256 / 384))
    rate = gpu.tensor_flops["fp8" if tiles.element_bytes == 1 else "fp16"] / gpu.sm_count * PEAK_SHARE * reuse * \
        (1.0 if tiles.consumers > 1 else 0.85)
    compute = waves * (2 * tiles.BM * tiles.BN * steps * tiles.BK / rate + BLOCK_OVERHEAD_S)
    memory = (b * (m * k + n * k) * tiles.element_bytes + b * m * n * 4) / gpu.dram_bandwidth
    seconds = max(compute, memory)
    if tiles.splits > 1:
        seconds += gpu.schedule_model.launch_s + 2 * 4 * b * m * n * tiles.splits / gpu.dram_bandwidth
    return seconds


def choose_wgmma_tiles(sizes: tuple[int, int, int, int], gpu: GPUTarget, stages: int = 0,
                       forced: tuple[int, ...] = (), splits: int = 0, b_mn_major: bool = False,
                       element_bytes: int = 2, schedule: str = "") -> WgmmaTiles | str:
    """The tiles for a ``batch x M x N x K`` contraction: ``forced`` = (BM, BN, consumers) if given, else the
    candidate of :data:`TILE_CANDIDATES` (columns narrowed to ``N`` rounded up to 8 when ``N`` is smaller)
    and the split of k (``splits``: 0 chosen from :data:`SPLITS`, slices of at least 4 k steps; 1 off)
    with the least :func:`estimate_wgmma_seconds` (ties: the earlier candidate, fewer slices); as many
    stages (at most 4) as the shared memory per block holds and the slices' k steps use. An MN-major B
    (``b_mn_major``) takes whole 64-column chunks: ``N`` rounded up to 64. ``element_bytes``: the
    operands' (2, or 1 for 8-bit floats: k steps of 128). ``schedule``: one of :data:`SCHEDULES` (default:
    "blocks")."""
    _, _, n, k = sizes
    steps = -(-k // k_step(element_bytes))
    candidates = [forced] if forced else TILE_CANDIDATES
    split_options = [splits] if splits else [s for s in SPLITS if s == 1 or -(-steps // s) >= 4]
    best, why = None, "no tile fits"
    for rank, (bm, bn, consumers) in enumerate(candidates):
        unit = 64 if b_mn_major else 8
        bn = bn if forced else min(bn, -(-n // unit) * unit)
        if b_mn_major and bn % 64:
            why = f"an MN-major B takes whole 64-column chunks, not {bn} columns"
            continue
        for split in split_options:
            tiles = _with_stages(WgmmaTiles(bm, bn, consumers, 2, split, element_bytes, schedule or "blocks"), gpu,
                                 stages, -(-steps // split))
            bad = tiles.invalid() or _too_big(tiles, gpu)
            if bad:
                why = bad
                continue
            key = (estimate_wgmma_seconds(sizes, tiles, gpu), rank, split)
            if best is None or key < best[0]:
                best = (key, tiles)
    return best[1] if best else why


def _with_stages(t: WgmmaTiles, gpu: GPUTarget, stages: int, steps: int) -> WgmmaTiles:
    s = stages or min(MAX_STAGES, max(2, steps))
    while s > 2 and replace(t, stages=s).shared_bytes > gpu.shared_memory_per_block_optin - 1024:
        s -= 1
    return replace(t, stages=s)


def _too_big(t: WgmmaTiles, gpu: GPUTarget) -> str | None:
    if t.shared_bytes > gpu.shared_memory_per_block_optin - 1024:
        return f"{t.describe()} needs {t.shared_bytes} bytes of shared memory, {gpu.name} has " \
               f"{gpu.shared_memory_per_block_optin}"
    return None


class _Kernel:
    """Builds the launch of one plan (see the module docstring)."""

    def __init__(self, plan: WgmmaPlan, tiles: WgmmaTiles, host: HostPlan, gpu: GPUTarget, tma_store: bool = False):
        self.plan, self.t, self.host, self.gpu = plan, tiles, host, gpu
        self.tma_store = tma_store
        self.out_tile: Value | None = None  # the TMA store's shared tile (set with the epilogue)
        self.c = plan.mma.c
        self.loc = self.c.nest.location
        self.bk = tiles.BK
        self.steps = slice_steps(self.c.sizes[3], self.bk, tiles.splits)  # k steps per slice
        self.el = plan.mma.kind.input
        self.workspace = None
        self.conv = plan.conv  # its block of pixels: the caller's for these rows, else chosen here
        if self.conv is not None and math.prod(self.conv.box) != tiles.BM:
            self.conv = self.conv.with_box(tiles.BM)

    # -- host -----------------------------------------------------------------------------------------
    def _box(self, rows: int, cols: int = 0) -> tuple[int, ...]:
        """A TMA box of ``rows x 64`` (``rows x cols``; ``1 x rows x ...`` when batched)."""
        cols = cols or self.bk
        return (1, rows, cols) if self.plan.batched else (rows, cols)

    def _descriptor(self, operand: Value, rows: int, cols: int = 0, box: tuple[int, ...] = ()) -> Value:
        """The TMA descriptor of ``operand`` (on the host) for boxes of ``rows x 64`` (or ``box``) swizzled by 128
        bytes (or ``rows x cols`` not swizzled: the epilogue's stores)."""
        t: MemRefType = operand.type
        tile = memref(box or self._box(rows, cols), t.element_type, WORKGROUP)
        anchor = self.c.nest
        cast = CastOp(operand, UnrankedMemRefType(t.element_type, t.memory_space), location=self.loc,
                      name_hint=f"{operand.name_hint or 'x'}_unranked")
        anchor.parent.insert_before(anchor, cast)
        dtype = TensorMapDescriptorType(tile, "none" if cols else "swizzle_128b", "none", "zero", "none")
        op = TmaCreateDescriptorOp(cast.results[0], [self.host.constant(x) for x in tile.shape], dtype,
                                   location=self.loc, name_hint=f"{operand.name_hint or 'x'}_tma")
        anchor.parent.insert_before(anchor, op)
        return op.results[0]

    # -- the kernel ------------------------------------------------------------------------------------
    def build(self) -> Operation:
        c, t, host = self.c, self.t, self.host
        batch, m, n, _ = c.sizes
        if self.conv is not None:  # boxes of bn x bh x bw pixels by 64 channels, of 64 channels by 64 filters
            self.da = self._descriptor(self.plan.a, 0, box=(*self.conv.box, self.bk))
            self.db = self._descriptor(self.plan.b, 0, box=(1, 1, self.bk, self.bk))
        else:
            self.da = self._descriptor(self.plan.a, self.bk if self.plan.a_mn_major else t.BM)  # K x 64 chunks
            self.db = self._descriptor(self.plan.b, self.bk if self.plan.b_mn_major else t.b_slice)  # K x 64 chunks
        self.cols, self.rows = -(-n // t.BN), self.conv.tiles if self.conv is not None else -(-m // t.BM)
        self.tiles = self.cols * self.rows * batch * t.splits
        if t.splits > 1:  # the slices' partial sums: [slice, row, column]
            shape = (t.splits, *(c.trips[lp] for lp in c.band))
            alloc = AllocOp(memref(shape, f32), location=self.loc, name_hint="partial_sums")
            c.nest.parent.insert_before(c.nest, alloc)
            self.workspace = alloc.results[0]
        self.grid = min(self.tiles, t.grid or self.gpu.sm_count)  # persistent: a block per multiprocessor
        self.store, self.store_at, smem_bytes = self._store_plan() if self.tma_store else (None, 0, t.shared_bytes)
        if self.store is not None:
            self.d_out = self._descriptor(self.store.memref, t.BM, t.BN)
        # clusters: the C blocks of a cluster (along x) compute C consecutive tile rows of one tile column
        grid = [self.grid, 1, 1] if t.persistent else [self.cols * t.cluster, self.rows // t.cluster, batch * t.splits]
        launch = new_launch(host, c.nest, [host.constant(x) for x in grid], (t.threads, 1, 1),
                            (t.cluster, 1, 1) if t.cluster > 1 else ())
        self.block = launch.body.args[:3]
        self.tid = launch.body.args[3]
        at = self.top = _At(launch.body.ops[-1], self.loc)
        self.smem = at.add(AllocOp(memref((smem_bytes,), i8, WORKGROUP), location=self.loc,
                                   name_hint="smem")).results[0]
        group = MBarrierGroupType(WORKGROUP, t.stages)
        self.full = at.add(MBarrierCreateOp(group, location=self.loc, name_hint="full")).results[0]
        self.empty = at.add(MBarrierCreateOp(group, location=self.loc, name_hint="empty")).results[0]
        self.turn = self.drained = None
        if t.pingpong:
            self.turn, self.drained = (at.add(MBarrierCreateOp(MBarrierGroupType(WORKGROUP, t.consumers),
                                                               location=self.loc, name_hint=x)).results[0]
                                       for x in ("turn", "drained"))
        first = self._if(at, [_d(0)], [self.tid], eq=True)
        for s in range(t.stages):
            first.add(MBarrierInitOp(self.full, self._c(s), self._c(1), location=self.loc))
            # a stage is free once the consumers of every block of the cluster (whose loads fill it) are done
            first.add(MBarrierInitOp(self.empty, self._c(s), self._c(1 if t.pingpong else t.consumers * t.cluster),
                                     location=self.loc))
        for w in range(t.consumers if t.pingpong else 0):  # a consumer's turn: the one before it is done
            first.add(MBarrierInitOp(self.turn, self._c(w), self._c(WARPGROUP), location=self.loc))
            first.add(MBarrierInitOp(self.drained, self._c(w), self._c(WARPGROUP), location=self.loc))
        first.add(FenceMbarrierInitOp(location=self.loc))
        if t.cluster > 1:  # every block's mbarriers are set up before another block's loads or arrivals reach them
            at.add(ClusterArriveOp(True, location=self.loc))
            at.add(ClusterWaitOp(True, location=self.loc))
        else:
            at.add(BarrierOp(location=self.loc))
        producer, consumer = self._if(at, [WARPGROUP - 1 - _d(0)], [self.tid], with_else=True)
        self._producer(producer)
        self._consumer(consumer)
        if t.cluster > 1:  # no block exits (its shared memory gone) while another may still arrive on its mbarriers
            at.add(ClusterArriveOp(location=self.loc))
            at.add(ClusterWaitOp(location=self.loc))
        if self.workspace is not None:  # the second launch: the slices added in slice order, then the epilogue
            add_partial_sums(c, self.workspace, t.splits, host, self.gpu.default_threads_per_block)
        c.nest.erase()
        return launch

    def _store_plan(self) -> tuple[AffineStoreOp | None, int, int]:
        """(the epilogue's store of the tile, put through shared memory and one TMA store, the byte of the
        shared buffer the tile goes at, the buffer's bytes) -- or (None, 0, the tiles' shared bytes): the
        epilogue stores each element itself. Taken when the nest's last op is its only store, to a memref of
        static shape indexed (the batch,) the row, the column, in that order, whose rows are multiples of 16
        bytes (TMA's strides), and shared memory has room: in the ring after the sums (one tile per block),
        else after everything; not for split-K's partial sums nor consumers taking turns (each would need its
        own tile and bulk-group waits)."""
        t, c = self.t, self.c
        none = (None, 0, t.shared_bytes)
        stores = [op for op in c.post if isinstance(op, AffineStoreOp)]
        if self.workspace is not None or t.pingpong or self.conv is not None or len(stores) != 1 or \
                c.post[-1] is not stores[0]:
            return none
        st = stores[0]
        mt = st.memref.type
        # indexed (batch, row, column) as the TMA store's box: not the band's order, which may put the batch inside
        order = tuple(lp.induction_var for lp in (*c.batch, *c.rows, *c.cols))
        if not isinstance(mt, MemRefType) or None in mt.shape or mt.rank != len(order) or tuple(st.indices) != order \
                or st.map != AffineMap.identity(len(order)) or st.value.type != mt.element_type:
            return none
        width = mt.element_type.width // 8
        if not width or (mt.shape[-1] * width) % 16 or (t.BN * width) % 16:
            return none
        tile_bytes = t.BM * t.BN * width
        room = self.gpu.shared_memory_per_block_optin - 1024
        if not t.persistent and t.ring_bytes - t.epilogue_bytes >= tile_bytes:
            return st, t.epilogue_bytes, t.shared_bytes
        return (st, t.shared_bytes, t.shared_bytes + tile_bytes) if t.shared_bytes + tile_bytes <= room else none

    def _c(self, value: int) -> Value:
        return self.host.constant(value)

    def _i32(self, at: _At, value: int) -> Value:
        return at.add(ConstantOp.of(value, i32, location=self.loc)).results[0]

    def _if(self, at: _At, exprs: list[AffineExpr], operands: list[Value], eq=False, with_else: bool = False):
        """An ``affine.if`` on ``exprs`` (over ``operands``) ``== 0`` (``eq``: one flag for all, or one per
        expression) or ``>= 0``; emitters into its then (and else) blocks."""
        flags = tuple(eq) if isinstance(eq, (tuple, list)) else (eq,) * len(exprs)
        cond = IntegerSet(len(operands), 0, tuple(exprs), flags)
        op = at.add(AffineIfOp(cond, operands, with_else=with_else, location=self.loc))
        then = _At(op.then_block.ops[-1], self.loc)
        return (then, _At(op.else_block.ops[-1], self.loc)) if with_else else then

    def _parity(self, at: _At, expr: AffineExpr, operands: list[Value]) -> Value:
        """``expr(operands) mod 2 == 1`` as an i1."""
        bit = at.apply(expr % 2, operands, "phase")
        return at.add(CmpIOp("eq", bit, self._c(1), location=self.loc, name_hint="parity")).results[0]

    def _view(self, at: _At, offset: AffineExpr, operands: list[Value], t: MemRefType, name: str) -> Value:
        shift = at.apply(offset, operands, f"{name}_at")
        return at.add(ViewOp(self.smem, shift, [], t, location=self.loc, name_hint=name)).results[0]

    def _over_tiles(self, at: _At, first: Value | None = None, every: int = 1) -> tuple[_At, Value | None]:
        """An emitter for the work on one tile and the block's tile number ``i`` (``None``: the block's only
        tile): persistent blocks loop over tiles ``i * grid + block`` (every ``every``-th from ``first``);
        the tile's coordinates (:meth:`_enter_tile`) are set for what is built inside."""
        if not self.t.persistent:
            bx, by, bz = self.block
            self._enter_tile(at, bx, by, bz)
            return at, None
        count = -(-self.tiles // self.grid)
        loop = at.add(AffineForOp(0, [], -(-count // every), [], 1, [], iv_name="tile", location=self.loc))
        body = _At(loop.body.ops[-1], self.loc)
        ops = [loop.induction_var] + ([first] if first is not None else [])
        i = body.apply(_d(0) * every + (_d(1) if first is not None else 0), ops, "i") if ops[1:] or every > 1 \
            else loop.induction_var
        inside = self._if(body, [AffineExpr.constant(self.tiles - 1) - _d(0) * self.grid - _d(1)],
                          [i, self.block[0]])
        p = _d(0) * self.grid + _d(1)
        plane = self.cols * self.rows
        bz = inside.apply(p.floordiv(plane), [i, self.block[0]], "bz")
        bx = inside.apply((p % plane) % self.cols, [i, self.block[0]], "bx")
        by = inside.apply((p % plane).floordiv(self.cols), [i, self.block[0]], "by")
        self._enter_tile(inside, bx, by, bz)
        return inside, i

    def _enter_tile(self, at: _At, bx: Value, by: Value, bz: Value) -> None:
        """The tile of block coordinates ``(bx, by, bz)`` in the raster order; grid z runs (slice, batch), the
        batch fastest. In clusters of C blocks, block ``bx = pair * C + rank`` computes tile row ``group * C +
        rank`` of the column the raster order gives ``(pair, by)``: the blocks of a cluster share B's tile."""
        t, batch = self.t, self.c.sizes[0]
        if t.cluster > 1:
            self.rank = at.apply(_d(0) % t.cluster, [bx], "rank")
            pair = at.apply(_d(0).floordiv(t.cluster), [bx], "pair")
            self.bx, group = raster_order(self.cols, self.rows // t.cluster, self.gpu.sm_count, pair, by, at)
            self.by = at.apply(_d(0) * t.cluster + _d(1), [group, self.rank], "tile_row")
        else:
            self.bx, self.by = raster_order(self.cols, self.rows, self.gpu.sm_count, bx, by, at)
        self.slice = at.apply(_d(0).floordiv(batch), [bz], "slice") if batch > 1 else bz
        self.batch = at.apply(_d(0) % batch, [bz], "batch") if batch > 1 else None
        self.row0 = at.apply(_d(0) * t.BM, [self.by], "row0")
        self.col0 = at.apply(_d(0) * t.BN, [self.bx], "col0")
        if self.conv is not None:  # the tile's block of output pixels: its first image, row and column
            (bn, bh, bw), (_, th, tw) = self.conv.box, self.conv.counts
            firsts = (_d(0).floordiv(th * tw) * bn, (_d(0).floordiv(tw) % th) * bh, (_d(0) % tw) * bw)
            self.pixel0 = [at.apply(x, [self.by], name) for x, name in zip(firsts, ("n0", "h0", "w0"))]

    def _step(self, kt: Value, i: Value | None, shift: int = 0) -> tuple[AffineExpr, list[Value]]:
        """The block's ring step of k step ``kt + shift`` of its tile ``i``, over the returned operands."""
        if i is None:
            return _d(0) + shift, [kt]
        return _d(1) * self.steps + _d(0) + shift, [kt, i]

    def _producer(self, at: _At) -> None:
        """Warpgroup 0: thread 0 fills the ring (the other threads have nothing to do)."""
        t = self.t
        at.add(SetMaxRegisterOp("decrease", PRODUCER_REGISTERS, location=self.loc))
        one = self._if(at, [_d(0)], [self.tid], eq=True)
        mask = None  # in a cluster, B's slices go to every block
        if t.cluster > 1:
            mask = one.add(ConstantOp.of((1 << t.cluster) - 1, i16, location=self.loc, name_hint="all")).results[0]
        tile, i = self._over_tiles(one)
        loop = tile.add(AffineForOp(0, [], self.steps, [], 1, [], iv_name="kt", location=self.loc))
        body = _At(loop.body.ops[-1], self.loc)
        kt = loop.induction_var
        g, ops = self._step(kt, i)
        s = body.apply(g % t.stages, ops, "stage")
        ticks = self._c(WAIT_TICKS)
        body.add(MBarrierTryWaitParityOp(self.empty, s, self._parity(body, g.floordiv(t.stages) + 1, ops), ticks,
                                         location=self.loc))
        body.add(MBarrierArriveExpectTxOp(self.full, s, self._c(t.stage_bytes), location=self.loc))
        k0 = body.apply((_d(0) + _d(1) * self.steps) * self.bk, [kt, self.slice], "k0")
        outer = [self.batch if self.batch is not None else self._c(0)] if self.plan.batched else []
        a_coords, b_coords = [k0, self.row0, *outer], lambda col: [col, k0, *outer]
        if self.conv is not None:
            a_coords, b_coords = self._conv_coords(body, k0)
        if not self.plan.a_mn_major:  # one box: the view is the descriptor's box
            a = self._view(body, _d(0) * t.stage_bytes, [s], self.da.type.tensor, "a_tile")
            body.add(TmaAsyncLoadOp(self.da, a_coords, self.full, s, a, location=self.loc))
        else:
            self._chunks(body, (_d(0) * t.stage_bytes, [s]), self.da, (self.row0, t.BM), "a",
                         lambda row: [row, k0, *outer])
        # B: the whole tile, or in a cluster the block's slice (columns rank * b_slice ...) multicast to every block
        first, ops = self.col0, [s]
        if t.cluster > 1:
            first = body.apply(_d(0) + _d(1) * t.b_slice, [self.col0, self.rank], "b_first")
            ops = [s, self.rank]
        # where the slice goes in the stage (the bytes before it: A, then the other blocks' slices)
        at = _d(0) * t.stage_bytes + t.a_bytes + (_d(1) * (t.b_slice * ROW_BYTES) if t.cluster > 1 else 0)
        if not self.plan.b_mn_major:
            b = self._view(body, at, ops, self.db.type.tensor, "b_tile")
            body.add(TmaAsyncLoadOp(self.db, [k0, first, *outer], self.full, s, b, multicast_mask=mask,
                                    location=self.loc))
            return
        self._chunks(body, (at, ops), self.db, (first, t.b_slice), "b", b_coords, mask)

    def _conv_coords(self, body: _At, k0: Value):
        """A convolution's TMA coordinates at flat k ``k0`` (``(kh, kw, c)`` row-major, 64 channels of one
        ``(kh, kw)``): the A box's (channel, input column, input row, image) -- the tile's pixel block shifted by
        ``(kh - ph, kw - pw)``, negative or past the edge where it pads -- and a function of a filter column
        giving the B box's (filter, channel, kw, kh)."""
        g = self.conv
        (_, kw_size), channels, (ph, pw) = g.window, g.channels, g.pad
        c0 = body.apply(_d(0) % channels, [k0], "c0")
        kw = body.apply(_d(0).floordiv(channels) % kw_size, [k0], "kw")
        kh = body.apply(_d(0).floordiv(channels * kw_size), [k0], "kh")
        n0, h0, w0 = self.pixel0
        a = [c0, body.apply(_d(0) + _d(1) - pw, [w0, kw], "w_in"), body.apply(_d(0) + _d(1) - ph, [h0, kh], "h_in"),
             n0]
        return a, lambda col: [col, c0, kw, kh]

    def _chunks(self, body: _At, stage: tuple, desc: Value, cols: tuple, name: str, coords,
                mask: Value | None = None) -> None:
        """An MN-major operand (A given K x M, B given K x N) loaded as 64-column chunks of 64 k rows, one after
        the other from the place ``stage`` (an offset expression over its operands): its ``width`` rows/columns
        from ``first`` (``cols``), each box at ``coords(its first column)`` (multicast to the blocks of
        ``mask``)."""
        offset, ops = stage
        first, width = cols
        box = desc.type.tensor  # each chunk is one box of the descriptor
        for chunk in range(width // self.bk):
            tile = self._view(body, offset + chunk * self.bk * ROW_BYTES, ops, box, f"{name}_chunk{chunk}")
            col = body.apply(_d(0) + chunk * self.bk, [first], f"{name}{chunk}") if chunk else first
            body.add(TmaAsyncLoadOp(desc, coords(col), self.full, ops[0], tile, multicast_mask=mask,
                                    location=self.loc))

    def _consumer(self, at: _At) -> None:
        """Warpgroups 1..: the k loop on the matrix units, then the epilogue (per tile, when persistent)."""
        t = self.t
        at.add(SetMaxRegisterOp("increase", CONSUMER_REGISTERS, location=self.loc))
        wg = at.apply(_d(0).floordiv(WARPGROUP) - 1, [self.tid], "consumer")
        if t.pingpong:
            at, i = self._over_tiles(at, wg, t.consumers)
            self._wait_turn(at, i, self.turn)
        else:
            at, i = self._over_tiles(at)
        acc = self._k_loop(at, wg, i)
        if t.pingpong:  # the next tile's consumer may start its k loop: this one's steps are all waited for
            nxt = at.apply((_d(0) + 1) % t.consumers, [wg], "next_consumer")
            at.add(MBarrierArriveOp(self.turn, nxt, location=self.loc))
        at.add(WgmmaWaitGroupSyncOp(0, location=self.loc))
        if t.persistent:  # the last step's stage goes back to the producer too
            g, ops = self._step(self._c(0), i, self.steps - 1)
            last = self._if(at, [_d(0) % WARPGROUP], [self.tid], eq=True)
            last.add(MBarrierArriveOp(self.empty, last.apply(g % t.stages, ops, "done_stage"), location=self.loc))
        if t.pingpong:  # the warpgroup's own named barrier (ids 1, 2, ...)
            bar_id = at.add(IndexCastOp(at.apply(_d(0) + 1, [wg], "barrier"), i32, location=self.loc)).results[0]
        else:
            bar_id = self._i32(at, 1)
        bar_threads = self._i32(at, WARPGROUP if t.pingpong else t.consumers * WARPGROUP)
        # no consumer still reads the sums' buffer (the ring, or the last tile's sums) ...
        if t.pingpong:  # ... the previous tile's consumer has read all of it
            self._wait_turn(at, i, self.drained)
        else:
            at.add(NamedBarrierOp(bar_id, bar_threads, location=self.loc))
        base = t.ring_bytes if t.persistent else 0
        part = self._view(at, base + _d(0) * (0 if t.pingpong else t.rows * t.BN * 4), [wg],
                          memref((t.rows, t.BN), f32, WORKGROUP), "sums")
        at.add(WarpgroupMmaStoreOp(acc, part, location=self.loc))
        at.add(NamedBarrierOp(bar_id, bar_threads, location=self.loc))  # ... and all of them are in it
        self._epilogue(at)
        if self.store is not None:
            self._store_tile(at, bar_id, bar_threads)
        if t.pingpong:  # the next tile's consumer may store its sums
            at.add(MBarrierArriveOp(self.drained, at.apply((_d(0) + 1) % t.consumers, [wg], "next_consumer"),
                                    location=self.loc))

    def _store_tile(self, at: _At, bar_id: Value, bar_threads: Value) -> None:
        """The epilogue's tile, written to shared memory by the consumers, goes to global memory as one TMA store
        (what lies past the tensor's edges is not written): the writes made visible to the async proxy, a
        barrier of the consumers, then the first consumer thread stores and waits until the tile has been read
        (a persistent block's next tile writes it again after the next barriers)."""
        at.add(FenceProxyOp("async.shared", "cta", location=self.loc))
        at.add(NamedBarrierOp(bar_id, bar_threads, location=self.loc))
        one = self._if(at, [_d(0) - WARPGROUP], [self.tid], eq=True)
        outer = [self.batch if self.batch is not None else self._c(0)] if self.plan.batched else []
        one.add(TmaAsyncStoreOp(self.out_tile, self.d_out, [self.col0, self.row0, *outer], location=self.loc))
        one.add(CpAsyncBulkCommitGroupOp(location=self.loc))
        one.add(CpAsyncBulkWaitGroupOp(0, location=self.loc, attributes={"read": UnitAttr()}))

    def _wait_turn(self, at: _At, i: Value, group: Value) -> None:
        """Taking turns, tile ``i`` waits for tile ``i - 1``'s consumer (its 128 threads arrive on ``group``'s
        barrier of this consumer): on ``turn``, until it has waited for all its k steps, so that a wait on a
        stage's ``full`` barrier never passes on the phase of an earlier tile's step; on ``drained``, until it
        has read all of the epilogue's sums."""
        after = self._if(at, [_d(0) - 1], [i])
        wg = after.apply(_d(0) % self.t.consumers, [i], "me")
        after.add(MBarrierTryWaitParityOp(group, wg, self._parity(after, (_d(0) - 1).floordiv(self.t.consumers), [i]),
                                          self._c(WAIT_TICKS), location=self.loc))

    def _k_loop(self, at: _At, wg: Value, i: Value | None) -> Value:
        """The consumer's k loop on tile ``i``: returns the accumulator."""
        t = self.t
        acc_t = WarpgroupAccumulatorType(vector((t.rows, t.BN), f32))
        acc0 = at.add(WarpgroupMmaInitAccumulatorOp(acc_t, location=self.loc, name_hint="acc")).results[0]
        loop = at.add(AffineForOp(0, [], self.steps, [], 1, [acc0], iv_name="kt", location=self.loc))
        marker = AffineYieldOp([], location=self.loc)
        loop.body.append(marker)
        body = _At(marker, self.loc)
        kt, acc = loop.induction_var, loop.body.args[1]
        g, ops = self._step(kt, i)
        s = body.apply(g % t.stages, ops, "stage")
        body.add(MBarrierTryWaitParityOp(self.full, s, self._parity(body, g.floordiv(t.stages), ops),
                                         self._c(WAIT_TICKS), location=self.loc))
        # the logical M x K and K x N tiles, as upstream's descriptor types (the flags give their layouts)
        a_t = memref((t.rows, self.bk), self.el, WORKGROUP)
        b_t = memref((self.bk, t.BN), self.el, WORKGROUP)
        if t.pingpong:  # the whole tile's rows
            a = self._view(body, _d(0) * t.stage_bytes, [s], a_t, "a_part")
        else:
            a = self._view(body, _d(0) * t.stage_bytes + _d(1) * (t.rows * ROW_BYTES), [s, wg], a_t, "a_part")
        b = self._view(body, _d(0) * t.stage_bytes + t.a_bytes, [s], b_t, "b_tile")
        da = body.add(WarpgroupGenerateDescriptorOp(a, self.da, WarpgroupDescriptorType(a_t), location=self.loc,
                                                    name_hint="desc_a")).results[0]
        db = body.add(WarpgroupGenerateDescriptorOp(b, self.db, WarpgroupDescriptorType(b_t), location=self.loc,
                                                    name_hint="desc_b")).results[0]
        nxt = body.add(WarpgroupMmaOp(da, db, acc, 1, transpose_a=self.plan.a_mn_major,
                                      transpose_b=not self.plan.b_mn_major, location=self.loc,
                                      name_hint="acc")).results[0]
        # step kt - 1's group is complete (waitGroup = 1): its stage goes back to the producer -- in a cluster to
        # the producer of every block (thread r of the warpgroup arrives on block r's mbarrier)
        prev, prev_ops = self._step(kt, i, -1)
        if t.cluster > 1:
            release = self._if(body, [_d(0) - 1, t.cluster - 1 - _d(1) % WARPGROUP], [kt, self.tid])
            cta = release.apply(_d(0) % WARPGROUP, [self.tid], "cta")
            release.add(MBarrierArriveRemoteOp(self.empty, release.apply(prev % t.stages, prev_ops, "done_stage"),
                                               cta, location=self.loc))
        else:
            release = self._if(body, [_d(0) - 1, _d(1) % WARPGROUP], [kt, self.tid], eq=(False, True))
            release.add(MBarrierArriveOp(self.empty, release.apply(prev % t.stages, prev_ops, "done_stage"),
                                         location=self.loc))
        body.add(AffineYieldOp([nxt], location=self.loc))
        marker.erase()
        return loop.results[0]

    def _tile_rows(self, at: _At, r: AffineExpr, ops: list[Value]) -> tuple[list[Value], list[int]]:
        """The values of the band's row loops at tile row ``r`` (over ``ops``) and, per value, the size it must stay
        below where the tiles overhang it (else 0: no guard): the row, or a convolution's output pixel."""
        if self.conv is not None:
            return self._conv_pixel(at, r, ops)
        m, rows = self.c.sizes[1], self.c.rows
        row = at.apply(r + _d(len(ops)) * self.t.BM, [*ops, self.by], rows[0].induction_var.name_hint)
        return [row], [m if m % self.t.BM else 0]

    def _conv_pixel(self, at: _At, r: AffineExpr, ops: list[Value]) -> tuple[list[Value], list[int]]:
        """The output pixel ``(n, h, w)`` of tile row ``r`` (over ``ops``), in the order of the contraction's row
        loops, and per loop its size where the pixel blocks overhang it (else 0: no guard)."""
        (bn, bh, bw), g = self.conv.box, self.conv
        exprs = (r.floordiv(bh * bw) + _d(len(ops)), r.floordiv(bw) % bh + _d(len(ops)), r % bw + _d(len(ops)))
        pixel = [at.apply(e, [*ops, p], name) for e, p, name in zip(exprs, self.pixel0, ("n", "h", "w"))]
        sizes = (g.images, *g.out)
        guards = [size if size % b else 0 for size, b in zip(sizes, (bn, bh, bw))]
        return [pixel[k] for k in g.row_roles], [guards[k] for k in g.row_roles]

    def _epilogue(self, at: _At) -> None:
        """The consumer threads (of the tile: one warpgroup when they take turns) run the nest's ops around
        the reduction on their share of the tile's sums (in shared memory), consecutive threads on
        consecutive columns."""
        t, c, plan = self.t, self.c, self.plan.mma
        threads = WARPGROUP if t.pingpong else t.consumers * WARPGROUP
        base = t.ring_bytes if t.persistent else 0
        sums = self._view(at, AffineExpr.constant(base), [], memref((t.BM, t.BN), f32, WORKGROUP), "tile_sums")
        if self.store is not None:  # the TMA store's shared tile, which the loop fills
            self.out_tile = self._view(at, AffineExpr.constant(self.store_at), [],
                                       memref(self._box(t.BM, t.BN), self.store.memref.type.element_type, WORKGROUP),
                                       "out_tile")
        count = -(-(t.BM * t.BN) // threads)
        loop = at.add(AffineForOp(0, [], count, [], 1, [], iv_name="e", location=self.loc))
        body = _At(loop.body.ops[-1], self.loc)
        # over (e, tid): the thread's number among the tile's
        e = _d(0) * threads + (_d(1) % WARPGROUP if t.pingpong else _d(1) - WARPGROUP)
        r, col = e.floordiv(t.BN), e % t.BN
        ops = [loop.induction_var, self.tid]
        col_e = col.replace([_d(0), _d(1)]) + _d(2) * t.BN
        n = c.sizes[2]
        cons = []
        if (t.BM * t.BN) % threads:
            cons.append(AffineExpr.constant(t.BM - 1) - r)
        inside = body
        if cons:
            inside = self._if(body, cons, ops)
        mapping: dict = {}
        rv = inside.apply(r, ops, "r")
        cv = inside.apply(col, ops, "c")
        x = inside.add(LoadOp(sums, [rv, cv], location=self.loc, name_hint="sum")).results[0]
        col_iv = inside.apply(col_e, [*ops, self.bx], c.cols[0].induction_var.name_hint)
        rows, limits = self._tile_rows(inside, r, ops)
        # guards where the tiles overhang
        outer = [AffineExpr.constant(size - 1) - _d(k) for k, size in enumerate(limits) if size]
        if n % t.BN:
            outer.append(AffineExpr.constant(n - 1) - _d(len(limits)))
        if outer:
            inside = self._if(inside, outer, [*rows, col_iv])
        mapping.update((lp.induction_var, v) for lp, v in zip(c.rows, rows))
        mapping[c.cols[0].induction_var] = col_iv
        for lp in c.batch:
            mapping[lp.induction_var] = self.batch if self.batch is not None else self._c(0)
        if self.workspace is not None:  # split-K: the slice's partial sum, as is
            index = [self.slice] + [mapping[lp.induction_var] for lp in c.band]
            inside.add(AffineStoreOp(x, self.workspace, AffineMap.identity(len(index)), index, location=self.loc))
            return
        epilogue_ops(plan, inside, mapping, x, skip=self.store)
        if self.store is not None:  # into the shared tile of the TMA store
            tile = self.out_tile
            index = ([self._c(0)] if self.plan.batched else []) + [rv, cv]
            value = mapping.get(self.store.value, self.store.value)
            inside.add(AffineStoreOp(value, tile, AffineMap.identity(len(index)), index, location=self.loc))


def map_to_wgmma(plan: WgmmaPlan, tiles: WgmmaTiles, host: HostPlan | None = None,
                 gpu: GPUTarget | None = None, tma_store: bool = False) -> Operation:
    """Replace the contraction nest of ``plan`` by its warpgroup-MMA ``gpu.launch`` (see the module
    docstring); returns the launch. The caller checked ``tiles`` (:meth:`WgmmaTiles.invalid`, shared
    memory)."""
    from analysis.targets import DEFAULT_GPU

    host = host or HostPlan(plan.mma.c.nest.parent)
    return _Kernel(plan, tiles, host, gpu or DEFAULT_GPU, tma_store).build()

