"""``affine.apply``, ``affine.min`` and ``affine.max``: index values computed by affine maps."""

from __future__ import annotations

from collections.abc import Sequence

from ..affine_map import AffineMap
from ..core import Operation, Value
from ..types import index
from .affine_symbols import _check_map_operands


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
