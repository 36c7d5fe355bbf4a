"""Parallel loops to ``affine.parallel``: ``affine-parallelize`` (MLIR's pass and options).

A loop is converted when it carries no dependence (exact, :func:`analysis.parallel_decision`)
and has no ``iter_args``; with ``parallel-reductions`` its ``iter_args`` may be reductions
(a chain of one associative op kind from the iter_arg to the yield), which become
``affine.parallel`` reductions as MLIR builds them: the body yields its own contribution,
and the loop's initial value is combined with the parallel result after the loop::

    %r = affine.for %i = 0 to 10 iter_args(%acc = %init) -> (f32) {
      %x = affine.load %A[%i] : memref<10xf32>
      %s = arith.addf %acc, %x : f32
      affine.yield %s : f32
    }

becomes::

    %0 = affine.parallel (%i) = (0) to (10) reduce ("addf") -> (f32) {
      %x = affine.load %A[%i] : memref<10xf32>
      affine.yield %x : f32
    }
    %r = arith.addf %init, %0 : f32

Refused (the reason names it): a carried dependence, an iter_arg that is not such a
reduction, a memory reduction (``C[i] += ...`` through memory would race in parallel; MLIR
does not parallelize it either), a reduction kind this IR has no ``arith`` op for here
(``maxnumf``/``minnumf``), and ops of unknown effects. Integer max/min reductions take
MLIR's spellings: ``arith.maxsi`` becomes ``reduce ("maxs")``.

Differences from MLIR (its ``parallelize.mlir``, run with ``iree-opt``): dependences are
exact (isl), so a loop that only reads memory through ``memref.load`` (MLIR's
``@non_affine_load``) is parallel here (MLIR gives up on non-affine accesses); the other
inputs give the same structure (``tests/filecheck/affine-parallelize-mlir.mlir``).
"""

from __future__ import annotations

from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp, AffineParallelOp
from affine_ir.dialects.affine_parallel import REDUCTION_ARITH_OPS
from affine_ir.dialects.arith import OPS as ARITH_OPS

from ..errors import TransformError
from ..loop_utils import all_loops, loop_name, value_name
from ..pass_base import Pass, PassContext, option, register_pass

__all__ = ["AffineParallelize", "PARALLEL_REDUCTION_KINDS", "check_parallel", "parallelize_loop"]

PASS = "affine-parallelize"

#: The ``affine.parallel ... reduce (...)`` kind (MLIR's spelling) of each combining arith op kind.
PARALLEL_REDUCTION_KINDS = {k: {"maxsi": "maxs", "minsi": "mins", "maxui": "maxu", "minui": "minu"}.get(k, k)
                            for k in ("addf", "mulf", "maximumf", "minimumf", "addi", "muli", "maxsi", "minsi",
                                      "maxui", "minui", "andi", "ori", "xori")}

_UINT_MAX = 2**32 - 1


def check_parallel(loop: AffineForOp, allow_reductions: bool = False) -> analysis.ParallelDecision:
    """The decision for ``loop`` when it can become an ``affine.parallel`` (with its reductions
    when ``allow_reductions``); otherwise raise :class:`TransformError` naming the loop and the
    blocking dependence, iter_arg or op. Changes nothing."""
    what = f"cannot parallelize ({loop_name(loop)})"
    if not isinstance(loop, AffineForOp):
        raise TransformError(PASS, f"{what}: '{loop.name}' is not an affine.for", loops=[loop])
    decision = analysis.parallel_decision(loop, allow_reductions=allow_reductions)
    if not decision.parallel:
        raise TransformError(PASS, f"{what}: {decision.reason}", loops=[loop], dependence=decision.dependence)
    for red in decision.reductions:
        if red.is_memory:
            dep = next((d for d in analysis.dependences(loop) if d.carried_at(1) and d.memref is red.value), None)
            raise TransformError(PASS, f"{what}: the memory reduction ({red.kind}) of {value_name(red.value)} would "
                                 f"race: {dep if dep is not None else 'carried by the loop'}", loops=[loop],
                                 dependence=dep)
        if red.kind not in PARALLEL_REDUCTION_KINDS:
            raise TransformError(PASS, f"{what}: iter_arg {value_name(red.value)} is a {red.kind} reduction, which "
                                 f"affine.parallel cannot express here (kinds: {', '.join(PARALLEL_REDUCTION_KINDS)})",
                                 loops=[loop])
    return decision


