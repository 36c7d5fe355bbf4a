"""Unroll-and-jam (MLIR's ``affine-loop-unroll-jam``).

Unroll-and-jam of ``%i`` by ``f`` strip-mines ``%i`` into chunks of ``f`` iterations and moves
the ``f`` copies inward, into every loop nested in ``%i``: the body of ``%i`` is cut into
*sub-blocks* (maximal runs of ops that are not ``affine.for``, in ``%i``'s body and, recursively,
in the bodies of the loops nested through ``affine.for`` only), and each sub-block is followed by
its ``f - 1`` copies (MLIR's ``loopUnrollJamByFactor``). Inner loops with ``iter_args`` get one set
of ``iter_args`` per copy. A trip count that is not a multiple of ``f`` gets a cleanup loop.

Legality (checked before anything changes; :class:`TransformError` otherwise):

- the bounds of the inner loops must not depend on ``%i`` or on values computed inside it (MLIR);
- jamming is the interchange of the intra-chunk copies inward: it is legal iff no dependence
  between iterations of ``%i`` less than ``f`` apart (distance ``1..(f-1)*step``) is reversed,
  i.e. none has a lexicographically negative distance on the inner loops both accesses are
  jammed into, nor an all-zero one whose destination sits in an earlier sub-block or loop than
  its source (exact, from :func:`analysis.dependences`; MLIR itself does not check);
- ``iter_args`` of ``%i``: each copy continues the chain of the previous one (exact, no
  reassociation), legal when every use of the ``iter_arg`` comes after (or in the same
  sub-block as) the definition of the value it yields. MLIR instead gives each copy its own
  accumulator, initialised with the *initial value* (so ``init * init * ...`` for a product,
  wrong unless the init is the identity), and combines them after the loop; where the chain
  is not possible this implementation refuses.

The pass unroll-jams the outermost loop of every top-level loop nest (MLIR's pass only the
first op of the function when it is a loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from affine_ir import Operation, Value
from affine_ir.dialects.affine import AffineForOp
from analysis import Dependence, constant_trip_count, dependences

from ..errors import TransformError
from ..loop_utils import at_location, defined_in, loop_name, loops_text, top_level_loops, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .unroll import (
    CleanupBoundError,
    check_unrolled_step,
    cleanup_bounds,
    fold_constant_bounds,
    iv_copy,
    promote_single_iteration_materializing_bound,
    split_cleanup_loop,
)

__all__ = ["LoopUnrollAndJam", "UnrollJamResult", "jam_structure", "unroll_jam_by_factor"]

PASS = "affine-loop-unroll-jam"


@dataclass(frozen=True)
class UnrollJamResult:
    """``loop``: the unroll-jammed loop (None when promoted away), ``cleanup``: the cleanup loop
    (None when none is left), ``factor``, ``changed``."""

    loop: AffineForOp | None
    cleanup: AffineForOp | None
    factor: int
    changed: bool = True


# -- structure -------------------------------------------------------------------------------------
def jam_structure(loop: AffineForOp) -> tuple[list[list[Operation]], list[AffineForOp]]:
    """The sub-blocks (lists of consecutive ops, terminators excluded) and the jammed inner loops
    (reached from ``loop`` through ``affine.for`` bodies only), in program order."""
    blocks: list[list[Operation]] = []
    jammed: list[AffineForOp] = []

    def visit(block) -> None:
        run: list[Operation] = []
        for op in block.ops:
            if op.is_terminator:
                continue
            if isinstance(op, AffineForOp):
                if run:
                    blocks.append(run)
                    run = []
                jammed.append(op)
                visit(op.body)
            else:
                run.append(op)
        if run:
            blocks.append(run)

    visit(loop.body)
    return blocks, jammed


def _item_index(block, op: Operation) -> int:
    """The position of ``op``'s item in ``block``: each ``affine.for`` is an item, and so is each
    run of other ops (a sub-block)."""
    item = -1
    prev_loop = True
    for o in block.ops:
        is_loop = isinstance(o, AffineForOp)
        if is_loop or prev_loop:
            item += 1
        prev_loop = is_loop
        if o is op:
            return item
    raise ValueError("op not in block")


def _jam_path(loop: AffineForOp, op: Operation) -> tuple[list[int], list[AffineForOp]]:
    """Item indices from ``loop``'s body down to the sub-block holding ``op``, and the jammed
    loops on the way."""
    chain = [op]
    while chain[-1].parent_op is not loop:
        chain.append(chain[-1].parent_op)
    chain.reverse()
    items: list[int] = []
    loops: list[AffineForOp] = []
    for k, anc in enumerate(chain):
        items.append(_item_index(anc.parent, anc))
        if not isinstance(anc, AffineForOp) or k == len(chain) - 1:
            break
        loops.append(anc)
    return items, loops


# -- legality ----------------------------------------------------------------------------------------
def _refuse(loop: AffineForOp, reason: str, loops=(), dep: Dependence | None = None) -> TransformError:
    return TransformError(PASS, reason, loops=[loop, *loops], dependence=dep)


def _check_inner_bounds(loop: AffineForOp, factor: int) -> None:
    inside = {*loop.walk(), loop}
    for inner in loop.body.walk():
        if not isinstance(inner, AffineForOp):
            continue
        n = inner.lower_bound_map.num_inputs + inner.upper_bound_map.num_inputs
        for v in inner.operands[:n]:
            owner = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op
            if owner is not None and owner in inside:
                raise _refuse(loop, f"cannot unroll-jam {loop_name(loop)} by {factor}: the bounds of inner loop "
                                    f"{loop_name(inner)} depend on {value_name(v)}, defined in "
                                    f"{loop_name(loop)} (its trip count may change from one iteration to the next)",
                              [inner])


def _violation_queries(p: int, reversed_text: bool) -> list[dict[int, tuple[int | None, int | None]]]:
    """Distance constraints (on inner common loops 1..p) of the pairs jamming would reverse."""
    out = []
    for q in range(1, p + 1):
        out.append({**{k: (0, 0) for k in range(1, q)}, q: (None, -1)})
    if reversed_text:
        out.append({k: (0, 0) for k in range(1, p + 1)})
    return out


def _check_dependences(loop: AffineForOp, factor: int) -> None:
    window = (1, (factor - 1) * loop.step)
    for dep in dependences(loop):
        if not dep.carried_at(1):
            continue
        src_items, src_loops = _jam_path(loop, dep.src)
        dst_items, dst_loops = _jam_path(loop, dep.dst)
        p = 0
        while p < min(len(src_loops), len(dst_loops)) and src_loops[p] is dst_loops[p]:
            p += 1
        a, b = src_items[p], dst_items[p]
        for query in _violation_queries(p, b < a):
            if dep.has_pair(1, {0: window, **query}):
                inner = src_loops[:p]
                where = f"jammed into {loops_text(inner)}" if inner else "moved across sub-blocks"
                raise _refuse(loop, f"cannot unroll-jam {loop_name(loop)} by {factor}: the copies {where} would "
                                    f"reverse the dependence {dep}", inner, dep)


def _check_iter_args(loop: AffineForOp, factor: int) -> None:
    term = loop.body.terminator
    for arg, y in zip(loop.iter_args, term.operands):
        if y is arg or y is loop.induction_var or not defined_in(y, loop):
            continue
        if y.owner is loop.body:
            raise _refuse(loop, f"cannot unroll-jam {loop_name(loop)} by {factor}: iter_arg {value_name(arg)} yields "
                                f"the loop-carried value {value_name(y)}")
        def_item = _top_item(loop, y.owner if isinstance(y.owner, Operation) else y.owner.parent_op)
        def_is_loop = isinstance(_top_op(loop, y.owner if isinstance(y.owner, Operation) else y.owner.parent_op),
                                 AffineForOp)
        for use in arg.uses:
            if use.op is term:
                continue
            u = _top_item(loop, use.op)
            if u < def_item or (u == def_item and def_is_loop):
                raise _refuse(loop, f"cannot unroll-jam {loop_name(loop)} by {factor}: iter_arg {value_name(arg)} is "
                                    f"used by {use.op.name}{at_location(use.op)} before the value it yields "
                                    f"({value_name(y)}) is computed in the jammed order; the copies cannot be chained")


def _top_op(loop: AffineForOp, op: Operation) -> Operation:
    while op.parent_op is not loop:
        op = op.parent_op
    return op


def _top_item(loop: AffineForOp, op: Operation) -> int:
    return _item_index(loop.body, _top_op(loop, op))


def check_unroll_jam(loop: AffineForOp, factor: int) -> None:
    """Raise :class:`TransformError` when unroll-jamming ``loop`` by ``factor`` is illegal (see the
    module docstring); nothing is changed."""
    _check_inner_bounds(loop, factor)
    _check_iter_args(loop, factor)
    _check_dependences(loop, factor)


# -- the transformation ---------------------------------------------------------------------------------
def _widen(inner: AffineForOp, factor: int) -> AffineForOp:
    """A copy of ``inner`` with ``factor`` sets of iter_args (the new ones initialised and yielded
    like the first set for now), taking over its body; ``inner`` is erased."""
    n = len(inner.iter_args)
    new = AffineForOp(inner.lower_bound_map, inner.lower_bound_operands, inner.upper_bound_map,
                      inner.upper_bound_operands, inner.step, list(inner.inits) * factor,
                      iv_name=inner.induction_var.name_hint,
                      iter_arg_names=[a.name_hint for a in inner.iter_args] * factor, location=inner.location)
    for key, value in inner.attributes.items():
        if key not in ("lower_bound", "upper_bound", "step"):
            new.attributes[key] = value
    new.regions[0].blocks[0].ops.clear()
    inner.parent.insert_before(inner, new)
    inner.induction_var.replace_all_uses_with(new.induction_var)
    for k in range(n):
        inner.iter_args[k].replace_all_uses_with(new.iter_args[k])
        inner.results[k].replace_all_uses_with(new.results[k])
    term = inner.body.terminator
    for op in list(inner.body.ops):
        op.detach()
        new.body.append(op)
    term.set_operands(list(term.operands) * factor)
    inner.erase()
    return new


def _jam(loop: AffineForOp, factor: int) -> None:
    blocks, jammed = jam_structure(loop)
    step = loop.step
    maps: list[dict[Value, Value]] = [{} for _ in range(factor)]
    widened = []
    for inner in jammed:
        if inner.iter_args:
            n = len(inner.iter_args)
            new = _widen(inner, factor)
            widened.append((new, n))
            for c in range(1, factor):
                for j in range(n):
                    maps[c][new.iter_args[j]] = new.iter_args[c * n + j]
                    maps[c][new.results[j]] = new.results[c * n + j]
    iv = loop.induction_var
    uses_iv = bool(iv.uses)
    term = loop.body.terminator
    yielded = list(term.operands)
    loop.attributes["step"] = step * factor
    last_op = {b[0]: b[-1] for b in blocks}
    for c in range(1, factor):
        for arg, y in zip(loop.iter_args, yielded):
            maps[c][arg] = _chained(loop, maps, c - 1, y, step)
        for sub in blocks:
            anchor = last_op[sub[0]]
            if uses_iv:
                apply = iv_copy(loop, c, step)
                anchor.parent.insert_after(anchor, apply)
                anchor = apply
                maps[c][iv] = apply.result
            for op in sub:
                new_op = op.clone(maps[c])
                anchor.parent.insert_after(anchor, new_op)
                anchor = new_op
            last_op[sub[0]] = anchor
        for new, n in widened:
            cnt = new.lower_bound_map.num_inputs + new.upper_bound_map.num_inputs
            yop = new.body.terminator
            for j in range(n):
                new.set_operand(cnt + c * n + j, _mapped(loop, maps, c, new.operands[cnt + j], new, step))
                yop.set_operand(c * n + j, _mapped(loop, maps, c, yop.operands[j], yop, step))
    term.set_operands([_chained(loop, maps, factor - 1, y, step) for y in yielded])


def _mapped(loop: AffineForOp, maps, c: int, v: Value, before: Operation, step: int) -> Value:
    """Copy ``c``'s value of ``v`` at ``before`` (the IV of ``loop`` gets a fresh affine.apply there)."""
    if v is loop.induction_var and c > 0:
        apply = iv_copy(loop, c, step)
        before.parent.insert_before(before, apply)
        return apply.result
    return maps[c].get(v, v)


