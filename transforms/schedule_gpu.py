"""``gpu-schedule``: contractions (matmul, batched matmul, MLP) as shared-memory tiled kernels.

A *contraction nest* is what fusion and scalar replacement make of ``C = epilogue(A @ B)``: a
perfect band of 2 or 3 parallel loops ``([%b,] %i, %j)`` (constant bounds from 0, step 1) whose
innermost body holds one reduction loop ``%k`` (constant bounds, one value carried in
``iter_args``, a body of loads and arithmetic) between point-wise ops (the initial value
before it, an epilogue and stores after it). Each such nest becomes one ``gpu.launch``:

- **blocks** tile ``(%i, %j)`` by ``BM x BN`` (grid ``(N/BN, M/BM, batch)``); **threads**
  (``BN/TN x BM/TM``, 256) each own a ``TM x TN`` **register tile**: ``TM * TN`` sums carried
  in ``iter_args`` through the loops over ``%k``;
- ``%k`` is tiled by ``BK``; for each ``BK`` step every load of the reduction that varies with
  ``%k`` and only one of ``%i``/``%j`` (A's and B's) is **packed into shared memory** by all
  threads together -- ``S[kk][p]`` holds the value the load reads at row/column ``p`` of the
  block tile and step ``kk``, whatever its subscripts (a transposed operand, an offset, a
  convolution window), the threads' global reads running along the operand's contiguous
  dimension -- then a ``gpu.barrier``, the ``BK`` steps of the register tile reading the packed
  values (``TM + TN`` shared loads per step for ``TM * TN`` multiply-adds), and a barrier;
- the initial values, the epilogue and the stores run per element of the register tile.

Each sum keeps its order over ``%k`` (``k = 0, 1, ...``), so the kernel computes what the nest
computes, operation for operation; with FMA contraction enabled at code generation (the GPU
pipeline's default) products and sums fuse, within an ulp per step. Tile sizes come from the
target (H200 unless ``target=`` names another): the largest of 128x128, 128x64, 64x64, 32x32
(``BK`` 8) that gives at least one block per multiprocessor, preferring tiles that divide the
sizes; otherwise **partial tiles** are guarded: packed loads past a size read 0 (those values
only reach elements that are never stored), the last ``k`` step stops at ``K`` (no extra
terms, so sums stay exact), and each element's epilogue and stores run only inside the sizes.
Nests that are not contractions (or partial tiles whose initial values read memory) are left
for ``gpu-map`` (a note says why).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import analysis
from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import (
    AffineApplyOp,
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
from affine_ir.dialects.memref import AllocOp
from affine_ir.types import WORKGROUP, f32, memref, vector
from analysis.loops import perfect_band
from analysis.targets import GPUTarget, target

from .errors import TransformError
from .gpu_map_nest import HostPlan, new_launch
from .loop_utils import access_subscripts, loop_name, loops_text, top_level_loops, value_name
from .pass_base import Pass, PassContext, option, register_pass

__all__ = ["Contraction", "GpuSchedule", "TileConfig", "choose_tiles", "partial_tile_reason", "plan_contraction",
           "schedule_contraction"]

PASS = "gpu-schedule"
#: (BM, BN, BK, TM, TN) candidates, largest first; each has 256 threads.
TILE_CONFIGS = ((128, 128, 8, 8, 8), (128, 64, 8, 8, 4), (64, 64, 8, 4, 4), (32, 32, 8, 2, 2))
#: Rows (columns) of a register tile held in consecutive registers and read as one 16-byte word.
GROUP = 4
#: Extra elements per shared row of an operand stored transposed (its threads write down a
#: column): consecutive rows then start 4 banks apart instead of in the same bank.
SHARED_PAD = 4
#: Lanes of a vector copy into shared memory (16 bytes of f32).
VECTOR = 4


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
    batch: AffineForOp | None
    rows: AffineForOp
    cols: AffineForOp
    red: AffineForOp
    pre: list[Operation]
    post: list[Operation]
    packs: dict[int, str]  # id(load) -> "A" (varies with rows) or "B" (with cols)
    sizes: tuple[int, int, int, int]  # batch, M, N, K
    direct: list[Operation] = field(default_factory=list)  # loads of the reduction read per element

    def describe(self) -> str:
        b, m, n, k = self.sizes
        return f"({'batch ' + str(b) + ', ' if self.batch else ''}{m}x{n}, k {k})"


def _constant_loop(loop: AffineForOp) -> int | None:
    """The trip count of a loop from 0 with step 1 and a constant upper bound, else None."""
    if loop.step != 1 or loop.lower_bound_map.results != (AffineExpr.constant(0),):
        return None
    return analysis.constant_trip_count(loop)


def _uses(op: Operation, ivs: dict[int, str], nest: Operation) -> set[str] | None:
    """The IVs (by role) the subscripts of ``op`` use; None when a subscript uses another value
    computed in ``nest``."""
    leaves: list[Value] = []
    access_subscripts(op, leaves)
    out = set()
    for v in leaves:
        if id(v) in ivs:
            out.add(ivs[id(v)])
        elif _defined_in(v, nest):
            return None
    return out


def _defined_in(v: Value, nest: Operation) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op
    return op is not None and (op is nest or nest.is_ancestor_of(op))


def plan_contraction(nest: AffineForOp) -> Contraction | str:
    """The contraction of ``nest`` (see the module docstring), or why it is not one."""
    band = perfect_band(nest)
    if len(band) not in (2, 3):
        return f"{loops_text(band)}: a contraction needs a band of 2 or 3 parallel loops"
    trips = [_constant_loop(lp) for lp in band]
    if None in trips:
        return f"{loops_text(band)}: the band's loops must run from 0 by 1 to a constant"
    for lp in band:
        if not analysis.is_parallel(lp):
            return f"({loop_name(lp)}) is not parallel"
    body = [op for op in band[-1].body.ops if not isinstance(op, AffineYieldOp)]
    loops = [op for op in body if isinstance(op, AffineForOp)]
    if len(loops) != 1 or len(loops[0].iter_args) != 1:
        return f"the body of ({loop_name(band[-1])}) must hold one reduction loop carrying one value"
    red = loops[0]
    k = _constant_loop(red)
    if k is None:
        return f"the reduction ({loop_name(red)}) must run from 0 by 1 to a constant"
    batch, rows, cols = (band[0] if len(band) == 3 else None), band[-2], band[-1]
    ivs = {id(rows.induction_var): "i", id(cols.induction_var): "j", id(red.induction_var): "k"}
    if batch is not None:
        ivs[id(batch.induction_var)] = "b"
    for op in (o for o in body if o is not red):
        if op.regions:
            return f"'{op.name}' next to the reduction has regions"
    packs: dict[int, str] = {}
    direct: list[Operation] = []
    for op in red.body.ops:
        if isinstance(op, AffineYieldOp):
            continue
        if op.regions or isinstance(op, AffineStoreOp) or op.name in ("memref.store", "memref.load", "func.call"):
            return f"the reduction ({loop_name(red)}) holds '{op.name}' (only affine loads and arithmetic)"
        if isinstance(op, AffineLoadOp):
            used = _uses(op, ivs, nest)
            if used is None:
                return f"a load in ({loop_name(red)}) has subscripts computed in the nest"
            if "k" in used and ("i" in used) != ("j" in used):
                packs[id(op)] = "A" if "i" in used else "B"
            elif "i" in used or "j" in used:
                direct.append(op)
    k_pos = body.index(red)
    b = trips[0] if batch is not None else 1
    sizes = (b, trips[-2], trips[-1], k)
    return Contraction(nest, batch, rows, cols, red, body[:k_pos], body[k_pos + 1:], packs, sizes, direct)


def choose_tiles(sizes: tuple[int, int, int, int], gpu: GPUTarget) -> TileConfig:
    """The tile configuration for ``(batch, M, N, K)`` on ``gpu`` (see the module docstring):
    among the configurations that divide ``M``, ``N`` and ``K`` (else all of them, partial tiles
    guarded), the largest giving at least one block per multiprocessor, else the one with the
    most blocks (the smallest of those)."""
    b, m, n, k = sizes
    configs = [TileConfig(*c) for c in TILE_CONFIGS]
    dividing = [c for c in configs if m % c.BM == 0 and n % c.BN == 0 and k % c.BK == 0]
    candidates = dividing or configs

    def blocks(c: TileConfig) -> int:
        return b * -(-m // c.BM) * -(-n // c.BN)

    for c in candidates:
        if blocks(c) >= gpu.sm_count:
            return c
    return max(candidates, key=lambda c: (blocks(c), -c.BM * c.BN))  # ties: the least padding


# -- building the kernel ----------------------------------------------------------------------------------------
class _Emitter:
    """Appends ops before ``anchor`` in its block."""

    def __init__(self, anchor: Operation, location):
        self.anchor = anchor
        self.location = location

    def add(self, op: Operation) -> Operation:
        self.anchor.parent.insert_before(self.anchor, op)
        return op

    def apply(self, expr: AffineExpr, operands: list[Value], name: str | None = None) -> Value:
        op = AffineApplyOp(AffineMap(len(operands), 0, (expr,)), operands, location=self.location, name_hint=name)
        return self.add(op).results[0]


def _d(k: int) -> AffineExpr:
    return AffineExpr.dim(k)


def schedule_contraction(c: Contraction, tiles: TileConfig, host: HostPlan | None = None, *,
                         prefetch: bool = True) -> Operation:
    """Replace the contraction nest by its tiled ``gpu.launch`` (see the module docstring);
    returns the launch. Tiles need not divide the sizes: the packed loads past a size read 0,
    the last k step stops at ``K``, and each element's initial value, epilogue and stores run
    only inside the sizes (the caller checked :func:`partial_tile_reason`). With ``prefetch``
    (software pipelining) each thread loads its share of the next k step's operands into
    registers before computing the current one, so global loads overlap the arithmetic; the
    last step is peeled."""
    nest = c.nest
    loc = nest.location
    host = host or HostPlan(nest.parent)
    b, m, n, k = c.sizes
    tx_n, ty_n = tiles.threads
    grid = [host.constant(-(-n // tiles.BN)), host.constant(-(-m // tiles.BM)), host.constant(b)]
    launch = new_launch(host, nest, grid, (tx_n, ty_n, 1))
    bx, by, bz, tx, ty = launch.body.args[:5]
    e = _Emitter(launch.body.ops[-1], loc)
    kernel = _Kernel(c, tiles, e.apply(_d(1) * tx_n + _d(0), [tx, ty], "tid"), bx, by, tx, ty,
                     {c.batch.induction_var: bz} if c.batch is not None else {})
    kernel.rows = [e.apply(_d(0) * tiles.BM + tiles.offset(_d(1), r, "A"), [by, ty], f"i{r}") for r in range(tiles.TM)]
    kernel.cols = [e.apply(_d(0) * tiles.BN + tiles.offset(_d(1), q, "B"), [bx, tx], f"j{q}") for q in range(tiles.TN)]
    for ld in kernel.loads:
        p = tiles.BM if c.packs[id(ld)] == "A" else tiles.BN
        row = p + (SHARED_PAD if kernel.k_fast(ld) else 0)
        kernel.shared[id(ld)] = e.add(AllocOp(memref((tiles.BK, row), ld.result.type, WORKGROUP), location=loc,
                                              name_hint=f"{ld.memref.name_hint or 'x'}_shared")).results[0]
    inits = []  # the ops before the reduction, per element of the register tile
    for r in range(tiles.TM):
        for q in range(tiles.TN):
            mapping = kernel.element(r, q)
            for op in c.pre:
                e.add(op.clone(mapping))
            kernel.pre_values[(r, q)] = {v: mapping[v] for op in c.pre for v in op.results}
            inits.append(mapping.get(c.red.inits[0], c.red.inits[0]))
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
        finals = kernel.compute(e, last, list(loop.results[:len(inits)]), last_step=k - steps * tiles.BK)
    else:
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
        finals = list(loop.results)
    for r in range(tiles.TM):  # the epilogue per element
        for q in range(tiles.TN):
            mapping = kernel.element(r, q)
            mapping[c.red.results[0]] = finals[r * tiles.TN + q]
            at = e
            if m % tiles.BM or n % tiles.BN:  # only inside the sizes
                cond = IntegerSet(2, 0, (AffineExpr.constant(m - 1) - _d(0), AffineExpr.constant(n - 1) - _d(1)))
                guard = e.add(AffineIfOp(cond, [kernel.rows[r], kernel.cols[q]], location=loc))
                at = _Emitter(guard.then_block.ops[-1], loc)
            for op in c.post:
                at.add(op.clone(mapping))
    nest.erase()
    return launch


def _marker(loop: AffineForOp) -> Operation:
    """A placeholder at the end of the body of a loop with ``iter_args`` (no yield yet): ops go
    before it, the real yield last, then the caller erases it."""
    marker = AffineYieldOp([], location=loop.location)
    loop.body.append(marker)
    return marker


class _Kernel:
    """What the parts of one contraction kernel share: the plan, the tiles, thread and block ids,
    each thread's rows and columns, the shared buffers."""

    def __init__(self, c: Contraction, tiles: TileConfig, tid: Value, bx: Value, by: Value, tx: Value, ty: Value,
                 base: dict):
        self.c, self.tiles, self.tid, self.bx, self.by, self.tx, self.ty = c, tiles, tid, bx, by, tx, ty
        self.base = base
        self.loads = [op for op in c.red.body.ops if id(op) in c.packs]
        self.shared: dict[int, Value] = {}
        self.rows: list[Value] = []
        self.cols: list[Value] = []
        self.pre_values: dict[tuple[int, int], dict[Value, Value]] = {}  # the ops before the reduction, cloned

    def element(self, r: int, q: int) -> dict:
        """The value mapping for element (r, q) of the thread's register tile (with the clones of
        the ops before the reduction, once made: the reduction and the epilogue may use them)."""
        c = self.c
        return {**self.base, c.rows.induction_var: self.rows[r], c.cols.induction_var: self.cols[q],
                **self.pre_values.get((r, q), {})}

    def partial(self, ld: AffineLoadOp) -> bool:
        """Whether some copies of ``ld`` fall past a size (M or N for its side, or K)."""
        _, m, n, k = self.c.sizes
        size, tile = (m, self.tiles.BM) if self.c.packs[id(ld)] == "A" else (n, self.tiles.BN)
        return bool(size % tile or k % self.tiles.BK)

    def k_fast(self, ld: AffineLoadOp) -> bool:
        """Whether the operand's contiguous (last) subscript moves with ``k``."""
        leaves: list[Value] = []
        subs = access_subscripts(ld, leaves)
        kpos = next((i for i, v in enumerate(leaves) if v is self.c.red.induction_var), None)
        return kpos is not None and subs[-1].coefficient_of_dim(kpos) != 0

    def _layout(self, ld: AffineLoadOp) -> tuple[int, int, AffineExpr, AffineExpr]:
        """(p_size, per_thread, p, kk) of a packed load, p and kk over (copy index, tid): the
        threads' global reads run along the operand's contiguous dimension."""
        c, tiles = self.c, self.tiles
        p_size = tiles.BM if c.packs[id(ld)] == "A" else tiles.BN
        idx = _d(0) * tiles.thread_count + _d(1)
        if self.k_fast(ld):
            return p_size, tiles.BK * p_size // tiles.thread_count, idx.floordiv(tiles.BK), idx % tiles.BK
        return p_size, tiles.BK * p_size // tiles.thread_count, idx % p_size, idx.floordiv(p_size)

    def vector_lanes(self, ld: AffineLoadOp) -> int:
        """Lanes of the 16-byte copies of a packed load (1: scalar copies): an f32 operand
        contiguous along the block's rows/columns (last subscript ``p + ...``, the others free of
        it) whose per-thread share is a multiple of 4."""
        c = self.c
        if self.k_fast(ld) or ld.result.type != f32 or self.partial(ld):
            return 1
        par = c.rows if c.packs[id(ld)] == "A" else c.cols
        leaves: list[Value] = []
        subs = access_subscripts(ld, leaves)
        ppos = next((i for i, v in enumerate(leaves) if v is par.induction_var), None)
        p_size, per_thread, _, _ = self._layout(ld)
        if ppos is None or subs[-1].coefficient_of_dim(ppos) != 1 or any(ppos in e.used_dims() for e in subs[:-1]):
            return 1
        return VECTOR if per_thread % VECTOR == 0 and p_size % VECTOR == 0 else 1

    def _copies(self, ld: AffineLoadOp) -> list[tuple[AffineExpr, AffineExpr]]:
        """(p, kk) over (tid) of each copy of this thread (the first element of a vector copy)."""
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

    def global_loads(self, e: _Emitter, ld: AffineLoadOp, kt: Value) -> list[Value]:
        """This thread's share of what ``ld`` reads for the block at k step ``kt`` (one value per
        copy: scalars, or 16-byte vectors)."""
        c = self.c
        p_size = self._layout(ld)[0]
        side = c.packs[id(ld)]
        par, block_id = (c.rows, self.by) if side == "A" else (c.cols, self.bx)
        n = self.vector_lanes(ld)
        out = []
        for p_expr, kk_expr in self._copies(ld):
            g_par = e.apply(_d(1) * p_size + p_expr, [self.tid, block_id], "g")
            g_k = e.apply(_d(1) + kk_expr, [self.tid, kt], "gk")
            mapping = {**self.base, par.induction_var: g_par, c.red.induction_var: g_k}
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

    def _guarded_load(self, e: _Emitter, ld: AffineLoadOp, mapping: dict, g_par: Value, g_k: Value) -> Value:
        """``ld`` at (g_par, g_k) when both lie inside the sizes, else 0."""
        _, m, n, k = self.c.sizes
        size = m if self.c.packs[id(ld)] == "A" else n
        cond = IntegerSet(2, 0, (AffineExpr.constant(size - 1) - _d(0), AffineExpr.constant(k - 1) - _d(1)))
        guard = e.add(AffineIfOp(cond, [g_par, g_k], [ld.result.type], with_else=True, location=e.location))
        value = ld.clone(mapping)
        guard.then_block.append(value)
        guard.then_block.append(AffineYieldOp([value.results[0]], location=e.location))
        zero = ConstantOp.of(0, ld.result.type, location=e.location)
        guard.else_block.append(zero)
        guard.else_block.append(AffineYieldOp([zero.results[0]], location=e.location))
        return guard.results[0]

    def store_shared(self, e: _Emitter, values: list[Value]) -> None:
        """Store the values of :meth:`global_loads` (every packed load, in order) to shared memory."""
        k = 0
        for ld in self.loads:
            vector_copy = self.vector_lanes(ld) > 1
            for p_expr, kk_expr in self._copies(ld):
                m = AffineMap(1, 0, (kk_expr, p_expr))
                cls = AffineVectorStoreOp if vector_copy else AffineStoreOp
                e.add(cls(values[k], self.shared[id(ld)], m, [self.tid], location=e.location))
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
        k_val = body.apply(_d(0) + _d(1), [kt, kk], "k")
        packed: dict[int, list[Value]] = {}
        for ld in self.loads:
            side = c.packs[id(ld)]
            count, t = (tiles.TM, self.ty) if side == "A" else (tiles.TN, self.tx)
            packed[id(ld)] = [body.add(AffineLoadOp(self.shared[id(ld)],
                                                    AffineMap(2, 0, (_d(0), tiles.offset(_d(1), p, side))), [kk, t],
                                                    location=e.location)).results[0] for p in range(count)]
        out = []
        for r in range(tiles.TM):
            for q in range(tiles.TN):
                mapping = self.element(r, q)
                mapping[c.red.induction_var] = k_val
                mapping[c.red.body.args[1]] = loop.body.args[1 + r * tiles.TN + q]
                for ld in self.loads:
                    mapping[ld.result] = packed[id(ld)][r if c.packs[id(ld)] == "A" else q]
                for op in c.red.body.ops:
                    if isinstance(op, AffineYieldOp):
                        out.append(mapping.get(op.operands[0], op.operands[0]))
                    elif id(op) not in c.packs:
                        body.add(op.clone(mapping))
        body.add(AffineYieldOp(out, location=e.location))
        body.anchor.erase()
        return list(loop.results)


