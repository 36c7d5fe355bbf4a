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
between) into one sequential launch, except where that would take in a nest worth mapping (a
parallel band, or a loop worth keeping on the host) and the value is an integer or float: then it
is *demoted* first (:mod:`.demote_scalars`): stored right after its definition into a one-element
buffer allocated at the function entry, and loaded right before each later user (inside the nest
where the user is), so the launches stay apart (:func:`scalars_to_demote` picks the values; index
values, which may be affine operands, stay merged). A loop whose iter_args alone keep it off the host
while its body holds parallel nests has them demoted the same way first
(:func:`.demote_scalars.demote_iter_args`), then it is a loop of launches; an ``affine.if`` of host
conditions that ``gpu-sink-ifs`` could not sink and whose branches hold a nest worth mapping stays on
the host the same way (:mod:`.host_control`: the host evaluates it, each branch is mapped like a
body; such a loop or if left without a launch, its nests running no iteration, is removed). Refused (TransformError, the
function unchanged): a
function returning values, calls (and other ops of unknown effects outside launches), a host
op (an ``alloc`` size) computed from device data; for one nest: a constant grid beyond CUDA's
limits (x < 2**31, y and z < 65536) or bad block sizes (the nest then stays as it is).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from affine_ir import FuncOp, Operation, Value
from affine_ir.core import Block
from affine_ir.dialects.affine import AffineForOp, AffineIfOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.dialects.memref import AllocOp
from affine_ir.interfaces import LoopLikeOpInterface
from affine_ir.traits import IsTerminator, RecursiveMemoryEffects, ReturnLike
from affine_ir.types import TensorMapDescriptorType, UnrankedMemRefType
from analysis.targets import DEFAULT_GPU, GPUTarget, gpu_target

from ..errors import TransformError
from ..loop_utils import at_location, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .demote_scalars import demotable_iter_args, demote_iter_args, demote_to_memory, is_demotable
from .gpu_map_nest import (  # noqa: F401  (re-exported: the nest-level API)
    AXES,
    DEFAULT_BLOCK_SIZES,
    MAX_BLOCK,
    MAX_GRID,
    MAX_THREADS,
    PASS,
    BandDim,
    HostPlan,
    MappedNest,
    NestPlan,
    band_and_blocker,
    band_dims,
    ceil_div,
    check_block_sizes,
    frees_memory,
    host_value_checker,
    map_nest,
    map_sequentially,
    parallel_band,
    plan_nest,
    privatize_allocs,
)
from .host_control import branches, host_loop_candidate, is_host_if, is_host_loop, is_host_op, worth_hosting
from .sequential_launch import SequentialLaunch
from .sink_ifs import sink_ifs

__all__ = ["BandDim", "DEFAULT_BLOCK_SIZES", "FunctionPlan", "GpuMap", "HostPlan", "MAX_GRID", "MappedNest", "NestPlan",
           "check_block_sizes", "check_host_function", "host_loop_candidate", "is_host_op", "map_function",
           "map_nest", "map_sequentially", "parallel_band", "plan_demoting", "plan_function", "plan_nest",
           "privatize_allocs", "scalars_to_demote"]


# -- functions ---------------------------------------------------------------------------------------------------
_HOST, _REMAT, _COMPUTE, _LAUNCH = "host", "remat", "compute", "launch"


@dataclass
class Unit:
    """Top-level ops that become one launch: ``ops`` (computing, in order), ``span`` (every
    top-level op from the first to the last of them), why it runs sequentially, if known, and
    whether it is ``merged`` (several nests and statements joined because a value computed in
    one is used by a later one)."""

    ops: list[Operation]
    span: list[Operation]
    reason: str = ""
    merged: bool = False

    @property
    def is_lone_nest(self) -> bool:
        """One loop nest alone, not merged with other ops: what a pass may map by itself."""
        return len(self.ops) == 1 and not self.merged and isinstance(self.ops[0], LoopLikeOpInterface)


