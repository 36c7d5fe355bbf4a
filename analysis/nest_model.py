"""The nest model behind the cost model: loops, accesses, memrefs, op counts and the band
tree of a loop nest, built once per nest from its affine maps (no isl)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from affine_ir import AffineExpr, FuncOp, ModuleOp, Operation, Value
from affine_ir.affine_expr import constant as _const
from affine_ir.affine_expr import dim as _dim
from affine_ir.affine_map import AffineMap
from affine_ir.dialects.affine import AffineForOp, AffineMaxOp, AffineMinOp
from affine_ir.dialects.arith import AddfOp, MulfOp, SubfOp
from affine_ir.dialects.math import FmaOp
from affine_ir.interfaces import AffineAccessInterface, MemRefAccessInterface
from affine_ir.traits import Arithmetic, ConstantLike, IsTerminator, Pure, SameOperandsAndResultType, allocating_op
from affine_ir.types import FloatType, IndexType, IntegerType, MemRefType, VectorType

DEFAULT_SYMBOL_VALUE = 1024
#: The float ops a multiply feeding it (its only use) contracts with into one fused multiply-add.
_FMA_ADDENDS = frozenset({AddfOp, SubfOp})


# --- the nest model: loops, accesses and the band tree, built once per nest --------------

class _Loop:
    __slots__ = ("op", "name", "lower", "upper", "step", "trip", "rect", "lo", "hi", "deps")


class _Access:
    __slots__ = ("memref", "exprs", "write", "lanes", "loops")


class NestNode:
    """A node of the band tree: its own loops, its range of accesses, its children, a label."""

    __slots__ = ("own", "start", "end", "children", "label")


class _Memref:
    __slots__ = ("name", "shape", "esize")


class NestModel:
    """Loops (pre-order), accesses (walk order), memrefs, op counts and the band tree."""

    def __init__(self, nest: Operation, symbol_values: Mapping | None):
        self.symbol_values = {(k.lstrip("%") if isinstance(k, str) else k): v for k, v in (symbol_values or {}).items()}
        self.loops: list[_Loop] = []
        self.accesses: list[_Access] = []
        self.memrefs: list[_Memref] = []
        self._memref_ids: dict[Value, int] = {}
        self._iv: dict[Value, int] = {}
        self._exprs: dict[Value, AffineExpr | None] = {}
        self.assumptions: list[str] = []
        self.ops_by_kind: dict[str, int] = {}
        self.flops = self.fma_pairs = self.slots = self.other_ops = 0
        self.float_dtypes: dict[str, int] = {}
        root_ops, label = _root_ops(nest)
        self.root = self._loop_node(nest) if isinstance(nest, AffineForOp) else self._container(root_ops, (), label)
        self.band = self.root.own
        self._count_ops(root_ops)

    # nodes
    def _container(self, ops: Sequence[Operation], own: tuple[int, ...], label: str) -> NestNode:
        node = NestNode()
        node.own, node.label, node.start = own, label, len(self.accesses)
        children = []
        for op in ops:
            if isinstance(op, AffineForOp):
                children.append(self._loop_node(op))
            elif op.regions:
                children.append(self._container([o for r in op.regions for b in r.blocks for o in b.ops], (), op.name))
            elif self._access(op):
                leaf = NestNode()
                leaf.own, leaf.children, leaf.label = (), (), op.name
                leaf.start, leaf.end = len(self.accesses) - 1, len(self.accesses)
                children.append(leaf)
        node.children, node.end = tuple(children), len(self.accesses)
        return node

    def _loop_node(self, op: AffineForOp) -> NestNode:
        band = []
        while True:
            band.append(self._add_loop(op))
            body = [o for o in op.body.ops if not o.has_trait(IsTerminator)]
            if len(body) == 1 and isinstance(body[0], AffineForOp):
                op = body[0]
                continue
            return self._container(body, tuple(band), "%" + self.loops[band[0]].name)

    def _add_loop(self, op: AffineForOp) -> int:
        g = len(self.loops)
        loop = _Loop()
        base = op.induction_var.name_hint or f"loop{g}"
        taken = {lp.name for lp in self.loops}
        loop.op, loop.name, loop.step, k = op, base, op.step, 0
        while loop.name in taken:  # unique as the printer makes them: %i, %i_0, %i_1
            loop.name, k = f"{base}_{k}", k + 1
        loop.lower = self._bound(op.lower_bound_map, op.lower_bound_operands, None, loop.name)
        loop.upper = self._bound(op.upper_bound_map, op.upper_bound_operands, loop.lower, loop.name)
        loop.rect = all(e.is_constant for e in (*loop.lower, *loop.upper))
        used = {d for e in (*loop.lower, *loop.upper) for d in e.used_dims()}
        loop.deps = frozenset(used.union(*(self.loops[d].deps for d in used)))  # outer loops its range follows
        self._iv[op.induction_var] = g
        self.loops.append(loop)
        full = self.ranges({}, {})
        loop.lo, loop.hi = full[g]
        mid = [(lo + (hi - lo) // max(1, lp.step) // 2 * lp.step,) * 2 for (lo, hi), lp in zip(full, self.loops)]
        lo_m = max(e.bounds(mid)[0] for e in loop.lower)
        hi_m = min(e.bounds(mid)[1] for e in loop.upper)
        loop.trip = max(0, -(-(hi_m - lo_m) // loop.step))
        fixed_trip = len(loop.lower) == 1 and len(loop.upper) == 1 and (loop.upper[0] - loop.lower[0]).is_constant
        if not (loop.rect or fixed_trip):
            self.assumptions.append(f"loop %{loop.name}: bounds depend on outer loops; trip count {loop.trip} "
                                    f"taken at the middle of their ranges")
        return g

    def _bound(self, m, operands, lower, name) -> tuple[AffineExpr, ...]:
        owner = operands[0].owner if len(operands) == 1 and m.num_results == 1 else None
        if isinstance(owner, AffineMaxOp if lower is None else AffineMinOp) \
                and (m.results[0].is_dim or m.results[0].is_symbol):  # `to %ub` with %ub = affine.min ...
            m, operands = owner.attributes["map"], owner.operands
        exprs = [self.expr(v) for v in operands]
        if any(e is None for e in exprs):
            self.assumptions.append(f"loop %{name}: non-affine bound operand; assumed "
                                    + ("0" if lower is None else f"{DEFAULT_SYMBOL_VALUE} iterations"))
            return (_const(0),) if lower is None else tuple(e + DEFAULT_SYMBOL_VALUE for e in lower)
        return tuple(r.replace(exprs[: m.num_dims], exprs[m.num_dims:]) for r in m.results)

    def ranges(self, point: Mapping[int, bool], tile: Mapping[int, int]) -> list[tuple[int, int]]:
        """Inclusive IV value ranges of every loop: fixed at a point, at a tile of T, or free."""
        out: list[tuple[int, int]] = []
        for g, lp in enumerate(self.loops):
            if lp.rect and hasattr(lp, "lo"):
                lo, last = lp.lo, lp.hi
            else:
                lo = max(_lo(e.bounds(out)) for e in lp.lower)
                hi = min(_hi(e.bounds(out), lo) for e in lp.upper)
                last = lo + max(0, (hi - 1 - lo) // lp.step) * lp.step
            if g in point or g in tile:  # the middle point, or the tile holding it
                n, size = (last - lo) // lp.step + 1, 1 if g in point else tile[g]
                first = (n - 1) // 2 // size * size
                lo, last = lo + first * lp.step, lo + min(first + size - 1, n - 1) * lp.step
            out.append((lo, last))
        return out

    # values as expressions over the nest's IVs (d<g>); symbols become their values
    def expr(self, v: Value) -> AffineExpr | None:
        if v not in self._exprs:
            self._exprs[v] = self._expr(v)
        return self._exprs[v]

    def _expr(self, v: Value) -> AffineExpr | None:
        if v in self._iv:
            return _dim(self._iv[v])
        for key in (v, v.name_hint):
            if key is not None and key in self.symbol_values:
                return _const(int(self.symbol_values[key]))
        owner = v.owner
        if isinstance(owner, Operation):
            value = getattr(owner.attributes.get("value"), "value", None)
            if owner.has_trait(ConstantLike) and isinstance(value, int):
                return _const(value)
            m = owner.attributes.get("map")
            if _applies_one_map_result(owner, m):
                ops = [self.expr(o) for o in owner.operands]
                if any(e is None for e in ops):
                    return None
                return m.results[0].replace(ops[: m.num_dims], ops[m.num_dims:])
            scope = owner.parent.parent_op if owner.parent is not None else None
        else:
            scope = owner.parent_op
            if isinstance(scope, AffineForOp) and v is scope.induction_var:  # IV of a loop around the nest
                return _const(scope.lower_bound_map.results[0].constant_term)
        if isinstance(v.type, (IndexType, IntegerType)) and (scope is None or isinstance(scope, FuncOp)):
            self.assumptions.append(f"symbol %{v.name_hint or '?'} = {DEFAULT_SYMBOL_VALUE} (default; pass "
                                    f"symbol_values)")
            return _const(DEFAULT_SYMBOL_VALUE)
        return None

    # accesses
    def _memref(self, v: Value) -> int:
        if v not in self._memref_ids:
            m = _Memref()
            t: MemRefType = v.type
            m.esize = _element_bytes(t.element_type)
            names = {x.name for x in self.memrefs}
            base = m.name = v.name_hint or f"memref{len(self.memrefs)}"
            k = 0
            while m.name in names:
                k += 1
                m.name = f"{base}_{k}"
            m.shape = tuple(d if d is not None else self._dynamic_dim(v, i) for i, d in enumerate(t.shape))
            self._memref_ids[v] = len(self.memrefs)
            self.memrefs.append(m)
        return self._memref_ids[v]

    def _dynamic_dim(self, v: Value, i: int) -> int | None:
        owner = allocating_op(v)
        if owner is not None:
            k = sum(d is None for d in v.type.shape[:i])
            e = self.expr(owner.operands[k]) if k < len(owner.operands) else None
            return e.constant_value if e is not None else None
        return None

    def _access(self, op: Operation) -> bool:
        if isinstance(op, AffineAccessInterface):
            mem, m, idx = op.memref, op.map, op.indices
            ops = [self.expr(o) for o in idx]
            known = [_const(0) if e is None else e for e in ops]
            exprs = tuple(None if any(ops[k] is None for k in _used(r, m.num_dims)) else
                          r.replace(known[: m.num_dims], known[m.num_dims:]) for r in m.results)
            vt = op.vector_type
            self._add_access(mem, exprs, op.is_write, vt.shape[-1] if vt is not None else 1)
            return True
        if isinstance(op, MemRefAccessInterface):
            mem = op.memref
            self.assumptions.append(f"{op.name} of %{mem.name_hint or '?'}: non-affine; whole memref assumed")
            self._add_access(mem, (None,) * mem.type.rank, op.is_write, 1)
            return True
        return False

    def _add_access(self, mem: Value, exprs, write: bool, lanes: int) -> None:
        a = _Access()
        a.memref, a.exprs, a.write, a.lanes = self._memref(mem), exprs, write, lanes
        used = {g for e in exprs if e is not None for g in e.used_dims()}
        a.loops = frozenset(used.union(*(self.loops[g].deps for g in used)))  # with loops bounding those
        self.accesses.append(a)

    # operation counts
    def _count_ops(self, ops: Sequence[Operation]) -> None:
        paired: set[Operation] = set()
        for top in ops:
            for op in top.walk():
                if not op.has_trait(Arithmetic):
                    continue
                name = op.name
                n = self._iterations(op) * _lanes(op)
                self.ops_by_kind[name] = self.ops_by_kind.get(name, 0) + n
                t = op.results[0].type if op.results else None
                et = t.element_type if isinstance(t, VectorType) else t
                if not (isinstance(et, FloatType) and op.has_trait(SameOperandsAndResultType)):  # float arithmetic
                    self.other_ops += n
                    continue
                fma = isinstance(op, FmaOp)
                self.flops += 2 * n if fma else n
                self.slots += n
                self.fma_pairs += n if fma else 0
                self.float_dtypes[et.name] = self.float_dtypes.get(et.name, 0) + n
                uses = op.result.uses
                if isinstance(op, MulfOp) and len(uses) == 1 and type(uses[0].op) in _FMA_ADDENDS \
                        and uses[0].op not in paired:
                    paired.add(uses[0].op)
                    self.fma_pairs += n
                    self.slots -= n

    def _iterations(self, op: Operation) -> int:
        n = 1
        for a in op.ancestors():
            if isinstance(a, AffineForOp) and a.induction_var in self._iv:
                n *= self.loops[self._iv[a.induction_var]].trip
        return n


def _root_ops(nest) -> tuple[list[Operation], str]:
    if isinstance(nest, ModuleOp):
        funcs = [f for f in nest.functions if not f.is_declaration]
        if len(funcs) != 1:
            raise ValueError(f"the module has {len(funcs)} function bodies; pass one func.func or loop nest")
        nest = funcs[0]
    if isinstance(nest, FuncOp):
        return [o for o in nest.body.ops if not o.has_trait(IsTerminator)], f"@{nest.sym_name}"
    if isinstance(nest, AffineForOp):
        return [nest], ""
    raise TypeError(f"expected an affine.for, func.func or module, got {getattr(nest, 'name', nest)!r}")


def _applies_one_map_result(op: Operation, m) -> bool:
    """Whether ``op``'s result is the single result of its affine ``map`` attribute applied to its
    operands: a pure op with a one-result map (``affine.apply``, a one-result ``affine.min/max``)."""
    return isinstance(m, AffineMap) and m.num_results == 1 and op.has_trait(Pure) and len(op.results) == 1


def _used(r: AffineExpr, num_dims: int) -> list[int]:
    return [*r.used_dims(), *(num_dims + s for s in r.used_symbols())]


def _lo(b) -> int:
    return b[0] if b[0] is not None else 0


def _hi(b, lo: int) -> int:
    return b[1] if b[1] is not None else lo + DEFAULT_SYMBOL_VALUE


def _lanes(op: Operation) -> int:
    t = op.results[0].type if op.results else None
    return math.prod(t.shape) if isinstance(t, VectorType) else 1


def _element_bytes(t) -> int:
    if isinstance(t, VectorType):  # a memref of vectors: each element is a whole vector
        return math.prod(t.shape) * _element_bytes(t.element_type)
    if isinstance(t, (FloatType, IntegerType)):
        return max(1, t.width // 8)
    return 8  # index