def _chained(loop: AffineForOp, maps, c: int, y: Value, step: int) -> Value:
    """The value copy ``c`` yields for ``y`` (what copy ``c + 1`` receives)."""
    if y is loop.induction_var:
        first = loop.body.ops[0]
        return _mapped(loop, maps, c, y, first, step)
    return maps[c].get(y, y)


def unroll_jam_by_factor(loop: AffineForOp, factor: int) -> UnrollJamResult:
    """Unroll ``loop`` by ``factor`` and jam the copies into its inner loops (MLIR's
    ``loopUnrollJamByFactor``; see the module docstring for the structure and legality).

    Guarantees: the result computes what ``loop`` did; a main or cleanup loop left with one
    iteration is promoted; every constant written fits in 64 bits. Raises :class:`TransformError`
    naming the loops and the dependence (or the bound / iter_arg, or a step times ``factor``
    past 64 bits) that forbids it, the IR unchanged::

        affine.for %i = 0 to 8 {                 affine.for %i = 0 to 8 step 2 {
          affine.for %j = 0 to 8 {          ->     affine.for %j = 0 to 8 {
            S(%i, %j)                                S(%i, %j)
          }                                          %i_1 = affine.apply (d0 + 1)(%i)
        }                                            S(%i_1, %j)
                                                   } }
    """
    name = loop_name(loop)
    if not isinstance(factor, int) or factor < 1:
        raise _refuse(loop, f"cannot unroll-jam {name} by {factor}: the factor must be a positive integer")
    if factor == 1:
        promoted = promote_single_iteration_materializing_bound(loop)
        return UnrollJamResult(None if promoted else loop, None, 1, promoted)
    if len(loop.body.ops) == 1:
        return UnrollJamResult(loop, None, factor, False)
    tc = constant_trip_count(loop)
    if tc is not None and tc < factor:
        raise _refuse(loop, f"cannot unroll-jam {name} by {factor}: its trip count {tc} is smaller than the factor "
                                    f"(as MLIR)")
    check_unrolled_step(PASS, loop, factor, "unroll-jam")
    try:
        bounds = cleanup_bounds(loop, factor)
    except CleanupBoundError as e:
        raise _refuse(loop, f"cannot unroll-jam {name} by {factor}: {e}") from None
    check_unroll_jam(loop, factor)
    fold_constant_bounds(loop)
    cleanup = split_cleanup_loop(loop, bounds) if bounds is not None else None
    if cleanup is not None and promote_single_iteration_materializing_bound(cleanup):
        cleanup = None
    _jam(loop, factor)
    main = None if promote_single_iteration_materializing_bound(loop) else loop
    return UnrollJamResult(main, cleanup, factor)


