"""Implicit-GEMM convolutions on warpgroup MMA (``gpu-map-mma{wgmma=true}``, issue 19): an NHWC convolution with
HWCF filters (``air.library.conv2d(..., layout="NHWC")``, linalg's ``conv_2d_nhwc_hwcf``) is the contraction of the
output pixels ``(n, h, w)`` (rows) and filters ``f`` (columns) over the window ``(kh, kw, c)`` (k), whose A operand
is the input window: no packed copy of it exists anywhere -- each k step's A tile is one TMA load of a 4-D box of
the input, ``bn x bh x bw`` pixels by 64 channels, shifted by the step's ``(kh, kw)``; the zero padding is TMA's
fill of what lies outside the tensor (coordinates may be negative). So a block tile's ``BM = bn * bh * bw`` rows
are a ``bn x bh x bw`` block of output pixels (:meth:`ConvGeometry.with_box` picks the block wasting the fewest
rows at the edges), and its bytes in shared memory are the ``BM x 64`` K-major tile wgmma reads (128-byte
swizzle, the box's innermost dimension 64 channels). The filter's k rows ``(kh, kw, c)`` are contiguous, F
fastest: an MN-major B loaded as ``1 x 1 x 64 x 64`` boxes (64 channels of one ``(kh, kw)`` by 64 filters).

What is taken (:func:`plan_conv`): the input read ``input[n, h + kh - ph, w + kw - pw, c]`` (stride and dilation
1) of a 4-D memref of static shape, inside no guard or the guard of exactly its bounds (the zero padding), the
filter read ``filter[kh, kw, c, f]``, ``C`` a multiple of 64 (a k step within one ``(kh, kw)``), 16-bit
elements, ``F`` rows of 16 bytes. Anything else keeps the ``mma.sync`` path (its trace says why).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from affine_ir import AffineExpr, Value
from affine_ir.types import MemRefType

from .map_mma_plan import MmaPlan

__all__ = ["ConvGeometry", "plan_conv"]

CHANNELS = 64  # one 128-byte swizzled row of 16-bit channels per k step
MAX_BOX = 256  # TMA's largest box dimension


@dataclass(frozen=True)
class ConvGeometry:
    """An NHWC convolution's sizes for its implicit GEMM: ``N`` images of ``OH x OW`` output pixels, a ``KH x KW``
    window over ``C`` channels padded by ``(ph, pw)``; ``box``: the ``(bn, bh, bw)`` block of output pixels of a
    block tile."""

    images: int
    out: tuple[int, int]
    window: tuple[int, int]
    channels: int
    pad: tuple[int, int]
    row_roles: tuple[int, ...] = (0, 1, 2)  # per row loop of the contraction: the pixel coordinate (n 0, h 1, w 2)
    box: tuple[int, int, int] = (1, 1, 1)

    @property
    def counts(self) -> tuple[int, int, int]:
        """Pixel blocks along the images, the output rows and the output columns."""
        bn, bh, bw = self.box
        return -(-self.images // bn), -(-self.out[0] // bh), -(-self.out[1] // bw)

    @property
    def tiles(self) -> int:
        tn, th, tw = self.counts
        return tn * th * tw

    @property
    def steps(self) -> int:
        """k steps: one per ``(kh, kw)`` and 64 channels."""
        return self.window[0] * self.window[1] * (self.channels // CHANNELS)

    def with_box(self, rows: int) -> ConvGeometry | None:
        """The geometry with the ``(bn, bh, bw)`` (powers of two, ``bn * bh * bw = rows``, 1 along a coordinate of
        size 1: it has no loop, so no guard) whose tiles cover the fewest pixels past the edges (ties: the widest
        ``bw``, then the tallest ``bh``: longer contiguous runs); None when there is none (``rows`` not a power
        of two)."""
        best = None
        sizes = (self.images, *self.out)
        for bw in _powers(rows):
            for bh in _powers(rows // bw):
                bn = rows // (bw * bh)
                box = (bn, bh, bw)
                if bn * bh * bw != rows or max(box) > MAX_BOX or any(b > 1 for b, n in zip(box, sizes) if n == 1):
                    continue
                g = replace(self, box=(bn, bh, bw))
                key = (g.tiles * rows, -bw, -bh)
                if best is None or key < best[0]:
                    best = (key, g)
        return best[1] if best else None

    def describe(self) -> str:
        bn, bh, bw = self.box
        return (f"implicit GEMM: each k step's A tile one TMA box of {bn}x{bh}x{bw} output pixels' input window by "
                f"{CHANNELS} channels (padding: TMA's zero fill), {self.tiles} pixel blocks")


def _powers(limit: int) -> list[int]:
    out, p = [], 1
    while p <= limit:
        out.append(p)
        p *= 2
    return out


def _over(ld, ivs: list[Value]) -> list[AffineExpr] | None:
    """The subscripts of the affine read ``ld`` as expressions of ``ivs`` (dimension ``k``: ``ivs[k]``), or None
    when it reads another value or a symbol."""
    if ld.map.num_symbols or any(v not in ivs for v in ld.indices):
        return None
    dims = [AffineExpr.dim(ivs.index(v)) for v in ld.indices]
    return [e.replace(dims) for e in ld.map.results]


def plan_conv(plan: MmaPlan) -> tuple[Value, Value, ConvGeometry] | str:
    """(the input, the filter, the geometry) of the NHWC convolution ``plan`` computes (see the module docstring),
    or why it is not one the implicit GEMM takes. Loops of one trip (removed by canonicalization: a 1x1 window, one
    image) are read as 0."""
    c = plan.c
    if len(c.cols) != 1 or c.batch or any(c.lows.get(lp, 0) for lp in (*c.rows, *c.red_loops, *c.cols)):
        return "not an NHWC convolution: one filter loop, no batch loop, loops from 0"
    if plan.b.guard is not None:
        return "the filter's read is guarded (only the input's zero padding is TMA's fill)"
    inp, flt = plan.a.load.memref, plan.b.load.memref
    for t, what in ((inp.type, "input"), (flt.type, "filter")):
        if not isinstance(t, MemRefType) or t.rank != 4 or None in t.shape or t.element_type.width != 16:
            return f"not an NHWC convolution: the {what} is not a 4-D memref of static shape of 16-bit elements"
    loops = [*c.rows, *c.red_loops, *c.cols]
    ivs = [lp.induction_var for lp in loops]
    roles = _roles(plan, ivs, len(c.rows), len(c.red_loops))
    if isinstance(roles, str):
        return roles
    dims, pad = roles
    trips = [c.trips[lp] for lp in loops]
    size = {role: (trips[d] if d is not None else 1) for role, d in dims.items()}
    N, H, W, C = inp.type.shape
    KH, KW, C2, F = flt.type.shape
    if (size["n"], size["kh"], size["kw"], size["c"], size["f"]) != (N, KH, KW, C, F) or C2 != C:
        return "the convolution's loops do not run over its tensors' whole sizes"
    if C % CHANNELS:
        return f"{C} channels: a multiple of {CHANNELS} (a k step of 64 channels within one (kh, kw))"
    if (F * 2) % 16:
        return f"{F} filters: the filter's rows are not a multiple of 16 bytes (TMA's strides)"
    subs = _over(plan.a.load, ivs)
    why = _padding_guard(plan.a.guard, ivs, {subs[1]: H, subs[2]: W}, trips)
    if why:
        return why
    roles = tuple(("n", "h", "w").index(next(r for r in ("n", "h", "w") if dims[r] == k)) for k in range(len(c.rows)))
    return inp, flt, ConvGeometry(N, (size["h"], size["w"]), (KH, KW), C, pad, roles)


def _roles(plan: MmaPlan, ivs: list[Value], rows: int, reds: int) -> tuple[dict, tuple[int, int]] | str:
    """Which loop (its position in ``ivs``: the rows, the reduction loops, the filter loop) is each of ``n, h, w``,
    ``kh, kw, c`` and ``f`` (None: a loop of one trip), and the padding ``(ph, pw)``: from the filter read
    ``[kh, kw, c, f]`` and the input read ``[n, h + kh - ph, w + kw - pw, c]``; or why they are not those."""
    sb, sa = _over(plan.b.load, ivs), _over(plan.a.load, ivs)
    if sb is None or sa is None or len(sb) != 4 or len(sa) != 4:
        return "not an NHWC convolution: its reads are not of the loops' values"
    red = range(rows, rows + reds)

    def single(e: AffineExpr, allowed) -> int | None | str:
        """The loop ``e`` is (None: the constant 0), or "" when it is something else."""
        if e == AffineExpr.constant(0):
            return None
        used = e.used_dims()
        if len(used) == 1 and e == AffineExpr.dim(min(used)) and min(used) in allowed:
            return min(used)
        return ""

    dims = {"kh": single(sb[0], red), "kw": single(sb[1], red), "c": single(sb[2], red),
            "f": single(sb[3], [len(ivs) - 1])}
    if "" in dims.values() or dims["c"] is None or dims["f"] is None:
        return "the filter is not read at (kh, kw, c, f) (HWCF)"
    if single(sa[3], red) != dims["c"]:
        return "the input is not read at (n, ., ., c) with the filter's c"
    dims["n"] = single(sa[0], range(rows))
    pad = []
    for role, sub, window in (("h", sa[1], dims["kh"]), ("w", sa[2], dims["kw"])):
        rest = sub - (AffineExpr.dim(window) if window is not None else 0)
        shift = AffineExpr.constant(rest.constant_term)
        dims[role] = single(rest - shift, range(rows))
        pad.append(-rest.constant_term)
        if dims[role] == "" or rest.constant_term > 0:
            return "the input is not read at (n, h + kh - ph, w + kw - pw, c): strided or dilated windows are not " \
                   "built on warpgroup MMA yet"
    if dims["n"] == "":
        return "the input is not read at (n, ., ., c)"
    used = [d for d in dims.values() if d is not None]
    if sorted(used) != list(range(len(ivs))):
        return "not an NHWC convolution: a loop is not one of (n, h, w, kh, kw, c, f), or is two of them"
    return dims, (pad[0], pad[1])


def _padding_guard(guard, ivs: list[Value], bounds: dict, trips: list[int]) -> str | None:
    """Why the guard around the input read is not its zero padding (TMA's fill: exactly the read's bounds), or
    None. A bound the loops never cross may be left out of the guard."""
    present = set()
    if guard is not None:
        cond = guard.condition
        if cond.num_symbols or any(v not in ivs for v in guard.operands):
            return "the input's guard is not over the convolution's loops"
        dims = [AffineExpr.dim(ivs.index(v)) for v in guard.operands]
        for e, eq in zip(cond.constraints, cond.eq_flags):
            present.add((e.replace(dims), eq))
    wanted = set()
    for sub, size in bounds.items():
        lo, hi = _range(sub, trips)
        wanted |= {(sub, False)} if lo < 0 else set()
        wanted |= {(size - 1 - sub, False)} if hi > size - 1 else set()
    allowed = {(sub, False) for sub in bounds} | {(size - 1 - sub, False) for sub, size in bounds.items()}
    if not wanted <= present or not present <= allowed:
        return "the input's guard is not its zero padding (exactly the read's bounds), which TMA's fill gives"
    return None


def _range(e: AffineExpr, trips: list[int]) -> tuple[int, int]:
    """The least and greatest values of ``e`` (linear, over d0.. with ranges ``0 .. trips[k] - 1``)."""
    lo = hi = e.constant_term
    for k in e.used_dims():
        coeff = e.coefficient_of_dim(k)
        lo += min(0, coeff * (trips[k] - 1))
        hi += max(0, coeff * (trips[k] - 1))
    return lo, hi
