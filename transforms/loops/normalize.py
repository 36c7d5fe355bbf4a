"""Loop normalization: ``affine-loop-normalize`` (MLIR's pass of that name).

Every ``affine.for`` and ``affine.parallel`` gets lower bound 0 and step 1: a loop
``%i = lb to ub step s`` becomes ``%i = 0 to (ub - lb) ceildiv s`` (one upper bound per
result of ``ub``, their ``min``) and each use of the IV becomes ``lb + %i * s``.

Differences from MLIR (``normalizeAffineFor``/``normalizeAffineParallel`` in
``mlir/lib/Dialect/Affine/Utils/Utils.cpp``), on its test input
``mlir/test/Dialect/Affine/affine-loop-normalize.mlir``:

- MLIR puts ``%0 = affine.apply (lb + d0 * s)(%i)`` at the top of the body and makes every
  user use it. Here ``lb + %i * s`` is composed into the maps of the affine users (loads,
  stores, ``affine.apply/min/max``, nested loop bounds, ``affine.if`` conditions), which is
  what MLIR's ``canonicalize`` makes of MLIR's output; an ``affine.apply`` (named
  ``%<iv>_orig``) is made only for the other users (``arith.index_cast``, calls, ...).
  The loop headers are the same as MLIR's.
- MLIR leaves a loop whose lower bound is a ``max`` of several results alone. Here such a
  loop is normalized when its lower bound can be computed once by an ``affine.max`` at the
  top level of the function (a valid symbol there): when the loop itself is at the top
  level, or when every lower-bound operand is a function argument or a top-level value.
  Otherwise the loop is refused with the reason.
- MLIR normalizes an ``affine.parallel`` only when none of its bounds is a ``max``/``min``.
  Here each dimension whose lower bound is a single expression is normalized (``min`` upper
  bounds included); the others keep their bounds and steps.

``promote-single-iter``: ``Passes.td`` declares the default ``true``, but the pass's
constructor (``createAffineLoopNormalizePass(bool promoteSingleIter = false)``) overrides
it, so ``mlir-opt -affine-loop-normalize`` does not promote (checked with ``iree-opt``);
the default here is ``false`` too. With it, an ``affine.for`` that runs exactly once
(``analysis.constant_trip_count``) is replaced by its body, its IV by the lower bound,
its ``iter_args`` by their initial values and its results by the yielded values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import analysis
from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineMapValueOp,
    AffineMaxOp,
    AffineParallelOp,
    canonical_ssa_map,
    is_valid_symbol,
)
from affine_ir.interfaces import AffineAccessInterface, LoopLikeOpInterface

from ..errors import TransformError
from ..loop_utils import inline_loop_body, loop_name, lower_bound_value, value_name
from ..pass_base import Pass, PassContext, option, register_pass

__all__ = ["LoopNormalize", "is_normalized", "normalize_loop", "promote_if_single_iteration",
           "promote_single_iteration_composing_bound", "substitute_value"]

PASS = "affine-loop-normalize"


# ----- maps over a shared operand list -----------------------------------------------------
class _Operands:
    """The dims and symbols of a map being built, each value once per kind. With
    ``promote_symbols``, a dim operand that is a valid symbol becomes a symbol (as MLIR's
    ``canonicalizeMapAndOperands`` does for loop bounds)."""

    def __init__(self, promote_symbols: bool = False):
        self.dims: list[Value] = []
        self.syms: list[Value] = []
        self.promote = promote_symbols

    @staticmethod
    def _position(lst: list[Value], v: Value) -> int:
        for k, w in enumerate(lst):
            if w is v:
                return k
        lst.append(v)
        return len(lst) - 1

    def dim(self, v: Value) -> AffineExpr:
        if self.promote and is_valid_symbol(v):
            return self.sym(v)
        return AffineExpr.dim(self._position(self.dims, v))

    def sym(self, v: Value) -> AffineExpr:
        return AffineExpr.symbol(self._position(self.syms, v))

    def inputs(self, num_dims: int, operands: Sequence[Value]) -> tuple[list[AffineExpr], list[AffineExpr]]:
        """The expressions standing for a map's dims and symbols (its ``operands``) here."""
        return [self.dim(v) for v in operands[:num_dims]], [self.sym(v) for v in operands[num_dims:]]

    def add(self, m: AffineMap, operands: Sequence[Value]) -> list[AffineExpr]:
        """``m``'s results over this operand list."""
        d, s = self.inputs(m.num_dims, operands)
        return [e.replace(d, s) for e in m.results]

    def finish(self, exprs: Sequence[AffineExpr]) -> tuple[int, int, list[AffineExpr], list[Value]]:
        """``(num_dims, num_symbols, exprs, operands)`` with the unused operands dropped."""
        used_d = sorted(set().union(*(e.used_dims() for e in exprs))) if exprs else []
        used_s = sorted(set().union(*(e.used_symbols() for e in exprs))) if exprs else []
        drepl = [AffineExpr.dim(used_d.index(k)) if k in used_d else 0 for k in range(len(self.dims))]
        srepl = [AffineExpr.symbol(used_s.index(k)) if k in used_s else 0 for k in range(len(self.syms))]
        out = [e.replace(drepl, srepl) for e in exprs]
        return len(used_d), len(used_s), out, [self.dims[k] for k in used_d] + [self.syms[k] for k in used_s]

    def map(self, exprs: Sequence[AffineExpr]) -> tuple[AffineMap, list[Value]]:
        nd, ns, out, operands = self.finish(exprs)
        return AffineMap(nd, ns, tuple(out)), operands


