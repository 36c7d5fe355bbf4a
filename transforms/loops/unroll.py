"""Loop unrolling (MLIR's ``affine-loop-unroll``) and the helpers unroll-and-jam shares.

Utilities: :func:`unroll_by_factor`, :func:`unroll_full`, :func:`unroll_up_to_factor`,
:func:`promote_single_iteration_materializing_bound` (also importable here under its old name
``promote_if_single_iteration``), :func:`cleanup_bounds`. The pass unrolls every innermost loop
(MLIR's default), or fully unrolls the loops with a small constant trip count
(``unroll-full`` with ``unroll-full-threshold``).

Unrolling changes no execution order, so it needs no dependence check; what can refuse it is
the shape of the loop: a constant trip count below the factor, a non-constant trip count for
``unroll_full``, or a cleanup loop whose lower bound cannot be written as an affine bound
(MLIR's rule: a max lower bound or a min upper bound whose trip counts are not all multiples
of the factor). Where this differs from MLIR:

- none in the bounds: the cleanup lower bound is ``max(lb, lb + ((tc floordiv f) * f) * step)``
  when the trip count ``tc`` may be negative (``%N to 10``), as current MLIR (LLVM 24) writes it
  (without ``lb`` the cleanup loop would run below ``lb``), and MLIR's single bound otherwise;
- a loop yielding its IV through ``iter_args`` chains the right IV value into each copy;
- ``cleanup-unroll`` fully unrolls the cleanup loop (its description), where MLIR fully
  unrolls the whole loop;
- max/min bounds whose results are all constants are folded first, so they unroll like
  constant bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import AffineExpr, AffineMap, Operation, Value
from affine_ir.affine_expr import fits_index
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.types import index
from analysis import constant_trip_count

from ..errors import TransformError
from ..loop_utils import inline_loop_body, loop_name, lower_bound_value
from ..pass_base import Pass, PassContext, option, register_pass

__all__ = [
    "CleanupBounds", "LoopUnroll", "UnrollResult", "check_unrolled_step", "cleanup_bounds",
    "promote_if_single_iteration", "promote_single_iteration_materializing_bound", "split_cleanup_loop",
    "unroll_by_factor", "unroll_full", "unroll_up_to_factor",
]

PASS = "affine-loop-unroll"


@dataclass(frozen=True)
class UnrollResult:
    """What an unrolling did: ``loop`` the main loop (None when promoted away or fully unrolled),
    ``cleanup`` the cleanup loop (None when none is left), ``factor`` the factor used and
    ``changed`` whether the IR changed."""

    loop: AffineForOp | None
    cleanup: AffineForOp | None
    factor: int
    changed: bool = True


@dataclass(frozen=True)
class CleanupBounds:
    """The upper bound of the main loop and the lower bound of the cleanup loop (maps and operands)."""

    main_upper: AffineMap
    main_upper_operands: tuple[Value, ...]
    cleanup_lower: AffineMap
    cleanup_lower_operands: tuple[Value, ...]


class CleanupBoundError(ValueError):
    """The cleanup loop's lower bound cannot be written as an affine (max) bound."""


# -- bounds ------------------------------------------------------------------------------------
def _const_index(v: Value) -> int | None:
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, int) and v.type == index:
        return int(owner.value)
    return None


def _merged_bounds(loop: AffineForOp):
    """Lower and upper bound exprs over one operand list (dims then symbols), constants folded."""
    parts = [(loop.lower_bound_map, loop.lower_bound_operands), (loop.upper_bound_map, loop.upper_bound_operands)]
    dims: list[Value] = []
    syms: list[Value] = []
    for m, ops in parts:
        for v in ops[: m.num_dims]:
            if _const_index(v) is None and not any(x is v for x in dims):
                dims.append(v)
    for m, ops in parts:
        for v in ops[m.num_dims:]:
            if _const_index(v) is None and not any(x is v for x in dims + syms):
                syms.append(v)

    def expr_of(v: Value) -> AffineExpr:
        c = _const_index(v)
        if c is not None:
            return AffineExpr.constant(c)
        for k, x in enumerate(dims):
            if x is v:
                return AffineExpr.dim(k)
        return AffineExpr.symbol(next(k for k, x in enumerate(syms) if x is v))

    out = []
    for m, ops in parts:
        r = [expr_of(v) for v in ops]
        out.append([e.replace(r[: m.num_dims], r[m.num_dims:]) for e in m.results])
    return out[0], out[1], dims, syms


