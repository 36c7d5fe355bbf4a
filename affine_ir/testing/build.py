"""Turning a program plan into IR with :class:`affine_ir.builder.Builder`."""

from __future__ import annotations

from ..affine_expr import AffineExpr, dim
from ..builder import Builder, Constraint, Index
from ..core import Value
from ..dialects.builtin import ModuleOp
from ..types import index, scalar
from .plan import (
    ELEMENT_BOUND,
    AccRef,
    Bin,
    Clamp,
    Const,
    Convert,
    If,
    IfValue,
    IndexValue,
    Load,
    Loop,
    Program,
    ResultRef,
    Select,
    Store,
    memref_layout,
    used_symbols,
)

IV_NAMES = ("i", "j", "k", "l", "m", "n")
BINARY_OP_METHODS = {"f32": {"add": "addf", "sub": "subf", "mul": "mulf", "max": "maximumf", "min": "minimumf"},
        "i32": {"add": "addi", "sub": "subi", "mul": "muli", "max": "maxsi", "min": "minsi"}}
_CMP = {"f32": ("cmpf", {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "one"}),
        "i32": ("cmpi", {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"})}


def build_module(program: Program, name: str = "kernel") -> ModuleOp:
    """The module holding ``func.func @<name>(memrefs..., symbols...)`` for ``program``.

    Only memrefs the program accesses and symbols it uses become arguments; each memref
    gets the static shape of :func:`memref_layout` and its subscripts the layout's shift.
    """
    layout = memref_layout(program)
    mem_ids = [m for m in range(len(program.mems)) if m in layout]
    sym_ids = used_symbols(program)
    args = [(program.mems[m].name, Builder.memref(*layout[m][0], dtype=program.mems[m].dtype)) for m in mem_ids]
    args += [(program.symbols[j], index) for j in sym_ids]
    b = Builder()
    with b.function(name, args) as values:
        em = _Emitter(b, layout, dict(zip(mem_ids, values)), dict(zip(sym_ids, values[len(mem_ids):])))
        for s in program.body:
            em.stmt(s)
    return b.module


class _Emitter:
    def __init__(self, b: Builder, layout, mems: dict[int, Value], syms: dict[int, Value]):
        self.b = b
        self.layout = layout
        self.mems = mems
        self.syms = syms
        self.dims: dict[int, Value] = {}
        self.accs: dict[tuple[int, int], Value] = {}
        self.results: dict[tuple[int, int], Value] = {}
        self.depth = 0

    # ----- index expressions -----
    def index(self, e: AffineExpr) -> Index:
        """``e`` (global dims/symbols) as a builder Index over the IV and symbol values."""
        ds, ss = sorted(e.used_dims()), sorted(e.used_symbols())
        drepl: list = [0] * (ds[-1] + 1 if ds else 0)
        srepl: list = [0] * (ss[-1] + 1 if ss else 0)
        for k, d in enumerate(ds):
            drepl[d] = dim(k)
        for k, s in enumerate(ss):
            srepl[s] = dim(len(ds) + k)
        operands = tuple(self.dims[d] for d in ds) + tuple(self.syms[s] for s in ss)
        return Index(e.replace(drepl, srepl), operands)

    def subscripts(self, mem: int, subs) -> list[Index]:
        offsets = self.layout[mem][1]
        return [self.index(e - off) for e, off in zip(subs, offsets)]

    def constraints(self, cond) -> list[Constraint]:
        return [Constraint(self.index(e), eq) for e, eq in cond]

    # ----- statements -----
    def stmt(self, s) -> None:
        b = self.b
        if isinstance(s, Store):
            dtype = self.mems[s.mem].type.element_type
            b.store(self.value(s.value, str(dtype)), self.mems[s.mem], self.subscripts(s.mem, s.subs))
        elif isinstance(s, Loop):
            self.loop(s)
        elif isinstance(s, If):
            h = b.affine_if(*self.constraints(s.cond), with_else=s.else_ is not None)
            with h.then_():
                for c in s.then:
                    self.stmt(c)
            if s.else_ is not None:
                with h.else_():
                    for c in s.else_:
                        self.stmt(c)
        else:
            raise TypeError(f"not a statement: {s!r}")

    def loop(self, s: Loop) -> None:
        b, red = self.b, s.reduction
        lbs = [self.index(e) for e in s.lbs]
        ubs = [self.index(e) for e in s.ubs]
        inits = [self.value(e, dt) for e, dt in zip(red.inits, red.dtypes)] if red else []
        h = b.affine_for(lbs if len(lbs) > 1 else lbs[0], ubs if len(ubs) > 1 else ubs[0], s.step,
                         iter_args=inits, name=IV_NAMES[min(self.depth, len(IV_NAMES) - 1)])
        self.dims[s.dim] = h.op.induction_var
        for k, acc in enumerate(h.iter_args):
            self.accs[(s.id, k)] = acc
        self.depth += 1
        with b.at_end(h.op.body):
            for c in s.body:
                self.stmt(c)
            if red:
                new = [self.combine(op, self.accs[(s.id, k)], self.value(u, dt), dt)
                       for k, (op, u, dt) in enumerate(zip(red.ops, red.updates, red.dtypes))]
                b.yield_(*new)
        self.depth -= 1
        for k, r in enumerate(h.results):
            self.results[(s.id, k)] = r

    # ----- values -----
    def combine(self, op: str, a: Value, c: Value, dtype: str) -> Value:
        return getattr(self.b, BINARY_OP_METHODS[dtype][op])(a, c)

    def value(self, e, dtype: str) -> Value:
        b = self.b
        if isinstance(e, Load):
            return b.load(self.mems[e.mem], self.subscripts(e.mem, e.subs))
        if isinstance(e, Const):
            return b.constant(e.value, dtype)
        if isinstance(e, Bin):
            return self.combine(e.op, self.value(e.a, dtype), self.value(e.b, dtype), dtype)
        if isinstance(e, Select):
            which, preds = _CMP[dtype]
            cond = getattr(b, which)(preds[e.pred], self.value(e.lhs, dtype), self.value(e.rhs, dtype))
            return b.select(cond, self.value(e.a, dtype), self.value(e.b, dtype))
        if isinstance(e, Convert):
            v = self.value(e.a, e.src)
            return b.cast("sitofp" if dtype.startswith("f") else "fptosi", v, dtype)
        if isinstance(e, Clamp):
            v = self.value(e.a, dtype)
            v = self.combine("max", v, b.constant(-ELEMENT_BOUND, dtype), dtype)
            return self.combine("min", v, b.constant(ELEMENT_BOUND, dtype), dtype)
        if isinstance(e, AccRef):
            return self.accs[(e.loop, e.k)]
        if isinstance(e, ResultRef):
            return self.results[(e.loop, e.k)]
        if isinstance(e, IndexValue):
            d, s = e.expr.as_dim(), e.expr.as_symbol()
            v = self.dims[d] if d is not None else self.syms[s] if s is not None else b.apply(self.index(e.expr))
            v = b.cast("index_cast", v, "i32")
            return v if dtype == "i32" else b.cast("sitofp", v, dtype)
        if isinstance(e, IfValue):
            h = b.affine_if(*self.constraints(e.cond), result_types=[scalar(dtype)], with_else=True)
            with h.then_():
                b.yield_(self.value(e.then, dtype))
            with h.else_():
                b.yield_(self.value(e.else_, dtype))
            return h.results[0]
        raise TypeError(f"not a value expression: {e!r}")
