"""``affine.apply``, ``affine.min`` and ``affine.max``: index values computed by affine maps."""

from __future__ import annotations

from collections.abc import Sequence

from ..affine_map import AffineMap
from ..core import Operation, Value
from ..traits import AffineMapValue, Pure
from ..types import index
from .affine_symbols import affine_scope, check_map_operands, is_valid_dim, is_valid_symbol


class AffineMapValueOp(Operation):
    """The ops whose one index result is an affine map applied to their operands (dims, then
    symbols): ``affine.apply`` (a single-result map), ``affine.min`` and ``affine.max`` (the min
    or max of the map's results). ``isinstance(op, AffineMapValueOp)`` asks for any of them:
    ``%r = affine.apply #map(%i)[%n]``."""

    traits = frozenset({AffineMapValue})

    def __init__(self, m: AffineMap, operands: Sequence[Value], location=None, name_hint=None):
        super().__init__(operands, [index], {"map": m}, location=location, result_names=[name_hint])

    @property
    def map(self) -> AffineMap:
        """The map applied to the operands."""
        return self.attributes["map"]

    @staticmethod
    def combine(results: Sequence[int]) -> int:
        """The op's value from the results of its map (``affine.apply``: the one result)."""
        return results[0]

    def evaluate(self, operand_values: Sequence[int]) -> int:
        """The op's value when its operands (dims, then symbols) have ``operand_values``."""
        m = self.map
        args = [int(v) for v in operand_values]
        return self.combine(m.evaluate(args[: m.num_dims], args[m.num_dims :]))

    def print_(self, p) -> None:
        p.write(f"{self.name} {p.map_ref(self.map)}{p.dim_and_symbol_list(self.operands, self.map.num_dims)}"
                f"{p.attr_dict(self, ('map',))}")

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(attributes.pop("map"), operands, location=location)

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
        check_map_operands(self, self.map, self.operands, "map")


class AffineApplyOp(AffineMapValueOp):
    """``%r = affine.apply #map(%i)[%n]``. As in MLIR, its operands need not be valid dims or
    symbols (its result is a valid dim only when they are), but a valid dim that is not a
    valid symbol cannot take a symbol position."""

    name = "affine.apply"
    traits = frozenset({Pure})

    def verify_(self) -> None:
        m = self.map
        if m.num_results != 1:
            raise self.error(f"map must have exactly one result, has {m.num_results}")
        if len(self.operands) != m.num_inputs:
            raise self.error(f"map {m} takes {m.num_inputs} operands, got {len(self.operands)}")
        for v in self.operands:
            if v.type != index:
                raise self.error(f"map operand has type {v.type}, expected index")
        scope = affine_scope(self)
        for k, v in enumerate(self.operands[m.num_dims :], m.num_dims):
            if is_valid_dim(v, scope) and not is_valid_symbol(v, scope):
                raise self.error(f"dimensional operand cannot be used as a symbol (map operand #{k}: "
                                 f"%{v.name_hint or '?'})")


class AffineMinOp(AffineMapValueOp):
    name = "affine.min"
    traits = frozenset({Pure})
    combine = staticmethod(min)


class AffineMaxOp(AffineMapValueOp):
    name = "affine.max"
    traits = frozenset({Pure})
    combine = staticmethod(max)