def _build_map(expr_of: Callable[[_Operands], Sequence[AffineExpr]], promote: bool = False
               ) -> tuple[AffineMap, list[Value]]:
    ops = _Operands(promote)
    return ops.map(expr_of(ops))


# ----- substituting an affine expression for a value in its users ----------------------------
def _compose(m_dims: int, exprs: Sequence[AffineExpr], operands: Sequence[Value], old: Value, repl: AffineMap,
             repl_operands: Sequence[Value], promote: bool) -> tuple[int, int, list[AffineExpr], list[Value]] | None:
    """``exprs`` (over ``operands``, the first ``m_dims`` dims) with the dim ``old`` replaced
    by ``repl(repl_operands)``; None when ``old`` is no dim operand."""
    if not any(v is old for v in operands[:m_dims]):
        return None
    ops = _Operands(promote)
    new_value = ops.add(repl, repl_operands)[0]
    d = [new_value if v is old else ops.dim(v) for v in operands[:m_dims]]
    s = [ops.sym(v) for v in operands[m_dims:]]
    return ops.finish([e.replace(d, s) for e in exprs])


def _compose_map(m: AffineMap, operands, old, repl, repl_operands, promote=False):
    got = _compose(m.num_dims, m.results, operands, old, repl, repl_operands, promote)
    if got is None:
        return m, tuple(operands)
    nd, ns, exprs, new_operands = got
    return AffineMap(nd, ns, tuple(exprs)), tuple(new_operands)


def _compose_into(user: Operation, old: Value, repl: AffineMap, repl_operands: Sequence[Value]) -> None:
    """Rewrite the affine maps of ``user`` so they read ``repl(repl_operands)`` where they read ``old``."""
    _composition(user, old, repl, repl_operands)[1]()


def _composition(user: Operation, old: Value, repl: AffineMap,
                 repl_operands: Sequence[Value]) -> tuple[list[AffineExpr], Callable[[], None]]:
    """The expressions ``user``'s maps get when ``repl(repl_operands)`` replaces ``old``, and the
    function that installs them (nothing changes until it is called); no expressions and a
    function doing nothing for an op without affine maps of its operands."""
    args = (old, repl, repl_operands)
    if isinstance(user, AffineAccessInterface):
        m, ops = _compose_map(user.map, user.indices, *args)
        return list(m.results), lambda: user.set_access(m, ops)
    if isinstance(user, AffineMapValueOp):
        m, ops = _compose_map(user.map, user.operands, *args)

        def install_map() -> None:
            user.attributes["map"] = m
            user.set_operands(ops)
        return list(m.results), install_map
    if isinstance(user, AffineForOp):
        lb, lbo = _compose_map(user.lower_bound_map, user.lower_bound_operands, *args, promote=True)
        ub, ubo = _compose_map(user.upper_bound_map, user.upper_bound_operands, *args, promote=True)
        return [*lb.results, *ub.results], lambda: user.set_bounds(lb, lbo, ub, ubo)
    if isinstance(user, AffineIfOp):
        s = user.condition
        got = _compose(s.num_dims, s.constraints, user.operands, *args, promote=False)
        if got is None:
            return [], lambda: None
        nd, ns, exprs, ops = got

        def install_set() -> None:
            user.attributes["condition"] = IntegerSet(nd, ns, tuple(exprs), s.eq_flags)
            user.set_operands(ops)
        return list(exprs), install_set
    if isinstance(user, AffineParallelOp):
        a = user.attributes
        lm, lo = canonical_ssa_map(*_compose_map(a["lower_bounds"], user.lower_operands, *args))
        um, uo = canonical_ssa_map(*_compose_map(a["upper_bounds"], user.upper_operands, *args))

        def install_bounds() -> None:
            a["lower_bounds"], a["upper_bounds"] = lm, um
            user.set_operands([*lo, *uo])
        return [*lm.results, *um.results], install_bounds
    return [], lambda: None


