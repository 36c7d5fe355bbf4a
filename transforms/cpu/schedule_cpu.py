"""``cpu-schedule``: schedule each loop nest for the host CPU (stage S3 of the CPU pipeline).

The decisions come from the target description (:func:`analysis.targets.host_cpu`: vector
width, vector registers, caches) and the cost model (:func:`analysis.rank_tile_sizes`); there
is no per-op schedule. For every top-level ``affine.for`` nest:

1. **Register tile** (a nest with a reduction: matmul, MLP, convolution). The nest is a
   perfect band of parallel loops whose innermost body holds one loop (the reduction, its
   value carried in ``iter_args`` -- what ``affine-scalrep`` makes of ``C[i, j] += ...``) and
   point-wise ops. Two band loops are chosen: ``v``, along which every access of the nest is
   contiguous or invariant (it is vectorized), and ``r``, along which some load is invariant
   (its unroll-and-jam reuses that load from a register). The band is permuted to put
   ``r, v`` innermost, tiled for the caches with the sizes the cost model ranks fastest among
   multiples of the register tile that divide the trip counts, ``r``'s point loop is
   unroll-jammed by ``R`` and ``v``'s is vectorized by ``W`` lanes: the reduction loop then
   accumulates an ``R x W`` block in ``R * W / lanes`` vector registers, reading one broadcast
   per row and ``W / lanes`` vectors per iteration. ``R`` and ``W`` are the largest tile with at
   most 16 accumulators that fits the vector registers (4 x 64 f32 lanes on AVX-512).
2. **Otherwise** (element-wise chains, row reductions such as softmax and layer norm): a
   perfect band whose innermost loop has no contiguous access is permuted (when legal) to put
   the loop with the most contiguous accesses innermost; then every innermost loop of the nest
   is vectorized (``4 x lanes`` wide, narrower for short loops), row reductions too when
   ``vectorize-reductions`` is set (this reassociates float sums: the result may differ from
   the sequential order by rounding).

Every step is one of the project's transforms with its own exact legality check (permutation,
tiling, unroll-and-jam, vectorization); a step that is refused leaves the nest as it was and
is recorded with its reason; the schedule goes on with the next step. The pass guarantees the
semantics of each step (exact, except reassociated reductions as above).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import ClassVar

import analysis
from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.types import FloatType, IntegerType, MemRefType
from analysis.loops import perfect_band
from analysis.targets import CPUTarget, host_cpu

from ..cleanup.canonicalize import canonicalize
from ..errors import TransformError
from ..loop_utils import access_subscripts, all_loops, loop_name, loops_text, top_level_loops
from ..loops.licm import hoist_invariants_in
from ..loops.parallelize import check_parallel
from ..loops.permute import permute_loops
from ..loops.tile import tile_band
from ..loops.unroll_jam import unroll_jam_by_factor
from ..pass_base import Pass, PassContext, option, register_pass
from .vectorize import vectorize_check, vectorize_loop

__all__ = ["CPUSchedule", "RegisterTile", "plan_register_tile", "schedule_nest", "vector_lanes"]

PASS = "cpu-schedule"
#: Most vector accumulators a register tile uses (half of AVX-512's 32 registers).
MAX_ACCUMULATORS = 16


def vector_lanes(target: CPUTarget, bits: int = 32) -> int:
    """Lanes of one vector register of ``target`` for elements of ``bits`` bits (at least 1)."""
    return max(1, target.vector_bits // bits)


def _element_bits(nest: Operation) -> int:
    """Bits of the compute type of the nest's accesses: 64 when any is f64/i64, else 32 (16-bit
    floats are computed in f32)."""
    bits = 32
    for op in nest.walk():
        if isinstance(op, AffineAccessInterface) and isinstance(op.memref.type, MemRefType):
            t = op.memref.type.element_type
            if isinstance(t, (FloatType, IntegerType)) and t.width == 64:
                bits = 64
    return bits


def _accesses(nest: Operation) -> list[Operation]:
    return [op for op in nest.walk() if isinstance(op, AffineAccessInterface)]


def _coefficients(op: Operation, loop: AffineForOp) -> list[int] | None:
    """The coefficient of ``loop``'s IV in each subscript of ``op``, ``affine.apply`` composed
    in (None when a subscript uses it non-linearly)."""
    leaves: list = []
    subscripts = access_subscripts(op, leaves)
    dims = [k for k, v in enumerate(leaves) if v is loop.induction_var]
    if not dims:
        return [0] * len(subscripts)
    out = []
    for e in subscripts:
        if not e.is_pure_linear and dims[0] in e.used_dims():
            return None
        out.append(e.coefficient_of_dim(dims[0]))
    return out


def _invariant(op: Operation, loop: AffineForOp) -> bool:
    c = _coefficients(op, loop)
    return c is not None and not any(c)


def _contiguous(op: Operation, loop: AffineForOp) -> bool:
    c = _coefficients(op, loop)
    return c is not None and bool(c) and c[-1] == 1 and not any(c[:-1])


@dataclass(frozen=True)
class RegisterTile:
    """A register tile of a band: ``rows`` is unroll-jammed by ``R``, ``vector`` vectorized by ``W``."""

    band: tuple[AffineForOp, ...]
    rows: AffineForOp
    vector: AffineForOp
    R: int
    W: int

    def describe(self) -> str:
        return (f"register tile {self.R}x{self.W}: ({loop_name(self.rows)}) unroll-jammed by {self.R}, "
                f"({loop_name(self.vector)}) vectorized by {self.W}")


def _reduction_body(band: list[AffineForOp]) -> AffineForOp | None:
    """The one loop in the innermost band loop's body (the reduction), or None."""
    inner = [op for op in band[-1].body.ops if isinstance(op, AffineForOp)]
    return inner[0] if len(inner) == 1 else None


