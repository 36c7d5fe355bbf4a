"""Loop tiling: ``tile_band`` and the ``affine-loop-tile`` pass (MLIR's ``LoopTiling.cpp``).

``tile_band(band, sizes)`` tiles a perfectly nested band by rectangular tiles, on one level
or several (``sizes`` per level, outermost first), with partial tiles bounded by ``min``::

    affine.for %i = 0 to 50 {                      affine.for %i_tile = 0 to 50 step 32 {
      "test.bar"(%i) : (index) -> ()        ->       affine.for %i_point = #map(%i_tile) to min #map1(%i_tile) {
    }                                                  "test.bar"(%i_point) : (index) -> ()
                                                     } }
    // #map = (d0) -> (d0), #map1 = (d0) -> (d0 + 32, 50)

Rules (where they differ from MLIR, ours is the more general; tests say so):

- A size applies to one loop at one level; ``0`` leaves the loop untiled at that level (no
  tile loop; an untiled loop keeps its place among the point loops). At an inner level, a
  size not smaller than the loop's size at an enclosing level is taken as 0 (that tile loop
  would run once). Any other size tiles, even one ``>=`` the trip count, as MLIR does
  (``0 to 21 step 32`` then ``%i_tile to %i_tile + 21``).
- Loops: the tile loops of the outermost level (band order), then those of the next level,
  ..., then the point loops (the original ``affine.for`` ops, band order). Names: one level
  gives ``%i_tile`` and ``%i_point``; ``L >= 2`` levels give ``%i_l<L>``, ..., ``%i_l1``,
  ``%i_point``.
- Legality, checked before anything changes (:class:`TransformError` otherwise): the band
  is perfectly nested; only its innermost loop has ``iter_args``, and that loop is tiled only
  when it is the whole band (the values are then carried through the tile loops); the band
  up to its last tiled loop is fully permutable: no dependence carried in it has a negative
  (or unbounded) distance on one of its loops (a one-loop band, strip-mining, is always
  legal); and a tiled loop's bounds do not use IVs of the band (MLIR requires the whole band
  hyper-rectangular; we also tile bands where only *untiled* loops, e.g. ``%j = 0 to %i``
  with size 0 for ``%j``, have such bounds: they keep their order and their bounds).
- ``separate=True`` (MLIR's ``separateFullTiles``, also for steps > 1 and several levels):
  ``affine.if <full tile> { point loops of constant trip count } else { min-bounded loops }``
  inside the innermost tile loop; nothing happens when no tile can be partial (MLIR then
  writes an ``affine.if`` whose condition is always true).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from affine_ir import AffineMap
from affine_ir.affine_expr import fits_index
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineYieldOp
from analysis import Dependence, constant_trip_count, dependences

from ..errors import TransformError
from ..loop_utils import loop_name, loops_text, outermost_bands, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .tile_bounds import Extent, extent, separate_full_tiles, trip_divisor
from .tile_model import model_tile_sizes

__all__ = ["LoopTile", "TileResult", "check_tiling", "normalize_tile_sizes", "tile_band"]

PASS = "affine-loop-tile"


@dataclass
class TileResult:
    """What :func:`tile_band` built.

    ``tile_loops[l]``: the tile loops of level ``l`` (outermost level first), band order, only
    the loops tiled at that level; ``point_loops``: the original loops, band order (in the
    partial-tile branch when separated); ``sizes``: the sizes used per level (0 = untiled);
    ``full_tile_if`` / ``full_point_loops``: the separation ``affine.if`` and the point loops of
    its full-tile branch, when ``separate`` found partial tiles.
    """

    tile_loops: list[list[AffineForOp]]
    point_loops: list[AffineForOp]
    sizes: tuple[tuple[int, ...], ...]
    full_tile_if: AffineIfOp | None = None
    full_point_loops: list[AffineForOp] = field(default_factory=list)

    @property
    def loops(self) -> list[AffineForOp]:
        """Every loop of the new nest outermost first (the partial-tile branch when separated)."""
        return [lp for level in self.tile_loops for lp in level] + self.point_loops

    @property
    def is_tiled(self) -> bool:
        return any(self.tile_loops)


def normalize_tile_sizes(band: Sequence[AffineForOp], sizes) -> tuple[tuple[int, ...], ...]:
    """``sizes`` (one size per loop, or one such list per level, outermost level first) as a
    tuple of levels, with inner-level sizes not smaller than the enclosing one replaced by 0.
    TransformError when the counts do not match the band or a size is negative."""
    sizes = list(sizes)
    levels = [sizes] if all(isinstance(s, int) for s in sizes) else [list(lv) for lv in sizes]
    if not levels or not levels[0]:
        raise TransformError(PASS, f"no tile sizes given for {loops_text(band)}", loops=band)
    out = []
    for lv in levels:
        if len(lv) != len(band) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in lv):
            raise TransformError(PASS, f"tile sizes {list(lv)} do not fit {loops_text(band)}: one size >= 0 "
                                       f"per loop is needed", loops=band)
        out.append(list(lv))
    for k in range(len(band)):
        prev = None
        for lv in out:
            if lv[k] and prev is not None and lv[k] >= prev:
                lv[k] = 0
            prev = lv[k] or prev
    return tuple(tuple(lv) for lv in out)


# -- legality --------------------------------------------------------------------------------------
def check_tiling(band: Sequence[AffineForOp], sizes: tuple[tuple[int, ...], ...],
                 deps: list[Dependence] | None = None) -> None:
    """Raise TransformError unless tiling ``band`` by (normalized) ``sizes`` is supported and
    legal (see the module docstring); ``deps``: the dependences under ``band[0]`` if known."""
    _check_nesting(band)
    tiled = [k for k in range(len(band)) if any(lv[k] for lv in sizes)]
    _check_iter_args(band, tiled)
    if tiled and tiled[-1] >= 1:
        prefix = band[: tiled[-1] + 1]
        found = _negative_dependence(prefix, dependences(band[0]) if deps is None else deps)
        if found is not None:
            dep, k, lo = found
            what = "is unbounded below" if lo is None else f"can be {lo}"
            raise TransformError(PASS, f"cannot tile {loops_text(prefix)}: the band is not fully permutable: "
                                       f"{dep}; its distance along {loop_name(prefix[k])} {what}, so rectangular "
                                       f"tiles would run its destination before its source", loops=prefix,
                                 dependence=dep)
    _check_rectangular(band, tiled)
    _check_index_range(band, sizes, tiled)


def _check_index_range(band: Sequence[AffineForOp], sizes: tuple[tuple[int, ...], ...], tiled: list[int]) -> None:
    """Refuse a tile whose loop step (size * step) or bounds (a bound's constant plus or minus
    size * step: the point loops' ``tile IV + size * step``, the full tiles' bounds) could pass
    the 64-bit ``index`` range."""
    for k in tiled:
        lp = band[k]
        span = max(lv[k] for lv in sizes) * lp.step
        constants = [abs(e.constant_term) for e in (*lp.lower_bound_map.results, *lp.upper_bound_map.results)]
        if not fits_index(max(constants, default=0) + span):
            raise TransformError(PASS, f"cannot tile {loop_name(lp)} in {loops_text(band)}: a tile of "
                                       f"{max(lv[k] for lv in sizes)} iterations of step {lp.step} needs index "
                                       f"values past 2**63 - 1", loops=band)


def _check_nesting(band: Sequence[AffineForOp]) -> None:
    if not band or not all(isinstance(lp, AffineForOp) for lp in band):
        raise TransformError(PASS, "a band to tile is a non-empty list of affine.for ops", loops=band)
    for outer, inner in zip(band, band[1:]):
        body = [op for op in outer.body.ops if not isinstance(op, AffineYieldOp)]
        if len(body) != 1 or body[0] is not inner:
            raise TransformError(PASS, f"cannot tile {loops_text(band)}: {loop_name(inner)} is not the only op "
                                       f"in the body of {loop_name(outer)} (the band is not perfectly nested)",
                                 loops=band)


def _check_iter_args(band: Sequence[AffineForOp], tiled: list[int]) -> None:
    for lp in band[:-1]:
        if lp.iter_args:
            raise TransformError(PASS, f"cannot tile {loops_text(band)}: {loop_name(lp)} has iter_args (only "
                                       f"the innermost loop of a band may carry values)", loops=band)
    last = band[-1]
    if last.iter_args and len(band) > 1 and tiled and tiled[-1] == len(band) - 1:
        raise TransformError(PASS, f"cannot tile {loop_name(last)} in {loops_text(band)}: its iter_args carry "
                                   f"values from one iteration to the next, and tiles of the outer loops would "
                                   f"interleave them (leave it untiled: size 0)", loops=band)


def _check_rectangular(band: Sequence[AffineForOp], tiled: list[int]) -> None:
    ivs = {lp.induction_var: lp for lp in band}
    for k in tiled:
        lp = band[k]
        for what, m, ops in (("lower", lp.lower_bound_map, lp.lower_bound_operands),
                             ("upper", lp.upper_bound_map, lp.upper_bound_operands)):
            used = set().union(*(e.used_dims() for e in m.results)) | \
                {m.num_dims + j for e in m.results for j in e.used_symbols()}
            for pos in sorted(used):
                if ops[pos] in ivs:
                    raise TransformError(PASS, f"cannot tile {loop_name(lp)} in {loops_text(band)}: its {what} "
                                               f"bound depends on {value_name(ops[pos])} (only hyper-rectangular "
                                               f"bands are tiled; leave {loop_name(lp)} untiled: size 0)",
                                         loops=band)


def _negative_dependence(prefix: Sequence[AffineForOp], deps: list[Dependence]):
    """The first dependence carried inside ``prefix`` with a negative or unbounded distance on
    one of its loops: ``(dep, loop position, lower end)``; None when the prefix is permutable."""
    n = len(prefix)
    for dep in deps:
        if dep.kind == "RAR":
            continue
        for depth, comps in zip(dep.depths, dep.components):
            for k in range(depth - 1, min(n, len(comps))):
                lo = comps[k][0]
                if lo is None or lo < 0:
                    return dep, k, lo
    return None


# -- the transformation ---------------------------------------------------------------------------
def tile_band(band: Sequence[AffineForOp], sizes: Sequence[int] | Sequence[Sequence[int]], *,
              separate: bool = False, deps: list[Dependence] | None = None) -> TileResult:
    """Tile the perfectly nested ``band`` by rectangular tiles of ``sizes`` (iterations per
    loop; one list per level for multi-level tiling, outermost level first). See the module
    docstring for the rules and the loops built.

    Guarantees: the new nest runs the same iterations with the same dependences respected
    (the IR computes the same); point loops stop at ``min(tile IV + size * step, ...)`` so
    sizes need not divide trip counts; symbolic bounds, ``max``/``min`` bounds and steps > 1
    work. Raises :class:`TransformError` (the IR unchanged) when the request is not legal or
    not supported. ``deps``: the dependences under ``band[0]``, when the caller has them.

    Example (``sizes=[[8, 8], [4, 4]]``, two levels)::

        affine.for %i = 0 to 16 {               affine.for %i_l2 = 0 to 16 step 8 {
          affine.for %j = 0 to %N {               affine.for %j_l2 = 0 to %N step 8 {
            S(%i, %j)                  ->           affine.for %i_l1 = #map(%i_l2) to #map1(%i_l2) step 4 {
                                                      affine.for %j_l1 = #map(%j_l2) to min #map2(%j_l2)[%N] step 4 {
                                                        affine.for %i_point = #map(%i_l1) to #map3(%i_l1) {
                                                          affine.for %j_point = #map(%j_l1) to min #map4(%j_l1)[%N] {
                                                            S(%i_point, %j_point) ...
        // #map = (d0) -> (d0), #map1 = (d0) -> (d0 + 8), #map2 = (d0)[s0] -> (d0 + 8, s0),
        // #map3 = (d0) -> (d0 + 4), #map4 = (d0)[s0] -> (d0 + 4, s0)
    """
    band = list(band)
    levels = normalize_tile_sizes(band, sizes)
    check_tiling(band, levels, deps)
    return _tile(band, levels, separate)


def _tile(band: list[AffineForOp], levels: tuple[tuple[int, ...], ...], separate: bool) -> TileResult:
    nlev = len(levels)
    infos = [(constant_trip_count(lp), trip_divisor(lp), lp.step,
              (lp.lower_bound_map, tuple(lp.lower_bound_operands)),
              (lp.upper_bound_map, tuple(lp.upper_bound_operands))) for lp in band]
    names = [lp.induction_var.name_hint or f"i{k}" for k, lp in enumerate(band)]
    chains: list[list] = [[] for _ in band]
    top = band[0]
    block, pos = top.parent, top.parent.index_of(top)
    top.detach()
    tile_loops: list[list[AffineForOp]] = []
    nest: list[AffineForOp] = []
    for li, lv in enumerate(levels):
        row = []
        for k, s in enumerate(lv):
            if not s:
                continue
            trip, div, step, lower, upper = infos[k]
            if chains[k]:
                lb, lbo = AffineMap.identity(1), [chains[k][-1][1]]
                ub, ubo = extent(chains[k], step, trip, div, upper).bound()
            else:
                (lb, lbo), (ub, ubo) = lower, upper
            suffix = "tile" if nlev == 1 else f"l{nlev - li}"
            inits = (nest[-1].iter_args if nest else top.inits) if top.iter_args else ()
            t = AffineForOp(lb, lbo, ub, ubo, s * step, inits, iv_name=f"{names[k]}_{suffix}",
                            iter_arg_names=[a.name_hint for a in top.iter_args] if inits else None,
                            location=band[k].location)
            if nest:
                nest[-1].body.insert(0, t)
            else:
                block.insert(pos, t)
            nest.append(t)
            chains[k].append((s, t.induction_var))
            row.append(t)
        tile_loops.append(row)
    if not nest:
        block.insert(pos, top)
        return TileResult(tile_loops, band, levels)
    nest[-1].body.insert(0, top)
    extents = _set_point_bounds(band, chains, infos, names)
    if top.iter_args:
        _thread_iter_args(nest, top)
    result = TileResult(tile_loops, band, levels)
    if separate:
        found = separate_full_tiles(band, extents)
        if found is not None:
            result.full_tile_if, result.full_point_loops = found
    return result


def _set_point_bounds(band, chains, infos, names) -> list[Extent | None]:
    extents: list[Extent | None] = []
    for k, lp in enumerate(band):
        if not chains[k]:
            extents.append(None)
            continue
        trip, div, step, _, upper = infos[k]
        ext = extent(chains[k], step, trip, div, upper)
        ub, ubo = ext.bound()
        lp.set_bounds(AffineMap.identity(1), [chains[k][-1][1]], ub, ubo)
        lp.induction_var.name_hint = f"{names[k]}_point"
        extents.append(ext)
    return extents


def _thread_iter_args(nest: list[AffineForOp], top: AffineForOp) -> None:
    """A one-loop band with iter_args: the tile loops carry the values (``nest[0]`` takes the
    original inits; each loop yields what the loop inside it returns)."""
    for old, new in zip(top.results, nest[0].results):
        old.replace_all_uses_with(new)
    n = top.lower_bound_map.num_inputs + top.upper_bound_map.num_inputs
    top.set_operands([*top.operands[:n], *nest[-1].iter_args])
    for outer, inner in zip(nest, [*nest[1:], top]):
        outer.body.append(AffineYieldOp(list(inner.results), location=top.location))


# -- the pass ---------------------------------------------------------------------------------------
DEFAULT_TILE_SIZE = 4  # MLIR's kDefaultTileSize: pads a short ``tile-sizes`` list


@register_pass
@dataclass(frozen=True)
class LoopTile(Pass):
    """``affine-loop-tile``: tile the outermost perfect band of every top-level loop nest.

    Sizes, as MLIR's ``LoopTiling::getTileSizes``: ``tile-size`` for every loop; else
    ``tile-sizes`` (a short list is padded with 4, a long one cut, as MLIR); else the cost
    model picks sizes whose tile working set fits ``cache-size`` KiB
    (:func:`transforms.loops.tile_model.model_tile_sizes`). With ``tile-levels=L``: ``tile-size=s``
    tiles by ``s**L``, ..., ``s**2``, ``s`` (each tile holds ``s`` tiles of the next level
    per loop); ``tile-sizes`` holds ``L`` equal groups, outermost level first, each padded or
    cut to the band's depth as above; the model takes ``cache-size`` for the outermost level
    and the host CPU's smaller caches for the inner ones (L1d innermost). A band the model
    finds fitting as a whole is left untiled (MLIR tiles it by 1).

    With ``permutable-prefix`` (our addition) a band that is not fully permutable has its
    longest fully permutable prefix tiled instead (e.g. ``(%n, %f, %h, %w, %c)`` of a conv whose
    ``%kh``/``%kw`` carry negative distances); the refusal of the whole band is still recorded.

    An innermost loop with ``iter_args`` in a band of several loops is left untiled (tiling it
    would break its chain); a one-loop band with ``iter_args`` is tiled, the values carried
    by the tile loops (MLIR tiles neither). A refused band stays as it was and the refusal
    is recorded (e.g. a band that is not fully permutable, naming the dependence).
    """

    name: ClassVar[str] = PASS
    summary: ClassVar[str] = "Tile affine loop nests"

    cache_size: int = option(512, "Set size of cache to tile for in KiB (default: 512)")
    separate: bool = option(False, "Separate full and partial tiles (default: false)")
    tile_size: int = option(0, "Use this tile size for all loops")
    tile_sizes: tuple[int, ...] = option((), "List of tile sizes for each perfect nest (overridden by -tile-size); "
                                             "with tile-levels=L, L groups, outermost level first")
    tile_levels: int = option(1, "Levels of tiling (2: e.g. an L2-sized tile of L1-sized tiles); loops get "
                                 "name hints %i_l2, %i_l1, %i_point")
    permutable_prefix: bool = option(False, "When a band is not fully permutable, tile its longest fully permutable "
                                            "prefix instead of leaving it as it was (the refusal is still recorded)")

    def __post_init__(self) -> None:
        if self.tile_levels < 1:
            raise ValueError(f"tile-levels must be at least 1, got {self.tile_levels}")
        if self.tile_size < 0 or any(s < 0 for s in self.tile_sizes) or self.cache_size < 0:
            raise ValueError("tile sizes and the cache size must not be negative")
        if len(self.tile_sizes) % self.tile_levels:
            raise ValueError(f"tile-sizes has {len(self.tile_sizes)} entries, not a multiple of tile-levels="
                             f"{self.tile_levels} (one group per level, outermost first)")

    def run_on_function(self, func, ctx: PassContext) -> None:
        for band in outermost_bands(func):
            levels = self.band_sizes(band, ctx)
            if levels is None:
                continue
            names, iv_names = loops_text(band), [loop_name(lp) for lp in band]
            try:
                result = tile_band(band, levels, separate=self.separate)
            except TransformError as e:
                ctx.refused(band[0], e)
                result = self._tile_permutable_prefix(band, levels, e) if self.permutable_prefix else None
                if result is None:
                    continue
                names = "(" + ", ".join(iv_names[:_last_tiled(result.sizes) + 1]) + ")"
                ctx.applied(band[0], _describe(names, result) + " (the longest prefix of the band that is fully "
                                                                "permutable; the loops below it are left untiled)")
                continue
            if result.is_tiled:
                ctx.applied(band[0], _describe(names, result))
            else:
                ctx.note(band[0], f"{names} left untiled (every size is 0)")

    def _tile_permutable_prefix(self, band: list[AffineForOp], levels, error: TransformError) -> TileResult | None:
        """After ``error`` refused tiling the whole band for a dependence: tile the longest prefix
        that is legal (sizes below it set to 0), or None when no prefix of 1+ loops is."""
        if error.dependence is None:
            return None
        levels = normalize_tile_sizes(band, levels)
        deps = dependences(band[0])
        for cut in range(len(band) - 1, 0, -1):
            trial = tuple(tuple(s if k < cut else 0 for k, s in enumerate(lv)) for lv in levels)
            if not any(any(lv) for lv in trial):
                return None
            try:
                check_tiling(band, trial, deps)
            except TransformError:
                continue
            return tile_band(band, trial, separate=self.separate, deps=deps)
        return None

    def band_sizes(self, band: list[AffineForOp], ctx: PassContext | None) -> list[tuple[int, ...]] | None:
        """The sizes per level (outermost first) for ``band``, or None when it is not to be tiled."""
        n, nlev = len(band), self.tile_levels
        if self.tile_size:
            levels = [(self.tile_size ** (nlev - li),) * n for li in range(nlev)]
        elif self.tile_sizes:
            g = len(self.tile_sizes) // nlev
            groups = [self.tile_sizes[li * g:(li + 1) * g] for li in range(nlev)]
            levels = [tuple((list(grp) + [DEFAULT_TILE_SIZE] * n)[:n]) for grp in groups]
        else:
            levels = model_tile_sizes(band, self.cache_size * 1024, nlev, ctx)
            if levels is None:
                return None
        if n > 1 and band[-1].iter_args and any(lv[-1] for lv in levels):
            levels = [(*lv[:-1], 0) for lv in levels]
            if ctx is not None:
                ctx.note(band[0], f"{loop_name(band[-1])} carries iter_args: left untiled, the other loops of "
                                  f"{loops_text(band)} are tiled")
        return levels


def _last_tiled(sizes) -> int:
    """The position of the innermost loop tiled at some level."""
    return max(k for lv in sizes for k, x in enumerate(lv) if x)


def _describe(names: str, result: TileResult) -> str:
    levels = [x for x in result.sizes if any(x)]
    text = " then ".join("x".join(str(s) if s else "-" for s in lv) for lv in levels)
    sep = ""
    if result.full_tile_if is not None:
        sep = ", full tiles separated"
    return f"tiled {names} by {text}{sep}"