class FunctionPlan:
    """How the top level of a function (or the body of a loop kept on the host: ``body``) splits
    into launches (see :func:`plan_function`)."""

    def __init__(self, func: FuncOp, kinds: dict[Operation, str], units: list[Unit], body: Block | None = None,
                 hosted_ifs: set[Operation] | None = None):
        self.func = func
        self.kinds = kinds
        self.units = units
        self.body = body if body is not None else func.body
        self.outer: FunctionPlan | None = None  # the plan of the block holding this host loop
        self.hosted_ifs: set[Operation] = hosted_ifs or set()  # the ifs of its block worth keeping on the host
        self.host: HostPlan | None = None  # where its host values are made (set when it is mapped)

    def _scopes(self) -> list[FunctionPlan]:
        """This plan and the plans of the blocks around it, outermost first."""
        out: list[FunctionPlan] = []
        plan: FunctionPlan | None = self
        while plan is not None:
            out.append(plan)
            plan = plan.outer
        return out[::-1]

    def place(self, unit: Unit, launch: LaunchOp) -> None:
        """After ``unit``'s ops moved into ``launch``: the host ops that were between them go before
        it (deallocs after it), and the re-materializable values it uses are cloned into it."""
        for op in unit.span:
            if op.parent is self.body and not frees_memory(op) and op is not launch:
                op.detach()
                self.body.insert_before(launch, op)
        self.rematerialize(launch)

    def rematerialize(self, launch: LaunchOp) -> None:
        """Clone into ``launch`` the re-materializable values (of this block or the blocks around
        it) that ops in it use, and make those ops use the clones (nothing when none is used: a
        launch already placed, or made by an earlier pass, may be passed again)."""
        body = launch.body
        needed: set[Operation] = set()
        scopes = self._scopes()
        remat = {op for plan in scopes for op, kind in plan.kinds.items() if kind == _REMAT}

        def need(v: Value) -> None:
            owner = v.owner
            if isinstance(owner, Operation) and owner in remat and owner not in needed:
                needed.add(owner)
                for w in owner.operands:
                    need(w)

        for op in launch.walk():
            if op is not launch:
                for v in op.operands:
                    need(v)
        mapping: dict[Value, Value] = {}
        k = 0
        for op in [x for plan in scopes for x in plan.body.ops]:
            if op in needed:
                clone = op.clone(mapping)
                body.insert(k, clone)
                k += 1
        inside = set(launch.walk()) - {launch}
        for old, new in mapping.items():
            for use in list(old.uses):
                if use.op in inside and use.op is not new.owner:
                    use.op.set_operand(use.index, new)

    def finish(self) -> None:
        """Erase the re-materializable ops no longer used on the host."""
        for op in reversed(list(self.body.ops)):
            if self.kinds.get(op) == _REMAT and not any(r.uses for r in op.results):
                op.erase()


def _sets_up_tma(op: Operation) -> bool:
    """Whether ``op`` prepares TMA on the host: every result a tensor map or an unranked memref (what
    ``nvgpu.tma.create.descriptor`` and the ``memref.cast`` before it give; the driver encodes tensor
    maps on the host, and kernels take them as parameters)."""
    return bool(op.results) and not op.regions and all(
        isinstance(r.type, (TensorMapDescriptorType, UnrankedMemRefType)) for r in op.results)


def _classify(func: FuncOp, pass_name: str, body: Block | None = None, is_host=None) -> dict[Operation, str]:
    body = body if body is not None else func.body
    is_host = is_host or host_value_checker(body)
    kinds: dict[Operation, str] = {}
    for op in body.ops:
        where = f" at {op.location}" if op.location else ""
        if op.has_trait(ReturnLike) and op.operands:
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: it returns values (a host function "
                                            f"returns nothing; pass results through memrefs)", location=op.location)
        if isinstance(op, AllocOp) and not is_host_op(op, is_host):
            bad = next(v for v in op.operands if not is_host(v))
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: the size {value_name(bad)} of "
                                            f"'{op.name}'{where} is not a host value", location=op.location)
        if isinstance(op, LaunchOp) or is_host_loop(op, is_host) or is_host_if(op, is_host):
            kind = _LAUNCH
        elif is_host_op(op, is_host) or _sets_up_tma(op):  # (a host loop's affine.yield too: it returns nothing)
            kind = _HOST
        elif op.is_pure and not op.regions and all(
                v.owner is func.body or v.owner is body or is_host(v) or kinds.get(v.owner) in (_HOST, _REMAT)
                for v in op.operands):
            kind = _REMAT
        else:
            kind = _COMPUTE
        kinds[op] = kind
    if body is func.body:
        _check_kernel_ops(func, pass_name, kinds)
    return kinds