@register_pass
@dataclass(frozen=True)
class LoopUnrollAndJam(Pass):
    """MLIR's ``affine-loop-unroll-jam``: unroll-jam the outermost loop of every top-level loop
    nest by ``unroll-jam-factor``; refused nests are recorded with the reason.

    ``loop-depth=d`` (our addition; MLIR's pass has only the outermost loop) unroll-jams every
    loop at depth ``d`` of each top-level nest instead (0: outermost), e.g. the point loops of
    a tiled band, whose copies jam into the loops below them to form a register tile."""

    name = "affine-loop-unroll-jam"
    summary = "Unroll and jam affine loops"
    unroll_jam_factor: int = option(4, "Use this unroll jam factor for all loops (default 4)")
    loop_depth: int = option(0, "unroll-jam the loops at this depth of each top-level nest (0: outermost)")

    def run_on_function(self, func, ctx: PassContext) -> None:
        for loop in [x for nest in top_level_loops(func) for x in _loops_at_depth(nest, self.loop_depth)]:
            _, jammed = jam_structure(loop)
            try:
                result = unroll_jam_by_factor(loop, self.unroll_jam_factor)
            except TransformError as e:
                ctx.refused(loop, e)
                continue
            if result.changed:
                into = f" into {loops_text(jammed)}" if jammed else ""
                extra = " with a cleanup loop" if result.cleanup is not None else ""
                ctx.applied(loop, f"unroll-jammed {loop_name(loop)} by {self.unroll_jam_factor}{into}{extra}")


def _loops_at_depth(nest: AffineForOp, depth: int) -> list[AffineForOp]:
    """The ``affine.for`` ops at ``depth`` below ``nest`` (``nest`` itself at depth 0), in program order."""
    level = [nest]
    for _ in range(depth):
        level = [op for loop in level for op in loop.walk() if isinstance(op, AffineForOp)
                 and op.parent_op is not None and _for_parent(op) is loop]
    return level


def _for_parent(op: Operation) -> AffineForOp | None:
    """The closest enclosing ``affine.for`` of ``op``."""
    p = op.parent_op
    while p is not None and not isinstance(p, AffineForOp):
        p = p.parent_op
    return p
