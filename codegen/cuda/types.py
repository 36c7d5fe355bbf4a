"""IR types as C types, and constants as C literals.

Register (SSA value) types: ``index`` is ``long long``, ``i1`` ``bool``, i8/i16/i32/i64 the signed
C types (each arith op reads the bits as signed or unsigned as it defines), f32 ``float``, f64
``double``, and **f16/bf16/f8E4M3FN/f8E5M2 values are held in a ``float``** that is exactly a value
of the narrow type (every op rounds its f32 result back, as the interpreter does). Storage (memref
element) types: the same, except f16 ``__half``, bf16 ``__nv_bfloat16`` (``cuda_fp16.h``/``cuda_bf16.h``)
and the 8-bit floats their bit patterns, ``__nv_fp8_storage_t`` (``cuda_fp8.h``).
"""

from __future__ import annotations

import math

import numpy as np

from affine_ir.floats import EIGHT_BIT, round_f32  # noqa: F401  (EIGHT_BIT: the printers import it from here)
from affine_ir.types import FloatType, IndexType, IntegerType, MemRefType, Type

INT_TYPES = {1: "bool", 8: "signed char", 16: "short", 32: "int", 64: "long long"}
UINT_TYPES = {1: "bool", 8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}
FLOAT_REG = {"f16": "float", "bf16": "float", "f32": "float", "f64": "double", "f8E4M3FN": "float",
             "f8E5M2": "float"}
FLOAT_STORAGE = {"f16": "__half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double",
                 "f8E4M3FN": "__nv_fp8_storage_t", "f8E5M2": "__nv_fp8_storage_t"}
# The 8-bit float formats (EIGHT_BIT): held in a ``float`` like f16/bf16, stored as their bit patterns
# (``__nv_fp8_storage_t``, cuda_fp8.h), converted by the ``air_from_<t>``/``air_to_<t>`` helpers.
SIXTEEN_BIT = ("f16", "bf16")


class UnsupportedType(TypeError):
    """A type the CUDA backend has no C representation for (the emitter names the op)."""


def int_width(t: Type) -> int:
    """Bit width of an integer or index type (index: 64)."""
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        if t.width not in INT_TYPES:
            raise UnsupportedType(f"type {t} has no CUDA representation (integers are i1, i8, i16, i32, i64)")
        return t.width
    raise UnsupportedType(f"type {t} is not an integer type")


def float_name(t: Type) -> str | None:
    """``"f16"/"bf16"/"f32"/"f64"`` for float types, else None."""
    return t.name if isinstance(t, FloatType) else None


def reg_type(t: Type) -> str:
    """The C type of an SSA value of IR type ``t``."""
    if isinstance(t, FloatType):
        return FLOAT_REG[t.name]
    if isinstance(t, (IndexType, IntegerType)):
        return INT_TYPES[int_width(t)]
    raise UnsupportedType(f"type {t} has no CUDA representation")


def unsigned_type(t: Type) -> str:
    """The unsigned C type of the same width as integer type ``t``."""
    return UINT_TYPES[int_width(t)]


def storage_type(t: Type) -> str:
    """The C type of one memref element of type ``t``."""
    if isinstance(t, FloatType):
        return FLOAT_STORAGE[t.name]
    return reg_type(t)


def storage_bytes(t: Type) -> int:
    """Bytes of one stored element."""
    if isinstance(t, FloatType):
        return t.width // 8
    w = int_width(t)
    return 1 if w == 1 else w // 8


def memref_bytes(t: MemRefType) -> int:
    """Bytes of a statically shaped memref."""
    return storage_bytes(t.element_type) * math.prod(t.shape)


# -- literals ---------------------------------------------------------------------------------


def int_literal(value: int, t: Type) -> str:
    """A C literal of exactly the C type of ``t`` (so overloaded helpers resolve): ``3``, ``3LL``,
    ``(short)-3``, ``true``; values are wrapped to the width of ``t`` first."""
    w = int_width(t)
    if w == 1:
        return "true" if value & 1 else "false"
    h = 1 << (w - 1)
    v = ((value + h) & ((h << 1) - 1)) - h
    if w == 64:
        if v == -(1 << 63):
            return "(-9223372036854775807LL - 1)"
        return f"{v}LL" if not isinstance(t, IndexType) or not -(1 << 31) < v < (1 << 31) else str(v)
    if w == 32:
        return "(-2147483647 - 1)" if v == -(1 << 31) else str(v)
    return f"({INT_TYPES[w]}){v}"


def index_literal(value: int) -> str:
    """An index constant in an expression (``long long`` arithmetic): ``3``, ``4294967296LL``."""
    if -(1 << 31) < value < (1 << 31):
        return str(value)
    if value == -(1 << 63):
        return "(-9223372036854775807LL - 1)"
    return f"{value}LL"


def float_literal(x: float, name: str) -> str:
    """A C expression of the register type of float type ``name`` with the exact value ``x``
    (infinities and NaN through bit patterns; NVRTC has no ``INFINITY``)."""
    double = name == "f64"
    if x != x:
        return "__longlong_as_double(0x7ff8000000000000LL)" if double else "__int_as_float(0x7fc00000)"
    if math.isinf(x):
        inf = "__longlong_as_double(0x7ff0000000000000LL)" if double else "__int_as_float(0x7f800000)"
        return f"-{inf}" if x < 0 else inf
    if double:
        text = repr(float(x))
        return text if float(text) == x else float.hex(x)
    text = str(np.float32(x))
    if "e" not in text and "." not in text:
        text += ".0"
    if round_f32(float(text)) != x or math.copysign(1.0, float(text)) != math.copysign(1.0, x):
        text = float.hex(x)
    return text + "f"
