"""GPU mapping of one loop nest (the nest-level half of :mod:`.gpu_map`): the parallel band,
block sizes, grid sizes on the host, IV recovery and guards, sequential launches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import analysis
from affine_ir import AffineExpr, AffineMap, IntegerSet, Operation, Value
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
from affine_ir.dialects.affine_symbols import affine_scope, is_valid_symbol
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.gpu import LaunchOp, TerminatorOp
from affine_ir.dialects.memref import AllocaOp, AllocOp
from affine_ir.interfaces import LoopLikeOpInterface
from affine_ir.traits import (
    AffineMapValue,
    ConstantLike,
    only_allocates_results,
    only_frees_memory,
)
from affine_ir.types import INT64_MAX, MemRefType, index, memref
from analysis.targets import DEFAULT_GPU, GPUTarget

from ..errors import TransformError
from ..loop_utils import value_name

__all__ = ["BandDim", "DEFAULT_BLOCK_SIZES", "HostPlan", "MAX_GRID", "MappedNest", "NestPlan", "allocates_result",
           "band_and_blocker", "check_block_sizes", "default_block_sizes", "frees_memory", "map_nest",
           "map_sequentially", "new_launch", "parallel_band", "plan_nest", "privatize_allocs"]

PASS = "gpu-map"

AXES = "xyz"


def default_block_sizes(gpu: GPUTarget) -> dict[int, tuple[int, ...]]:
    """``gpu``'s default block sizes (x, y, z) by the number of mapped loops (1 to 3)."""
    return {n: tuple(sizes) for n, sizes in enumerate(gpu.default_block_sizes, start=1)}


# The limits come from the target (``analysis.targets``); these names are the default target's.
#: Default block sizes (x, y, z) by the number of mapped loops.
DEFAULT_BLOCK_SIZES = default_block_sizes(DEFAULT_GPU)
#: CUDA's grid limits (x, y, z) and block limits.
MAX_GRID = DEFAULT_GPU.max_grid_dims
MAX_BLOCK = DEFAULT_GPU.max_block_dims
MAX_THREADS = DEFAULT_GPU.max_threads_per_block


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
#: The names gpu-map used before the queries moved to affine_ir.traits.
frees_memory = only_frees_memory
allocates_result = only_allocates_results


def host_value_checker(body: Block, outer=None):
    """A predicate: is a value a host index value of the block ``body`` (a function body, or the
    body of a loop kept on the host): an index argument of it (the function's index arguments, the
    loop's IV), an index constant (``ConstantLike``) or an ``AffineMapValue`` op (affine.apply/min/
    max) of host index values at its top level, or a host value of the enclosing host scope
    (``outer``, the checker of the block holding the host loop)."""
    memo: dict[Value, bool] = {}

    def check(v: Value) -> bool:
        hit = memo.get(v)
        if hit is None:
            owner = v.owner
            if isinstance(owner, Block):
                ok = (owner is body and v.type == index) or (owner is not body and outer is not None and outer(v))
            elif owner.parent is not body:
                ok = outer is not None and outer(v)
            elif v.type != index:
                ok = False
            else:
                ok = owner.has_trait(ConstantLike) or (owner.has_trait(AffineMapValue) and
                                                       all(map(check, owner.operands)))
            hit = memo[v] = ok
        return hit

    return check


class HostPlan:
    """Creates host values of one function: index constants (at its start, one per value) and
    affine.apply/min/max of host values (before a given op)."""

    def __init__(self, body: Block, is_host_value=None, parent: HostPlan | None = None):
        self.body = body
        self.is_host_value = is_host_value or host_value_checker(body)
        self.parent = parent  # the plan of the function, whose start holds the constants
        self._constants: dict[int, Value] = {}
        self._values: dict[tuple, Value] = {}

    def constant(self, c: int) -> Value:
        if self.parent is not None:
            return self.parent.constant(c)
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
        m, kept = _dims_for_non_symbols(exprs, kept, anchor)
        key = (cls.name, m, tuple(kept))
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


def parallel_band(op: Operation, is_host_value=None, gpu: GPUTarget = DEFAULT_GPU) -> tuple[list[BandDim], str]:
    """The outermost perfectly nested band of parallel loops of the nest ``op`` whose bounds use
    only host values (``is_host_value``; default: values of the enclosing function's top level
    and its arguments), and why it stops there (also where a step times a block of ``gpu``'s
    most threads would pass 64 bits)."""
    band, why, _dependence = band_and_blocker(op, is_host_value, gpu)
    return band, why


