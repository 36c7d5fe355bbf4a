"""Building blocks of copy generation (see :mod:`transforms.memory.copy_generation`): value ranges of
loop IVs, the bounds of copy loops, the copy-in/copy-out nests and the rewriting of accesses.

Nothing here decides *whether* to copy; these helpers only build what the utility asks for.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import AffineExpr, AffineMap, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp, AffineParallelOp, AffineStoreOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.types import MemRefType
from analysis import MemRefRegion

from ..loop_utils import ACCESS_OPS, rewrite_access  # re-exported (their old home)

__all__ = ["ACCESS_OPS", "CopyBounds", "build_copy_nest", "compact_map", "copy_bounds", "iv_ranges", "rewrite_access"]


Range = tuple[int | None, int | None]


# -- value ranges ----------------------------------------------------------------------------------
def iv_ranges(op: Operation) -> dict[Value, Range]:
    """Inclusive ranges of the IVs of the loops around ``op`` (and of constants they use), from
    their bounds by interval arithmetic (constants known, symbols unbounded). Conservative: every
    value an IV takes lies in its range."""
    ranges: dict[Value, Range] = {}
    for loop in reversed(list(op.ancestors())):
        if isinstance(loop, AffineForOp):
            ranges[loop.induction_var] = _for_range(loop, ranges)
        elif isinstance(loop, AffineParallelOp):
            for iv in loop.ivs:
                ranges[iv] = (None, None)
    return ranges


def _operand_range(v: Value, ranges: dict[Value, Range]) -> Range:
    if v in ranges:
        return ranges[v]
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(owner.value, int):
        return owner.value, owner.value
    return None, None


def map_ranges(m: AffineMap, operands: Sequence[Value], ranges: dict[Value, Range]) -> list[Range]:
    """The interval of each result of ``m`` applied to ``operands``."""
    rs = [_operand_range(v, ranges) for v in operands]
    return [e.bounds(rs[: m.num_dims], rs[m.num_dims :]) for e in m.results]


def _for_range(loop: AffineForOp, ranges: dict[Value, Range]) -> Range:
    lows = map_ranges(loop.lower_bound_map, loop.lower_bound_operands, ranges)
    ups = map_ranges(loop.upper_bound_map, loop.upper_bound_operands, ranges)
    lo = max((r[0] for r in lows if r[0] is not None), default=None)  # max of lowers >= each
    hi = min((r[1] for r in ups if r[1] is not None), default=None)  # min of uppers <= each
    if hi is not None:
        hi -= 1
        if lo is not None and loop.lower_bound_map.is_single_constant:
            hi = lo + max(0, hi - lo) // loop.step * loop.step  # the last value the step reaches
    return lo, hi


# -- copy loop bounds -------------------------------------------------------------------------------
class CopyBounds:
    """Per memref dimension, the copy loop's bounds as results over the region's operands
    (outer IVs as dims, then symbols): ``max(lowers) <= x < min(uppers)``. ``point[k]`` is set
    instead when the range is provably one element (no loop: the index is that expression)."""

    def __init__(self, lowers: list[list[AffineExpr]], uppers: list[list[AffineExpr]],
                 points: list[AffineExpr | None]):
        self.lowers = lowers
        self.uppers = uppers
        self.points = points


def copy_bounds(region: MemRefRegion, ranges: dict[Value, Range]) -> CopyBounds:
    """What the copy loops of ``region`` iterate: per dim, the region's box ``[lb, lb + size)``
    intersected with the memref's bounds ``[0, dim)`` and with the exact range of the accessed
    elements (when known), with the bounds that interval arithmetic proves redundant dropped.

    Guarantees: every copy access is in bounds of both the memref and the buffer, at every outer
    point (also where the loop nest accesses nothing); every element accessed lies in the range.
    """
    ops = region.lower_bound_operands
    nd = region.depth
    rs = [_operand_range(v, ranges) for v in ops]
    dim_r, sym_r = rs[:nd], rs[nd:]
    mt: MemRefType = region.memref.type
    lowers, uppers, points = [], [], []
    for k, lb_map in enumerate(region.lower_bounds):
        lb = lb_map.results[0]
        lo = [lb, AffineExpr.constant(0)]
        up = [lb + region.shape[k], AffineExpr.constant(mt.shape[k])]
        if region.exact_bounds[k] is not None:
            elo, eup = region.exact_bounds[k]
            lo += list(elo.results)
            up += list(eup.results)
        lo = _prune(lo, dim_r, sym_r, keep_larger=True)
        up = _prune(up, dim_r, sym_r, keep_larger=False)
        single = len(lo) == 1 and len(up) == 1 and up[0] - lo[0] == AffineExpr.constant(1)
        lowers.append(lo)
        uppers.append(up)
        points.append(lo[0] if single else None)
    return CopyBounds(lowers, uppers, points)


def _prune(exprs: list[AffineExpr], dim_r, sym_r, keep_larger: bool) -> list[AffineExpr]:
    """``exprs`` without duplicates and without those another one provably dominates (for a max
    of lower bounds, the smaller; for a min of upper bounds, the larger)."""
    out: list[AffineExpr] = []
    for e in exprs:
        if e not in out:
            out.append(e)
    changed = True
    while changed:
        changed = False
        for e in out:
            for f in out:
                if f is e:
                    continue
                lo, _ = ((f - e) if keep_larger else (e - f)).bounds(dim_r, sym_r)
                if lo is not None and lo >= 0:  # f >= e (max) / e >= f (min): e is redundant
                    out.remove(e)
                    changed = True
                    break
            if changed:
                break
    return out


# -- building ------------------------------------------------------------------------------------
def build_copy_nest(region: MemRefRegion, bounds: CopyBounds, buffer: Value, copy_in: bool,
                    location, name: str) -> list[Operation]:
    """The nest copying the region between ``region.memref`` and ``buffer`` (element ``x`` of the
    memref is element ``x - lb`` of the buffer): memref -> buffer when ``copy_in``, else back.
    Returns the ops to insert: the outermost copy loop, or a load and a store when every dim is
    a single point."""
    ops = list(region.lower_bound_operands)
    nd, ns = region.depth, len(ops) - region.depth
    rank = region.rank
    loops: list[AffineForOp] = []
    index_exprs: list[AffineExpr] = []  # over (copy IVs..., outer dims...)[symbols]
    for k in range(rank):
        if bounds.points[k] is not None:
            index_exprs.append(bounds.points[k])
            continue
        lb, lbo = compact_map(AffineMap(nd, ns, tuple(bounds.lowers[k])), ops)
        ub, ubo = compact_map(AffineMap(nd, ns, tuple(bounds.uppers[k])), ops)
        loop = AffineForOp(lb, lbo, ub, ubo, iv_name=f"{name}_c{k}", location=location)
        loops.append(loop)
        index_exprs.append(None)  # filled below
    n_iv = len(loops)
    ivs = [lp.induction_var for lp in loops]
    mem_idx, buf_idx, t = [], [], 0
    for k in range(rank):
        lb_k = region.lower_bounds[k].results[0].shift(n_iv, 0)
        if index_exprs[k] is None:
            x = AffineExpr.dim(t)
            t += 1
        else:
            x = index_exprs[k].shift(n_iv, 0)
        mem_idx.append(x)
        buf_idx.append(x - lb_k)
    operands = [*ivs, *ops]
    mem_map = AffineMap(n_iv + nd, ns, tuple(mem_idx))
    buf_map = AffineMap(n_iv + nd, ns, tuple(buf_idx))
    src, dst = (region.memref, buffer) if copy_in else (buffer, region.memref)
    src_map, dst_map = (mem_map, buf_map) if copy_in else (buf_map, mem_map)
    load = AffineLoadOp(src, src_map, operands, location=location)
    store = AffineStoreOp(load.result, dst, dst_map, operands, location=location)
    if not loops:
        return [load, store]
    for outer, inner in zip(loops, loops[1:]):
        _append(outer.body, inner)
    _append(loops[-1].body, load)
    _append(loops[-1].body, store)
    return [loops[0]]


def _append(block, op: Operation) -> None:
    """Insert ``op`` at the end of ``block``, before its terminator."""
    block.insert_before(block.terminator, op)


def compact_map(m: AffineMap, operands: Sequence[Value]) -> tuple[AffineMap, list[Value]]:
    """``m`` without the dims and symbols its results do not use, and the operands it keeps."""
    used_d = sorted(set().union(*(e.used_dims() for e in m.results)))
    used_s = sorted(set().union(*(e.used_symbols() for e in m.results)))
    dim_repl = [AffineExpr.constant(0)] * m.num_dims
    sym_repl = [AffineExpr.constant(0)] * m.num_symbols
    for i, d in enumerate(used_d):
        dim_repl[d] = AffineExpr.dim(i)
    for j, t in enumerate(used_s):
        sym_repl[t] = AffineExpr.symbol(j)
    new = m.replace(dim_repl, sym_repl, len(used_d), len(used_s))
    return new, [operands[d] for d in used_d] + [operands[m.num_dims + t] for t in used_s]