def _compact(exprs: list[AffineExpr], dims: list[Value], syms: list[Value]) -> tuple[AffineMap, tuple[Value, ...]]:
    """A map of ``exprs`` over the operands they use only."""
    used_d = sorted(set().union(*(e.used_dims() for e in exprs)))
    used_s = sorted(set().union(*(e.used_symbols() for e in exprs)))
    dr = [AffineExpr.dim(used_d.index(k)) if k in used_d else 0 for k in range(len(dims))]
    sr = [AffineExpr.symbol(used_s.index(k)) if k in used_s else 0 for k in range(len(syms))]
    m = AffineMap(len(used_d), len(used_s), tuple(e.replace(dr, sr) for e in exprs))
    return m, tuple(dims[k] for k in used_d) + tuple(syms[k] for k in used_s)


def fold_constant_bounds(loop: AffineForOp) -> None:
    """Replace a max lower bound (min upper bound) whose results are all constants by their max (min)."""
    lb, ub = loop.lower_bound_map, loop.upper_bound_map
    lbc, ubc = lb.constant_results(), ub.constant_results()
    new_lb = (AffineMap.constant_map(max(lbc)), ()) if lbc and lb.num_results > 1 else (lb, loop.lower_bound_operands)
    new_ub = (AffineMap.constant_map(min(ubc)), ()) if ubc and ub.num_results > 1 else (ub, loop.upper_bound_operands)
    if new_lb[0] is not lb or new_ub[0] is not ub:
        loop.set_bounds(new_lb[0], new_lb[1], new_ub[0], new_ub[1])


def cleanup_bounds(loop: AffineForOp, factor: int) -> CleanupBounds | None:
    """The bounds splitting ``loop`` into a main loop of whole chunks of ``factor`` iterations
    and a cleanup loop for the rest; None when the trip count is a multiple of ``factor``
    (no cleanup needed). Raises :class:`CleanupBoundError` (with the reason) when the cleanup
    lower bound cannot be written (multi-result bounds, as in MLIR).

    Main loop upper bound = cleanup lower bound = ``lb + ((tc floordiv f) * f) * step`` with
    ``tc = (ub - lb) ceildiv step`` (MLIR's ``getCleanupLoopLowerBound``); the cleanup lower
    bound is also ``max``-ed with ``lb`` when ``tc`` may be negative. Every constant of the
    bounds returned fits in 64 bits (CleanupBoundError otherwise).
    """
    lbs, ubs, dims, syms = _merged_bounds(loop)
    if len(lbs) > 1 and all(e.is_constant for e in lbs):
        lbs = [max(lbs, key=lambda e: e.constant_value)]
    if len(ubs) > 1 and all(e.is_constant for e in ubs):
        ubs = [min(ubs, key=lambda e: e.constant_value)]
    step = loop.step
    if len(lbs) > 1:
        tc = constant_trip_count(loop)
        if tc is not None and tc % factor == 0:
            return None
        raise CleanupBoundError(f"its lower bound is a max of {len(lbs)} results and its trip count may not be a "
                                f"multiple of {factor}: the cleanup loop's lower bound cannot be written")
    lb = lbs[0]
    tcs = [(u - lb).ceildiv(step) for u in ubs]
    if all(t.is_constant for t in tcs):
        tc = max(0, min(t.constant_value for t in tcs))
        if tc % factor == 0:
            return None
        bound = lb + (tc - tc % factor) * step
        m, ops = _compact([bound], dims, syms)
        return _checked(CleanupBounds(m, ops, m, ops))
    if all(t.mod(factor).is_constant and t.mod(factor).constant_value == 0 for t in tcs):
        return None
    if len(ubs) > 1:
        raise CleanupBoundError(f"its upper bound is a min of {len(ubs)} results and its trip count may not be a "
                                f"multiple of {factor}: the cleanup loop's lower bound cannot be written")
    t = tcs[0]
    bound = lb + t.floordiv(factor) * (factor * step)
    main, main_ops = _compact([bound], dims, syms)
    lo, _ = t.bounds()
    exprs = [bound] if lo is not None and lo >= 0 else [lb, bound]
    cleanup, cleanup_ops = _compact(exprs, dims, syms)
    return _checked(CleanupBounds(main, main_ops, cleanup, cleanup_ops))


