"""1-D vector ops inside kernels: ``affine.vector_load/vector_store``, ``vector.broadcast``,
``vector.reduction`` and ``arith``/``math`` ops on vector operands (element-wise).

Representation: a ``vector<NxT>`` value is a local of a small struct holding the lanes in the
*storage* type of ``T`` (``__half`` for f16, ``__nv_bfloat16`` for bf16), printed once per
translation unit::

    struct __align__(16) air_v4f32 { float v[4]; };

aligned to its size when that is a power of two (at most 16). Element-wise ops are printed lane
by lane with exactly the scalar printer's code (:mod:`.scalar`): each lane ``x.v[k]`` stands for
a scalar operand (a 16-bit lane read through ``__half2float``/``__bfloat162float``, written back
with ``__float2half_rn``/``__float2bfloat16_rn`` -- exact, as the scalar result is already a value
of the 16-bit type). A scalar operand of a vector op (``arith.select``'s condition) is used as is.

Memory: a vector access of 4, 8 or 16 bytes is one access through the struct pointer (one
``LDG.128``/``STG.128`` for 16 bytes) when it is provably aligned: the memref is in global or
workgroup memory (``cudaMalloc``/torch/CuPy base pointers are 256-byte aligned; ``__shared__``
buffers are declared ``__align__(16)``), its dims after the first are static, and the linear
element index is a multiple of the lane count for every iteration -- decided from the access
expression's coefficients and constant, and the known multiples of its operands (constants,
``affine.for`` induction variables from their lower bound and step, ``affine.apply/min/max``
results). Otherwise each lane is loaded or stored by itself.

``vector.reduction <kind>`` combines the lanes left to right starting with lane 0, as the
interpreter does, each step with the scalar semantics of the matching ``arith`` op
(``add``: ``addf``/``addi``, ``mul``: ``mulf``/``muli``, ``maximumf``, ``minimumf``, ``maxsi``,
``minsi``, ``and``/``or``/``xor``: ``andi``/``ori``/``xori``).
"""

from __future__ import annotations

import math

from affine_ir.affine_expr import AffineExpr
from affine_ir.core import Operation, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.affine_apply import AffineMapValueOp
from affine_ir.dialects.arith import ConstantOp
from affine_ir.types import FloatType, Type, VectorType

from .types import float_literal, int_literal, storage_bytes, storage_type

_FROM_STORAGE = {"f16": "__half2float({x})", "bf16": "__bfloat162float({x})"}
_TO_STORAGE = {"f16": "__float2half_rn({x})", "bf16": "__float2bfloat16_rn({x})"}
_FLOAT_REDUCTIONS = {"add": "addf", "mul": "mulf", "maximumf": "maximumf", "minimumf": "minimumf"}
_INT_REDUCTIONS = {"add": "addi", "mul": "muli", "maxsi": "maxsi", "minsi": "minsi", "and": "andi", "or": "ori",
                   "xor": "xori"}
VECTOR_ACCESS_BYTES = (4, 8, 16)


class Lane:
    """Lane ``k`` of the vector value ``vector``: a scalar operand/result of a per-lane op."""

    __slots__ = ("vector", "k", "type", "name_hint")

    def __init__(self, vector: Value, k: int):
        self.vector = vector
        self.k = k
        self.type = vector.type.element_type
        self.name_hint = None


class Temp:
    """A scalar intermediate of a reduction (a C local named after ``name_hint``)."""

    __slots__ = ("type", "name_hint")

    def __init__(self, type_: Type, name_hint: str):
        self.type = type_
        self.name_hint = name_hint


class LaneOp:
    """``op`` seen by a scalar printer method: scalar operands/results, another name if given."""

    def __init__(self, op: Operation, operands: list, results: list, name: str | None = None):
        self._op = op
        self.operands = operands
        self.results = results
        self.name = name or op.name

    def __getattr__(self, attr: str):
        return getattr(self._op, attr)


def struct_name(t: VectorType) -> str:
    return f"air_v{t.shape[0]}{t.element_type}"


def struct_source(t: VectorType) -> str:
    """``struct __align__(16) air_v4f32 { float v[4]; };``"""
    n = t.shape[0]
    total = n * storage_bytes(t.element_type)
    align = f"__align__({min(total, 16)}) " if total & (total - 1) == 0 else ""
    return f"struct {align}{struct_name(t)} {{ {storage_type(t.element_type)} v[{n}]; }};"


