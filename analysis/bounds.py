"""Static bounds checking: every affine access lies inside its memref, proved with isl.

For each ``affine.load/store/vector_load/vector_store`` of a function, the iteration domain
(loop bounds and steps, enclosing ``affine.if`` conditions, the function's symbols as
parameters) and the access relation come from :class:`analysis.isl_bridge.Scop` (a vector
access covers its whole box of elements). Per memref dimension ``d`` the *out-of-bounds set*
is ``{ (iteration, element) : index_d < 0 or index_d >= size_d }``, where a dynamic size
(``memref<?xf32>``) is a parameter: the ``memref.dim`` value of that dimension when the IR
uses one (so ``affine.for %i = 0 to %d`` with ``%d = memref.dim %A, 0`` is proved safe), the
``memref.alloc`` operand, else a fresh parameter (``A_d0``) known only at launch.

- The set is empty: the access is safe for every symbol value and size.
- It is non-empty for *every* parameter value (sizes >= 0): the access is definitely wrong
  (always the case for a non-empty set without parameters), a static :class:`BoundsViolation`
  with a witness that isl picks (the lexicographically first offending iteration).
- Otherwise it depends on values known at launch: a :class:`LaunchCheck` keeps the set and,
  given the call's arguments (index values, array shapes), substitutes them and asks isl
  whether a point is left (cached per tuple of values), giving the same violation message.
  Parameters that are neither arguments nor dimensions of argument arrays cannot be known at
  launch; such an access is listed in :attr:`BoundsCheck.unchecked`.

Non-affine accesses (``memref.load/store``, subscripts or bounds isl cannot express) are
not checked here (:attr:`BoundsCheck.unchecked`); the CPU backend guards them in a
``check_bounds=True`` build.

Message form: ``file:3:5: error: 'affine.store' %B[%i] with %i = 4 is outside memref<4xf32>
(dimension 0 has size 4)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import islpy as isl

from affine_ir import FuncOp, Location, ModuleOp, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp
from affine_ir.dialects.memref import DimOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.traits import allocating_op
from affine_ir.types import MemRefType

from .isl_bridge import Scop, Statement, UnsupportedError, constant_index
from .isl_results import BudgetExceeded, isl_budget, val_to_int

__all__ = ["BoundsCheck", "BoundsViolation", "LaunchCheck", "ParamSource", "bounds_check", "check_bounds"]

_DT = isl.dim_type
# isl operations allowed for one access's check; past it the access is listed as unchecked.
ISL_BUDGET = 200_000


@dataclass(frozen=True)
class BoundsViolation:
    """An affine access that goes outside its memref: the op, its location, the memref, the
    dimension, the witness (``"%i" -> 4`` for the IVs and symbols the subscript uses), the
    offending index and the dimension's size; ``reason`` unlocated, ``message`` located."""

    op: Operation = field(compare=False)
    location: Location | None
    memref: Value = field(compare=False)
    dimension: int
    witness: dict[str, int] = field(compare=False)
    index: int
    size: int
    reason: str

    @property
    def message(self) -> str:
        """``file:line:col: error: <reason>`` (``error: <reason>`` without a location)."""
        return f"{self.location}: error: {self.reason}" if self.location else f"error: {self.reason}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ParamSource:
    """Where the value of an isl parameter comes from at a call: argument ``arg_index``
    itself (``dim`` None: an index argument) or dimension ``dim`` of that array argument."""

    name: str
    arg_index: int
    dim: int | None = None

    def read(self, args: Sequence) -> int:
        """The parameter's value for the call arguments ``args`` (arrays need ``.shape``)."""
        a = args[self.arg_index]
        return int(a) if self.dim is None else int(a.shape[self.dim])


