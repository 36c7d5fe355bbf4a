"""Reductions without row loops, at a function's top level or in a loop kept on the host (``gpu-map-reductions``).

:mod:`.gpu_reduce` maps nests with row loops (a block per row). This module maps what is left
that still reduces: a *unit* of :func:`transforms.gpu.gpu_map.plan_function` (a lone nest, or
the statements and nests joined because values flow between them) whose top-level loops are
row loops of one row (:mod:`.gpu_reduce_plan`'s rules: ``iter_args`` reductions, memory
reductions ``m[f] = m[f] op x``, parallel loops; at least one reduces), e.g. a full sum ``for i:
s += A[i]``, a dot product feeding a ``sqrt``, trisolv's ``x[i] -= L[i][j] * x[j]`` over ``j < i``:

- the unit is put in a loop of one iteration and mapped as one row: **one block** of ``B``
  threads (the pass's ``block-size``, clamped to the longest constant row loop), its row loops
  strided over the threads, fixed-order tree reductions in shared memory, statements in every
  thread, stores in thread 0 (:func:`map_one_block`);
- when the unit's reduction is large, it becomes a **two-phase reduction**
  (:mod:`.gpu_reduce_two_phase` says when, and how the grid is chosen);
- a loop that ``gpu-map`` will keep on the host (:func:`is_hostable_loop`: an ``affine.for``
  without iter_args, host bounds, not parallel, no allocation in its body) is looked into: the
  units of its body are mapped the same way (:func:`map_reductions_in_block`), recursively,
  so its body holds launches and ``gpu-map`` keeps it on the host as a loop of launches.

Every refusal leaves the unit as it was (the one-iteration loop is taken apart again).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from affine_ir import FuncOp, Operation
from affine_ir.core import Block
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.interfaces import LoopLikeOpInterface
from analysis.targets import DEFAULT_GPU, GPUTarget

from ..errors import TransformError
from ..loop_utils import value_name
from ..pass_base import PassContext
from .gpu_map import host_loop_candidate, plan_demoting
from .gpu_map_nest import HostPlan, band_and_blocker, frees_memory, host_value_checker
from .gpu_reduce import map_rows
from .gpu_reduce_plan import DEFAULT_BLOCK_SIZE, PASS, RowPlan, plan_row_reductions, thread_per_row_reason

__all__ = ["MappedUnit", "is_hostable_loop", "map_one_block", "map_reductions_in_block", "unwrap_unit", "wrap_unit"]


@dataclass
class MappedUnit:
    """What mapping one unit built: its launches (one, or two for a two-phase reduction), the
    threads per block, the first launch's grid (an int or the host value's name), the number of
    partial results (two-phase), whether they are combined by atomics, and the reductions."""

    launches: list[LaunchOp]
    block_size: int
    grid: int | str = 1
    two_phase: bool = False
    partials: int = 0
    atomic: bool = False
    reductions: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The decision as the pass records it."""
        what = ", ".join(self.reductions)
        if not self.two_phase:
            return f"mapped the reduction(s) {what} to one block of {self.block_size} threads (fixed-order tree)"
        second = "atomics into the destination" if self.atomic else "a second launch of one block combining " \
                                                                      "them in a fixed order"
        return (f"mapped the reduction(s) {what} to a two-phase reduction: grid ({self.grid}) of blocks of "
                f"{self.block_size} threads, each writing its partial result ({self.partials} partials at most), "
                f"then {second}")


# -- the one-iteration wrapper -----------------------------------------------------------------------------------
def wrap_unit(ops: list[Operation], span: list[Operation]) -> AffineForOp:
    """Put the computing ``ops`` of a unit into a new ``affine.for 0 to 1`` placed where the first
    was; the other ops of ``span`` (host values, deallocs) go before it (deallocs after it)."""
    body = span[0].parent
    wrapper = AffineForOp(0, [], 1, [], iv_name="unit", location=ops[0].location)
    body.insert_before(span[0], wrapper)
    computing = set(ops)
    after = wrapper
    for op in span:
        op.detach()
        if op in computing:
            wrapper.body.insert_before(wrapper.body.terminator, op)
        elif frees_memory(op):
            body.insert_after(after, op)
            after = op
        else:
            body.insert_before(wrapper, op)
    return wrapper


def unwrap_unit(wrapper: AffineForOp, span: list[Operation]) -> None:
    """Undo :func:`wrap_unit`: ``span`` back in its order where the wrapper was, the wrapper erased."""
    body = wrapper.parent
    last = max(body.ops.index(x) for x in [wrapper, *span] if x.parent is body)
    ref = body.ops[last + 1]
    for op in span:
        op.detach()
        body.insert_before(ref, op)
    wrapper.erase()