def band_and_blocker(op: Operation, is_host_value=None,
                     gpu: GPUTarget = DEFAULT_GPU) -> tuple[list[BandDim], str, analysis.Dependence | None]:
    """:func:`parallel_band` and the dependence that ends the band: the one
    :func:`analysis.parallel_decision` names as carried by the first loop that is not parallel
    (None when something else ends it)."""
    if is_host_value is None:
        is_host_value = host_value_checker(op.parent)
    band: list[BandDim] = []
    cur = op
    while True:
        if isinstance(cur, AffineForOp):
            if cur.iter_args:
                return band, f"{value_name(cur.induction_var)} has iter_args", None
            try:
                decision = analysis.parallel_decision(cur)
            except Exception as e:  # noqa: BLE001  (an analysis limit: the loop stays sequential)
                return band, f"{value_name(cur.induction_var)}: no dependence analysis ({e})", None
            if not decision.parallel:
                return band, f"{value_name(cur.induction_var)} is not parallel: {decision.reason}", decision.dependence
        elif isinstance(cur, AffineParallelOp):
            if cur.results:
                return band, f"the affine.parallel of ({', '.join(map(value_name, cur.ivs))}) has reductions", None
        else:
            return band, f"'{cur.name}' is not a loop", None
        dims = band_dims(cur)
        for d in dims:
            bad = next((v for v in d.operands if not is_host_value(v)), None)
            if bad is not None:
                return band, f"the bounds of {d.name} use {value_name(bad)}, which is not a host value", None
            if d.step * gpu.max_threads_per_block > INT64_MAX:  # a thread's IV (block id * threads + thread id) * step
                return band, f"the step of {d.name} ({d.step}) times a block of threads passes 64 bits", None
        band += dims
        body = [o for o in cur.body.ops if not isinstance(o, AffineYieldOp)]
        if len(body) != 1 or not isinstance(body[0], LoopLikeOpInterface):
            return band, "the band ends (imperfect nest or innermost loop)", None
        cur = body[0]


# -- launches ---------------------------------------------------------------------------------------------------
def new_launch(host: HostPlan, anchor: Operation, grid: Sequence[Value], block: Sequence[int],
               cluster: Sequence[int] = ()) -> LaunchOp:
    """A new empty ``gpu.launch`` (grid values, constant block sizes, constant cluster sizes if any) before the
    top-level ``anchor``."""
    launch = LaunchOp(list(grid), [host.constant(b) for b in block], location=anchor.location,
                      clusters=[host.constant(c) for c in cluster])
    launch.body.append(TerminatorOp(location=anchor.location))
    anchor.parent.insert_before(anchor, launch)
    return launch


def map_sequentially(ops: Sequence[Operation], reason: str = "", host: HostPlan | None = None) -> MappedNest:
    """Move the top-level ``ops`` (in order) into one new 1x1x1 ``gpu.launch`` placed where the
    first one was. The caller makes sure nothing between them is needed elsewhere."""
    host = host or HostPlan(ops[0].parent)
    one = host.constant(1)
    launch = new_launch(host, ops[0], [one, one, one], (1, 1, 1))
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
    for op in [o for o in launch.walk() if isinstance(o, AllocOp)]:
        old = op.results[0]
        t: MemRefType = old.type
        new = AllocaOp(memref(t.shape, t.element_type), op.operands, location=op.location, name_hint=old.name_hint)
        op.parent.insert_before(op, new)
        for use in list(old.uses):
            if frees_memory(use.op):
                use.op.erase()
        old.replace_all_uses_with(new.results[0])
        op.erase()
        names.append(value_name(new.results[0]))
    return names


def _block_sizes(mapped: list[BandDim], requested: Sequence[int], gpu: GPUTarget) -> list[int]:
    """Block sizes x first for ``mapped`` (outermost first; ``requested`` or ``gpu``'s defaults),
    clamped to small constant trip counts."""
    n = len(mapped)
    sizes = list(requested[:n]) + [1] * (n - len(requested)) if requested else list(gpu.default_block_sizes[n - 1])
    out = []
    for k in range(n):
        d = mapped[n - 1 - k]
        b = sizes[k]
        t = d.trip_count
        if t is not None:
            b = max(1, min(b, t))
        out.append(b)
    return out


def check_block_sizes(sizes: Sequence[int], gpu: GPUTarget = DEFAULT_GPU) -> None:
    """TransformError unless ``sizes`` (x, y, z) is a valid CUDA block on ``gpu`` (its
    ``max_block_dims`` and ``max_threads_per_block``)."""
    full = list(sizes) + [1] * (3 - len(sizes))
    if len(sizes) > 3 or any(not isinstance(b, int) or b < 1 for b in full):
        raise TransformError(PASS, f"block sizes {list(sizes)}: one to three sizes >= 1 (x, y, z) are needed")
    total = full[0] * full[1] * full[2]
    if any(b > m for b, m in zip(full, gpu.max_block_dims)) or total > gpu.max_threads_per_block:
        raise TransformError(PASS, f"block sizes {list(sizes)} ({total} threads) exceed CUDA's limits: "
                                   f"{_limits_text(gpu.max_block_dims)}, at most {gpu.max_threads_per_block} threads "
                                   f"per block")


def _limits_text(dims: Sequence[int]) -> str:
    """``x, y <= 1024, z <= 64``: the per-axis limits, equal neighbours together."""
    groups: list[tuple[list[str], int]] = []
    for axis, limit in zip(AXES, dims):
        if groups and groups[-1][1] == limit:
            groups[-1][0].append(axis)
        else:
            groups.append(([axis], limit))
    return ", ".join(f"{', '.join(axes)} <= {limit}" for axes, limit in groups)


