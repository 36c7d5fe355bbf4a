"""Op attribute values that are not affine maps, sets or types.

Attributes are immutable. Affine maps and integer sets (``affine_ir.affine_expr``)
and types (``affine_ir.types``) are attributes too and are stored as themselves.
Plain Python ``str`` is a string attribute and ``bool`` a boolean one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import floats
from .bigint import int_to_decimal
from .types import FloatType, Type, i1, index


@dataclass(frozen=True)
class IntegerAttr:
    """``64 : i64``, ``0 : index``: an integer with its type."""

    value: int
    type: Type = index

    def __str__(self) -> str:
        return f"{int_to_decimal(self.value)} : {self.type}"


@dataclass(frozen=True)
class FloatAttr:
    """``1.000000e+00 : f32``; the value is kept as a Python float already rounded to the type."""

    value: float
    type: Type

    def __str__(self) -> str:
        return f"{format_float(self.value, self.type)} : {self.type}"


@dataclass(frozen=True)
class UnitAttr:
    """A present-or-absent flag; printed as its bare name in an attribute dictionary."""

    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True)
class SymbolRefAttr:
    """``@callee``: a reference to a symbol (a function) by name."""

    name: str

    def __str__(self) -> str:
        return f"@{self.name}"


@dataclass(frozen=True)
class ArrayAttr:
    """``[1, 2, "x"]``: a tuple of attributes."""

    elements: tuple

    def __str__(self) -> str:
        return "[" + ", ".join(attr_str(e) for e in self.elements) + "]"


@dataclass(frozen=True)
class DenseAttr:
    """``dense<0.0> : vector<8xf32>`` (splat) or ``dense<[1, 2]> : vector<2xi32>``."""

    values: tuple  # one element for a splat
    type: Type

    @property
    def is_splat(self) -> bool:
        return len(self.values) == 1

    def __str__(self) -> str:
        el = self.type.element_type
        items = [format_scalar(v, el) for v in self.values]
        body = items[0] if self.is_splat else "[" + ", ".join(items) + "]"
        return f"dense<{body}> : {self.type}"


@dataclass(frozen=True)
class OpaqueAttr:
    """A dialect attribute we do not model (``#foo.bar<...>``), kept verbatim for round trips."""

    text: str

    def __str__(self) -> str:
        return self.text


def format_float(value: float, type_: Type) -> str:
    """MLIR's float literal: ``%e`` form when that round-trips, else more digits; hex for inf/nan."""
    if math.isnan(value) or math.isinf(value):
        return float_bits_hex(value, type_)
    short = f"{value:.6e}"
    if round_float(float(short), type_) == value:
        return short
    return f"{value:.17e}" if round_float(float(f"{value:.9e}"), type_) != value else f"{value:.9e}"


def float_bits_hex(value: float, type_: Type) -> str:
    """The IEEE bit pattern of ``value`` in ``type_`` as MLIR's hex float literal."""
    name = type_.name if isinstance(type_, FloatType) else "f64"
    digits = {"f64": 16, "f32": 8}.get(name, 4)
    return f"0x{floats.float_bits(value, name):0{digits}X}"


def float_from_bits(bits: int, type_: Type) -> float:
    """Inverse of :func:`float_bits_hex` (bits beyond the type's width are ignored)."""
    width = {"f64": 64, "f32": 32}.get(type_.name, 16)
    return floats.float_from_bits(bits & ((1 << width) - 1), type_.name)


def round_float(value: float, type_: Type) -> float:
    """``value`` as the float type stores it (one rounding to nearest even; f64 unchanged)."""
    name = getattr(type_, "name", "f64")
    return floats.ROUNDERS.get(name, floats.round_f64)(value)


def format_scalar(v, type_: Type) -> str:
    if isinstance(type_, FloatType):
        return format_float(float(v), type_)
    if type_ == i1:
        return "true" if v else "false"
    return int_to_decimal(int(v))


def attr_str(a) -> str:
    """MLIR text of an attribute value (maps and sets in full, without aliases)."""
    from .affine_map import AffineMap, IntegerSet

    if isinstance(a, bool):
        return "true" if a else "false"
    if isinstance(a, str):
        return quote_string(a)
    if isinstance(a, AffineMap):
        return f"affine_map<{a}>"
    if isinstance(a, IntegerSet):
        return f"affine_set<{a}>"
    if isinstance(a, int):
        return f"{a} : i64"
    return str(a)


def quote_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif not ch.isprintable():
            out.append("".join(f"\\{b:02X}" for b in ch.encode()))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
