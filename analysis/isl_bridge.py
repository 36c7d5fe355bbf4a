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
(domains once per loop-and-guard context) and cached on the Scop.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl

from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineParallelOp,
    AffineStoreOp,
    AffineVectorLoadOp,
    AffineVectorStoreOp,
    _AccessOp,
)
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.memref import DimOp, LoadOp, StoreOp
from affine_ir.types import MemRefType, VectorType

LOOP_OPS = (AffineForOp, AffineParallelOp)


@dataclass
class LoopInfo:
    """One IV of an enclosing loop: the op, which IV of it (parallel loops have several)."""

    op: Operation
    index: int = 0

    @property
    def iv(self) -> Value:
        return self.op.induction_var if isinstance(self.op, AffineForOp) else self.op.ivs[self.index]


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
    """The polyhedral model of all memory accesses under ``root``."""

    def __init__(self, root: Operation):
        self.root = root
        self.ctx = isl.DEFAULT_CONTEXT
        self.params: dict[int, tuple[str, Value]] = {}
        self.memrefs: dict[int, tuple[str, Value]] = {}
        self.statements: list[Statement] = []
        self._domains: dict[tuple, tuple[isl.Set, bool]] = {}
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
        if op is not self.root and op.regions and not isinstance(op, (*LOOP_OPS, AffineIfOp)):
            unknown = True
        inner_loops = loops
        if isinstance(op, AffineForOp):
            inner_loops = loops + [LoopInfo(op)]
        elif isinstance(op, AffineParallelOp):
            inner_loops = loops + [LoopInfo(op, k) for k in range(len(op.ivs))]
        offset = 0
        for r, region in enumerate(op.regions):
            for block in region.blocks:
                g = guards + [(op, r == 0)] if isinstance(op, AffineIfOp) else guards
                for k, child in enumerate(block.ops):
                    self._collect(child, inner_loops, g, path + (offset + k,), unknown)
                offset += len(block.ops)

    # -- names -------------------------------------------------------------------------
    def param_name(self, v: Value) -> str:
        entry = self.params.get(id(v))
        if entry is None:
            base = re.sub(r"[^A-Za-z0-9_]", "_", v.name_hint or "p") or "p"
            if not base[0].isalpha():
                base = "p" + base
            taken = {n for n, _ in self.params.values()}
            name, k = base, 0
            while name in taken or name in _ISL_KEYWORDS or re.fullmatch(r"[ioej]\d+", name):
                name, k = f"{base}_{k}", k + 1
            entry = self.params[id(v)] = (name, v)
        return entry[0]

    def memref_name(self, v: Value) -> str:
        entry = self.memrefs.get(id(v))
        if entry is None:
            entry = self.memrefs[id(v)] = (f"M{len(self.memrefs)}", v)
        return entry[0]

    def param_values(self) -> list[Value]:
        return [v for _, v in self.params.values()]

    # -- expressions ---------------------------------------------------------------------
    def value_expr(self, v: Value, ivs: list[Value]) -> str:
        """isl text of an index value: an IV name, an affine.apply composed in, or a parameter."""
        for k, iv in enumerate(ivs):
            if iv is v:
                return f"i{k}"
        owner = v.owner
        if isinstance(owner, AffineApplyOp):
            return "(" + self.map_exprs(owner.map, owner.operands, ivs)[0] + ")"
        const = _constant_index(v)
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
        key = (tuple((id(lp.op), lp.index) for lp in s.loops), tuple((id(g), then) for g, then in s.guards))
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
                cons = [c for c in self._safe_constraints(s)]
            ivs = ", ".join(f"i{k}" for k in range(s.depth))
            body = " and ".join(f"({c})" for c in cons) or "true"
            s.domain = isl.Set(f"{self._param_prefix()}{{ {s.name}[{ivs}] : {body} }}")
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
        if s.is_affine and isinstance(s.op, _AccessOp):
            try:
                outs = self.map_exprs(s.op.map, s.op.indices, s.ivs)
            except UnsupportedError:
                s.is_affine = False
        if outs is None:
            s.is_affine = False
            outs = [f"o{k}" for k in range(rank)]
            return isl.Map(f"{self._param_prefix()}{{ {s.name}[{ivs}] -> {mem}[{', '.join(outs)}] }}")
        vt = s.op.result.type if isinstance(s.op, AffineVectorLoadOp) else \
            s.op.value.type if isinstance(s.op, AffineVectorStoreOp) else None
        if isinstance(vt, VectorType) and vt.shape:
            # A vector access touches a box: its shape over the trailing memref dims.
            first = rank - len(vt.shape)
            cons = [f"o{k} = {e}" if k < first else f"{e} <= o{k} < {e} + {vt.shape[k - first]}"
                    for k, e in enumerate(outs)]
            names = ", ".join(f"o{k}" for k in range(rank))
            return isl.Map(f"{self._param_prefix()}{{ {s.name}[{ivs}] -> {mem}[{names}] : "
                           f"{' and '.join(f'({c})' for c in cons)} }}")
        return isl.Map(f"{self._param_prefix()}{{ {s.name}[{ivs}] -> {mem}[{', '.join(outs)}] }}")

    def _param_prefix(self) -> str:
        names = [n for n, _ in self.params.values()]
        return f"[{', '.join(names)}] -> " if names else ""

    # -- queries -------------------------------------------------------------------------
    @cached_property
    def param_space_names(self) -> list[str]:
        return [n for n, _ in self.params.values()]

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


