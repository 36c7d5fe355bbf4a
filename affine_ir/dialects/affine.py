"""The ``affine`` dialect: loops, conditionals and accesses whose indices are affine maps."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from ..affine_expr import AffineExpr
from ..affine_map import AffineMap, IntegerSet
from ..core import Block, Operation, Region, Value
from ..parser import describe_token
from ..types import MemRefType, VectorType, index

_SCOPE_OPS = ("func.func", "gpu.launch", "builtin.module")


def _is_scope_block(block: Block | None, scope_blocks) -> bool:
    if block is None:
        return False
    if id(block) in scope_blocks:
        return True
    op = block.parent_op
    return op is not None and op.name in _SCOPE_OPS


def is_valid_symbol(v: Value, scope_blocks=()) -> bool:
    """MLIR's rule, simplified: arguments of a function (or gpu.launch) body, values
    defined at the top level of one, constants, ``memref.dim`` of such values, and
    affine.apply/min/max of valid symbols are valid symbols.

    ``scope_blocks`` holds ids of blocks to treat as function bodies (used while parsing,
    before the enclosing op exists).
    """
    owner = v.owner
    if isinstance(owner, Block):
        return _is_scope_block(owner, scope_blocks)
    if owner.name == "arith.constant" or _is_scope_block(owner.parent, scope_blocks):
        return True
    if owner.name in ("affine.apply", "affine.min", "affine.max", "memref.dim"):
        return all(is_valid_symbol(o, scope_blocks) for o in owner.operands)
    return False


def _check_map_operands(op: Operation, m: AffineMap, operands: Sequence[Value], what: str) -> None:
    if len(operands) != m.num_inputs:
        raise op.error(f"{what} map {m} takes {m.num_inputs} operands, got {len(operands)}")
    for v in operands:
        if v.type != index:
            raise op.error(f"{what} operand has type {v.type}, expected index")
    for v in operands[m.num_dims :]:
        if not is_valid_symbol(v):
            raise op.error(f"{what} operand %{v.name_hint or '?'} is used as a symbol but is not a valid symbol")


_PLACEHOLDER = re.compile(r"\x00([ds])(\d+)\x00")


def canonical_ssa_map(m: AffineMap, operands: Sequence[Value]) -> tuple[AffineMap, tuple[Value, ...]]:
    """``m`` and ``operands`` as the text ``%i + 1, symbol(%n)`` (affine.load/store subscripts,
    affine.parallel bounds) can express them: dims, then symbols, numbered in order of first
    appearance in the printed results, a value repeated among the dims (or the symbols)
    merged into one, unused ones dropped. Parsing what the printer writes gives exactly this,
    so ops that print this way keep their maps in this form and print -> parse is exact.

    Example: ``(d0, d1) -> (d1 + d0 floordiv 2)`` over ``(%i, %j)`` prints ``%j + %i floordiv 2``
    and becomes ``(d0, d1) -> (d0 + d1 floordiv 2)`` over ``(%j, %i)``.
    """
    operands = tuple(operands)
    if len(operands) != m.num_inputs:
        return m, operands  # malformed: left for the verifier to report
    # Which operands are the same value (a dim and a symbol never merge).
    same = tuple(next(k for k in range(len(operands)) if operands[k] is v and (k < m.num_dims) == (j < m.num_dims))
                 for j, v in enumerate(operands))
    new, picks = _canonical_form(m, same)
    return new, tuple(operands[k] for k in picks)


@functools.lru_cache(maxsize=4096)
def _canonical_form(m: AffineMap, same: tuple[int, ...]) -> tuple[AffineMap, tuple[int, ...]]:
    """The canonical map for ``m`` whose operand ``j`` is the same value as operand ``same[j]``,
    and the positions of the original operands that the new map takes."""
    picks = tuple(range(len(same)))
    for _ in range(4):  # renumbering can reorder div terms; settle (normally one round)
        nd = m.num_dims
        text = ", ".join(e.to_str([f"\x00d{k}\x00" for k in range(nd)],
                                  [f"\x00s{k}\x00" for k in range(m.num_symbols)]) for e in m.results)
        dims: list[int] = []
        syms: list[int] = []
        dim_repl: list[AffineExpr] = [AffineExpr.constant(0)] * nd
        sym_repl: list[AffineExpr] = [AffineExpr.constant(0)] * m.num_symbols
        for kind, k in _PLACEHOLDER.findall(text):
            k = int(k)
            j = k if kind == "d" else nd + k
            group, repl, make = (dims, dim_repl, AffineExpr.dim) if kind == "d" else \
                (syms, sym_repl, AffineExpr.symbol)
            origin = same[picks[j]]
            if origin not in group:
                group.append(origin)
            repl[k] = make(group.index(origin))
        new = AffineMap(len(dims), len(syms), tuple(e.replace(dim_repl, sym_repl) for e in m.results))
        new_picks = (*dims, *syms)
        if new == m and new_picks == picks:
            break
        m, picks = new, new_picks
    return m, picks


def _print_bound(p, m: AffineMap, operands, prefix: str) -> None:
    if m.num_results == 1:
        e = m.results[0]
        if m.num_inputs == 0 and e.is_constant:
            p.write(str(e.constant_value))
            return
        if m.num_dims == 0 and m.num_symbols == 1 and e.as_symbol() == 0:
            p.write(p.value(operands[0]))
            return
    else:
        p.write(prefix + " ")
    p.write(p.map_ref(m) + p.dim_and_symbol_list(operands, m.num_dims))


def _parse_bound(p, prefix: str) -> tuple[AffineMap, list[Value]]:
    loc = p.loc()
    if p.accept(prefix):
        m = p.parse_affine_map()
        if m.num_results == 0:
            raise p.error("a loop bound map needs at least one result", loc)
        return m, p.parse_dim_and_symbol_list(m, loc)
    tok = p.peek()
    if tok.kind == "int" or tok.text == "-":
        return AffineMap.constant_map(p.parse_integer("loop bound")), []
    if tok.kind == "value":
        v = p.parse_operand(index)
        if p.is_valid_symbol(v):
            return AffineMap.symbol_identity(), [v]
        return AffineMap.identity(1), [v]
    if tok.kind == "hash" or tok.text == "affine_map":
        m = p.parse_affine_map()
        if m.num_results == 0:
            raise p.error("a loop bound map needs at least one result", loc)
        if m.num_results != 1:
            raise p.error(f"a bound map with {m.num_results} results needs '{prefix}'", loc)
        return m, p.parse_dim_and_symbol_list(m, loc)
    raise p.error(f"expected loop bound (integer, SSA value, '{prefix}' or affine map), found {describe_token(tok)}")


def _print_yield_region(p, region: Region, has_results: bool) -> None:
    """Print a region, eliding a trailing operand-less ``affine.yield``."""
    p.write("{")
    p.indent += 1
    p.block_ops(region.blocks[0], skip_terminator_if=lambda op: isinstance(op, AffineYieldOp) and not op.operands
                and not op.attributes)
    p.indent -= 1
    p.newline()
    p.write("}")


def ensure_yield(block: Block, location=None) -> None:
    """Append an empty ``affine.yield`` when the block does not end in a terminator."""
    if not block.ops or not block.ops[-1].is_terminator:
        block.append(AffineYieldOp([], location=location))


class AffineForOp(Operation):
    """``affine.for %i = max #lb(...) to min #ub(...) step s iter_args(%a = %x) -> (t)``.

    Operands: lower-bound operands, upper-bound operands, then iter_args initial
    values. The body block's arguments are the IV and the iter_args.
    """

    name = "affine.for"

    def __init__(self, lower_bound: AffineMap | int, lower_operands: Sequence[Value], upper_bound: AffineMap | int,
                 upper_operands: Sequence[Value], step: int = 1, inits: Sequence[Value] = (),
                 iv_name: str | None = None, iter_arg_names=None, location=None):
        lb = AffineMap.constant_map(lower_bound) if isinstance(lower_bound, int) else lower_bound
        ub = AffineMap.constant_map(upper_bound) if isinstance(upper_bound, int) else upper_bound
        types = [v.type for v in inits]
        block = Block([index, *types], [iv_name, *(iter_arg_names or [None] * len(types))])
        super().__init__([*lower_operands, *upper_operands, *inits], types,
                         {"lower_bound": lb, "upper_bound": ub, "step": step}, [Region([block])], location)
        if not inits:
            ensure_yield(block, location)

    # -- accessors -------------------------------------------------------------
    @property
    def lower_bound_map(self) -> AffineMap:
        return self.attributes["lower_bound"]

    @property
    def upper_bound_map(self) -> AffineMap:
        return self.attributes["upper_bound"]

    @property
    def step(self) -> int:
        return self.attributes["step"]

    @property
    def lower_bound_operands(self) -> tuple[Value, ...]:
        return self.operands[: self.lower_bound_map.num_inputs]

    @property
    def upper_bound_operands(self) -> tuple[Value, ...]:
        n = self.lower_bound_map.num_inputs
        return self.operands[n : n + self.upper_bound_map.num_inputs]

    @property
    def inits(self) -> tuple[Value, ...]:
        return self.operands[self.lower_bound_map.num_inputs + self.upper_bound_map.num_inputs :]

    @property
    def induction_var(self) -> Value:
        return self.body.args[0]

    @property
    def iter_args(self) -> list[Value]:
        return self.body.args[1:]

    @property
    def constant_bounds(self) -> tuple[int, int] | None:
        """(lower, upper) when both bounds are single constants."""
        lb, ub = self.lower_bound_map, self.upper_bound_map
        if lb.is_single_constant and ub.is_single_constant:
            return lb.results[0].constant_value, ub.results[0].constant_value
        return None

    @property
    def constant_trip_count(self) -> int | None:
        b = self.constant_bounds
        if b is None:
            return None
        return max(0, -(-(b[1] - b[0]) // self.step))

    def set_bounds(self, lower: AffineMap, lower_operands, upper: AffineMap, upper_operands) -> None:
        """Replace both bounds (maps and operands), keeping the iter_args inits."""
        inits = self.inits
        self.attributes["lower_bound"] = lower
        self.attributes["upper_bound"] = upper
        self.set_operands([*lower_operands, *upper_operands, *inits])

    # -- text ------------------------------------------------------------------
    def print_(self, p) -> None:
        p.write(f"affine.for {p.name_value(self.induction_var)} = ")
        _print_bound(p, self.lower_bound_map, self.lower_bound_operands, "max")
        p.write(" to ")
        _print_bound(p, self.upper_bound_map, self.upper_bound_operands, "min")
        if self.step != 1:
            p.write(f" step {self.step}")
        if self.results:
            pairs = ", ".join(f"{p.name_value(a)} = {p.value(v)}" for a, v in zip(self.iter_args, self.inits))
            p.write(f" iter_args({pairs}) -> ({', '.join(str(r.type) for r in self.results)})")
        p.write(" ")
        _print_yield_region(p, self.regions[0], bool(self.results))
        p.write(p.attr_dict(self, elide=("lower_bound", "upper_bound", "step")))

    @classmethod
    def parse_(cls, p, loc):
        iv = p.parse_value_name()
        p.expect("=")
        lb, lbo = _parse_bound(p, "max")
        p.expect("to")
        ub, ubo = _parse_bound(p, "min")
        step = 1
        if p.accept("step"):
            sloc = p.loc()
            step = p.parse_integer("step")
            if step <= 0:
                raise p.error(f"step must be positive, got {step}", sloc)
        names, inits, types = [], [], []
        if p.accept("iter_args"):
            p.expect("(")

            def pair():
                names.append(p.parse_value_name())
                p.expect("=")
                inits.append(p.parse_operand())

            p.parse_comma_list(pair, ")")
            tloc = p.loc()
            p.expect("->")
            types = p.parse_result_types()
            if len(types) != len(inits):
                raise p.error(f"{len(inits)} iter_args but {len(types)} result types", tloc)
            for v, t in zip(inits, types):
                p.check_type(v, t, tloc)
        region = p.parse_region([(iv, index), *zip(names, types)])
        op = cls(lb, lbo, ub, ubo, step, inits, location=loc)
        op.regions.clear()
        op.add_region(region)
        ensure_yield(region.blocks[0], loc)
        p.add_attributes(op, p.parse_optional_attr_dict())
        return op

    def verify_(self) -> None:
        lb, ub = self.lower_bound_map, self.upper_bound_map
        if lb.num_results == 0 or ub.num_results == 0:
            raise self.error("bound maps need at least one result")
        if not isinstance(self.step, int) or self.step <= 0:
            raise self.error(f"step must be a positive integer, got {self.step}")
        _check_map_operands(self, lb, self.lower_bound_operands, "lower bound")
        _check_map_operands(self, ub, self.upper_bound_operands, "upper bound")
        args = self.body.args
        if not args or args[0].type != index:
            raise self.error("body must take the index induction variable as first argument")
        if [a.type for a in args[1:]] != [r.type for r in self.results] or \
                [v.type for v in self.inits] != [r.type for r in self.results]:
            raise self.error("iter_args, their initial values and the results must have the same types")
        _verify_yield(self, self.body, [r.type for r in self.results])


def _verify_yield(op: Operation, block: Block, types) -> None:
    term = block.ops[-1] if block.ops else None
    if not isinstance(term, AffineYieldOp):
        raise op.error("body must end with 'affine.yield'")
    got = [v.type for v in term.operands]
    if got != list(types):
        raise term.error(f"yields ({', '.join(map(str, got))}) but the parent '{op.name}' expects "
                         f"({', '.join(map(str, types))})")


class AffineYieldOp(Operation):
    """``affine.yield %a : f32``: terminator of affine.for/if/parallel bodies."""

    name = "affine.yield"
    is_terminator = True

    def print_(self, p) -> None:
        p.write("affine.yield" + p.attr_dict(self))
        if self.operands:
            p.write(f" {p.values(self.operands)} : " + ", ".join(str(v.type) for v in self.operands))

    @classmethod
    def parse_(cls, p, loc):
        attrs = p.parse_optional_attr_dict()
        vals = p.parse_operands()
        if vals:
            tloc = p.loc()
            p.expect(":")
            types = p.parse_comma_list(p.parse_type)
            if len(types) != len(vals):
                raise p.error(f"{len(vals)} values but {len(types)} types", tloc)
            for v, t in zip(vals, types):
                p.check_type(v, t, tloc)
        return p.add_attributes(cls(vals, location=loc), attrs)

    def verify_(self) -> None:
        if not isinstance(self.parent_op, (AffineForOp, AffineIfOp, AffineParallelOp)):
            raise self.error("must terminate the body of an affine.for, affine.if or affine.parallel")


class AffineIfOp(Operation):
    """``affine.if #set(%i)[%n] -> f32 { ... } else { ... }``."""

    name = "affine.if"

    def __init__(self, condition: IntegerSet, operands: Sequence[Value], result_types=(), with_else: bool = False,
                 location=None):
        then = Region([Block()])
        other = Region([Block()] if with_else or result_types else [])
        super().__init__(operands, result_types, {"condition": condition}, [then, other], location)
        if not result_types:
            ensure_yield(then.blocks[0], location)
            if other.blocks:
                ensure_yield(other.blocks[0], location)

    @property
    def condition(self) -> IntegerSet:
        return self.attributes["condition"]

    @property
    def then_block(self) -> Block:
        return self.regions[0].blocks[0]

    @property
    def else_block(self) -> Block | None:
        return self.regions[1].blocks[0] if self.regions[1].blocks else None

    def print_(self, p) -> None:
        s = self.condition
        p.write(f"affine.if {p.map_ref(s)}{p.dim_and_symbol_list(self.operands, s.num_dims)}")
        if self.results:
            types = ", ".join(str(r.type) for r in self.results)
            p.write(f" -> {types}" if len(self.results) == 1 else f" -> ({types})")
        p.write(" ")
        _print_yield_region(p, self.regions[0], bool(self.results))
        if self.else_block is not None:
            p.write(" else ")
            _print_yield_region(p, self.regions[1], bool(self.results))
        p.write(p.attr_dict(self, elide=("condition",)))

    @classmethod
    def parse_(cls, p, loc):
        sloc = p.loc()
        s = p.parse_integer_set()
        operands = p.parse_dim_and_symbol_list(s, sloc)
        types = p.parse_result_types() if p.accept("->") else []
        op = cls(s, operands, types, location=loc)
        op.regions.clear()
        op.add_region(p.parse_region())
        ensure_yield(op.regions[0].blocks[0], loc)
        if p.accept("else"):
            op.add_region(p.parse_region())
            ensure_yield(op.regions[1].blocks[0], loc)
        else:
            op.add_region(Region([]))
            if types:
                raise p.error("an affine.if with results needs an 'else' region", loc)
        p.add_attributes(op, p.parse_optional_attr_dict())
        return op

    def verify_(self) -> None:
        s = self.condition
        if len(self.operands) != s.num_dims + s.num_symbols:
            raise self.error(f"set {s} takes {s.num_dims + s.num_symbols} operands, got {len(self.operands)}")
        for v in self.operands:
            if v.type != index:
                raise self.error(f"condition operand has type {v.type}, expected index")
        for v in self.operands[s.num_dims :]:
            if not is_valid_symbol(v):
                raise self.error(f"condition operand %{v.name_hint or '?'} is used as a symbol but is not a "
                                 "valid symbol")
        types = [r.type for r in self.results]
        if self.then_block.args or (self.else_block is not None and self.else_block.args):
            raise self.error("then and else blocks take no arguments")
        _verify_yield(self, self.then_block, types)
        if self.else_block is not None:
            _verify_yield(self, self.else_block, types)
        elif types:
            raise self.error("must have an else region when it has results")


