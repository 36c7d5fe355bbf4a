"""Loop skewing and wavefronts of a perfectly nested band: ``affine-loop-skew``.

Stencils updated in place (PolyBench seidel-2d) carry a dependence on every loop, so no loop
of theirs is parallel and the GPU mapping runs them on one thread. Skewing makes the band
fully permutable and the *wavefront* (an outer loop over the sum of the skewed IVs) leaves
every loop inside it parallel (:func:`analysis.plan_skew`: the skew factors are chosen in
``0..max_skew`` against the exact dependences; the module docstring of ``analysis.skew`` has
the math). seidel-2d's ``(%t, %i, %j)`` (``%i``, ``%j`` from 1 to ``%n - 1``) becomes::

    affine.for %wave = max(3, -2 * n + 9) to min(4 * tsteps + 3 * n - 9, ...) {      // w = 4t + 2i + j
      affine.for %i_skew = max(1, (w - n) ceildiv 4 + 1, ...) to min(...) {          // t + i   (parallel)
        affine.for %j_skew = max(w - 2 * i_skew + 1, ...) to min(...) {              // 2t + i + j (parallel)
          %t = affine.apply (w - i_skew - j_skew)
          %i = affine.apply (2 * i_skew + j_skew - w)
          %j = affine.apply (2 * j_skew - w)
          ... the original body ...

The new loops' bounds are ``max``/``min`` of affine expressions (``ceildiv``/``floordiv`` where a
coefficient is not 1) of the outer new IVs and the symbols, computed with isl from the image of
the iteration domain, which they scan exactly; the old IVs are ``affine.apply`` of the new ones at
the top of the innermost body (or the new IV itself where the two are equal). With
``wavefront=False`` the band is only skewed (same number of loops, fully permutable: tileable).

Refused (:class:`TransformError`, the IR unchanged): a band of fewer than two loops, loops not
perfectly nested, ``iter_args``, steps other than 1 (the pass first tries a normalized copy of
such a nest: lower bounds 0, steps 1, the IR unchanged when that copy is not skewed either), ops
of unknown effects, a dependence that is not exact, a dependence no skew with factors up to
``max_skew`` makes non-negative (the message names it and a distance vector that stays
negative), bounds the analysis cannot model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import analysis
from affine_ir import AffineExpr, AffineMap, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineParallelOp, AffineYieldOp
from affine_ir.dialects.affine_symbols import is_valid_symbol
from affine_ir.traits import RecursiveMemoryEffects

from ..errors import RefusalKind, TransformError
from ..loop_utils import loop_name, loops_text, top_level_loops
from ..pass_base import Pass, PassContext, option, register_pass
from .normalize import normalize_loop

__all__ = ["LoopSkew", "SkewResult", "check_skew", "skew_band"]

PASS = "affine-loop-skew"

_KINDS = {"dependence": RefusalKind.DEPENDENCE, "inexact": RefusalKind.DEPENDENCE,
          "unsupported": RefusalKind.UNSUPPORTED}


@dataclass
class SkewResult:
    """What :func:`skew_band` built: the new loops (outermost first), which of them carry no
    dependence, and the plan (matrices, bounds) it followed."""

    loops: list[AffineForOp]
    parallel: tuple[bool, ...]
    plan: analysis.SkewPlan

    @property
    def parallel_loops(self) -> list[AffineForOp]:
        return [lp for lp, p in zip(self.loops, self.parallel) if p]

    def describe(self, before: str) -> str:
        """The decision as the pass records it."""
        plan = self.plan
        text = f"skewed {before} to {plan.rows_text(plan.skew)}"
        if plan.wavefront:
            text += f", wavefront {plan.rows_text()}"
        par = [loop_name(lp) for lp in self.parallel_loops]
        return f"{text} as {loops_text(self.loops)}; parallel: {', '.join(par) if par else 'none'}"


def check_skew(band: Sequence[AffineForOp], *, wavefront: bool = True, max_skew: int = 2) -> analysis.SkewPlan:
    """The plan for skewing ``band`` (see :func:`skew_band`); raises :class:`TransformError` naming
    what forbids it. Changes nothing."""
    band = list(band)
    what = f"cannot skew {loops_text(band)}"
    _check_structure(band, what)
    if max_skew < 0:
        raise TransformError(PASS, f"{what}: max-skew must not be negative", loops=band,
                             kind=RefusalKind.INVALID_REQUEST)
    plan = analysis.plan_skew(band, max_skew=max_skew, wavefront=wavefront)
    if isinstance(plan, analysis.SkewRefusal):
        raise TransformError(PASS, f"{what}: {plan.reason}", loops=band, dependence=plan.dependence,
                             kind=_KINDS[plan.kind])
    return plan


def skew_band(band: Sequence[AffineForOp], *, wavefront: bool = True, max_skew: int = 2) -> SkewResult:
    """Skew the perfectly nested ``band`` (outermost first) so that it is fully permutable and,
    with ``wavefront`` (default), put an outer loop over the wavefront ``w`` (the sum of the skewed
    IVs) around loops that are all parallel. Returns the new loops.

    Guarantees: every iteration of the band runs exactly once, with the same values of the old
    IVs (isl checks that the new bounds scan exactly the image of the domain; the transformation
    is unimodular), and every dependence keeps its source first (exact, isl), so the program
    computes exactly what it did; ``SkewResult.parallel[k]`` is True only when the new loop ``k``
    carries no dependence (``analysis.is_parallel`` agrees). Raises :class:`TransformError` (the IR
    unchanged) when the band cannot be skewed (see the module docstring).

    Before (``wavefront=False``)::

        affine.for %t = 0 to 8 {
          affine.for %i = 1 to 9 {
            %a = affine.load %A[%i - 1] : memref<10xf32>
            %b = affine.load %A[%i + 1] : memref<10xf32>
            ... affine.store %s, %A[%i] : memref<10xf32>

    After (``(t, i) -> (t, t + i)``; the distances (0, 1), (1, -1), (1, 0), (1, 1) become
    (0, 1), (1, 0), (1, 1), (1, 2))::

        affine.for %t = 0 to 8 {
          affine.for %i_skew = affine_map<(d0) -> (d0 + 1)>(%t) to affine_map<(d0) -> (d0 + 9)>(%t) {
            %i = affine.apply affine_map<(d0, d1) -> (-d0 + d1)>(%t, %i_skew)
            ... the body with %i ...

    With ``wavefront`` the nest is ``%wave = 1 to 23`` (``w = 2t + i``) around ``%i_skew`` (``t + i``,
    parallel) from ``max(w - 7, (w + 1) ceildiv 2)`` to ``min(w + 1, w floordiv 2 + 5)``.
    """
    band = list(band)
    plan = check_skew(band, wavefront=wavefront, max_skew=max_skew)
    loops = _rewrite(band, plan)
    return SkewResult(loops, plan.parallel, plan)


# -- checks -------------------------------------------------------------------------------------------------------
def _check_structure(band: list[AffineForOp], what: str) -> None:
    if len(band) < 2 or not all(isinstance(lp, AffineForOp) for lp in band):
        raise TransformError(PASS, f"{what}: a band to skew is a list of two or more affine.for loops",
                             loops=band, kind=RefusalKind.INVALID_REQUEST)
    for outer, inner in zip(band, band[1:]):
        body = [op for op in outer.body.ops if not isinstance(op, AffineYieldOp)]
        if body != [inner]:
            raise TransformError(PASS, f"{what}: {loop_name(inner)} is not the only op in the body of "
                                       f"{loop_name(outer)} (the band is not perfectly nested)", loops=band,
                                 kind=RefusalKind.UNSUPPORTED)
    for lp in band:
        if lp.iter_args:
            raise TransformError(PASS, f"{what}: {loop_name(lp)} has iter_args (values carried in the loop's "
                                       f"order)", loops=band, kind=RefusalKind.UNSUPPORTED)
        if lp.step != 1:
            raise TransformError(PASS, f"{what}: {loop_name(lp)} has step {lp.step} (normalize it first: "
                                       f"affine-loop-normalize)", loops=band, kind=RefusalKind.UNSUPPORTED)
    unknown = next((o for o in band[0].walk() if not o.has_trait(RecursiveMemoryEffects)
                    and o.memory_effects() is None), None)
    if unknown is not None:
        where = f" at {unknown.location}" if unknown.location else ""
        raise TransformError(PASS, f"{what}: '{unknown.name}'{where} has unknown side effects", loops=band,
                             kind=RefusalKind.UNSUPPORTED)


# -- the rewrite ---------------------------------------------------------------------------------------------------
def _rewrite(band: list[AffineForOp], plan: analysis.SkewPlan) -> list[AffineForOp]:
    """Build the new nest before ``band[0]``, move the body into it, erase the old loops."""
    n = len(band)
    names = [lp.induction_var.name_hint or f"x{k}" for k, lp in enumerate(band)]
    top = band[0]
    block, anchor = top.parent, top
    new: list[AffineForOp] = []
    for k, bounds in enumerate(plan.bounds):
        ivs = [lp.induction_var for lp in new]
        lb, lbo = _bound_map(bounds.lower, ivs, plan.symbols)
        ub, ubo = _bound_map(bounds.upper, ivs, plan.symbols)
        loop = AffineForOp(lb, lbo, ub, ubo, 1, iv_name=_new_name(plan, k, names), location=band[k].location)
        if new:
            new[-1].body.insert(0, loop)
        else:
            block.insert_before(anchor, loop)
        new.append(loop)
    inner = band[-1]
    body = new[-1].body
    ops = [o for o in inner.body.ops if not isinstance(o, AffineYieldOp)]
    new_ivs = [lp.induction_var for lp in new]
    position = 0
    for k, old in enumerate(lp.induction_var for lp in band):
        if all(use.op in band for use in old.uses):  # only the old loops' bounds use it
            continue
        row = plan.inverse[k]
        unit = [j for j, a in enumerate(row) if a]
        if len(unit) == 1 and row[unit[0]] == 1:
            old.replace_all_uses_with(new_ivs[unit[0]])
            continue
        e = AffineExpr.constant(0)
        for j, a in enumerate(row):
            if a:
                e = e + AffineExpr.dim(j) * a
        apply = AffineApplyOp(AffineMap(n, 0, (e,)), new_ivs, location=band[k].location, name_hint=names[k])
        body.insert(position, apply)
        position += 1
        old.replace_all_uses_with(apply.results[0])
    for o in ops:
        o.detach()
        body.insert_before(body.terminator, o)
    top.erase()
    return new


def _new_name(plan: analysis.SkewPlan, k: int, names: list[str]) -> str:
    """``wave`` for the wavefront loop; a skewed IV ``<old>_skew``; an unchanged one keeps its name."""
    if plan.wavefront and k == 0:
        return "wave"
    row = plan.transform[k]
    last = max(j for j, a in enumerate(row) if a)
    return names[last] if sum(1 for a in row if a) == 1 else f"{names[last]}_skew"


def _bound_map(exprs: Sequence[AffineExpr], ivs: list[Value], symbols: Sequence[Value]) -> tuple[AffineMap, list]:
    """A bound map of ``exprs`` (dims: the outer new ``ivs``; symbols: ``symbols``) over the values it
    uses: symbols that are not valid affine symbols (IVs of enclosing loops) become dims."""
    used_d = sorted({d for e in exprs for d in e.used_dims()})
    used_s = sorted({s for e in exprs for s in e.used_symbols()})
    as_dim = [s for s in used_s if not is_valid_symbol(symbols[s])]
    as_sym = [s for s in used_s if is_valid_symbol(symbols[s])]
    dims = [AffineExpr.dim(0)] * len(ivs)
    for j, d in enumerate(used_d):
        dims[d] = AffineExpr.dim(j)
    syms = [AffineExpr.constant(0)] * len(symbols)
    for j, s in enumerate(as_dim):
        syms[s] = AffineExpr.dim(len(used_d) + j)
    for j, s in enumerate(as_sym):
        syms[s] = AffineExpr.symbol(j)
    results = tuple(e.replace(dims, syms) for e in exprs)
    m = AffineMap(len(used_d) + len(as_dim), len(as_sym), results)
    return m, [ivs[d] for d in used_d] + [symbols[s] for s in as_dim] + [symbols[s] for s in as_sym]


# -- the pass ------------------------------------------------------------------------------------------------------
def has_parallel_loop(nest: Operation) -> bool:
    """Whether some loop of ``nest`` (itself included) carries no dependence: an ``affine.parallel``
    (without reductions), or an ``affine.for`` that :func:`analysis.is_parallel` accepts."""
    for op in nest.walk():
        if isinstance(op, AffineParallelOp) and not op.results:
            return True
        if isinstance(op, AffineForOp) and analysis.is_parallel(op):
            return True
    return False


@register_pass
@dataclass(frozen=True)
class LoopSkew(Pass):
    """``affine-loop-skew``: skew the outermost perfect band of each top-level loop nest into a
    wavefront whose inner loops are parallel (see the module docstring).

    By default only nests where no loop is parallel are skewed (those the GPU mapping would run on
    one thread); ``all-nests`` skews every band it can. A band that cannot be skewed as a whole is
    tried without its innermost loops (down to two loops; the loops left out stay inside the
    wavefront, run in their order by each iteration), then without its outermost loops too (they
    stay around the wavefront, run in their order: PolyBench floyd-warshall's ``%k`` around a
    wavefront of ``(%i, %j)``). Every band gets a decision.
    """

    name = PASS
    summary = "Skew perfectly nested loops into wavefronts whose inner loops are parallel"

    wavefront: bool = option(True, "put a loop over the wavefront (sum of the skewed IVs) outside: every loop "
                                   "inside it is parallel (false: skew only, the band becomes fully permutable)")
    max_skew: int = option(2, "largest skew factor tried for each pair of loops")
    all_nests: bool = option(False, "also skew nests that already have a parallel loop")

    def __post_init__(self) -> None:
        if self.max_skew < 0:
            raise ValueError(f"max-skew must not be negative, got {self.max_skew}")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        for top in top_level_loops(func):
            band = analysis.perfect_band(top)
            if len(band) < 2:
                continue
            if not self.all_nests and has_parallel_loop(top):
                ctx.note(top, f"{loops_text(band)} left as it is: it has a parallel loop")
                continue
            if any(lp.step != 1 for lp in band) and not any(lp.iter_args for lp in band):
                self._skew_normalized(top, ctx)
            else:
                self._skew(band, ctx)

    def _skew(self, band: list[AffineForOp], ctx: PassContext, record_refusal: bool = True) -> TransformError | None:
        """Skew ``band`` or its longest outer part that can be, else the longest part of it inside
        outer loops left as they are (which run in their order around the wavefront: a loop of
        launches on the GPU); the refusal of the whole band (recorded unless ``record_refusal`` is
        False) when none can, else None."""
        first: TransformError | None = None
        parts = [(s, m) for s in range(len(band) - 1) for m in range(len(band), s + 1, -1)]
        for s, m in parts:
            sub = band[s:m]
            before = loops_text(sub)
            try:
                result = skew_band(sub, wavefront=self.wavefront, max_skew=self.max_skew)
            except TransformError as e:
                first = first or e
                continue
            if first is not None:
                ctx.refused(result.loops[0], first)
            ctx.applied(result.loops[0], result.describe(before))
            return None
        if record_refusal:
            ctx.refused(band[0], first)
        return first

    def _skew_normalized(self, top: AffineForOp, ctx: PassContext) -> None:
        """Skew a band with steps other than 1: on a copy of the nest whose band loops are
        normalized (lower bound 0, step 1: the same iterations in the same order), which replaces
        the nest only when it is skewed; otherwise the nest stays as it was and the refusal names
        the original loops."""
        copy = top.clone({})
        top.parent.insert_before(top, copy)
        try:
            for lp in analysis.perfect_band(copy):
                normalize_loop(lp)
            band = analysis.perfect_band(copy)
            why = self._skew(band, ctx, record_refusal=False) if len(band) >= 2 else None
            done = len(band) >= 2 and why is None
        except TransformError:
            done, why = False, None
        if done:
            top.erase()
            return
        copy.erase()
        if why is None:
            self._skew(analysis.perfect_band(top), ctx)
        else:
            ctx.refused(top, why)
