"""GPU mapping: loop nests become ``gpu.launch`` ops of a host function (``gpu-map``).

The *unoptimized* mapping (no tiling, no shared memory): every top-level op of a function
that computes (an ``affine.for``/``affine.parallel`` nest, or a run of statements such as
a lone ``affine.store``/``affine.if``) becomes one ``gpu.launch``, in program order, so the
function becomes a host function: its top level keeps only constants, ``affine.apply/min/
max`` of host index values, ``memref.alloc/dealloc``, the launches and ``func.return``.

For a nest, the outermost perfectly nested band of parallel loops (exact dependences,
:func:`analysis.is_parallel`; ``affine.parallel`` IVs without reductions are parallel by
definition) whose bounds use only host values (symbols, constants) is mapped, at most
three loops: the innermost mapped loop to ``x`` (coalescing), the next to ``y``, then
``z``. A mapped loop of trip count ``T`` gets block size ``b`` (option ``block-sizes``
``x,y,z``; default 256, 32x8 or 32x4x2 for one, two or three loops, clamped to a smaller
constant ``T``) and grid size ``ceildiv(T, b)`` computed on the host; its IV is recovered
as ``lb + (block_id * b + thread_id) * step``, and an ``affine.if`` keeps it below every
upper bound when ``T`` is not a constant multiple of ``b``. Loops of the band beyond the
three mapped ones (the outer ones) and every loop below the band run sequentially in each
thread (a matmul's ``k`` loop becomes a per-thread reduction)::

    affine.for %i = 0 to %N {                 %c1 = arith.constant 1 : index
      %v = affine.load %A[%i] : memref<?xf32>  %c256 = arith.constant 256 : index
      affine.store %v, %B[%i] : memref<?xf32>  %i_grid = affine.apply affine_map<()[s0] -> (s0 ceildiv 256)>()[%N]
    }                                          gpu.launch blocks(%bx, %by, %bz) in (%gx = %i_grid, %gy = %c1, %gz = %c1)
                                                   threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
                                                 %i = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%bx, %tx)
                                                 affine.if affine_set<(d0)[s0] : (-d0 + s0 - 1 >= 0)>(%i)[%N] {
                                                   ... the body with %i ...
                                                 }
                                                 gpu.terminator
                                               }

A nest without a mappable parallel loop, and a run of statements, become a 1x1x1 launch
running them sequentially (correct, slow; a note says so). Pure ops at the top level that
are not host ops (``arith.index_cast %N``) are re-materialized in the launches that use
them; a value computed in one launch and used by a later one merges both (and what lies
between) into one sequential launch. Refused (TransformError, the function unchanged): a
function returning values, calls, a host op (an ``alloc`` size) computed from device
data; for one nest: a constant grid beyond CUDA's limits (x < 2**31, y and z < 65536) or
bad block sizes (the nest then stays as it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import analysis
from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.core import Block
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineMaxOp,
    AffineMinOp,
    AffineParallelOp,
    AffineYieldOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.gpu import LaunchOp, TerminatorOp
from affine_ir.dialects.memref import AllocaOp
from affine_ir.types import MemRefType, index, memref

from .errors import TransformError
from .loop_utils import value_name
from .pass_base import Pass, PassContext, option, register_pass

__all__ = ["BandDim", "DEFAULT_BLOCK_SIZES", "FunctionPlan", "GpuMap", "HostPlan", "MAX_GRID", "MappedNest", "NestPlan",
           "check_block_sizes", "check_host_function", "map_function", "map_nest", "map_sequentially", "parallel_band",
           "plan_function", "plan_nest", "privatize_allocs"]

PASS = "gpu-map"

#: Default block sizes (x, y, z) by the number of mapped loops.
DEFAULT_BLOCK_SIZES = {1: (256,), 2: (32, 8), 3: (32, 4, 2)}
#: CUDA's grid limits (x, y, z) and block limits.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
AXES = "xyz"


@dataclass
class BandDim:
    """One loop of a band (an ``affine.for``, or one IV of an ``affine.parallel``): its IV,
    bounds as expressions over the symbols ``s<k>`` = ``operands[k]`` (max of ``lbs``, min of
    ``ubs``), and step."""

    op: Operation
    iv: Value
    lbs: list[AffineExpr]
    ubs: list[AffineExpr]
    operands: list[Value]
    step: int

    @property
    def name(self) -> str:
        return value_name(self.iv)

    @property
    def trip_count(self) -> int | None:
        """The constant number of iterations, or None."""
        if len(self.lbs) == 1:
            diffs = [u - self.lbs[0] for u in self.ubs]
            if all(d.is_constant for d in diffs):
                return max(0, min(ceil_div(d.constant_value, self.step) for d in diffs))
        if all(e.is_constant for e in self.lbs + self.ubs):
            span = min(e.constant_value for e in self.ubs) - max(e.constant_value for e in self.lbs)
            return max(0, ceil_div(span, self.step))
        return None


@dataclass
class MappedNest:
    """What :func:`map_nest` / :func:`map_sequentially` built: the launch, the mapped loops
    (x first), the block sizes and grid (an int, or the host value's text), whether an
    ``affine.if`` guards partial blocks, the loops left sequential per thread, and why the
    launch is sequential (1x1x1) when it is."""

    launch: LaunchOp | None
    mapped: list[str] = field(default_factory=list)
    block: tuple[int, int, int] = (1, 1, 1)
    grid: tuple = (1, 1, 1)
    guarded: bool = False
    sequential_loops: list[str] = field(default_factory=list)
    sequential_reason: str = ""
    privatized: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The decision as the pass records it."""
        if self.launch is None:
            return self.sequential_reason
        if not self.mapped:
            return f"1x1x1 launch running it sequentially: {self.sequential_reason}"
        n = len(self.mapped)
        text = f"mapped ({', '.join(reversed(self.mapped))}) to ({', '.join(reversed(AXES[:n]))}): grid " \
               f"({', '.join(map(str, self.grid))}), block ({', '.join(map(str, self.block))})"
        if self.guarded:
            text += ", guarded"
        if self.sequential_loops:
            text += f"; sequential per thread: ({', '.join(self.sequential_loops)})"
        if self.privatized:
            text += f"; thread-private (memref.alloca): {', '.join(self.privatized)}"
        return text


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# -- the host side ----------------------------------------------------------------------------------------------
_HOST_MAPS = ("affine.apply", "affine.min", "affine.max")


def host_value_checker(body: Block):
    """A predicate: is a value a host index value of the function body ``body`` (an index argument,
    an index constant, affine.apply/min/max of host index values at its top level)?"""
    memo: dict[int, tuple[Value, bool]] = {}  # the value is kept so that its id is not reused

    def check(v: Value) -> bool:
        hit = memo.get(id(v))
        if hit is None:
            owner = v.owner
            if isinstance(owner, Block):
                ok = owner is body and v.type == index
            elif owner.parent is not body or v.type != index:
                ok = False
            else:
                ok = owner.name == "arith.constant" or (owner.name in _HOST_MAPS and all(map(check, owner.operands)))
            hit = memo[id(v)] = (v, ok)
        return hit[1]

    return check


class HostPlan:
    """Creates host values of one function: index constants (at its start, one per value) and
    affine.apply/min/max of host values (before a given op)."""

    def __init__(self, body: Block):
        self.body = body
        self.is_host_value = host_value_checker(body)
        self._constants: dict[int, Value] = {}
        self._values: dict[tuple, Value] = {}

    def constant(self, c: int) -> Value:
        v = self._constants.get(c)
        if v is None:
            op = ConstantOp.of(c, index)
            self.body.insert(len(self._constants), op)
            v = self._constants[c] = op.results[0]
        return v

    def index_value(self, exprs: list[AffineExpr], operands: list[Value], anchor: Operation, kind: str,
                    name: str | None = None) -> Value:
        """The min (``kind="min"``) or max of ``exprs`` over the symbols ``operands``, on the host before ``anchor``."""
        exprs, kept = _compact(exprs, 0, operands)
        if all(e.is_constant for e in exprs):
            values = [e.constant_value for e in exprs]
            return self.constant(min(values) if kind == "min" else max(values))
        cls = AffineApplyOp if len(exprs) == 1 else (AffineMinOp if kind == "min" else AffineMaxOp)
        m = AffineMap(0, len(kept), tuple(exprs))
        key = (cls.name, m, tuple(map(id, kept)))
        v = self._values.get(key)  # made earlier on the host, so it dominates ``anchor``
        if v is None:
            op = cls(m, kept, location=anchor.location, name_hint=name)
            anchor.parent.insert_before(anchor, op)
            v = self._values[key] = op.results[0]
        return v

    def lower_bound(self, d: BandDim, anchor: Operation) -> Value:
        return self.index_value(d.lbs, d.operands, anchor, "max", f"{d.iv.name_hint or 'iv'}_lb")


# -- bands ------------------------------------------------------------------------------------------------------
def _dim(op: Operation, iv: Value, lb_map: AffineMap, lb_ops, lbs, ub_map: AffineMap, ub_ops, ubs, step) -> BandDim:
    operands: list[Value] = []

    def pos(v: Value) -> AffineExpr:
        for k, w in enumerate(operands):
            if w is v:
                return AffineExpr.symbol(k)
        operands.append(v)
        return AffineExpr.symbol(len(operands) - 1)

    def over(m: AffineMap, ops, exprs) -> list[AffineExpr]:
        repl = [pos(v) for v in ops]
        return [e.replace(repl[: m.num_dims], repl[m.num_dims:]) for e in exprs]

    return BandDim(op, iv, over(lb_map, lb_ops, lbs), over(ub_map, ub_ops, ubs), operands, step)


def band_dims(op: Operation) -> list[BandDim]:
    """The loops of one ``affine.for`` (one) or ``affine.parallel`` (one per IV)."""
    if isinstance(op, AffineForOp):
        lb, ub = op.lower_bound_map, op.upper_bound_map
        return [_dim(op, op.induction_var, lb, op.lower_bound_operands, lb.results, ub, op.upper_bound_operands,
                     ub.results, op.step)]
    lb, ub = op.attributes["lower_bounds"], op.attributes["upper_bounds"]
    return [_dim(op, iv, lb, op.lower_operands, lo, ub, op.upper_operands, hi, step)
            for iv, lo, hi, step in zip(op.ivs, op.bound_groups(False), op.bound_groups(True), op.steps)]


def parallel_band(op: Operation, is_host_value=None) -> tuple[list[BandDim], str]:
    """The outermost perfectly nested band of parallel loops of the nest ``op`` whose bounds use
    only host values (``is_host_value``; default: values of the enclosing function's top level
    and its arguments), and why it stops there."""
    if is_host_value is None:
        is_host_value = host_value_checker(op.parent)
    band: list[BandDim] = []
    cur = op
    while True:
        if isinstance(cur, AffineForOp):
            if cur.iter_args:
                return band, f"{value_name(cur.induction_var)} has iter_args"
            try:
                decision = analysis.parallel_decision(cur)
            except Exception as e:  # noqa: BLE001  (an analysis limit: the loop stays sequential)
                return band, f"{value_name(cur.induction_var)}: no dependence analysis ({e})"
            if not decision.parallel:
                return band, f"{value_name(cur.induction_var)} is not parallel: {decision.reason}"
        elif isinstance(cur, AffineParallelOp):
            if cur.results:
                return band, f"the affine.parallel of ({', '.join(map(value_name, cur.ivs))}) has reductions"
        else:
            return band, f"'{cur.name}' is not a loop"
        dims = band_dims(cur)
        for d in dims:
            bad = next((v for v in d.operands if not is_host_value(v)), None)
            if bad is not None:
                return band, f"the bounds of {d.name} use {value_name(bad)}, which is not a host value"
        band += dims
        body = [o for o in cur.body.ops if not isinstance(o, AffineYieldOp)]
        if len(body) != 1 or not isinstance(body[0], (AffineForOp, AffineParallelOp)):
            return band, "the band ends (imperfect nest or innermost loop)"
        cur = body[0]


# -- launches ---------------------------------------------------------------------------------------------------
def _new_launch(host: HostPlan, anchor: Operation, grid: Sequence[Value], block: Sequence[int]) -> LaunchOp:
    launch = LaunchOp(list(grid), [host.constant(b) for b in block], location=anchor.location)
    launch.body.append(TerminatorOp(location=anchor.location))
    anchor.parent.insert_before(anchor, launch)
    return launch


def map_sequentially(ops: Sequence[Operation], reason: str = "", host: HostPlan | None = None) -> MappedNest:
    """Move the top-level ``ops`` (in order) into one new 1x1x1 ``gpu.launch`` placed where the
    first one was. The caller makes sure nothing between them is needed elsewhere."""
    host = host or HostPlan(ops[0].parent)
    one = host.constant(1)
    launch = _new_launch(host, ops[0], [one, one, one], (1, 1, 1))
    term = launch.body.ops[-1]
    for op in ops:
        op.detach()
        launch.body.insert_before(term, op)
    return MappedNest(launch, sequential_reason=reason, privatized=privatize_allocs(launch))


def privatize_allocs(launch: LaunchOp) -> list[str]:
    """Replace each ``memref.alloc`` in ``launch`` (memory a loop body allocated for each of its
    iterations, so for each thread) by a thread-private ``memref.alloca`` of the same shape in
    the default memory space (a workgroup buffer would be shared by the threads of a block);
    its ``memref.dealloc`` ops go. Returns the buffers' names."""
    names = []
    for op in [o for o in launch.walk() if o.name == "memref.alloc"]:
        old = op.results[0]
        t: MemRefType = old.type
        new = AllocaOp(memref(t.shape, t.element_type), op.operands, location=op.location, name_hint=old.name_hint)
        op.parent.insert_before(op, new)
        for use in list(old.uses):
            if use.op.name == "memref.dealloc":
                use.op.erase()
        old.replace_all_uses_with(new.results[0])
        op.erase()
        names.append(value_name(new.results[0]))
    return names


def _block_sizes(mapped: list[BandDim], requested: Sequence[int]) -> list[int]:
    """Block sizes x first for ``mapped`` (outermost first), clamped to small constant trip counts."""
    n = len(mapped)
    sizes = list(requested[:n]) + [1] * (n - len(requested)) if requested else list(DEFAULT_BLOCK_SIZES[n])
    out = []
    for k in range(n):
        d = mapped[n - 1 - k]
        b = sizes[k]
        t = d.trip_count
        if t is not None:
            b = max(1, min(b, t))
        out.append(b)
    return out


def check_block_sizes(sizes: Sequence[int]) -> None:
    """TransformError unless ``sizes`` (x, y, z) is a valid CUDA block."""
    full = list(sizes) + [1] * (3 - len(sizes))
    if len(sizes) > 3 or any(not isinstance(b, int) or b < 1 for b in full):
        raise TransformError(PASS, f"block sizes {list(sizes)}: one to three sizes >= 1 (x, y, z) are needed")
    total = full[0] * full[1] * full[2]
    if any(b > m for b, m in zip(full, MAX_BLOCK)) or total > MAX_THREADS:
        raise TransformError(PASS, f"block sizes {list(sizes)} ({total} threads) exceed CUDA's limits: x, y <= 1024, "
                                   f"z <= 64, at most {MAX_THREADS} threads per block")


@dataclass
class NestPlan:
    """What :func:`map_nest` will do with a nest (computed by :func:`plan_nest`, nothing changed):
    its parallel ``band`` and why it stops there, the ``outer`` band loops left sequential, the
    mapped loops ``axes`` (x first), their block sizes and constant grid sizes (None: symbolic)."""

    op: Operation
    band: list[BandDim]
    why: str
    outer: list[BandDim] = field(default_factory=list)
    axes: list[BandDim] = field(default_factory=list)
    block: list[int] = field(default_factory=list)
    grid: list[int | None] = field(default_factory=list)


def plan_nest(op: Operation, block_sizes: Sequence[int] = (), is_host_value=None) -> NestPlan:
    """The mapping of the top-level nest ``op`` (see :class:`NestPlan`); TransformError when a
    constant grid size exceeds CUDA's limits or the block is not valid. Changes nothing."""
    if block_sizes:
        check_block_sizes(block_sizes)
    band, why = parallel_band(op, is_host_value)
    plan = NestPlan(op, band, why)
    if not band or any(d.trip_count == 0 for d in band):
        return plan
    n = min(3, len(band))
    plan.outer, mapped = band[: len(band) - n], band[len(band) - n:]
    plan.block = _block_sizes(mapped, block_sizes)
    check_block_sizes(plan.block)
    plan.axes = [mapped[n - 1 - k] for k in range(n)]
    for k, (d, b) in enumerate(zip(plan.axes, plan.block)):
        t = d.trip_count
        g = None if t is None else ceil_div(t, b)
        if g is not None and g > MAX_GRID[k]:
            raise TransformError(PASS, f"cannot map {d.name} to {AXES[k]}: grid size {g} (trip count {t} / block "
                                       f"{b}) exceeds CUDA's limit {MAX_GRID[k]} for {AXES[k]}", loops=[op])
        plan.grid.append(g)
    return plan


def map_nest(op: Operation, block_sizes: Sequence[int] = (), host: HostPlan | None = None,
             plan: NestPlan | None = None) -> MappedNest:
    """Replace the top-level loop nest ``op`` by a ``gpu.launch`` mapping its parallel band (see
    the module docstring); a nest without one becomes a 1x1x1 launch, a nest with a loop of no
    iteration goes (``launch`` None).

    Guarantees: every iteration of the nest runs exactly once, in one thread, with the same IV
    values (the mapped loops are parallel, so any order is correct); the loops below the band
    keep their order inside each thread. Raises :class:`TransformError` (IR unchanged) when a
    constant grid size exceeds CUDA's limits or ``block_sizes`` is not a valid block.
    """
    host = host or HostPlan(op.parent)
    plan = plan or plan_nest(op, block_sizes, host.is_host_value)
    band, outer, axes, block = plan.band, plan.outer, plan.axes, plan.block
    if not band:
        return map_sequentially([op], f"no parallel loop to map ({plan.why})", host)
    empty = next((d for d in band if d.trip_count == 0), None)
    if empty is not None:
        op.erase()
        return MappedNest(None, sequential_reason=f"removed: the nest runs no iteration ({empty.name} has none)")
    n = len(axes)
    # -- from here on the IR changes --
    grid_values, grid_text, lb_values = [], [], []
    for d, b, g in zip(axes, block, plan.grid):
        lbv = host.lower_bound(d, op) if len(d.lbs) > 1 else None
        lb_values.append(lbv)
        if g is not None:
            grid_values.append(host.constant(g))
            grid_text.append(g)
            continue
        lo = AffineExpr.symbol(len(d.operands)) if lbv is not None else d.lbs[0]
        ops = d.operands + ([lbv] if lbv is not None else [])
        v = host.index_value([(u - lo).ceildiv(d.step * b) for u in d.ubs], ops, op, "min",
                             f"{d.iv.name_hint or 'iv'}_grid")
        grid_values.append(v)
        grid_text.append(value_name(v))
    one = host.constant(1)
    launch = _new_launch(host, op, grid_values + [one] * (3 - n), block + [1] * (3 - n))
    term = launch.body.ops[-1]
    args = launch.body.args
    ivs, guards = [], []
    for k, (d, b, lbv) in enumerate(zip(axes, block, lb_values)):
        lo = AffineExpr.symbol(len(d.operands)) if lbv is not None else d.lbs[0]
        ops = d.operands + ([lbv] if lbv is not None else [])
        expr = lo.shift(2, 0) + (AffineExpr.dim(0) * b + AffineExpr.dim(1)) * d.step
        iv = _apply(expr, [args[k], args[3 + k]], ops, d.iv.name_hint, op)
        launch.body.insert_before(term, iv.owner)
        ivs.append(iv)
        t = d.trip_count
        if t is None or t % b:
            guards.append((iv, d))
    target = launch.body
    anchor = term
    if guards:
        guard = _guard(guards, op)
        launch.body.insert_before(term, guard)
        target, anchor = guard.then_block, guard.then_block.ops[-1]
    seq = []
    for d in outer:
        loop = _sequential_loop(d, op)
        target.insert_before(anchor, loop)
        d.iv.replace_all_uses_with(loop.induction_var)
        target, anchor = loop.body, loop.body.ops[-1]
        seq.append(d.name)
    for d, iv in zip(axes, ivs):
        d.iv.replace_all_uses_with(iv)
    innermost = band[-1].op
    for inner in [o for o in innermost.body.ops if not isinstance(o, AffineYieldOp)]:
        inner.detach()
        target.insert_before(anchor, inner)
    op.erase()
    below = [value_name(o.induction_var) for o in launch.walk() if isinstance(o, AffineForOp)]
    return MappedNest(launch, [d.name for d in axes], tuple(block + [1] * (3 - n)),
                      tuple(grid_text + [1] * (3 - n)), bool(guards), seq + [b for b in below if b not in seq],
                      privatized=privatize_allocs(launch))


def _compact(exprs: list[AffineExpr], num_dims: int, syms: Sequence[Value]) -> tuple[list[AffineExpr], list[Value]]:
    """``exprs`` over only the symbols they use, each distinct value once."""
    kept: list[Value] = []
    repl = []
    used = set().union(*(e.used_symbols() for e in exprs)) if exprs else set()
    for k, v in enumerate(syms):
        if k not in used:
            repl.append(AffineExpr.constant(0))
            continue
        j = next((i for i, w in enumerate(kept) if w is v), None)
        if j is None:
            kept.append(v)
            j = len(kept) - 1
        repl.append(AffineExpr.symbol(j))
    dims = [AffineExpr.dim(i) for i in range(num_dims)]
    return [e.replace(dims, repl) for e in exprs], kept


def _apply(expr: AffineExpr, dims: list[Value], syms: list[Value], name: str | None, at: Operation) -> Value:
    (e,), kept = _compact([expr], len(dims), syms)
    op = AffineApplyOp(AffineMap(len(dims), len(kept), (e,)), [*dims, *kept], location=at.location, name_hint=name)
    return op.results[0]


def _guard(guards: list[tuple[Value, BandDim]], at: Operation) -> AffineIfOp:
    """``affine.if`` keeping each guarded IV below every upper bound of its loop."""
    syms: list[Value] = []
    cons: list[AffineExpr] = []
    for k, (_iv, d) in enumerate(guards):
        base = len(syms)
        syms += d.operands
        for u in d.ubs:
            cons.append(u.shift(len(guards), base) - AffineExpr.dim(k) - 1)
    cons, kept = _compact(cons, len(guards), syms)
    unique = list(dict.fromkeys(cons))
    cond = IntegerSet(len(guards), len(kept), tuple(unique), (False,) * len(unique))
    return AffineIfOp(cond, [iv for iv, _ in guards] + kept, location=at.location)


def _sequential_loop(d: BandDim, at: Operation) -> AffineForOp:
    lbs, lops = _compact(d.lbs, 0, d.operands)
    ubs, uops = _compact(d.ubs, 0, d.operands)
    return AffineForOp(AffineMap(0, len(lops), tuple(lbs)), lops, AffineMap(0, len(uops), tuple(ubs)), uops, d.step,
                       iv_name=d.iv.name_hint, location=d.op.location or at.location)


# -- functions ---------------------------------------------------------------------------------------------------
_HOST, _REMAT, _COMPUTE, _LAUNCH = "host", "remat", "compute", "launch"


@dataclass
class Unit:
    """Top-level ops that become one launch: ``ops`` (computing, in order), ``span`` (every
    top-level op from the first to the last of them) and why it runs sequentially, if known."""

    ops: list[Operation]
    span: list[Operation]
    reason: str = ""


class FunctionPlan:
    """How the top level of a function splits into launches (see :func:`plan_function`)."""

    def __init__(self, func: FuncOp, kinds: dict[int, str], units: list[Unit]):
        self.func = func
        self.kinds = kinds
        self.units = units

    def place(self, unit: Unit, launch: LaunchOp) -> None:
        """After ``unit``'s ops moved into ``launch``: the host ops that were between them go before
        it (deallocs after it), and the re-materializable values it uses are cloned into it."""
        body = launch.body
        for op in unit.span:
            if op.parent is self.func.body and op.name != "memref.dealloc" and op is not launch:
                op.detach()
                self.func.body.insert_before(launch, op)
        needed: dict[int, Operation] = {}

        def need(v: Value) -> None:
            owner = v.owner
            if isinstance(owner, Operation) and self.kinds.get(id(owner)) == _REMAT and id(owner) not in needed:
                needed[id(owner)] = owner
                for w in owner.operands:
                    need(w)

        for op in launch.walk():
            if op is not launch:
                for v in op.operands:
                    need(v)
        mapping: dict[Value, Value] = {}
        k = 0
        for op in self.func.body.ops:
            if id(op) in needed:
                clone = op.clone(mapping)
                body.insert(k, clone)
                k += 1
        inside = {id(o) for o in launch.walk()} - {id(launch)}
        for old, new in mapping.items():
            for use in list(old.uses):
                if id(use.op) in inside and use.op is not new.owner:
                    use.op.set_operand(use.index, new)

    def finish(self) -> None:
        """Erase the re-materializable ops no longer used on the host."""
        for op in reversed(list(self.func.body.ops)):
            if self.kinds.get(id(op)) == _REMAT and not any(r.uses for r in op.results):
                op.erase()


def _classify(func: FuncOp, pass_name: str) -> dict[int, str]:
    is_host = host_value_checker(func.body)
    kinds: dict[int, str] = {}
    for op in func.body.ops:
        where = f" at {op.location}" if op.location else ""
        name = op.name
        if name == "func.return":
            if op.operands:
                raise TransformError(pass_name, f"cannot map @{func.sym_name}: it returns values (a host function "
                                                f"returns nothing; pass results through memrefs)", location=op.location)
            kind = _HOST
        elif name == "gpu.launch":
            kind = _LAUNCH
        elif name in ("arith.constant", "memref.dealloc") or (name in _HOST_MAPS and all(map(is_host, op.operands))):
            kind = _HOST
        elif name == "memref.alloc":
            bad = next((v for v in op.operands if not is_host(v)), None)
            if bad is not None:
                raise TransformError(pass_name, f"cannot map @{func.sym_name}: the size {value_name(bad)} of "
                                                f"'memref.alloc'{where} is not a host value", location=op.location)
            kind = _HOST
        elif op.is_pure and not op.regions and all(
                v.owner is func.body or kinds.get(id(v.owner)) in (_HOST, _REMAT) for v in op.operands):
            kind = _REMAT
        else:
            kind = _COMPUTE
        kinds[id(op)] = kind
    for op in func.walk():
        where = f" at {op.location}" if op.location else ""
        if op.name == "func.call":
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: 'func.call'{where} cannot run in a kernel",
                                 location=op.location)
        if op.name == "gpu.launch" and op.parent is not func.body:
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: the 'gpu.launch'{where} is not at the top "
                                            f"level (a launch cannot run in a kernel)", location=op.location)
    return kinds