@dataclass
class NestPlan:
    """What :func:`map_nest` will do with a nest (computed by :func:`plan_nest`, nothing changed):
    its parallel ``band`` and why it stops there, the ``outer`` band loops left sequential, the
    mapped loops ``axes`` (x first), their block sizes and constant grid sizes (None: symbolic),
    and the ``dependence`` that ends the band when one does (see :func:`band_and_blocker`)."""

    op: Operation
    band: list[BandDim]
    why: str
    outer: list[BandDim] = field(default_factory=list)
    axes: list[BandDim] = field(default_factory=list)
    block: list[int] = field(default_factory=list)
    grid: list[int | None] = field(default_factory=list)
    dependence: analysis.Dependence | None = None


def plan_nest(op: Operation, block_sizes: Sequence[int] = (), is_host_value=None,
              gpu: GPUTarget = DEFAULT_GPU) -> NestPlan:
    """The mapping of the top-level nest ``op`` on ``gpu`` (see :class:`NestPlan`); TransformError
    when a constant grid size exceeds ``gpu``'s limits or the block is not valid. Changes nothing."""
    if block_sizes:
        check_block_sizes(block_sizes, gpu)
    band, why, dependence = band_and_blocker(op, is_host_value, gpu)
    plan = NestPlan(op, band, why, dependence=dependence)
    if not band or any(d.trip_count == 0 for d in band):
        return plan
    n = min(3, len(band))
    plan.outer, mapped = band[: len(band) - n], band[len(band) - n:]
    plan.block = _block_sizes(mapped, block_sizes, gpu)
    check_block_sizes(plan.block, gpu)
    plan.axes = [mapped[n - 1 - k] for k in range(n)]
    for k, (d, b) in enumerate(zip(plan.axes, plan.block)):
        t = d.trip_count
        g = None if t is None else ceil_div(t, b)
        limit = gpu.max_grid_dims[k]
        if g is not None and g > limit:
            raise TransformError(PASS, f"cannot map {d.name} to {AXES[k]}: grid size {g} (trip count {t} / block "
                                       f"{b}) exceeds CUDA's limit {limit} for {AXES[k]}", loops=[op])
        plan.grid.append(g)
    return plan


def map_nest(op: Operation, block_sizes: Sequence[int] = (), host: HostPlan | None = None,
             plan: NestPlan | None = None, gpu: GPUTarget = DEFAULT_GPU) -> MappedNest:
    """Replace the top-level loop nest ``op`` by a ``gpu.launch`` mapping its parallel band (see
    the module docstring); a nest without one becomes a 1x1x1 launch, a nest with a loop of no
    iteration goes (``launch`` None).

    Guarantees: every iteration of the nest runs exactly once, in one thread, with the same IV
    values (the mapped loops are parallel, so any order is correct); the loops below the band
    keep their order inside each thread. Raises :class:`TransformError` (IR unchanged) when a
    constant grid size exceeds ``gpu``'s limits or ``block_sizes`` is not a valid block.
    """
    host = host or HostPlan(op.parent)
    plan = plan or plan_nest(op, block_sizes, host.is_host_value, gpu)
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
        exprs = [(u - lo).ceildiv(d.step * b) for u in d.ubs]
        if lbv is not None and not is_valid_symbol(lbv, affine_scope(op)):
            # in a host loop the max is no valid dim or symbol of another map: ceildiv(min(u) - max(l), s)
            # is the min over (u, l) of ceildiv(u - l, s)
            exprs, ops = [(u - lb).ceildiv(d.step * b) for u in d.ubs for lb in d.lbs], d.operands
        v = host.index_value(exprs, ops, op, "min", f"{d.iv.name_hint or 'iv'}_grid")
        grid_values.append(v)
        grid_text.append(value_name(v))
    one = host.constant(1)
    launch = new_launch(host, op, grid_values + [one] * (3 - n), block + [1] * (3 - n))
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


def _dims_for_non_symbols(exprs: list[AffineExpr], operands: list[Value], anchor: Operation) -> tuple[AffineMap, list]:
    """A map of ``exprs`` (over symbols ``operands``) for an op before ``anchor`` on the host: the
    operands that are no valid symbols there (the IV of a loop kept on the host, an affine.apply
    of it) become dims, as MLIR requires; the others stay symbols."""
    scope = affine_scope(anchor)
    is_dim = [not is_valid_symbol(v, scope) for v in operands]
    dims = [v for v, d in zip(operands, is_dim) if d]
    syms = [v for v, d in zip(operands, is_dim) if not d]
    repl, nd, ns = [], 0, 0
    for d in is_dim:
        if d:
            repl.append(AffineExpr.dim(nd))
            nd += 1
        else:
            repl.append(AffineExpr.symbol(ns))
            ns += 1
    return AffineMap(nd, ns, tuple(e.replace([], repl) for e in exprs)), dims + syms


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