def composition_fits(old: Value, repl: AffineMap, repl_operands: Sequence[Value]) -> bool:
    """Whether every affine user of ``old`` keeps constants and coefficients within 64 bits
    once ``repl(repl_operands)`` is composed in (:func:`substitute_value`); changes nothing."""
    return repl.fits_index and all(e.fits_index for user in old.users()
                                   for e in _composition(user, old, repl, repl_operands)[0])


def substitute_value(old: Value, repl: AffineMap, repl_operands: Sequence[Value],
                     materialize: Callable[[], Value]) -> None:
    """Make every user of ``old`` (an index value) use ``repl(repl_operands)`` instead:
    composed into the affine maps of affine users; other uses (and a use of ``old`` as a
    symbol) get the value ``materialize()`` returns, called once and only when needed.
    ``repl_operands`` may contain ``old`` itself, which then keeps standing for itself.

    Before (``%i`` -> ``(d0 * 2 + 1)(%i)``)::

        %v = affine.load %A[%i + 1] : memref<20xf32>
        %c = arith.index_cast %i : index to i32

    After::

        %i_orig = affine.apply affine_map<(d0) -> (d0 * 2 + 1)>(%i)
        %v = affine.load %A[%i * 2 + 2] : memref<20xf32>
        %c = arith.index_cast %i_orig : index to i32
    """
    users = old.users()
    rest = [(u.op, u.index) for u in old.uses if u.index not in _map_dim_positions(u.op)]
    if rest:
        value = materialize()
        for user, i in rest:
            user.set_operand(i, value)
    for user in users:
        _compose_into(user, old, repl, repl_operands)


def _map_dim_positions(op: Operation) -> range | set:
    """The operand positions of ``op`` that are dims of its affine maps."""
    if isinstance(op, AffineAccessInterface):
        start = op.memref_index + 1
        return range(start, start + op.map.num_dims)
    if isinstance(op, AffineMapValueOp):
        return range(op.map.num_dims)
    if isinstance(op, AffineIfOp):
        return range(op.condition.num_dims)
    if isinstance(op, AffineForOp):
        return _bound_dim_positions(op.lower_bound_map, op.upper_bound_map)
    if isinstance(op, AffineParallelOp):
        return _bound_dim_positions(op.attributes["lower_bounds"], op.attributes["upper_bounds"])
    return set()


def _bound_dim_positions(lower: AffineMap, upper: AffineMap) -> set[int]:
    """The operand positions of the dims of a loop's bound maps (lower operands, then upper)."""
    return set(range(lower.num_dims)) | set(range(lower.num_inputs, lower.num_inputs + upper.num_dims))


# ----- affine.for ------------------------------------------------------------------------
def is_normalized(loop: Operation) -> bool:
    """True when every IV of ``loop`` (an ``affine.for`` or ``affine.parallel``) starts at 0
    with step 1."""
    if isinstance(loop, AffineForOp):
        return loop.step == 1 and loop.lower_bound_map.single_constant() == 0
    if isinstance(loop, AffineParallelOp):
        return all(s == 1 for s in loop.steps) and all(
            len(g) == 1 and g[0] == AffineExpr.constant(0) for g in loop.bound_groups(False))
    return True