def _tile_shape(target: CPUTarget, bits: int, trip_v: int | None, trip_r: int | None) -> tuple[int, int] | None:
    """(R, W) for a register tile: the most accumulators (at most MAX_ACCUMULATORS) that fit the
    vector registers with one vector per column of B and a broadcast, W as wide as possible;
    shapes dividing the trip counts first (no cleanup loops), then any that the loops can fill."""
    lanes = vector_lanes(target, bits)
    shapes = [(rows, lanes * nv) for nv, rows in ((4, 4), (2, 8), (1, 8), (2, 4), (1, 4), (1, 2))
              if rows * nv <= MAX_ACCUMULATORS and rows * nv + nv + 1 <= target.vector_registers]
    fits = [(r, w) for r, w in shapes if (trip_v is None or trip_v >= w) and (trip_r is None or trip_r >= r)]
    exact = [(r, w) for r, w in fits if (trip_v is None or trip_v % w == 0) and (trip_r is None or trip_r % r == 0)]
    return (exact or fits or [None])[0]


def plan_register_tile(band: list[AffineForOp], target: CPUTarget) -> RegisterTile | str:
    """The register tile of ``band`` (see the module docstring), or the reason there is none."""
    red = _reduction_body(band)
    if red is None or len(band) < 2:
        return "no reduction loop under a band of two or more loops"
    if not red.iter_args:
        return (f"the reduction ({loop_name(red)}) keeps its sum in memory (no iter_args: scalar replacement could not "
                f"promote it, e.g. an affine.if around the accumulation)")
    accesses = _accesses(band[0])
    bits = _element_bits(band[0])
    parallel = [lp for lp in band if _is_parallel(lp)]
    vec = [lp for lp in parallel if any(_contiguous(a, lp) for a in accesses)
           and all(_contiguous(a, lp) or _invariant(a, lp) for a in accesses)]
    for v in reversed(vec):
        rows = [lp for lp in parallel if lp is not v and any(_invariant(a, lp) for a in accesses
                                                             if a.name.endswith("load"))]
        for r in reversed(rows):
            shape = _tile_shape(target, bits, analysis.constant_trip_count(v), analysis.constant_trip_count(r))
            if shape is not None and vectorize_check(v, shape[1]) is None:
                return RegisterTile(tuple(band), r, v, *shape)
    return (f"no pair of parallel loops in {loops_text(band)} with contiguous accesses along one and a reused "
            "load along the other, each long enough for a register tile")