# -- the pass --------------------------------------------------------------------------------------------------
@register_pass
@dataclass(frozen=True)
class GpuSchedule(Pass):
    """``gpu-schedule``: contraction nests as shared-memory tiled kernels (see the module)."""

    name: ClassVar[str] = PASS
    summary: ClassVar[str] = "Contractions as gpu.launch kernels: block tiles packed in shared memory, register tiles"

    target: str = option("h200", "the GPU to choose tile sizes for (a name of analysis.targets)")
    tile_sizes: tuple[int, ...] = option((), "force the tiles BM,BN,BK,TM,TN (default: chosen for the target)")
    prefetch: bool = option(True, "software pipelining: load the next k step into registers during the current one")

    def __post_init__(self) -> None:
        if self.tile_sizes and len(self.tile_sizes) != 5:
            raise ValueError(f"tile-sizes takes BM,BN,BK,TM,TN, got {len(self.tile_sizes)} values")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        gpu = target(self.target)
        if not isinstance(gpu, GPUTarget):
            raise ValueError(f"{self.target!r} is not a GPU target")
        host = None
        for nest in top_level_loops(func):
            c = plan_contraction(nest)
            if isinstance(c, str):
                ctx.note(nest, f"left for gpu-map: {c}")
                continue
            tiles = choose_tiles(c.sizes, gpu) if not self.tile_sizes else _forced(self.tile_sizes, c)
            reason = partial_tile_reason(c, tiles) if tiles is not None else None
            if reason is not None:
                ctx.note(nest, f"left for gpu-map: {reason}")
                continue
            if tiles is None:
                ctx.note(nest, f"left for gpu-map: tile-sizes={','.join(map(str, self.tile_sizes))} give no valid "
                               f"block (whole copies per thread, TM/TN multiples of {GROUP} or below it, at most "
                               f"1024 threads)")
                continue
            host = host or HostPlan(func.body)
            try:
                launch = schedule_contraction(c, tiles, host, prefetch=self.prefetch)
            except TransformError as err:  # pragma: no cover - the plan checked what the build needs
                ctx.refused(nest, err)
                continue
            ctx.applied(launch, f"contraction {c.describe()} of ({loop_name(c.rows)}, {loop_name(c.cols)}) over "
                                f"({loop_name(c.red)}): {tiles.describe()}, {len(c.packs)} operand(s) packed in shared "
                                f"memory")



def _forced(sizes: tuple[int, ...], c: Contraction) -> TileConfig | None:
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
                f"the sizes, and it reads {value_name(c.direct[0].memref)} by row or column (not packed)")
    return None