def _top_level_anchor(loop: Operation) -> Operation | None:
    """The ancestor of ``loop`` (or ``loop``) directly in a ``func.func`` body, or None."""
    op = loop
    while op is not None and not isinstance(op.parent_op, FuncOp):
        op = op.parent_op
    return op


def _is_top_level_value(v: Value) -> bool:
    owner = v.owner
    block = owner if not isinstance(owner, Operation) else owner.parent
    return block is not None and isinstance(block.parent_op, FuncOp)


def _max_lower_bound_site(loop: AffineForOp) -> Operation:
    """Where an ``affine.max`` of ``loop``'s multi-result lower bound can go so its result is a
    valid symbol: before the loop at the top level, or before the loop's top-level ancestor
    when every operand is a top-level value. TransformError otherwise."""
    anchor = _top_level_anchor(loop)
    if anchor is loop:
        return loop
    if anchor is not None and all(_is_top_level_value(v) for v in loop.lower_bound_operands):
        return anchor
    n = loop.lower_bound_map.num_results
    inner = ", ".join(value_name(v) for v in loop.lower_bound_operands if not _is_top_level_value(v))
    raise TransformError(PASS, f"cannot normalize {loop_name(loop)}: its lower bound is the max of {n} expressions "
                               f"over {inner}, defined inside the loop nest, so no affine.max at the top level can "
                               "compute it (MLIR normalizes single-result lower bounds only)", loops=[loop])


def _bound_text(m: AffineMap, operands: Sequence[Value], kind: str) -> str:
    d = [value_name(v) for v in operands[:m.num_dims]]
    s = [value_name(v) for v in operands[m.num_dims:]]
    parts = [e.to_str(d, s) for e in m.results]
    return parts[0] if len(parts) == 1 else f"{kind}({', '.join(parts)})"


def _orig_name(iv: Value) -> str | None:
    return f"{iv.name_hint}_orig" if iv.name_hint else None


def _insert_apply(block_or_before, m: AffineMap, operands: Sequence[Value], location, name) -> Value:
    op = AffineApplyOp(m, list(operands), location=location, name_hint=name)
    if isinstance(block_or_before, Operation):
        block_or_before.parent.insert_before(block_or_before, op)
    else:
        block_or_before.insert(0, op)
    return op.result


def _normalize_for(loop: AffineForOp) -> bool:
    if is_normalized(loop):
        return False
    lb, lbo, step = loop.lower_bound_map, loop.lower_bound_operands, loop.step
    site = _max_lower_bound_site(loop) if lb.num_results > 1 else None  # raises before any change
    if site is not None:
        hint = f"{loop.induction_var.name_hint}_lb" if loop.induction_var.name_hint else None
        lb_op = AffineMaxOp(lb, list(lbo), location=loop.location, name_hint=hint)
        site.parent.insert_before(site, lb_op)
        lb, lbo = AffineMap.symbol_identity(), (lb_op.result,)
    ub, ubo = loop.upper_bound_map, loop.upper_bound_operands

    def new_upper(ops: _Operands) -> list[AffineExpr]:
        low = ops.add(lb, lbo)[0]
        return [(u - low).ceildiv(step) for u in ops.add(ub, ubo)]

    new_ub, new_ubo = _build_map(new_upper, promote=True)
    iv = loop.induction_var
    repl, repl_ops = _build_map(lambda ops: [ops.add(lb, lbo)[0] + ops.dim(iv) * step])
    if not (new_ub.fits_index and composition_fits(iv, repl, repl_ops)):
        if site is not None:
            lb_op.erase()
        raise TransformError(PASS, f"cannot normalize {loop_name(loop)}: lb + {value_name(iv)} * {step} composed into "
                                   "its users (or the new bound) needs an integer past 64 bits", loops=[loop])
    loop.set_bounds(AffineMap.constant_map(0), [], new_ub, new_ubo)
    loop.attributes["step"] = 1
    substitute_value(iv, repl, repl_ops,
                     lambda: _insert_apply(loop.body, repl, repl_ops, loop.location, _orig_name(iv)))
    return True


