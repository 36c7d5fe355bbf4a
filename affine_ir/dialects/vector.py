"""The ``vector`` dialect subset: broadcast a scalar, reduce a vector, extract and insert elements at
static positions (the lanes of matrix-unit fragments)."""

from __future__ import annotations

from ..core import Operation, Value
from ..errors import VerifyError
from ..traits import Pure
from ..types import VectorType, vector
from ._simple import ConversionOp

VECTOR_REDUCTIONS = ("add", "mul", "maximumf", "minimumf", "maxsi", "minsi", "and", "or", "xor")


class BroadcastOp(ConversionOp):
    """``%v = vector.broadcast %s : f32 to vector<8xf32>``."""

    name = "vector.broadcast"
    verb = "broadcast"

    def __init__(self, value: Value, vector_type: VectorType, location=None, name_hint=None):
        super().__init__(value, vector_type, location=location, name_hint=name_hint)

    @classmethod
    def convertible(cls, src, dst) -> bool:
        return isinstance(dst, VectorType) and dst.element_type == src


class ReductionOp(Operation):
    """``%r = vector.reduction <add>, %v : vector<8xf32> into f32``."""

    name = "vector.reduction"
    traits = frozenset({Pure})

    def __init__(self, kind: str, value: Value, location=None, name_hint=None):
        super().__init__([value], [value.type.element_type], {"kind": kind}, location=location,
                         result_names=[name_hint])

    @property
    def kind(self) -> str:
        return self.attributes["kind"]

    def print_(self, p) -> None:
        p.write(f"vector.reduction <{self.kind}>, {p.value(self.operands[0])}{p.attr_dict(self, ('kind',))} : "
                f"{self.operands[0].type} into {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        p.expect("<")
        kind = p.parse_keyword(VECTOR_REDUCTIONS)
        p.expect(">")
        p.expect(",")
        v = p.parse_operand()
        attrs, _, tloc = p.parse_attrs_and_type(v)
        p.expect("into")
        t = p.parse_type()
        if not isinstance(v.type, VectorType) or t != v.type.element_type:
            raise p.error(f"cannot reduce {v.type} into {t}", tloc)
        return p.add_attributes(cls(kind, v, location=loc), attrs)

    def verify_(self) -> None:
        t = self.operands[0].type
        if not isinstance(t, VectorType) or self.result.type != t.element_type:
            raise self.error("reduces a vector into its element type")
        if self.kind not in VECTOR_REDUCTIONS:
            raise self.error(f"unknown reduction kind {self.kind!r}")


def _parse_position(p) -> tuple[int, ...]:
    """``[1, 0]``: static positions (non-negative integers)."""
    p.expect("[")
    loc = p.loc()
    pos = tuple(p.parse_comma_list(lambda: p.parse_integer("a static position"), "]"))
    if any(k < 0 for k in pos):
        raise p.error("positions must be non-negative", loc)
    return pos


def _check_position(op: Operation, vt, pos: tuple, part) -> None:
    """``vt[pos]`` is in bounds and has the type ``part`` (a scalar or the vector of the rest)."""
    if not isinstance(vt, VectorType) or not 0 < len(pos) <= vt.rank:
        raise op.error(f"needs a vector and 1 to {getattr(vt, 'rank', 0)} positions")
    if any(k >= n for k, n in zip(pos, vt.shape)):
        raise op.error(f"position {list(pos)} is out of bounds for {vt}")
    want = vt.element_type if len(pos) == vt.rank else vector(vt.shape[len(pos):], vt.element_type)
    if part != want:
        raise op.error(f"position {list(pos)} of {vt} is a {want}, not {part}")


class ExtractOp(Operation):
    """``%e = vector.extract %v[1, 0] : f32 from vector<2x2xf32>`` (static positions; fewer positions
    than the rank give a vector)."""

    name = "vector.extract"
    traits = frozenset({Pure})

    def __init__(self, value: Value, position, result_type, location=None, name_hint=None):
        super().__init__([value], [result_type], {"static_position": tuple(position)}, location=location,
                         result_names=[name_hint])

    @property
    def position(self) -> tuple[int, ...]:
        return self.attributes["static_position"]

    def print_(self, p) -> None:
        p.write(f"vector.extract {p.value(self.operands[0])}[{', '.join(map(str, self.position))}]"
                f"{p.attr_dict(self, ('static_position',))} : {self.result.type} from {self.operands[0].type}")

    @classmethod
    def parse_(cls, p, loc):
        v = p.parse_operand()
        pos = _parse_position(p)
        attrs, rt, tloc = p.parse_attrs_and_type()
        p.expect("from")
        p.check_type(v, p.parse_type(), tloc)
        op = cls(v, pos, rt, location=loc)
        try:
            _check_position(op, v.type, pos, rt)
        except VerifyError as e:
            raise p.error(e.message, tloc) from None
        return p.add_attributes(op, attrs)

    def verify_(self) -> None:
        _check_position(self, self.operands[0].type, self.position, self.result.type)


class InsertOp(Operation):
    """``%r = vector.insert %x, %v [0, 1] : f32 into vector<2x2xf32>``: ``%v`` with the element (or the
    sub-vector) at the static position replaced by ``%x``."""

    name = "vector.insert"
    traits = frozenset({Pure})

    def __init__(self, value: Value, dest: Value, position, location=None, name_hint=None):
        super().__init__([value, dest], [dest.type], {"static_position": tuple(position)}, location=location,
                         result_names=[name_hint])

    @property
    def position(self) -> tuple[int, ...]:
        return self.attributes["static_position"]

    def print_(self, p) -> None:
        x, v = self.operands
        p.write(f"vector.insert {p.value(x)}, {p.value(v)} [{', '.join(map(str, self.position))}]"
                f"{p.attr_dict(self, ('static_position',))} : {x.type} into {v.type}")

    @classmethod
    def parse_(cls, p, loc):
        x = p.parse_operand()
        p.expect(",")
        v = p.parse_operand()
        pos = _parse_position(p)
        attrs, xt, tloc = p.parse_attrs_and_type(x)
        p.expect("into")
        p.check_type(v, p.parse_type(), tloc)
        op = cls(x, v, pos, location=loc)
        try:
            _check_position(op, v.type, pos, xt)
        except VerifyError as e:
            raise p.error(e.message, tloc) from None
        return p.add_attributes(op, attrs)

    def verify_(self) -> None:
        _check_position(self, self.operands[1].type, self.position, self.operands[0].type)


_SLICE_KEYS = ("offsets", "sizes", "strides")


def _int_list(attr) -> tuple[int, ...] | None:
    """The integers of an ``[0, 2]`` array attribute (None for anything else)."""
    elements = getattr(attr, "elements", attr)
    if not isinstance(elements, (tuple, list)):
        return None
    out = tuple(getattr(e, "value", e) for e in elements)
    return out if all(isinstance(k, int) and not isinstance(k, bool) for k in out) else None


class ExtractStridedSliceOp(Operation):
    """``%s = vector.extract_strided_slice %v offsets = [0, 0], sizes = [2, 2], strides = [1, 1] :
    vector<4x2xf16> to vector<2x2xf16>`` (upstream's spelling; the older ``{offsets = ..}`` dictionary
    parses too): the box ``offsets .. offsets + sizes`` of the leading
    dimensions (the rest whole); unit strides only, as in MLIR. Splits an ``ldmatrix.x4`` of two B
    fragments into the fragments."""

    name = "vector.extract_strided_slice"
    traits = frozenset({Pure})

    def __init__(self, value: Value, offsets, sizes, result_type=None, location=None, name_hint=None):
        offsets, sizes = tuple(offsets), tuple(sizes)
        vt = value.type
        if result_type is None:
            result_type = vector(sizes + tuple(vt.shape[len(sizes):]), vt.element_type)
        super().__init__([value], [result_type], {"offsets": offsets, "sizes": sizes, "strides": (1,) * len(sizes)},
                         location=location, result_names=[name_hint])

    @property
    def offsets(self) -> tuple[int, ...]:
        return tuple(self.attributes["offsets"])

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.attributes["sizes"])

    def print_(self, p) -> None:
        box = ", ".join(f"{k} = [{', '.join(map(str, self.attributes[k]))}]" for k in _SLICE_KEYS)
        p.write(f"vector.extract_strided_slice {p.value(self.operands[0])} {box}{p.attr_dict(self, _SLICE_KEYS)} : "
                f"{self.operands[0].type} to {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        """Upstream's ``offsets = [..], sizes = [..], strides = [..]`` or the older attribute dictionary."""
        v = p.parse_operand()
        aloc = p.loc()
        box: dict = {}
        for k in _SLICE_KEYS:
            if p.accept(k):
                p.expect("=")
                box[k] = _int_list(p.parse_attribute())
                if k != _SLICE_KEYS[-1]:
                    p.expect(",")
        attrs = p.parse_optional_attr_dict()
        for k in _SLICE_KEYS:
            if k not in box:
                box[k] = _int_list(attrs.pop(k, None))
        if any(x is None for x in box.values()):
            raise p.error("'vector.extract_strided_slice' needs 'offsets', 'sizes' and 'strides' integer arrays", aloc)
        tloc = p.loc()
        p.check_type(v, p.parse_colon_type(), tloc)
        p.expect("to")
        rt = p.parse_type()
        op = cls(v, box["offsets"], box["sizes"], rt, location=loc)
        op.attributes["strides"] = box["strides"]
        try:
            op.verify_()
        except VerifyError as e:
            raise p.error(e.message, tloc) from None
        return p.add_attributes(op, attrs)

    def verify_(self) -> None:
        vt, rt = self.operands[0].type, self.result.type
        offsets, sizes, strides = (tuple(self.attributes[k]) for k in _SLICE_KEYS)
        if not isinstance(vt, VectorType) or not 0 < len(offsets) <= vt.rank:
            raise self.error(f"needs a vector and 1 to {getattr(vt, 'rank', 0)} offsets")
        if not len(offsets) == len(sizes) == len(strides):
            raise self.error("offsets, sizes and strides must have the same length")
        if any(s != 1 for s in strides):
            raise self.error(f"only unit strides are supported, got {list(strides)}")
        for o, s, n in zip(offsets, sizes, vt.shape):
            if o < 0 or s < 1 or o + s > n:
                raise self.error(f"the slice at {list(offsets)} of sizes {list(sizes)} is out of bounds for {vt}")
        want = vector(sizes + tuple(vt.shape[len(sizes):]), vt.element_type)
        if rt != want:
            raise self.error(f"the slice of sizes {list(sizes)} of {vt} is a {want}, not {rt}")
