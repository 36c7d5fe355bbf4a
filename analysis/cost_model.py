"""Cost model v1: operations and bytes moved per memory level of a loop nest under tile sizes.

Cheap (no isl: interval arithmetic on the access maps), deterministic and explainable: a
:class:`CostReport` carries every number it used. The model, for a nest whose outermost
perfect band ``L0..Ln-1`` is tiled by ``T`` (a loop without a size is untiled):

- **Schedule.** The tiled nest runs the tile loops ``L0t..Ln-1t`` (trip ``ceil(N/T)``), then
  the point loops ``L0..Ln-1`` (``T`` iterations; ``N`` when untiled), then the band's body,
  whose own loops are untiled. Trip counts with symbols use ``symbol_values`` (default
  :data:`DEFAULT_SYMBOL_VALUE`); a non-rectangular loop's count is taken at the middle of
  its outer loops' ranges.
- **Footprint.** With the outer ``d`` loops of that schedule fixed, a memref's footprint is
  the bounding box of what its accesses below touch: per memref dimension, the interval of
  each subscript over the box of IV ranges (``AffineExpr.bounds``; exact for linear
  subscripts), unioned over the accesses, clamped to the memref's shape. A point loop
  fixed spans one value, a tile loop fixed spans ``T`` values, a free loop its whole range.
  Bytes round the contiguous (last) dimension up to the level's transfer size (32 B
  sectors on GPUs, 64 B lines on CPUs, one element into registers).
- **Traffic out of a level** (``dram``, ``l2``, ...: the bytes that level serves to the
  next faster one, whose capacity ``C`` holds reused data; see :func:`memory_levels`): take
  the outermost ``d`` whose working set (the sum of the footprints) fits ``C``. Each memref
  ``A`` then moves ``footprint_d(A) x (iterations of the fixed loops out to the innermost
  one indexing A)`` bytes, twice when ``A`` is both read and written: ``A`` stays resident
  across the fixed loops inside that one, which do not index it (the standard reuse
  model). A loop indexes ``A`` when ``A``'s subscripts use its IV, directly or through the
  bounds of the loops they use. When even the innermost band point does not fit, each
  child of the band body is treated so in turn (reuse between siblings is then lost). At
  ``d = 0`` this is the compulsory traffic: every element of every memref's box once.
- **Operations.** arith/math ops x iterations; FLOPs count float ops once each (so a
  ``mulf`` feeding an ``addf`` is 2, ``math.fma`` 2; ``exp`` etc. 1); a mulf -> addf/subf
  pair issues as one FMA, other float ops take one issue slot each.
- **Time** (roofline): ``max(2 x issue slots / peak, bytes_l / bandwidth_l for every level)``,
  every rate scaled by ``utilization = min(1, parallel tiles / SMs or cores)``: the tiles
  of parallel band loops (and the iterations of band loops that already bound inner loops,
  in pre-tiled IR) are what run concurrently; an untiled nest is one tile. A loop is taken
  as parallel when every access to each memref written in the nest uses the same
  subscripts and they depend on its IV; ``parallel_loops`` overrides this cheap test.
  ``bound`` names the largest term.

Not modelled: concurrent tiles sharing a cache (reuse is sequential), cache associativity
and alignment, latency and occupancy, transcendental cost beyond one slot, and
``affine.if`` (bodies count as always executed).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from affine_ir import Operation

from .nest_model import DEFAULT_SYMBOL_VALUE, NestModel, NestNode
from .targets import CPUTarget, GPUTarget, Target
from .targets import target as _target_named

__all__ = [
    "DEFAULT_SYMBOL_VALUE", "CostReport", "MemoryLevel", "estimate_cost", "memory_levels", "rank_tile_sizes",
    "tile_sizes_for_capacity", "tile_working_set",
]


@dataclass(frozen=True)
class MemoryLevel:
    """A level that serves ``bandwidth`` bytes/s to the next faster level, whose capacity
    ``capacity`` (named ``capacity_name``) holds reused data; transfers come in ``line_bytes``."""

    name: str
    bandwidth: float
    capacity_name: str
    capacity: int
    line_bytes: int


def memory_levels(target: Target) -> tuple[MemoryLevel, ...]:
    """The levels of ``target``, slowest first.

    GPU: ``dram`` (reuse held by the L2), ``l2`` (held by one block's shared memory, opt-in
    limit: the tile's working set), ``shared`` (held by registers: the 255 x 4 B one thread
    may hold). CPU: ``dram`` (L3, whole), ``l3`` (per-core L2), ``l2`` (L1d), ``l1`` (the
    vector register file); without an L3 the DRAM's reuse is held by the L2.
    """
    if isinstance(target, GPUTarget):
        return (MemoryLevel("dram", target.dram_bandwidth, "l2", target.l2_bytes, target.sector_bytes),
                MemoryLevel("l2", target.l2_bandwidth, "shared", target.shared_memory_per_block_optin,
                            target.sector_bytes),
                MemoryLevel("shared", target.shared_memory_bandwidth, "registers", target.max_registers_per_thread * 4,
                            1))
    if isinstance(target, CPUTarget):
        line, levels = target.cache_line_bytes, []
        if target.l3_bytes:
            levels += [MemoryLevel("dram", target.dram_bandwidth, "l3", target.l3_bytes, line),
                       MemoryLevel("l3", target.l3_bandwidth, "l2", target.l2_bytes, line)]
        else:
            levels.append(MemoryLevel("dram", target.dram_bandwidth, "l2", target.l2_bytes, line))
        return (*levels, MemoryLevel("l2", target.l2_bandwidth, "l1", target.l1d_bytes, line),
                MemoryLevel("l1", target.l1_bandwidth, "registers", target.vector_register_bytes, 1))
    raise TypeError(f"not a target: {target!r}")


@dataclass
class CostReport:
    """Every number the estimate used; :meth:`explain` prints them. Bytes are per level
    (see :func:`memory_levels`); footprints are per reuse block, in bytes."""

    target: str
    nest: str
    tile_sizes: dict[str, int]
    trip_counts: dict[str, int]
    ops: int
    flops: int
    fma_pairs: int
    ops_by_kind: dict[str, int]
    peak_flops: float
    bytes_by_level: dict[str, int]
    compulsory_bytes: dict[str, int]
    footprints: dict[str, dict[str, int]]
    reuse_blocks: dict[str, str]
    tile_footprints: dict[str, int]
    working_set: int
    capacities: dict[str, int]
    fits: dict[str, bool]
    parallel_tiles: int
    utilization: float
    compute_seconds: float
    seconds_by_level: dict[str, float]
    estimated_seconds: float
    bound: str
    intensity: float
    assumptions: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_level.values())

    def explain(self) -> str:
        """A multi-line account of the estimate: sizes, counts, traffic per level, time."""
        tiles = ", ".join(f"{k}={v}" for k, v in self.tile_sizes.items()) or "none (untiled)"
        lines = [f"cost of {self.nest} on {self.target}; tile sizes: {tiles}",
                 "  trip counts: " + " ".join(f"{k}={v}" for k, v in self.trip_counts.items()),
                 f"  ops {self.ops:,}; flops {self.flops:,} ({self.fma_pairs:,} fma pairs); "
                 + ", ".join(f"{k} {v:,}" for k, v in self.ops_by_kind.items()),
                 f"  compute: peak {self.peak_flops / 1e12:.3g} TFLOP/s x utilization {self.utilization:.3g} "
                 f"({self.parallel_tiles} parallel tiles) -> {_time(self.compute_seconds)}",
                 f"  tile working set {_size(self.working_set)}: " + ", ".join(
                     f"{k} {_size(self.capacities[k])} {'fits' if v else 'does not fit'}"
                     for k, v in self.fits.items())]
        for lvl, b in self.bytes_by_level.items():
            lines.append(f"  {lvl}: {_size(b)} moved (compulsory {_size(self.compulsory_bytes[lvl])}), "
                         f"reuse block: {self.reuse_blocks[lvl]} -> {_time(self.seconds_by_level[lvl])}")
            fp = self.footprints[lvl]
            if fp:
                lines.append("    footprints per block: " + ", ".join(f"{m} {_size(v)}" for m, v in fp.items()))
        lines.append(f"  intensity {self.intensity:.3g} flop/byte (dram); estimated {_time(self.estimated_seconds)}, "
                     f"bound: {self.bound}")
        lines += [f"  assumption: {a}" for a in self.assumptions]
        return "\n".join(lines)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _time(s: float) -> str:
    return f"{s * 1e6:.3g} us"


# --- evaluation under tile sizes ------------------------------------------------------

class _Eval:
    """One (nest, tile sizes) point: schedules, memoized footprints, traffic per level."""

    def __init__(self, nest: NestModel, sizes: dict[int, int]):
        self.nest, self.sizes = nest, sizes
        self.root_dims = tuple((g, "t") for g in nest.band if g in sizes) + tuple((g, "p") for g in nest.band)
        self._memo: dict[tuple[NestNode, int], dict[int, tuple[list[int], bool, bool]]] = {}

    def dims(self, node: NestNode) -> tuple:
        return self.root_dims if node is self.nest.root else tuple((g, "p") for g in node.own)

    def footprint(self, node: NestNode, chain: tuple, d: int) -> dict[int, tuple[list[int], bool, bool]]:
        """memref -> (box extents, read, written) for ``node``'s accesses with ``chain[:d]`` fixed."""
        key = (node, d)
        if key in self._memo:
            return self._memo[key]
        point = {g: True for g, k in chain[:d] if k == "p"}
        tile = {g: self.sizes[g] for g, k in chain[:d] if k == "t"}
        ranges = self.nest.ranges(point, tile)
        boxes: dict[int, list] = {}
        out: dict[int, tuple[list[int], bool, bool]] = {}
        for a in self.nest.accesses[node.start: node.end]:
            mem = self.nest.memrefs[a.memref]
            box = boxes.setdefault(a.memref, [None] * len(mem.shape))
            for k, e in enumerate(a.exprs):
                lo, hi = (None, None) if e is None else e.bounds(ranges)
                if k == len(a.exprs) - 1 and hi is not None:
                    hi += a.lanes - 1
                size = mem.shape[k] if mem.shape[k] is not None else DEFAULT_SYMBOL_VALUE
                lo, hi = (0, size - 1) if lo is None or hi is None else (lo, hi)
                if mem.shape[k] is not None:
                    lo, hi = max(lo, 0), min(hi, size - 1)
                old = box[k]
                box[k] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
            _, r, w = out.get(a.memref, (None, False, False))
            out[a.memref] = (None, r or not a.write, w or a.write)
        for m, box in boxes.items():
            out[m] = ([max(0, hi - lo + 1) for lo, hi in box], out[m][1], out[m][2])
        self._memo[key] = out
        return out

    def bytes_of(self, m: int, extents: list[int], line: int) -> int:
        esize = self.nest.memrefs[m].esize
        if not extents:
            return max(esize, line)
        last = extents[-1] * esize
        if line > esize:
            last = -(-last // line) * line
        return math.prod(extents[:-1]) * last

    def count(self, chain: tuple, d: int, loops: frozenset[int]) -> int:
        """Iterations of the fixed loops ``chain[:d]`` out to the innermost one in ``loops``."""
        r = max((i for i in range(d) if chain[i][0] in loops), default=-1)
        point = {g for g, k in chain[: r + 1] if k == "p"}
        n = 1
        for g, k in chain[: r + 1]:
            trip = self.nest.loops[g].trip
            if k == "p":
                n *= trip
            elif g not in point:
                n *= -(-trip // self.sizes[g])
        return n

    def traffic(self, level: MemoryLevel) -> tuple[dict[int, int], dict[int, int], list[str]]:
        traffic: dict[int, int] = {}
        fps: dict[int, int] = {}
        blocks: list[str] = []
        self._visit(self.nest.root, (), level, traffic, fps, blocks)
        return traffic, fps, blocks

    def _visit(self, node, prefix, level, traffic, fps, blocks) -> None:
        if node.start == node.end:
            return
        chain = prefix + self.dims(node)
        for d in range(len(prefix), len(chain) + 1):
            fp = self.footprint(node, chain, d)
            b = {m: self.bytes_of(m, ext, level.line_bytes) for m, (ext, _, _) in fp.items()}
            if sum(b.values()) <= level.capacity or (d == len(chain) and not node.children):
                for m, (_, r, w) in fp.items():
                    loops = frozenset().union(*(a.loops for a in self.nest.accesses[node.start: node.end]
                                                if a.memref == m))
                    traffic[m] = traffic.get(m, 0) + b[m] * self.count(chain, d, loops) * (2 if r and w else 1)
                    fps[m] = max(fps.get(m, 0), b[m])
                blocks.append(self._describe(node, chain, d))
                return
        for child in node.children:
            self._visit(child, chain, level, traffic, fps, blocks)

    def _describe(self, node, chain, d) -> str:
        fixed = [("%" + self.nest.loops[g].name) + ("_tile" if k == "t" else "") for g, k in chain[:d]]
        where = node.label or "nest"
        return f"{where} per ({', '.join(fixed)})" if fixed else f"whole {where}"


# --- public entry points --------------------------------------------------------------

def estimate_cost(nest: Operation, target: Target | str, tile_sizes=None, *, symbol_values: Mapping | None = None,
                  compute_dtype: str | None = None, tensor_cores: bool = False,
                  parallel_loops: Iterable | None = None) -> CostReport:
    """The cost of ``nest`` (an ``affine.for`` nest, a ``func.func`` or a one-function module)
    on ``target`` (a target or its name) with its outermost perfect band tiled by ``tile_sizes``.

    ``tile_sizes``: a mapping from band loops (the ``AffineForOp``, its IV, or the IV's name)
    to sizes in iterations (missing = untiled), or a sequence of sizes in band order.
    ``symbol_values`` maps symbol Values or names to ints. ``compute_dtype`` /
    ``tensor_cores`` choose the peak rate (default: the nest's most frequent float type, on
    CUDA/vector cores; fp32 on tensor cores means TF32). See the module docstring for the model.
    """
    return _estimate(NestModel(nest, symbol_values), target, tile_sizes, compute_dtype, tensor_cores, parallel_loops)


def rank_tile_sizes(nest: Operation, candidates: Iterable, target: Target | str, **options) -> list[tuple]:
    """``[(candidate, CostReport)]`` for every candidate tile-size choice (as
    :func:`estimate_cost` takes them), fastest estimate first; ties keep fewer total bytes,
    then the given order. The nest is analysed once for all candidates."""
    unknown = set(options) - {"symbol_values", "compute_dtype", "tensor_cores", "parallel_loops"}
    if unknown:
        raise TypeError(f"rank_tile_sizes got unknown options: {', '.join(sorted(unknown))}")
    model = NestModel(nest, options.pop("symbol_values", None))
    keyed = []
    for i, c in enumerate(candidates):
        rep = _estimate(model, target, c, options.get("compute_dtype"), options.get("tensor_cores", False),
                        options.get("parallel_loops"))
        keyed.append((rep.estimated_seconds, rep.total_bytes, i, c, rep))
    keyed.sort(key=lambda t: t[:3])
    return [(c, rep) for *_, c, rep in keyed]


def tile_working_set(nest: Operation, tile_sizes=None, *, symbol_values: Mapping | None = None) -> int:
    """Bytes of one tile's footprint (all memrefs' boxes, exact element bytes) under ``tile_sizes``."""
    model = NestModel(nest, symbol_values)
    return _working_set(model, _sizes(model, tile_sizes))


def tile_sizes_for_capacity(nest: Operation, capacity_bytes: int, *, symbol_values: Mapping | None = None,
                            avoid_max_min: bool = True) -> tuple[int, ...]:
    """Tile sizes for the outermost band (in band order) whose tile working set fits
    ``capacity_bytes`` (``affine-loop-tile{cache-size=...}``).

    After MLIR's ``LoopTiling::getTileSizes``, with a footprint model instead of its guess:
    a band whose whole footprint fits is left untiled (sizes = trip counts; MLIR writes 1);
    else all loops take the largest common power of two that fits, then, innermost loop
    first and round-robin, each size doubles while the tile still fits (MLIR instead takes
    the n-th root of footprint/capacity as the size). With ``avoid_max_min``, as MLIR's
    ``adjustToDivisorsOfTripCounts``, a size drops to a divisor of a constant trip count.
    When not even a tile of one iteration per loop fits, the sizes are all 1.
    """
    model = NestModel(nest, symbol_values)
    band, trips = model.band, [model.loops[g].trip for g in model.band]
    if not band:
        return ()

    def fits(sizes: list[int]) -> bool:
        return _working_set(model, {g: s for g, s in zip(band, sizes) if s < model.loops[g].trip}) <= capacity_bytes

    if fits(trips):
        return tuple(trips)
    p = 1
    while p < max(trips) and fits([min(2 * p, n) for n in trips]):
        p *= 2
    sizes = [max(1, min(p, n)) for n in trips]
    grown = True
    while grown:
        grown = False
        for i in reversed(range(len(band))):
            if sizes[i] < trips[i]:
                trial = sizes[:i] + [min(2 * sizes[i], trips[i])] + sizes[i + 1:]
                if fits(trial):
                    sizes, grown = trial, True
    if avoid_max_min:
        for i, g in enumerate(band):
            if model.loops[g].rect and trips[i] > 0:
                while trips[i] % sizes[i]:
                    sizes[i] -= 1
    return tuple(sizes)


def _sizes(model: NestModel, tile_sizes) -> dict[int, int]:
    """Band loop index -> tile size, for sizes that actually tile (below the trip count)."""
    if tile_sizes is None:
        return {}
    band = model.band
    if isinstance(tile_sizes, Mapping):
        items = [(_band_loop(model, k), v) for k, v in tile_sizes.items()]
    else:
        sizes = list(tile_sizes)
        if len(sizes) > len(band):
            raise ValueError(f"{len(sizes)} tile sizes for a band of {len(band)} loops")
        items = list(zip(band, sizes))
    out = {}
    for g, s in items:
        if not isinstance(s, int) or s < 1:
            raise ValueError(f"tile size for %{model.loops[g].name} must be a positive integer, got {s!r}")
        if s < model.loops[g].trip:
            out[g] = s
    return out


def _band_loop(model: NestModel, key) -> int:
    for g in model.band:
        lp = model.loops[g]
        hint = lp.op.induction_var.name_hint
        if key is lp.op or key is lp.op.induction_var or (isinstance(key, str) and key.lstrip("%") in (lp.name, hint)):
            return g
    names = ", ".join("%" + model.loops[g].name for g in model.band) or "none"
    raise ValueError(f"{key!r} is not a loop of the outermost perfect band (band: {names})")


def _working_set(model: NestModel, sizes: dict[int, int]) -> int:
    ev = _Eval(model, sizes)
    d = sum(1 for _, k in ev.root_dims if k == "t")
    fp = ev.footprint(model.root, ev.root_dims, d)
    return sum(ev.bytes_of(m, ext, 1) for m, (ext, _, _) in fp.items())


def _parallel_band(model: NestModel, parallel_loops) -> set[int]:
    if parallel_loops is not None:
        return {_band_loop(model, k) for k in parallel_loops}
    accs = model.accesses[model.root.start: model.root.end]
    written = {a.memref for a in accs if a.write}
    out = set()
    for g in model.band:
        if model.loops[g].op.results:  # iter_args: a reduction carried in registers
            continue
        ok = True
        for m in written:
            subs = {a.exprs for a in accs if a.memref == m}
            first = next(a for a in accs if a.memref == m)
            if len(subs) != 1 or None in first.exprs or g not in first.loops:
                ok = False
                break
        if ok:
            out.add(g)
    return out


def _estimate(model: NestModel, target: Target | str, tile_sizes, compute_dtype, tensor_cores, parallel_loops
              ) -> CostReport:
    target = _target_named(target) if isinstance(target, str) else target
    sizes = _sizes(model, tile_sizes)
    ev = _Eval(model, sizes)
    levels = memory_levels(target)
    names = [m.name for m in model.memrefs]
    par = _parallel_band(model, parallel_loops)
    # Tiles: of the tiled parallel band loops, and of loops already tiling others (pre-tiled IR).
    bounding = set().union(*(lp.deps for lp in model.loops))
    tiles = max(1, math.prod(-(-model.loops[g].trip // sizes[g]) if g in sizes else model.loops[g].trip
                             for g in par if g in sizes or g in bounding))
    util = min(1.0, tiles / max(1, target.parallel_units))
    dtype = compute_dtype or (max(sorted(model.float_dtypes), key=model.float_dtypes.get) if model.float_dtypes
                              else "f32")
    peak = target.peak_flops(dtype, tensor_cores)
    slots = model.slots if model.slots else model.other_ops
    compute = 2 * slots / (peak * util) if slots else 0.0
    bytes_by, compulsory, fps, blocks, secs = {}, {}, {}, {}, {}
    root_chain = ev.root_dims
    for lvl in levels:
        traffic, fp, blk = ev.traffic(lvl)
        bytes_by[lvl.name] = sum(traffic.values())
        fps[lvl.name] = {names[m]: v for m, v in sorted(fp.items())}
        blocks[lvl.name] = "; ".join(blk) or "nothing accessed"
        full = ev.footprint(model.root, root_chain, 0)
        compulsory[lvl.name] = sum(ev.bytes_of(m, ext, lvl.line_bytes) * (2 if r and w else 1)
                                   for m, (ext, r, w) in full.items())
        secs[lvl.name] = bytes_by[lvl.name] / (lvl.bandwidth * util)
    d_tile = sum(1 for _, k in root_chain if k == "t")
    tile_fp = {m: ev.bytes_of(m, ext, 1) for m, (ext, _, _) in ev.footprint(model.root, root_chain, d_tile).items()}
    ws = sum(tile_fp.values())
    bound, est = "compute", compute
    for name, s in secs.items():
        if s > est:
            bound, est = f"memory:{name}", s
    dram = bytes_by.get("dram", 0)
    work = model.flops or model.other_ops
    return CostReport(
        target=target.name, nest=model.root.label or "nest",
        tile_sizes={model.loops[g].name: s for g, s in sizes.items()},
        trip_counts={lp.name: lp.trip for lp in model.loops},
        ops=sum(model.ops_by_kind.values()), flops=model.flops, fma_pairs=model.fma_pairs,
        ops_by_kind=dict(sorted(model.ops_by_kind.items())), peak_flops=peak, bytes_by_level=bytes_by,
        compulsory_bytes=compulsory, footprints=fps, reuse_blocks=blocks,
        tile_footprints={names[m]: v for m, v in sorted(tile_fp.items())}, working_set=ws,
        capacities={lvl.capacity_name: lvl.capacity for lvl in reversed(levels)},
        fits={lvl.capacity_name: ws <= lvl.capacity for lvl in reversed(levels)},
        parallel_tiles=tiles, utilization=util, compute_seconds=compute, seconds_by_level=secs,
        estimated_seconds=est, bound=bound, intensity=work / dram if dram else math.inf,
        assumptions=list(dict.fromkeys(model.assumptions)),
    )
