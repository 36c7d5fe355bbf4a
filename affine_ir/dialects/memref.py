"""The ``memref`` dialect: allocation, non-affine (dynamic-index) access, and views.

``memref.view`` (a typed view of a byte buffer) and ``memref.cast`` (to an unranked memref, what
``nvgpu.tma.create.descriptor`` takes) are :class:`~affine_ir.traits.ViewLike`: their result is
the memory of their source, under another type. Nothing is copied; follow
:func:`~affine_ir.traits.view_source` to the memref whose memory an access touches."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Operation, Value
from ..interfaces import MemRefAccessInterface
from ..traits import EffectKind, MemoryEffect, Pure, ViewLike
from ..types import (
    FloatType,
    MemRefType,
    UnrankedMemRefType,
    element_size_in_bytes,
    i8,
    index,
)
from ._simple import build_from_operands, verify_element_type
from .arith import constant_int


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


#: ``memref.atomic_rmw`` kinds (MLIR's ``AtomicRMWKind``) -> the ``arith`` op computing the new value.
ATOMIC_RMW_KINDS = {"addf": "arith.addf", "addi": "arith.addi", "mulf": "arith.mulf", "muli": "arith.muli",
                    "maximumf": "arith.maximumf", "minimumf": "arith.minimumf", "maxnumf": "arith.maxnumf",
                    "minnumf": "arith.minnumf", "maxs": "arith.maxsi", "mins": "arith.minsi", "maxu": "arith.maxui",
                    "minu": "arith.minui", "andi": "arith.andi", "ori": "arith.ori", "xori": "arith.xori"}
_FLOAT_ATOMIC_KINDS = frozenset({"addf", "mulf", "maximumf", "minimumf", "maxnumf", "minnumf"})


class AtomicRMWOp(MemRefAccessInterface):
    """``%old = memref.atomic_rmw addf %v, %m[%i] : (f32, memref<?xf32>) -> f32`` (MLIR's op): reads
    the element, writes ``kind(element, %v)`` in one indivisible step, returns the element read.
    Effects: READ and WRITE of the memref (an access: the memref is operand 1, the indices follow)."""

    name = "memref.atomic_rmw"
    memref_index = 1
    is_write = True

    def __init__(self, kind: str, value: Value, memref: Value, indices: Sequence[Value], location=None,
                 name_hint=None):
        super().__init__([value, memref, *indices], [value.type], {"kind": kind}, location=location,
                         result_names=[name_hint])

    @property
    def kind(self) -> str:
        return self.attributes["kind"]

    @property
    def value(self) -> Value:
        return self.operands[0]

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        kind = attributes.get("kind")
        return cls(getattr(kind, "value", kind), operands[0], operands[1], operands[2:], location=location)

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ and WRITE of the memref."""
        return (MemoryEffect(EffectKind.READ, self.memref), MemoryEffect(EffectKind.WRITE, self.memref))

    def print_(self, p) -> None:
        p.write(f"memref.atomic_rmw {self.kind} {p.value(self.value)}, {p.value(self.memref)}"
                f"[{p.values(self.indices)}]{p.attr_dict(self, elide=('kind',))} : ({self.value.type}, "
                f"{self.memref.type}) -> "
                f"{self.results[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        kind = p.parse_keyword(tuple(ATOMIC_RMW_KINDS), "atomic_rmw kind")
        v = p.parse_operand()
        p.expect(",")
        m, idx = p.parse_indexed_operand()
        p.expect(":")
        p.expect("(")
        vt = p.parse_type()
        p.expect(",")
        mt = p.parse_type()
        p.expect(")")
        p.expect("->")
        p.parse_type()
        p.check_type(v, vt, loc)
        p.check_type(m, mt, loc)
        for i in idx:
            p.check_type(i, index, loc)
        return cls(kind, v, m, idx, location=loc)

    def verify_(self) -> None:
        t = self.memref.type
        if self.kind not in ATOMIC_RMW_KINDS:
            raise self.error(f"unknown kind '{self.kind}' (one of {', '.join(ATOMIC_RMW_KINDS)})")
        if not isinstance(t, MemRefType):
            raise self.error(f"expects a memref, got {t}")
        if len(self.indices) != t.rank or any(v.type != index for v in self.indices):
            raise self.error(f"expects {t.rank} index operands for {t}")
        if self.value.type != t.element_type or self.results[0].type != t.element_type:
            raise self.error(f"value and result must be the element type {t.element_type}")
        if (self.kind in _FLOAT_ATOMIC_KINDS) != isinstance(t.element_type, FloatType):
            raise self.error(f"kind '{self.kind}' does not apply to {t.element_type}")


class ViewOp(Operation):
    """``%v = memref.view %buf[%byte_shift][%sizes] : memref<2048xi8, 3> to memref<?x64xf16, 3>``:
    the bytes of a 1-D ``i8`` buffer from ``byte_shift`` on, seen as an identity-layout memref of
    the result type (one ``sizes`` operand per dynamic dimension of the result), in the same memory
    space. The result aliases the buffer (:class:`~affine_ir.traits.ViewLike`); the op itself
    touches no memory (``Pure``, as in MLIR)."""

    name = "memref.view"
    traits = frozenset({Pure, ViewLike})

    def __init__(self, source: Value, byte_shift: Value, sizes: Sequence[Value], result_type: MemRefType,
                 location=None, name_hint=None, attributes=None):
        super().__init__([source, byte_shift, *sizes], [result_type], attributes, location=location,
                         result_names=[name_hint])

    @property
    def source(self) -> Value:
        return self.operands[0]

    @property
    def byte_shift(self) -> Value:
        return self.operands[1]

    @property
    def sizes(self) -> tuple[Value, ...]:
        return self.operands[2:]

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(operands[0], operands[1], operands[2:], result_types[0], location=location)

    def print_(self, p) -> None:
        p.write(f"memref.view {p.value(self.source)}[{p.value(self.byte_shift)}][{p.values(self.sizes)}]"
                f"{p.attr_dict(self)} : {self.source.type} to {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        src, shift = p.parse_indexed_operand()
        if len(shift) != 1:
            raise p.error(f"'memref.view' takes one byte shift in '[...]', got {len(shift)}", loc)
        p.expect("[")
        sizes = p.parse_operands("]")
        attrs, t, tloc = p.parse_attrs_and_type(src)
        p.expect("to")
        rloc = p.loc()
        rt = p.parse_type()
        if not isinstance(rt, MemRefType):
            raise p.error(f"'memref.view' gives a ranked memref, found {rt}", rloc)
        return cls(src, shift[0], sizes, rt, location=loc, attributes=attrs)

    def verify_(self) -> None:
        if len(self.operands) < 2:
            raise self.error("takes a source buffer and a byte shift")
        st, rt = self.source.type, self.result.type
        if not isinstance(st, MemRefType) or st.rank != 1 or st.element_type != i8:
            raise self.error(f"the source must be a 1-D memref of i8 (bytes) with identity layout, got {st}")
        if not isinstance(rt, MemRefType):
            raise self.error(f"the result must be a ranked memref, got {rt}")
        if st.memory_space != rt.memory_space:
            raise self.error(f"the source and the view must be in one memory space, got {st} and {rt}")
        if element_size_in_bytes(rt.element_type) is None:
            raise self.error(f"cannot view bytes as elements of {rt.element_type}")
        if self.byte_shift.type != index:
            raise self.error(f"the byte shift must be an index, got {self.byte_shift.type}")
        n_dyn = sum(d is None for d in rt.shape)
        if len(self.sizes) != n_dyn or any(v.type != index for v in self.sizes):
            raise self.error(f"needs one index size per dynamic dimension of {rt} ({n_dyn}), got "
                             f"{len(self.sizes)}")
        if any(d is not None and d < 0 for d in rt.shape):
            raise self.error(f"negative dimension in {rt}")
        self._verify_bounds()

    def _verify_bounds(self) -> None:
        """With a constant byte shift (and static sizes): the view lies inside the buffer."""
        shift = constant_int(self.byte_shift)
        if shift is None:
            return
        if shift < 0:
            raise self.error(f"negative byte shift {shift}")
        rt, size = self.result.type, self.source.type.shape[0]
        nbytes = rt.num_elements
        if nbytes is None or size is None:
            return
        nbytes *= element_size_in_bytes(rt.element_type) or 1
        if shift + nbytes > size:
            raise self.error(f"the view of {nbytes} bytes at byte {shift} runs past the end of the {size}-byte "
                             "buffer")


class CastOp(Operation):
    """``%u = memref.cast %m : memref<4096x4096xf16> to memref<*xf16>``: the same memory as an unranked
    memref (what ``nvgpu.tma.create.descriptor`` takes). Only ranked -> unranked casts of one element
    type and memory space (and casts to the same type) are supported for now. ``Pure`` and
    :class:`~affine_ir.traits.ViewLike`, as in MLIR."""

    name = "memref.cast"
    traits = frozenset({Pure, ViewLike})

    def __init__(self, source: Value, result_type, location=None, name_hint=None, attributes=None):
        super().__init__([source], [result_type], attributes, location=location, result_names=[name_hint])

    @property
    def source(self) -> Value:
        return self.operands[0]

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        (src,), (rt,) = operands, result_types
        return cls(src, rt, location=location)

    def print_(self, p) -> None:
        p.write(f"memref.cast {p.value(self.source)}{p.attr_dict(self)} : {self.source.type} to "
                f"{self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        src = p.parse_operand()
        attrs, st, _ = p.parse_attrs_and_type(src)
        p.expect("to")
        rloc = p.loc()
        rt = p.parse_type()
        problem = cls.cast_problem(st, rt)
        if problem is not None:
            raise p.error(f"'memref.cast' {problem}", rloc)
        return cls(src, rt, location=loc, attributes=attrs)

    @staticmethod
    def cast_problem(st, rt) -> str | None:
        """Why a cast from ``st`` to ``rt`` is refused, or None."""
        if st == rt and isinstance(st, MemRefType):
            return None
        if isinstance(st, MemRefType) and isinstance(rt, UnrankedMemRefType) and \
                st.element_type == rt.element_type and st.memory_space == rt.memory_space:
            return None
        return (f"supports only ranked -> unranked casts of one element type and memory space (or to the same type) "
                f"for now, got {st} to {rt}")

    def verify_(self) -> None:
        problem = self.cast_problem(self.source.type, self.result.type)
        if problem is not None:
            raise self.error(problem)
