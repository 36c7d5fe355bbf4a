"""``gpu-map-mma``: contractions on the matrix units -- ``cp.async`` into a shared-memory ring,
``ldmatrix``, ``mma.sync`` and the epilogue on the accumulator fragments, one ``gpu.launch`` each.

What is mapped (:mod:`.map_mma_plan`): a contraction nest of :func:`~.schedule_gpu_plan.plan_contraction`
(rows, columns and batch loops, a chain of k loops: one for a matmul, a convolution's window as
the implicit GEMM's k) whose step adds ``extf(A) * extf(B)`` of 16-bit (f16/bf16) operands (either
may be zero-padded) to an f32 sum, any sizes (partial tiles). ``C = A @ B`` with ``A`` given
``M x K`` or ``K x M`` and ``B`` given ``K x N`` or ``N x K``, batched, with any point-wise epilogue::

    affine.for %i = 0 to 64 {                                 gpu.launch blocks(N/BN, M/BM, batch)
      affine.for %j = 0 to 64 {                                         threads(32 * warps) {
        %s = affine.for %k = 0 to 64 iter_args(%acc = %c0)      %sA = memref.alloc() : memref<S x BM x BK x f16, 3>
          %a = affine.load %A[%i, %k]      ; f16 -> extf    =>    (prologue: S-1 k steps in flight, a group each)
          %b = affine.load %B[%k, %j]      ; f16 -> extf          affine.for %s iter_args(fragments, groups) {
          %p = arith.mulf ; %acc + %p                                wait oldest group; gpu.barrier
        %t = arith.truncf %s : f32 to f16                            cp.async step s+S-1 -> stage (s-1) mod S
        affine.store %t, %C[%i, %j]                                  ldmatrix + mma.sync on stage s mod S }
                                                                   (S-1 last steps); epilogue per element

The kernel, for tiles :class:`~.map_mma_plan.MmaTiles` ``BM x BN x BK`` with ``warps_m x warps_n``
warps and ``S`` stages:

- **blocks** tile ``(rows, columns)`` by ``BM x BN`` (grid ``(N/BN, M/BM, batch)`` rounded up; beyond one
  wave, block ``(bx, by)`` computes a tile of a group of up to 8 block rows taken column by column, so
  that the blocks running together share their B columns in L2); ``32 * warps``
  threads, warp ``w`` owning the warp tile at rows ``(w / warps_n) * BM/warps_m``, columns
  ``(w % warps_n) * BN/warps_n``: ``BM/warps_m/16 x BN/warps_n/8`` accumulator fragments
  (``vector<2x2xf32>``, carried in ``iter_args``, starting at 0).
- **staging** (:mod:`.map_mma_staging`): each operand has a shared ring ``memref<S x R x C>``:
  ``BM x BK`` (``BN x BK``) rows when it is contiguous along k, ``BK x BM`` (``BK x BN``) when along its rows (columns).
  The threads copy a k step's tile as 16-byte chunks (``nvgpu.device_async_copy ... bypassL1``:
  ``cp.async.cg``), consecutive threads on consecutive chunks of a row, one group per step
  (``device_async_create_group``). A prologue puts steps ``0 .. S-2`` in flight, waits for step 0
  and loads its first fragments. Iteration ``s`` carries them (the register level of the
  pipeline) and, per k slice, issues its share of step ``s+S-1``'s copies into the stage step
  ``s-1`` used (grouped at the last slice), loads the next slice's fragments -- at the last slice
  after waiting for step ``s+1``'s group (``device_async_wait numGroups = S-2``) and a
  ``gpu.barrier``, step ``s+1``'s first fragments -- then runs the slice's ``mma.sync``; the last
  ``S-1`` steps are peeled (waits ``numGroups = S-3 .. 0``) -- except for steps of 4 or more k
  slices without gathered operands (TF32), where one loop runs every step, the step ahead wrapping
  to the current one past the end (:meth:`_Kernel.peels_tail`: as fast there, a quarter of the
  code). Threads beyond a stage's chunks
  write padding rows of the ring (no two threads write one slot).
- **gathered operands** (not in aligned 16-byte chunks: NCHW windows and filters, sizes not a
  multiple of 8): each thread loads elements of the step's tile (an ``affine.if`` on the sizes and
  the padding window, 0 outside) and stores them (``memref.store``) at the swizzled position, when the
  copies would be issued (the prologue's ``S-1`` steps in one loop, :meth:`_Kernel._prologue`; a ring
  of gathered operands only has 2 stages: :attr:`~.map_mma_plan.MmaPlan.most_stages`); a padded
  chunked operand (NHWC) gets ``srcElements`` 0 outside the window.
- **swizzle** (:func:`~.map_mma_staging.swizzle`): chunk ``c`` of shared row ``r`` is stored at chunk
  ``c xor s(r)`` (``arith.xori``): the 8 rows an ``ldmatrix`` phase reads (8 lanes, one 16-byte row
  each) then fall in 8 distinct 16-byte bank groups, and so do the chunks 8 consecutive threads
  copy -- no bank conflicts for either.
- **fragments** (:mod:`.map_mma_fragments`): per 16 (8, 32) of ``BK``, each warp loads its A
  fragments with ``ldmatrix.x4`` and its B fragments two at a time (``ldmatrix.x4`` split by
  ``vector.extract_strided_slice``) -- ``transpose`` where the shared rows run along k -- or, for
  32-bit operands whose shared rows run along k's other side, element by element
  (``memref.load``, ``vector.insert``), and issues ``frags_m x frags_n`` ``mma.sync``.
- **epilogue**: for each element ``[r][e]`` of each accumulator fragment (row ``g + 8r``, column
  ``2t + e`` of the fragment, ``g = lane / 4``, ``t = lane % 4``, as PTX lays out C) the nest's ops
  before the reduction, the initial value added (unless it is the constant 0), and the ops after
  it (truncation, bias, activation, stores) run on ``vector.extract`` of the element; columns
  ``2t`` and ``2t + 1`` go out in one ``affine.vector_store`` when :meth:`_Kernel._pair_store` allows.
- **partial tiles**: a copy past M, N or K reads nothing (``srcElements`` 0, an ``affine.if`` yielding
  8 or 0: the chunk is zero-filled; its indices clamped by ``affine.min`` into the operand), and each
  element's epilogue runs inside an ``affine.if`` on the element lying inside the sizes; zero
  rows/columns reach only elements never stored, zero k terms add exact zeros.

**Split-K** (option ``split-k``: 0 chosen, 1 off, ``S`` forced): when the tiles give fewer blocks than
the target has multiprocessors and k is long (:func:`~.map_mma_plan.choose_mma_split`: the target's
``sm_count`` and the split-K facts of its model), grid z runs ``S`` slices (``z = slice * batch +
batch index``) of ``ceil(steps / S)`` k steps each (the last slice's steps past K read zeros). The
blocks store their accumulators as they are into ``partial_sums: memref<S x band x f32>``, which the
function allocates before the launch and frees after; a second launch
(:func:`~.schedule_gpu.add_partial_sums`, gpu-schedule's, a thread per element) runs the ops before
the reduction, adds the initial value and the slices in slice order with the reduction's own
``arith.addf``, then the epilogue. No atomics: the same bits every run. The combine is a launch built
here rather than a nest left for ``gpu-map``: ``gpu-schedule``, next in the pipeline, would take a
nest of a sum for a contraction or reduction of its own and could regroup it.

Sums: each ``mma.sync`` adds 16 products to the accumulator (the interpreter: exactly, rounded once
to f32; the hardware in an unspecified order), so a sum is reassociated against the nest's
``k = 0, 1, ...`` order: integer-valued data (below 2**24) gives the nest's bits exactly; other data
agrees within the rounding of a K-term f32 sum. Collective ops (``ldmatrix``, ``mma.sync``) are
reached by all 32 lanes of every warp: no guard around them. A contraction that cannot be mapped is
left for ``gpu-schedule`` with the reason in the trace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineStoreOp, AffineVectorStoreOp, AffineYieldOp
from affine_ir.dialects.arith import ConstantOp, ExtfOp
from affine_ir.dialects.gpu import BarrierOp
from affine_ir.dialects.memref import AllocOp
from affine_ir.dialects.nvgpu import DeviceAsyncWaitOp, MmaSyncOp
from affine_ir.dialects.nvgpu_hopper import TmaAsyncStoreOp
from affine_ir.dialects.vector import ExtractOp, InsertOp
from affine_ir.traits import EffectKind
from affine_ir.types import IntegerType, f32, i32, memref, vector
from analysis.targets import DEFAULT_GPU, GPUTarget, gpu_target

from ..loop_utils import top_level_loops
from ..pass_base import Pass, PassContext, option, register_pass
from .emitter import Emitter as _At
from .gpu_map_nest import HostPlan, new_launch
from .map_mma_fragments import Fragments
from .map_mma_plan import (
    WGMMA_ONLY,
    MmaPlan,
    MmaTiles,
    choose_mma_split,
    choose_mma_tiles,
    effective_splits,
    epilogue_ops,
    fits,
    mma_split_candidates,
    plan_mma,
    raster_order,
    slice_steps,
    stage_count,
)
from .map_mma_staging import GatherElement, Staging, swizzle
from .map_wgmma import SCHEDULES, WgmmaPlan, WgmmaTiles, choose_wgmma_tiles, map_to_wgmma, plan_wgmma
from .map_wgmma_conv import ConvGeometry
from .schedule_gpu import add_partial_sums
from .schedule_gpu_plan import check_schedule_options, delinearized, plan_contraction

__all__ = ["GpuMapMma", "map_to_mma", "swizzle"]

PASS = "gpu-map-mma"


def _d(k: int) -> AffineExpr:
    return AffineExpr.dim(k)


def _loop(at: _At, lb: int, ub: int, inits: list[Value], name: str) -> tuple[AffineForOp, _At]:
    """A loop from ``lb`` to ``ub`` carrying ``inits``, and an emitter into its body (the caller adds
    the yield, then erases the emitter's placeholder)."""
    loop = at.add(AffineForOp(lb, [], ub, [], 1, inits, iv_name=name, location=at.location))
    marker = AffineYieldOp([], location=at.location)
    loop.body.append(marker)
    return loop, _At(marker, at.location)


def _split(values: list[Value], n_accs: int, n_groups: int) -> tuple[list[Value], list[Value], list[Value]]:
    """(accumulators, group tokens, fragments) of the k loop's carried values."""
    return values[:n_accs], values[n_accs:n_accs + n_groups], values[n_accs + n_groups:]


class _Kernel(Staging, Fragments):
    """Builds the launch of one plan (see the module docstring)."""

    def __init__(self, plan: MmaPlan, tiles: MmaTiles, host: HostPlan, gpu: GPUTarget, splits: int = 1):
        self.plan, self.tiles, self.host, self.gpu, self.splits = plan, tiles, host, gpu, splits
        self.c = plan.c
        self.loc = self.c.nest.location
        self.warp = gpu.warp_size
        self.threads = tiles.threads(self.warp)
        self.steps = self.slice_steps = slice_steps(self.c.sizes[3], tiles.BK, splits)
        self.k_covered = splits * self.steps * tiles.BK
        self.slice = self.workspace = None

    # -- expressions over the thread id (d0) ------------------------------------------------------------------
    @property
    def lane(self) -> AffineExpr:
        return _d(0) % self.warp

    def warp_offset(self, side: str) -> AffineExpr:
        """The first row (side "A") / column ("B") of the thread's warp tile within the block tile."""
        t = self.tiles
        w = _d(0).floordiv(self.warp)
        return (w.floordiv(t.warps_n) * t.warp_m) if side == "A" else (w % t.warps_n) * t.warp_n

    def side_size(self, side: str) -> tuple[int, Value]:
        t = self.tiles
        return (t.BM, self.by) if side == "A" else (t.BN, self.bx)

    # -- the kernel ------------------------------------------------------------------------------------
    def build(self) -> Operation:
        c, t, host = self.c, self.tiles, self.host
        b, m, n, _ = c.sizes
        if self.splits > 1:  # the slices' partial sums: [slice, *band]
            shape = (self.splits, *(c.trips[lp] + c.lows.get(lp, 0) for lp in c.band))
            alloc = AllocOp(memref(shape, c.red.results[0].type), location=self.loc, name_hint="partial_sums")
            c.nest.parent.insert_before(c.nest, alloc)
            self.workspace = alloc.results[0]
        grid = [host.constant(-(-n // t.BN)), host.constant(-(-m // t.BM)), host.constant(b * self.splits)]
        launch = new_launch(host, c.nest, grid, (self.threads, 1, 1))
        self.bx, self.by, self.bz, self.tid = launch.body.args[:4]
        at = self.top = _At(launch.body.ops[-1], self.loc)
        self.bx, self.by = raster_order(-(-n // t.BN), -(-m // t.BM), self.gpu.sm_count, self.bx, self.by, at)
        if self.splits > 1:  # grid z runs (slice, batch), the batch fastest
            self.slice = at.apply(_d(0).floordiv(b), [self.bz], "slice")
            self.bz = at.apply(_d(0) % b, [self.bz], "batch")
        self.batch = {lp.induction_var: e for lp, e in zip(c.batch, delinearized(c.batch, c.trips, c.lows))}
        self.rings = [self._ring(op) for op in self.plan.operands()]
        self.addresses = self.fragment_addresses()
        self.copy_slots = [self._gather_slots(r) if r.operand.gather else self._copy_slots(r) for r in self.rings]
        frag = vector((2, 2), self.plan.kind.acc)
        zero = at.add(ConstantOp.of(0 if self.plan.kind.acc == i32 else 0.0, frag, location=self.loc)).results[0]
        accs = [zero] * (t.frags_m * t.frags_n)
        groups = self._prologue(at)
        self._wait(at, groups[:1], len(groups) - 1)
        groups, frags = groups[1:], self.fragments(at, host.constant(0), 0)
        accs = self._k_loop(at, accs, groups, frags)
        self._epilogue(at, accs)
        if self.workspace is not None:  # the second launch: the slices added in slice order, then the epilogue
            add_partial_sums(c, self.workspace, self.splits, host, self.gpu.default_threads_per_block)
        c.nest.erase()
        return launch

    def _prologue(self, at: _At) -> list[Value]:
        """Steps ``0 .. S-2`` in flight: each step's chunks copied into its stage, a group per step
        (their tokens; none when every operand is gathered), then the gathered elements of those
        steps in one loop over them (one copy of the gathers in the code, not ``S-1``: the
        gathers are synchronous, so unrolling them would overlap nothing the copies do not)."""
        host, steps = self.host, self.tiles.stages - 1
        items = self.copy_items()
        chunks = [(r, slot) for r, slot in items if not isinstance(slot, GatherElement)]
        gathers = [(r, slot) for r, slot in items if isinstance(slot, GatherElement)]
        groups = [self._commit(at, self._issue_part(at, host.constant(s), host.constant(s), chunks))
                  for s in range(steps)] if chunks else []
        if gathers:  # a loop without iter_args: its body ends in an affine.yield already
            loop = at.add(AffineForOp(0, [], steps, [], 1, [], iv_name="kstep_pro", location=self.loc))
            self._issue_part(_At(loop.body.ops[-1], self.loc), loop.induction_var, loop.induction_var, gathers)
        return groups

    def peels_tail(self) -> bool:
        """Whether the last ``S-1`` steps are peeled (nothing left to issue, waits ``numGroups = S-3 ..
        0``) rather than run by the loop with the step ahead wrapped (:meth:`_k_loop`). Peeled when a
        step has at most 2 k slices (f16/bf16, int8) or an operand is gathered: measured side by side
        on the H100, the single loop was 7 % slower on the 4096^3 f16 kernel and 12 % on a gathered
        NCHW convolution (its tail gathers again), but as fast on TF32 (4 slices a step), whose
        peeled kernel is 1.8x the CUDA C and 2.5x the compile time."""
        slices = self.tiles.BK // self.plan.kind.k
        return slices <= 2 or any(op.gather for op in self.plan.operands())

    def _k_loop(self, at: _At, accs: list[Value], groups: list[Value], frags: list[Value]) -> list[Value]:
        """The k steps after the prologue (see the module docstring); the accumulators after the last.
        Peeled (:meth:`peels_tail`): a loop over the steps that issue copies, then the last ``S-1``
        steps one by one. Else one loop over every step: past the last step the step ahead wraps to
        the current one (``x - (x floordiv steps) * (S-1)``, ``x = s+S-1``: an L2-hot tile copied again
        into stages nobody reads), the waits keep ``S-2`` groups in flight throughout, and a last
        ``numGroups = 0`` wait retires those copies before the epilogue."""
        s_count, host = self.tiles.stages, self.host
        peel = self.peels_tail()
        main = self.steps - (s_count - 1) if peel else self.steps
        if main > 0:
            loop, body = _loop(at, 0, main, accs + groups + frags, "kstep")
            s = loop.induction_var
            accs, groups, frags = _split(list(loop.body.args[1:]), len(accs), len(groups))
            x = _d(0) + (s_count - 1)
            ahead = (body.apply(x if peel else x - x.floordiv(self.steps) * (s_count - 1), [s], "kstep_ahead"),
                     body.apply(x % s_count, [s], "stage_ahead"))
            accs, frags, groups = self._step(body, body.apply(_d(0) % s_count, [s], "stage"),
                                             body.apply((_d(0) + 1) % s_count, [s], "stage_next"), accs, frags,
                                             groups, ahead)
            body.add(AffineYieldOp(accs + groups + frags, location=self.loc))
            body.anchor.erase()
            accs, groups, frags = _split(list(loop.results), len(accs), len(groups))
        if not peel:
            if groups:  # the last iterations' copies (never read) land before the epilogue
                at.add(DeviceAsyncWaitOp(groups[-1], 0, location=self.loc))
            return accs
        for j in range(s_count - 1):  # the last S-1 steps: nothing more to issue
            nxt = None if j == s_count - 2 else host.constant((main + j + 1) % s_count)
            accs, frags, groups = self._step(at, host.constant((main + j) % s_count), nxt, accs, frags, groups)
        return accs

    def _wait(self, at: _At, groups: list[Value], pending: int) -> None:
        """Wait until at most ``pending`` groups are in flight (the oldest of ``groups`` landed; none
        when every operand is gathered), then a ``gpu.barrier``: every thread's copies are visible and
        every warp is done with the fragments it read before."""
        if groups:
            at.add(DeviceAsyncWaitOp(groups[0], pending, location=self.loc))
        at.add(BarrierOp(location=self.loc))

    def _step(self, at: _At, stage: Value, next_stage: Value | None, accs: list[Value], frags: list[Value],
              groups: list[Value], ahead: tuple[Value, Value] | None = None
              ) -> tuple[list[Value], list[Value], list[Value]]:
        """One k step from ``stage``, its first fragments ``frags`` already loaded (the register level of
        the software pipeline). Per 16 (8, 32) of k: the fragments of the next slice are loaded before
        the ``mma.sync`` of this one, so the matrix units never wait for ``ldmatrix``; before the last
        slice's ``mma.sync`` the threads wait for the next step's group and meet at the barrier, then
        load that step's first fragments from ``next_stage`` (none when this is the last step).
        ``ahead`` = (step, stage): the copies issued during this step, spread over its k slices and
        grouped at the last (before its wait), into the stage every warp finished reading before the
        previous barrier. ``groups``: the tokens of the groups in flight, oldest first. Returns
        (accumulators, the next step's first fragments, the groups in flight)."""
        slices = self.tiles.BK // self.plan.kind.k
        groups, tokens = list(groups), []
        items = self.copy_items()
        for ks in range(slices):
            if ahead is not None:  # the copies spread over the slices (the load queue never floods)
                part = items[len(items) * ks // slices:len(items) * (ks + 1) // slices]
                tokens += self._issue_part(at, *ahead, part)
                fresh = self._commit(at, tokens) if ks == slices - 1 else None
                groups += [fresh] if fresh is not None else []
            if ks + 1 < slices:
                nxt = self.fragments(at, stage, ks + 1)
            elif next_stage is not None:
                self._wait(at, groups[:1], len(groups) - 1)
                groups = groups[1:]
                nxt = self.fragments(at, next_stage, 0)
            else:
                nxt = []
            accs = self._mma(at, frags, accs)
            frags = nxt
        return accs, frags, groups

    def _mma(self, at: _At, frags: list[Value], accs: list[Value]) -> list[Value]:
        """The warp's ``frags_m x frags_n`` ``mma.sync`` on one k slice's fragments; the new accumulators."""
        t, kind = self.tiles, self.plan.kind
        a, b = frags[:t.frags_m], frags[t.frags_m:]
        accs = list(accs)
        for i in range(t.frags_m):
            for j in range(t.frags_n):
                k = i * t.frags_n + j
                accs[k] = at.add(MmaSyncOp(a[i], b[j], accs[k], [16, 8, kind.k], kind.input.width == 32,
                                           location=self.loc, name_hint="acc")).results[0]
        return accs

    def _epilogue(self, at: _At, accs: list[Value]) -> None:
        """The nest's ops around the reduction, per element of each accumulator fragment; the two
        adjacent columns of a fragment row stored at once (``affine.vector_store`` of 2 elements)
        when :meth:`_pair_store` allows."""
        t = self.tiles
        batch = {v: at.apply(e, [self.bz], v.name_hint) for v, e in self._batch_exprs(0)}
        pair = self._pair_store()
        for i in range(t.frags_m):
            for j in range(t.frags_n):
                acc = accs[i * t.frags_n + j]
                for r in range(2):
                    if pair is None:
                        for e in range(2):
                            self._element(at, batch, acc, i, j, r, e)
                        continue
                    first, inside = self._element(at, batch, acc, i, j, r, 0, skip=pair)
                    second, _ = self._element(at, batch, acc, i, j, r, 1, skip=pair, inside=inside)
                    el = pair.memref.type.element_type
                    v = inside.add(ConstantOp.of(0 if isinstance(el, IntegerType) else 0.0, vector((2,), el),
                                                 location=self.loc)).results[0]
                    for e, mapping in enumerate((first, second)):
                        v = inside.add(InsertOp(mapping.get(pair.value, pair.value), v, (e,), location=self.loc,
                                                name_hint="pair")).results[0]
                    inside.add(AffineVectorStoreOp(v, pair.memref, pair.map,
                                                   [first.get(x, x) for x in pair.indices], location=self.loc))

    def _pair_store(self) -> AffineStoreOp | None:
        """The epilogue's store when columns ``2t`` and ``2t + 1`` of a fragment row may be stored
        together: it is the epilogue's last op and its only write, its last subscript is the
        innermost column loop plus terms without it (consecutive columns: consecutive elements),
        no other subscript uses that loop, the loop's trip count is even and so is the column
        count (the guard of a partial tile holds for both columns when it holds for the first);
        not for split-K's partial sums."""
        c = self.c
        if self.workspace is not None or not c.post or not isinstance(c.post[-1], AffineStoreOp):
            return None
        store = c.post[-1]
        if any(e.kind == EffectKind.WRITE for op in c.post[:-1] for inner in op.walk()
               for e in inner.memory_effects()):
            return None
        inner = c.cols[-1]
        dims = [k for k, v in enumerate(store.indices[:store.map.num_dims]) if v is inner.induction_var]
        if len(dims) != 1 or inner.induction_var in store.indices[store.map.num_dims:]:
            return None
        d, rest = dims[0], store.map.results[:-1]
        last = store.map.results[-1]
        if last.coefficient_of_dim(d) != 1 or d in (last - _d(d)).used_dims() or any(d in e.used_dims() for e in rest):
            return None
        if c.trips[inner] % 2 or c.sizes[2] % 2:
            return None
        return store

    def _element(self, at: _At, batch: dict, acc: Value, i: int, j: int, r: int, e: int,
                 skip: Operation | None = None, inside: _At | None = None) -> tuple[dict, _At]:
        """Element ``[r][e]`` of fragment ``(i, j)``: the ops before the reduction, the initial value, the
        ops after it (all but ``skip``) in ``inside`` (default: the element's own bounds guard). Returns
        the value mapping and where the ops went."""
        c, t, plan = self.c, self.tiles, self.plan
        at = inside or at  # a second element in the first one's guard: its values are computed there
        g, q = self.lane.floordiv(4), self.lane % 4
        mapping = dict(batch)
        row = _d(1) * t.BM + self.warp_offset("A") + i * 16 + g + 8 * r
        col = _d(1) * t.BN + self.warp_offset("B") + j * 8 + q * 2 + e
        mapping.update(self._side_ivs(at, c.rows, row, self.by))
        mapping.update(self._side_ivs(at, c.cols, col, self.bx))
        x = at.add(ExtractOp(acc, (r, e), plan.kind.acc, location=self.loc, name_hint="sum")).results[0]
        if plan.kind.acc != c.red.results[0].type:  # f16 sums: the nest's ops take f32
            x = at.add(ExtfOp(x, f32, location=self.loc, name_hint="sum")).results[0]
        inside = inside or self._inside(at, row, col)
        if self.workspace is not None:  # split-K: the slice's partial sum, as is
            index = [self.slice] + [mapping[lp.induction_var] for lp in c.band]
            inside.add(AffineStoreOp(x, self.workspace, AffineMap.identity(len(index)), index, location=self.loc))
            return mapping, inside
        epilogue_ops(plan, inside, mapping, x, skip)
        return mapping, inside

    def _inside(self, at: _At, row: AffineExpr, col: AffineExpr) -> _At:
        """Where an element's epilogue goes: ``at``, or an ``affine.if`` on the element lying inside
        the sizes when the tiles do not divide them (``row``, ``col`` over (tid, block id))."""
        _, m, n, _ = self.c.sizes
        cons = [AffineExpr.constant(m - 1) - row.replace([_d(0), _d(1)])] if m % self.tiles.BM else []
        cons += [AffineExpr.constant(n - 1) - col.replace([_d(0), _d(2)])] if n % self.tiles.BN else []
        if not cons:
            return at
        guard = at.add(AffineIfOp(IntegerSet(3, 0, tuple(cons)), [self.tid, self.by, self.bx], location=self.loc))
        return _At(guard.then_block.ops[-1], self.loc)

    def _side_ivs(self, at: _At, loops: list[AffineForOp], linear: AffineExpr, block: Value) -> dict[Value, Value]:
        """The induction values of ``loops`` at the linear index ``linear`` (over (tid, block id))."""
        c = self.c
        return {lp.induction_var: at.apply(e.replace([linear]), [self.tid, block], lp.induction_var.name_hint)
                for lp, e in zip(loops, delinearized(loops, c.trips, c.lows))}


def map_to_mma(plan: MmaPlan, tiles: MmaTiles, host: HostPlan | None = None,
               gpu: GPUTarget = DEFAULT_GPU, splits: int = 1) -> Operation:
    """Replace the contraction nest of ``plan`` by its matrix-unit ``gpu.launch`` (see the module
    docstring); returns the launch. The caller checked that ``tiles`` are valid for the plan's
    kind and fit ``gpu`` (:func:`~.map_mma_plan.fits`). With ``splits > 1`` (split-K, see the
    module docstring) the launch's blocks write their slice's partial sums into a buffer the
    function allocates, and a second launch adds them in slice order and runs the epilogue."""
    host = host or HostPlan(plan.c.nest.parent)
    return _Kernel(plan, tiles, host, gpu, splits).build()


#: The values of gpu-map-mma's ``wgmma-conv`` option.
CONV_MODES = ("auto", "true", "false")


@register_pass
@dataclass(frozen=True)
class GpuMapMma(Pass):
    """``gpu-map-mma``: contractions on the matrix units (see the module)."""

    name: ClassVar[str] = PASS
    summary: ClassVar[str] = ("Contractions of 16-bit operands as mma.sync kernels: cp.async ring, swizzled shared "
                              "memory, ldmatrix, epilogue on the fragments")

    target: str = option(DEFAULT_GPU.name, "the GPU to choose tiles for (a name of analysis.targets)")
    tile_sizes: tuple[int, ...] = option((), "force the tiles BM,BN,BK,warps-m,warps-n (default: chosen for the "
                                                 "target)")
    stages: int = option(0, "stages of the shared-memory ring (0: as many as the shared memory holds, at most 4)")
    allow_tf32: bool = option(False, "map f32 contractions onto TF32 mma.sync m16n8k8 (inputs rounded to 10-bit "
                                     "mantissas; off by default, as in PyTorch)")
    accumulate_f16: bool = option(False, "accumulate f16 contractions in f16 fragments (f16 sums: see "
                                         "docs/tensor_cores.md for the tolerance)")
    split_k: int = option(0, "slices of k run by separate blocks, their partial sums added in slice order by a second "
                             "launch (0: chosen for the target when the grid is too small, 1: off)")
    wgmma: bool = option(False, "on sm_90 targets, contractions of K-major f16/bf16 operands on warpgroup MMA fed by "
                                "TMA and mbarriers, with a producer warpgroup (transforms/gpu/map_wgmma.py)")
    wgmma_tiles: tuple[int, ...] = option((), "force the warpgroup-MMA tiles BM,BN,consumer-warpgroups (default: "
                                              "chosen for the target)")
    wgmma_schedule: str = option("", "how warpgroup-MMA blocks cover the tiles: blocks (one tile each), persistent "
                                     "(a block per multiprocessor looping over tiles), pingpong (persistent, the "
                                     "consumer warpgroups taking turns on whole tiles); default: chosen for the "
                                     "target")
    persistent_blocks: int = option(0, "the blocks of a persistent warpgroup-MMA kernel (0: one per multiprocessor)")
    wgmma_conv: str = option("auto", "warpgroup MMA for NHWC convolutions (HWCF filters, stride 1, channels a multiple "
                                     "of 64) as implicit GEMMs whose A tiles are TMA boxes of the input window "
                                     "(transforms/gpu/map_wgmma_conv.py): true, false, or auto (the default: when "
                                     "their pixel blocks fill at least half the multiprocessors; measured faster than "
                                     "mma.sync there on the H100, slower on most smaller grids, RESULTS.md)")
    wgmma_cluster: int = option(1, "warpgroup MMA (blocks schedule): thread-block clusters of this many blocks along "
                                   "M (1, 2, 4 or 8), each block loading a slice of the shared B tile and "
                                   "multicasting it to all by TMA (1: no clusters, the default: clusters of 2 measured "
                                   "1-10 % slower on the H100, RESULTS.md)")
    tma_store: bool = option(False, "warpgroup MMA: the epilogue writes its output tile to shared memory and one TMA "
                                    "store puts it in global memory (where it applies: see map_wgmma._store_plan; off "
                                    "by default: 4-7 % slower than per-element stores on the H100, RESULTS.md)")

    def __post_init__(self) -> None:
        check_schedule_options(self.tile_sizes, "BM,BN,BK,warps-m,warps-n", self.split_k)
        if self.wgmma_tiles and len(self.wgmma_tiles) != 3:
            raise ValueError(f"wgmma-tiles takes BM,BN,consumer-warpgroups, got {list(self.wgmma_tiles)}")
        if self.persistent_blocks < 0:
            raise ValueError(f"persistent-blocks must be 0 (one per multiprocessor) or more, got "
                             f"{self.persistent_blocks}")
        if self.wgmma_schedule and self.wgmma_schedule not in SCHEDULES:
            raise ValueError(f"wgmma-schedule takes one of {', '.join(SCHEDULES)}, got {self.wgmma_schedule!r}")
        if self.wgmma_cluster not in (1, 2, 4, 8):
            raise ValueError(f"wgmma-cluster takes 1, 2, 4 or 8 blocks, got {self.wgmma_cluster}")
        if self.wgmma_conv not in CONV_MODES:
            raise ValueError(f"wgmma-conv takes one of {', '.join(CONV_MODES)}, got {self.wgmma_conv!r}")
        if self.stages < 0 or self.stages == 1:
            raise ValueError(f"stages must be 0 (chosen) or at least 2, got {self.stages}")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        gpu = gpu_target(self.target)
        host = None
        for nest in top_level_loops(func):
            c = plan_contraction(nest)
            if isinstance(c, str):
                ctx.note(nest, f"left for gpu-schedule (SIMT): not a contraction: {c}")
                continue
            plan = plan_mma(c, gpu, self.allow_tf32, self.accumulate_f16)
            wgmma_note = ""
            if self.wgmma and not isinstance(plan, str):
                host = host or HostPlan(func.body)
                launch, wgmma_note = self._wgmma(plan, gpu, host, ctx)
                if launch is not None:
                    continue
            if not isinstance(plan, str) and str(plan.kind.input) in WGMMA_ONLY:
                plan = f"{plan.kind.input} operands go to the matrix units only through warpgroup MMA " \
                       f"(wgmma=true on an sm_90 target){wgmma_note or ''}"
            tiles = self._tiles(plan, gpu) if not isinstance(plan, str) else plan
            if isinstance(tiles, str):
                ctx.note(nest, f"left for gpu-schedule (SIMT): contraction {c.describe()}: {tiles}")
                continue
            splits, split_note = self._splits(plan, tiles, gpu)
            if splits > 1:
                steps = slice_steps(c.sizes[3], tiles.BK, splits) * tiles.BK
                tiles = tiles.with_stages(stage_count(tiles, plan.kind, steps, gpu, self.stages, plan.most_stages))
            host = host or HostPlan(func.body)
            launch = map_to_mma(plan, tiles, host, gpu, splits)
            layout = "; ".join(x.describe() for x in plan.operands())
            ctx.applied(launch, f"contraction {c.describe()} of ({c.loops_of(c.rows)}, {c.loops_of(c.cols)}) over "
                                f"({c.loops_of(c.red_loops)}) on the matrix units: {plan.kind.describe()}, "
                                f"{tiles.describe()}, XOR-swizzled shared rows; {layout}; {split_note}"
                                + (f" ({plan.note})" if plan.note else "") + wgmma_note)

    def _wgmma(self, plan: MmaPlan, gpu: GPUTarget, host: HostPlan, ctx: PassContext):
        """Map ``plan`` onto warpgroup MMA when it qualifies: (the launch, "") or (None, why not, for the
        trace of the ``mma.sync`` mapping)."""
        wp = plan_wgmma(plan, gpu)
        if not isinstance(wp, str) and wp.conv is not None and self.wgmma_conv == "false":
            wp = "an NHWC convolution takes warpgroup MMA with wgmma-conv=true or auto"
        tiles = choose_wgmma_tiles(plan.c.sizes, gpu, self.stages, self.wgmma_tiles, self.split_k, wp.b_mn_major,
                                   plan.kind.bytes, self.wgmma_schedule) if not isinstance(wp, str) else wp
        if isinstance(tiles, str):
            return None, f"; not on warpgroup MMA: {tiles}"
        tiles = replace(tiles, grid=self.persistent_blocks)
        if wp.conv is not None:  # its block of pixels chosen once for the tile rows
            boxed = wp.conv.with_box(tiles.BM)
            if boxed is None:
                return None, f"; not on warpgroup MMA: block rows {tiles.BM} are not a block of output pixels (a " \
                             f"power of two)"
            wp, tiles = replace(wp, conv=boxed), self._conv_tiles(boxed, tiles)
            small = self._small_conv_grid(boxed, plan.c.sizes[2], tiles, gpu) if self.wgmma_conv == "auto" else None
            if small:
                return None, f"; not on warpgroup MMA: {small}"
        cluster_note = ""
        if self.wgmma_cluster > 1:
            tiles, cluster_note = self._cluster(wp, tiles, self.wgmma_cluster)
        c = plan.c
        b_layout = "K x N (MN-major, 64-column chunks)" if wp.b_mn_major else "N x K"
        if wp.conv is not None:
            b_layout += f"; {wp.conv.describe()}"
        launch = map_to_wgmma(wp, tiles, host, gpu, self.tma_store)
        stored = "; the output tile stored by TMA" if any(isinstance(op, TmaAsyncStoreOp) for op in launch.walk()) \
            else ""
        ctx.applied(launch, f"contraction {c.describe()} of ({c.loops_of(c.rows)}, {c.loops_of(c.cols)}) over "
                            f"({c.loops_of(c.red_loops)}) on warpgroup MMA (sm_90a): {plan.kind.input} -> f32, "
                            f"{tiles.describe()}; B {b_layout}; TMA tiles swizzled by 128 bytes, full/empty mbarriers "
                            f"per stage{stored}{cluster_note}")
        return launch, ""

    @staticmethod
    def _small_conv_grid(conv: ConvGeometry, cols: int, tiles: WgmmaTiles, gpu: GPUTarget) -> str | None:
        """Why wgmma-conv=auto leaves a convolution of ``cols`` output channels to mma.sync, or None: its pixel
        blocks by tile columns (before any split of k) fill fewer than half of ``gpu``'s multiprocessors. Measured
        on the H100 (RESULTS.md, 2026-12-07 sixth session): the implicit GEMM 4-27 % faster on the ResNet-50 3x3
        layers at batch 8, slower on 4 of 5 layers at batch 1, whose grids are a fraction of a wave."""
        blocks = conv.tiles * -(-cols // tiles.BN)
        if 2 * blocks >= gpu.sm_count:
            return None
        return f"{blocks} blocks of implicit-GEMM tiles fill fewer than half of {gpu.sm_count} multiprocessors " \
               f"(wgmma-conv=auto; mma.sync is faster on such grids, wgmma-conv=true forces it)"

    @staticmethod
    def _conv_tiles(conv: ConvGeometry, tiles: WgmmaTiles) -> WgmmaTiles:
        """A convolution's ``tiles`` with k split into slices of whole k steps only (a step past K would shift the
        input window onto real pixels, whose Inf or NaN times the filter's zero fill would reach the sums)."""
        if tiles.splits > 1 and conv.steps % tiles.splits:
            return replace(tiles, splits=max(s for s in range(1, tiles.splits) if conv.steps % s == 0))
        return tiles

    @staticmethod
    def _cluster(wp: WgmmaPlan, tiles: WgmmaTiles, size: int) -> tuple[WgmmaTiles, str]:
        """``tiles`` in clusters of ``size`` blocks where they apply, else as they are with the reason (for the
        trace)."""
        clustered = replace(tiles, cluster=size)
        _, m, _, _ = wp.mma.c.sizes
        why = clustered.invalid()
        rows = wp.conv.tiles if wp.conv is not None else -(-m // tiles.BM)
        if why is None and rows % size:
            why = f"{rows} tile rows are not a whole number of clusters of {size}"
        if why is None and wp.b_mn_major and (clustered.b_slice % 64):
            why = f"an MN-major B's {clustered.b_slice}-column slices are not whole 64-column chunks"
        if why is not None:
            return tiles, f"; no clusters: {why}"
        return clustered, ""

    def _splits(self, plan: MmaPlan, tiles: MmaTiles, gpu: GPUTarget) -> tuple[int, str]:
        """The k slices for ``plan`` with ``tiles`` (the option's, else the model's) and the
        decision with its reason, for the trace."""
        b, m, n, k = plan.c.sizes
        blocks = b * -(-m // tiles.BM) * -(-n // tiles.BN)
        grid = f"{blocks} blocks for {gpu.sm_count} multiprocessors"
        if self.split_k == 1:
            return 1, "k not split (split-k=1)"
        if self.split_k > 1:
            splits = effective_splits(k, tiles.BK, self.split_k)
            why = f"split-k={self.split_k}" + (f", {splits} slices non-empty" if splits != self.split_k else "")
        else:
            splits = choose_mma_split(plan.c.sizes, tiles, plan.kind, gpu)
            if splits == 1:
                more = len(mma_split_candidates(plan.c.sizes, tiles, gpu)) > 1
                return 1, f"k not split ({grid}: " + ("no split is estimated faster)" if more else "the grid fills "
                                                      "the target or k is too short for slices)")
            why = f"the grid is too small: {grid}"
        if splits == 1:
            return 1, f"k not split ({why}: one k step)"
        return splits, (f"k split in {splits} slices of {slice_steps(k, tiles.BK, splits)} steps ({why}), partial sums "
                        f"added in slice order by a second launch (no atomics: the same bits every run)")

    def _tiles(self, plan: MmaPlan, gpu: GPUTarget) -> MmaTiles | str:
        """The options' tiles or the cost model's for ``plan``, or why none fits."""
        sizes, kind = plan.c.sizes, plan.kind
        if not self.tile_sizes:
            return choose_mma_tiles(sizes, kind, gpu, self.stages, plan.most_stages)
        tiles = MmaTiles(*self.tile_sizes)
        tiles = tiles.with_stages(stage_count(tiles, kind, sizes[3], gpu, self.stages, plan.most_stages))
        why = tiles.invalid(kind) or fits(tiles, kind, gpu)
        return why if why else tiles
