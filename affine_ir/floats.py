"""IEEE float formats as Python floats: exact rounding (to nearest, ties to even) into
f16/bf16/f32/f64, the 8-bit f8E4M3FN/f8E5M2, and bit patterns. Pure Python (math/struct), shared by the attributes
(constants as the type stores them) and the interpreter (every float op rounded once).

numpy's dtypes of the formats (:func:`numpy_float_dtype`, :func:`bfloat16_dtype`) come from
here too: ``ml_dtypes`` (which takes about half a second to import) is imported only when a
bf16 or 8-bit dtype is first asked for, so programs without them never load it.

The 8-bit formats round as MLIR's APFloat does: to nearest (ties to even) as if the exponent were
unbounded, then a result beyond the largest finite value overflows, to infinity in ``f8E5M2`` and to
NaN in ``f8E4M3FN`` (which has no infinities): 464 rounds to 448 there, 480 is NaN."""

from __future__ import annotations

import functools
import math
import struct
import sys

INF = math.inf

# (precision in bits including the implicit one, minimum normal exponent, largest finite)
FORMATS = {
    "f16": (11, -14, 65504.0),
    "bf16": (8, -126, float.fromhex("0x1.fep127")),
    "f32": (24, -126, float.fromhex("0x1.fffffep127")),
    "f64": (53, -1022, float.fromhex("0x1.fffffffffffffp1023")),
    "f8E4M3FN": (4, -6, 448.0),
    "f8E5M2": (3, -14, 57344.0),
}
#: The 8-bit formats (MLIR's names).
EIGHT_BIT = ("f8E4M3FN", "f8E5M2")
#: The formats without infinities: what overflows is NaN.
NO_INFINITY = frozenset({"f8E4M3FN"})
#: The formats narrower than f32 that memory holds as bit patterns (of this many bits).
PATTERN_BITS = {"f16": 16, "bf16": 16, "f8E4M3FN": 8, "f8E5M2": 8}


def _make_rounder(p: int, emin: int, maxf: float, overflow: float = INF):
    frexp, ldexp, copysign = math.frexp, math.ldexp, math.copysign

    def rnd(x: float) -> float:
        if x != x or x == 0.0 or x == INF or x == -INF:
            return x
        e = frexp(x)[1] - 1  # 2**e <= |x| < 2**(e+1)
        q = (e if e >= emin else emin) - (p - 1)  # exponent of one unit in the last place
        v = ldexp(round(ldexp(x, -q)), q)  # scaling by a power of two is exact; round() ties to even
        if v > maxf or v < -maxf:
            return copysign(overflow, x)
        return v if v != 0.0 else copysign(0.0, x)

    return rnd


round_f16 = _make_rounder(*FORMATS["f16"])
round_bf16 = _make_rounder(*FORMATS["bf16"])
round_f32 = _make_rounder(*FORMATS["f32"])
round_f8e4m3fn = _make_rounder(*FORMATS["f8E4M3FN"], overflow=math.nan)
round_f8e5m2 = _make_rounder(*FORMATS["f8E5M2"])


def round_f64(x: float) -> float:
    return x


ROUNDERS = {"f16": round_f16, "bf16": round_bf16, "f32": round_f32, "f64": round_f64,
            "f8E4M3FN": round_f8e4m3fn, "f8E5M2": round_f8e5m2}


def round_ratio(n: int, d: int, fmt: str) -> float:
    """The rational ``n / d`` (``d > 0``) correctly rounded to the float format ``fmt``."""
    p, emin, maxf = FORMATS[fmt]
    if n == 0:
        return 0.0
    neg = n < 0
    n = -n if neg else n
    e = n.bit_length() - d.bit_length()
    if (n < (d << e)) if e >= 0 else ((n << -e) < d):
        e -= 1
    q = (e if e >= emin else emin) - (p - 1)
    num, den = (n, d << q) if q >= 0 else (n << -q, d)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    try:
        v = math.ldexp(float(m), q)
    except OverflowError:
        v = INF
    if v > maxf:
        v = math.nan if fmt in NO_INFINITY else INF
    return -v if neg else v


_PACK = {"f16": ("<e", "<H", 0), "bf16": ("<f", "<I", 16), "f32": ("<f", "<I", 0), "f64": ("<d", "<Q", 0)}


def float_bits(x: float, fmt: str) -> int:
    """The bit pattern (unsigned) of the ``fmt`` value ``x`` (exactly representable)."""
    if fmt not in _PACK:  # the 8-bit formats
        import numpy as np

        return int(np.array([x], np.float64).astype(numpy_float_dtype(fmt)).view(np.uint8)[0])
    ff, fi, shift = _PACK[fmt]
    return struct.unpack(fi, struct.pack(ff, x))[0] >> shift


def float_from_bits(bits: int, fmt: str) -> float:
    if fmt not in _PACK:  # the 8-bit formats
        import numpy as np

        return float(np.array([bits], np.uint8).view(numpy_float_dtype(fmt))[0])
    ff, fi, shift = _PACK[fmt]
    return struct.unpack(ff, struct.pack(fi, bits << shift))[0]


@functools.lru_cache(maxsize=1)
def bfloat16_dtype():
    """numpy's dtype for bf16 (``ml_dtypes.bfloat16``); imports ml_dtypes on the first call."""
    import ml_dtypes
    import numpy as np

    return np.dtype(ml_dtypes.bfloat16)


@functools.lru_cache(maxsize=2)
def float8_dtype(fmt: str):
    """numpy's dtype for ``f8E4M3FN``/``f8E5M2`` (``ml_dtypes.float8_e4m3fn``/``float8_e5m2``)."""
    import ml_dtypes
    import numpy as np

    return np.dtype({"f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}[fmt])


def numpy_float_dtype(fmt: str):
    """numpy's dtype of arrays of the float format ``fmt`` ("f16", "bf16", "f32", "f64", "f8E4M3FN",
    "f8E5M2"); KeyError for other names. Only "bf16" and the 8-bit formats import ml_dtypes."""
    if fmt == "bf16":
        return bfloat16_dtype()
    if fmt in EIGHT_BIT:
        return float8_dtype(fmt)
    import numpy as np

    return np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[fmt])


def is_bfloat16_scalar(value: object) -> bool:
    """True when ``value`` is a numpy bf16 scalar. Never imports ml_dtypes: without it loaded no
    such scalar can exist."""
    if "ml_dtypes" not in sys.modules:
        return False
    import numpy as np

    return isinstance(value, np.generic) and value.dtype == bfloat16_dtype()
