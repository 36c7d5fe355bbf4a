"""The staging of ``gpu-map-mma``'s operands: each k step's tiles of A and B copied into a ring of
swizzled shared-memory buffers, by ``cp.async`` 16-byte chunks or gathered per element.

- **rings**: each operand has a shared ring ``memref<S x R x C>``: ``BM x BK`` (``BN x BK``) rows
  when it is contiguous along k, ``BK x BM`` (``BK x BN``) when along its rows (columns).
- **chunked copies** (:class:`CopySlot`): the threads copy a k step's tile as 16-byte chunks
  (``nvgpu.device_async_copy ... bypassL1``), consecutive threads on consecutive chunks of a row, one
  group per step (``device_async_create_group``); a copy past M, N or K or outside a zero-padded
  read's window reads nothing (``srcElements`` 0: zero-filled), its indices clamped into the operand.
- **gathered operands** (:class:`GatherElement`: not in aligned 16-byte chunks): each thread loads
  elements of the step's tile (an ``affine.if`` on the sizes and the padding window, 0 outside) and
  stores them (``memref.store``) at the swizzled position.
- **swizzle** (:func:`swizzle`): chunk ``c`` of shared row ``r`` is stored at chunk ``c xor
  swizzle(r)``: the 8 rows an ``ldmatrix`` phase reads, and the chunks 8 consecutive threads copy,
  fall in 8 distinct 16-byte bank groups.

Guarantee: the ring's stage holds, at shared ``[row][col xor swizzle]``, exactly the operand's
element of the k step (0 outside the sizes and the padding window); nothing else is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import AffineExpr, AffineMap, IntegerSet, Location, Value
from affine_ir.dialects.affine import AffineIfOp, AffineMinOp, AffineYieldOp
from affine_ir.dialects.arith import ConstantOp, XoriOp
from affine_ir.dialects.memref import AllocOp, LoadOp, StoreOp
from affine_ir.dialects.nvgpu import DeviceAsyncCopyOp, DeviceAsyncCreateGroupOp
from affine_ir.types import WORKGROUP, index, memref

from ..loop_utils import access_subscripts
from .emitter import Emitter as _At
from .gpu_map_nest import HostPlan
from .map_mma_plan import LDMATRIX_ROWS, MmaOperand, MmaPlan, MmaTiles, padded_rows
from .schedule_gpu_plan import Contraction, delinearized

__all__ = ["CopySlot", "GatherElement", "SharedRing", "Staging", "swizzle"]


def _d(k: int) -> AffineExpr:
    return AffineExpr.dim(k)


def swizzle(row: AffineExpr, chunks: int, spread: int = 1) -> AffineExpr | None:
    """The value XORed into the chunk index of shared row ``row`` of ``chunks`` 16-byte chunks (None:
    no swizzle, one chunk per row). It stays below ``G``, the largest power of two (at most 8) that
    divides ``chunks``, so the XOR permutes the chunks within each aligned group of ``G`` and never
    leaves the row; with ``chunks`` a multiple of 8 (or 4 or 2 chunks: rows of 8 x 16 bytes in 8 or 4
    rows), 8 consecutive rows get 8 distinct bank groups. A row of 3, 5, 6 or 12 chunks gets a
    narrower swizzle (some ``ldmatrix`` phases then meet bank conflicts: such tiles are the user's
    choice, the model picks powers of two).

    ``spread`` 2 is the swizzle of a ring read per element (:attr:`MmaOperand.element_reads`): a
    warp's 32-bit fragment load reads 4 consecutive rows (k = t + 4r), 2 adjacent chunks each (8
    columns, an even first chunk); ``2 (row mod 4)`` puts them in 8 distinct bank groups when
    ``G`` is 8 (else the plain swizzle)."""
    group = min(LDMATRIX_ROWS, chunks & -chunks)
    if group <= 1:
        return None
    if spread > 1 and group == LDMATRIX_ROWS:
        return (row % (LDMATRIX_ROWS // spread)) * spread
    if group >= LDMATRIX_ROWS:
        return row % LDMATRIX_ROWS
    return row.floordiv(LDMATRIX_ROWS // group) % group


@dataclass
class SharedRing:
    """An operand's ring in shared memory: ``buffer[stage][row][col]``, ``rows x cols`` per stage."""

    operand: MmaOperand
    buffer: Value
    rows: int
    cols: int
    chunk: int  # elements per 16-byte chunk

    @property
    def chunks(self) -> int:
        return self.cols // self.chunk

    def swizzle(self, row: AffineExpr) -> AffineExpr | None:
        """The chunk XOR of shared row ``row`` (:func:`swizzle`, spread for a ring read per element)."""
        return swizzle(row, self.chunks, 2 if self.operand.element_reads else 1)

    def swizzled(self, at: _At, row: AffineExpr, column: Value, operands: list[Value], name: str,
                 mask: Value | None = None) -> Value:
        """``column`` (elements, of shared row ``row`` over ``operands``) after the chunk swizzle:
        ``column xor (swizzle(row) * chunk)`` -- the mask's low bits are 0, so an element keeps its
        place in its chunk -- or ``column`` itself when the row is not swizzled. ``mask``: the mask's
        value when the caller has it already."""
        swz = self.swizzle(row)
        if swz is None:
            return column
        mask = mask or at.apply(swz * self.chunk, operands, "swizzle")
        return at.add(XoriOp(column, mask, location=at.location, name_hint=name)).results[0]