def parallelize_loop(loop: AffineForOp, allow_reductions: bool = False) -> AffineParallelOp:
    """Replace ``loop`` by a one-dimensional ``affine.parallel`` with the same bounds, step, IV
    name, body and location; ``iter_args`` reductions (with ``allow_reductions``) become
    ``reduce (...)`` results combined with the initial values after the loop. Returns the new op.

    Guarantees: applied only when no dependence is carried by the loop (exact), so any order
    of its iterations computes the same; otherwise :class:`TransformError` names the blocking
    dependence and the IR is unchanged.

    Before: ``affine.for %i = 0 to %N { affine.store %x, %A[%i] : memref<?xf32> }``;
    after: ``affine.parallel (%i) = (0) to (symbol(%N)) { affine.store %x, %A[%i] : memref<?xf32> }``.
    """
    decision = check_parallel(loop, allow_reductions)
    return _convert(loop, decision)


def _convert(loop: AffineForOp, decision: analysis.ParallelDecision) -> AffineParallelOp:
    reds = [r for r in decision.reductions if not r.is_memory]
    by_arg = {r.value: r for r in reds}
    kinds = [PARALLEL_REDUCTION_KINDS[by_arg[arg].kind] for arg in loop.iter_args]
    lb, ub = loop.lower_bound_map, loop.upper_bound_map
    par = AffineParallelOp(lb, [lb.num_results], loop.lower_bound_operands, ub, [ub.num_results],
                           loop.upper_bound_operands, [loop.step], kinds, [r.type for r in loop.results],
                           iv_names=[loop.induction_var.name_hint], location=loop.location)
    for op in list(par.body.ops):
        op.erase()
    for arg in loop.iter_args:
        first = by_arg[arg].ops[0]  # arg <op> x: the body's contribution starts at x
        other = next(v for v in first.operands if v is not arg)
        first.results[0].replace_all_uses_with(other)
        first.erase()
    loop.induction_var.replace_all_uses_with(par.ivs[0])
    for op in list(loop.body.ops):
        op.detach()
        par.body.append(op)
    block = loop.parent
    block.insert_before(loop, par)
    anchor: Operation = par
    for kind, init, old, new in zip(kinds, loop.inits, loop.results, par.results):
        combine = ARITH_OPS[REDUCTION_ARITH_OPS[kind].removeprefix("arith.")](init, new, location=loop.location,
                                                                            name_hint=old.name_hint)
        block.insert_after(anchor, combine)
        anchor = combine
        old.replace_all_uses_with(combine.results[0])
    loop.erase()
    return par


def _parallel_depth(op: Operation) -> int:
    """How many ``affine.parallel`` ops enclose ``op`` (up to its function)."""
    return sum(isinstance(a, AffineParallelOp) for a in op.ancestors())


@register_pass
@dataclass(frozen=True)
class AffineParallelize(Pass):
    """Convert every provably parallel ``affine.for`` into a 1-D ``affine.parallel``, outer loops
    first, at most ``max-nested`` deep; record for every loop the decision and its reason."""

    name = "affine-parallelize"
    summary = "Convert affine.for ops into 1-D affine.parallel"
    max_nested: int = option(_UINT_MAX, "Maximum number of nested parallel loops to produce. "
                                        "Defaults to unlimited (UINT_MAX).")
    parallel_reductions: bool = option(False, "Whether to parallelize reduction loops. Defaults to false.")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        decided: list[tuple[AffineForOp, analysis.ParallelDecision | None, TransformError | None]] = []
        for loop in list(all_loops(func)):  # decisions on the input, outer loops first (MLIR's pre-order)
            try:
                decided.append((loop, check_parallel(loop, self.parallel_reductions), None))
            except TransformError as e:
                decided.append((loop, None, e))
        for loop, decision, error in decided:
            if error is not None:
                ctx.refused(loop, error)
                continue
            depth = _parallel_depth(loop)
            if depth >= self.max_nested:
                ctx.note(loop, f"({loop_name(loop)}) is parallel ({decision.reason}) but not converted: already "
                               f"{depth} nested affine.parallel (max-nested={self.max_nested})")
                continue
            par = _convert(loop, decision)
            ctx.applied(par, f"parallelized ({value_name(par.ivs[0])}): {decision.reason}")
