"""The constant bounding box of a loop band's iteration domain, and whether groups of its loops
fill their part of the box (exact, isl).

A triangular band (``for i = 0 to 30 { for j = 0 to i + 1 }``) has the box ``[0, 30) x [0, 30)``;
a schedule that runs the whole box and guards its work with the loops' bounds computes what the
band computes. Reads done for a point of the box outside the domain are safe when they use only
loops whose *projection* of the domain is their whole box: every such value of those loops is
then reached by some iteration of the band (``i`` and ``j`` each run over ``[0, 30)`` above).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import islpy as isl

from affine_ir.dialects.affine import AffineForOp

from .isl_bridge import Scop, UnsupportedError, is_scop_root, op_domain

__all__ = ["BandBox", "band_box"]


@dataclass(frozen=True)
class BandBox:
    """Per loop of the band (outermost first) the least and one past the greatest value its IV
    takes in the band's domain (constants, for every value of the symbols)."""

    lows: tuple[int, ...]
    highs: tuple[int, ...]
    _domain: object  # the isl set of the band's iterations (dims in band order)

    def fills(self, loops: Sequence[int]) -> bool:
        """Whether the domain projected onto the band loops at positions ``loops`` is their
        whole box: every combination of their values in the box is reached by an iteration."""
        keep = set(loops)
        dom = self._domain
        for k in reversed(range(len(self.lows))):
            if k not in keep:
                dom = dom.project_out(isl.dim_type.set, k, 1)
        kept = sorted(keep)
        dims = ", ".join(f"i{k}" for k in kept)
        cons = " and ".join(f"{self.lows[k]} <= i{k} < {self.highs[k]}" for k in kept) or "true"
        box = isl.Set(f"{{ [{dims}] : {cons} }}")
        box = box.align_params(dom.get_space().params())
        return dom.reset_tuple_id().is_equal(box)


def band_box(band: Sequence[AffineForOp]) -> BandBox | None:
    """The constant bounding box of ``band`` (a perfect band, outermost first), or None when a
    bound is not affine, the box depends on symbols, or the domain is empty."""
    root = band[0]
    if not is_scop_root(root):
        return None
    try:
        dom = op_domain(Scop(root), band[-1], "L", include_self=True)
    except UnsupportedError:
        return None
    if dom.is_empty():
        return None
    lows, highs = [], []
    for k in range(len(band)):
        lo, hi = dom.dim_min_val(k), dom.dim_max_val(k)
        if not (lo.is_int() and hi.is_int()):
            return None
        lows.append(lo.to_python())
        highs.append(hi.to_python() + 1)
    return BandBox(tuple(lows), tuple(highs), dom)
