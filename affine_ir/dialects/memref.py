"""The ``memref`` dialect: allocation and non-affine (dynamic-index) access."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Operation, Value
from ..interfaces import MemRefAccessInterface
from ..traits import EffectKind, MemoryEffect, Pure
from ..types import MemRefType, index
from ._simple import build_from_operands, verify_element_type


class _AllocLike(Operation):
    """``%m = memref.alloc(%n) : memref<?x8xf32>``: one index operand per dynamic dim."""

    def __init__(self, memref_type: MemRefType, dynamic_sizes: Sequence[Value] = (), location=None,
                 name_hint=None, attributes=None):
        super().__init__(dynamic_sizes, [memref_type], attributes, location=location, result_names=[name_hint])

    @property
    def memref_type(self) -> MemRefType:
        return self.result.type

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """ALLOCATE of the result."""
        return (MemoryEffect(EffectKind.ALLOCATE, self.result),)

    def print_(self, p) -> None:
        p.write(f"{self.name}({p.values(self.operands)}){p.attr_dict(self)} : {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        p.expect("(")
        sizes = p.parse_operands(")")
        if p.accept("["):
            raise p.error("layout symbol operands are not supported")
        attrs, t, tloc = p.parse_attrs_and_type()
        if not isinstance(t, MemRefType):
            raise p.error(f"expected memref type, found {t}", tloc)
        n_dyn = sum(d is None for d in t.shape)
        if len(sizes) != n_dyn:
            raise p.error(f"{t} has {n_dyn} dynamic dims, but {len(sizes)} sizes were given", tloc)
        for v in sizes:
            p.check_type(v, index, tloc)
        return cls(t, sizes, location=loc, attributes=attrs)

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, MemRefType):
            raise self.error("result must be a memref")
        n_dyn = sum(d is None for d in t.shape)
        if len(self.operands) != n_dyn or any(v.type != index for v in self.operands):
            raise self.error(f"needs {n_dyn} index operands for the dynamic dims of {t}")
        if any(d is not None and d < 0 for d in t.shape):
            raise self.error(f"negative dimension in {t}")


class AllocOp(_AllocLike):
    name = "memref.alloc"


class AllocaOp(_AllocLike):
    name = "memref.alloca"


class DeallocOp(Operation):
    """``memref.dealloc %m : memref<8xf32>``."""

    name = "memref.dealloc"
    from_generic = classmethod(build_from_operands)

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """FREE of the memref."""
        return (MemoryEffect(EffectKind.FREE, self.operands[0]),)

    def print_(self, p) -> None:
        p.write(f"memref.dealloc {p.value(self.operands[0])}{p.attr_dict(self)} : {self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        attrs, _, _ = p.parse_attrs_and_type(v)
        return cls([v], attributes=attrs, location=loc)

    def verify_(self) -> None:
        if not isinstance(self.operands[0].type, MemRefType):
            raise self.error("operand must be a memref")


class DimOp(Operation):
    """``%d = memref.dim %m, %c0 : memref<?xf32>``."""

    name = "memref.dim"
    traits = frozenset({Pure})

    def __init__(self, memref: Value, dim_index: Value, location=None, name_hint=None):
        super().__init__([memref, dim_index], [index], location=location, result_names=[name_hint])

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(*operands, location=location)

    def print_(self, p) -> None:
        p.write(f"memref.dim {p.values(self.operands)}{p.attr_dict(self)} : {self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        m = p.parse_operand()
        p.expect(",")
        i = p.parse_operand(index)
        attrs, _, _ = p.parse_attrs_and_type(m)
        return p.add_attributes(cls(m, i, location=loc), attrs)

    def verify_(self) -> None:
        if not isinstance(self.operands[0].type, MemRefType) or self.operands[1].type != index:
            raise self.error("expects a memref and an index")


class _IndexedAccess(MemRefAccessInterface):
    """memref.load/store: a memref operand (at ``memref_index``) and one index per dimension."""

    def print_(self, p) -> None:
        head = "".join(f"{p.value(v)}, " for v in self.operands[: self.memref_index])
        p.write(f"{self.name} {head}{p.value(self.memref)}[{p.values(self.indices)}]{p.attr_dict(self)} : "
                f"{self.memref.type}")

    @staticmethod
    def _parse_access(p):
        """``%m[%i, %j] {attrs} : memref<...>``: the memref, indices, attributes, type and its place."""
        m, idx = p.parse_indexed_operand()
        attrs, t, tloc = p.parse_attrs_and_type(m)
        if not isinstance(t, MemRefType):
            raise p.error(f"expected memref type, found {t}", tloc)
        if len(idx) != t.rank:
            raise p.error(f"{len(idx)} indices for a memref of rank {t.rank}", tloc)
        for v in idx:
            p.check_type(v, index, tloc)
        return m, idx, attrs, t, tloc

    def verify_(self) -> None:
        t = self.memref.type
        if not isinstance(t, MemRefType):
            raise self.error(f"expects a memref, got {t}")
        if len(self.indices) != t.rank:
            raise self.error(f"has {len(self.indices)} indices for a memref of rank {t.rank} ({t})")
        if any(v.type != index for v in self.indices):
            raise self.error("indices must be of index type")
        verify_element_type(self)


class LoadOp(_IndexedAccess):
    """``%v = memref.load %m[%i, %j] : memref<4x4xf32>`` (any index values)."""

    name = "memref.load"

    def __init__(self, memref: Value, indices: Sequence[Value], location=None, name_hint=None):
        super().__init__([memref, *indices], [memref.type.element_type], location=location, result_names=[name_hint])

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(operands[0], operands[1:], location=location)

    @classmethod
    def parse_(cls, p, loc):
        m, idx, attrs, _, _ = cls._parse_access(p)
        return p.add_attributes(cls(m, idx, location=loc), attrs)


class StoreOp(_IndexedAccess):
    """``memref.store %v, %m[%i] : memref<4xf32>``."""

    name = "memref.store"
    memref_index = 1
    is_write = True
    from_generic = classmethod(build_from_operands)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        p.expect(",")
        m, idx, attrs, t, tloc = cls._parse_access(p)
        p.check_type(v, t.element_type, tloc)
        return cls([v, m, *idx], attributes=attrs, location=loc)
