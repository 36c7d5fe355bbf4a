"""The only bridge between the IR and isl: iteration domains, access relations, orderings,
and conversion of isl affine functions back to :class:`AffineExpr`.

A :class:`Scop` (static control part) models every memory access under a root op (a
``func.func`` or a loop): each access is a :class:`Statement` with

- a *domain*: the integer points of its enclosing ``affine.for``/``affine.parallel`` IVs
  (from the root down), bounded by the loops' max/min bound maps and steps and by
  enclosing ``affine.if`` conditions (negated for else branches), with the function's
  symbols as isl parameters;
- an *access relation*: domain point -> memref element;
- a *path*: its position in program order, so that two statements can be ordered.

isl tuple names: statements ``S0, S1, ...`` in walk order, memrefs ``M0, M1, ...``;
IV names ``i0, i1, ...`` by depth; parameter names from the symbols' name hints.
Strings are parsed once per statement and cached on the Scop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import islpy as isl

from affine_ir import AffineExpr, AffineMap, IntegerSet, Operation, Value
from affine_ir.dialects.affine import (
    AffineApplyOp,
    AffineForOp,
    AffineIfOp,
    AffineParallelOp,
    AffineStoreOp,
    AffineVectorStoreOp,
    _AccessOp,
)
from affine_ir.dialects.memref import LoadOp, StoreOp

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
        self._collect(root, [], [], ())
        for s in self.statements:
            self._model(s)

    # -- collection ---------------------------------------------------------------
    def _collect(self, op: Operation, loops: list[LoopInfo], guards: list, path: tuple[int, ...]) -> None:
        access = _access_parts(op)
        if access is not None:
            mem, is_write, is_affine = access
            self.statements.append(Statement(len(self.statements), op, list(loops), list(guards), path, mem,
                                             is_write, is_affine))
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
                    self._collect(child, inner_loops, g, path + (offset + k,))
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
            while name in taken or re.fullmatch(r"i\d+|o\d+|e\d+", name):
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
        from affine_ir.dialects.affine import is_valid_symbol

        if is_valid_symbol(v):
            return self.param_name(v)
        raise UnsupportedError(f"index value %{v.name_hint or '?'} is neither an IV nor a symbol")

    def map_exprs(self, m: AffineMap, operands, ivs: list[Value]) -> list[str]:
        names = [self.value_expr(v, ivs) for v in operands]
        return [expr_to_isl(e, names[: m.num_dims], names[m.num_dims :]) for e in m.results]

    # -- domains and accesses --------------------------------------------------------------
    def _model(self, s: Statement) -> None:
        ivs_all = s.ivs
        try:
            cons = []
            for depth, lp in enumerate(s.loops):
                cons.append(self._loop_constraint(lp, depth, ivs_all[:depth]))
            for if_op, then in s.guards:
                cons.append(self._guard_constraint(if_op, then, ivs_all))
        except UnsupportedError:
            # Over-approximate: drop what cannot be expressed (conservative for dependences).
            s.is_affine = False
            cons = [c for c in self._safe_constraints(s)]
        ivs = ", ".join(f"i{k}" for k in range(s.depth))
        body = " and ".join(f"({c})" for c in cons) or "true"
        s.domain = isl.Set(f"{self._param_prefix()}{{ {s.name}[{ivs}] : {body} }}")
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


def _access_parts(op: Operation):
    if isinstance(op, _AccessOp):
        return op.memref, isinstance(op, (AffineStoreOp, AffineVectorStoreOp)), True
    if isinstance(op, LoadOp):
        return op.memref, False, False
    if isinstance(op, StoreOp):
        return op.memref, True, False
    return None


def aff_to_expr(aff: isl.Aff, in_names: dict[int, AffineExpr], param_names: dict[int, AffineExpr]) -> AffineExpr:
    """An isl ``Aff`` as an AffineExpr; ``in_names``/``param_names`` map isl input dims and
    parameters (by position) to the expressions they stand for. Raises UnsupportedError for a
    rational (non-integral) function."""
    den = aff.get_denominator_val().to_python()
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
    if den != 1:
        raise UnsupportedError(f"rational affine function {aff}")
    return total