def ordering_at_depth(n_src: int, n_dst: int, common: int, depth: int,
                      src_first: bool) -> tuple[str, list[str], list[str]] | None:
    """Iteration pairs ordered at ``depth`` (1-based, MLIR's meaning): equal on the first
    ``depth - 1`` common IVs and strictly increasing on the ``depth``-th; for
    ``depth == common + 1``, equal on all common IVs when ``src`` precedes ``dst`` in the
    text (``None`` when it does not). Returns the isl constraint text and the names of the
    source IVs (``i0..``) and destination IVs (``j0..``)."""
    src = [f"i{k}" for k in range(n_src)]
    dst = [f"j{k}" for k in range(n_dst)]
    eqs = [f"{src[k]} = {dst[k]}" for k in range(min(depth - 1, common))]
    if depth <= common:
        eqs.append(f"{src[depth - 1]} < {dst[depth - 1]}")
    elif not src_first:
        return None
    body = " and ".join(eqs) or "true"
    return body, src, dst


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


def _align(obj, scop: Scop):
    """Give ``obj`` every parameter of the Scop, in the Scop's order."""
    names = scop.param_space_names if "param_space_names" in scop.__dict__ else [n for n, _ in scop.params.values()]
    space = isl.Space.create_from_names(scop.ctx, set=[], params=names).params()
    return obj.align_params(space)


_ISL_KEYWORDS = frozenset({"and", "or", "not", "exists", "implies", "mod", "floor", "ceil", "floord", "ceild",
                           "min", "max", "true", "false", "rat", "infty", "Infty", "NaN", "domain", "range"})


def _access_parts(op: Operation) -> list[tuple[Value, bool, bool, bool]]:
    """(memref, is_write, is_affine, opaque) for each memory access ``op`` makes."""
    if isinstance(op, _AccessOp):
        return [(op.memref, isinstance(op, (AffineStoreOp, AffineVectorStoreOp)), True, False)]
    if isinstance(op, LoadOp):
        return [(op.memref, False, False, False)]
    if isinstance(op, StoreOp):
        return [(op.memref, True, False, False)]
    if op.is_pure or op.is_terminator:
        return []
    out: list[tuple[Value, bool, bool, bool]] = []
    for v in op.operands:
        if isinstance(v.type, MemRefType) and all(v is not m for m, *_ in out):
            out.append((v, True, False, True))
    return out