def plan_function(func: FuncOp, pass_name: str = PASS) -> FunctionPlan:
    """Split the top level of ``func`` into units, one launch each (changes nothing): each loop
    nest alone, each run of other computing ops together; units between the op computing a value
    and a later op using it merge into one. TransformError when ``func`` cannot become a host
    function (results, calls, an alloc size computed on the device)."""
    kinds = _classify(func, pass_name)
    top = list(func.body.ops)
    groups: list[list[int]] = []          # positions in ``top`` of each unit's computing ops
    run: list[int] | None = None
    for k, op in enumerate(top):
        kind = kinds[id(op)]
        if kind == _COMPUTE:
            if isinstance(op, (AffineForOp, AffineParallelOp)):
                groups.append([k])
                run = None
            else:
                if run is None:
                    run = []
                    groups.append(run)
                run.append(k)
        elif kind == _LAUNCH or (kind == _HOST and op.name.startswith("memref.")):
            run = None
    unit_of = {id(top[k]): u for u, g in enumerate(groups) for k in g}
    reach = list(range(len(groups)))    # the last unit using a value of each unit
    reasons = [""] * len(groups)
    for u, g in enumerate(groups):
        for k in g:
            for r in top[k].results:
                for use in r.uses:
                    user = use.op
                    while user.parent is not func.body:
                        user = user.parent_op
                    w = unit_of.get(id(user))
                    if w is None:
                        raise TransformError(pass_name, f"cannot map @{func.sym_name}: {value_name(r)} is computed "
                                                        f"on the device but used by '{user.name}' on the host",
                                             location=user.location)
                    if w > reach[u]:
                        reach[u] = w
                        reasons[u] = f"{value_name(r)} computed by '{top[k].name}' is used by a later '{user.name}'"
    units: list[Unit] = []
    u = 0
    while u < len(groups):
        end, why = reach[u], [reasons[u]] if reasons[u] else []
        w = u
        while w < end:
            w += 1
            if reach[w] > end:
                end = reach[w]
            if reasons[w]:
                why.append(reasons[w])
        first, last = groups[u][0], groups[end][-1]
        span = top[first: last + 1]
        launch = next((o for o in span if kinds[id(o)] == _LAUNCH), None)
        if launch is not None:
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: a value computed before the gpu.launch"
                                            f"{' at ' + str(launch.location) if launch.location else ''} is used after "
                                            f"it ({'; '.join(why)})", location=launch.location)
        ops = [o for o in span if kinds[id(o)] == _COMPUTE]
        if why:
            reason = "merged: " + "; ".join(why)
        elif not isinstance(ops[0], (AffineForOp, AffineParallelOp)):
            reason = "top-level statements outside loops"
        else:
            reason = ""
        units.append(Unit(ops, span, reason))
        u = end + 1
    return FunctionPlan(func, kinds, units)


