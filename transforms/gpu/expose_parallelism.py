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

Everything else is left as it was. The program computes exactly what it computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import analysis
from affine_ir import FuncOp
from affine_ir.dialects.affine import AffineForOp

from ..errors import TransformError
from ..loop_utils import loop_name, loops_text
from ..loops.distribute import distribute_loop
from ..loops.permute import permute_loops
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["ExposeParallelism", "expose_parallelism", "parallel_to_front"]

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


def expose_parallelism(func: FuncOp, ctx: PassContext | None = None) -> int:
    """Apply the pass to every top-level nest of ``func`` whose outermost loop is not parallel
    (module docstring); returns how many nests were distributed or had a loop moved to the front."""
    changed = 0
    for nest in [x for x in func.body.ops if isinstance(x, AffineForOp)]:
        if nest.iter_args or _parallel(nest):
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