def _constant_index(v: Value) -> int | None:
    """The value of an integer ``arith.constant`` or of ``memref.dim`` of a static dimension."""
    owner = v.owner
    if isinstance(owner, ConstantOp):
        value = owner.value
        return int(value) if isinstance(value, int) else None
    if isinstance(owner, DimOp):
        mem, k = owner.operands
        kc = _constant_index(k)
        t = mem.type
        if kc is not None and isinstance(t, MemRefType) and 0 <= kc < t.rank and t.shape[kc] is not None \
                and t.shape[kc] >= 0:
            return int(t.shape[kc])
    return None


def aff_to_expr(aff: isl.Aff, in_names: dict[int, AffineExpr], param_names: dict[int, AffineExpr]) -> AffineExpr:
    """An isl ``Aff`` as an AffineExpr; ``in_names``/``param_names`` map isl input dims and
    parameters (by position) to the expressions they stand for. Raises UnsupportedError for a
    rational (non-integral) function."""
    den = aff.get_denominator_val().to_python()
    if den != 1:  # (checked first: a rational coefficient has no Python int value)
        raise UnsupportedError(f"rational affine function {aff}")
    total = AffineExpr.constant(0)
    dt = isl.dim_type
    for kind, table in ((dt.in_, in_names), (dt.param, param_names)):
        for k in range(aff.dim(kind)):
            c = aff.get_coefficient_val(kind, k).to_python() * den
            if c:
                total = total + table[k] * int(c)
    for k in range(aff.dim(dt.div)):
        c = aff.get_coefficient_val(dt.div, k).to_python() * den
        if c:
            div = aff.get_div(k)
            d = div.get_denominator_val().to_python()
            numer = aff_to_expr(div.scale_val(isl.Val.int_from_si(aff.get_ctx(), int(d))), in_names, param_names)
            total = total + numer.floordiv(int(d)) * int(c)
    total = total + int(aff.get_constant_val().to_python() * den)
    return total


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
        if isinstance(a, AffineForOp):
            loops.append(LoopInfo(a))
        elif isinstance(a, AffineParallelOp):
            loops.extend(LoopInfo(a, j) for j in range(len(a.ivs)))
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
    return isl.Set(f"{scop._param_prefix()}{{ {name}[{dims}] : {body} }}").align_params(space)


class BudgetExceeded(UnsupportedError):
    """An isl computation needed more operations than its budget (see :func:`isl_budget`)."""


@contextlib.contextmanager
def isl_budget(operations: int):
    """Bound the isl operations done inside the ``with`` (isl's ``max_operations`` quota), so
    that a query on a pathological set fails fast instead of taking seconds and gigabytes:
    isl running out of it raises :class:`BudgetExceeded`. Inside an outer budget, the outer
    one applies."""
    ctx = isl.DEFAULT_CONTEXT
    if ctx.get_max_operations():
        yield
        return
    ctx.set_max_operations(operations)
    ctx.reset_operations()
    try:
        yield
    except isl.Error as e:
        if "operations" in str(e):
            raise BudgetExceeded(f"isl gave up after {operations} operations") from None
        raise
    finally:
        ctx.set_max_operations(0)
        ctx.reset_operations()


def distinct_affs(pw: isl.PwAff) -> list[isl.Aff]:
    """The different affine functions of the pieces of ``pw``, in piece order."""
    out: list[isl.Aff] = []
    for _, aff in pw.get_pieces():
        if not any(aff.plain_is_equal(a) for a in out):
            out.append(aff)
    return out


