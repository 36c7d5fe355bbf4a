"""Exact memory dependences (isl) between the accesses of a function or a loop.

A *dependence* from access ``src`` to access ``dst`` (same memref, at least one a write;
read-after-read only on request) is the set of iteration pairs ``(s, t)`` such that
``src`` at iteration ``s`` and ``dst`` at iteration ``t`` touch the same element and ``s``
executes before ``t``. Its *depths* follow MLIR: with ``c`` loops common to both accesses,
the pair is at depth ``d <= c`` when the first ``d - 1`` common IVs are equal and the
``d``-th increases (the pair is *carried* by loop ``d``), and at depth ``c + 1`` when all
common IVs are equal and ``src`` comes first in the text (loop-independent). IVs of
``affine.parallel`` count as loops, one depth each.

Distances are ``dst IV - src IV`` per common loop, given per depth and overall as
inclusive ranges ``(lo, hi)``, ``None`` for an unbounded side. Symbols (isl parameters)
are quantified existentially, as MLIR does: a range holds every distance that occurs for
*some* symbol values, so a distance that depends on a symbol (``A[i + N]`` against
``A[i]``) gives an unbounded side unless the loop bounds bound it. :meth:`Dependence.instantiate`
gives the exact ranges for given symbol values.

Accesses that isl cannot model exactly (``memref.load/store``, indices that are neither IVs
nor symbols, ops with unknown effects on a memref such as ``func.call``, accesses inside
non-affine regions) give *may*-dependences (``exact=False``): present at every depth that
ordering allows, with the carrying loop's distance ``[1, +inf]`` and the inner ones
unbounded.

Analysing a loop (not a function) describes one execution of it: IVs of the enclosing
loops are fixed (they become isl parameters, constrained by the enclosing loop bounds),
the loop's own IV is depth 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import islpy as isl

from affine_ir import FuncOp, Operation, Value
from affine_ir.traits import allocating_op

from .isl_bridge import Scop, Statement, UnsupportedError, enclosing_loops, is_affine_region_op, is_scop_root
from .isl_results import int_val, val_to_int

__all__ = ["Dependence", "DependenceAnalysis", "Range", "dependences", "format_range"]

Range = tuple[int | None, int | None]
_DT = isl.dim_type


@dataclass(frozen=True, eq=False)
class Dependence:
    """One dependence from access ``src`` to access ``dst`` (see the module docstring).

    ``ivs``/``loops``: the loops common to both accesses below the analysed root, outermost
    first (depth ``d`` is ``ivs[d - 1]``; an ``affine.parallel`` appears once per IV).
    ``depths``: every depth at which the dependence exists, ascending; ``components[k]`` the
    distance range per common loop at ``depths[k]``. ``relation``: the isl map from ``src``
    iterations (tuple ``S<src_id>``) to ``dst`` iterations, over the IVs below the root;
    IVs of enclosing loops and symbols are its parameters. For ``exact=False`` it is an
    over-approximation.
    """

    kind: str
    src: Operation
    dst: Operation
    memref: Value
    src_id: int
    dst_id: int
    ivs: tuple[Value, ...]
    loops: tuple[Operation, ...]
    depths: tuple[int, ...]
    components: tuple[tuple[Range, ...], ...]
    exact: bool = True
    relation: Any = field(default=None, repr=False, compare=False)
    by_depth: tuple = field(default=(), repr=False, compare=False)  # isl maps, one per entry of depths
    params: tuple[tuple[str, Value], ...] = field(default=(), repr=False, compare=False)

    @property
    def common_depth(self) -> int:
        """Number of loops common to ``src`` and ``dst`` (below the root)."""
        return len(self.ivs)

    @property
    def carried_depth(self) -> int:
        """The smallest depth at which the dependence exists (``common_depth + 1``: loop-independent)."""
        return self.depths[0]

    @property
    def is_loop_carried(self) -> bool:
        return self.depths[0] <= len(self.ivs)

    @property
    def carrying_loop(self) -> Operation | None:
        """The loop of :attr:`carried_depth`, None when the dependence is loop-independent only."""
        d = self.depths[0]
        return self.loops[d - 1] if d <= len(self.loops) else None

    def carried_at(self, depth: int) -> bool:
        """Whether some dependent pair is at ``depth`` (carried by loop ``depth``)."""
        return depth in self.depths

    def distances_at(self, depth: int) -> tuple[Range, ...] | None:
        """Distance range per common loop of the pairs at ``depth``; None when there are none."""
        for d, comp in zip(self.depths, self.components):
            if d == depth:
                return comp
        return None

    @property
    def distances(self) -> tuple[Range, ...]:
        """Distance range per common loop over all dependent pairs (the hull of the depths' ranges)."""
        return tuple(_hull([comp[k] for comp in self.components]) for k in range(len(self.ivs)))

    def has_pair(self, depth: int, distances: dict[int, Range]) -> bool:
        """Whether some dependent pair at ``depth`` has, for every ``k`` given, its distance on
        common loop ``k`` (0-based: ``ivs[k]``) within the inclusive range ``distances[k]``
        (``None``: unbounded side), for some symbol values. Exact for an exact dependence; for a
        may-dependence, whether the ranges meet its distance ranges at that depth."""
        comps = self.distances_at(depth)
        if comps is None:
            return False
        if not self.exact:
            return all(_meets(comps[k], r) for k, r in distances.items())
        deltas = self.by_depth[self.depths.index(depth)]
        c = len(self.ivs)
        n_in, n_out = deltas.dim(_DT.in_), deltas.dim(_DT.out)
        s = deltas.project_out(_DT.in_, c, n_in - c).project_out(_DT.out, c, n_out - c)
        s = s.reset_tuple_id(_DT.in_).reset_tuple_id(_DT.out).deltas()
        for k, (lo, hi) in distances.items():
            for bound, sign in ((lo, 1), (hi, -1)):
                if bound is not None:
                    con = isl.Constraint.alloc_inequality(s.get_space())
                    s = s.add_constraint(con.set_coefficient_val(_DT.set, k, sign).set_constant_val(-sign * bound))
        return not s.is_empty()

    @property
    def kind_name(self) -> str:
        return self.kind if self.exact else f"may-{self.kind}"

    def instantiate(self, symbols: dict[Value, int]) -> Dependence | None:
        """This dependence for the given values of symbols (and enclosing IVs): exact depths and
        distances for that instance; None when no pair remains. Unbound parameters stay free."""
        if not self.exact:
            return self
        maps = [_fix_params(m, self.params, symbols) for m in self.by_depth]
        kept = [(d, m) for d, m in zip(self.depths, maps) if not m.is_empty()]
        if not kept:
            return None
        c = len(self.ivs)
        return Dependence(self.kind, self.src, self.dst, self.memref, self.src_id, self.dst_id, self.ivs,
                          self.loops, tuple(d for d, _ in kept), tuple(_components(m, d, c) for d, m in kept),
                          True, reduce(isl.Map.union, [m for _, m in kept]), tuple(m for _, m in kept),
                          self.params)

    def iteration_pairs(self, symbols: dict[Value, int] | None = None,
                        limit: int = 100_000) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
        """The dependent ``(src IVs, dst IVs)`` pairs (IVs below the root) for the given values of
        every parameter; ValueError if a parameter is unbound or there are more than ``limit``."""
        if not self.exact:
            raise ValueError("the pairs of a may-dependence are not known")
        m = _fix_params(self.relation, self.params, symbols or {})
        if m.dim(_DT.param):
            free = [m.get_dim_name(_DT.param, k) for k in range(m.dim(_DT.param))]
            raise ValueError(f"unbound parameters: {', '.join(free)}")
        points = m.wrap()
        if not points.is_bounded():
            raise ValueError("infinitely many dependent pairs")
        n_in, n = m.dim(_DT.in_), points.dim(_DT.set)
        out: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()

        def visit(point: isl.Point) -> None:
            if len(out) <= limit:  # an exception cannot stop isl's enumeration
                vals = [point.get_coordinate_val(_DT.set, k).to_python() for k in range(n)]
                out.add((tuple(vals[:n_in]), tuple(vals[n_in:])))

        points.foreach_point(visit)
        if len(out) > limit:
            raise ValueError(f"more than {limit} dependent pairs")
        return out

    def __str__(self) -> str:
        src = f"S{self.src_id} ({_describe(self.src)})"
        dst = f"S{self.dst_id} ({_describe(self.dst)})"
        names = [value_name(v) for v in self.ivs]
        parts = [names[d - 1] if d <= len(names) else "loop-independent" for d in self.depths]
        how = f"carried by {parts[0]}" if self.is_loop_carried else "loop-independent"
        if len(parts) > 1:
            how += " (also " + ", ".join(parts[1:]) + ")"
        dist = ", distance (" + ", ".join(format_range(r) for r in self.distances) + ")" if self.ivs else ""
        note = "" if self.exact else " [conservative]"
        return f"{self.kind_name} {value_name(self.memref)}: {src} -> {dst} {how}{dist}{note}"


def dependences(func_or_loop: Operation, include_rar: bool = False) -> list[Dependence]:
    """Every dependence between accesses under ``func_or_loop`` (a ``func.func``, ``affine.for``
    or ``affine.parallel``), ordered by (source, destination) access number in walk order.

    Guarantees: exact for affine accesses (the iteration pairs, depths and distance ranges are
    those of the program, for some symbol values); conservative for the rest (``exact=False``).

    Example: ``affine.for %i = 0 to 9 { %a = affine.load %A[%i]; affine.store %a, %A[%i + 1] }``
    has one dependence, RAW from the store to the load, carried by ``%i`` (depth 1) with
    distance 1: the store of iteration ``i`` writes what the load of iteration ``i + 1`` reads.
    """
    return DependenceAnalysis(func_or_loop).all(include_rar)


class DependenceAnalysis:
    """The Scop of a root and the dependences between pairs of its statements (memoized).

    For a loop root, the IVs of enclosing loops (and other values defined outside it) are
    isl parameters, constrained by the bounds of those loops and the enclosing ``affine.if``
    conditions (the *context*)."""

    def __init__(self, root: Operation, scop: Scop | None = None):
        if not is_scop_root(root):
            raise TypeError(f"dependences need a func.func, affine.for or affine.parallel, got '{root.name}'")
        self.root = root
        self.scop = scop if scop is not None and scop.root is root else Scop(root)
        self.statements = self.scop.statements
        self.context = None if isinstance(root, FuncOp) else _context(self.scop, root)
        self._params = tuple((n, v) for n, v in self.scop.params.values())
        self._cache: dict[tuple[int, int], Dependence | None] = {}

    def all(self, include_rar: bool = False) -> list[Dependence]:
        by_memref: dict[Value, list[Statement]] = {}
        for s in self.statements:
            by_memref.setdefault(s.memref, []).append(s)
        out = []
        for s in self.statements:
            for t in by_memref[s.memref]:
                if s.is_write or t.is_write or include_rar:
                    dep = self.pair(s, t)
                    if dep is not None:
                        out.append(dep)
        return out

    def pair(self, s: Statement, t: Statement) -> Dependence | None:
        """The dependence from ``s`` to ``t`` (same memref assumed), or None."""
        key = (s.id, t.id)
        if key not in self._cache:
            self._cache[key] = self._compute(s, t)
        return self._cache[key]

    def _compute(self, s: Statement, t: Statement) -> Dependence | None:
        c = self.scop.common_depth(s, t)
        loops = s.loops[:c]
        before = self.scop.before_in_text(s, t)
        exact = s.is_affine and t.is_affine and not (s.in_unknown_region or t.in_unknown_region)
        levels = self._levels(s, t, c, before, exact, fresh_depth(s.memref, loops))
        if not levels:
            return None
        comps = tuple(_components(m, d, c) if exact else _may_components(d, c) for d, m in levels)
        maps = tuple(m for _, m in levels)
        return Dependence(dependence_kind(s, t), s.op, t.op, s.memref, s.id, t.id, tuple(lp.iv for lp in loops),
                          tuple(lp.op for lp in loops), tuple(d for d, _ in levels), comps, exact,
                          reduce(isl.Map.union, maps), maps, self._params)

    def _levels(self, s: Statement, t: Statement, c: int, before: bool, exact: bool,
                fresh: int = 0) -> list[tuple[int, isl.Map]]:
        """(depth, pairs at that depth) for each depth with pairs; for a may-dependence, every
        depth the ordering allows, with all ordered pairs of the domains. No pair lies at a depth
        ``<= fresh`` (the memref is allocated anew in each iteration of those loops)."""
        if exact:
            rel = s.access.apply_range(t.access.reverse())
        else:
            rel = isl.Map.from_domain_and_range(s.domain, t.domain)
        if self.context is not None:
            rel = rel.align_params(self.context.get_space()).intersect_params(
                self.context.align_params(rel.get_space()))
        if exact and rel.is_empty():
            return []
        levels = []
        for k in range(c):
            at = rel.order_lt(_DT.in_, k, _DT.out, k)
            if k < fresh:
                pass  # another iteration of loop k + 1 touches another buffer
            elif not exact or not at.is_empty():
                levels.append((k + 1, at))
            rel = rel.equate(_DT.in_, k, _DT.out, k)
        if (before or (not exact and s.in_unknown_region and t.in_unknown_region)) and \
                (not exact or not rel.is_empty()):
            levels.append((c + 1, rel))
        return levels


def fresh_depth(memref: Value, loops) -> int:
    """How many of ``loops`` (LoopInfo, outermost first) enclose the op that allocates
    ``memref`` (a ``memref.alloc``/``alloca`` in their bodies): each iteration of those loops
    allocates a buffer of its own, so no dependence through ``memref`` crosses their iterations."""
    owner = memref.owner
    if not isinstance(owner, Operation) or allocating_op(memref) is None:
        return 0
    n = 0
    for lp in loops:
        if not lp.op.is_ancestor_of(owner):
            break
        n += 1
    return n


def _context(scop: Scop, root: Operation) -> isl.Set:
    """The values of the enclosing loops' IVs (parameters of ``scop``) for which ``root`` runs:
    their bounds and the enclosing affine.if conditions (what cannot be expressed is dropped)."""
    top = root
    while top.parent_op is not None and is_affine_region_op(top.parent_op):
        top = top.parent_op
    cons = []
    if top is not root:
        loops, guards = enclosing_loops(root, top, include_self=False)
        for depth, lp in enumerate(loops):
            try:
                text = scop._loop_constraint(lp, depth, [])
            except UnsupportedError:
                continue
            cons.append(re.sub(rf"\bi{depth}\b", scop.param_name(lp.iv), text))
        for if_op, then in guards:
            try:
                cons.append(scop._guard_constraint(if_op, then, []))
            except UnsupportedError:
                continue
    body = " and ".join(f"({c})" for c in cons) or "true"
    return isl.Set(f"{scop._param_prefix()}{{ : {body} }}")


def format_range(r: Range) -> str:
    """``3`` for ``(3, 3)``, else ``[lo, hi]`` with ``-inf``/``+inf`` for unbounded sides."""
    lo, hi = r
    if lo is not None and lo == hi:
        return str(lo)
    return f"[{'-inf' if lo is None else lo}, {'+inf' if hi is None else hi}]"


# -- helpers ----------------------------------------------------------------------------------
def dependence_kind(s: Statement, t: Statement) -> str:
    """``RAW``, ``WAR``, ``WAW`` or ``RAR`` for a dependence from access ``s`` to access ``t``."""
    if s.is_write:
        return "WAW" if t.is_write else "RAW"
    return "WAR" if t.is_write else "RAR"


def _components(m: isl.Map, depth: int, c: int) -> tuple[Range, ...]:
    """Exact distance range per common loop of the pairs in ``m`` (all at ``depth``)."""
    if depth > c:
        return ((0, 0),) * c
    n_in, n_out = m.dim(_DT.in_), m.dim(_DT.out)
    p = m.project_out(_DT.in_, c, n_in - c).project_out(_DT.out, c, n_out - c)
    deltas = p.reset_tuple_id(_DT.in_).reset_tuple_id(_DT.out).deltas()
    ls = isl.LocalSpace.from_space(deltas.get_space())
    out: list[Range] = [(0, 0)] * (depth - 1)
    for k in range(depth - 1, c):
        aff = isl.Aff.var_on_domain(ls, _DT.set, k)
        out.append((_val(deltas.min_val(aff)), _val(deltas.max_val(aff))))
    return tuple(out)


def _may_components(depth: int, c: int) -> tuple[Range, ...]:
    if depth > c:
        return ((0, 0),) * c
    return ((0, 0),) * (depth - 1) + ((1, None),) + ((None, None),) * (c - depth)


def _val(v: isl.Val) -> int | None:
    if v.is_infty() or v.is_neginfty() or v.is_nan():
        return None
    return val_to_int(v)


def _hull(ranges: list[Range]) -> Range:
    los = [r[0] for r in ranges]
    his = [r[1] for r in ranges]
    return (None if None in los else min(los), None if None in his else max(his))


def _fix_params(m: isl.Map, params: tuple[tuple[str, Value], ...], values: dict[Value, int]) -> isl.Map:
    """``m`` with the parameters standing for keys of ``values`` fixed to them and removed, and
    the parameters it does not involve removed."""
    ctx = m.get_ctx()
    for name, v in params:
        pos = m.find_dim_by_name(_DT.param, name)
        if pos < 0:
            continue
        if v in values:
            m = m.fix_val(_DT.param, pos, int_val(ctx, int(values[v]))).project_out(_DT.param, pos, 1)
        elif not m.involves_dims(_DT.param, pos, 1):
            m = m.project_out(_DT.param, pos, 1)
    return m


def value_name(v: Value) -> str:
    """``%name`` of ``v`` for messages; without a name hint ``%op.name#k`` (result ``k``) or ``%arg<k>``."""
    if v.name_hint:
        return f"%{v.name_hint}"
    owner = v.owner
    if isinstance(owner, Operation):
        return f"%{owner.name}#{v.index}"
    return f"%arg{v.index}"


def _describe(op: Operation) -> str:
    return f"{op.name} at {op.location}" if op.location else op.name



def _meets(a: Range, b: Range) -> bool:
    """Whether two inclusive ranges (None: unbounded side) intersect."""
    lo = max((x for x in (a[0], b[0]) if x is not None), default=None)
    hi = min((x for x in (a[1], b[1]) if x is not None), default=None)
    return lo is None or hi is None or lo <= hi
