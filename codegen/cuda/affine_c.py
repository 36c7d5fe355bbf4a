"""Affine expressions as C (``long long``) expressions, with floor semantics.

``floordiv``/``mod`` round toward negative infinity (``mod`` is never negative) and ``ceildiv``
toward positive infinity, for negative operands too, exactly as ``AffineExpr.evaluate``: they
call the ``air_floordiv``/``air_ceildiv``/``air_mod`` helpers (divisors are positive constants),
or their 32-bit forms ``air_floordiv32``/... (an ``int`` dividend, a ``long long`` result) where
the dividend's range is known to fit in an ``int`` (see :class:`DimNames`), ``air_ufloordiv32``/...
(plain unsigned ``/`` and ``%``: a shift and a mask for powers of two) where it is also never
negative: 32-bit division is cheaper on the GPU, and NVRTC 13.0 was seen to crash (a segmentation
fault in NVVM, about one compile in three) on a kernel with a few hundred 64-bit divisions by
constants.
Index arithmetic is plain ``long long`` arithmetic (valid programs do not overflow it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from affine_ir.affine_expr import AffineExpr

from .types import index_literal

Need = Callable[[str], None]


def terms(e: AffineExpr, names: Sequence[str], need: Need) -> tuple[list[tuple[int, str]], int]:
    """``e`` (over dims named ``names``) as ``[(coefficient, atom text)]`` and its constant term."""
    out: list[tuple[int, str]] = []
    for i, n in enumerate(names):
        c = e.coefficient_of_dim(i)
        if c:
            out.append((c, n))
    for t in e.div_terms():
        inner = c_expr(t.expr, names, need)
        fits = _int32_range(t.expr, names) if t.divisor <= INT32_MAX else None
        if fits is not None:
            helper = ("u" if fits[0] >= 0 else "") + t.kind + "32"  # a dividend never negative: unsigned division
            need(helper)
            out.append((t.coeff, f"air_{helper}({inner}, {t.divisor})"))
        else:
            need(t.kind)
            out.append((t.coeff, f"air_{t.kind}({inner}, {t.divisor})"))
    return out, e.constant_term


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class DimNames(list):
    """The C names of an expression's dims (a list of str) with the range of each dim's value
    (``ranges[i]``: inclusive ``(lo, hi)``, None ends unknown), so that :func:`terms` can divide
    in 32 bits where the dividend provably fits."""

    def __init__(self, names: Sequence[str], ranges: Sequence):
        super().__init__(names)
        self.ranges = list(ranges)


def _int32_range(e: AffineExpr, names: Sequence[str]) -> tuple[int, int] | None:
    """The range ``(lo, hi)`` of ``e`` when every value fits in a C ``int`` (known only for
    :class:`DimNames`), else None."""
    ranges = getattr(names, "ranges", None)
    if ranges is None:
        return None
    lo, hi = e.bounds(ranges)
    ok = lo is not None and hi is not None and INT32_MIN <= lo and hi <= INT32_MAX
    return (lo, hi) if ok else None


def c_sum(items: list[tuple[int, str]], const: int = 0) -> str:
    """``c0 * a0 + c1 * a1 + ... + const`` in readable C (``i * 64 + j - 1``, ``N - i``, ``-i + 7``):
    the terms in order, those with a positive coefficient first."""
    out: list[str] = []
    for c, atom in sorted(items, key=lambda t: t[0] < 0):
        mag = abs(c)
        text = atom if mag == 1 else f"{atom} * {mag}"
        if not out:
            out.append(text if c > 0 else f"-{text}")
        else:
            out.append((" + " if c > 0 else " - ") + text)
    if not out:
        return index_literal(const)
    if const:
        out.append(f" + {index_literal(const)}" if const > 0 else f" - {index_literal(-const)}")
    return "".join(out)


def c_expr(e: AffineExpr, names: Sequence[str], need: Need) -> str:
    """The C text of ``e`` with ``d<i>`` named ``names[i]``."""
    items, const = terms(e, names, need)
    return c_sum(items, const)


def is_atomic(text: str) -> bool:
    """True when ``text`` needs no parentheses as an operand of ``*``."""
    depth = 0
    for k, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in "+-?:<>=!&|" and k > 0:
            return False
    return not text.startswith("-")


def c_bound(values: list[str], fn: str) -> str:
    """``max``/``min`` of several ``long long`` bound expressions (constants as ``LL`` literals so
    that CUDA's overloads resolve)."""
    vals = [v + "LL" if v.lstrip("-").isdigit() else v for v in values]
    out = vals[-1]
    for v in reversed(vals[:-1]):
        out = f"{fn}({v}, {out})"
    return out if len(vals) > 1 else values[0]


def c_integer(text: str) -> int | None:
    """The value of a C integer literal (``-3``, ``4LL``), None for any other expression."""
    t = text[:-2] if text.endswith("LL") else text
    return int(t) if t.lstrip("-").isdigit() else None


def c_trip_count(lb: str, ub: str, step: int) -> str:
    """The C ``unsigned long long`` iteration count of ``for (iv = lb; iv < ub; iv += step)``,
    computed without overflow (``ub - lb`` fits in 64 unsigned bits)."""
    span = f"(unsigned long long)({ub}) - (unsigned long long)({lb}) - 1ULL"
    return f"(({ub}) > ({lb}) ? ({span}) / {step}ULL + 1ULL : 0ULL)"


Terms = list[tuple[int, str]]


def c_condition(constraints: Sequence[AffineExpr], eq_flags: Sequence[bool], names: Sequence[str], need: Need,
                known: Callable[[Terms, int], tuple[Terms, int] | None] | None = None) -> str:
    """The C condition of an integer set's ``constraints`` (``e == 0`` where ``eq_flags``, else
    ``e >= 0``) over dims named ``names``: each inequality printed with its negative terms moved right (``j < N`` for
    ``N - j - 1 >= 0``), joined by ``&&``; ``true``/``false`` for constant sets. ``known(items,
    const)``: the same sum written over variables already computed, or None."""
    parts: list[str] = []
    for e, eq in zip(constraints, eq_flags):
        if e.is_constant:
            ok = e.constant_term == 0 if eq else e.constant_term >= 0
            if not ok:
                return "false"
            continue
        helpers: set[str] = set()
        items, k = terms(e, names, helpers.add)
        found = known(items, k) if known is not None else None
        if found is None:
            for h in helpers:
                need(h)
        else:
            items, k = found
        pos = [(c, a) for c, a in items if c > 0]
        neg = [(-c, a) for c, a in items if c < 0]
        if eq:
            if not pos:
                parts.append(f"{c_sum(neg)} == {index_literal(k)}")
            elif not neg:
                parts.append(f"{c_sum(pos)} == {index_literal(-k)}")
            else:
                parts.append(f"{c_sum(pos)} == {c_sum(neg, -k)}")
        elif not neg:
            parts.append(f"{c_sum(pos)} >= {index_literal(-k)}")
        elif not pos:
            parts.append(f"{c_sum(neg)} < {index_literal(k + 1)}")
        elif k == -1:
            parts.append(f"{c_sum(neg)} < {c_sum(pos)}")
        else:
            parts.append(f"{c_sum(neg)} <= {c_sum(pos, k)}")
    return " && ".join(parts) if parts else "true"
