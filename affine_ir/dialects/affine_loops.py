"""``affine.for``, ``affine.if`` and ``affine.yield``: loops and conditionals with affine bounds."""

from __future__ import annotations

from collections.abc import Sequence

from ..affine_map import AffineMap, IntegerSet
from ..core import Block, Operation, Region, Value
from ..interfaces import LoopLikeOpInterface
from ..parser_base import describe_token
from ..traits import RecursiveMemoryEffects
from ..types import index
from ._simple import ValuesTerminator, set_regions, verify_terminator
from .affine_symbols import affine_scope, check_dim_and_symbol_operands, check_map_operands, is_valid_symbol


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


def _parse_bound(p, prefix: str) -> tuple[AffineMap, list[Value], bool]:
    """A loop bound: its map, its operands, and whether it was a bare SSA value (read as a
    symbol, as MLIR reads it; see ``_read_bare_bounds``)."""
    if p.peek().kind == "value":
        return AffineMap.symbol_identity(), [p.parse_operand(index)], True
    return (*_parse_bound_map(p, prefix), False)


def _read_bare_bounds(op: AffineForOp, lower: bool, upper: bool) -> None:
    """Our one leniency over MLIR's syntax: a bare SSA bound that is not a valid symbol where
    the loop stands (an outer IV: ``0 to %i``) reads as a dim through the identity map (MLIR
    rejects it: "operand cannot be used as a symbol"); it prints back as ``#map(%i)``.
    Run once the module is parsed, when the rules for valid symbols can see the ops."""
    scope = affine_scope(op)
    lb, lbo, ub, ubo = op.lower_bound_map, op.lower_bound_operands, op.upper_bound_map, op.upper_bound_operands
    if lower and not is_valid_symbol(lbo[0], scope):
        lb = AffineMap.identity(1)
    if upper and not is_valid_symbol(ubo[0], scope):
        ub = AffineMap.identity(1)
    op.set_bounds(lb, lbo, ub, ubo)


def _parse_bound_map(p, prefix: str) -> tuple[AffineMap, list[Value]]:
    loc = p.loc()
    if p.accept(prefix):
        m = p.parse_affine_map()
        if m.num_results == 0:
            raise p.error("a loop bound map needs at least one result", loc)
        return m, p.parse_dim_and_symbol_list(m, loc)
    tok = p.peek()
    if tok.kind == "int" or tok.text == "-":
        return AffineMap.constant_map(p.parse_integer("loop bound")), []
    if tok.kind == "hash" or tok.text == "affine_map":
        m = p.parse_affine_map()
        if m.num_results == 0:
            raise p.error("a loop bound map needs at least one result", loc)
        if m.num_results != 1:
            raise p.error(f"a bound map with {m.num_results} results needs '{prefix}'", loc)
        return m, p.parse_dim_and_symbol_list(m, loc)
    raise p.error(f"expected loop bound (integer, SSA value, '{prefix}' or affine map), found {describe_token(tok)}")


def print_yield_region(p, region: Region, has_results: bool) -> None:
    """Print a region, eliding a trailing operand-less ``affine.yield``."""
    p.write("{")
    p.indent += 1
    p.block_ops(region.blocks[0], skip_terminator_if=lambda op: isinstance(op, AffineYieldOp) and not op.operands
                and not op.attributes)
    p.indent -= 1
    p.newline()
    p.write("}")


def finish_loop(p, op: Operation, body: Region, loc) -> Operation:
    """A parsed loop: ``op`` with ``body`` as its region (an operand-less ``affine.yield`` added
    where the text leaves it out) and the attribute dictionary that follows the body."""
    set_regions(op, body)
    ensure_yield(body.blocks[0], loc)
    return p.add_attributes(op, p.parse_optional_attr_dict())


def ensure_yield(block: Block, location=None) -> None:
    """Append an empty ``affine.yield`` when the block does not end in a terminator."""
    if not block.ops or not block.ops[-1].is_terminator:
        block.append(AffineYieldOp([], location=location))


