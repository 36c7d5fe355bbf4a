"""Exact scalar semantics: rounding to each float type, integer wrapping, and the helpers
that the generated code calls for operations that are not a single Python operator.

Representation of values while interpreting (see ``affine_ir.interpreter`` for the rules):

- a float of any type is a Python ``float`` whose value is exactly representable in the
  type (f16/bf16/f32 values are widened exactly into the f64 Python float);
- an integer of width ``w`` (``index`` is width 64) is a Python ``int`` holding the
  *signed* two's-complement reading of its bits, in ``[-2**(w-1), 2**(w-1))``; ``i1``
  true is therefore ``-1``;
- vectors are numpy arrays (see :mod:`.vectors`).
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..floats import (  # noqa: F401  (re-exported for the translator)
    EIGHT_BIT,
    FORMATS,
    PATTERN_BITS,
    ROUNDERS,
    bfloat16_dtype,
    float8_dtype,
    float_bits,
    float_from_bits,
    numpy_float_dtype,
    round_bf16,
    round_f16,
    round_f32,
    round_f64,
    round_ratio,
)
from ..types import FloatType, IndexType, IntegerType, Type

INF = math.inf
NAN = math.nan
round_f8E4M3FN = ROUNDERS["f8E4M3FN"]  # the names the translator writes: round_<type>
round_f8E5M2 = ROUNDERS["f8E5M2"]


class Trap(Exception):
    """A runtime failure inside generated code; the driver adds the op and its location."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class OutOfBounds(Trap):
    """An access outside its memref (``extent``: the shape of a vector access); the driver
    formats it with the op and the memref type."""

    def __init__(self, shape: tuple, index: tuple, extent: tuple | None = None):
        super().__init__(f"index {tuple(index)} is out of bounds")
        self.shape = tuple(shape)
        self.index = tuple(index)
        self.extent = extent


class Unsupported(Trap):
    """An op the interpreter has no semantics for; the message is used as it is."""


# ----------------------------------------------------------------------------------------
# Type information
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalarInfo:
    """What the interpreter needs to know about a scalar type."""

    name: str  # "f32", "i32", "index", ...
    is_float: bool
    width: int  # bits (index: 64)
    np_dtype: object  # numpy dtype of arrays holding it (None if no numpy equivalent)
    mv_format: str  # memoryview format of flat storage ('' when unsupported)

    @property
    def half(self) -> int:
        return 1 << (self.width - 1)

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1

    @property
    def min_signed(self) -> int:
        return -(1 << (self.width - 1))

    @property
    def max_signed(self) -> int:
        return (1 << (self.width - 1)) - 1


_INT_FORMATS = {1: ("?", np.bool_), 8: ("b", np.int8), 16: ("h", np.int16), 32: ("i", np.int32), 64: ("q", np.int64)}
_FLOATS = {
    "f16": ScalarInfo("f16", True, 16, np.dtype(np.float16), "H"),
    "f32": ScalarInfo("f32", True, 32, np.dtype(np.float32), "f"),
    "f64": ScalarInfo("f64", True, 64, np.dtype(np.float64), "d"),
}


@functools.lru_cache(maxsize=1)
def _bf16_info() -> ScalarInfo:
    return ScalarInfo("bf16", True, 16, bfloat16_dtype(), "H")  # imports ml_dtypes: only when bf16 is used


@functools.lru_cache(maxsize=2)
def _f8_info(name: str) -> ScalarInfo:
    return ScalarInfo(name, True, 8, float8_dtype(name), "B")  # imports ml_dtypes: only when used


def scalar_info(t: Type) -> ScalarInfo:
    """The :class:`ScalarInfo` of a scalar IR type; TypeError for other types."""
    if isinstance(t, FloatType):
        if t.name in EIGHT_BIT:
            return _f8_info(t.name)
        return _bf16_info() if t.name == "bf16" else _FLOATS[t.name]
    if isinstance(t, IndexType):
        return ScalarInfo("index", False, 64, np.dtype(np.int64), "q")
    if isinstance(t, IntegerType):
        fmt, dt = _INT_FORMATS.get(t.width, ("", None))
        return ScalarInfo(f"i{t.width}", False, t.width, None if dt is None else np.dtype(dt), fmt)
    raise TypeError(f"not a scalar type: {t}")


# ----------------------------------------------------------------------------------------
# Float rounding (round to nearest, ties to even)
# ----------------------------------------------------------------------------------------