def pw_aff_as_extremum(pw: isl.PwAff, ctx: isl.Set, kind: str, max_pieces: int = 6) -> list[isl.Aff] | None:
    """Affine functions whose ``max`` (kind ``"max"``) or ``min`` (``"min"``) equals ``pw``
    everywhere on ``ctx`` -- how a piecewise bound becomes a multi-result loop-bound map
    (``max`` of lower bounds, ``min`` of upper bounds); a single one when ``pw`` is affine on
    ``ctx``. Redundant functions are dropped. None when no such list exists (or ``pw`` has
    more than ``max_pieces`` different functions). ``pw`` must be defined on all of ``ctx``
    (as ``dim_min``/``dim_max`` of a map are on its domain).

    The functions of ``pw``'s pieces attain ``pw`` everywhere, so their max is ``pw`` exactly
    when each of them is ``<= pw`` (``>=`` for min) on every piece: emptiness checks of
    basic sets, never a piecewise max (which isl may take seconds to build)."""
    if ctx.is_empty():
        return None
    pieces = [(dom.intersect(ctx), aff) for dom, aff in pw.get_pieces()]
    pieces = [(d, a) for d, a in pieces if not d.is_empty()]
    affs: list[isl.Aff] = []
    for _, aff in pieces:
        if not any(aff.plain_is_equal(a) for a in affs):
            affs.append(aff)
    if len(affs) > max_pieces:
        return None
    if not all(_bounds_pieces(a, pieces, kind) for a in affs):
        return None
    k = 0
    while k < len(affs) and len(affs) > 1:
        rest = affs[:k] + affs[k + 1 :]
        if all(_attained(rest, d, b) for d, b in pieces):
            affs = rest
        else:
            k += 1
    return [_simplest(a, ctx) for a in affs]


def _simplest(aff: isl.Aff, ctx: isl.Set) -> isl.Aff:
    """``aff`` simplified on ``ctx`` (e.g. ``4 * floor(y / 2)`` -> ``2y`` where ``y`` is even)
    when that leaves an integral function with fewer divisions."""
    g = aff.gist(ctx)
    if g.get_denominator_val().to_python() == 1 and g.dim(isl.dim_type.div) < aff.dim(isl.dim_type.div):
        return g
    return aff


def aff_bounds_pw(aff: isl.Aff, pw: isl.PwAff, ctx: isl.Set, kind: str) -> bool:
    """Whether ``aff <= pw`` (kind ``"max"``: ``aff`` is a lower bound of ``pw``) or
    ``aff >= pw`` (``"min"``) everywhere on ``ctx`` (piece by piece: basic-set emptiness
    checks, cheap where ``pw.ge_set`` can take seconds)."""
    pieces = [(dom.intersect(ctx), a) for dom, a in pw.get_pieces()]
    return _bounds_pieces(aff, [(d, a) for d, a in pieces if not d.is_empty()], kind)


def _bounds_pieces(aff: isl.Aff, pieces: list[tuple[isl.Set, isl.Aff]], kind: str) -> bool:
    for d, b in pieces:
        beyond = aff.gt_set(b) if kind == "max" else aff.lt_set(b)
        if not beyond.intersect(d).is_empty():
            return False
    return True


def _attained(affs: list[isl.Aff], dom: isl.Set, value: isl.Aff) -> bool:
    """Whether at each point of ``dom`` one of ``affs`` equals ``value``."""
    left = dom
    for a in affs:
        left = left.subtract(a.eq_set(value))
        if left.is_empty():
            return True
    return left.is_empty()


def integral_pw_aff(pw: isl.PwAff) -> isl.PwAff:
    """``pw`` with each rational piece ``e / d`` (integral on its piece, as isl writes values
    on a strided lattice, e.g. ``(1 + 2i)/3`` where ``i mod 3 = 1``) replaced by
    ``floor(e / d)``: the same values, and an integer function isl's ``min_val``/``max_val``
    accept."""
    if all(a.get_denominator_val().to_python() == 1 for _, a in pw.get_pieces()):
        return pw
    out = None
    for dom, aff in pw.get_pieces():
        if aff.get_denominator_val().to_python() != 1:
            aff = aff.floor()
        piece = isl.PwAff.alloc(dom, aff)
        out = piece if out is None else out.union_add(piece)
    return out


