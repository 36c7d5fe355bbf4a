"""``affine.parallel``: a band of parallel loops, with optional reductions."""

from __future__ import annotations

from collections.abc import Sequence

from ..affine_expr import AffineExpr
from ..affine_map import AffineMap
from ..core import Block, Region, Value
from ..interfaces import LoopLikeOpInterface
from ..traits import RecursiveMemoryEffects
from ..types import index
from .affine_loops import ensure_yield, finish_loop, print_yield_region, verify_yield
from .affine_symbols import canonical_ssa_map, check_map_operands

# MLIR's arith::AtomicRMWKind spellings (``maxs``, not ``maxsi``), and the arith op combining each.
# (MLIR's maxnumf/minnumf are missing: this IR has no arith.maxnumf/minnumf yet.)
REDUCTIONS = ("addf", "mulf", "maximumf", "minimumf", "addi", "muli", "maxs", "mins", "maxu", "minu", "andi", "ori",
              "xori")
REDUCTION_ARITH_OPS = {k: f"arith.{ {'maxs': 'maxsi', 'mins': 'minsi', 'maxu': 'maxui', 'minu': 'minui'}.get(k, k)}"
                       for k in REDUCTIONS}


class AffineParallelOp(LoopLikeOpInterface):
    """``affine.parallel (%i, %j) = (0, 0) to (%n, 64) step (1, 4) reduce ("addf") -> (f32)``.

    Bounds are kept as MLIR does: one lower-bound map whose results are grouped per IV
    (``max`` of a group), likewise for upper bounds (``min``).
    """

    name = "affine.parallel"
    traits = frozenset({RecursiveMemoryEffects})

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

    # -- LoopLikeOpInterface (no loop-carried values: reductions start from their identity) ----
    @property
    def induction_vars(self) -> tuple[Value, ...]:
        return tuple(self.body.args)

    @property
    def inits(self) -> tuple[Value, ...]:
        return ()

    @property
    def region_iter_args(self) -> tuple[Value, ...]:
        return ()

    @property
    def lower_bounds(self) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        return self._bounds(False)

    @property
    def upper_bounds(self) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        return self._bounds(True)

    def _bounds(self, upper: bool) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        """Per IV, its group of bound results as a map over all the lower (upper) operands."""
        key = "upper" if upper else "lower"
        m = self.attributes[f"{key}_bounds"]
        operands = tuple(self.upper_operands if upper else self.lower_operands)
        return tuple((AffineMap(m.num_dims, m.num_symbols, tuple(group)), operands)
                     for group in self.bound_groups(upper))

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
        # In the parser's form, also when operands changed since the map was set (a fixpoint).
        m, ops = canonical_ssa_map(self.attributes[f"{key}_bounds"],
                                   self.upper_operands if upper else self.lower_operands)
        dn = [p.value(v) for v in ops[: m.num_dims]]
        sn = [f"symbol({p.value(v)})" for v in ops[m.num_dims :]]
        parts, k = [], 0
        for g in self.attributes[f"{key}_groups"]:
            texts = [e.to_str(dn, sn) for e in m.results[k : k + g]]
            k += g
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
        print_yield_region(p, self.regions[0], bool(self.results))
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
        return finish_loop(p, op, region, loc)

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
        check_map_operands(self, a["lower_bounds"], self.lower_operands, "lower bound")
        check_map_operands(self, a["upper_bounds"], self.upper_operands, "upper bound")
        if len(self.reductions) != len(self.results):
            raise self.error("needs one reduction kind per result")
        verify_yield(self, self.body, [r.type for r in self.results])


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
