"""Cheap, sound value ranges of index values: what an index value can be where it is used.

Used by ``canonicalize`` (map and loop simplification) and by the CUDA printer (32-bit index
arithmetic where it fits); it lives in ``analysis`` because it is an analysis: it reads the IR
and never changes it.

:class:`RangeContext` numbers every index value it meets (``d<k>`` is value ``k``), so that
maps over different operand lists become expressions over one set of dims, and answers

- :meth:`RangeContext.range` -- an inclusive interval holding every value of an index
  value (constants; loop IVs from their bounds and the ranges of the outer IVs; ``gpu.launch``
  block and thread ids below their grid and block sizes; results of
  ``affine.apply/min/max``; ``memref.dim`` is ``>= 0``; anything else is unbounded);
- :meth:`RangeContext.upper` / :meth:`RangeContext.lower` -- a bound of an expression,
  tighter than intervals: a loop IV is replaced by one of its bound expressions
  (``%j <= ub - 1``, ``%j >= lb``), innermost first, so ``%j - %i`` in
  ``affine.for %j = %i to %i + 4`` is bounded by ``3``.

Facts about a loop IV hold wherever the IV is used (inside the loop body, which runs only
for IV values within its bounds); nothing here changes the IR. The context may be reused
while the IR is rewritten in a semantics-preserving way (a value's set of run-time values
only shrinks), but it is cheap to rebuild and the canonicalizer rebuilds it every driver iteration.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import AffineExpr, AffineMap, FuncOp, Operation, Value
from affine_ir.affine_expr import Range, dim
from affine_ir.core import BlockArgument, OpResult
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineMapValueOp, AffineMinOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.dialects.memref import DimOp
from affine_ir.traits import ConstantLike
from affine_ir.types import IndexType

__all__ = ["RangeContext", "max_opt", "min_opt"]

_UNBOUNDED: Range = (None, None)


def min_opt(a: int | None, b: int | None) -> int | None:
    """The smaller of two upper bounds (None is +infinity)."""
    return b if a is None else a if b is None else min(a, b)


def max_opt(a: int | None, b: int | None) -> int | None:
    """The larger of two lower bounds (None is -infinity)."""
    return b if a is None else a if b is None else max(a, b)


def _in_a_function(op: Operation | None) -> bool:
    while op is not None and not isinstance(op, FuncOp):
        op = op.parent_op
    return op is not None


def _in_function(v) -> bool:
    """Whether ``v`` (a value, or a :meth:`RangeContext.fresh` placeholder) is still defined in
    a function (not in ops a rewrite erased, nor an erased block argument)."""
    if not isinstance(v, Value):
        return True
    if isinstance(v, BlockArgument):
        if v.index >= len(v.block.args) or v.block.args[v.index] is not v:
            return False
        return _in_a_function(v.block.parent_op)
    return _in_a_function(v.op)


class RangeContext(Sequence):
    """Value numbering and bounds; also the ``dim_ranges`` sequence of :meth:`AffineExpr.bounds`."""

    def __init__(self, budget: int = 48):
        self._ids: dict[Value, int] = {}
        self._values: list[Value] = []
        self._memo: dict[object, Range] = {}  # by value (or fresh placeholder): they hash by identity
        self._depth: dict[Value, int | None] = {}
        self._budget = budget
        #: Results of the canonicalizer's expression rewrites, by expression over value dims:
        #: an expression means the same wherever it is used (value dims name values), so
        #: repeated subscripts and conditions are simplified once per context. Read them with
        #: :meth:`cached` (a result over a value erased since is not reused).
        self.rewritten: dict[tuple[str, AffineExpr], AffineExpr] = {}

    # -- numbering ------------------------------------------------------------------
    def index(self, v: Value) -> int:
        k = self._ids.get(v)
        if k is None:
            k = self._ids[v] = len(self._values)
            self._values.append(v)
        return k

    def cached(self, key: tuple[str, AffineExpr], compute) -> AffineExpr:
        """``self.rewritten[key]`` when every value it uses is still in a function (values
        replaced and erased by a rewrite since are not), else ``compute()``, stored."""
        hit = self.rewritten.get(key)
        if hit is not None and all(_in_function(self._values[k]) for k in hit.used_dims()):
            return hit
        out = self.rewritten[key] = compute()
        return out

    def value(self, k: int) -> Value:
        """The value numbered ``k`` (an opaque placeholder for a :meth:`fresh` dim)."""
        return self._values[k]

    def fresh(self, r: Range) -> int:
        """A new dim that stands for no value, with the range ``r``."""
        placeholder = object()
        k = len(self._values)
        self._values.append(placeholder)  # type: ignore[arg-type]
        self._memo[placeholder] = r
        return k

    def exprs(self, m: AffineMap, operands: Sequence[Value]) -> list[AffineExpr]:
        """The results of ``m`` applied to ``operands``, as expressions over value dims."""
        repl = [dim(self.index(v)) for v in operands]
        return [r.replace(repl[: m.num_dims], repl[m.num_dims:]) for r in m.results]

    def expr(self, e: AffineExpr, num_dims: int, operands: Sequence[Value]) -> AffineExpr:
        """One expression of a map with ``num_dims`` dims over ``operands``, over value dims."""
        repl = [dim(self.index(v)) for v in operands]
        return e.replace(repl[:num_dims], repl[num_dims:])

    # -- the Sequence protocol (dim ranges for AffineExpr.bounds/simplify) -------------
    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, k):  # type: ignore[override]
        return self.range(self._values[k])

    # -- ranges -------------------------------------------------------------------------
    def range(self, v: Value) -> Range:
        """An inclusive interval containing every value ``v`` takes where it is used."""
        r = self._memo.get(v)
        if r is None:
            self._memo[v] = _UNBOUNDED  # a cycle (never expected in SSA) sees "unbounded"
            r = self._memo[v] = self._compute_range(v)
        return r

    def _compute_range(self, v: Value) -> Range:
        if not isinstance(v.type, IndexType):
            return _UNBOUNDED
        if isinstance(v, BlockArgument):
            loop = v.block.parent_op
            if isinstance(loop, AffineForOp) and v.index == 0:
                return self._iv_range(loop)
            if isinstance(loop, LaunchOp):
                return self._launch_range(loop, v.index)
            return _UNBOUNDED
        assert isinstance(v, OpResult)
        op = v.op
        if op.has_trait(ConstantLike):
            c = op.attributes["value"].value
            return (c, c)
        if isinstance(op, DimOp):
            return (0, None)
        if isinstance(op, AffineMapValueOp):
            rs = [self.bounds(e) for e in self.exprs(op.map, op.operands)]
            if isinstance(op, AffineApplyOp):
                return rs[0]
            los, his = [r[0] for r in rs], [r[1] for r in rs]
            if isinstance(op, AffineMinOp):
                lo = None if None in los else min(los)
                hi = min((h for h in his if h is not None), default=None)
            else:
                lo = max((x for x in los if x is not None), default=None)
                hi = None if None in his else max(his)
            return (lo, hi)
        return _UNBOUNDED

    def _launch_range(self, launch: LaunchOp, index: int) -> Range:
        """A ``gpu.launch`` body argument: a block (thread) id is in ``[0, size)`` of its grid
        (block) size operand; a size argument is that operand."""
        sizes = (*launch.grid_size, *launch.block_size)
        if index >= 6:
            return self.range(sizes[index - 6])
        hi = self.range(sizes[index])[1]
        return (0, None if hi is None else hi - 1)

    def _iv_range(self, loop: AffineForOp) -> Range:
        lo = hi = None
        for e in self.exprs(loop.lower_bound_map, loop.lower_bound_operands):
            lo = max_opt(lo, self.lower(e))
        for e in self.exprs(loop.upper_bound_map, loop.upper_bound_operands):
            u = self.upper(e)
            hi = min_opt(hi, None if u is None else u - 1)
        lb = loop.lower_bound_map
        if lb.is_single_constant and hi is not None and loop.step > 1:
            c = lb.single_constant()
            if hi >= c:
                hi = c + (hi - c) // loop.step * loop.step  # the last IV value of the progression
        return (lo, hi)

    def bounds(self, e: AffineExpr) -> Range:
        """``(lower(e), upper(e))``."""
        return self.lower(e), self.upper(e)

    # -- bounds by substitution ---------------------------------------------------------------
    def upper(self, e: AffineExpr) -> int | None:
        """An upper bound of ``e`` (over value dims) where its values are used, or None."""
        return self._upper(e, [self._budget])

    def lower(self, e: AffineExpr) -> int | None:
        """A lower bound of ``e`` (over value dims), or None."""
        u = self._upper(-e, [self._budget])
        return None if u is None else -u

    def _upper(self, e: AffineExpr, budget: list[int]) -> int | None:
        best = e.bounds(self)[1]
        budget[0] -= 1
        if e.is_constant or budget[0] <= 0:
            return best
        pick = self._substitutable(e)
        if pick is None:
            return best
        k, coeff = pick
        for b in self._bound_exprs(self._values[k], upper=coeff > 0):
            r = self._upper(e + coeff * (b - dim(k)), budget)
            best = min_opt(best, r)
            if budget[0] <= 0:
                break
        return best

    def _substitutable(self, e: AffineExpr) -> tuple[int, int] | None:
        """The linear dim of ``e`` to replace by a bound next: the innermost IV (or an
        apply/min/max result); None when there is none."""
        best = None
        for k in e.used_dims():
            c = e.coefficient_of_dim(k)
            if not c:
                continue
            depth = self._nesting(self._values[k])
            if depth is not None and (best is None or depth > best[0]):
                best = (depth, k, c)
        return None if best is None else (best[1], best[2])

    def _nesting(self, v: Value) -> int | None:
        if v in self._depth:
            return self._depth[v]
        d = None
        if isinstance(v, BlockArgument) and v.index == 0 and isinstance(v.block.parent_op, AffineForOp):
            d = 2 * sum(1 for _ in v.block.parent_op.ancestors()) + 1
        elif isinstance(v, OpResult) and isinstance(v.op, AffineMapValueOp):
            d = 2 * sum(1 for _ in v.op.ancestors()) + 2
        self._depth[v] = d
        return d

    def _bound_exprs(self, v: Value, upper: bool) -> list[AffineExpr]:
        """Expressions (over value dims) bounding ``v`` from above (``v <= b``) or below."""
        if isinstance(v, BlockArgument):
            loop = v.block.parent_op
            if upper:
                return [b - 1 for b in self.exprs(loop.upper_bound_map, loop.upper_bound_operands)]
            return self.exprs(loop.lower_bound_map, loop.lower_bound_operands)
        op = v.op
        rs = self.exprs(op.map, op.operands)
        if isinstance(op, AffineApplyOp) or isinstance(op, AffineMinOp) == upper:
            return rs  # v == r, v <= each r of a min, v >= each r of a max
        return []