def affs_to_exprs(affs: list[isl.Aff], num_dims: int, scop: Scop) -> list[AffineExpr]:
    """isl Affs over ``num_dims`` input dims and Scop parameters as AffineExprs: input dim
    ``k`` becomes ``d<k>``, the parameter named like the Scop's ``j``-th parameter
    ``s<j>``. A rational ``e / d`` (integral where it is used) becomes ``e floordiv d``."""
    order = {n: j for j, (n, _) in enumerate(scop.params.values())}
    out = []
    for aff in affs:
        if aff.get_denominator_val().to_python() != 1:
            aff = aff.floor()
        sp = aff.get_space()
        params = {}
        for k in range(aff.dim(isl.dim_type.param)):
            pname = sp.get_dim_name(isl.dim_type.param, k)
            if pname not in order:
                raise UnsupportedError(f"parameter {pname} is not a symbol of the Scop")
            params[k] = AffineExpr.symbol(order[pname])
        dims = {k: AffineExpr.dim(k) for k in range(num_dims)}
        out.append(aff_to_expr(aff, dims, params))
    return out


def compact_symbols(exprs_lists: list[list[AffineExpr]], num_dims: int,
                    scop: Scop) -> tuple[list[AffineMap], list[Value]]:
    """One AffineMap per list of expressions (over ``num_dims`` dims and the Scop's
    parameters as symbols), renumbered so that the maps take only the symbols some map uses;
    returns the maps and those symbols' Values (in Scop order)."""
    used = sorted({j for es in exprs_lists for e in es for j in e.used_symbols()})
    values = [v for _, v in scop.params.values()]
    repl = [AffineExpr.constant(0)] * len(values)
    for new, j in enumerate(used):
        repl[j] = AffineExpr.symbol(new)
    dims = [AffineExpr.dim(k) for k in range(num_dims)]
    maps = [AffineMap(num_dims, len(used), tuple(e.replace(dims, repl) for e in es)) for es in exprs_lists]
    return maps, [values[j] for j in used]


def fix_params(obj, scop: Scop, symbol_values: dict[Value, int] | None):
    """``obj`` (an isl set or map) with the Scop parameters in ``symbol_values`` fixed and
    projected out; None when it still involves a parameter without a value."""
    values = {id(v): x for v, x in (symbol_values or {}).items()}
    dt = isl.dim_type
    for pname, v in scop.params.values():
        pos = obj.find_dim_by_name(dt.param, pname)
        if pos < 0:
            continue
        if id(v) in values:
            obj = obj.fix_val(dt.param, pos, isl.Val.int_from_si(obj.get_ctx(), int(values[id(v)])))
        elif obj.involves_dims(dt.param, pos, 1):
            return None
    return obj.project_out(dt.param, 0, obj.dim(dt.param))


def count_points(s: isl.Set, budget: int = 200_000) -> int | None:
    """The number of integer points of a parameter-free set: a product of per-dimension counts
    when the set is a product of its projections, else isl's enumeration when its bounding box
    has at most ``budget`` points outside the last dimension; None when unbounded or too large."""
    if s.is_empty():
        return 0
    if not s.is_bounded():
        return None
    n = s.dim(isl.dim_type.set)
    if n == 0:
        return 1
    parts = [s.project_out(isl.dim_type.set, 0, k).project_out(isl.dim_type.set, 1, n - k - 1) for k in range(n)]
    sizes = [int(p.count_val().to_python()) for p in parts]
    prod = parts[0]
    for p in parts[1:]:
        prod = prod.flat_product(p)
    flat = s.flatten() if s.get_tuple_name() is None else s.reset_tuple_id().flatten()
    if prod.reset_tuple_id().is_equal(flat):
        total = 1
        for x in sizes:
            total *= x
        return total
    outer = 1
    for x in sizes[:-1]:
        outer *= x
    return int(s.count_val().to_python()) if outer <= budget else None