def _check_kernel_ops(func: FuncOp, pass_name: str, kinds: dict[Operation, str]) -> None:
    """TransformError for the first op (in walk order) of unknown effects that gpu-map would move
    into a kernel (a call, an unregistered op: it may do anything) and for a ``gpu.launch`` below
    the top level outside loops kept on the host; the ops in those launches are kernel code
    already and stay as they are."""
    mapped = [op for op in func.body.ops if kinds.get(op) == _LAUNCH]
    launches = [x for op in func.body.ops for x in op.walk() if isinstance(x, LaunchOp) and
                (op in mapped or _in_host_loops(x, func))]
    kernel_code = {x for launch in launches for x in launch.walk() if x is not launch}
    hosted = set(launches)
    for op in func.walk():
        where = f" at {op.location}" if op.location else ""
        if isinstance(op, LaunchOp) and op not in hosted:
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: the '{op.name}'{where} is not at the top "
                                            f"level (a launch cannot run in a kernel)", location=op.location)
        if op is not func and op not in kernel_code and op.memory_effects() is None and \
                not op.has_trait(RecursiveMemoryEffects) and not isinstance(op, LaunchOp) and op not in mapped:
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: '{op.name}'{where} cannot run in a kernel",
                                 location=op.location)


def _in_host_loops(launch: LaunchOp, func: FuncOp) -> bool:
    """Whether every op around ``launch`` up to ``func`` is an ``affine.for`` without iter_args (a
    loop that may stay on the host: gpu-map-reductions maps reductions in such loop bodies; a
    launch in one that is not kept on the host is refused when its nest is mapped)."""
    op = launch.parent_op
    while op is not func:
        if not isinstance(op, AffineForOp) or op.iter_args:
            return False
        op = op.parent_op
    return True


def plan_function(func: FuncOp, pass_name: str = PASS, body: Block | None = None, is_host=None) -> FunctionPlan:
    """Split the top level of ``func`` (or ``body``, the body of a loop of it kept on the host,
    whose host values ``is_host`` tells) into units, one launch each (changes nothing): each loop
    nest alone, each run of other computing ops together; units between the op computing a value
    and a later op using it merge into one. TransformError when ``func`` cannot become a host
    function (results, calls, an alloc size computed on the device)."""
    body = body if body is not None else func.body
    is_host = is_host or host_value_checker(body)
    kinds = _classify(func, pass_name, body, is_host)
    top = list(body.ops)
    hosted_ifs = {op for op in top if isinstance(op, AffineIfOp) and kinds[op] == _COMPUTE and
                  worth_hosting(op, is_host)}
    groups = _groups(top, kinds, hosted_ifs)
    unit_of = {top[k]: u for u, g in enumerate(groups) for k in g}
    reach = list(range(len(groups)))    # the last unit using a value of each unit
    reasons = [""] * len(groups)
    for u, g in enumerate(groups):
        for k in g:
            for r in top[k].results:
                for use in r.uses:
                    user = use.op
                    while user.parent is not body:
                        user = user.parent_op
                    w = unit_of.get(user)
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
        launch = next((o for o in span if kinds[o] == _LAUNCH), None)
        if launch is not None:
            raise TransformError(pass_name, f"cannot map @{func.sym_name}: a value computed before the gpu.launch"
                                            f"{' at ' + str(launch.location) if launch.location else ''} is used after "
                                            f"it ({'; '.join(why)})", location=launch.location)
        ops = [o for o in span if kinds[o] == _COMPUTE]
        if why:
            reason = "merged: " + "; ".join(why)
        elif not isinstance(ops[0], LoopLikeOpInterface):
            reason = "top-level statements outside loops"
        else:
            reason = ""
        units.append(Unit(ops, span, reason, merged=bool(why)))
        u = end + 1
    return FunctionPlan(func, kinds, units, body, hosted_ifs)


