"""A concise Python API for writing loop nests.

Example (a matmul)::

    from affine_ir.builder import Builder
    b = Builder()
    with b.function("matmul", A=b.memref(64, 32), B=b.memref(32, 16), C=b.memref(64, 16)) as (A, B, C):
        with b.affine_for(0, 64, name="i") as i, b.affine_for(0, 16, name="j") as j:
            with b.affine_for(0, 32, name="k") as k:
                prod = b.mulf(b.load(A, [i, k]), b.load(B, [k, j]))
                b.store(b.addf(b.load(C, [i, j]), prod), C, [i, j])
    module = b.module

Loop induction variables are :class:`Index` handles: ``i + 1``, ``2 * i - j``,
``i // 4``, ``i % 4`` build affine index expressions, ``i >= 1`` and ``i < n``
build ``affine.if`` constraints. The builder turns them into affine maps whose dims are
loop IVs and whose symbols are function-level values (sizes passed as arguments).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .affine_expr import AffineExpr
from .affine_map import AffineMap, IntegerSet
from .core import Block, Operation, Value
from .dialects import affine as affine_d
from .dialects import arith, func, memref, vector
from .dialects import math as math_d
from .dialects.affine import is_valid_symbol
from .dialects.builtin import ModuleOp
from .errors import AffineError
from .types import FloatType, FunctionType, IntegerType, MemRefType, Type, index, scalar
from .types import memref as memref_type


class Index:
    """An affine expression over SSA index values, with Python operators.

    ``expr`` uses dim ``d<k>`` for ``operands[k]``; whether an operand becomes a map
    dim or symbol is decided when the expression is used (see :func:`to_map`).
    """

    __slots__ = ("expr", "operands")

    def __init__(self, expr: AffineExpr, operands: tuple[Value, ...] = ()):
        self.expr = expr
        self.operands = operands

    @staticmethod
    def of(x) -> Index:
        """``x`` (Index, index-typed Value, or int) as an Index."""
        if isinstance(x, Index):
            return x
        if isinstance(x, Value):
            if x.type != index:
                raise TypeError(f"affine index operands must have type index, got {x.type}")
            return Index(AffineExpr.dim(0), (x,))
        if isinstance(x, int):
            return Index(AffineExpr.constant(x))
        raise TypeError(f"cannot use {x!r} as an affine index")

    @property
    def value(self) -> Value:
        """The single SSA value this index is exactly (a loop IV, an argument)."""
        if self.expr.as_dim() == 0 and len(self.operands) == 1:
            return self.operands[0]
        raise ValueError(f"{self} is an expression, not a single value")

    def _merge(self, other) -> tuple[AffineExpr, AffineExpr, tuple[Value, ...]]:
        other = Index.of(other)
        ops = list(self.operands)
        remap = []
        for v in other.operands:
            for k, w in enumerate(ops):
                if w is v:
                    remap.append(AffineExpr.dim(k))
                    break
            else:
                ops.append(v)
                remap.append(AffineExpr.dim(len(ops) - 1))
        return self.expr, other.expr.replace(remap), tuple(ops)

    def __add__(self, other) -> Index:
        a, b, ops = self._merge(other)
        return Index(a + b, ops)

    __radd__ = __add__

    def __sub__(self, other) -> Index:
        a, b, ops = self._merge(other)
        return Index(a - b, ops)

    def __rsub__(self, other) -> Index:
        a, b, ops = self._merge(other)
        return Index(b - a, ops)

    def __neg__(self) -> Index:
        return Index(-self.expr, self.operands)

    def __mul__(self, other) -> Index:
        if isinstance(other, Index):
            if other.expr.is_constant:
                return Index(self.expr * other.expr.constant_value, self.operands)
            if self.expr.is_constant:
                return other * self.expr.constant_value
            raise AffineError(f"non-affine product ({self}) * ({other})")
        return Index(self.expr * other, self.operands)

    __rmul__ = __mul__

    def __floordiv__(self, c: int) -> Index:
        return Index(self.expr.floordiv(c), self.operands)

    def __mod__(self, c: int) -> Index:
        return Index(self.expr.mod(c), self.operands)

    def ceildiv(self, c: int) -> Index:
        return Index(self.expr.ceildiv(c), self.operands)

    # Constraints for affine.if: e >= 0 or e == 0.
    def __ge__(self, other) -> Constraint:
        return Constraint(self - other, False)

    def __gt__(self, other) -> Constraint:
        return Constraint(self - other - 1, False)

    def __le__(self, other) -> Constraint:
        return Constraint(Index.of(other) - self, False)

    def __lt__(self, other) -> Constraint:
        return Constraint(Index.of(other) - self - 1, False)

    def eq(self, other) -> Constraint:
        """The equality constraint ``self == other`` (``==`` itself stays identity)."""
        return Constraint(self - other, True)

    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.expr.to_str([f"%{v.name_hint or '?'}" for v in self.operands], [])

    def __repr__(self) -> str:
        return f"Index({self})"


@dataclass(frozen=True)
class Constraint:
    """``index >= 0`` (or ``== 0`` when ``is_eq``) for affine.if conditions."""

    index: Index
    is_eq: bool


def to_map(exprs: Sequence) -> tuple[AffineMap, list[Value]]:
    """An affine map and its operands for a list of Index-like values.

    Operands that are valid symbols (function arguments, top-level values) and are not
    loop IVs become symbols; all others (loop IVs) become dims.
    """
    idx = [Index.of(e) for e in exprs]
    seen: list[Value] = []
    for e in idx:
        for v in e.operands:
            if not any(v is w for w in seen):
                seen.append(v)
    dims = [v for v in seen if not _is_symbol(v)]
    syms = [v for v in seen if _is_symbol(v)]
    order = dims + syms

    def position(v: Value) -> AffineExpr:
        k = next(k for k, w in enumerate(order) if w is v)
        return AffineExpr.dim(k) if k < len(dims) else AffineExpr.symbol(k - len(dims))

    results = tuple(e.expr.replace([position(v) for v in e.operands]) for e in idx)
    return AffineMap(len(dims), len(syms), results), order


def _is_symbol(v: Value) -> bool:
    owner = v.owner
    if isinstance(owner, Block) and owner.parent_op is not None and owner.parent_op.name in (
            "affine.for", "affine.parallel"):
        return False
    return is_valid_symbol(v)


class ForLoop:
    """Handle of an ``affine.for`` being built; a context manager that builds its body."""

    def __init__(self, builder: Builder, op: affine_d.AffineForOp):
        self.builder = builder
        self.op = op

    @property
    def iv(self) -> Index:
        return Index.of(self.op.induction_var)

    @property
    def iter_args(self) -> list[Value]:
        return self.op.iter_args

    @property
    def results(self) -> list[Value]:
        return self.op.results

    @property
    def result(self) -> Value:
        return self.op.result

    def __enter__(self):
        self.builder._push(self.op.body)
        return (self.iv, *self.iter_args) if self.iter_args else self.iv

    def __exit__(self, exc_type, *exc) -> None:
        self.builder._pop()
        if exc_type is None and self.op.results and not isinstance(self.op.body.terminator, affine_d.AffineYieldOp):
            raise ValueError("a loop with iter_args must end its body with builder.yield_(...)")


class IfOp:
    """Handle of an ``affine.if``: ``with h.then_():`` / ``with h.else_():``; entering ``h`` is ``then_``."""

    def __init__(self, builder: Builder, op: affine_d.AffineIfOp):
        self.builder = builder
        self.op = op

    @property
    def results(self) -> list[Value]:
        return self.op.results

    @contextlib.contextmanager
    def then_(self) -> Iterator[None]:
        with self.builder.at_end(self.op.then_block):
            yield

    @contextlib.contextmanager
    def else_(self) -> Iterator[None]:
        if self.op.else_block is None:
            raise ValueError("this affine.if was built without an else region (pass with_else=True)")
        with self.builder.at_end(self.op.else_block):
            yield

    def __enter__(self) -> IfOp:
        self.builder._push(self.op.then_block)
        return self

    def __exit__(self, *exc) -> None:
        self.builder._pop()


class Builder:
    """Creates ops at an insertion point (the end of a block, before its terminator).

    Functions go into ``self.module``; inside ``with b.function(...)``, loops and
    ``affine.if`` are context managers that move the insertion point into their bodies.
    """

    def __init__(self, module: ModuleOp | None = None, location=None):
        self.module = module if module is not None else ModuleOp()
        self.location = location
        self._stack: list[tuple[Block, Operation | None]] = [(self.module.body, None)]

    # -- insertion point -----------------------------------------------------
    def _push(self, block: Block, before: Operation | None = None) -> None:
        self._stack.append((block, before))

    def _pop(self) -> None:
        self._stack.pop()

    @contextlib.contextmanager
    def at_end(self, block: Block) -> Iterator[None]:
        """Insert at the end of ``block`` (before its terminator) inside the ``with``."""
        self._push(block)
        try:
            yield
        finally:
            self._pop()

    @contextlib.contextmanager
    def before(self, op: Operation) -> Iterator[None]:
        """Insert just before ``op`` inside the ``with``."""
        self._push(op.parent, op)
        try:
            yield
        finally:
            self._pop()

    def insert(self, op: Operation) -> Operation:
        """Insert ``op`` at the insertion point and return it."""
        block, before = self._stack[-1]
        if op.location is None:
            op.location = self.location
        if before is not None:
            block.insert_before(before, op)
        elif block.ops and block.ops[-1].is_terminator:
            block.insert_before(block.ops[-1], op)
        else:
            block.append(op)
        return op

    # -- types -----------------------------------------------------------------
    @staticmethod
    def memref(*shape, dtype: str | Type = "f32", space=None) -> MemRefType:
        """``memref<shape x dtype>``; ``None`` in the shape is a dynamic dim."""
        return memref_type(shape, dtype, space)

    # -- functions ---------------------------------------------------------------
    @contextlib.contextmanager
    def function(self, name: str, args: Sequence[tuple[str, Type]] | None = None, results: Sequence[Type] = (),
                 **kwargs: Type) -> Iterator[tuple[Value, ...]]:
        """Build ``func.func @name``; yields its arguments. Arguments come from ``args``
        (name, type) pairs or keyword arguments (in order). Without results, a ``return``
        is added when the body does not end with one."""
        pairs = list(args or []) + list(kwargs.items())
        ft = FunctionType(tuple(t for _, t in pairs), tuple(results))
        f = func.FuncOp(name, ft, [n for n, _ in pairs], location=self.location)
        self.insert(f)
        with self.at_end(f.body):
            yield tuple(f.args)
        if not isinstance(f.body.terminator, func.ReturnOp):
            if results:
                raise ValueError(f"@{name} returns values: end its body with builder.return_(...)")
            f.body.append(func.ReturnOp([], location=self.location))

    def return_(self, *values: Value) -> Operation:
        return self.insert(func.ReturnOp(list(values)))

    def call(self, callee: str, args: Sequence[Value], result_types: Sequence[Type] = ()) -> Operation:
        return self.insert(func.CallOp(callee, list(args), list(result_types)))

    # -- affine ops ----------------------------------------------------------------
    def affine_for(self, lower, upper, step: int = 1, iter_args: Sequence[Value] = (), name: str | None = None
                   ) -> ForLoop:
        """An ``affine.for``; ``lower``/``upper`` are Index-like or lists of them (max/min)."""
        lb, lbo = to_map(lower if isinstance(lower, (list, tuple)) else [lower])
        ub, ubo = to_map(upper if isinstance(upper, (list, tuple)) else [upper])
        op = affine_d.AffineForOp(lb, lbo, ub, ubo, step, list(iter_args), iv_name=name)
        self.insert(op)
        return ForLoop(self, op)

    def affine_if(self, *constraints: Constraint, result_types: Sequence[Type] = (), with_else: bool = False
                  ) -> IfOp:
        """An ``affine.if`` over constraints built with ``>=``, ``<``, ``.eq()`` on Index values."""
        m, operands = to_map([c.index for c in constraints])
        cond = IntegerSet(m.num_dims, m.num_symbols, m.results, tuple(c.is_eq for c in constraints))
        op = affine_d.AffineIfOp(cond, operands, list(result_types), with_else)
        self.insert(op)
        return IfOp(self, op)

    def yield_(self, *values: Value) -> Operation:
        """``affine.yield`` ending the current loop/if body (replaces an empty yield)."""
        block, _ = self._stack[-1]
        if block.ops and isinstance(block.ops[-1], affine_d.AffineYieldOp) and not block.ops[-1].operands:
            block.ops[-1].erase()
        op = affine_d.AffineYieldOp(list(values), location=self.location)
        block.append(op)
        return op

    def load(self, mem: Value, indices: Sequence, name: str | None = None) -> Value:
        m, ops = to_map(indices)
        return self.insert(affine_d.AffineLoadOp(mem, m, ops, name_hint=name)).result

    def store(self, value: Value, mem: Value, indices: Sequence) -> Operation:
        m, ops = to_map(indices)
        return self.insert(affine_d.AffineStoreOp(value, mem, m, ops))

    def vector_load(self, vector_type, mem: Value, indices: Sequence) -> Value:
        m, ops = to_map(indices)
        return self.insert(affine_d.AffineVectorLoadOp(vector_type, mem, m, ops)).result

    def vector_store(self, value: Value, mem: Value, indices: Sequence) -> Operation:
        m, ops = to_map(indices)
        return self.insert(affine_d.AffineVectorStoreOp(value, mem, m, ops))

    def apply(self, expr, name: str | None = None) -> Value:
        m, ops = to_map([expr])
        return self.insert(affine_d.AffineApplyOp(m, ops, name_hint=name)).result

    def min(self, *exprs) -> Value:
        m, ops = to_map(list(exprs))
        return self.insert(affine_d.AffineMinOp(m, ops)).result

    def max(self, *exprs) -> Value:
        m, ops = to_map(list(exprs))
        return self.insert(affine_d.AffineMaxOp(m, ops)).result

    # -- arith / math / memref ---------------------------------------------------------
    def constant(self, value, type_: Type | str = "f32", name: str | None = None) -> Value:
        """``arith.constant`` of ``type_`` (a Type or a name like ``"f32"``, ``"index"``)."""
        t = scalar(type_) if isinstance(type_, str) else type_
        return self.insert(arith.ConstantOp.of(value, t, name_hint=name)).result

    def zero(self, type_: Type | str = "f32") -> Value:
        return self.constant(0, type_)

    def op(self, name: str, *operands: Value, name_hint: str | None = None) -> Value:
        """An elementwise arith/math op by MLIR name (``"arith.addf"``, ``"math.exp"``)."""
        dialect, short = name.split(".", 1)
        table = {"arith": arith.OPS, "math": math_d.OPS}.get(dialect, {})
        cls = table.get(short)
        if cls is None or not hasattr(cls, "arity"):
            raise ValueError(f"unknown elementwise op {name!r}")
        return self.insert(cls(*operands, name_hint=name_hint)).result

    def cmpf(self, predicate: str, a: Value, b: Value) -> Value:
        return self.insert(arith.CmpFOp(predicate, a, b)).result

    def cmpi(self, predicate: str, a: Value, b: Value) -> Value:
        return self.insert(arith.CmpIOp(predicate, a, b)).result

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.insert(arith.SelectOp(cond, a, b)).result

    def cast(self, kind: str, value: Value, to: Type | str) -> Value:
        """``arith.<kind>`` cast (``extf``, ``truncf``, ``sitofp``, ``index_cast``...) to ``to``."""
        t = scalar(to) if isinstance(to, str) else to
        return self.insert(arith.OPS[kind](value, t)).result

    def convert(self, value: Value, to: Type | str) -> Value:
        """Float-to-float conversion (extf/truncf), signed integer widening or narrowing
        (extsi/trunci), or the value itself when the type matches."""
        t = scalar(to) if isinstance(to, str) else to
        if value.type == t:
            return value
        if isinstance(value.type, FloatType) and isinstance(t, FloatType):
            return self.cast("extf" if t.width > value.type.width else "truncf", value, t)
        if isinstance(value.type, IntegerType) and isinstance(t, IntegerType):
            return self.cast("extsi" if t.width > value.type.width else "trunci", value, t)
        raise ValueError(f"no float conversion from {value.type} to {t}")

    def alloc(self, type_: MemRefType, dynamic_sizes: Sequence[Value] = (), name: str | None = None) -> Value:
        return self.insert(memref.AllocOp(type_, list(dynamic_sizes), name_hint=name)).result

    def alloca(self, type_: MemRefType, dynamic_sizes: Sequence[Value] = (), name: str | None = None) -> Value:
        return self.insert(memref.AllocaOp(type_, list(dynamic_sizes), name_hint=name)).result

    def dealloc(self, mem: Value) -> Operation:
        return self.insert(memref.DeallocOp([mem]))

    def dim(self, mem: Value, i: int) -> Value:
        return self.insert(memref.DimOp(mem, self.constant(i, index))).result

    def broadcast(self, value: Value, vector_type) -> Value:
        return self.insert(vector.BroadcastOp(value, vector_type)).result


def _elementwise_method(dialect: str, short: str, arity: int):
    def method(self: Builder, *operands: Value, name: str | None = None) -> Value:
        return self.op(f"{dialect}.{short}", *operands, name_hint=name)

    method.__name__ = short
    method.__doc__ = f"``{dialect}.{short}`` of {arity} operand(s)."
    return method


for _short, _cls in arith.OPS.items():
    if hasattr(_cls, "arity"):
        setattr(Builder, _short, _elementwise_method("arith", _short, _cls.arity))
for _short, _cls in math_d.OPS.items():
    setattr(Builder, _short, _elementwise_method("math", _short, _cls.arity))