# ----- affine.parallel ---------------------------------------------------------------------
def _normalize_parallel(op: AffineParallelOp) -> bool:
    lowers, uppers, steps = op.bound_groups(False), op.bound_groups(True), list(op.steps)
    todo = [k for k in range(len(steps)) if not (steps[k] == 1 and lowers[k] == [AffineExpr.constant(0)])]
    ready = [k for k in todo if len(lowers[k]) == 1]
    if not ready:
        if todo:
            names = ", ".join(value_name(op.ivs[k]) for k in todo)
            raise TransformError(PASS, f"cannot normalize {names} of this affine.parallel: their lower bounds are "
                                       "maxima of several expressions", loops=[op])
        return False
    a = op.attributes
    lmap, lops, umap, uops = a["lower_bounds"], op.lower_operands, a["upper_bounds"], op.upper_operands
    lower_n = lmap.num_dims

    def lower_exprs(ops: _Operands, with_lower: bool) -> list[list[AffineExpr]]:
        d, s = ops.inputs(lower_n, lops)
        return [[e.replace(d, s) for e in g] for g in lowers] if with_lower else []

    def new_lower(ops: _Operands) -> list[AffineExpr]:
        groups = lower_exprs(ops, True)
        return [e for k, g in enumerate(groups) for e in ([AffineExpr.constant(0)] if k in ready else g)]

    def new_upper(ops: _Operands) -> list[AffineExpr]:
        lows = lower_exprs(ops, True)
        d, s = ops.inputs(umap.num_dims, uops)
        out = []
        for k, g in enumerate(uppers):
            exprs = [e.replace(d, s) for e in g]
            out.extend((u - lows[k][0]).ceildiv(steps[k]) for u in exprs) if k in ready else out.extend(exprs)
        return out

    nl, nlo = canonical_ssa_map(*_build_map(new_lower))
    nu, nuo = canonical_ssa_map(*_build_map(new_upper))
    repls = {}
    for k in ready:
        low = AffineMap(lmap.num_dims, lmap.num_symbols, (lowers[k][0],))
        repls[k] = _build_map(lambda ops, low=low, k=k: [ops.add(low, lops)[0] + ops.dim(op.ivs[k]) * steps[k]])
    wide = next((k for k in ready if not composition_fits(op.ivs[k], *repls[k])), None)
    if wide is not None or not (nl.fits_index and nu.fits_index):
        names = value_name(op.ivs[ready[0] if wide is None else wide])
        raise TransformError(PASS, f"cannot normalize {names} of this affine.parallel: its new bounds or the "
                                   "composed uses need an integer past 64 bits", loops=[op])
    a["lower_bounds"], a["upper_bounds"] = nl, nu
    a["lower_groups"] = tuple(1 if k in ready else len(g) for k, g in enumerate(lowers))
    a["steps"] = tuple(1 if k in ready else s for k, s in enumerate(steps))
    op.set_operands([*nlo, *nuo])
    for k in ready:
        iv = op.ivs[k]
        repl, repl_ops = repls[k]
        substitute_value(iv, repl, repl_ops,
                         lambda repl=repl, repl_ops=repl_ops, iv=iv: _insert_apply(op.body, repl, repl_ops,
                                                                                   op.location, _orig_name(iv)))
    return True


def normalize_loop(loop: Operation) -> bool:
    """Normalize ``loop`` (an ``affine.for`` or ``affine.parallel``) to lower bound 0 and step 1;
    True when it changed, False when it already was normalized.

    Guarantees: the loop runs the same iterations in the same order, the IV now counting
    them; every use of the old IV reads ``lb + %i * step`` (composed into affine maps, or
    through an ``affine.apply`` for other users); iter_args and results are untouched.
    A loop whose lower bound is a ``max`` that cannot be computed at the top level of the
    function (see the module docstring) raises :class:`TransformError`, the IR unchanged.

    Before::

        affine.for %i = 2 to %N step 3 {
          %v = affine.load %A[%i + 1] : memref<64xf32>
        }

    After::

        affine.for %i = 0 to affine_map<()[s0] -> ((s0 - 2) ceildiv 3)>()[%N] {
          %v = affine.load %A[%i * 3 + 3] : memref<64xf32>
        }
    """
    if isinstance(loop, AffineForOp):
        return _normalize_for(loop)
    if isinstance(loop, AffineParallelOp):
        return _normalize_parallel(loop)
    raise TypeError(f"normalize_loop expects an affine.for or affine.parallel, got {loop.name}")


