"""Loop permutation (interchange) of a perfectly nested band: ``affine-loop-permute``.

The permutation has MLIR's meaning (``permuteLoops`` in ``LoopUtils.cpp`` and the test pass
``-test-loop-permutation="permutation-map=..."``): ``permutation[k]`` is the *new position*
of the band's loop ``k`` (outermost first). On the band ``(%i, %j, %k)``:

- ``(1, 2, 0)``: ``%i`` goes to position 1, ``%j`` to 2, ``%k`` to 0 -> ``(%k, %i, %j)``;
- ``(2, 0, 1)``: ``%i`` goes to position 2, ``%j`` to 0, ``%k`` to 1 -> ``(%j, %k, %i)``;
- ``(1, 0)`` on ``(%i, %j)`` is the interchange ``(%j, %i)``.

Legality is exact: the permutation is applied only when every dependence carried inside
the band keeps a lexicographically positive distance vector once its components are
reordered as the loops are (:func:`analysis.permutation_violation`, isl; the distance
ranges decide first when they can). The loops must be perfectly nested, only the innermost
loop may have ``iter_args`` and it must stay innermost, and ops of unknown effects
(unregistered ops, calls) are not reordered.

Non-rectangular bands (a bound using the IV of a loop that moves inside it, such as
``%j = 0 to %i + 1``) get new bounds for the new order (:mod:`.permute_bounds`,
Fourier-Motzkin): ``(%i, %j) -> (%j, %i)`` gives ``%j = 0 to 8``, ``%i = max(0, %j) to 8``.

Differences from MLIR: its test pass permutes without any check unless ``check-validity=1``
(and then refuses every nest with ``iter_args``, and checks dependences with the distance
bounds only); it never rewrites bounds, so a non-rectangular permutation there gives
invalid IR. Ours always checks, exactly, names what forbids a refused permutation, keeps
an innermost ``iter_args`` loop innermost, and rewrites bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.traits import RecursiveMemoryEffects

from ..errors import TransformError
from ..loop_utils import loop_name, loops_text, outermost_bands
from ..pass_base import Pass, PassContext, option, register_pass
from .permute_bounds import Bounds, BoundsError, permuted_bounds

__all__ = ["LoopPermute", "check_permutation", "interchange_loops", "permute_loops", "permuted_order"]

PASS = "affine-loop-permute"


def permuted_order(loops: Sequence[Operation], permutation: Sequence[int]) -> list[Operation]:
    """The loops in their order after ``permutation`` (``permutation[k]``: new position of loop ``k``)."""
    out: list[Operation] = [None] * len(loops)  # type: ignore[list-item]
    for k, p in enumerate(permutation):
        out[p] = loops[k]
    return out


def permute_loops(band: Sequence[AffineForOp], permutation: Sequence[int]) -> list[AffineForOp]:
    """Permute the perfectly nested ``band`` (outermost first): loop ``k`` moves to position
    ``permutation[k]`` (MLIR's convention). Returns the loops in their new order, outermost first.

    Guarantees: the result computes what the band computed (checked exactly against the
    dependences, see the module docstring) and the loops are the same ops (IVs, bounds,
    locations kept), only reordered; on an illegal request a :class:`TransformError` names
    the loops and the violated dependence, and the IR is unchanged.

    Before (``permutation=(1, 0)``)::

        affine.for %i = 0 to 8 {
          affine.for %j = 0 to 16 {
            affine.store %x, %A[%i, %j] : memref<8x16xf32>
          }
        }

    After::

        affine.for %j = 0 to 16 {
          affine.for %i = 0 to 8 {
            affine.store %x, %A[%i, %j] : memref<8x16xf32>
          }
        }
    """
    band = list(band)
    bounds = _plan(band, permutation)
    if list(permutation) != list(range(len(band))):
        _apply_permutation(band, permutation, bounds)
    return permuted_order(band, permutation)


def interchange_loops(outer: AffineForOp, inner: AffineForOp) -> list[AffineForOp]:
    """Interchange ``outer`` and ``inner`` (``inner`` the only op in ``outer``'s body): the
    permutation ``(1, 0)`` of the band ``(outer, inner)``, with its checks. Returns ``[inner, outer]``.

    Before: ``affine.for %i { affine.for %j { S(%i, %j) } }``; after:
    ``affine.for %j { affine.for %i { S(%i, %j) } }``.
    """
    return permute_loops([outer, inner], (1, 0))


def check_permutation(band: Sequence[AffineForOp], permutation: Sequence[int],
                      deps: Sequence[analysis.Dependence] | None = None) -> None:
    """Raise :class:`TransformError` when permuting ``band`` by ``permutation`` is not possible
    or not legal (see the module docstring); return None when it is. ``deps``: the dependences
    under ``band[0]`` when already computed."""
    _plan(band, permutation, deps)


def _plan(band: Sequence[AffineForOp], permutation: Sequence[int],
          deps: Sequence[analysis.Dependence] | None = None) -> dict[int, Bounds]:
    """Check the request (raise TransformError) and return the loops' new bounds (by position)."""
    band = list(band)
    n = len(band)
    if sorted(permutation) != list(range(n)):
        raise TransformError(PASS, f"{tuple(permutation)} is not a permutation of the {n} loops "
                             f"{loops_text(band)}", loops=band)
    if n == 0 or list(permutation) == list(range(n)):
        return {}
    new = permuted_order(band, permutation)
    what = f"cannot permute {loops_text(band)} to {loops_text(new)}"
    _check_structure(band, permutation, what)
    try:
        bounds = permuted_bounds(band, permutation)
    except BoundsError as e:
        raise TransformError(PASS, f"{what}: cannot rewrite the bounds of the non-rectangular nest: {e}",
                             loops=band) from None
    _check_dependences(band, permutation, what, deps)
    return bounds


def _check_structure(band: list[AffineForOp], permutation: Sequence[int], what: str) -> None:
    for outer, inner in zip(band, band[1:]):
        if not isinstance(outer, AffineForOp) or [o for o in outer.body.ops if not o.is_terminator] != [inner]:
            raise TransformError(PASS, f"{what}: the loops are not perfectly nested ({loop_name(outer)} holds more "
                                 f"than {loop_name(inner)})", loops=band)
    if not isinstance(band[-1], AffineForOp):
        raise TransformError(PASS, f"{what}: {band[-1].name} is not an affine.for", loops=band)
    n = len(band)
    for k, loop in enumerate(band):
        if loop.iter_args and (k != n - 1 or permutation[k] != n - 1):
            where = "is not the innermost loop" if k != n - 1 else "would not stay innermost"
            raise TransformError(PASS, f"{what}: {loop_name(loop)} has iter_args and {where}", loops=band)
    unknown = next((o for o in band[0].walk() if _has_unknown_effects(o)), None)
    if unknown is not None:
        where = f" at {unknown.location}" if unknown.location else ""
        raise TransformError(PASS, f"{what}: '{unknown.name}'{where} has unknown side effects", loops=band)


def _has_unknown_effects(op: Operation) -> bool:
    """``op`` itself (not an op in its regions) may touch any memory: a call, an unregistered op..."""
    return not op.has_trait(RecursiveMemoryEffects) and op.memory_effects() is None


def _check_dependences(band: list[AffineForOp], permutation: Sequence[int], what: str,
                       deps: Sequence[analysis.Dependence] | None) -> None:
    n = len(band)
    for dep in analysis.dependences(band[0]) if deps is None else deps:
        if dep.kind == "RAR" or not any(d <= n for d in dep.depths) or _ranges_keep_order(dep, permutation):
            continue
        witness = analysis.permutation_violation(dep, permutation)
        if witness is not None:
            after = tuple(permuted_order(list(witness), permutation))
            raise TransformError(PASS, f"{what}: {dep}: the pair at distance {_vec(witness)} would run in "
                                 f"reverse order, at distance {_vec(after)}", loops=band, dependence=dep)


def _ranges_keep_order(dep: analysis.Dependence, permutation: Sequence[int]) -> bool:
    """True when the distance ranges alone prove that every pair carried in the band stays
    ordered (every box vector, permuted, starts with a positive or only non-negative components)."""
    n = len(permutation)
    order = permuted_order(list(range(n)), permutation)
    for depth, comps in zip(dep.depths, dep.components):
        if depth > n:
            continue
        for k in order:
            lo = comps[k][0]
            if lo is None or lo < 0:
                return False
            if lo > 0:
                break
    return True


def _vec(v: Sequence[int]) -> str:
    return "(" + ", ".join(str(x) for x in v) + ")"


def _apply_permutation(band: list[AffineForOp], permutation: Sequence[int],
                       bounds: dict[int, Bounds] | None = None) -> None:
    """Reorder the perfectly nested ``band`` without any dependence check (the loops are moved,
    not copied), giving the loops in ``bounds`` (default: as computed) their new bounds."""
    if bounds is None:
        bounds = permuted_bounds(band, permutation)
    for k, (lower, lower_operands, upper, upper_operands) in bounds.items():
        band[k].set_bounds(lower, lower_operands, upper, upper_operands)
    new = permuted_order(band, permutation)
    innermost_ops: list[Operation] = []
    if new[-1] is not band[-1]:
        innermost_ops = [o for o in band[-1].body.ops if not o.is_terminator]
        for o in innermost_ops:
            o.detach()
    parent = band[0].parent
    position = parent.index_of(band[0])
    for loop in reversed(band):
        loop.detach()
    parent.insert(position, new[0])
    for outer, inner in zip(new, new[1:]):
        outer.body.insert(0, inner)
    body = new[-1].body
    for o in innermost_ops:
        body.insert_before(body.terminator, o)


@register_pass
@dataclass(frozen=True)
class LoopPermute(Pass):
    """Permute the outermost ``len(permutation)`` loops of every outermost perfect band that has
    at least that many loops (MLIR's ``-test-loop-permutation="permutation-map=..."``, with the
    legality check always on); refused bands are recorded with the reason."""

    name = "affine-loop-permute"
    summary = "Permute perfectly nested affine loops (permutation[k] = new position of loop k)"
    permutation: tuple[int, ...] = option((), "new position of each loop of the band, outermost first "
                                              "(MLIR's permutation-map: 1,2,0 turns (i, j, k) into (k, i, j))")
    auto: bool = option(False, "choose the order of each band: the legal one whose innermost loop has the most "
                               "unit-stride and invariant accesses and carries no dependence (for vectorization)")

    def __post_init__(self) -> None:
        perm = tuple(self.permutation)
        if sorted(perm) != list(range(len(perm))):
            raise ValueError(f"permutation {','.join(map(str, perm))} is not a permutation of 0..{len(perm) - 1}")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if self.auto:
            self._choose(func, ctx)
            return
        n = len(self.permutation)
        if n < 2:
            return
        for band in outermost_bands(func):
            if len(band) < n:
                ctx.note(band[0], f"band {loops_text(band)} has {len(band)} loop(s), fewer than the permutation's {n}")
                continue
            sub = band[:n]
            try:
                new = permute_loops(sub, self.permutation)
            except TransformError as e:
                ctx.refused(sub[0], e)
                continue
            if new != sub:
                ctx.applied(sub[0], f"permuted {loops_text(sub)} to {loops_text(new)}")

    def _choose(self, func: FuncOp, ctx: PassContext) -> None:
        from .permute_choice import choose_permutation

        for band in outermost_bands(func):
            choice = choose_permutation(band)
            if choice is None:
                if len(band) > 1:
                    ctx.note(band[0], f"{loops_text(band)} kept: its innermost loop is the best legal choice")
                continue
            perm, why = choice
            before = loops_text(band)
            new = permute_loops(band, perm)
            ctx.applied(new[0], f"permuted {before} to {loops_text(new)}: {why}")
