"""Decimal text of integers of any size.

Python refuses ``str(int)`` and ``int(str)`` beyond 4300 decimal digits by default (a guard
against quadratic conversions, ``sys.set_int_max_str_digits``), while MLIR's integer types
reach 2**24 - 1 bits (about 5 million digits). These helpers convert piecewise instead of
changing that process-wide limit.
"""

from __future__ import annotations

_SAFE_DIGITS = 600  # below the smallest limit Python accepts (640), so a user's setting holds too


def int_to_decimal(x: int) -> str:
    """``str(x)`` for an int of any size."""
    if x < 0:
        return "-" + int_to_decimal(-x)
    if x.bit_length() < _SAFE_DIGITS * 3:  # 3 bits per digit is less than log2(10)
        return str(x)
    k = x.bit_length() * 3 // 20  # about half of its digits (log10(2) ~ 0.3)
    high, low = divmod(x, 10**k)
    return int_to_decimal(high) + int_to_decimal(low).rjust(k, "0")


def decimal_to_int(text: str) -> int:
    """``int(text)`` for a decimal literal (digits, optionally signed) of any length."""
    digits = text.lstrip("+-")
    if len(digits) <= _SAFE_DIGITS:
        return int(text)
    sign = -1 if text.startswith("-") else 1
    k = len(digits) // 2
    return sign * (decimal_to_int(digits[:-k]) * 10**k + decimal_to_int(digits[-k:]))


def describe_int(x: int) -> str:
    """``x`` for a message: its digits, or its size in bits beyond 128 bits."""
    if x.bit_length() <= 128:
        return str(x)
    return f"{'-' if x < 0 else ''}<a {x.bit_length()}-bit integer>"