def plan_unit(ops: list[Operation], span: list[Operation], host: HostPlan, block_size: int,
              gpu: GPUTarget) -> RowPlan:
    """The one-row plan of a unit (wrapped by :func:`wrap_unit`; the plan's ``op`` is the wrapper),
    or TransformError with the IR as it was."""
    wrapper = wrap_unit(ops, span)
    try:
        plan = plan_row_reductions(wrapper, block_size, host.is_host_value, gpu)
        why = thread_per_row_reason(plan)
    except TransformError:
        unwrap_unit(wrapper, span)
        raise
    if why:  # (only row buffers could make it: a unit has no row index)
        unwrap_unit(wrapper, span)
        raise TransformError(PASS, why, loops=[ops[0]])
    return plan


def _reductions(plan: RowPlan) -> list[str]:
    return [f"{r.kind} of {r.name} over {value_name(r.loop.induction_var)}" for r in plan.reductions]


def map_one_block(plan: RowPlan, host: HostPlan, gpu: GPUTarget = DEFAULT_GPU) -> MappedUnit:
    """Map a planned unit (:func:`plan_unit`) to one launch of one block: its row loops strided over
    the threads, block reductions in shared memory (:mod:`.gpu_reduce`). Guarantees what
    :func:`transforms.gpu.gpu_reduce.map_row_reductions` does, for one row."""
    names = _reductions(plan)
    mapped = map_rows(plan.op, plan.block_size, host, plan, gpu)
    return MappedUnit([mapped.launch], mapped.block_size, reductions=names)


# -- loops kept on the host --------------------------------------------------------------------------------------
def is_hostable_loop(op: Operation, is_host_value) -> bool:
    """Whether ``gpu-map`` keeps ``op`` on the host once its body holds a launch (its
    ``_worth_hosting``): a :func:`.gpu_map.host_loop_candidate` without iter_args that is not
    parallel (its band of parallel loops is empty)."""
    if not host_loop_candidate(op, is_host_value, demoting=False):
        return False
    band, _why, _dep = band_and_blocker(op, is_host_value)
    return not band


def map_reductions_in_block(func: FuncOp, body: Block, is_host, host: HostPlan, ctx: PassContext | None,
                            block_size: int = DEFAULT_BLOCK_SIZE, gpu: GPUTarget = DEFAULT_GPU,
                            atomic: bool = False, rows_first: bool = True) -> int:
    """Map the reductions of the units of ``body`` (a function's, or a host loop's): each lone nest
    to a block per row where :mod:`.gpu_reduce_plan` takes it (``rows_first``), else into a loop
    kept on the host (:func:`is_hostable_loop`, recursively), else the unit as one row
    (:func:`map_unit`). Returns the number of launches made; what is refused is left for
    ``gpu-map`` (a note in ``ctx``), unchanged."""
    from .gpu_reduce_two_phase import map_unit

    try:
        units = plan_demoting(func, body, is_host, ctx, PASS).units
    except TransformError as e:
        if ctx is not None:
            ctx.note(body.parent_op, f"left for gpu-map: {e.reason}")
        return 0
    made = 0
    for unit in units:
        loops = [x for x in unit.ops if isinstance(x, LoopLikeOpInterface)]
        if not loops:
            continue
        op = loops[0]
        reasons = []
        if unit.is_lone_nest:
            if rows_first:
                try:
                    plan = plan_row_reductions(op, block_size, host.is_host_value, gpu)
                    why = thread_per_row_reason(plan)
                except TransformError as e:
                    plan, why = None, e.reason
                if plan is not None and not why:
                    mapped = map_rows(op, block_size, host, plan, gpu)
                    if ctx is not None:
                        ctx.applied(mapped.launch, mapped.describe())
                    made += 1
                    continue
                reasons.append(why)
            if is_hostable_loop(op, host.is_host_value):
                inner = host_value_checker(op.body, host.is_host_value)
                n = map_reductions_in_block(func, op.body, inner, HostPlan(op.body, inner, host), ctx, block_size,
                                            gpu, atomic)
                if n:
                    if ctx is not None:
                        ctx.applied(op, f"left {value_name(op.induction_var)} for gpu-map to keep on the host: "
                                        f"{n} launch(es) of reductions in its body")
                    made += n
                    continue
        elif unit.reason:
            reasons.append(unit.reason)
        try:
            mapped = map_unit(unit.ops, unit.span, host, block_size, gpu, atomic)
        except TransformError as e:
            if ctx is not None:
                ctx.note(op, f"left for gpu-map: {reasons[0] if reasons else e.reason}")
            continue
        if ctx is not None:
            ctx.applied(mapped.launches[0], mapped.describe())
        made += len(mapped.launches)
    return made