def _is_parallel(loop: AffineForOp) -> bool:
    try:
        check_parallel(loop)
        return True
    except TransformError:
        return False


def _tile_candidates(band: list[AffineForOp], loops: tuple[AffineForOp, ...]) -> list[list[int]]:
    """Tile sizes in iterations (band order, 0 = untiled) to rank: for ``loops``, none or powers
    of two from 2 dividing the trip count; the other loops untiled."""
    def options(loop: AffineForOp) -> list[int]:
        trip = analysis.constant_trip_count(loop)
        if trip is None or loop not in loops:
            return [0]
        return [0] + [2**k for k in range(1, 16) if 2**k < trip and trip % 2**k == 0]

    return [list(c) for c in itertools.product(*(options(lp) for lp in band))]


#: A cache tile is used only when the cost model expects it to be this much faster than none, or as
#: fast and moving this much less data (summed over the memory levels).
MIN_TILING_GAIN = 0.02


def _cache_tile(band: list[AffineForOp], loops: tuple[AffineForOp, ...], target: CPUTarget, ctx: PassContext
                ) -> None:
    """Tile ``band`` (register-tiled already, so the model sees the vector accesses) over
    ``loops`` with the sizes the cost model ranks fastest, when faster than untiled by
    :data:`MIN_TILING_GAIN`."""
    candidates = _tile_candidates(band, loops)
    names = loops_text(band)
    if len(candidates) <= 1:
        return
    # Threads split the outermost parallel loop, tiled or not: no parallel loops for the model,
    # so every candidate gets the same compute time and the memory traffic decides.
    ranked = analysis.rank_tile_sizes(band[0], [{lp: s for lp, s in zip(band, c) if s} for c in candidates], target,
                                      parallel_loops=[])
    untiled = next(rep for c, rep in ranked if not c)
    best, report = min(ranked, key=lambda cr: (cr[1].estimated_seconds, _memory_seconds(cr[1])))
    if not best or not _better(report, untiled):
        ctx.note(band[0], f"{names} left untiled: no cache tile of {len(candidates) - 1} is faster or moves less "
                          f"data in the cost model ({untiled.estimated_seconds * 1e3:.3g} ms estimated)")
        return
    sizes = [best.get(lp, 0) for lp in band]
    named = ", ".join(f"{loop_name(lp)}={s * lp.step}" for lp, s in zip(band, sizes) if s)
    tile_band(band, sizes)
    ctx.applied(band[0], f"tiled {names} for the caches by {named}: the best of {len(candidates)} candidates in the "
                         f"cost model ({report.estimated_seconds * 1e3:.3g} ms, memory "
                         f"{_memory_seconds(report) * 1e3:.3g} ms; "
                         f"untiled {untiled.estimated_seconds * 1e3:.3g} ms, memory "
                         f"{_memory_seconds(untiled) * 1e3:.3g} ms)")


def _memory_seconds(report) -> float:
    """The time of the memory traffic of every level, not overlapped (a tie-break when compute bounds)."""
    return sum(report.seconds_by_level.values())


def _better(tiled, untiled) -> bool:
    """A tile's estimate beats none: faster, or as fast and with less memory time (by MIN_TILING_GAIN)."""
    keep = 1 - MIN_TILING_GAIN
    return (tiled.estimated_seconds < untiled.estimated_seconds * keep or
            (tiled.estimated_seconds <= untiled.estimated_seconds and
             _memory_seconds(tiled) < _memory_seconds(untiled) * keep))


def _order_band(band: list[AffineForOp], tile: RegisterTile) -> list[AffineForOp]:
    """Permute ``band`` to put ``tile.rows``, ``tile.vector`` innermost (others keep their order)."""
    order = [lp for lp in band if lp is not tile.rows and lp is not tile.vector] + [tile.rows, tile.vector]
    if order == band:
        return band
    return permute_loops(band, [order.index(lp) for lp in band])


def _register_schedule(nest: AffineForOp, tile: RegisterTile, target: CPUTarget, ctx: PassContext) -> None:
    band = _order_band(list(tile.band), tile)
    unroll_jam_by_factor(tile.rows, tile.R)
    vectorize_loop(tile.vector, tile.W)
    ctx.applied(band[0], tile.describe())
    canonicalize(band[0])  # unroll-and-jam's affine.apply composed into the accesses
    hoist_invariants_in(band[0])  # broadcasts of constants out of the band
    band = perfect_band(band[0])
    _cache_tile(band, (tile.rows, tile.vector), target, ctx)