# ----- single-iteration loops ------------------------------------------------------------------
def promote_single_iteration_composing_bound(loop: AffineForOp) -> bool:
    """Replace ``loop`` by its body when it runs exactly once (its constant trip count is 1) and
    its lower bound is a single expression; True when it did. The IV becomes the lower bound
    *composed into its affine users' maps* (a constant, the bound's operand or an ``affine.apply``
    only for other users), ``iter_args`` their initial values, the results the yielded values.
    (``affine-loop-unroll``'s :func:`promote_single_iteration_materializing_bound` instead replaces the IV by
    one value.)

    Before::

        %r = affine.for %i = %n to affine_map<()[s0] -> (s0 + 1)>()[%n] iter_args(%a = %x) -> (f32) {
          %v = affine.load %A[%i] : memref<8xf32>
          %s = arith.addf %a, %v : f32
          affine.yield %s : f32
        }

    After::

        %v = affine.load %A[symbol(%n)] : memref<8xf32>
        %s = arith.addf %x, %v : f32          // %r is replaced by %s
    """
    if analysis.constant_trip_count(loop) != 1 or loop.lower_bound_map.num_results != 1:
        return False
    lb, lbo = loop.lower_bound_map, loop.lower_bound_operands
    iv = loop.induction_var
    substitute_value(iv, lb, lbo, lambda: lower_bound_value(loop, name_hint=_orig_name(iv)))
    inline_loop_body(loop, iv)
    return True


#: The old name of :func:`promote_single_iteration_composing_bound` (kept importable from this module).
promote_if_single_iteration = promote_single_iteration_composing_bound


# ----- the pass ----------------------------------------------------------------------------------
def _loops_post_order(root: Operation) -> Iterator[Operation]:
    for region in root.regions:
        for block in region.blocks:
            for op in list(block.ops):
                yield from _loops_post_order(op)
                if isinstance(op, LoopLikeOpInterface):
                    yield op


def _loop_text(loop: Operation) -> str:
    if isinstance(loop, AffineParallelOp):
        return "(" + ", ".join(value_name(v) for v in loop.ivs) + ")"
    return loop_name(loop)


def _header(loop: Operation) -> str:
    if isinstance(loop, AffineForOp):
        lb = _bound_text(loop.lower_bound_map, loop.lower_bound_operands, "max")
        ub = _bound_text(loop.upper_bound_map, loop.upper_bound_operands, "min")
        return f"{lb} to {ub}" + (f" step {loop.step}" if loop.step != 1 else "")
    a = loop.attributes
    lower, upper = a["lower_bounds"], a["upper_bounds"]
    lops, uops = loop.lower_operands, loop.upper_operands

    def groups(m, ops, upper_bound: bool) -> str:
        texts = [_bound_text(AffineMap(m.num_dims, m.num_symbols, tuple(g)), ops, "min" if upper_bound else "max")
                 for g in loop.bound_groups(upper_bound)]
        return "(" + ", ".join(texts) + ")"

    steps = f" step ({', '.join(map(str, loop.steps))})" if any(s != 1 for s in loop.steps) else ""
    return f"{groups(lower, lops, False)} to {groups(upper, uops, True)}{steps}"


@register_pass
@dataclass(frozen=True)
class LoopNormalize(Pass):
    """``affine-loop-normalize``: :func:`normalize_loop` on every ``affine.for`` and
    ``affine.parallel`` of each function, innermost first (MLIR's post-order walk); with
    ``promote-single-iter``, :func:`promote_single_iteration_composing_bound` first."""

    name = PASS
    summary = "Apply normalization transformations to affine loop-like ops"
    promote_single_iter: bool = option(False, "Promote single iteration loops")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        for loop in list(_loops_post_order(func)):
            name = _loop_text(loop)
            if self.promote_single_iter and isinstance(loop, AffineForOp):
                if promote_single_iteration_composing_bound(loop):
                    ctx.applied(loop, f"promoted the body of single-iteration loop {name}")
                    continue
            before = _header(loop)
            try:
                if normalize_loop(loop):
                    ctx.applied(loop, f"normalized {name}: {before} -> {_header(loop)}")
            except TransformError as e:
                ctx.refused(loop, e)