@dataclass
class LaunchCheck:
    """One access whose bounds depend on values known at launch (see the module docs)."""

    statement: Statement = field(repr=False)
    dimension: int
    oob: isl.Set = field(repr=False)  # wrapped { [S[ivs] -> M[element]] } with every parameter
    sources: list[ParamSource]
    sizes: _SizeParams = field(repr=False)
    _cache: dict[tuple[int, ...], BoundsViolation | None] = field(default_factory=dict, repr=False)

    def violation_at(self, args: Sequence) -> BoundsViolation | None:
        """The violation this access makes for the call arguments ``args``, or None."""
        values = tuple(s.read(args) for s in self.sources)
        if values not in self._cache:
            fixed = self.oob
            for s, v in zip(self.sources, values):
                pos = fixed.find_dim_by_name(_DT.param, s.name)
                fixed = fixed.fix_val(_DT.param, pos, isl.Val.int_from_si(fixed.get_ctx(), v))
            empty = fixed.is_empty()
            self._cache[values] = None if empty else _violation(self.statement, self.dimension, fixed, self.sizes)
        return self._cache[values]


@dataclass
class BoundsCheck:
    """The bounds facts of one function: ``violations`` (definite, static), ``launch_checks``
    (accesses to check with the call's values), ``unchecked`` (accesses the analysis cannot
    decide: non-affine, or depending on values unknown at launch)."""

    func: FuncOp
    violations: list[BoundsViolation]
    launch_checks: list[LaunchCheck]
    unchecked: list[Operation]

    def violations_at(self, args: Sequence) -> list[BoundsViolation]:
        """The violations of the launch checks for the call arguments ``args`` (index values as
        ints, arrays with ``.shape``), in program order; [] when every access is in bounds."""
        out = []
        for c in self.launch_checks:
            v = c.violation_at(args)
            if v is not None:
                out.append(v)
        return out


def check_bounds(func_or_module: FuncOp | ModuleOp) -> list[BoundsViolation]:
    """The affine accesses of ``func_or_module`` (every function with a body) that are out of
    bounds for every symbol value and dynamic size, in program order, each with an isl witness.
    [] guarantees no access is *definitely* out of bounds; accesses that depend on symbol values
    or dynamic sizes are checked at launch (:func:`bounds_check`)."""
    funcs = [func_or_module] if isinstance(func_or_module, FuncOp) else \
        [f for f in func_or_module.functions if not f.is_declaration]
    return [v for f in funcs for v in bounds_check(f).violations]


def bounds_check(func: FuncOp) -> BoundsCheck:
    """Every affine access of ``func`` classified: safe (dropped), definitely out of bounds
    (``violations``), to check at launch (``launch_checks``), or ``unchecked``; see the module docs."""
    result = BoundsCheck(func, [], [], [])
    scop = Scop(func)
    sizes = _SizeParams(scop)
    for s in scop.statements:
        if s.opaque:
            continue
        if not (s.is_affine and isinstance(s.op, AffineAccessInterface)):
            result.unchecked.append(s.op)
            continue
        try:
            with isl_budget(ISL_BUDGET):
                _classify(s, sizes, func, result)
        except (BudgetExceeded, UnsupportedError):
            result.unchecked.append(s.op)
    return result


def _classify(s: Statement, sizes: _SizeParams, func: FuncOp, result: BoundsCheck) -> None:
    """Add the violations or launch checks of statement ``s``, dimension by dimension."""
    mt: MemRefType = s.memref.type
    outside_any = sizes.outside_any(s.memref, s.access.get_tuple_name(_DT.out)) if mt.rank else None
    if outside_any is None or s.access.intersect_range(outside_any).is_empty():
        return  # the common case: one emptiness test for every dimension at once
    for d in range(mt.rank):
        oob = _out_of_bounds(s, d, sizes)
        if oob.is_empty():
            continue
        context = sizes.context(oob.get_space().params())
        if context.is_subset(oob.params()):
            result.violations.append(_violation(s, d, oob, sizes))
            continue
        involved = [k for k in range(oob.dim(_DT.param)) if oob.params().involves_dims(_DT.param, k, 1)]
        sources = [sizes.source(oob.get_dim_name(_DT.param, k), func) for k in involved]
        if any(src is None for src in sources):
            result.unchecked.append(s.op)
            return
        result.launch_checks.append(LaunchCheck(s, d, oob, sources, sizes))