def _checked(bounds: CleanupBounds) -> CleanupBounds:
    """``bounds``, unless a constant of theirs passes 64 bits (CleanupBoundError: the IR would not parse back)."""
    for m in (bounds.main_upper, bounds.cleanup_lower):
        if not m.fits_index:
            raise CleanupBoundError(f"the cleanup loop's bound {m} has a constant past 64 bits")
    return bounds


def split_cleanup_loop(loop: AffineForOp, bounds: CleanupBounds) -> AffineForOp:
    """Insert after ``loop`` a copy of it running from ``bounds.cleanup_lower`` (taking ``loop``'s
    results as its iter_args inits, and giving the results ``loop``'s users saw); ``loop`` then
    runs to ``bounds.main_upper``. Returns the cleanup loop."""
    cleanup = loop.clone()
    loop.parent.insert_after(loop, cleanup)
    for r, cr in zip(loop.results, cleanup.results):
        r.replace_all_uses_with(cr)
    upper_operands = cleanup.upper_bound_operands
    cleanup.attributes["lower_bound"] = bounds.cleanup_lower
    cleanup.set_operands([*bounds.cleanup_lower_operands, *upper_operands, *loop.results])
    loop.set_bounds(loop.lower_bound_map, loop.lower_bound_operands, bounds.main_upper, bounds.main_upper_operands)
    return cleanup


# -- promotion -----------------------------------------------------------------------------------
def promote_single_iteration_materializing_bound(loop: AffineForOp) -> bool:
    """When ``loop`` runs exactly once and has a single-result lower bound, replace it by its body
    (MLIR's ``promoteIfSingleIteration``): the IV becomes *one value* of the lower bound (an
    ``arith.constant`` at the function's entry, the bound operand itself, or an ``affine.apply``)
    that replaces all its uses, iter_args their inits, results the yielded values. Returns
    whether it did. (``affine-loop-normalize``'s :func:`promote_single_iteration_composing_bound` instead
    composes the bound into the IV's affine users.)

    ``affine.for %j = 0 to 1 { S(%j) }``  ->  ``%c0 = arith.constant 0 : index ... S(%c0)``
    """
    if constant_trip_count(loop) != 1 or loop.lower_bound_map.num_results != 1:
        return False
    _inline_first_iteration(loop)
    return True


#: The old name of :func:`promote_single_iteration_materializing_bound` (kept importable from this module).
promote_if_single_iteration = promote_single_iteration_materializing_bound


def _inline_first_iteration(loop: AffineForOp) -> None:
    """Replace ``loop`` (one-result lower bound) by its body run once, at the lower bound."""
    iv = loop.induction_var
    if not iv.uses:
        inline_loop_body(loop, iv)
        return
    value = lower_bound_value(loop, name_hint=iv.name_hint, constant_at_entry=True)
    inline_loop_body(loop, value)
    for user in value.users():
        if hasattr(user, "set_access"):  # keep subscripts canonical (%i + %i -> %i * 2)
            user.set_access(user.map, user.indices)


# -- unrolling ---------------------------------------------------------------------------------------
def iv_copy(loop: AffineForOp, k: int, step: int, previous: Value | None = None) -> AffineApplyOp:
    """The IV of unrolled copy ``k`` (not inserted): ``affine.apply (d0) -> (d0 + k * step)(%iv)``
    (MLIR's form), or, when ``k * step`` passes 64 bits and ``previous`` (copy ``k - 1``'s IV) is
    given, ``affine.apply (d0) -> (d0 + step)(previous)``: exact, and every constant fits."""
    iv = loop.induction_var
    hint = f"{iv.name_hint}_{k}" if iv.name_hint else None
    base, offset = (iv, k * step) if fits_index(k * step) or previous is None else (previous, step)
    return AffineApplyOp(AffineMap(1, 0, (AffineExpr.dim(0) + offset,)), [base], location=loop.location,
                         name_hint=hint)


def check_unrolled_step(pass_name: str, loop: AffineForOp, factor: int, verb: str = "unroll") -> None:
    """Raise :class:`TransformError` (nothing changed) when ``loop``'s step times ``factor`` (the
    unrolled loop's step, also the largest IV offset of a copy) passes 64 bits."""
    if not fits_index(loop.step * factor):
        raise TransformError(pass_name, f"cannot {verb} {loop_name(loop)} by {factor}: its step {loop.step} x factor "
                                        f"{factor} passes 64 bits", loops=[loop])