class _AccessOp(Operation):
    """Shared parts of affine.load/store/vector_load/vector_store: a memref and an index map."""

    memref_index = 0

    @property
    def memref(self) -> Value:
        return self.operands[self.memref_index]

    @property
    def memref_type(self) -> MemRefType:
        return self.memref.type

    @property
    def map(self) -> AffineMap:
        return self.attributes["map"]

    @property
    def indices(self) -> tuple[Value, ...]:
        return self.operands[self.memref_index + 1 :]

    def set_access(self, m: AffineMap, indices: Sequence[Value]) -> None:
        """Replace the access map and its operands (kept in the form of ``canonical_ssa_map``)."""
        m, indices = canonical_ssa_map(m, indices)
        head = self.operands[: self.memref_index + 1]
        self.attributes["map"] = m
        self.set_operands([*head, *indices])

    def _subscript(self, p) -> str:
        return f"{p.value(self.memref)}[{p.map_of_ssa_ids(self.map, self.indices)}]"

    def _verify_access(self) -> None:
        mt = self.memref.type
        if not isinstance(mt, MemRefType):
            raise self.error(f"expects a memref, got {mt}")
        if self.map.num_results != mt.rank:
            raise self.error(f"has {self.map.num_results} indices for a memref of rank {mt.rank} ({mt})")
        _check_map_operands(self, self.map, self.indices, "index")