def _out_of_bounds(s: Statement, d: int, sizes: _SizeParams) -> isl.Set:
    """``{ [S[ivs] -> M[element]] : element_d < 0 or element_d >= size_d }`` of ``s``."""
    outside = sizes.outside(s.memref, d, s.access.get_tuple_name(_DT.out))
    return s.access.intersect_range(outside).wrap()


class _SizeParams:
    """The isl term of each memref dimension's size: its static size, or a parameter."""

    def __init__(self, scop: Scop):
        self.scop = scop
        self.fresh: dict[str, tuple[Value, int]] = {}  # fresh parameter -> (memref, dim)
        self._terms: dict[tuple[Value, int], str] = {}
        self._outside: dict[tuple[Value, int], isl.Set] = {}

    def outside_any(self, memref: Value, tuple_name: str) -> isl.Set:
        """The union of :meth:`outside` over the dimensions of ``memref``."""
        key = (memref, -1)
        if key not in self._outside:
            parts = [self.outside(memref, d, tuple_name) for d in range(memref.type.rank)]
            self._outside[key] = functools.reduce(isl.Set.union, parts)
        return self._outside[key]

    def outside(self, memref: Value, d: int, tuple_name: str) -> isl.Set:
        """``{ M[o] : o_d < 0 or o_d >= size_d }`` (a fresh size >= 0), parsed once per memref dim."""
        key = (memref, d)
        if key not in self._outside:
            size = self.term(memref, d)
            outs = ", ".join(f"o{k}" for k in range(memref.type.rank))
            params = f"[{size}] -> " if not size.isdigit() else ""
            nonneg = f"{size} >= 0 and " if params else ""
            self._outside[key] = isl.Set(f"{params}{{ {tuple_name}[{outs}] : {nonneg}(o{d} < 0 or o{d} >= {size}) }}")
        return self._outside[key]

    def term(self, memref: Value, d: int) -> str:
        key = (memref, d)
        if key not in self._terms:
            self._terms[key] = self._find(memref, d)
        return self._terms[key]

    def _find(self, memref: Value, d: int) -> str:
        size = memref.type.shape[d]
        if size is not None:
            return str(size)
        for name, v in self.scop.params.values():
            if isinstance(v.owner, DimOp) and v.owner.operands[0] is memref and \
                    constant_index(v.owner.operands[1]) == d:
                return name
        owner = allocating_op(memref)
        if owner is not None:
            k = sum(x is None for x in memref.type.shape[:d])
            try:
                return self.scop.value_expr(owner.operands[k], []).strip("()")
            except UnsupportedError:
                pass
        base = f"{memref.name_hint or 'M'}_d{d}"
        name, k = base, 0
        taken = {n for n, _ in self.scop.params.values()} | set(self.fresh)
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        self.fresh[name] = (memref, d)
        return name

    def context(self, params_space: isl.Space) -> isl.Set:
        """The parameter values that can occur: every fresh size is >= 0."""
        ctx = isl.Set.universe(params_space)
        for name in self.fresh:
            pos = ctx.find_dim_by_name(_DT.param, name)
            if pos >= 0:
                ctx = ctx.intersect(isl.Set(f"[{name}] -> {{ : {name} >= 0 }}"))
        return ctx

    def source(self, name: str, func: FuncOp) -> ParamSource | None:
        """Where parameter ``name`` comes from at a call of ``func`` (None: not knowable there)."""
        args = list(func.args)
        if name in self.fresh:
            memref, d = self.fresh[name]
            k = _arg_position(args, memref)
            return None if k is None else ParamSource(name, k, d)
        v = next((v for n, v in self.scop.params.values() if n == name), None)
        if v is None:
            return None
        k = _arg_position(args, v)
        if k is not None:
            return ParamSource(name, k)
        if isinstance(v.owner, DimOp):
            k, d = _arg_position(args, v.owner.operands[0]), constant_index(v.owner.operands[1])
            if k is not None and d is not None:
                return ParamSource(name, k, d)
        return None


