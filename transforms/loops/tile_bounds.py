"""Bounds of tiled loops and the full/partial tile separation, for :mod:`transforms.loops.tile`.

A loop ``%i = lb to ub step st`` tiled at levels of sizes ``s1 > s2 > ... > sm`` (outermost
first) becomes ``%i_1 = lb to ub step s1*st``, then ``%i_j = %i_{j-1} to E_{j-1} step sj*st``,
then the point loop ``%i = %i_m to E_m step st``, where ``E_j`` (the *extent* of a level-j
tile) is ``min(%i_j + sj*st, E_{j-1})`` and ``E_0 = ub``. Terms of the min that cannot be the
smallest are dropped, as MLIR does for one level (``constructTiledIndexSetHyperRect``):

- ``%i_l + sl*st`` of an enclosing level ``l`` when ``sj`` divides the sizes of levels
  ``l..j-1`` (every level-j tile then ends inside the level-l tile);
- the original upper bound when the trip count (or its largest known divisor) is a multiple of
  ``sj`` and ``sj`` divides every enclosing level's size (tiles start at ``lb + k*sj*st``);
- everything when the trip count is a constant ``C < sj``: ``E_j = %i_j + C*st``.

Nothing here checks legality; :func:`transforms.loops.tile.tile_band` does that first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from affine_ir import AffineExpr, AffineMap, IntegerSet, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineYieldOp, is_valid_symbol
from analysis import constant_trip_count, trip_count_expr

__all__ = ["Extent", "extent", "separate_full_tiles", "trip_divisor"]


class Extent:
    """The upper bound of the loops inside a tile: ``min(terms..., original ub)``.

    ``terms``: ``(iv, offset)`` pairs meaning ``iv + offset``, the tile's own term first;
    ``upper``: the original upper bound (map, operands) when it is needed, else None.
    """

    def __init__(self, terms: list[tuple[Value, int]], upper: tuple[AffineMap, Sequence[Value]] | None):
        self.terms = terms
        self.upper = upper

    def bound(self) -> tuple[AffineMap, list[Value]]:
        """The bound as MLIR builds it: ``(orig dims..., tile IVs...)[orig symbols] -> (own, ..., orig)``."""
        ivs: list[Value] = []
        for iv, _ in self.terms:
            if not any(iv is v for v in ivs):
                ivs.append(iv)
        if self.upper is None:
            nd0, ns, dims0, syms, orig = 0, 0, [], [], ()
        else:
            m, ops = self.upper
            nd0, ns, dims0, syms, orig = m.num_dims, m.num_symbols, list(ops[: m.num_dims]), list(ops[m.num_dims:]), \
                m.results
        results = [AffineExpr.dim(nd0 + next(k for k, v in enumerate(ivs) if v is iv)) + off for iv, off in self.terms]
        return AffineMap(nd0 + len(ivs), ns, (*results, *orig)), [*dims0, *ivs, *syms]

    def own_bound(self) -> tuple[AffineMap, list[Value]]:
        """Only the tile's own term ``iv + offset`` (the bound inside a full tile)."""
        iv, off = self.terms[0]
        return AffineMap(1, 0, (AffineExpr.dim(0) + off,)), [iv]

    @property
    def is_min(self) -> bool:
        return len(self.terms) + (0 if self.upper is None else self.upper[0].num_results) > 1


def trip_divisor(loop: AffineForOp) -> int | None:
    """The constant trip count of ``loop``, else the largest known divisor of its trip count
    (gcd of the coefficients of ``(ub - lb) ceildiv step`` when that is linear), else None."""
    c = constant_trip_count(loop)
    if c is not None:
        return c
    te = trip_count_expr(loop)
    if te is None:
        return None
    e = te[0].results[0]
    if not e.is_pure_linear:
        return None
    m = te[0]
    g = math.gcd(e.constant_term, *(e.coefficient_of_dim(i) for i in range(m.num_dims)),
                 *(e.coefficient_of_symbol(j) for j in range(m.num_symbols)))
    return g or None


def extent(chain: Sequence[tuple[int, Value]], step: int, trip: int | None, divisor: int | None,
           upper: tuple[AffineMap, Sequence[Value]]) -> Extent:
    """The extent of the innermost tile of ``chain`` (``(size, tile IV)`` per level tiling
    this loop, outermost first, sizes decreasing); see the module docstring."""
    size, iv = chain[-1]
    if trip is not None and 0 < trip < size:
        return Extent([(iv, trip * step)], None)
    terms = [(iv, size * step)]
    outer = chain[:-1]
    for k, (s_l, iv_l) in enumerate(outer):
        if any(s % size for s, _ in outer[k:]):
            terms.append((iv_l, s_l * step))
    aligned = divisor is not None and divisor % size == 0 and not any(s % size for s, _ in outer)
    return Extent(terms, None if aligned else (upper[0], tuple(upper[1])))