def _parse_subscript(p):
    """``%A[%i + 1, %j]``: the memref, the index map, its operands and where ``[`` is."""
    mem = p.parse_operand()
    sloc = p.loc()
    p.expect("[")
    m, operands = p.parse_map_of_ssa_ids("]")
    return mem, m, operands, sloc


def _check_memref_type(p, mem: Value, t, loc, m: AffineMap, sloc) -> None:
    """The written memref type matches the operand, and the subscript has one index per dim."""
    if not isinstance(t, MemRefType):
        raise p.error(f"expected memref type, found {t}", loc)
    p.check_type(mem, t, loc)
    n = m.num_results
    if n != t.rank:
        raise p.error(f"{n} {'index' if n == 1 else 'indices'} for a memref of rank {t.rank} ({t})", sloc)


class AffineLoadOp(_AccessOp):
    """``%v = affine.load %A[%i + 1, %j] : memref<64x64xf32>``."""

    name = "affine.load"

    def __init__(self, memref: Value, m: AffineMap, indices: Sequence[Value], location=None, name_hint=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([memref, *indices], [memref.type.element_type], {"map": m}, location=location,
                         result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"affine.load {self._subscript(p)}{p.attr_dict(self, ('map',))} : {self.memref.type}")

    @classmethod
    def parse_(cls, p, loc):
        mem, m, operands, sloc = _parse_subscript(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        _check_memref_type(p, mem, p.parse_colon_type(), tloc, m, sloc)
        op = cls(mem, m, operands, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        self._verify_access()
        if self.result.type != self.memref.type.element_type:
            raise self.error("result type must be the memref's element type")


class AffineStoreOp(_AccessOp):
    """``affine.store %v, %A[%i] : memref<64xf32>``."""

    name = "affine.store"
    memref_index = 1

    def __init__(self, value: Value, memref: Value, m: AffineMap, indices: Sequence[Value], location=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([value, memref, *indices], [], {"map": m}, location=location)

    @property
    def value(self) -> Value:
        return self.operands[0]

    def print_(self, p) -> None:
        p.write(f"affine.store {p.value(self.value)}, {self._subscript(p)}{p.attr_dict(self, ('map',))} "
                f": {self.memref.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        p.expect(",")
        mem, m, operands, sloc = _parse_subscript(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        t = p.parse_colon_type()
        _check_memref_type(p, mem, t, tloc, m, sloc)
        p.check_type(v, t.element_type, tloc)
        op = cls(v, mem, m, operands, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        self._verify_access()
        if self.value.type != self.memref.type.element_type:
            raise self.error(f"stores a {self.value.type} into a memref of {self.memref.type.element_type}")


class AffineVectorLoadOp(_AccessOp):
    """``%v = affine.vector_load %A[%i] : memref<64xf32>, vector<8xf32>``."""

    name = "affine.vector_load"

    def __init__(self, vector_type: VectorType, memref: Value, m: AffineMap, indices: Sequence[Value],
                 location=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([memref, *indices], [vector_type], {"map": m}, location=location)

    def print_(self, p) -> None:
        p.write(f"affine.vector_load {self._subscript(p)}{p.attr_dict(self, ('map',))} "
                f": {self.memref.type}, {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        mem, m, operands, sloc = _parse_subscript(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        _check_memref_type(p, mem, p.parse_colon_type(), tloc, m, sloc)
        p.expect(",")
        vt = p.parse_type()
        if not isinstance(vt, VectorType):
            raise p.error(f"expected vector type, found {vt}", tloc)
        op = cls(vt, mem, m, operands, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        self._verify_access()
        _verify_vector_elem(self, self.result.type)


class AffineVectorStoreOp(_AccessOp):
    """``affine.vector_store %v, %A[%i] : memref<64xf32>, vector<8xf32>``."""

    name = "affine.vector_store"
    memref_index = 1

    def __init__(self, value: Value, memref: Value, m: AffineMap, indices: Sequence[Value], location=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([value, memref, *indices], [], {"map": m}, location=location)

    @property
    def value(self) -> Value:
        return self.operands[0]

    def print_(self, p) -> None:
        p.write(f"affine.vector_store {p.value(self.value)}, {self._subscript(p)}{p.attr_dict(self, ('map',))} "
                f": {self.memref.type}, {self.value.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        p.expect(",")
        mem, m, operands, sloc = _parse_subscript(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        _check_memref_type(p, mem, p.parse_colon_type(), tloc, m, sloc)
        p.expect(",")
        p.check_type(v, p.parse_type(), tloc)
        op = cls(v, mem, m, operands, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        self._verify_access()
        _verify_vector_elem(self, self.value.type)


def _verify_vector_elem(op: _AccessOp, vt) -> None:
    if not isinstance(vt, VectorType) or vt.element_type != op.memref.type.element_type:
        raise op.error(f"vector type {vt} must have the memref's element type {op.memref.type.element_type}")


class _MapValueOp(Operation):
    """affine.apply/min/max: ``%r = affine.apply #map(%i)[%n]``."""

    def __init__(self, m: AffineMap, operands: Sequence[Value], location=None, name_hint=None):
        super().__init__(operands, [index], {"map": m}, location=location, result_names=[name_hint])

    @property
    def map(self) -> AffineMap:
        return self.attributes["map"]

    def print_(self, p) -> None:
        p.write(f"{self.name} {p.map_ref(self.map)}{p.dim_and_symbol_list(self.operands, self.map.num_dims)}"
                f"{p.attr_dict(self, ('map',))}")

    @classmethod
    def parse_(cls, p, loc):
        mloc = p.loc()
        m = p.parse_affine_map()
        op = cls(m, p.parse_dim_and_symbol_list(m, mloc), location=loc)
        p.add_attributes(op, p.parse_optional_attr_dict())
        return op

    def verify_(self) -> None:
        if self.map.num_results == 0:
            raise self.error("map must have at least one result")
        _check_map_operands(self, self.map, self.operands, "map")


class AffineApplyOp(_MapValueOp):
    name = "affine.apply"
    is_pure = True

    def verify_(self) -> None:
        super().verify_()
        if self.map.num_results != 1:
            raise self.error(f"map must have exactly one result, has {self.map.num_results}")


class AffineMinOp(_MapValueOp):
    name = "affine.min"
    is_pure = True


class AffineMaxOp(_MapValueOp):
    name = "affine.max"
    is_pure = True


REDUCTIONS = ("addf", "mulf", "maximumf", "minimumf", "addi", "muli", "maxsi", "minsi", "andi", "ori")


class AffineParallelOp(Operation):
    """``affine.parallel (%i, %j) = (0, 0) to (%n, 64) step (1, 4) reduce ("addf") -> (f32)``.

    Bounds are kept as MLIR does: one lower-bound map whose results are grouped per IV
    (``max`` of a group), likewise for upper bounds (``min``).
    """

    name = "affine.parallel"

    def __init__(self, lower_map: AffineMap, lower_groups: Sequence[int], lower_operands: Sequence[Value],
                 upper_map: AffineMap, upper_groups: Sequence[int], upper_operands: Sequence[Value],
                 steps: Sequence[int], reductions: Sequence[str] = (), result_types=(), iv_names=None,
                 location=None):
        n = len(steps)
        lower_map, lower_operands = canonical_ssa_map(lower_map, lower_operands)
        upper_map, upper_operands = canonical_ssa_map(upper_map, upper_operands)
        block = Block([index] * n, iv_names)
        attrs = {"lower_bounds": lower_map, "lower_groups": tuple(lower_groups), "upper_bounds": upper_map,
                 "upper_groups": tuple(upper_groups), "steps": tuple(steps), "reductions": tuple(reductions)}
        super().__init__([*lower_operands, *upper_operands], result_types, attrs, [Region([block])], location)
        if not result_types:
            ensure_yield(block, location)

    @property
    def ivs(self) -> list[Value]:
        return self.body.args

    @property
    def steps(self) -> tuple[int, ...]:
        return self.attributes["steps"]

    @property
    def reductions(self) -> tuple[str, ...]:
        return self.attributes["reductions"]

    @property
    def lower_operands(self):
        return self.operands[: self.attributes["lower_bounds"].num_inputs]

    @property
    def upper_operands(self):
        return self.operands[self.attributes["lower_bounds"].num_inputs :]

    def bound_groups(self, upper: bool) -> list[list[AffineExpr]]:
        """Per IV, the list of bound exprs (max of them for lower, min for upper)."""
        key = "upper" if upper else "lower"
        m = self.attributes[f"{key}_bounds"]
        out, k = [], 0
        for g in self.attributes[f"{key}_groups"]:
            out.append(list(m.results[k : k + g]))
            k += g
        return out

    def _print_bounds(self, p, upper: bool) -> str:
        key = "upper" if upper else "lower"
        m = self.attributes[f"{key}_bounds"]
        ops = self.upper_operands if upper else self.lower_operands
        dn = [p.value(v) for v in ops[: m.num_dims]]
        sn = [f"symbol({p.value(v)})" for v in ops[m.num_dims :]]
        parts = []
        for group in self.bound_groups(upper):
            texts = [e.to_str(dn, sn) for e in group]
            parts.append(texts[0] if len(texts) == 1 else f"{'min' if upper else 'max'}({', '.join(texts)})")
        return "(" + ", ".join(parts) + ")"

    def print_(self, p) -> None:
        ivs = ", ".join(p.name_value(a) for a in self.ivs)
        p.write(f"affine.parallel ({ivs}) = {self._print_bounds(p, False)} to {self._print_bounds(p, True)}")
        if any(s != 1 for s in self.steps):
            p.write(f" step ({', '.join(map(str, self.steps))})")
        if self.results:
            reds = ", ".join(f'"{r}"' for r in self.reductions)
            p.write(f" reduce ({reds}) -> ({', '.join(str(r.type) for r in self.results)})")
        p.write(" ")
        _print_yield_region(p, self.regions[0], bool(self.results))
        elide = ("lower_bounds", "lower_groups", "upper_bounds", "upper_groups", "steps", "reductions")
        p.write(p.attr_dict(self, elide))

    @classmethod
    def parse_(cls, p, loc):
        p.expect("(")
        ivs = p.parse_comma_list(p.parse_value_name, ")")
        p.expect("=")
        lmap, lgroups, lops = _parse_parallel_bounds(p, "max", len(ivs))
        p.expect("to")
        umap, ugroups, uops = _parse_parallel_bounds(p, "min", len(ivs))
        steps = [1] * len(ivs)
        if p.accept("step"):
            sloc = p.loc()
            p.expect("(")
            steps = p.parse_comma_list(p.parse_integer, ")")
            if len(steps) != len(ivs) or any(s <= 0 for s in steps):
                raise p.error(f"expected {len(ivs)} positive steps", sloc)
        reductions, types = [], []
        if p.accept("reduce"):
            p.expect("(")

            def red():
                tok = p.expect_kind("string", "reduction kind string")
                if tok.text[1:-1] not in REDUCTIONS:
                    raise p.error(f"unknown reduction {tok.text}; expected one of {', '.join(REDUCTIONS)}", tok.loc)
                return tok.text[1:-1]

            reductions = p.parse_comma_list(red, ")")
            p.expect("->")
            types = p.parse_result_types()
            if len(types) != len(reductions):
                raise p.error(f"{len(reductions)} reductions but {len(types)} result types")
        region = p.parse_region([(t, index) for t in ivs])
        op = cls(lmap, lgroups, lops, umap, ugroups, uops, steps, reductions, types, location=loc)
        op.regions.clear()
        op.add_region(region)
        ensure_yield(region.blocks[0], loc)
        p.add_attributes(op, p.parse_optional_attr_dict())
        return op

    def verify_(self) -> None:
        n = len(self.ivs)
        a = self.attributes
        if any(v.type != index for v in self.ivs):
            raise self.error("induction variables must have index type")
        if len(a["steps"]) != n or len(a["lower_groups"]) != n or len(a["upper_groups"]) != n:
            raise self.error(f"needs one bound group and one step per induction variable ({n})")
        if any(s <= 0 for s in a["steps"]) or any(g <= 0 for g in a["lower_groups"] + a["upper_groups"]):
            raise self.error("steps and bound groups must be positive")
        if sum(a["lower_groups"]) != a["lower_bounds"].num_results or \
                sum(a["upper_groups"]) != a["upper_bounds"].num_results:
            raise self.error("bound groups do not cover the bound maps")
        _check_map_operands(self, a["lower_bounds"], self.lower_operands, "lower bound")
        _check_map_operands(self, a["upper_bounds"], self.upper_operands, "upper bound")
        if len(self.reductions) != len(self.results):
            raise self.error("needs one reduction kind per result")
        _verify_yield(self, self.body, [r.type for r in self.results])


def _parse_parallel_bounds(p, kind: str, n: int):
    b = p.ssa_map_builder()
    loc = p.loc()
    p.expect("(")
    exprs, groups = [], []

    def group():
        if p.accept(kind):
            p.expect("(")
            es = p.parse_comma_list(b.parse_expr, ")")
        else:
            es = [b.parse_expr()]
        exprs.extend(es)
        groups.append(len(es))

    p.parse_comma_list(group, ")")
    if len(groups) != n:
        raise p.error(f"expected {n} bounds, one per induction variable, got {len(groups)}", loc)
    m, operands = b.finish(exprs, loc)
    return m, groups, operands