def _arg_position(args: list[Value], v: Value) -> int | None:
    return next((k for k, a in enumerate(args) if a is v), None)


# -- witnesses and messages ----------------------------------------------------------------------

def _violation(s: Statement, d: int, oob: isl.Set, sizes: _SizeParams) -> BoundsViolation:
    """The violation of ``s`` on dimension ``d`` at the first point of ``oob`` (params fixed first)."""
    point = _first_point(oob)
    depth = s.depth
    ivs = {iv: _coordinate(point, _DT.set, k) for k, iv in enumerate(s.ivs)}
    params = {}
    for k in range(point.get_space().dim(_DT.param)):
        params[point.get_space().get_dim_name(_DT.param, k)] = _coordinate(point, _DT.param, k)
    index = _coordinate(point, _DT.set, depth + d)
    size_term = sizes.term(s.memref, d)
    size = int(size_term) if size_term.lstrip("-").isdigit() else params[size_term]
    op: AffineAccessInterface = s.op
    witness = _witness(s, ivs, params, sizes.scop)
    names = [_name(v) for v in op.indices]
    m = op.map
    subscript = ", ".join(e.to_str(names[: m.num_dims], [f"symbol({n})" for n in names[m.num_dims:]])
                          for e in m.results)
    with_part = (" with " + ", ".join(f"{n} = {x}" for n, x in witness.items())) if witness else ""
    detail = f"dimension {d} has size {size}"
    vt = op.vector_type
    if vt is not None:
        detail += f"; the {vt} access reaches index {index}"
    elif not _is_bare_operand(m.results[d], m):
        detail += f"; the index is {index}"
    reason = f"'{op.name}' {_name(s.memref)}[{subscript}]{with_part} is outside {s.memref.type} ({detail})"
    return BoundsViolation(op, op.location, s.memref, d, witness, index, size, reason)


def _first_point(oob: isl.Set) -> isl.Point:
    """A point of ``oob``: parameters fixed to a sample first, then the lexicographic minimum."""
    oob = oob.coalesce()  # drops empty disjuncts, on which isl's lexmin can answer "empty"
    params = oob.params()
    if params.dim(_DT.param):
        sample = params.sample_point()
        for k in range(params.dim(_DT.param)):
            oob = oob.fix_val(_DT.param, k, sample.get_coordinate_val(_DT.param, k))
    point = oob.lexmin().sample_point()
    return oob.sample_point() if point.is_void() else point


def _coordinate(point: isl.Point, kind, k: int) -> int:
    return val_to_int(point.get_coordinate_val(kind, k))


def _witness(s: Statement, ivs: dict[Value, int], params: dict[str, int], scop: Scop) -> dict[str, int]:
    """The values of the IVs and symbols the subscript of ``s`` uses (through affine.apply too)."""
    out: dict[str, int] = {}
    param_names = {v: n for n, v in scop.params.values()}

    def visit(v: Value) -> None:
        if v in ivs:
            out.setdefault(_name(v), ivs[v])
        elif isinstance(v.owner, AffineApplyOp):
            for x in v.owner.operands:
                visit(x)
        elif v in param_names and param_names[v] in params:
            out.setdefault(_name(v), params[param_names[v]])

    for v in s.op.indices:
        visit(v)
    return out


def _is_bare_operand(e, m) -> bool:
    from affine_ir import AffineExpr

    return any(e == AffineExpr.dim(k) for k in range(m.num_dims)) or \
        any(e == AffineExpr.symbol(k) for k in range(m.num_symbols))


def _name(v: Value) -> str:
    return f"%{v.name_hint or '?'}"