def _groups(top: list[Operation], kinds: dict[Operation, str], hosted_ifs=frozenset()) -> list[list[int]]:
    """The positions in ``top`` of the computing ops of each launch before merging: each loop nest
    and each if of ``hosted_ifs`` alone, each run of other computing ops (not broken by a launch, an
    alloc or a dealloc) together."""
    groups: list[list[int]] = []
    run: list[int] | None = None
    for k, op in enumerate(top):
        kind = kinds[op]
        if kind == _COMPUTE:
            if isinstance(op, LoopLikeOpInterface) or op in hosted_ifs:
                groups.append([k])
                run = None
            else:
                if run is None:
                    run = []
                    groups.append(run)
                run.append(k)
        elif kind == _LAUNCH or (kind == _HOST and op.memory_effects()):  # an alloc or a dealloc
            run = None
    return groups


def check_host_function(func: FuncOp) -> None:
    """TransformError naming the first top-level op of ``func`` that a host function may not hold
    (constants, affine.apply/min/max of host index values, alloc with host sizes, dealloc,
    ``gpu.launch``, an operand-less ``func.return``)."""
    is_host = host_value_checker(func.body)
    for op in func.body.ops:
        if is_host_op(op, is_host):
            continue
        where = f" at {op.location}" if op.location else ""
        raise TransformError(PASS, f"@{func.sym_name} is not a host function: '{op.name}'{where} is not a host op",
                             location=op.location)


def map_function(func: FuncOp, block_sizes: Sequence[int] = (), ctx: PassContext | None = None,
                 gpu: GPUTarget = DEFAULT_GPU) -> list[MappedNest]:
    """Map every computing top-level op of ``func`` to a launch on ``gpu`` (see the module docstring);
    decisions go to ``ctx`` when given. Raises TransformError (``func`` unchanged) when the
    function cannot become a host function, or without ``ctx`` when a nest is refused; with
    ``ctx`` a refused nest (grid limits) stays as it is, the refusal is recorded, and the rest
    is mapped. Each 1x1x1 launch's note carries a :class:`SequentialLaunch` (``Decision.detail``).
    A nest whose outermost loop carries a dependence while nests inside it have parallel loops
    stays on the host as a loop of launches (its body mapped the same way)."""
    return _map_block(func, func.body, host_value_checker(func.body), block_sizes, ctx, gpu)


def scalars_to_demote(plan: FunctionPlan, is_host) -> dict[Value, list[Operation]]:
    """The integer and float values computed by a top-level op of ``plan``'s block and used by a later
    launch (before merging), where merging the two would take in a nest worth mapping (one with a
    parallel band to map, or worth keeping on the host) that no index value crossing launches
    merges anyway; each with the users (not necessarily at the top level) that are in those later
    launches. Changes nothing."""
    top = list(plan.body.ops)
    groups = _groups(top, plan.kinds, plan.hosted_ifs)
    group_of = {top[k]: g for g, ks in enumerate(groups) for k in ks}
    ops_of = {g: top[ks[0]] for g, ks in enumerate(groups)}
    worth: dict[int, bool] = {}

    def worth_mapping(g: int) -> bool:
        if g not in worth:
            op = ops_of[g]
            worth[g] = op in plan.hosted_ifs or isinstance(op, LoopLikeOpInterface) and (
                bool(band_and_blocker(op, is_host)[0]) or worth_hosting(op, is_host))
        return worth[g]

    def later_uses(r: Value, g: int) -> list[tuple[int, Operation]]:
        found = [(group_of.get(_top_level(use.op, plan.body)), use.op) for use in r.uses]
        return [(h, user) for h, user in found if h is not None and h > g]

    merged_anyway: set[int] = set()  # groups an index value merges with others: demotion cannot free them
    for op, g in group_of.items():
        for r in op.results:
            later = later_uses(r, g) if not is_demotable(r) else []
            if later:
                merged_anyway.update(range(g, max(h for h, _ in later) + 1))
    out: dict[Value, list[Operation]] = {}
    for op, g in group_of.items():
        for r in op.results:
            later = later_uses(r, g) if is_demotable(r) else []
            span = range(g, max(h for h, _ in later) + 1) if later else range(0)
            if any(h not in merged_anyway and worth_mapping(h) for h in span):
                out[r] = list(dict.fromkeys(user for _, user in later))
    return out