def new_scratch32():
    """A one-element float32 buffer: ``s[0] = x; y = s[0]`` rounds ``x`` to f32 (the C cast
    from double to float rounds to nearest even and overflows to inf)."""
    return memoryview(bytearray(4)).cast("f")


def int_to_float(a: int, fmt: str) -> float:
    """The integer ``a`` correctly rounded to ``fmt`` (one rounding, also beyond 2**53)."""
    if -(1 << 53) <= a <= (1 << 53):
        return ROUNDERS[fmt](float(a))
    return round_ratio(a, 1, fmt)


# ----------------------------------------------------------------------------------------
# Integers
# ----------------------------------------------------------------------------------------


def wrap(x: int, width: int) -> int:
    """``x`` wrapped to ``width`` bits, read as signed."""
    h = 1 << (width - 1)
    return ((x + h) & ((h << 1) - 1)) - h


def divsi(a: int, b: int, w: int) -> int:
    if b == 0:
        raise Trap("integer division by zero")
    if b == -1 and a == -(1 << (w - 1)):
        raise Trap(f"signed division overflow ({a} / -1 does not fit in i{w})")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def divui(a: int, b: int, w: int) -> int:
    m = (1 << w) - 1
    if b & m == 0:
        raise Trap("integer division by zero")
    return wrap((a & m) // (b & m), w)


def remsi(a: int, b: int, w: int) -> int:
    if b == 0:
        raise Trap("integer remainder by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def remui(a: int, b: int, w: int) -> int:
    m = (1 << w) - 1
    if b & m == 0:
        raise Trap("integer remainder by zero")
    return wrap((a & m) % (b & m), w)


def floordivsi(a: int, b: int, w: int) -> int:
    if b == 0:
        raise Trap("integer division by zero")
    if b == -1 and a == -(1 << (w - 1)):
        raise Trap(f"signed division overflow ({a} / -1 does not fit in i{w})")
    return a // b


def ceildivsi(a: int, b: int, w: int) -> int:
    if b == 0:
        raise Trap("integer division by zero")
    if b == -1 and a == -(1 << (w - 1)):
        raise Trap(f"signed division overflow ({a} / -1 does not fit in i{w})")
    return -((-a) // b)


def bad_shift(b: int, w: int):
    raise Trap(f"shift amount {b & ((1 << w) - 1)} is not less than the bit width {w} (poison)")


# ----------------------------------------------------------------------------------------
# Floats
# ----------------------------------------------------------------------------------------


def fdiv0(a: float, b: float) -> float:
    """``a / b`` for ``b == ±0`` as IEEE 754 defines it."""
    if a != a or a == 0.0:
        return NAN
    return math.copysign(INF, a) * math.copysign(1.0, b)


def remf(a: float, b: float) -> float:
    """C ``fmod``: the exact remainder with the dividend's sign."""
    if a != a or b != b or b == 0.0 or a in (INF, -INF):
        return NAN
    if b in (INF, -INF):
        return a
    return math.fmod(a, b)


def maximumf(a: float, b: float) -> float:
    if a != a:
        return a
    if b != b:
        return b
    if a > b:
        return a
    if b > a:
        return b
    return b if a == 0.0 and math.copysign(1.0, a) < 0 else a


def minimumf(a: float, b: float) -> float:
    if a != a:
        return a
    if b != b:
        return b
    if a < b:
        return a
    if b < a:
        return b
    return b if a == 0.0 and math.copysign(1.0, a) > 0 else a


def fptosi(x: float, w: int) -> int:
    if x != x or x in (INF, -INF):
        raise Trap(f"cannot convert {x} to i{w}")
    t = math.trunc(x)
    if not -(1 << (w - 1)) <= t < (1 << (w - 1)):
        raise Trap(f"{x!r} is out of the range of signed i{w}")
    return t


def fptoui(x: float, w: int) -> int:
    if x != x or x in (INF, -INF):
        raise Trap(f"cannot convert {x} to i{w}")
    t = math.trunc(x)
    if not 0 <= t < (1 << w):
        raise Trap(f"{x!r} is out of the range of unsigned i{w}")
    return wrap(t, w)


def bitcast(x, src: str, dst: str, dst_width: int):
    """``arith.bitcast`` between same-width scalar types (names as in :class:`ScalarInfo`)."""
    bits = float_bits(x, src) if src in FORMATS else x & ((1 << dst_width) - 1)
    return float_from_bits(bits, dst) if dst in FORMATS else wrap(bits, dst_width)


# ----------------------------------------------------------------------------------------
# math dialect: computed in float64, the caller rounds once to the result type
# ----------------------------------------------------------------------------------------


def m_exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def m_exp2(x: float) -> float:
    try:
        return math.pow(2.0, x)
    except OverflowError:
        return INF


def _log(fn, x: float) -> float:
    if x > 0.0:
        return fn(x)
    if x == 0.0:
        return -INF
    return x if x != x else NAN


def m_log(x: float) -> float:
    return _log(math.log, x)


def m_log2(x: float) -> float:
    return _log(math.log2, x)


def m_sqrt(x: float) -> float:
    if x >= 0.0:
        return math.sqrt(x)
    return x if x != x else NAN


def m_rsqrt(x: float) -> float:
    if x == 0.0:
        return math.copysign(INF, x)
    return 1.0 / m_sqrt(x)


def m_sin(x: float) -> float:
    return NAN if x in (INF, -INF) else math.sin(x)


def m_cos(x: float) -> float:
    return NAN if x in (INF, -INF) else math.cos(x)


def _round_integral(fn, x: float) -> float:
    if x != x or x in (INF, -INF):
        return x
    r = float(fn(x))
    return r if r != 0.0 else math.copysign(0.0, x)


def m_floor(x: float) -> float:
    return _round_integral(math.floor, x)


def m_ceil(x: float) -> float:
    return _round_integral(math.ceil, x)


def m_powf(a: float, b: float) -> float:
    """C99 ``pow`` in float64."""
    odd_int = b == b and b not in (INF, -INF) and b == math.floor(b) and math.fmod(b, 2.0) != 0.0
    try:
        return math.pow(a, b)
    except OverflowError:
        return -INF if a < 0 and odd_int else INF
    except ValueError:
        if a == 0.0:  # 0 ** negative
            return math.copysign(INF, a) if odd_int else INF
        return NAN


def m_fma(a: float, b: float, c: float, fmt: str) -> float:
    """``a * b + c`` with one rounding to ``fmt`` (exact rational arithmetic)."""
    if not all(map(math.isfinite, (a, b, c))):
        return a * b + c  # inf/nan rules; nothing to round
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c  # the IEEE sign of an exact zero (finite inputs: a*b is then an exact product or 0)
    return round_ratio(exact.numerator, exact.denominator, fmt)


MATH_UNARY = {
    "exp": "m_exp", "exp2": "m_exp2", "log": "m_log", "log2": "m_log2", "tanh": "math.tanh",
    "sqrt": "m_sqrt", "rsqrt": "m_rsqrt", "erf": "math.erf", "absf": "math.fabs", "sin": "m_sin",
    "cos": "m_cos", "floor": "m_floor", "ceil": "m_ceil",
}


# ----------------------------------------------------------------------------------------
# Tables for f16/bf16/8-bit float storage (kept as bit patterns in memory)
# ----------------------------------------------------------------------------------------

_TABLES: dict[str, list] = {}


def bits_table(fmt: str) -> list:
    """``table[bits]`` is the Python float of the 16-bit (8-bit) pattern ``bits`` of ``fmt``."""
    t = _TABLES.get(fmt)
    if t is None:
        dt = numpy_float_dtype(fmt)
        width = PATTERN_BITS[fmt]
        with np.errstate(all="ignore"):
            t = _TABLES[fmt] = np.arange(1 << width, dtype=np.uint32).astype(f"u{width // 8}").view(dt).astype(
                np.float64).tolist()
    return t


@functools.lru_cache(maxsize=2)
def f8_bits(fmt: str):
    """The function from an (exactly representable) ``fmt`` value to its 8-bit pattern: NaN to the
    all-ones pattern without sign (``f8E4M3FN``'s only NaN), -0.0 to the sign bit alone."""
    table = bits_table(fmt)
    patterns = {x: b for b, x in enumerate(table) if x == x and x != 0.0}
    nan = 0x7F
    copysign = math.copysign

    def to_bits(x: float) -> int:
        if x != x:
            return nan
        if x == 0.0:
            return 0x80 if copysign(1.0, x) < 0 else 0
        return patterns[x]

    return to_bits


def f16_bits(x: float) -> int:
    return struct.unpack("<H", struct.pack("<e", x))[0]


def bf16_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16