# -- full / partial tiles -------------------------------------------------------------------------
def _merge(items: list[tuple[AffineExpr, int, Sequence[Value]]]) -> tuple[int, int, list[AffineExpr], list[Value]]:
    """Put expressions over different operand lists (``(expr, num_dims, operands)``) over one:
    dims first (a value used as a dim is a dim unless it is a valid symbol, as MLIR's
    canonicalization makes it), then symbols, by first appearance."""
    dims: list[Value] = []
    syms: list[Value] = []

    def add(lst: list[Value], v: Value) -> None:
        if not any(v is w for w in lst):
            lst.append(v)

    for _, nd, ops in items:
        for v in ops[:nd]:
            if not is_valid_symbol(v):
                add(dims, v)
    for _, _, ops in items:
        for v in ops:
            if not any(v is w for w in dims):
                add(syms, v)

    def position(v: Value) -> AffineExpr:
        for k, w in enumerate(dims):
            if w is v:
                return AffineExpr.dim(k)
        return AffineExpr.symbol(next(k for k, w in enumerate(syms) if w is v))

    exprs = []
    for e, nd, ops in items:
        repl = [position(v) for v in ops]
        exprs.append(e.replace(repl[:nd], repl[nd:]))
    return len(dims), len(syms), exprs, [*dims, *syms]


def full_tile_condition(point_loops: Sequence[AffineForOp], extents: Sequence[Extent | None]
                        ) -> tuple[IntegerSet, list[Value]] | None:
    """The condition under which every min-bounded point loop runs its whole tile: each other
    term of its min is at least the tile's own term. None when no point loop has a min."""
    items = []
    for loop, ext in zip(point_loops, extents):
        if ext is None or not ext.is_min:
            continue
        m, ops = loop.upper_bound_map, loop.upper_bound_operands
        own = m.results[0]
        for other in m.results[1:]:
            c = other - own
            if not (c.is_constant and c.constant_term >= 0):
                items.append((c, m.num_dims, ops))
    if not items:
        return None
    nd, ns, exprs, operands = _merge(items)
    cond = IntegerSet(nd, ns, tuple(exprs), (False,) * len(exprs))
    return cond, operands


def separate_full_tiles(point_loops: Sequence[AffineForOp], extents: Sequence[Extent | None]
                        ) -> tuple[AffineIfOp, list[AffineForOp]] | None:
    """Wrap the point nest (``point_loops[0]`` and the loops perfectly nested in it) in
    ``affine.if <full tile> { full-tile copy } else { original }``: in the copy each tiled
    point loop runs ``iv to iv + size*step`` (a constant trip count). Returns the if and the
    copy's loops (band order), or None when no tile is partial (nothing to separate).

    ``extents[k]`` is the extent the point loop ``k`` runs to (None for an untiled loop).
    """
    found = full_tile_condition(point_loops, extents)
    if found is None:
        return None
    cond, operands = found
    outer = point_loops[0]
    block = outer.parent
    types = [r.type for r in outer.results]
    if_op = AffineIfOp(cond, operands, types, with_else=True, location=outer.location)
    block.insert_before(outer, if_op)
    for old, new in zip(outer.results, if_op.results):
        old.replace_all_uses_with(new)
    outer.detach()
    mapping: dict[Value, Value] = {}
    full = outer.clone(mapping)
    for branch, nest in ((if_op.then_block, full), (if_op.else_block, outer)):
        for op in list(branch.ops):  # the empty yield the constructor adds
            op.erase()
        branch.append(nest)
        branch.append(AffineYieldOp(list(nest.results), location=outer.location))
    full_loops = [full]
    while len(full_loops) < len(point_loops):
        full_loops.append(next(op for op in full_loops[-1].body.ops if isinstance(op, AffineForOp)))
    for loop, ext in zip(full_loops, extents):
        if ext is not None and ext.is_min:
            lb, lbo = loop.lower_bound_map, loop.lower_bound_operands
            iv_map, _ = ext.own_bound()
            own_iv = mapping.get(ext.terms[0][0], ext.terms[0][0])
            loop.set_bounds(lb, lbo, iv_map, [own_iv])
    return if_op, full_loops