def _top_level(op: Operation, body: Block) -> Operation:
    while op.parent is not body:
        op = op.parent_op
    return op


def _demote_scalars(func: FuncOp, plan: FunctionPlan, is_host, ctx: PassContext | None) -> bool:
    """Demote the values of :func:`scalars_to_demote` to one-element buffers (see
    :mod:`.demote_scalars`); returns whether any was."""
    values = scalars_to_demote(plan, is_host)
    for v, users in values.items():
        name = value_name(v)
        buf = demote_to_memory(func, v, users)
        if ctx is not None:
            ctx.applied(buf.owner, f"demoted {name} to the one-element buffer {value_name(buf)}: it is used by "
                                   f"later launches, and passing it as a value would merge a parallel nest "
                                   f"into a 1x1x1 launch")
    return bool(values)


def _demote_iter_args(func: FuncOp, plan: FunctionPlan, is_host, ctx: PassContext | None) -> bool:
    """Demote the iter_args of each loop nest at the top level of ``plan``'s block that has no
    parallel band to map but would be worth keeping on the host without them (see
    :func:`.demote_scalars.demote_iter_args`; its results are then read from memory by their users,
    so they merge no launches either); returns whether any was."""
    done = False
    for loop in [op for op in plan.body.ops if plan.kinds.get(op) == _COMPUTE]:
        if not demotable_iter_args(loop) or band_and_blocker(loop, is_host)[0] or \
                not worth_hosting(loop, is_host):
            continue
        names = ", ".join(value_name(a) for a in loop.body.args[1:])
        new = demote_iter_args(func, loop)
        done = True
        if ctx is not None:
            ctx.applied(new, f"demoted the iter_args ({names}) of {value_name(new.induction_var)} to one-element "
                             f"buffers: without them the loop runs on the host as a loop of launches")
    return done


def plan_demoting(func: FuncOp, body: Block, is_host, ctx: PassContext | None, pass_name: str = PASS
                  ) -> FunctionPlan:
    """The plan of ``body`` (:func:`plan_function`) after demoting to one-element buffers the
    iter_args of its loops worth keeping on the host and the scalars whose passing as values would
    merge a nest worth mapping into a 1x1x1 launch (:mod:`.demote_scalars`; decisions to ``ctx``).
    The program computes exactly what it did."""
    plan = plan_function(func, pass_name, body, is_host)
    if _demote_iter_args(func, plan, is_host, ctx):
        plan = plan_function(func, pass_name, body, is_host)
    if _demote_scalars(func, plan, is_host, ctx):
        plan = plan_function(func, pass_name, body, is_host)
    return plan