def check_host_function(func: FuncOp) -> None:
    """TransformError naming the first top-level op of ``func`` that a host function may not hold
    (constants, affine.apply/min/max of host index values, alloc with host sizes, dealloc,
    ``gpu.launch``, an operand-less ``func.return``)."""
    is_host = host_value_checker(func.body)
    for op in func.body.ops:
        name = op.name
        if name in ("arith.constant", "gpu.launch", "memref.dealloc"):
            continue
        if name == "memref.alloc" and all(is_host(v) for v in op.operands):
            continue
        if name in ("affine.apply", "affine.min", "affine.max") and all(is_host(v) for v in op.operands):
            continue
        if name == "func.return" and not op.operands:
            continue
        where = f" at {op.location}" if op.location else ""
        raise TransformError(PASS, f"@{func.sym_name} is not a host function: '{name}'{where} is not a host op",
                             location=op.location)


def map_function(func: FuncOp, block_sizes: Sequence[int] = (), ctx: PassContext | None = None) -> list[MappedNest]:
    """Map every computing top-level op of ``func`` to a launch (see the module docstring);
    decisions go to ``ctx`` when given. Raises TransformError (``func`` unchanged) when the
    function cannot become a host function, or without ``ctx`` when a nest is refused; with
    ``ctx`` a refused nest (grid limits) stays as it is, the refusal is recorded, and the rest
    is mapped."""
    plan = plan_function(func, PASS)
    host = HostPlan(func.body)
    nests: list[NestPlan | TransformError | None] = []
    for unit in plan.units:
        nest = None
        if len(unit.ops) == 1 and isinstance(unit.ops[0], (AffineForOp, AffineParallelOp)):
            try:
                nest = plan_nest(unit.ops[0], block_sizes, host.is_host_value)
            except TransformError as e:
                if ctx is None:
                    raise
                nest = e
        nests.append(nest)
    out = []
    for unit, nest in zip(plan.units, nests):
        if isinstance(nest, TransformError):
            ctx.refused(unit.ops[0], nest)
            continue
        mapped = map_nest(unit.ops[0], host=host, plan=nest) if nest is not None else \
            map_sequentially(unit.ops, unit.reason, host)
        if mapped.launch is not None:
            plan.place(unit, mapped.launch)
        out.append(mapped)
        if ctx is not None:
            record = ctx.applied if mapped.mapped else ctx.note
            record(mapped.launch or unit.ops[0], mapped.describe())
    plan.finish()
    return out


@register_pass
@dataclass(frozen=True)
class GpuMap(Pass):
    """Turn each function into a host function whose computing nests are ``gpu.launch`` ops
    (the unoptimized mapping: parallel band to blocks x threads, the rest per thread)."""

    name = "gpu-map"
    summary = "Map loop nests to gpu.launch ops (parallel loops to blocks and threads)"
    block_sizes: tuple[int, ...] = option((), "block sizes x,y,z for the mapped loops, innermost first (default: "
                                              "256 for one loop, 32,8 for two, 32,4,2 for three)")

    def __post_init__(self) -> None:
        if self.block_sizes:
            try:
                check_block_sizes(self.block_sizes)
            except TransformError as e:
                raise ValueError(e.reason) from None

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if func.is_declaration:
            return
        try:
            map_function(func, self.block_sizes, ctx)
        except TransformError as e:
            ctx.refused(func, e)