def expr_multiple(e: AffineExpr, mults: list[int], num_dims: int | None = None) -> int:
    """The largest ``g`` known to divide ``e`` for all values (0: ``e`` is 0), where operand ``i``
    (dims, then symbols) is a multiple of ``mults[i]``; floordiv/mod/ceildiv terms are arbitrary."""
    nd = len(mults) if num_dims is None else num_dims
    g = abs(e.constant_term)
    for i in range(nd):
        g = math.gcd(g, e.coefficient_of_dim(i) * mults[i])
    for j in range(len(mults) - nd):
        g = math.gcd(g, e.coefficient_of_symbol(j) * mults[nd + j])
    for t in e.div_terms():
        g = math.gcd(g, t.coeff)
    return g


class VectorOps:
    """The vector printer methods of :class:`~.kernel.KernelPrinter` (a mixin)."""

    # -- types and lanes -----------------------------------------------------------------------
    def lanes(self, t: VectorType) -> int:
        if len(t.shape) != 1 or not t.shape[0]:
            raise self.error(self.cur, f"only 1-D vectors are supported by the CUDA backend, got {t}")
        return t.shape[0]

    def vector_struct(self, t: VectorType) -> str:
        """The struct of ``t`` (printed once in the translation unit when a kept line uses it)."""
        self.lanes(t)
        self.use_type(t.element_type)
        self._helpers.add(struct_source(t))
        return struct_name(t)

    def lane_val(self, lane: Lane) -> str:
        text = f"{self.val(lane.vector)}.v[{lane.k}]"
        fmt = getattr(lane.type, "name", None)
        return _FROM_STORAGE[fmt].format(x=text) if fmt in _FROM_STORAGE else text

    def lane_define(self, lane: Lane, expr: str) -> None:
        fmt = getattr(lane.type, "name", None)
        if fmt in _TO_STORAGE:
            expr = _TO_STORAGE[fmt].format(x=expr)
        self._lane_defined = True
        self.emit(f"{self.vars[lane.vector]}.v[{lane.k}] = {expr};", assigns=lane.vector)

    def declare_vector(self, v: Value) -> str:
        name = self.name(v)
        self.emit(f"{self.vector_struct(v.type)} {name};", defines=v)
        return name

    # -- element-wise ------------------------------------------------------------------------------
    def scalar_method(self, op: Operation):
        method = super().scalar_method(op)
        if method is None or not any(isinstance(v.type, VectorType) for v in (*op.operands, *op.results)):
            return method
        if isinstance(op, ConstantOp):
            return self.vector_constant
        return lambda o: self.per_lane(o, method)

    def per_lane(self, op: Operation, method) -> None:
        res = op.results[0]
        if not isinstance(res.type, VectorType):
            raise self.error(op, f"a vector op with the scalar result type {res.type} is not supported")
        n = self.lanes(res.type)
        for v in op.operands:
            if isinstance(v.type, VectorType) and self.lanes(v.type) != n:
                raise self.error(op, f"operand of type {v.type} does not match the result type {res.type}")
        self.declare_vector(res)
        for k in range(n):
            r = Lane(res, k)
            operands = [Lane(v, k) if isinstance(v.type, VectorType) else v for v in op.operands]
            self._lane_defined = False
            method(LaneOp(op, operands, [r]))
            if not self._lane_defined:  # an alias (extf f16 -> f32, index_cast to i64)
                self.lane_define(r, self.val(r))

    def vector_constant(self, op: Operation) -> None:
        res = op.results[0]
        n = self.lanes(res.type)
        values = op.value if isinstance(op.value, tuple) else (op.value,)
        if len(values) == 1:
            values = values * n
        if len(values) != n:
            raise self.error(op, f"{len(values)} values for {res.type}")
        el = res.type.element_type
        self.declare_vector(res)
        for k, x in enumerate(values):
            lit = float_literal(float(x), el.name) if isinstance(el, FloatType) else int_literal(int(x), el)
            self.lane_define(Lane(res, k), lit)

    # -- vector dialect --------------------------------------------------------------------------
    def op_vector_broadcast(self, op: Operation) -> None:
        res, src = op.results[0], op.operands[0]
        if isinstance(src.type, VectorType):
            raise self.error(op, "only a scalar can be broadcast by the CUDA backend")
        n = self.lanes(res.type)
        self.declare_vector(res)
        for k in range(n):
            self.lane_define(Lane(res, k), self.val(src))

    def op_vector_reduction(self, op: Operation) -> None:
        src, res = op.operands[0], op.results[0]
        n = self.lanes(src.type)
        el = src.type.element_type
        table = _FLOAT_REDUCTIONS if isinstance(el, FloatType) else _INT_REDUCTIONS
        arith = table.get(op.kind)
        if arith is None:
            raise self.error(op, f"reduction <{op.kind}> does not apply to {el}")
        acc = Lane(src, 0)
        if n == 1:
            self.define(res, self.val(acc))
            return
        base = self.namer.ir.get(res) or "red"
        for k in range(1, n):
            out = res if k == n - 1 else Temp(el, f"{base}_{k}")
            lane_op = LaneOp(op, [acc, Lane(src, k)], [out], name=f"arith.{arith}")
            self.scalar_method(lane_op)(lane_op)
            acc = out

    # -- memory ------------------------------------------------------------------------------
    def value_multiple(self, v, seen: frozenset = frozenset()) -> int:
        """The largest ``g`` known to divide the index value ``v`` (0: ``v`` is 0; 1: unknown)."""
        if v in self.ints:
            return abs(self.ints[v])
        if v in seen:
            return 1
        seen = seen | {v}
        if not hasattr(self, "_ivs"):
            self._ivs = {o.induction_var: o for o in self.launch.walk() if isinstance(o, AffineForOp)}
        loop = self._ivs.get(v)
        if loop is not None:
            g = loop.step
            lbm = loop.lower_bound_map
            mults = [self.value_multiple(x, seen) for x in loop.lower_bound_operands]
            for e in lbm.results:
                g = math.gcd(g, expr_multiple(e, mults, lbm.num_dims))
            return g
        owner = getattr(v, "op", None)
        if isinstance(owner, AffineMapValueOp):
            mults = [self.value_multiple(x, seen) for x in owner.operands]
            g = 0
            for e in owner.map.results:
                g = math.gcd(g, expr_multiple(e, mults, owner.map.num_dims))
            return g
        return 1

    def vector_access(self, op: Operation, vt: VectorType) -> tuple[list[str], str | None]:
        """The per-lane elements of a vector access, and the one aligned element to access through
        the struct pointer (None when the access is not provably aligned)."""
        n = self.lanes(vt)
        mem = self.mem(op.memref)
        if not mem.dims:
            raise self.error(op, f"a vector access needs a memref of rank >= 1, got {mem.type}")
        exprs, names = self.map_exprs(op.map, op.indices)
        dims: list[Value] = []
        for v in op.indices:
            if v not in self.ints and v not in dims:
                dims.append(v)
        lanes = [self.element(mem, [*exprs[:-1], exprs[-1] + k], names) for k in range(n)]
        nbytes = n * storage_bytes(vt.element_type)
        if (nbytes in VECTOR_ACCESS_BYTES and self.base_aligned(mem)
                and all(isinstance(d, int) for d in mem.dims[1:])):
            linear = AffineExpr.constant(0)
            for k, e in enumerate(exprs):
                linear = linear + e * math.prod(mem.dims[k + 1:])
            mults = [self.value_multiple(v) for v in dims]
            if expr_multiple(linear, mults) % n == 0:
                return lanes, lanes[0]
        return lanes, None

    def op_affine_vector_load(self, op: Operation) -> None:
        res = op.results[0]
        lanes, aligned = self.vector_access(op, res.type)
        st = self.vector_struct(res.type)
        if aligned is not None:
            self.define(res, f"*reinterpret_cast<const {st}*>(&{aligned})")
            return
        name = self.declare_vector(res)
        for k, el in enumerate(lanes):
            self._refs.add(op.memref)
            self.emit(f"{name}.v[{k}] = {el};", assigns=res)

    def op_affine_vector_store(self, op: Operation) -> None:
        vt = op.value.type
        lanes, aligned = self.vector_access(op, vt)
        st = self.vector_struct(vt)
        value = self.val(op.value)
        if aligned is not None:
            self.emit(f"*reinterpret_cast<{st}*>(&{aligned}) = {value};")
            return
        for k, el in enumerate(lanes):
            self._refs.update((op.memref, op.value))
            self.emit(f"{el} = {value}.v[{k}];")