def _replicate_body(loop: AffineForOp, factor: int, step: int) -> None:
    """Append ``factor - 1`` copies of the body (IV ``iv + k * step``, see :func:`iv_copy`),
    chaining the iter_args."""
    body = loop.body
    term = body.terminator
    originals = body.ops[:-1]
    iv = loop.induction_var
    uses_iv = bool(iv.uses)
    yielded = list(term.operands)
    last = list(yielded)
    previous_iv = iv
    for k in range(1, factor):
        mapping: dict[Value, Value] = dict(zip(loop.iter_args, last))
        if uses_iv:
            apply = iv_copy(loop, k, step, previous_iv)
            body.insert_before(term, apply)
            mapping[iv] = previous_iv = apply.result
        for op in originals:
            body.insert_before(term, op.clone(mapping))
        last = [mapping.get(y, y) for y in yielded]
    term.set_operands(last)


def _check_factor(pass_name: str, loop: AffineForOp, factor: int) -> None:
    if not isinstance(factor, int) or factor < 1:
        raise TransformError(pass_name, f"cannot unroll {loop_name(loop)} by {factor}: the factor must be a positive "
                                        "integer", loops=[loop])


def unroll_by_factor(loop: AffineForOp, factor: int, cleanup_unroll: bool = False) -> UnrollResult:
    """Unroll ``loop`` by ``factor`` (MLIR's ``loopUnrollByFactor``): the step is multiplied by
    ``factor`` and the body repeated with the IV ``%i + k * step`` (an ``affine.apply``); iter_args
    chain through the copies. A trip count not a multiple of ``factor`` (also a symbolic one)
    gets a cleanup loop after the main one (see :func:`cleanup_bounds`); a main or cleanup loop
    left with one iteration is promoted. ``cleanup_unroll``: fully unroll the cleanup loop (and a
    loop with fewer iterations than ``factor``).

    Guarantees: the result computes what ``loop`` did, and every constant it writes fits in 64
    bits. Raises :class:`TransformError` (IR unchanged) for a factor < 1, a constant trip count
    below ``factor``, a step times ``factor`` past 64 bits, or a cleanup bound that cannot be
    written::

        affine.for %j = 0 to 10 { S(%j) }      (factor 4)
        ->  affine.for %j = 0 to 8 step 4 { S(%j)  %j_1 = affine.apply (d0 + 1)(%j)  S(%j_1) ... }
            affine.for %j = 8 to 10 { S(%j) }
    """
    _check_factor(PASS, loop, factor)
    if factor == 1:
        promoted = promote_single_iteration_materializing_bound(loop)
        return UnrollResult(None if promoted else loop, None, 1, promoted)
    if len(loop.body.ops) == 1:
        return UnrollResult(loop, None, factor, False)
    tc = constant_trip_count(loop)
    if tc is not None and tc < factor:
        if cleanup_unroll:
            return unroll_full(loop)
        raise TransformError(PASS, f"cannot unroll {loop_name(loop)} by {factor}: its trip count is {tc}",
                             loops=[loop])
    check_unrolled_step(PASS, loop, factor)
    try:
        bounds = cleanup_bounds(loop, factor)
    except CleanupBoundError as e:
        raise TransformError(PASS, f"cannot unroll {loop_name(loop)} by {factor}: {e}", loops=[loop]) from None
    fold_constant_bounds(loop)
    cleanup = split_cleanup_loop(loop, bounds) if bounds is not None else None
    if cleanup is not None and promote_single_iteration_materializing_bound(cleanup):
        cleanup = None
    step = loop.step
    loop.attributes["step"] = step * factor
    _replicate_body(loop, factor, step)
    main = None if promote_single_iteration_materializing_bound(loop) else loop
    if cleanup is not None and cleanup_unroll and constant_trip_count(cleanup) is not None:
        unroll_full(cleanup)
        cleanup = None
    return UnrollResult(main, cleanup, factor)


