"""Memory regions: the footprint of a memref's accesses under an op, as a bounding box.

:func:`memref_region` is MLIR's ``MemRefRegion::compute`` followed by
``getConstantBoundingSizeAndShape``, computed exactly with isl. The accessed elements are a
relation from the *outer* IVs (the ``depth`` outermost loop IVs enclosing the op, counted
from the function: MLIR's ``loopDepth``) and the function's symbols to memref elements.
Per memref dimension ``k`` the box is ``[lower_bounds[k], lower_bounds[k] + shape[k])``:

- ``lo_k``/``hi_k``: isl's exact minimum/maximum of dimension ``k`` (piecewise affine in the
  outer IVs and symbols, on the outer points where anything is accessed);
- when ``lo_k`` is affine, it is the lower bound; otherwise each of its affine pieces ``c``
  with ``c <= lo_k`` everywhere is a candidate (MLIR's candidates from the access functions);
- ``shape[k]`` is the least constant upper bound of ``hi_k - lb + 1`` over the candidates
  (isl ``max_val``); the box is *tight* on ``k`` when ``lo_k`` is affine and that extent is
  constant (``min_val == max_val``);
- with no constant bound, the extent is the affine map ``hi_k - lo_k + 1`` when both are
  affine (tight; ``shape[k]`` is then the memref's static size, an upper bound for in-bounds
  programs), else the box falls back to the whole dimension ``[0, size)`` (MLIR's fallback);
- ``exact_bounds[k]``: the exact range as loop-bound maps (``max`` of lower results, ``min``
  of exclusive upper results) when isl's piecewise bounds can be written so, else None --
  what a copy loop nest iterates, while ``shape`` sizes its buffer.

Every accessed element lies in the box (for programs whose accesses are in bounds, which
the fallbacks assume, as MLIR's do). Non-affine accesses (``memref.load/store``, non-affine
bounds, unknown ops taking the memref) make the region inexact (``is_exact`` False): the
whole memref. Each isl step runs under an operation budget (``ISL_BUDGET``); one that runs
out degrades the box towards the whole dimension, never below the footprint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import islpy as isl

from affine_ir import AffineExpr, AffineMap, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineParallelOp
from affine_ir.types import MemRefType, element_size_in_bytes

from .isl_bridge import (
    Scop,
    UnsupportedError,
    enclosing_loops,
)
from .isl_results import (
    BudgetExceeded,
    aff_bounds_pw,
    affs_to_exprs,
    compact_symbols,
    distinct_affs,
    integral_pw_aff,
    isl_budget,
    pw_aff_as_extremum,
    val_to_int,
)

__all__ = ["MemRefRegion", "element_size_in_bytes", "memref_region"]

_DT = isl.dim_type
# isl operations allowed per step of a region computation (a few tens of ms); past it the
# step gives up and the answer degrades (a constant box, the whole dimension), staying sound.
ISL_BUDGET = 300_000


@dataclass
class MemRefRegion:
    """The bounding box of the elements of ``memref`` accessed under ``op`` per iteration of
    the ``depth`` outer loops (IVs ``outer_ivs``), see the module docstring.

    Maps take ``lower_bound_operands``: the outer IVs as dims, then the symbols they use.
    """

    memref: Value
    op: Operation
    depth: int
    kind: str  # "read", "write" or "read-write"
    outer_ivs: list[Value]
    lower_bounds: list[AffineMap]  # one result each
    extents: list[int | AffineMap | None]  # int: a constant size; AffineMap: exact, varying; None: unknown
    shape: tuple[int | None, ...]  # constant buffer size per dim that holds the box from lower_bounds
    exact_bounds: list[tuple[AffineMap, AffineMap] | None]  # (max of lower, min of exclusive upper)
    lower_bound_operands: list[Value]
    is_exact: bool  # False: non-affine accesses, the box is the whole memref
    is_tight: bool  # every dim's box is the exact bounding box of the accessed elements
    accessed: isl.Map | None = field(default=None, repr=False, compare=False)  # O[outer] -> M[elements]

    @property
    def rank(self) -> int:
        return len(self.lower_bounds)

    @property
    def num_elements(self) -> int | None:
        """Elements of the constant-size box (the product of ``shape``), None if a dim has none."""
        n = 1
        for s in self.shape:
            if s is None:
                return None
            n *= s
        return n

    @property
    def size_in_bytes(self) -> int | None:
        """Bytes of the constant-size box, None when unknown."""
        n, e = self.num_elements, element_size_in_bytes(self.memref.type)
        return None if n is None or e is None else n * e

    def box_at(self, values: dict[Value, int]) -> list[tuple[int, int | None]]:
        """Per dim the half-open box ``[lo, hi)`` at concrete outer IVs and symbols (``values``
        maps each of ``lower_bound_operands`` to an int); ``hi`` is from the extent when it is
        known, else from ``shape``, else None."""
        args = [values[v] for v in self.lower_bound_operands]
        out = []
        for lb, ext, size in zip(self.lower_bounds, self.extents, self.shape):
            lo = lb.evaluate(args[: lb.num_dims], args[lb.num_dims :])[0]
            if isinstance(ext, AffineMap):
                ext = ext.evaluate(args[: ext.num_dims], args[ext.num_dims :])[0]
            n = ext if ext is not None else size
            out.append((lo, None if n is None else lo + n))
        return out

    def __str__(self) -> str:
        dn = [value_label(v) for v in self.lower_bound_operands[: self.depth]]
        sn = [value_label(v) for v in self.lower_bound_operands[self.depth :]]
        dims = []
        for lb, ext in zip(self.lower_bounds, self.extents):
            lo = lb.results[0].to_str(dn, sn)
            if lb.results[0].is_constant and isinstance(ext, int):
                dims.append(f"[{lo}, {lb.results[0].constant_value + ext})")
                continue
            if isinstance(ext, AffineMap):
                size = "(" + ext.results[0].to_str(dn, sn) + ")"
            else:
                size = "?" if ext is None else str(ext)
            dims.append(f"[{lo}, +{size})")
        n = self.num_elements
        text = f"region of {value_label(self.memref)} under {op_label(self.op)}: {' x '.join(dims) or '[]'}"
        text += f" = {'?' if n is None else n} element{'' if n == 1 else 's'}"
        b = self.size_in_bytes
        if b is not None:
            text += f", {_bytes(b)}"
        text += f", {self.kind}"
        if not self.is_exact:
            text += " (non-affine access: whole memref)"
        return text


def memref_region(op_or_loop: Operation | Sequence[Operation], memref: Value, depth: int, *,
                  scop: Scop | None = None) -> MemRefRegion | None:
    """The footprint of all accesses to ``memref`` under ``op_or_loop`` (an access op, a
    loop, or a function) as a function of the ``depth`` outermost enclosing loop IVs (counted
    from the function, including ``op_or_loop``'s own when it is a loop) and the symbols.

    Guarantees: every element accessed at given outer IVs lies in the box (exactly the
    bounding box on dims reported tight); None when nothing under ``op_or_loop`` accesses
    ``memref``. ``scop`` reuses a :class:`Scop` built on the enclosing function.
    ``op_or_loop`` may also be a sequence of consecutive ops of one block (a block range, as
    copy generation uses): the footprint of all their accesses, ``depth`` counting the loops
    around the block (at most their number).
    Raises ValueError for a depth outside ``[0, number of enclosing IVs]``.

    Example: the ``%ii`` point loop of a 32-tiled matmul, depth 1, gives
    ``region of %A under %ii: [%i * 32, +32) x [0, 64) = 2048 elements, 8 KiB, read``.
    """
    ops = [op_or_loop] if isinstance(op_or_loop, Operation) else list(op_or_loop)
    op_or_loop = ops[0]
    root = enclosing_root(op_or_loop)
    if scop is None or scop.root is not root:
        scop = Scop(root)
    outer, _ = enclosing_loops(op_or_loop, root, include_self=len(ops) == 1)
    if not 0 <= depth <= len(outer):
        raise ValueError(f"depth {depth} out of range: {op_label(op_or_loop)} has {len(outer)} enclosing loop IVs")
    stmts = [s for s in scop.statements
             if s.memref is memref and any(s.op is o or o.is_ancestor_of(s.op) for o in ops)]
    if not stmts:
        return None
    writes = {s.is_write for s in stmts}
    kind = "read-write" if len(writes) == 2 else "write" if True in writes else "read"
    outer_ivs = [lp.iv for lp in outer[:depth]]
    mt: MemRefType = memref.type
    if any(not s.is_affine for s in stmts):
        return _whole_memref(memref, op_or_loop, depth, kind, outer_ivs, is_exact=False)
    try:
        with isl_budget(4 * ISL_BUDGET):
            rel = _accessed(stmts, depth)
            empty = rel.is_empty()
    except BudgetExceeded:
        return _whole_memref(memref, op_or_loop, depth, kind, outer_ivs, is_exact=True)
    if empty:
        zero = AffineMap(depth, 0, (AffineExpr.constant(0),))
        return MemRefRegion(memref, op_or_loop, depth, kind, outer_ivs, [zero] * mt.rank, [0] * mt.rank,
                            (0,) * mt.rank, [None] * mt.rank, list(outer_ivs), True, True, rel)
    ctx = rel.domain()
    try:
        dims = [_dim_box(rel, k, ctx, mt.shape[k], depth, scop) for k in range(mt.rank)]
    except UnsupportedError:  # a bound isl cannot give as an affine function: the whole memref
        region = _whole_memref(memref, op_or_loop, depth, kind, outer_ivs, is_exact=True)
        region.accessed = rel
        return region
    # One operand list for every map: outer IVs, then the symbols any map uses.
    lists: list[list[AffineExpr]] = []
    for d in dims:
        lists += [[d.lower], [d.extent] if isinstance(d.extent, AffineExpr) else [],
                  d.exact[0] if d.exact else [], d.exact[1] if d.exact else []]
    maps, syms = compact_symbols(lists, depth, scop)
    lbs, extents, exact = [], [], []
    for k, d in enumerate(dims):
        lb, ext, elo, ehi = maps[4 * k : 4 * k + 4]
        lbs.append(lb)
        extents.append(ext if isinstance(d.extent, AffineExpr) else d.extent)
        exact.append((elo, ehi) if d.exact else None)
    return MemRefRegion(memref, op_or_loop, depth, kind, outer_ivs, lbs, extents, tuple(d.shape for d in dims),
                        exact, outer_ivs + syms, True, all(d.tight for d in dims), rel)


def _accessed(stmts, depth: int) -> isl.Map:
    """``{ O[outer IVs] -> M[element] }``: the union of the statements' accesses with their
    IVs below ``depth`` projected out."""
    rel = None
    for s in stmts:
        acc = s.access
        acc = acc.project_out(_DT.in_, depth, acc.dim(_DT.in_) - depth).set_tuple_name(_DT.in_, "O")
        rel = acc if rel is None else rel.union(acc)
    return rel.coalesce()


@dataclass
class _DimBox:
    lower: AffineExpr
    extent: int | AffineExpr | None
    shape: int | None
    exact: tuple[list[AffineExpr], list[AffineExpr]] | None
    tight: bool


def _dim_box(rel: isl.Map, k: int, ctx: isl.Set, size: int | None, depth: int, scop: Scop) -> _DimBox:
    """The box of memref dimension ``k`` (see the module docstring). Each isl step runs under
    an operation budget; a step that runs out degrades the answer (never its soundness)."""
    whole = _DimBox(AffineExpr.constant(0), size, size, None, False)
    try:
        with isl_budget(ISL_BUDGET):
            lo, hi = rel.dim_min(k).floor(), rel.dim_max(k).floor()  # (integral there; floor: integral affs)
    except BudgetExceeded:
        return whole
    lo_max = _budgeted(lambda: pw_aff_as_extremum(lo, ctx, "max"))
    hi_min = _budgeted(lambda: pw_aff_as_extremum(hi, ctx, "min"))
    exact = None
    if lo_max is not None and hi_min is not None:
        exact = (affs_to_exprs(lo_max, depth, scop), [e + 1 for e in affs_to_exprs(hi_min, depth, scop)])
    single = lo_max[0] if lo_max is not None and len(lo_max) == 1 else None
    best = _budgeted(lambda: _constant_extent(lo, hi, ctx, single))
    if best is not None:
        a, n, tight = best
        return _DimBox(affs_to_exprs([a], depth, scop)[0], n, n, exact, tight)
    if single is not None and hi_min is not None and len(hi_min) == 1:
        lower, upper = affs_to_exprs([single, hi_min[0]], depth, scop)
        return _DimBox(lower, upper - lower + 1, size, exact, True)
    if single is not None:
        return _DimBox(affs_to_exprs([single], depth, scop)[0], None, size, exact, False)
    return _DimBox(whole.lower, size, size, exact, False)


def _constant_extent(lo: isl.PwAff, hi: isl.PwAff, ctx: isl.Set, single: isl.Aff | None):
    """(lower bound, least constant extent, tight?) over the candidate lower bounds: ``lo``
    itself when affine, else its pieces that bound it from below; None when no candidate
    gives a constant extent."""
    if single is not None:
        candidates = [single]
    else:
        candidates = [a for a in distinct_affs(lo) if aff_bounds_pw(a, lo, ctx, "max")]
    best = None
    for a in candidates:
        ext = integral_pw_aff(hi - _on(a, ctx) + 1)
        top = ext.max_val()
        if top.is_int() and (best is None or val_to_int(top) < best[1]):
            best = (a, val_to_int(top), a is single and ext.min_val().eq(top))
    return best


def _budgeted(fn):
    """``fn()`` under the isl operation budget; None when it runs out."""
    try:
        with isl_budget(ISL_BUDGET):
            return fn()
    except BudgetExceeded:
        return None


def _on(aff: isl.Aff, ctx: isl.Set) -> isl.PwAff:
    return isl.PwAff.from_aff(aff).intersect_domain(ctx)


def _whole_memref(memref: Value, op: Operation, depth: int, kind: str, outer_ivs: list[Value],
                  is_exact: bool) -> MemRefRegion:
    mt: MemRefType = memref.type
    zero = AffineMap(depth, 0, (AffineExpr.constant(0),))
    return MemRefRegion(memref, op, depth, kind, outer_ivs, [zero] * mt.rank, list(mt.shape), tuple(mt.shape),
                        [None] * mt.rank, list(outer_ivs), is_exact, False)


def enclosing_root(op: Operation) -> Operation:
    """The enclosing function (or the outermost ancestor when there is none)."""
    if isinstance(op, FuncOp):
        return op
    top = op
    for a in op.ancestors():
        if isinstance(a, FuncOp):
            return a
        top = a
    return top


def value_label(v: Value) -> str:
    """``%name`` of ``v`` for messages (``%?`` without a name hint)."""
    return f"%{v.name_hint or '?'}"


def op_label(op: Operation) -> str:
    """How messages name ``op``: a loop by its IV(s), a function by ``@name``, else ``'op.name'``."""
    if isinstance(op, AffineForOp):
        return value_label(op.induction_var)
    if isinstance(op, AffineParallelOp):
        return "(" + ", ".join(value_label(v) for v in op.ivs) + ")"
    if isinstance(op, FuncOp):
        return f"@{op.sym_name}"
    return f"'{op.name}'"


def _bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            x = n / scale
            return f"{x:.0f} {unit}" if x == int(x) else f"{x:.1f} {unit}"
    return f"{n} B"