def _map_block(func: FuncOp, body: Block, is_host, block_sizes: Sequence[int], ctx: PassContext | None,
               gpu: GPUTarget, outer: FunctionPlan | None = None) -> list[MappedNest]:
    if body is not func.body:  # a loop kept on the host: its ifs of host conditions go into the loops they hold
        sink_ifs(func, ctx, body, is_host)
    plan = plan_demoting(func, body, is_host, ctx)
    plan.outer = outer
    host = HostPlan(body, is_host, outer.host if outer is not None else None)
    plan.host = host
    nests: list[NestPlan | TransformError | None] = []
    for unit in plan.units:
        nest = None
        if len(unit.ops) == 1 and isinstance(unit.ops[0], LoopLikeOpInterface):
            try:
                nest = plan_nest(unit.ops[0], block_sizes, host.is_host_value, gpu)
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
        if isinstance(nest, NestPlan) and not nest.band and \
                worth_hosting(unit.ops[0], host.is_host_value):
            loop = unit.ops[0]
            inner = host_value_checker(loop.body, host.is_host_value)
            if ctx is not None:
                ctx.applied(loop, f"kept {value_name(loop.induction_var)} on the host, a loop of launches "
                                  f"({nest.why})")
            out += _map_block(func, loop.body, inner, block_sizes, ctx, gpu, plan)
            _erase_if_idle(loop, ctx)
            continue
        if unit.ops[0] in plan.hosted_ifs and not unit.merged:
            op = unit.ops[0]
            if ctx is not None:
                ctx.applied(op, "kept the affine.if on the host, which runs the launches of the branch its condition "
                                "picks (a branch holds a nest worth mapping)")
            for block in branches(op):
                out += _map_block(func, block, host_value_checker(block, host.is_host_value), block_sizes, ctx, gpu,
                                  plan)
            _erase_if_idle(op, ctx)
            continue
        inner_launch = next((x for op in unit.ops for x in op.walk() if isinstance(x, LaunchOp)), None)
        if inner_launch is not None:
            e = TransformError(PASS, f"cannot map '{unit.ops[0].name}'{at_location(unit.ops[0])}: it holds the "
                                     f"'{inner_launch.name}'{at_location(inner_launch)} and is not kept on the host",
                               location=unit.ops[0].location)
            if ctx is None:
                raise e
            ctx.refused(unit.ops[0], e)
            continue
        mapped = map_nest(unit.ops[0], host=host, plan=nest) if nest is not None else \
            map_sequentially(unit.ops, unit.reason, host)
        if mapped.launch is not None:
            plan.place(unit, mapped.launch)
        out.append(mapped)
        if ctx is None:
            continue
        if mapped.mapped:
            ctx.applied(mapped.launch, mapped.describe())
        else:
            ctx.note(mapped.launch or unit.ops[0], mapped.describe(), _sequential_record(func, unit, nest, mapped))
    for op in list(body.ops):  # launches made before gpu-map (gpu-map-reductions), in host loops too
        if plan.kinds.get(op) == _LAUNCH:
            for x in [x for x in op.walk() if isinstance(x, LaunchOp)]:
                plan.rematerialize(x)
    plan.finish()
    return out


def _erase_if_idle(op: Operation, ctx: PassContext | None) -> None:
    """Erase the host loop or if ``op`` when mapping its body left no launch in it, only ops without
    effects (its nests ran no iteration and were removed): a host function holds no control flow
    around nothing."""
    inner = [x for x in op.walk() if x is not op and not x.has_trait(IsTerminator)]
    if any(x.regions or x.memory_effects() != () for x in inner):
        return
    if ctx is not None:
        ctx.note(op.parent_op or op, f"removed the '{op.name}'{at_location(op)}: its nests run no iteration")
    op.erase()


def _sequential_record(func: FuncOp, unit: Unit, nest: NestPlan | None, mapped: MappedNest) -> SequentialLaunch | None:
    """The record of ``unit``'s 1x1x1 launch (None when its nest was removed, running no iteration)."""
    if mapped.launch is None:
        return None
    holds_loop = any(isinstance(x, LoopLikeOpInterface) for op in unit.ops for x in op.walk())
    return SequentialLaunch(func.sym_name, unit.ops[0].location, mapped.sequential_reason,
                            nest.dependence if nest is not None else None, holds_loop)


@register_pass
@dataclass(frozen=True)
class GpuMap(Pass):
    """Turn each function into a host function whose computing nests are ``gpu.launch`` ops
    (the unoptimized mapping: parallel band to blocks x threads, the rest per thread)."""

    name = "gpu-map"
    summary = "Map loop nests to gpu.launch ops (parallel loops to blocks and threads)"
    block_sizes: tuple[int, ...] = option((), "block sizes x,y,z for the mapped loops, innermost first (default: "
                                              "the target's, 256 for one loop, 32,8 for two, 32,4,2 for three on "
                                              "the H200)")
    target: str = option(DEFAULT_GPU.name, "the GPU whose launch limits and default block sizes apply (a name of "
                                           "analysis.targets)")

    def __post_init__(self) -> None:
        if self.block_sizes:
            try:
                check_block_sizes(self.block_sizes, gpu_target(self.target))
            except TransformError as e:
                raise ValueError(e.reason) from None

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if func.is_declaration:
            return
        try:
            map_function(func, self.block_sizes, ctx, gpu_target(self.target))
        except TransformError as e:
            ctx.refused(func, e)