def unroll_full(loop: AffineForOp) -> UnrollResult:
    """Replace ``loop`` by its body repeated once per iteration (MLIR's ``loopUnrollFull``).

    Needs a constant trip count (TransformError otherwise, IR unchanged); a loop that never
    runs is left as it is (as MLIR does). The loop's step is never multiplied (no loop is left),
    so a copy's IV whose offset ``k * step`` passes 64 bits is its predecessor's plus ``step``
    (see :func:`iv_copy`)::

        affine.for %j = 0 to 2 { S(%j) }  ->  S(%c0)  %1 = affine.apply (d0 + 1)(%c0)  S(%1)
    """
    tc = constant_trip_count(loop)
    if tc is None:
        raise TransformError(PASS, f"cannot fully unroll {loop_name(loop)}: its trip count is not constant",
                             loops=[loop])
    if tc == 0:
        return UnrollResult(loop, None, 0, False)
    if promote_single_iteration_materializing_bound(loop):
        return UnrollResult(None, None, 1)
    fold_constant_bounds(loop)
    if loop.lower_bound_map.num_results != 1 or len(loop.body.ops) == 1:
        return unroll_by_factor(loop, tc)
    _replicate_body(loop, tc, loop.step)
    _inline_first_iteration(loop)
    return UnrollResult(None, None, tc)


def unroll_up_to_factor(loop: AffineForOp, factor: int) -> UnrollResult:
    """Unroll by ``factor``, or fully when the constant trip count is smaller (MLIR's
    ``loopUnrollUpToFactor``); same guarantees as :func:`unroll_by_factor`::

        affine.for %j = 0 to 3 { S(%j) }   (up to 4)  ->  S(%c0) S(%c0 + 1) S(%c0 + 2)
    """
    _check_factor(PASS, loop, factor)
    tc = constant_trip_count(loop)
    if tc is not None and tc < factor:
        return unroll_full(loop)
    return unroll_by_factor(loop, factor)


# -- the pass --------------------------------------------------------------------------------------
def _innermost_loops(root: Operation) -> list[AffineForOp]:
    return [op for op in root.walk() if isinstance(op, AffineForOp)
            and not any(isinstance(o, AffineForOp) for o in op.body.walk())]


def _post_order_loops(root: Operation) -> list[AffineForOp]:
    out: list[AffineForOp] = []

    def visit(op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    visit(child)
        if isinstance(op, AffineForOp):
            out.append(op)

    visit(root)
    return out


def _describe(loop: AffineForOp, result: UnrollResult, how: str) -> str:
    parts = [how]
    if result.loop is None:
        parts.append("(no loop left)")
    if result.cleanup is not None:
        parts.append("with a cleanup loop")
    return " ".join(parts)


@register_pass
@dataclass(frozen=True)
class LoopUnroll(Pass):
    """MLIR's ``affine-loop-unroll``: unroll every innermost loop (repeated ``unroll-num-reps``
    times), or with ``unroll-full`` and ``unroll-full-threshold`` fully unroll every loop whose
    constant trip count is at most the threshold (innermost first)."""

    name = "affine-loop-unroll"
    summary = "Unroll affine loops"
    unroll_factor: int = option(4, "Use this unroll factor for all loops being unrolled; -1: fully unroll")
    unroll_up_to_factor: bool = option(False, "Allow unrolling up to the factor specified")
    unroll_full: bool = option(False, "Fully unroll loops")
    unroll_num_reps: int = option(1, "Unroll innermost loops repeatedly this many times")
    unroll_full_threshold: int | None = option(None, "Unroll all loops with trip count less than or equal to this")
    cleanup_unroll: bool = option(False, "Fully unroll the cleanup loop when possible")

    def run_on_function(self, func, ctx: PassContext) -> None:
        if self.unroll_full and self.unroll_full_threshold is not None:
            for loop in _post_order_loops(func):
                tc = constant_trip_count(loop)
                if tc is not None and tc <= self.unroll_full_threshold:
                    self._apply(loop, ctx, full=True)
            return
        for _ in range(max(1, self.unroll_num_reps)):
            if not any([self._apply(loop, ctx) for loop in _innermost_loops(func)]):
                break

    def _apply(self, loop: AffineForOp, ctx: PassContext, full: bool = False) -> bool:
        name = loop_name(loop)
        try:
            if full or self.unroll_full or self.unroll_factor == -1:
                tc = constant_trip_count(loop)
                result = unroll_full(loop)
                how = f"fully unrolled {name} ({tc} iterations)"
            elif self.unroll_up_to_factor:
                result = unroll_up_to_factor(loop, self.unroll_factor)
                how = f"unrolled {name} by {result.factor} (up to {self.unroll_factor})"
            else:
                result = unroll_by_factor(loop, self.unroll_factor, self.cleanup_unroll)
                how = f"unrolled {name} by {self.unroll_factor}"
        except TransformError as e:
            ctx.refused(loop, e)
            return False
        if result.changed:
            ctx.applied(loop, _describe(loop, result, how))
        return result.changed
