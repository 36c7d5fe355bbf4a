"""The ``memref`` dialect: allocation and non-affine (dynamic-index) access."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Operation, Value
from ..types import MemRefType, index


class _AllocLike(Operation):
    """``%m = memref.alloc(%n) : memref<?x8xf32>``: one index operand per dynamic dim."""

    def __init__(self, memref_type: MemRefType, dynamic_sizes: Sequence[Value] = (), location=None,
                 name_hint=None, attributes=None):
        super().__init__(dynamic_sizes, [memref_type], attributes, location=location, result_names=[name_hint])

    @property
    def memref_type(self) -> MemRefType:
        return self.result.type

    def print_(self, p) -> None:
        p.write(f"{self.name}({p.values(self.operands)}){p.attr_dict(self)} : {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        p.expect("(")
        sizes = p.parse_operands(")")
        if p.accept("["):
            raise p.error("layout symbol operands are not supported")
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        t = p.parse_colon_type()
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

    def print_(self, p) -> None:
        p.write(f"memref.dealloc {p.value(self.operands[0])}{p.attr_dict(self)} : {self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.check_type(v, p.parse_colon_type(), tloc)
        return cls([v], attributes=attrs, location=loc)

    def verify_(self) -> None:
        if not isinstance(self.operands[0].type, MemRefType):
            raise self.error("operand must be a memref")


class DimOp(Operation):
    """``%d = memref.dim %m, %c0 : memref<?xf32>``."""

    name = "memref.dim"
    is_pure = True

    def __init__(self, memref: Value, dim_index: Value, location=None, name_hint=None):
        super().__init__([memref, dim_index], [index], location=location, result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"memref.dim {p.values(self.operands)}{p.attr_dict(self)} : {self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        m = p.parse_operand()
        p.expect(",")
        i = p.parse_operand(index)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.check_type(m, p.parse_colon_type(), tloc)
        op = cls(m, i, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        if not isinstance(self.operands[0].type, MemRefType) or self.operands[1].type != index:
            raise self.error("expects a memref and an index")


class LoadOp(Operation):
    """``%v = memref.load %m[%i, %j] : memref<4x4xf32>`` (any index values)."""

    name = "memref.load"

    def __init__(self, memref: Value, indices: Sequence[Value], location=None, name_hint=None):
        super().__init__([memref, *indices], [memref.type.element_type], location=location, result_names=[name_hint])

    @property
    def memref(self) -> Value:
        return self.operands[0]

    @property
    def indices(self):
        return self.operands[1:]

    def print_(self, p) -> None:
        p.write(f"memref.load {p.value(self.memref)}[{p.values(self.indices)}]{p.attr_dict(self)} : {self.memref.type}")

    @classmethod
    def parse_(cls, p, loc):
        m = p.parse_operand()
        p.expect("[")
        idx = p.parse_operands("]")
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        t = p.parse_colon_type()
        p.check_type(m, t, tloc)
        _check_indices(p, t, idx, tloc)
        op = cls(m, idx, location=loc)
        p.add_attributes(op, attrs)
        return op

    def verify_(self) -> None:
        _verify_indexed(self, self.memref, self.indices)
        if self.result.type != self.memref.type.element_type:
            raise self.error("result type must be the memref's element type")


class StoreOp(Operation):
    """``memref.store %v, %m[%i] : memref<4xf32>``."""

    name = "memref.store"

    @property
    def value(self) -> Value:
        return self.operands[0]

    @property
    def memref(self) -> Value:
        return self.operands[1]

    @property
    def indices(self):
        return self.operands[2:]

    def print_(self, p) -> None:
        p.write(f"memref.store {p.value(self.value)}, {p.value(self.memref)}[{p.values(self.indices)}]"
                f"{p.attr_dict(self)} : {self.memref.type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        p.expect(",")
        m = p.parse_operand()
        p.expect("[")
        idx = p.parse_operands("]")
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        t = p.parse_colon_type()
        p.check_type(m, t, tloc)
        _check_indices(p, t, idx, tloc)
        p.check_type(v, t.element_type, tloc)
        return cls([v, m, *idx], attributes=attrs, location=loc)

    def verify_(self) -> None:
        _verify_indexed(self, self.memref, self.indices)
        if self.value.type != self.memref.type.element_type:
            raise self.error(f"stores a {self.value.type} into a memref of {self.memref.type.element_type}")


def _check_indices(p, t, idx, loc) -> None:
    if not isinstance(t, MemRefType):
        raise p.error(f"expected memref type, found {t}", loc)
    if len(idx) != t.rank:
        raise p.error(f"{len(idx)} indices for a memref of rank {t.rank}", loc)
    for v in idx:
        p.check_type(v, index, loc)


def _verify_indexed(op: Operation, m: Value, indices) -> None:
    t = m.type
    if not isinstance(t, MemRefType):
        raise op.error(f"expects a memref, got {t}")
    if len(indices) != t.rank:
        raise op.error(f"has {len(indices)} indices for a memref of rank {t.rank} ({t})")
    if any(v.type != index for v in indices):
        raise op.error("indices must be of index type")
