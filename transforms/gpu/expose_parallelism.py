"""``gpu-expose-parallelism``: give each nest whose outermost loop carries a dependence a parallel
outermost loop where distribution and interchange can (issue 17: column reductions).

``gpu-map`` maps the outermost parallel band of each nest. A nest whose outermost loop carries
a dependence gets none, and runs on one thread unless nests inside it are parallel (then the
loop stays on the host as a loop of launches, one launch per iteration). For each such top-level
nest this pass

1. distributes it (``affine-loop-distribute``, inner loops first): statements that do not depend
   on each other in a cycle get loops of their own, so the parts that are parallel become nests
   of their own (atax's ``tmp = A x`` rows apart from its ``y += A^T tmp`` columns);
2. for each resulting nest whose outermost loop still carries a dependence: moves the outermost
   loop of its perfect band that is parallel there to the front when the permutation is legal
   (exact dependences) and the loop is parallel as the outermost one (``y[j] += A[i, j] * t[i]``
   over ``(i, j)`` becomes ``(j, i)``: one thread per ``j``, each summing over ``i`` in order,
   which keeps the sum's order: exact).

For each top-level nest whose outermost loop is parallel but whose perfect band has fewer than 2
parallel loops, so is not *contraction-shaped* (at least 2 parallel loops around at least one
loop carrying a dependence: what ``gpu-schedule`` tiles, and ``gpu-map`` maps as a 2-d grid of threads each running the
reduction), the pass also

3. distributes it (inner loops first) and, in each resulting nest, sinks the loops of its
   perfect band that carry a dependence below the parallel ones (order otherwise kept, legal by
   the exact dependences): PolyBench's gemm ``for i { for j: C *= beta; for k { for j: C += A * B
   } }`` becomes ``for i, j: C *= beta`` and ``for i, j { for k: C += A * B }``. The rule: this
   is kept only when some resulting nest is contraction-shaped; otherwise the nest is put back as
   it was (so fused nests whose parts would gain no band, such as softmax rows, stay fused;
   buffers fusion made private to the loop body keep their users in one nest anyway).

Everything else is left as it was. The program computes exactly what it computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import analysis
from affine_ir import FuncOp
from affine_ir.dialects.affine import AffineForOp
from affine_ir.traits import IsTerminator

from ..errors import TransformError
from ..loop_utils import loop_name, loops_text
from ..loops.distribute import distribute_loop
from ..loops.permute import permute_loops
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["ExposeParallelism", "distribute_for_bands", "expose_parallelism", "is_contraction_shaped",
           "parallel_to_front", "sink_sequential_loops"]

PASS = "gpu-expose-parallelism"


def _parallel(loop: AffineForOp) -> bool:
    try:
        return analysis.is_parallel(loop)
    except Exception:  # noqa: BLE001  (an analysis limit: not parallel)
        return False


def parallel_to_front(nest: AffineForOp) -> AffineForOp | None:
    """Move the outermost loop of ``nest``'s perfect band that is parallel where it stands to the
    front (the others keeping their order), the first such move that is legal; returns the new
    outermost loop when it is parallel there, else None (nothing moved, or a legal move left a
    loop that is not parallel at the front)."""
    band = analysis.perfect_band(nest)
    for k in range(1, len(band)):
        if band[k].iter_args or not _parallel(band[k]):
            continue
        perm = [j + 1 if j < k else j for j in range(len(band))]
        perm[k] = 0
        try:
            new = permute_loops(band, perm)  # checks legality; refused: the IR is unchanged
        except TransformError:
            continue
        # kept even when the front loop is not parallel there (legal; the way back may not be
        # writable for non-rectangular bounds)
        return new[0] if _parallel(new[0]) else None
    return None


def _parallel_prefix(band: list[AffineForOp]) -> int:
    n = 0
    for lp in band:
        if lp.iter_args or not _parallel(lp):
            break
        n += 1
    return n


def is_contraction_shaped(nest: AffineForOp) -> bool:
    """Whether ``nest``'s perfect band starts with at least 2 parallel loops and goes on with a
    loop that is not parallel (a reduction inside a 2-d parallel band, as a matmul)."""
    band = analysis.perfect_band(nest)
    n = _parallel_prefix(band)
    return n >= 2 and len(band) > n


def sink_sequential_loops(nest: AffineForOp) -> AffineForOp:
    """Permute ``nest``'s perfect band so its loops parallel where they stand come first and the
    others after (each group in its order), when that is legal (exact dependences) and every
    moved-up loop is still parallel afterwards; returns the (new) outermost loop, ``nest`` when
    nothing moved."""
    band = analysis.perfect_band(nest)
    if any(lp.iter_args for lp in band):
        return nest
    par = [k for k, lp in enumerate(band) if _parallel(lp)]
    order = par + [k for k in range(len(band)) if k not in par]
    if order == list(range(len(band))):
        return nest
    perm = [order.index(k) for k in range(len(band))]
    saved = nest.clone()  # (permuting back may be refused: new bounds with floordiv of a band loop)
    try:
        new = permute_loops(band, perm)  # refused: the IR is unchanged
    except TransformError:
        return nest
    if _parallel_prefix(new) < len(par):  # legal but the parallel loops did not stay parallel: back
        new[0].parent.insert_before(new[0], saved)
        new[0].erase()
        return saved
    return new[0]


def distribute_for_bands(nest: AffineForOp) -> list[AffineForOp] | None:
    """Step 3 of the module docstring for a top-level ``nest`` whose outermost loop is parallel:
    the resulting nests when some is contraction-shaped, else None with the IR as it was."""
    band = analysis.perfect_band(nest)
    if nest.iter_args or _parallel_prefix(band) >= 2:  # a 2-d parallel band already (a fused init and k loop
        return None                                   # inside is what gpu-schedule tiles after scalrep)
    if len([op for op in band[-1].body.ops if not op.has_trait(IsTerminator)]) < 2:
        return None
    keep = nest.clone()
    try:
        nests = distribute_loop(nest, recursive=True)
    except TransformError:
        return None
    nests = [sink_sequential_loops(x) for x in nests]
    if len(nests) > 1 and any(is_contraction_shaped(x) for x in nests):
        return nests
    nests[0].parent.insert_before(nests[0], keep)  # no band gained: the nest as it was
    for x in nests:
        x.erase()
    return None


def expose_parallelism(func: FuncOp, ctx: PassContext | None = None) -> int:
    """Apply the pass to every top-level nest of ``func`` whose outermost loop is not parallel
    (module docstring); returns how many nests were distributed or had a loop moved to the front."""
    changed = 0
    for nest in [x for x in func.body.ops if isinstance(x, AffineForOp)]:
        if not nest.iter_args and _parallel(nest):
            before = loops_text(analysis.perfect_band(nest))
            nests = distribute_for_bands(nest)
            if nests is not None:
                changed += 1
                if ctx is not None:
                    bands = ", ".join(loops_text(analysis.perfect_band(x)) for x in nests)
                    ctx.applied(nests[0], f"distributed {before} into {len(nests)} nests (bands {bands}) and sank "
                                          f"the loops carrying a dependence inside: a 2-d parallel band around a "
                                          f"reduction for gpu-schedule/gpu-map")
            continue
        if nest.iter_args:
            continue
        try:
            nests = distribute_loop(nest, recursive=True)
        except TransformError:
            continue
        moved = 0
        for x in nests:
            front = None if _parallel(x) else parallel_to_front(x)
            if front is not None:
                moved += 1
                if ctx is not None:
                    ctx.applied(front, f"moved {loop_name(front)} to the front of "
                                       f"{loops_text(analysis.perfect_band(front))}: it is parallel there")
        if len(nests) > 1 and ctx is not None:
            ctx.applied(nests[0], f"distributed {loop_name(nests[0])} into {len(nests)} nests")
        changed += len(nests) > 1 or moved > 0
    return changed


@register_pass
@dataclass(frozen=True)
class ExposeParallelism(Pass):
    """``gpu-expose-parallelism``: see the module docstring."""

    name = PASS
    summary = "Distribute and interchange nests whose outermost loop carries a dependence (for gpu-map)"

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if not func.is_declaration:
            expose_parallelism(func, ctx)