def _leaf_loops(nest: AffineForOp) -> list[AffineForOp]:
    return [lp for lp in all_loops(nest) if not any(isinstance(o, AffineForOp) for o in lp.body.walk() if o is not lp)]


def _contiguous_innermost(band: list[AffineForOp], ctx: PassContext) -> None:
    """Permute a perfect band whose innermost body holds statements only so that the loop with
    the most contiguous accesses is innermost (when legal; a refusal is recorded)."""
    if len(band) < 2 or any(isinstance(o, AffineForOp) for o in band[-1].body.ops):
        return
    accesses = _accesses(band[-1])
    score = [sum(_contiguous(a, lp) for a in accesses) for lp in band]
    best = max(range(len(band)), key=lambda k: (score[k], k))
    if best == len(band) - 1 or score[best] <= score[-1]:
        return
    order = band[:best] + band[best + 1:] + [band[best]]
    try:
        permute_loops(band, [order.index(lp) for lp in band])
        ctx.applied(band[0], f"permuted to {loops_text(order)}: {score[best]} contiguous accesses innermost")
    except TransformError as e:
        ctx.refused(band[0], e)


def _vector_width(loop: AffineForOp, lanes: int) -> int | None:
    trip = analysis.constant_trip_count(loop)
    for nv in (4, 2, 1):
        if trip is None or trip >= lanes * nv:
            return lanes * nv
    return None


def _vectorize_leaves(nest: AffineForOp, target: CPUTarget, reductions: bool, ctx: PassContext) -> None:
    lanes = vector_lanes(target, _element_bits(nest))
    for loop in _leaf_loops(nest):
        width = _vector_width(loop, lanes)
        if width is None:
            ctx.note(loop, f"({loop_name(loop)}) not vectorized: fewer than {lanes} iterations")
            continue
        reason = vectorize_check(loop, width, reductions=reductions)
        if reason is not None:
            ctx.note(loop, f"({loop_name(loop)}) not vectorized: {reason}")
            continue
        vectorize_loop(loop, width, reductions=reductions)
        ctx.applied(loop, f"({loop_name(loop)}) vectorized by {width}")


def schedule_nest(nest: AffineForOp, target: CPUTarget, ctx: PassContext, *, vectorize_reductions: bool = True
                  ) -> None:
    """Schedule one top-level nest (see the module docstring); refusals are recorded in ``ctx``."""
    band = perfect_band(nest)
    tile = plan_register_tile(band, target)
    if isinstance(tile, RegisterTile):
        try:
            _register_schedule(nest, tile, target, ctx)
            return
        except TransformError as e:
            ctx.refused(nest, e)
            return
    ctx.note(nest, f"({loop_name(nest)}): {tile}")
    _contiguous_innermost(band, ctx)
    _vectorize_leaves(nest, target, vectorize_reductions, ctx)


@register_pass
@dataclass(frozen=True)
class CPUSchedule(Pass):
    """``cpu-schedule``: cache tiles from the cost model, register tiles, vectorization (see the module)."""

    name: ClassVar[str] = PASS
    summary: ClassVar[str] = "Schedule loop nests for the host CPU: cache tiling, register tiling, vectorization"

    vectorize_reductions: bool = option(True, "Vectorize reductions along the vector dimension (reassociates "
                                              "float sums)")
    vector_bits: int = option(0, "SIMD register width in bits (0: the host CPU's); 512 means 32 registers, "
                                 "less 16")

    def target(self) -> CPUTarget:
        """The host CPU, with ``vector-bits`` (and its register count) when given."""
        cpu = host_cpu()
        if not self.vector_bits:
            return cpu
        return replace(cpu, vector_bits=self.vector_bits, vector_registers=32 if self.vector_bits >= 512 else 16)

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        target = self.target()
        for nest in top_level_loops(func):
            schedule_nest(nest, target, ctx, vectorize_reductions=self.vectorize_reductions)
