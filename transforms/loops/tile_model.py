"""Tile sizes from the cost model, for ``affine-loop-tile`` without explicit sizes.

One level: :func:`analysis.tile_sizes_for_capacity` with ``cache-size`` (MLIR's
``LoopTiling::getTileSizes`` guesses from the footprint; ours grows power-of-two tiles that
fit and keeps them dividing constant trip counts). Several levels: ``cache-size`` for the
outermost, then the host CPU's caches smaller than it (the smallest ones, L1d innermost);
each inner size is cut to a divisor of the enclosing one, so the inner tiles need no extra
``min`` term. A loop whose whole range fits is left untiled at that level (size 0), and a
band that fits as a whole is not tiled (MLIR tiles it by 1).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import analysis
from affine_ir.dialects.affine import AffineForOp

from ..loop_utils import loops_text
from ..pass_base import PassContext

__all__ = ["cache_capacities", "model_tile_sizes"]


@functools.lru_cache(maxsize=1)
def _host_caches() -> tuple[int, ...]:
    cpu = analysis.host_cpu()
    return tuple(c for c in (cpu.l3_bytes, cpu.l2_bytes, cpu.l1d_bytes) if c > 0)


def cache_capacities(outer_bytes: int, levels: int, host: Sequence[int] | None = None) -> list[int]:
    """Capacities in bytes per tiling level, outermost first: ``outer_bytes``, then the
    ``levels - 1`` smallest of the ``host`` cache sizes (default: the host CPU's L3, L2,
    L1d) below it, largest first; missing ones are an eighth of the previous."""
    if levels <= 1:
        return [outer_bytes]
    host = _host_caches() if host is None else tuple(host)
    smaller = sorted({c for c in host if 0 < c < outer_bytes})[: levels - 1]
    inner = sorted(smaller, reverse=True)
    while len(inner) < levels - 1:
        inner.append(max(1, (inner[-1] if inner else outer_bytes) // 8))
    return [outer_bytes, *inner]


def model_tile_sizes(band: list[AffineForOp], capacity_bytes: int, levels: int,
                     ctx: PassContext | None = None) -> list[tuple[int, ...]] | None:
    """Sizes per level (outermost first; 0 = untiled) whose tile working sets fit the
    capacities of :func:`cache_capacities`; None when the whole band fits (nothing to tile).
    The choice and its footprints are recorded with ``ctx.note``."""
    root, n = band[0], len(band)
    trips = _fit(analysis.tile_sizes_for_capacity(root, 1 << 62), n, [0] * n)
    whole = analysis.tile_working_set(root)
    caps = cache_capacities(capacity_bytes, levels)
    out: list[tuple[int, ...]] = []
    prev: tuple[int, ...] | None = None
    for cap in caps:
        sizes = _fit(analysis.tile_sizes_for_capacity(root, cap), n, trips)
        level = []
        for k, s in enumerate(sizes):
            outer = prev[k] if prev is not None and prev[k] else 0
            if outer:
                s = min(s, outer)
                while outer % s:
                    s -= 1
                s = 0 if s >= outer else s
            elif trips[k] and s >= trips[k]:
                s = 0
            level.append(s)
        out.append(tuple(level))
        prev = tuple(a or b for a, b in zip(level, prev)) if prev is not None else tuple(level)
    if not any(any(lv) for lv in out):
        if ctx is not None:
            ctx.note(root, f"not tiled: the working set of {loops_text(band)} ({_size(whole)}) fits "
                           f"{_size(caps[0])} (cost model)")
        return None
    if ctx is not None:
        effective: dict = {}
        for li, (lv, cap) in enumerate(zip(out, caps)):
            effective.update({band[k]: s for k, s in enumerate(lv) if s})
            used = dict(effective)  # the tile of this level: its sizes, else the enclosing level's
            name = "" if levels == 1 else f" level l{levels - li}:"
            if not any(lv):
                ctx.note(root, f"cost model:{name} {loops_text(band)} not tiled at this level: the whole band "
                               f"({_size(whole)}) fits {_size(cap)}")
                continue
            text = "x".join(str(s) if s else "-" for s in lv)
            ctx.note(root, f"cost model:{name} tile sizes {text} for {loops_text(band)}: tile working set "
                           f"{_size(analysis.tile_working_set(root, used))} fits {_size(cap)} "
                           f"(whole band: {_size(whole)})")
    return out


def _fit(sizes: Sequence[int], n: int, pad: Sequence[int]) -> list[int]:
    """``sizes`` cut or padded (from ``pad``) to ``n`` entries: the model's band may be shorter."""
    sizes = list(sizes)[:n]
    return sizes + list(pad[len(sizes):n])


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""