class AffineForOp(LoopLikeOpInterface):
    """``affine.for %i = max #lb(...) to min #ub(...) step s iter_args(%a = %x) -> (t)``.

    Operands: lower-bound operands, upper-bound operands, then iter_args initial
    values. The body block's arguments are the IV and the iter_args.
    """

    name = "affine.for"
    traits = frozenset({RecursiveMemoryEffects})

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

    # -- LoopLikeOpInterface ---------------------------------------------------
    @property
    def induction_vars(self) -> tuple[Value, ...]:
        return (self.induction_var,)

    @property
    def region_iter_args(self) -> tuple[Value, ...]:
        return tuple(self.body.args[1:])

    @property
    def steps(self) -> tuple[int, ...]:
        return (self.step,)

    @property
    def lower_bounds(self) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        return ((self.lower_bound_map, self.lower_bound_operands),)

    @property
    def upper_bounds(self) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        return ((self.upper_bound_map, self.upper_bound_operands),)

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
        print_yield_region(p, self.regions[0], bool(self.results))
        p.write(p.attr_dict(self, elide=("lower_bound", "upper_bound", "step")))

    @classmethod
    def parse_(cls, p, loc):
        iv = p.parse_value_name()
        p.expect("=")
        lb, lbo, lb_bare = _parse_bound(p, "max")
        p.expect("to")
        ub, ubo, ub_bare = _parse_bound(p, "min")
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
        op = finish_loop(p, cls(lb, lbo, ub, ubo, step, inits, location=loc), region, loc)
        if lb_bare or ub_bare:
            p.after_module(lambda: _read_bare_bounds(op, lb_bare, ub_bare))
        return op

    def verify_(self) -> None:
        lb, ub = self.lower_bound_map, self.upper_bound_map
        if lb.num_results == 0 or ub.num_results == 0:
            raise self.error("bound maps need at least one result")
        if not isinstance(self.step, int) or self.step <= 0:
            raise self.error(f"step must be a positive integer, got {self.step}")
        check_map_operands(self, lb, self.lower_bound_operands, "lower bound")
        check_map_operands(self, ub, self.upper_bound_operands, "upper bound")
        args = self.body.args
        if not args or args[0].type != index:
            raise self.error("body must take the index induction variable as first argument")
        if [a.type for a in args[1:]] != [r.type for r in self.results] or \
                [v.type for v in self.inits] != [r.type for r in self.results]:
            raise self.error("iter_args, their initial values and the results must have the same types")
        verify_yield(self, self.body, [r.type for r in self.results])


def verify_yield(op: Operation, block: Block, types) -> None:
    verify_terminator(op, block, AffineYieldOp, types, "yields", f"the parent '{op.name}' expects")


class AffineYieldOp(ValuesTerminator):
    """``affine.yield %a : f32``: terminator of affine.for/if/parallel bodies."""

    name = "affine.yield"
    keyword = "affine.yield"

    def verify_(self) -> None:
        parent = self.parent_op
        if parent is None or parent.name not in ("affine.for", "affine.if", "affine.parallel"):
            raise self.error("must terminate the body of an affine.for, affine.if or affine.parallel")


class AffineIfOp(Operation):
    """``affine.if #set(%i)[%n] -> f32 { ... } else { ... }``."""

    name = "affine.if"
    traits = frozenset({RecursiveMemoryEffects})

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
        print_yield_region(p, self.regions[0], bool(self.results))
        if self.else_block is not None:
            p.write(" else ")
            print_yield_region(p, self.regions[1], bool(self.results))
        p.write(p.attr_dict(self, elide=("condition",)))

    @classmethod
    def parse_(cls, p, loc):
        sloc = p.loc()
        s = p.parse_integer_set()
        operands = p.parse_dim_and_symbol_list(s, sloc)
        types = p.parse_result_types() if p.accept("->") else []
        regions = [p.parse_region()]
        if p.accept("else"):
            regions.append(p.parse_region())
        elif types:
            raise p.error("an affine.if with results needs an 'else' region", loc)
        for region in regions:
            ensure_yield(region.blocks[0], loc)
        op = set_regions(cls(s, operands, types, location=loc), *regions, *([Region([])] * (2 - len(regions))))
        return p.add_attributes(op, p.parse_optional_attr_dict())

    def verify_(self) -> None:
        s = self.condition
        if len(self.operands) != s.num_dims + s.num_symbols:
            raise self.error(f"set {s} takes {s.num_dims + s.num_symbols} operands, got {len(self.operands)}")
        check_dim_and_symbol_operands(self, s.num_dims, s.num_dims + s.num_symbols, self.operands, "condition")
        types = [r.type for r in self.results]
        if self.then_block.args or (self.else_block is not None and self.else_block.args):
            raise self.error("then and else blocks take no arguments")
        verify_yield(self, self.then_block, types)
        if self.else_block is not None:
            verify_yield(self, self.else_block, types)
        elif types:
            raise self.error("must have an else region when it has results")
