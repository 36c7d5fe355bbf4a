"""The only bridge between the IR and isl: iteration domains, access relations, orderings,
and conversion of isl affine functions back to :class:`AffineExpr`.

A :class:`Scop` (static control part) models every memory access under a root op (a
``func.func`` or a loop): each access is a :class:`Statement` with

- a *domain*: the integer points of its enclosing ``affine.for``/``affine.parallel`` IVs
  (from the root down), bounded by the loops' max/min bound maps and steps and by
  enclosing ``affine.if`` conditions (negated for else branches), with the function's
  symbols as isl parameters (under a loop root, also every value defined outside it, such
  as the IVs of enclosing loops); integer constants are folded in;
- an *access relation*: domain point -> memref element (for a vector access, the box of
  elements it covers);
- a *path*: its position in program order, so that two statements can be ordered.

Ops with a memref operand whose effect is unknown (``func.call``, ``memref.dealloc``, an
unregistered op) are ``opaque`` statements: a write of any element (``is_affine`` False).
Accesses nested in a non-affine region op are marked ``in_unknown_region``.

isl tuple names: statements ``S0, S1, ...`` in walk order, memrefs ``M0, M1, ...``;
IV names ``i0, i1, ...`` by depth; parameter names from the symbols' name hints (never an
isl keyword, nor ``i0``/``j0``/``o0``/``e0``-like). Strings are parsed once per statement
(domains once per loop-and-guard context) and cached on the Scop. The way back (isl results
as AffineExprs and bound maps, operation budgets) is :mod:`analysis.isl_results`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import islpy as isl

from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.memref import DimOp
from affine_ir.interfaces import AffineAccessInterface, LoopLikeOpInterface, MemRefAccessInterface
from affine_ir.traits import EffectKind, RecursiveMemoryEffects
from affine_ir.types import MemRefType, VectorType


@dataclass
class LoopInfo:
    """One IV of an enclosing loop: the op, which IV of it (parallel loops have several)."""

    op: Operation
    index: int = 0

    @property
    def iv(self) -> Value:
        return self.op.induction_vars[self.index]


@dataclass
class Statement:
    """A memory access under the root: its op, loops, guards and program-order path."""

    id: int
    op: Operation
    loops: list[LoopInfo]
    guards: list[tuple[AffineIfOp, bool]]  # (if op, in then-branch?)
    path: tuple[int, ...]  # positions of the ancestors in their blocks, root first
    memref: Value
    is_write: bool
    is_affine: bool = True  # False: memref.load/store or an index we cannot express
    domain: isl.Set | None = field(default=None, repr=False)
    access: isl.Map | None = field(default=None, repr=False)
    # An op with a memref operand whose effect is unknown (func.call, memref.dealloc, an
    # unregistered op): modelled as a write of any element of the memref.
    opaque: bool = False
    # Nested in a region of a non-affine op (gpu.launch, an unregistered op): it may run
    # any number of times per iteration of its affine loops.
    in_unknown_region: bool = False

    @property
    def name(self) -> str:
        return f"S{self.id}"

    @property
    def depth(self) -> int:
        return len(self.loops)

    @property
    def ivs(self) -> list[Value]:
        return [lp.iv for lp in self.loops]


class UnsupportedError(Exception):
    """A construct the model cannot express exactly (the caller falls back conservatively)."""


class Scop:
    """The polyhedral model of all memory accesses under ``root``; with ``accesses=False`` only
    its names and loop domains (what :func:`op_domain` needs: no statements are collected, which
    is most of the cost of a model of a large nest)."""

    def __init__(self, root: Operation, accesses: bool = True):
        self.root = root
        self.ctx = isl.DEFAULT_CONTEXT
        self.params: dict[Value, tuple[str, Value]] = {}
        self.memrefs: dict[Value, tuple[str, Value]] = {}
        self.statements: list[Statement] = []
        self._domains: dict[tuple, tuple[isl.Set, bool]] = {}
        if accesses:
            self._collect(root, [], [], (), False)
        for s in self.statements:
            self._model(s)
        # Statements modelled early lack parameters met later: give all of them every one.
        space = isl.Space.create_from_names(self.ctx, set=[], params=[n for n, _ in self.params.values()]).params()
        for s in self.statements:
            s.domain = s.domain.align_params(space)
            s.access = s.access.align_params(space)

    # -- collection ---------------------------------------------------------------
    def _collect(self, op: Operation, loops: list[LoopInfo], guards: list, path: tuple[int, ...],
                 unknown: bool) -> None:
        for mem, is_write, is_affine, opaque in _access_parts(op):
            self.statements.append(Statement(len(self.statements), op, list(loops), list(guards), path, mem,
                                             is_write, is_affine, opaque=opaque,
                                             in_unknown_region=unknown))
        if op is not self.root and op.regions and not is_affine_region_op(op):
            unknown = True
        inner_loops = loops
        if isinstance(op, LoopLikeOpInterface):
            inner_loops = loops + [LoopInfo(op, k) for k in range(len(op.induction_vars))]
        offset = 0
        for r, region in enumerate(op.regions):
            for block in region.blocks:
                g = guards + [(op, r == 0)] if isinstance(op, AffineIfOp) else guards
                for k, child in enumerate(block.ops):
                    self._collect(child, inner_loops, g, path + (offset + k,), unknown)
                offset += len(block.ops)

    # -- names -------------------------------------------------------------------------
    def param_name(self, v: Value) -> str:
        entry = self.params.get(v)
        if entry is None:
            base = re.sub(r"[^A-Za-z0-9_]", "_", v.name_hint or "p") or "p"
            if not base[0].isalpha():
                base = "p" + base
            taken = {n for n, _ in self.params.values()}
            name, k = base, 0
            while name in taken or name in _ISL_KEYWORDS or re.fullmatch(r"[ioej]\d+", name):
                name, k = f"{base}_{k}", k + 1
            entry = self.params[v] = (name, v)
        return entry[0]

    def memref_name(self, v: Value) -> str:
        entry = self.memrefs.get(v)
        if entry is None:
            entry = self.memrefs[v] = (f"M{len(self.memrefs)}", v)
        return entry[0]

    # -- expressions ---------------------------------------------------------------------
    def value_expr(self, v: Value, ivs: list[Value]) -> str:
        """isl text of an index value: an IV name, an affine.apply composed in, or a parameter."""
        for k, iv in enumerate(ivs):
            if iv is v:
                return f"i{k}"
        owner = v.owner
        if isinstance(owner, AffineApplyOp):
            return "(" + self.map_exprs(owner.map, owner.operands, ivs)[0] + ")"
        const = constant_index(v)
        if const is not None:
            return f"({const})"
        from affine_ir.dialects.affine import is_valid_symbol

        if is_valid_symbol(v) or self._defined_outside_root(v):
            return self.param_name(v)
        raise UnsupportedError(f"index value %{v.name_hint or '?'} is neither an IV nor a symbol")

    def _defined_outside_root(self, v: Value) -> bool:
        """Whether ``v`` is defined outside a loop (or if) root: invariant there, so a parameter."""
        if isinstance(self.root, FuncOp):
            return False
        op = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op
        return op is not None and op is not self.root and not self.root.is_ancestor_of(op)

    def map_exprs(self, m: AffineMap, operands, ivs: list[Value]) -> list[str]:
        names = [self.value_expr(v, ivs) for v in operands]
        return [expr_to_isl(e, names[: m.num_dims], names[m.num_dims :]) for e in m.results]

    # -- domains and accesses --------------------------------------------------------------
    def _model(self, s: Statement) -> None:
        # Statements under the same loops and guards share their domain (parsed once).
        key = (tuple((lp.op, lp.index) for lp in s.loops), tuple(s.guards))
        cached = self._domains.get(key)
        if cached is not None:
            s.domain = cached[0].set_tuple_name(s.name)
            s.is_affine = s.is_affine and cached[1]
        else:
            exact = True
            ivs_all = s.ivs
            try:
                cons = []
                for depth, lp in enumerate(s.loops):
                    cons.append(self._loop_constraint(lp, depth, ivs_all[:depth]))
                for if_op, then in s.guards:
                    cons.append(self._guard_constraint(if_op, then, ivs_all))
            except UnsupportedError:
                # Over-approximate: drop what cannot be expressed (conservative for dependences).
                exact = s.is_affine = False
                cons = self._safe_constraints(s)
            ivs = ", ".join(f"i{k}" for k in range(s.depth))
            body = " and ".join(f"({c})" for c in cons) or "true"
            s.domain = _parsed(isl.Set, f"{self._param_prefix()}{{ {s.name}[{ivs}] : {body} }}")
            self._domains[key] = (s.domain, exact)
        s.access = self._access_map(s)
        s.domain = _align(s.domain, self)
        s.access = _align(s.access, self).intersect_domain(s.domain)

    def _safe_constraints(self, s: Statement) -> list[str]:
        out = []
        for depth, lp in enumerate(s.loops):
            try:
                out.append(self._loop_constraint(lp, depth, s.ivs[:depth]))
            except UnsupportedError:
                pass
        return out

    def _loop_constraint(self, lp: LoopInfo, depth: int, outer: list[Value]) -> str:
        iv = f"i{depth}"
        op = lp.op
        if isinstance(op, AffineForOp):
            lbs = self.map_exprs(op.lower_bound_map, op.lower_bound_operands, outer)
            ubs = self.map_exprs(op.upper_bound_map, op.upper_bound_operands, outer)
            step = op.step
        else:
            k = lp.index
            lm, um = op.attributes["lower_bounds"], op.attributes["upper_bounds"]
            lbs_all = self.map_exprs(lm, op.lower_operands, outer)
            ubs_all = self.map_exprs(um, op.upper_operands, outer)
            lbs = _group(lbs_all, op.attributes["lower_groups"])[k]
            ubs = _group(ubs_all, op.attributes["upper_groups"])[k]
            step = op.steps[k]
        parts = [f"{iv} >= {lb}" for lb in lbs] + [f"{iv} < {ub}" for ub in ubs]
        if step == 1:
            return " and ".join(parts)
        strided = []
        for r, lb in enumerate(lbs):
            is_max = [f"{lb} >= {other}" for q, other in enumerate(lbs) if q != r]
            strided.append(" and ".join([f"exists (e{depth} : {iv} = {lb} + {step} * e{depth})", *is_max]))
        return " and ".join(parts) + " and (" + " or ".join(f"({x})" for x in strided) + ")"

    def _guard_constraint(self, if_op: AffineIfOp, then: bool, ivs: list[Value]) -> str:
        s: IntegerSet = if_op.condition
        names = [self.value_expr(v, ivs) for v in if_op.operands]
        conds = [f"{expr_to_isl(c, names[: s.num_dims], names[s.num_dims :])} {'=' if eq else '>='} 0"
                 for c, eq in zip(s.constraints, s.eq_flags)]
        inside = " and ".join(conds) or "true"
        return inside if then else f"not ({inside})"

    def _access_map(self, s: Statement) -> isl.Map:
        ivs = ", ".join(f"i{k}" for k in range(s.depth))
        mem = self.memref_name(s.memref)
        rank = s.memref.type.rank
        outs = None
        if s.is_affine and isinstance(s.op, AffineAccessInterface):
            try:
                outs = self.map_exprs(s.op.map, s.op.indices, s.ivs)
            except UnsupportedError:
                s.is_affine = False
        if outs is None:
            s.is_affine = False
            outs = [f"o{k}" for k in range(rank)]
            return _parsed(isl.Map, f"{self._param_prefix()}{{ {s.name}[{ivs}] -> {mem}[{', '.join(outs)}] }}")
        vt = s.op.vector_type
        if isinstance(vt, VectorType) and vt.shape:
            # A vector access touches a box: its shape over the trailing memref dims.
            first = rank - len(vt.shape)
            cons = [f"o{k} = {e}" if k < first else f"{e} <= o{k} < {e} + {vt.shape[k - first]}"
                    for k, e in enumerate(outs)]
            names = ", ".join(f"o{k}" for k in range(rank))
            return _parsed(isl.Map, f"{self._param_prefix()}{{ {s.name}[{ivs}] -> {mem}[{names}] : "
                           f"{' and '.join(f'({c})' for c in cons)} }}")
        return _parsed(isl.Map, f"{self._param_prefix()}{{ {s.name}[{ivs}] -> {mem}[{', '.join(outs)}] }}")

    def _param_prefix(self) -> str:
        names = [n for n, _ in self.params.values()]
        return f"[{', '.join(names)}] -> " if names else ""

    # -- queries -------------------------------------------------------------------------
    def common_depth(self, a: Statement, b: Statement) -> int:
        """Number of loops (IVs) enclosing both statements."""
        n = 0
        for x, y in zip(a.loops, b.loops):
            if x.op is not y.op or x.index != y.index:
                break
            n += 1
        return n

    def before_in_text(self, a: Statement, b: Statement) -> bool:
        """Whether ``a`` comes before ``b`` in program order at equal common IVs."""
        return a.path < b.path


def expr_to_isl(e: AffineExpr, dim_names, sym_names) -> str:
    """isl text of an affine expression (floor/ceil for divisions, ``mod`` for remainders)."""
    parts = []
    for k in sorted(e.used_dims()):
        c = e.coefficient_of_dim(k)
        if c:
            parts.append(f"{c} * ({dim_names[k]})")
    for k in sorted(e.used_symbols()):
        c = e.coefficient_of_symbol(k)
        if c:
            parts.append(f"{c} * ({sym_names[k]})")
    for t in e.div_terms():
        inner = expr_to_isl(t.expr, dim_names, sym_names)
        if t.kind == "floordiv":
            atom = f"floor(({inner}) / {t.divisor})"
        elif t.kind == "ceildiv":
            atom = f"ceil(({inner}) / {t.divisor})"
        else:
            atom = f"(({inner}) mod {t.divisor})"
        parts.append(f"{t.coeff} * {atom}")
    parts.append(str(e.constant_term))
    return " + ".join(parts).replace("+ -", "- ")


def _group(items: list, groups) -> list[list]:
    out, k = [], 0
    for g in groups:
        out.append(items[k : k + g])
        k += g
    return out


def statements_under(scop: Scop, op: Operation) -> list[Statement]:
    """The statements of ``scop`` inside ``op`` (or of ``op`` itself), in order: one walk of
    ``op`` instead of an ancestor test per statement of the model."""
    inside = {id(o) for o in op.walk()}
    return [s for s in scop.statements if id(s.op) in inside]


@functools.lru_cache(maxsize=1 << 16)
def _parsed(kind, text: str):
    """``kind(text)`` (an isl set or map), parsed once per text: isl objects are immutable, and a
    pass that rebuilds the model of a function after each change (fusion) meets the same
    statements again (most of the parsing of a whole model's graph)."""
    return kind(text)


def _align(obj, scop: Scop):
    """Give ``obj`` every parameter of the Scop, in the Scop's order."""
    names = [n for n, _ in scop.params.values()]
    space = isl.Space.create_from_names(scop.ctx, set=[], params=names).params()
    return obj.align_params(space)


_ISL_KEYWORDS = frozenset({"and", "or", "not", "exists", "implies", "mod", "floor", "ceil", "floord", "ceild",
                           "min", "max", "true", "false", "rat", "infty", "Infty", "NaN", "domain", "range"})


def is_scop_root(op: Operation) -> bool:
    """Whether a :class:`Scop` (and so a dependence analysis) can be built on ``op``: a function
    or a loop."""
    return isinstance(op, FuncOp) or isinstance(op, LoopLikeOpInterface)


def is_affine_region_op(op: Operation) -> bool:
    """Whether the Scop models the regions of ``op`` exactly: a loop (its IVs become dimensions)
    or an ``affine.if`` (its condition becomes a guard)."""
    return isinstance(op, LoopLikeOpInterface) or isinstance(op, AffineIfOp)


def _access_parts(op: Operation) -> list[tuple[Value, bool, bool, bool]]:
    """(memref, is_write, is_affine, opaque) for each memory access ``op`` makes, from its
    interfaces and declared effects: an affine access is exact, a ``memref.load/store`` is an
    access of an unknown element; another op with effects on memref operands (``memref.dealloc``)
    reads (READ) or writes (any other kind) any element of each; an op with unknown effects
    (``func.call``, unregistered ops) may write any element of every memref operand."""
    if isinstance(op, AffineAccessInterface):
        return [(op.memref, op.is_write, True, False)]
    if isinstance(op, MemRefAccessInterface):
        return [(op.memref, op.is_write, False, False)]
    if op.has_trait(RecursiveMemoryEffects):  # its nested ops are collected on their own
        return []
    effects = op.memory_effects()
    out: list[tuple[Value, bool, bool, bool]] = []
    if effects is None:
        for v in op.operands:
            if isinstance(v.type, MemRefType) and all(v is not m for m, *_ in out):
                out.append((v, True, False, True))
        return out
    for e in effects:
        on_operand = e.value is not None and any(e.value is v for v in op.operands)
        if on_operand and e.kind is not EffectKind.ALLOCATE and all(e.value is not m for m, *_ in out):
            out.append((e.value, e.kind is not EffectKind.READ, False, True))
    return out


def constant_index(v: Value) -> int | None:
    """The value of an integer ``arith.constant`` or of ``memref.dim`` of a static dimension."""
    owner = v.owner
    if isinstance(owner, ConstantOp):
        value = owner.value
        return int(value) if isinstance(value, int) else None
    if isinstance(owner, DimOp):
        mem, k = owner.operands
        kc = constant_index(k)
        t = mem.type
        if kc is not None and isinstance(t, MemRefType) and 0 <= kc < t.rank and t.shape[kc] is not None \
                and t.shape[kc] >= 0:
            return int(t.shape[kc])
    return None


# -- loop domains and isl results back to affine maps (regions, slices) -----------------------

def enclosing_loops(op: Operation, root: Operation,
                    include_self: bool = True) -> tuple[list[LoopInfo], list[tuple[AffineIfOp, bool]]]:
    """The loop IVs (outermost first) and ``affine.if`` guards (with: in the then-branch?)
    from ``root`` down to ``op``, as a Scop rooted at ``root`` counts them (``root``'s own IVs
    when it is a loop); ``op``'s own IVs last when it is a loop and ``include_self``. IV ``k``
    is isl dim ``i<k>`` of the Scop's statements under ``op``."""
    path = [a for a in op.ancestors() if a is root or root.is_ancestor_of(a)][::-1]
    if op is not root or not path:
        path.append(op)
    loops: list[LoopInfo] = []
    guards: list[tuple[AffineIfOp, bool]] = []
    for k, a in enumerate(path):
        if a is op and not include_self:
            break
        if isinstance(a, LoopLikeOpInterface):
            loops.extend(LoopInfo(a, j) for j in range(len(a.induction_vars)))
        elif isinstance(a, AffineIfOp) and a is not op:
            guards.append((a, path[k + 1].parent is a.then_block))
    return loops, guards


def op_domain(scop: Scop, op: Operation, name: str = "L", include_self: bool = True) -> isl.Set:
    """The iterations of the loops enclosing ``op`` (and of ``op``'s own IVs when it is a loop),
    bounded by their bounds, steps and enclosing ``affine.if`` guards, as an isl set
    ``name[i0, ...]`` with the Scop's parameters. Raises UnsupportedError for bounds or guards
    that are not affine."""
    loops, guards = enclosing_loops(op, scop.root, include_self)
    ivs = [lp.iv for lp in loops]
    cons = [scop._loop_constraint(lp, d, ivs[:d]) for d, lp in enumerate(loops)]
    cons += [scop._guard_constraint(g, then, ivs) for g, then in guards]
    body = " and ".join(f"({c})" for c in cons) or "true"
    dims = ", ".join(f"i{k}" for k in range(len(loops)))
    names = [n for n, _ in scop.params.values()]
    space = isl.Space.create_from_names(scop.ctx, set=[], params=names).params()
    return _parsed(isl.Set, f"{scop._param_prefix()}{{ {name}[{dims}] : {body} }}").align_params(space)


def loop_domain_covers_context(scop: Scop, loop: Operation) -> bool:
    """Whether ``loop`` (an ``affine.for`` under ``scop.root``) has at least one iteration for
    every point of the enclosing loops' domain (guards included) and every parameter value.
    Raises UnsupportedError for bounds or guards that are not affine."""
    inner = op_domain(scop, loop, "L", include_self=True)
    outer = op_domain(scop, loop, "L", include_self=False)
    n = inner.dim(isl.dim_type.set)
    reached = inner.project_out(isl.dim_type.set, n - 1, 1).set_tuple_name("L")
    return outer.is_subset(reached)


def loop_runs_at_most_once(scop: Scop, loop: Operation) -> bool:
    """Whether ``loop`` (an ``affine.for`` under ``scop.root``) has at most one iteration for every
    point of the enclosing loops' domain (guards included) and every parameter value: its domain
    as a map from the outer IVs to its own IV has nothing beyond its lexicographic minimum.
    Raises UnsupportedError for bounds or guards that are not affine."""
    inner = op_domain(scop, loop, "L", include_self=True)
    n = inner.dim(isl.dim_type.set)
    per_outer = isl.Map.from_range(inner).move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, n - 1)
    return per_outer.subtract(per_outer.lexmin()).is_empty()


def condition_may_hold(scop: Scop, op: Operation, condition: IntegerSet, operands) -> bool:
    """Whether ``condition`` over ``operands`` (index values valid at ``op``, a descendant of
    ``scop.root``) holds at some iteration of the loops enclosing ``op`` (guards included) for
    some parameter values (exact). Raises UnsupportedError for what is not affine."""
    loops, _ = enclosing_loops(op, scop.root, include_self=False)
    ivs = [lp.iv for lp in loops]
    domain = op_domain(scop, op, "L", include_self=False)
    names = [scop.value_expr(v, ivs) for v in operands]
    nd = condition.num_dims
    conds = [f"{expr_to_isl(c, names[:nd], names[nd:])} {'=' if eq else '>='} 0"
             for c, eq in zip(condition.constraints, condition.eq_flags)]
    dims = ", ".join(f"i{k}" for k in range(len(loops)))
    held = isl.Set(f"{scop._param_prefix()}{{ L[{dims}] : {' and '.join(conds) or 'true'} }}")
    space = isl.Space.create_from_names(scop.ctx, set=[], params=[n for n, _ in scop.params.values()]).params()
    return not domain.align_params(space).intersect(held.align_params(space)).is_empty()
