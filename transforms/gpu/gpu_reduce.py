"""Row reductions on the GPU: one block per row, block reductions in shared memory (``gpu-map-reductions``).

After fusion, ``affine-privatize`` and scalar replacement, softmax, layer norm, row reductions
and attention are one nest per row: ``for rows { %m = for j iter_args(max); %s = for j
iter_args(sum); for j { store } }``, attention's with row buffers allocated in the row and row
loops holding inner loops (``for j iter_args(max) { for d iter_args(dot) }; store scores[j]``).
``gpu-map`` would run each row in one thread. This pass (run before ``gpu-map``, which maps
what it leaves) maps such a nest (see :mod:`.gpu_reduce_plan` for what it accepts) to one
``gpu.launch`` with one block per row (grid = the row counts, computed on the host; the
innermost row on x) and ``B`` threads per block (option ``block-size``, default 256, a power
of two <= 1024, at most the power of two covering the longest constant row loop):

- each row loop ``for j = lb to ub step s`` becomes the thread's share ``for j = lb + tid * s
  to ub step B * s`` (same IV, same body: its inner loops run whole in the thread);
- a reduction starts from the combining op's identity in each thread; after the loop each
  thread writes its partial to a workgroup buffer ``%<acc>_shared[tid]``, then a tree in a
  fixed order (``gpu.barrier``; for ``s = B/2 .. 1``: ``affine.if tid < s: p[tid] = op(p[tid],
  p[tid + s])``; ``gpu.barrier``) leaves the block's result in element 0, which every thread
  reads and combines with the loop's initial value, once; that replaces the loop's result;
  a memory reduction (``s[0] = s[0] + x``) is first carried in iter_args (the element read
  before the loop by every thread, written after it as a row-level store);
- a row buffer (a ``memref.alloc`` in the row body) becomes one ``memref.alloc`` in workgroup
  memory at the top of the launch body, shared by the block's threads (one row per block: no
  reuse to guard); its dealloc goes;
- ops between the row loops (``%mean = %sum / N``, ``rsqrt(%var + eps)``) run in every
  thread; scratch buffers become thread-private (``memref.alloca``); a store at the row level
  to other memory, row buffers included, runs in thread 0 (``affine.if tid == 0``);
- a ``gpu.barrier`` separates two row-level phases (row loops or row-level statements) that a
  dependence within the row connects (:attr:`.gpu_reduce_plan.RowPlan.conflicts`: one writes
  what the other reads or writes, possibly in another thread), unless a barrier (a tree's)
  already runs between them. Every barrier is at the top of the launch body: all threads
  reach it.

Attention (B, H, S, D) becomes B*H*S blocks: the scores loop (max) strided over the threads,
each thread computing its ``j``'s dot products over ``d`` whole, and storing them in the
shared scores row; the sum loop; the probabilities loop; the ``P @ V`` loop over ``d`` (each
thread its ``d``'s, the sum over ``j`` inside); the output loop; barriers between those that
share a row buffer.

Before / after (softmax row max, B = 256, one row loop of two shown)::

    affine.for %i = 0 to 8 {                          gpu.launch blocks(%bx, ...) in (%gx = %c8, ...)
      %0 = affine.for %j = 0 to 256                       threads(%tx, ...) in (%sx = %c256, ...) {
          iter_args(%acc = %cst) -> (f32) {           %acc_shared = memref.alloc() : memref<256xf32, #gpu...>
        %1 = affine.load %X[%i, %j]                    %i = affine.apply #map(%bx)
        %2 = arith.maximumf %acc, %1 : f32             %0 = affine.for %j = %tx to 256 step 256
        affine.yield %2 : f32                              iter_args(%acc = %cst_1) -> (f32) { ... }
      }                                                affine.store %0, %acc_shared[%tx]
      ...                                              gpu.barrier
                                                       affine.if #set(%tx) { ... p[tx] = max(p[tx], p[tx + 128]) }
                                                       gpu.barrier   ... (8 steps)
                                                       %3 = affine.load %acc_shared[0]
                                                       %4 = arith.maximumf %cst, %3 : f32   (uses of %0 -> %4)

A row buffer and a row loop holding a loop (attention's scores, S = 2048, D = 64)::

    affine.for %i = 0 to 2048 {                       gpu.launch ... threads(%tx, ...) in (%sx = %c256, ...) {
      %sc = memref.alloc() : memref<2048xf32>           %sc = memref.alloc() : memref<2048xf32, #gpu.address_space<...>>
      %0 = affine.for %j = 0 to 2048                    %0 = affine.for %j = %tx to 2048 step 256
          iter_args(%acc = %cst) -> (f32) {                 iter_args(%acc = %cst_1) -> (f32) {
        %1 = affine.for %d = 0 to 64 ... { dot }          %1 = affine.for %d = 0 to 64 ... { dot }
        affine.store %1, %sc[%j]                          affine.store %1, %sc[%j]
        %2 = arith.maximumf %acc, %1 : f32                %2 = arith.maximumf %acc, %1 : f32 ...
      }                                                 }  ... (the tree, its barriers)
      ... (loops reading %sc[%j])                       ... (loops reading %sc[%j]; no dealloc)
      memref.dealloc %sc

Float sums are reassociated (per-thread partials, then the tree): results differ from the
sequential order by rounding (max/min and integer reductions are exact). ``acc - x`` (``subf``/
``subi``, the accumulator on the left) is a sum: partials start from the identity and subtract,
and are added to each other and to the initial value.

The pass also maps reductions that have no row loop (a full sum, a dot product, a solver's
triangular sum) and those in the body of a loop ``gpu-map`` keeps on the host: one block, or a
two-phase reduction (a grid of per-block partials, then one block combining them in a fixed
order; option ``atomic=true``: atomics instead of the second launch), see
:mod:`.gpu_reduce_units` and :mod:`.gpu_reduce_two_phase`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.core import Block, OpResult
from affine_ir.dialects import arith
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineLoadOp,
    AffineStoreOp,
    AffineYieldOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.gpu import BarrierOp, LaunchOp
from affine_ir.dialects.memref import AllocaOp, AllocOp
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.traits import ConstantLike
from affine_ir.types import WORKGROUP, MemRefType, memref
from analysis import reduction_identity
from analysis.targets import DEFAULT_GPU, GPUTarget, gpu_target

from ..errors import TransformError
from ..loop_utils import access_subscripts, loop_name, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .gpu_map_nest import AXES, HostPlan, band_dims, frees_memory, host_value_checker, new_launch
from .gpu_reduce_plan import (
    DEFAULT_BLOCK_SIZE,
    RowPlan,
    RowReduction,
    block_size_for,
    plan_row_reductions,
    thread_per_row_reason,
)
from .gpu_reduce_rescaled import rescale_partial

__all__ = ["GpuMapReductions", "MappedRows", "RowPlan", "RowReduction", "combine_reduced", "map_row_reductions",
           "map_rows", "plan_row_reductions", "thread_per_row_reason"]

@dataclass
class MappedRows:
    """What :func:`map_rows` built: the launch, the rows (outermost first), the grid (x, y, z; an
    int or the host value's name), the threads per block, the reductions (``"maximumf in loop 1
    (%j)"``), the strided loops, the thread-private buffers, the row buffers moved to workgroup
    memory and the workgroup bytes per block, the row-level stores given to thread 0 and the
    barriers added between racing statements."""

    launch: LaunchOp
    rows: list[str]
    grid: tuple
    block_size: int
    reductions: list[str] = field(default_factory=list)
    strided: list[str] = field(default_factory=list)
    private: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    shared_bytes: int = 0
    thread0_stores: int = 0
    barriers: int = 0

    def describe(self) -> str:
        """The decision as the pass records it."""
        n = len(self.rows)
        text = (f"mapped rows ({', '.join(self.rows)}) to blocks ({', '.join(reversed(AXES[:n]))}): grid "
                f"({', '.join(map(str, self.grid))}), block ({self.block_size}, 1, 1); {len(self.strided)} row "
                f"loop(s) strided over the threads ({', '.join(self.strided)}); block reductions: "
                f"{', '.join(self.reductions)}")
        if self.private:
            text += f"; thread-private: {', '.join(self.private)}"
        if self.shared:
            text += f"; row buffers in workgroup memory: {', '.join(self.shared)} ({self.shared_bytes} B per block)"
        if self.thread0_stores:
            text += f"; {self.thread0_stores} row-level store(s) in thread 0"
        if self.barriers:
            text += f"; {self.barriers} barrier(s) between row statements"
        return text


def map_row_reductions(nest: Operation, block_size: int = DEFAULT_BLOCK_SIZE, gpu: GPUTarget = DEFAULT_GPU) -> LaunchOp:
    """Replace the top-level nest ``nest`` by one ``gpu.launch``: a block of ``block_size`` threads
    (clamped, see :func:`block_size_for`) per row, block reductions in shared memory (module
    docstring). Returns the launch.

    Guarantees: every row runs once, in its own block; every iteration of a row loop runs once,
    in one thread of that block; each reduction combines every element and the loop's initial
    value exactly once (in another order: float sums are reassociated). Raises
    :class:`TransformError` (IR unchanged) when the nest is not of that form (see
    :func:`plan_row_reductions`; the limits are ``gpu``'s)."""
    return map_rows(nest, block_size, gpu=gpu).launch


def map_rows(nest: Operation, block_size: int = DEFAULT_BLOCK_SIZE, host: HostPlan | None = None,
             plan: RowPlan | None = None, gpu: GPUTarget = DEFAULT_GPU) -> MappedRows:
    """:func:`map_row_reductions` with the details of what was built; ``host`` creates the grid
    values (shared by the launches of one function), ``plan`` a plan made for ``nest``."""
    host = host or HostPlan(nest.parent)
    plan = plan or plan_row_reductions(nest, block_size, host.is_host_value, gpu)
    return _Rewriter(plan, host).run()


# -- the rewrite ---------------------------------------------------------------------------------------------------
class _Rewriter:
    def __init__(self, plan: RowPlan, host: HostPlan):
        self.plan = plan
        self.host = host
        self.op = plan.op
        self.b = plan.block_size
        self.managed: set[Value] = set()  # thread-private and partial buffers: no race between threads
        self.allocs = 0  # buffers at the start of the launch body

    def run(self) -> MappedRows:
        plan, op, host = self.plan, self.op, self.host
        grid, grid_text, lbs = self._grid()
        one = host.constant(1)
        launch = new_launch(host, op, grid + [one] * (3 - len(grid)), (self.b, 1, 1))
        self.launch, self.body, self.tid = launch, launch.body, launch.body.args[3]
        term = self.body.ops[-1]
        private = self._privatize()
        shared = self._share_row_buffers()
        self.origin = {y: x for x in plan.body.ops for y in x.walk()}  # op -> the row statement holding it
        for k, (d, lbv) in enumerate(zip(plan.axes, lbs)):
            lo = AffineExpr.symbol(len(d.operands)) if lbv is not None else d.lbs[0]
            syms = d.operands + ([lbv] if lbv is not None else [])
            iv = _apply(lo.shift(1, 0) + AffineExpr.dim(0) * d.step, [launch.body.args[k]], syms, d.iv.name_hint, op)
            self.body.insert_before(term, iv.owner)
            d.iv.replace_all_uses_with(iv)
        for x in [x for x in plan.body.ops if not isinstance(x, AffineYieldOp)]:
            x.detach()
            self.body.insert_before(term, x)
        op.erase()
        reductions = []
        for loop in plan.loops:
            reds = [r for r in plan.reductions if r.loop is loop]
            for r in reds:
                if r.index is None:
                    self._promote(r)
            self._stride(loop)
            if reds:
                self._block_reduce(loop, reds)
                k = plan.loops.index(loop) + 1
                reductions += [f"{r.kind}{_rescaled_text(r, loop)} in loop {k} ({loop_name(loop)})" for r in reds]
        stores = self._thread0_stores()
        barriers = self._separate_races()
        self._rematerialize()
        return MappedRows(launch, [d.name for d in plan.rows], tuple(grid_text + [1] * (3 - len(grid_text))), self.b,
                          reductions, [loop_name(lp) for lp in plan.loops], private, shared, plan.shared_bytes, stores,
                          barriers)

    # -- host side ---------------------------------------------------------------------------------------------
    def _grid(self) -> tuple[list[Value], list, list[Value | None]]:
        values, text, lbs = [], [], []
        for d in self.plan.axes:
            lbv = self.host.lower_bound(d, self.op) if len(d.lbs) > 1 else None
            lbs.append(lbv)
            t = d.trip_count
            if t is not None:
                values.append(self.host.constant(t))
                text.append(t)
                continue
            lo = AffineExpr.symbol(len(d.operands)) if lbv is not None else d.lbs[0]
            syms = d.operands + ([lbv] if lbv is not None else [])
            v = self.host.index_value([(u - lo).ceildiv(d.step) for u in d.ubs], syms, self.op, "min",
                                      f"{d.iv.name_hint or 'iv'}_grid")
            values.append(v)
            text.append(value_name(v))
        return values, text, lbs

    def _privatize(self) -> list[str]:
        names = []
        for k, a in enumerate(self.plan.scratch):
            old = a.results[0]
            t: MemRefType = old.type
            new = AllocaOp(memref(t.shape, t.element_type), location=a.location, name_hint=old.name_hint)
            self.body.insert(k, new)
            self.allocs += 1
            for use in list(old.uses):
                if frees_memory(use.op):
                    use.op.erase()
            old.replace_all_uses_with(new.results[0])
            a.erase()
            self.managed.add(new.results[0])
            names.append(value_name(new.results[0]))
        return names

    def _share_row_buffers(self) -> list[str]:
        """Each row buffer becomes one workgroup buffer at the top of the launch body (the block
        has one row, so its threads share it; it is freed with the block)."""
        names = []
        for a in self.plan.row_buffers:
            old = a.results[0]
            t: MemRefType = old.type
            new = AllocOp(memref(t.shape, t.element_type, WORKGROUP), location=a.location, name_hint=old.name_hint)
            self.body.insert(self.allocs, new)
            self.allocs += 1
            for use in list(old.uses):
                if frees_memory(use.op):
                    use.op.erase()
            old.replace_all_uses_with(new.results[0])
            a.erase()
            names.append(value_name(new.results[0]))
        return names

    def _rematerialize(self) -> None:
        """Clone into the launch the pure top-level ops it uses that are not host values (an
        ``index_cast``/``sitofp`` of a size), as gpu-map does."""
        top = self.launch.parent
        is_host = host_value_checker(top)
        needed: set[Operation] = set()

        def need(v: Value) -> None:
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent is top and not owner.has_trait(ConstantLike) and \
                    not isinstance(owner, AllocOp) and not is_host(v) and owner not in needed:
                needed.add(owner)
                for w in owner.operands:
                    need(w)

        for x in self.launch.walk():
            if x is not self.launch:
                for v in x.operands:
                    need(v)
        mapping: dict[Value, Value] = {}
        clones = [x.clone(mapping) for x in top.ops if x in needed]
        for k, c in enumerate(clones):
            self.body.insert(k, c)
        inside = set(self.launch.walk())
        for old, new in mapping.items():
            for use in list(old.uses):
                if use.op in inside:
                    use.op.set_operand(use.index, new)
        for x in reversed([x for x in top.ops if x in needed]):
            if not any(r.uses for r in x.results):
                x.erase()

    # -- row loops ---------------------------------------------------------------------------------------------
    def _promote(self, r: RowReduction) -> None:
        """Carry the memory reduction ``r`` in a new iter_arg of its loop: the element is loaded
        before the loop and stored after it (thread-private memory, or a row-level load and a
        store in thread 0 that barriers separate from the other accesses)."""
        loop, load, store = r.loop, r.load, r.store
        block = loop.parent
        leaves: list[Value] = []  # values from outside the loop (see the plan)
        subscripts = access_subscripts(load, leaves)
        element = AffineMap(len(leaves), 0, subscripts)
        init = AffineLoadOp(load.memref, element, leaves, location=load.location, name_hint=load.result.name_hint)
        block.insert_before(loop, init)
        arg = loop.body.add_argument(load.result.type, load.result.name_hint or "acc")
        load.result.replace_all_uses_with(arg)
        load.erase()
        loop.set_operands([*loop.operands, init.result])
        term = loop.body.terminator
        term.set_operands([*term.operands, store.value])
        result = OpResult(init.result.type, loop, len(loop.results), None)
        loop.results.append(result)
        after = AffineStoreOp(result, store.memref, element, leaves, location=store.location)
        block.insert_after(loop, after)
        self.origin[init] = self.origin[after] = loop
        store.erase()
        if r.guarded:
            r.runs = _runs_set(loop)
        r.index, r.load, r.store = len(loop.iter_args) - 1, None, None

    def _stride(self, loop: AffineForOp) -> None:
        """``for j = lb to ub step s`` -> ``for j = lb + tid * s to ub step B * s`` (a loop of
        :attr:`RowPlan.lane_steps`, ``s`` its lane step: ``lb + tid * s``, its step kept)."""
        lane = self.plan.lane_steps.get(loop)
        if self.b == 1:
            return
        lbm = loop.lower_bound_map
        tid = AffineExpr.symbol(lbm.num_symbols)
        new = AffineMap(lbm.num_dims, lbm.num_symbols + 1, tuple(e + tid * (lane or loop.step) for e in lbm.results))
        loop.set_bounds(new, [*loop.lower_bound_operands, self.tid], loop.upper_bound_map, loop.upper_bound_operands)
        if lane is None:
            loop.attributes["step"] = loop.step * self.b

    def _block_reduce(self, loop: AffineForOp, reds: list[RowReduction]) -> None:
        """Block reductions of ``loop``'s ``reds``: the plain ones in one tree, then the rescaled sums
        (:mod:`.gpu_reduce_rescaled`) in a second, each thread's partial first taken against the block's
        value of the reduction it is rebased on."""
        block = loop.parent
        anchor = block.ops[block.ops.index(loop) + 1]
        plain = [r for r in reds if r.rescale is None]
        results = self._tree(loop, plain, anchor, {})
        rescaled = [r for r in reds if r.rescale is not None]
        if rescaled:
            self._tree(loop, rescaled, anchor, results)

    def _tree(self, loop: AffineForOp, reds: list[RowReduction], anchor: Operation,
              bases: dict[int, tuple[Value, Value]]) -> dict[int, tuple[Value, Value]]:
        """One shared-memory tree for ``reds`` before ``anchor``; returns index -> (the block's result, the
        loop's initial value). ``bases``: that of the reductions the rescaled sums among ``reds`` follow."""
        block, tid, b = loop.parent, self.tid, self.b
        first_init = len(loop.operands) - len(loop.inits)
        shared, users, inits = [], [], []
        for r in reds:
            v0 = loop.inits[r.index]
            ident = ConstantOp.of(reduction_identity(r.kind, r.type), r.type, location=loop.location)
            block.insert_before(loop, ident)
            loop.set_operand(first_init + r.index, ident.results[0])
            partial = loop.results[r.index]
            users.append(list(partial.uses))
            inits.append(v0)
            buf = AllocOp(memref((b,), r.type, WORKGROUP), location=loop.location,
                          name_hint=f"{(r.name.lstrip('%').split('[')[0]) or 'red'}_shared")
            self.body.insert(self.allocs, buf)
            self.allocs += 1
            self.managed.add(buf.results[0])
            shared.append(buf.results[0])
            if r.rescale is not None:  # the thread's partial, against its own running value -> the block's
                rs = r.rescale
                partial = rescale_partial(rs, partial, loop.results[rs.base], bases[rs.base][0], block, anchor,
                                          loop.location)
            block.insert_before(anchor, _store(partial, buf.results[0], AffineExpr.dim(0), [tid], loop))
        block.insert_before(anchor, BarrierOp(location=loop.location))
        s = b // 2
        while s >= 1:
            guard = AffineIfOp(IntegerSet(1, 0, (AffineExpr.constant(s - 1) - AffineExpr.dim(0),), (False,)), [tid],
                               location=loop.location)
            then = guard.then_block
            for r, buf in zip(reds, shared):
                mine = _load(buf, AffineExpr.dim(0), [tid], loop)
                other = _load(buf, AffineExpr.dim(0) + s, [tid], loop)
                then.insert_before(then.terminator, mine.owner)
                then.insert_before(then.terminator, other.owner)
                c = combine_reduced(r, mine, other, then, then.terminator, loop)
                then.insert_before(then.terminator, _store(c, buf, AffineExpr.dim(0), [tid], loop))
            block.insert_before(anchor, guard)
            block.insert_before(anchor, BarrierOp(location=loop.location))
            s //= 2
        out = {}
        for r, buf, uses, v0 in zip(reds, shared, users, inits):
            if r.guarded:
                self._guarded_combine(r, buf, uses, v0, block, anchor, loop)
                continue
            total = _load(buf, AffineExpr.constant(0), [], loop)
            block.insert_before(anchor, total.owner)
            start = v0
            if r.rescale is not None:  # the initial value, against the reduction's initial value -> its result
                rs = r.rescale
                start = rescale_partial(rs, v0, bases[rs.base][1], bases[rs.base][0], block, anchor, loop.location)
            res = combine_reduced(r, start, total, block, anchor, loop)
            for use in uses:
                use.op.set_operand(use.index, res)
            out[r.index] = (res, v0)
        return out

    def _guarded_combine(self, r: RowReduction, buf: Value, uses, v0: Value, block: Block, anchor: Operation,
                         loop: AffineForOp) -> None:
        """For a guarded memory reduction (:attr:`RowReduction.guarded`): ``affine.if (tid == 0 and the
        loop runs) { m[f] = op(m[f], partials[0]) }``; the element's load moves there from before the
        loop, and its store (the use of the loop's result) with it."""
        guard = AffineIfOp(r.runs[0], [self.tid, *r.runs[1]], location=loop.location)
        block.insert_before(anchor, guard)
        then = guard.then_block
        init = v0.owner
        init.detach()
        then.insert_before(then.terminator, init)
        total = _load(buf, AffineExpr.constant(0), [], loop)
        then.insert_before(then.terminator, total.owner)
        res = combine_reduced(r, v0, total, then, then.terminator, loop)
        for use in uses:
            use.op.set_operand(use.index, res)
            use.op.detach()
            then.insert_before(then.terminator, use.op)
        self.origin[guard] = loop

    # -- row-level statements -------------------------------------------------------------------------------------
    def _thread0_stores(self) -> int:
        count = 0
        for x in list(self.body.ops):
            if isinstance(x, MemRefAccessInterface) and x.is_write and x.memref not in self.managed:
                guard = AffineIfOp(IntegerSet(1, 0, (AffineExpr.dim(0),), (True,)), [self.tid], location=x.location)
                self.body.insert_before(x, guard)
                x.detach()
                guard.then_block.insert_before(guard.then_block.terminator, x)
                count += 1
        return count

    def _statements(self, op: Operation) -> set[Operation]:
        """The row statements (ops of the original row body) ``op`` holds parts of."""
        return {self.origin[y] for y in op.walk() if y in self.origin}

    def _separate_races(self) -> int:
        """Barriers between row-level phases (row loops, row-level statements) that the plan's
        dependences connect (:attr:`RowPlan.conflicts`), unless one already runs between them."""
        count = 0
        seen: set[Operation] = set()
        for x in list(self.body.ops):
            if isinstance(x, BarrierOp):
                seen = set()
                continue
            mine = self._statements(x)
            if any((a, b) in self.plan.conflicts for a in seen for b in mine):
                self.body.insert_before(x, BarrierOp(location=x.location))
                count += 1
                seen = set()
            seen |= mine
        return count


def _rescaled_text(r: RowReduction, loop: AffineForOp) -> str:
    if r.rescale is None:
        return ""
    return f" (rescaled as {value_name(loop.iter_args[r.rescale.base])} changes)"


# -- small builders ----------------------------------------------------------------------------------------------
def _runs_set(loop: AffineForOp) -> tuple[IntegerSet, list[Value]]:
    """``(set, operands)``: the points ``(tid, bound operands...)`` where ``tid == 0`` and ``loop`` (its
    bounds as they are now) runs at least once (every upper bound above every lower bound)."""
    (d,) = band_dims(loop)
    dims = [AffineExpr.dim(k + 1) for k in range(len(d.operands))]
    runs = tuple((u - lo).replace([], dims) - 1 for lo in d.lbs for u in d.ubs)
    return IntegerSet(1 + len(d.operands), 0, (AffineExpr.dim(0), *runs), (True,) + (False,) * len(runs)), \
        list(d.operands)


def _apply(expr: AffineExpr, dims: list[Value], syms: list[Value], name: str | None, at: Operation) -> Value:
    used = sorted(expr.used_symbols())
    e = expr.replace([AffineExpr.dim(k) for k in range(len(dims))],
                     [AffineExpr.symbol(used.index(k)) if k in used else AffineExpr.constant(0)
                      for k in range(len(syms))])
    op = AffineApplyOp(AffineMap(len(dims), len(used), (e,)), [*dims, *(syms[k] for k in used)],
                       location=at.location, name_hint=name)
    return op.results[0]


def _load(buf: Value, e: AffineExpr, dims: list[Value], at: Operation) -> Value:
    return AffineLoadOp(buf, AffineMap(len(dims), 0, (e,)), dims, location=at.location).results[0]


def _store(v: Value, buf: Value, e: AffineExpr, dims: list[Value], at: Operation) -> AffineStoreOp:
    return AffineStoreOp(v, buf, AffineMap(len(dims), 0, (e,)), dims, location=at.location)


def combine_reduced(r: RowReduction, a: Value, b: Value, block: Block, anchor: Operation, at: Operation) -> Value:
    """``op(a, b)`` (``truncf(op(extf a, extf b))`` for a widened chain), inserted before ``anchor``."""
    ops: list[Operation] = []
    if r.wide is not None:
        a, b = (arith.OPS["extf"](x, r.wide, location=at.location) for x in (a, b))
        ops += [a, b]
        a, b = a.results[0], b.results[0]
    c = arith.OPS[r.kind](a, b, location=at.location)
    ops.append(c)
    out = c.results[0]
    if r.wide is not None:
        t = arith.OPS["truncf"](out, r.type, location=at.location)
        ops.append(t)
        out = t.results[0]
    for x in ops:
        block.insert_before(anchor, x)
    return out


# -- the pass ------------------------------------------------------------------------------------------------------
@register_pass
@dataclass(frozen=True)
class GpuMapReductions(Pass):
    """Map nests of row reductions (softmax, layer norm, reductions along the last axis) to one
    ``gpu.launch`` each: one block per row, the row loops strided over the block's threads,
    block reductions in shared memory. Nests it does not take are left for ``gpu-map``."""

    name = "gpu-map-reductions"
    summary = "Map row reductions to one block per row with shared-memory block reductions"
    block_size: int = option(DEFAULT_BLOCK_SIZE, "threads per block (a power of two <= the target's most threads "
                                                 "per block, 1024; smaller when every row loop is shorter)")
    target: str = option(DEFAULT_GPU.name, "the GPU whose launch limits apply (a name of analysis.targets)")
    atomic: bool = option(False, "combine the partial results of a two-phase reduction with atomics into the "
                                 "destination instead of a second launch (float sums then vary from run to run)")

    def __post_init__(self) -> None:
        try:
            block_size_for(self.block_size, gpu=gpu_target(self.target))
        except TransformError as e:
            raise ValueError(e.reason) from None

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        from .gpu_reduce_units import map_reductions_in_block  # (it builds on this module)

        if func.is_declaration:
            return
        map_reductions_in_block(func, func.body, host_value_checker(func.body), HostPlan(func.body), ctx,
                                self.block_size, gpu_target(self.target), self.atomic)
