"""``affine.load/store/vector_load/vector_store``: memref accesses whose subscripts are affine maps."""

from __future__ import annotations

from collections.abc import Sequence

from ..affine_map import AffineMap
from ..core import Value
from ..interfaces import AffineAccessInterface, AffineReadOpInterface, AffineWriteOpInterface
from ..types import MemRefType, VectorType
from ._simple import verify_element_type
from .affine_symbols import canonical_ssa_map, check_map_operands


class _AccessSyntax(AffineAccessInterface):
    """Shared text and checks of affine.load/store/vector_load/vector_store: a memref and an index map."""

    @property
    def memref_type(self) -> MemRefType:
        return self.memref.type

    def print_(self, p) -> None:
        head = "".join(f"{p.value(v)}, " for v in self.operands[: self.memref_index])
        vector = f", {self.vector_type}" if self.vector_type is not None else ""
        p.write(f"{self.name} {head}{p.value(self.memref)}[{p.map_of_ssa_ids(self.map, self.indices)}]"
                f"{p.attr_dict(self, ('map',))} : {self.memref.type}{vector}")

    @staticmethod
    def _parse_access(p):
        """``%A[%i + 1, %j] {attrs} : memref<...>``: the memref, the index map and its operands, the
        attributes, and where the type is written; the subscript has one index per dimension."""
        mem = p.parse_operand()
        sloc = p.loc()
        p.expect("[")
        m, operands = p.parse_map_of_ssa_ids("]")
        attrs, t, tloc = p.parse_attrs_and_type()
        if not isinstance(t, MemRefType):
            raise p.error(f"expected memref type, found {t}", tloc)
        p.check_type(mem, t, tloc)
        n = m.num_results
        if n != t.rank:
            raise p.error(f"{n} {'index' if n == 1 else 'indices'} for a memref of rank {t.rank} ({t})", sloc)
        return mem, m, operands, attrs, tloc

    def _verify_access(self) -> None:
        mt = self.memref.type
        if not isinstance(mt, MemRefType):
            raise self.error(f"expects a memref, got {mt}")
        if self.map.num_results != mt.rank:
            raise self.error(f"has {self.map.num_results} indices for a memref of rank {mt.rank} ({mt})")
        check_map_operands(self, self.map, self.indices, "index")


class _StoreAccessOp(_AccessSyntax, AffineWriteOpInterface):
    """affine.store/vector_store: the stored value, the memref and the index operands."""

    def __init__(self, value: Value, memref: Value, m: AffineMap, indices: Sequence[Value], location=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([value, memref, *indices], [], {"map": m}, location=location)

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(operands[0], operands[1], attributes.pop("map"), operands[2:], location=location)

    @property
    def value(self) -> Value:
        return self.operands[0]

    @classmethod
    def _parse_store(cls, p):
        """``%v, %A[...] {attrs} : memref<...>``: as ``_parse_access``, the stored value first."""
        v = p.parse_operand()
        p.expect(",")
        return (v, *cls._parse_access(p))


class AffineLoadOp(_AccessSyntax, AffineReadOpInterface):
    """``%v = affine.load %A[%i + 1, %j] : memref<64x64xf32>``."""

    name = "affine.load"

    def __init__(self, memref: Value, m: AffineMap, indices: Sequence[Value], location=None, name_hint=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([memref, *indices], [memref.type.element_type], {"map": m}, location=location,
                         result_names=[name_hint])

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(operands[0], attributes.pop("map"), operands[1:], location=location)

    @classmethod
    def parse_(cls, p, loc):
        mem, m, operands, attrs, _ = cls._parse_access(p)
        return p.add_attributes(cls(mem, m, operands, location=loc), attrs)

    def verify_(self) -> None:
        self._verify_access()
        verify_element_type(self)


class AffineStoreOp(_StoreAccessOp):
    """``affine.store %v, %A[%i] : memref<64xf32>``."""

    name = "affine.store"

    @classmethod
    def parse_(cls, p, loc):
        v, mem, m, operands, attrs, tloc = cls._parse_store(p)
        p.check_type(v, mem.type.element_type, tloc)
        return p.add_attributes(cls(v, mem, m, operands, location=loc), attrs)

    def verify_(self) -> None:
        self._verify_access()
        verify_element_type(self)


class AffineVectorLoadOp(_AccessSyntax, AffineReadOpInterface):
    """``%v = affine.vector_load %A[%i] : memref<64xf32>, vector<8xf32>``."""

    name = "affine.vector_load"

    def __init__(self, vector_type: VectorType, memref: Value, m: AffineMap, indices: Sequence[Value],
                 location=None):
        m, indices = canonical_ssa_map(m, indices)
        super().__init__([memref, *indices], [vector_type], {"map": m}, location=location)

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(result_types[0], operands[0], attributes.pop("map"), operands[1:], location=location)

    @property
    def vector_type(self) -> VectorType:
        return self.result.type

    @classmethod
    def parse_(cls, p, loc):
        mem, m, operands, attrs, tloc = cls._parse_access(p)
        p.expect(",")
        vt = p.parse_type()
        if not isinstance(vt, VectorType):
            raise p.error(f"expected vector type, found {vt}", tloc)
        return p.add_attributes(cls(vt, mem, m, operands, location=loc), attrs)

    def verify_(self) -> None:
        self._verify_access()
        _verify_vector_elem(self, self.result.type)


class AffineVectorStoreOp(_StoreAccessOp):
    """``affine.vector_store %v, %A[%i] : memref<64xf32>, vector<8xf32>``."""

    name = "affine.vector_store"

    @property
    def vector_type(self) -> VectorType:
        return self.value.type

    @classmethod
    def parse_(cls, p, loc):
        v, mem, m, operands, attrs, tloc = cls._parse_store(p)
        p.expect(",")
        p.check_type(v, p.parse_type(), tloc)
        return p.add_attributes(cls(v, mem, m, operands, location=loc), attrs)

    def verify_(self) -> None:
        self._verify_access()
        _verify_vector_elem(self, self.value.type)


def _verify_vector_elem(op: AffineAccessInterface, vt) -> None:
    if not isinstance(vt, VectorType) or vt.element_type != op.memref.type.element_type:
        raise op.error(f"vector type {vt} must have the memref's element type {op.memref.type.element_type}")