@dataclass
class GatherElement:
    """One element a thread gathers per k step: its k offset (over the thread id), the shared row and
    swizzled column, the global row/column ``p`` and the side's induction values there."""

    k_rel: AffineExpr
    row: Value
    col: Value
    p: Value
    ivs: dict[Value, Value]


@dataclass
class CopySlot:
    """One 16-byte copy of a thread per k step: its k offset (over the thread id), the shared row and
    swizzled column, the global row/column ``p`` and the side's induction values there (clamped)."""

    k_rel: AffineExpr
    row: Value
    col: Value
    p: Value
    ivs: dict[Value, Value]


class Staging:
    """The operands' staging into the swizzled shared rings, a mixin of the kernel builder of
    :mod:`.map_mma`: it reads the builder's ``c``, ``plan``, ``tiles``, ``host``, ``top`` (the emitter
    at the launch body's start), ``tid``, ``bz``, ``threads``, ``batch``, ``rings``, ``copy_slots`` and
    ``side_size``."""

    c: Contraction
    plan: MmaPlan
    tiles: MmaTiles
    host: HostPlan
    top: _At
    tid: Value
    bz: Value
    loc: Location
    threads: int
    batch: dict[Value, AffineExpr]
    rings: list[SharedRing]
    copy_slots: list[list]
    k_covered: int  # the k the blocks' steps run over: K rounded up to whole steps of every slice
    slice_steps: int  # the k steps of one slice (split-K), or of the whole k
    slice: Value | None  # the block's k slice (split-K), or None

    def _k(self, at: _At, step: Value, k_rel: AffineExpr) -> Value:
        """The linear k of the element at offset ``k_rel`` (over the thread id) of the slice's k step
        ``step``: ``(slice * slice_steps + step) * BK + k_rel``."""
        bk = self.tiles.BK
        if self.slice is None:
            return at.apply(_d(0) * bk + k_rel.replace([_d(1)]), [step, self.tid], "k")
        return at.apply(_d(0) * bk + k_rel.replace([_d(1)]) + _d(2) * (self.slice_steps * bk),
                        [step, self.tid, self.slice], "k")

    def side_size(self, side: str) -> tuple[int, Value]:
        raise NotImplementedError

    def _ring(self, operand: MmaOperand) -> SharedRing:
        """The operand's ring: ``rows x cols`` a stage, plus the rows that give every thread a slot of
        its own when the threads outnumber the stage's copies (:func:`padded_rows`)."""
        t = self.tiles
        p = t.BM if operand.side == "A" else t.BN
        rows, cols = (p, t.BK) if operand.k_fast else (t.BK, p)
        el = operand.load.results[0].type
        name = operand.load.memref.name_hint or operand.side
        unit = 1 if operand.gather else self.plan.kind.chunk
        alloc_rows = padded_rows(rows, cols, unit, self.threads)
        alloc = self.top.add(AllocOp(memref((t.stages, alloc_rows, cols), el, WORKGROUP), location=self.loc,
                                     name_hint=f"{name}_ring"))
        return SharedRing(operand, alloc.results[0], rows, cols, self.plan.kind.chunk)

    def _column(self, at: _At, ring: SharedRing, row: AffineExpr, chunk: AffineExpr, operands: list[Value]) -> Value:
        """The swizzled first column (in elements) of chunk ``chunk`` of shared row ``row``."""
        if ring.swizzle(row) is None:
            return at.apply(chunk * ring.chunk, operands, "col")
        return ring.swizzled(at, row, at.apply(chunk * ring.chunk, operands, "chunk"), operands, "col")

    def _copy_slots(self, ring: SharedRing) -> list[CopySlot]:
        """The thread's 16-byte copies of one k step (consecutive threads on consecutive chunks),
        with what does not change from step to step: the shared (row, swizzled column), the global
        row/column of the copy and the side's induction values there (clamped into the sizes)."""
        c, op = self.c, ring.operand
        total = ring.rows * ring.chunks
        per_thread = -(-total // self.threads)
        size, block = self.side_size(op.side)
        extent = c.sizes[1] if op.side == "A" else c.sizes[2]
        loops = c.side_loops(op.side)
        out = []
        for cp in range(per_thread):
            idx = _d(0) + cp * self.threads
            row, chunk = idx.floordiv(ring.chunks), idx % ring.chunks  # past the tile: a padding row's slot
            if per_thread * self.threads > total:  # more threads than chunks: the extra ones read a tile chunk
                idx = idx % total
            src_row, src_chunk = idx.floordiv(ring.chunks), idx % ring.chunks
            p_rel, k_rel = (src_row, src_chunk * ring.chunk) if op.k_fast else (src_chunk * ring.chunk, src_row)
            p = self.top.apply(_d(1) * size + p_rel, [self.tid, block], "p")
            p_src = p
            if extent % size:  # a partial tile: rows/columns past the size read the last one (zero-filled)
                p_src = self.top.add(AffineMinOp(AffineMap(1, 0, (_d(0), AffineExpr.constant(extent - 1))), [p],
                                                 location=self.loc, name_hint="p_in")).results[0]
            ivs = {lp.induction_var: self.top.apply(e, [p_src], lp.induction_var.name_hint)
                   for lp, e in zip(loops, delinearized(loops, c.trips, c.lows))}
            out.append(CopySlot(k_rel, self.top.apply(row, [self.tid], "crow"),
                             self._column(self.top, ring, row, chunk, [self.tid]), p, ivs))
        return out

    def _source(self, at: _At, ring: SharedRing, slot: CopySlot, step: Value) -> tuple[list[Value], Value | None]:
        """The global indices of a copy's first element at k step ``step`` (the load's subscripts at
        the slot's row/column and k = step * BK + offset, clamped into the sizes), and how many
        elements to read (None: all; 0 past a size or outside a zero-padded read's window: the chunk
        is zero-filled)."""
        c, op = self.c, ring.operand
        k_size = c.sizes[3]
        k = self._k(at, step, slot.k_rel)
        k_src = k
        if k_size != self.k_covered:
            last = k_size - (ring.chunk if op.k_fast else 1)
            k_src = at.add(AffineMinOp(AffineMap(1, 0, (_d(0), AffineExpr.constant(last))), [k],
                                       location=self.loc, name_hint="k_in")).results[0]
        src = self._access(at, op, k_src, slot.ivs)
        inside = self._inside_set(op, slot.p, k)
        if inside is None:
            return src, None
        guard = at.add(AffineIfOp(inside[0], inside[1], [index], with_else=True, location=self.loc))
        guard.then_block.append(AffineYieldOp([self.host.constant(ring.chunk)], location=self.loc))
        guard.else_block.append(AffineYieldOp([self.host.constant(0)], location=self.loc))
        return src, guard.results[0]

    def _access(self, at: _At, op: MmaOperand, k: Value, ivs: dict[Value, Value]) -> list[Value]:
        """The read's subscripts at linear k ``k`` (the reduction chain's induction values delinearized
        from it) and the side's induction values ``ivs``."""
        c = self.c
        values = [k, self.bz, *ivs.values()]
        exprs = {lp.induction_var: e for lp, e in zip(c.red_loops, delinearized(c.red_loops, c.trips))}
        exprs.update(self._batch_exprs(1))
        exprs.update((v, _d(2 + i)) for i, v in enumerate(ivs))
        leaves: list[Value] = []
        subs = access_subscripts(op.load, leaves)
        for v in leaves:
            if v not in exprs:
                exprs[v] = _d(len(values))
                values.append(v)  # a value from outside the nest
        return [at.apply(e.replace([exprs[v] for v in leaves]), values, "src") for e in subs]

    def _inside_set(self, op: MmaOperand, p: Value, k: Value) -> tuple[IntegerSet, list[Value]] | None:
        """The condition (set, operands) of an element or chunk at row/column ``p`` and linear ``k``
        being read: inside the sizes (when the tiles do not divide them) and inside the read's
        zero-padding window (its guard's constraints at the induction values of ``p`` and ``k``);
        None when it always is."""
        c = self.c
        extent = c.sizes[1] if op.side == "A" else c.sizes[2]
        cons = [(AffineExpr.constant(extent - 1) - _d(0), False)] if extent % self.side_size(op.side)[0] else []
        cons += [(AffineExpr.constant(c.sizes[3] - 1) - _d(1), False)] if c.sizes[3] != self.k_covered else []
        values = [p, k, self.bz]
        if op.guard is not None:
            loops = c.side_loops(op.side)
            exprs = {lp.induction_var: e.replace([_d(1)])
                     for lp, e in zip(c.red_loops, delinearized(c.red_loops, c.trips))}
            exprs.update((lp.induction_var, e) for lp, e in zip(loops, delinearized(loops, c.trips, c.lows)))
            exprs.update(self._batch_exprs(2))
            for v in op.guard.operands:
                if v not in exprs:
                    exprs[v] = _d(len(values))
                    values.append(v)  # a value from outside the nest
            cond = op.guard.condition
            mapped = [exprs[v] for v in op.guard.operands]
            cons += [(e.replace(mapped[:cond.num_dims], mapped[cond.num_dims:]), eq)
                     for e, eq in zip(cond.constraints, cond.eq_flags)]
        if not cons:
            return None
        return IntegerSet(len(values), 0, tuple(e for e, _ in cons), tuple(eq for _, eq in cons)), values

    def _batch_exprs(self, dim: int) -> list[tuple[Value, AffineExpr]]:
        return [(v, e.replace([_d(dim)])) for v, e in self.batch.items()]

    def copy_items(self) -> list[tuple[SharedRing, CopySlot | GatherElement]]:
        """Every copy (or gathered element) of the thread in one k step, operand by operand."""
        return [(ring, slot) for ring, slots in zip(self.rings, self.copy_slots) for slot in slots]

    def _issue_part(self, at: _At, step: Value, stage: Value,
                    items: list[tuple[SharedRing, CopySlot | GatherElement]]) -> list[Value]:
        """Some of the copies of k step ``step`` into ``stage`` (gathered elements stored at once);
        the asynchronous copies' tokens, for :meth:`_commit`."""
        tokens = []
        for ring, slot in items:
            if isinstance(slot, GatherElement):
                self._gather(at, ring, slot, step, stage)
                continue
            src, count = self._source(at, ring, slot, step)
            tokens.append(at.add(DeviceAsyncCopyOp(ring.operand.load.memref, src, ring.buffer,
                                                   [stage, slot.row, slot.col], ring.chunk, count, bypass_l1=True,
                                                   location=self.loc)).results[0])
        return tokens

    def _commit(self, at: _At, tokens: list[Value]) -> Value | None:
        """One group of the copies ``tokens`` (its token; None without copies)."""
        if not tokens:
            return None
        return at.add(DeviceAsyncCreateGroupOp(tokens, location=self.loc, name_hint="group")).results[0]

    def _gather_slots(self, ring: SharedRing) -> list[GatherElement]:
        """The thread's elements of one k step of a gathered operand (consecutive threads on
        consecutive elements of a shared row), with the shared (row, swizzled column), the global
        row/column and the side's induction values there."""
        c, op = self.c, ring.operand
        total = ring.rows * ring.cols
        per_thread = -(-total // self.threads)
        size, block = self.side_size(op.side)
        loops = c.side_loops(op.side)
        out = []
        for e in range(per_thread):
            idx = _d(0) + e * self.threads
            row, col = idx.floordiv(ring.cols), idx % ring.cols  # past the tile: a padding row's slot
            if per_thread * self.threads > total:  # more threads than elements: the extra ones read a tile element
                idx = idx % total
            src_row, src_col = idx.floordiv(ring.cols), idx % ring.cols
            p_rel, k_rel = (src_row, src_col) if op.k_fast else (src_col, src_row)
            p = self.top.apply(_d(1) * size + p_rel, [self.tid, block], "p")
            ivs = {lp.induction_var: self.top.apply(x, [p], lp.induction_var.name_hint)
                   for lp, x in zip(loops, delinearized(loops, c.trips, c.lows))}
            # the element's chunk swizzled as a copy's
            column = ring.swizzled(self.top, row, self.top.apply(col, [self.tid], "ecol"), [self.tid], "ecol")
            out.append(GatherElement(k_rel, self.top.apply(row, [self.tid], "erow"), column, p, ivs))
        return out

    def _gather(self, at: _At, ring: SharedRing, slot: GatherElement, step: Value, stage: Value) -> None:
        """Load one element of k step ``step`` (0 past a size or outside the read's window) and store
        it into ``stage`` of ``ring``."""
        op = ring.operand
        el = op.load.results[0].type
        k = self._k(at, step, slot.k_rel)
        src = self._access(at, op, k, slot.ivs)
        inside = self._inside_set(op, slot.p, k)
        if inside is None:
            value = at.add(LoadOp(op.load.memref, src, location=self.loc, name_hint="elt")).results[0]
        else:
            guard = at.add(AffineIfOp(inside[0], inside[1], [el], with_else=True, location=self.loc))
            loaded = guard.then_block.append(LoadOp(op.load.memref, src, location=self.loc,
                                                    name_hint="elt")).results[0]
            guard.then_block.append(AffineYieldOp([loaded], location=self.loc))
            zero = guard.else_block.append(ConstantOp.of(0.0, el, location=self.loc)).results[0]
            guard.else_block.append(AffineYieldOp([zero], location=self.loc))
            value = guard.results[0]
        at.add(StoreOp([value, ring.buffer, stage, slot.row, slot.col], location=self.loc))
