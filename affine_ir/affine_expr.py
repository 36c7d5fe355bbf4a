"""Immutable, canonical affine expressions (MLIR's ``AffineExpr``).

An :class:`AffineExpr` is kept flattened: ``sum(coeff * atom) + constant`` where an
atom is a dim ``d<i>``, a symbol ``s<i>`` or a div/mod term ``e floordiv c``,
``e ceildiv c``, ``e mod c`` (``e`` canonical, ``c > 0``).  Terms are sorted by a
total order (dims, then symbols, then div/mod atoms) and zero coefficients dropped,
so ``==`` and ``hash`` are equality of the linear function over the atoms::

    >>> d0, d1 = dims(2)
    >>> d0 + d1 == d1 + d0 and 2 * d0 - d0 == d0
    True
    >>> str((d0 * 8 + d1 + 9) // 8)
    'd0 + (d1 + 1) floordiv 8 + 1'

Div/mod terms are normalized exactly (floor semantics) when built: constant folding,
divisor 1, pulling out multiples of the divisor, dividing out a common factor and
merging nested ``floordiv``/``ceildiv``.  Maps and integer sets live in
:mod:`affine_ir.affine_map` and are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Integral
from typing import Any, NamedTuple

from .errors import AffineError

__all__ = [
    "AffineExpr",
    "DivTerm",
    "Range",
    "constant",
    "dim",
    "dims",
    "sum_exprs",
    "symbol",
    "symbols",
]

FLOORDIV, CEILDIV, MOD = 0, 1, 2
KIND_NAMES = ("floordiv", "ceildiv", "mod")
_DIM, _SYM, _DIV = 0, 1, 2

# An atom is (0, i) for d<i>, (1, j) for s<i>, (2, kind, divisor, inner) for div/mod.
Atom = tuple
# An inclusive (lo, hi) range of a dim or symbol; None means unbounded on that side.
Range = tuple[int | None, int | None]


class DivTerm(NamedTuple):
    """One ``coeff * (expr <kind> divisor)`` term of an expression."""

    kind: str
    expr: AffineExpr
    divisor: int
    coeff: int


def _atom_key(a: Atom) -> tuple:
    return a if a[0] != _DIV else (_DIV, a[3].sort_key, a[1], a[2])


def _term_key(t: tuple[Atom, int]) -> tuple:
    return _atom_key(t[0])


def _div_value(kind: int, value: int, c: int) -> int:
    if kind == FLOORDIV:
        return value // c
    if kind == CEILDIV:
        return -(-value // c)
    return value % c


def _as_int(x: Any) -> int | None:
    if type(x) is int:
        return x
    return int(x) if isinstance(x, Integral) else None


_set = object.__setattr__


class AffineExpr:
    """A canonical affine expression; build with :func:`dim`, :func:`symbol`, :func:`constant`."""

    __slots__ = ("_const", "_fn", "_hash", "_key", "_terms")

    def __init__(self, terms: tuple[tuple[Atom, int], ...] = (), const: int = 0):
        """Internal: ``terms`` must already be sorted, non-zero and canonical."""
        _set(self, "_terms", terms)
        _set(self, "_const", const)
        _set(self, "_hash", None)  # computed on first use (most expressions built are never hashed)
        _set(self, "_key", None)
        _set(self, "_fn", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("AffineExpr is immutable")

    def __reduce__(self):
        return (AffineExpr, (self._terms, self._const))

    @staticmethod
    def _from(coeffs: dict[Atom, int], const: int) -> AffineExpr:
        terms = [(a, k) for a, k in coeffs.items() if k]
        if len(terms) > 1:
            terms.sort(key=_term_key)
        return AffineExpr(tuple(terms), const)

    # ----- constructors -----
    @classmethod
    def dim(cls, i: int) -> AffineExpr:
        """The expression ``d<i>`` (``i >= 0``)."""
        if i < 0:
            raise AffineError(f"negative dim index {i}")
        return cls((((_DIM, int(i)), 1),), 0)

    @classmethod
    def symbol(cls, i: int) -> AffineExpr:
        """The expression ``s<i>`` (``i >= 0``)."""
        if i < 0:
            raise AffineError(f"negative symbol index {i}")
        return cls((((_SYM, int(i)), 1),), 0)

    @classmethod
    def constant(cls, c: int) -> AffineExpr:
        """The constant expression ``c``."""
        value = _as_int(c)
        if value is None:
            raise AffineError(f"affine constant must be an integer, got {c!r}")
        return cls((), value)

    # ----- arithmetic -----
    @staticmethod
    def _coerce(x: Any) -> AffineExpr | None:
        if type(x) is AffineExpr:
            return x
        if type(x) is int:
            return AffineExpr((), x)
        if isinstance(x, AffineExpr):
            return x
        value = _as_int(x)
        return None if value is None else AffineExpr((), value)

    def _scale(self, k: int) -> AffineExpr:
        if k == 0:
            return _ZERO
        if k == 1:
            return self
        return AffineExpr(tuple((a, c * k) for a, c in self._terms), self._const * k)

    def __add__(self, other: Any) -> AffineExpr:
        o = AffineExpr._coerce(other)
        if o is None:
            return NotImplemented
        if not o._terms:
            return self if o._const == 0 else AffineExpr(self._terms, self._const + o._const)
        if not self._terms:
            return o + self
        coeffs = dict(self._terms)
        for a, k in o._terms:
            coeffs[a] = coeffs.get(a, 0) + k
        return AffineExpr._from(coeffs, self._const + o._const)

    __radd__ = __add__

    def __neg__(self) -> AffineExpr:
        return self._scale(-1)

    def __sub__(self, other: Any) -> AffineExpr:
        o = AffineExpr._coerce(other)
        return NotImplemented if o is None else self + (-o)

    def __rsub__(self, other: Any) -> AffineExpr:
        o = AffineExpr._coerce(other)
        return NotImplemented if o is None else o + (-self)

    def __mul__(self, other: Any) -> AffineExpr:
        o = AffineExpr._coerce(other)
        if o is None:
            return NotImplemented
        if not o._terms:
            return self._scale(o._const)
        if not self._terms:
            return o._scale(self._const)
        raise AffineError(f"non-affine product ({self}) * ({o})")

    __rmul__ = __mul__

    def floordiv(self, c: int | AffineExpr) -> AffineExpr:
        """``self floordiv c`` (rounds toward -inf); ``c`` must be a positive constant."""
        return _make_div(FLOORDIV, self, _divisor(self, "floordiv", c))

    def ceildiv(self, c: int | AffineExpr) -> AffineExpr:
        """``self ceildiv c`` (rounds toward +inf); ``c`` must be a positive constant."""
        return _make_div(CEILDIV, self, _divisor(self, "ceildiv", c))

    def mod(self, c: int | AffineExpr) -> AffineExpr:
        """``self mod c``, always in ``[0, c)``; ``c`` must be a positive constant."""
        return _make_div(MOD, self, _divisor(self, "mod", c))

    def __floordiv__(self, other: Any) -> AffineExpr:
        return self.floordiv(other)

    def __mod__(self, other: Any) -> AffineExpr:
        return self.mod(other)

    def __rfloordiv__(self, other: Any) -> AffineExpr:
        o = AffineExpr._coerce(other)
        return NotImplemented if o is None else o.floordiv(self)

    def __rmod__(self, other: Any) -> AffineExpr:
        o = AffineExpr._coerce(other)
        return NotImplemented if o is None else o.mod(self)

    # ----- equality -----
    def __eq__(self, other: object) -> bool:
        if isinstance(other, AffineExpr):
            return self is other or (self._const == other._const and self._terms == other._terms)
        if isinstance(other, Integral) and not self._terms:
            return self._const == int(other)
        return NotImplemented

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self._terms, self._const)) if self._terms else hash(self._const)
            _set(self, "_hash", h)
        return h

    @property
    def sort_key(self) -> tuple:
        """A key giving a deterministic total order on expressions (the canonical term order)."""
        key = self._key
        if key is None:
            key = (tuple((_atom_key(a), k) for a, k in self._terms), self._const)
            _set(self, "_key", key)
        return key

    # ----- queries -----
    @property
    def is_constant(self) -> bool:
        """True when the expression has no dims, symbols or div/mod terms."""
        return not self._terms

    @property
    def constant_value(self) -> int | None:
        """The value of a constant expression, else None."""
        return None if self._terms else self._const

    @property
    def constant_term(self) -> int:
        """The constant part of the flattened sum."""
        return self._const

    @property
    def fits_index(self) -> bool:
        """True when every integer of the expression (its constant, coefficients, divisors, also
        inside div/mod terms) fits in 64 bits (:func:`fits_index`), so its text parses back."""
        return _fits_int64(self) and all(a[0] != _DIV or (fits_index(a[2]) and a[3].fits_index)
                                         for a, _ in self._terms)

    def _single(self, kind: int) -> int | None:
        if len(self._terms) == 1 and self._const == 0:
            (a, k), = self._terms
            if a[0] == kind and k == 1:
                return a[1]
        return None

    def as_dim(self) -> int | None:
        """``i`` when the expression is exactly ``d<i>``, else None."""
        return self._single(_DIM)

    def as_symbol(self) -> int | None:
        """``j`` when the expression is exactly ``s<j>``, else None."""
        return self._single(_SYM)

    @property
    def is_dim(self) -> bool:
        """True when the expression is exactly one dim."""
        return self._single(_DIM) is not None

    @property
    def is_symbol(self) -> bool:
        """True when the expression is exactly one symbol."""
        return self._single(_SYM) is not None

    def coefficient_of_dim(self, i: int) -> int:
        """Linear coefficient of ``d<i>`` (0 if absent; occurrences inside div/mod not counted)."""
        return dict(self._terms).get((_DIM, i), 0)

    def coefficient_of_symbol(self, j: int) -> int:
        """Linear coefficient of ``s<j>`` (0 if absent; occurrences inside div/mod not counted)."""
        return dict(self._terms).get((_SYM, j), 0)

    @property
    def is_pure_linear(self) -> bool:
        """True when there are no floordiv/ceildiv/mod terms."""
        return all(a[0] != _DIV for a, _ in self._terms)

    def div_terms(self) -> tuple[DivTerm, ...]:
        """The div/mod terms in canonical order, each with its coefficient."""
        return tuple(DivTerm(KIND_NAMES[a[1]], a[3], a[2], k) for a, k in self._terms if a[0] == _DIV)

    def linear_part(self) -> AffineExpr:
        """The expression without its div/mod terms (dims, symbols and constant only)."""
        return AffineExpr(tuple(t for t in self._terms if t[0][0] != _DIV), self._const)

    def _used(self, kind: int) -> frozenset[int]:
        out: set[int] = set()
        for a, _ in self._terms:
            if a[0] == kind:
                out.add(a[1])
            elif a[0] == _DIV:
                out |= a[3]._used(kind)
        return frozenset(out)

    def used_dims(self) -> frozenset[int]:
        """Indices of all dims the expression uses, including inside div/mod terms."""
        return self._used(_DIM)

    def used_symbols(self) -> frozenset[int]:
        """Indices of all symbols the expression uses, including inside div/mod terms."""
        return self._used(_SYM)

    def max_dim(self) -> int:
        """The largest dim index used, or -1 when none (so ``max_dim() + 1`` dims suffice)."""
        return max(self.used_dims(), default=-1)

    def max_symbol(self) -> int:
        """The largest symbol index used, or -1 when none."""
        return max(self.used_symbols(), default=-1)

    # ----- evaluation -----
    def _source(self) -> str:
        parts = []
        for a, k in self._terms:
            if a[0] == _DIM:
                atom = f"d[{a[1]}]"
            elif a[0] == _SYM:
                atom = f"s[{a[1]}]"
            elif a[1] == CEILDIV:
                atom = f"(-(-({a[3]._source()})//{a[2]}))"
            else:
                atom = f"(({a[3]._source()}){'//' if a[1] == FLOORDIV else '%'}{a[2]})"
            parts.append(atom if k == 1 else f"{k}*{atom}")
        parts.append(str(self._const))
        return "(" + " + ".join(parts) + ")"

    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> int:
        """The exact integer value at the point (floor semantics for floordiv/mod)."""
        fn = self._fn
        if fn is None:
            fn = compile_lambda(f"lambda d, s: {self._source()}")
            object.__setattr__(self, "_fn", fn)
        try:
            return fn(dims, symbols)
        except IndexError:
            raise AffineError(f"cannot evaluate {self} at dims {list(dims)}, symbols "
                              f"{list(symbols)}: too few values") from None

    # ----- substitution -----
    def replace(self, dim_repl: Sequence[AffineExpr | int],
                sym_repl: Sequence[AffineExpr | int] = ()) -> AffineExpr:
        """``self`` with each ``d<i>`` replaced by ``dim_repl[i]`` and ``s<j>`` by ``sym_repl[j]``.

        The result is canonical; a dim or symbol without a replacement raises AffineError.
        """
        result = AffineExpr((), self._const)
        for a, k in self._terms:
            if a[0] == _DIV:
                sub = _make_div(a[1], a[3].replace(dim_repl, sym_repl), a[2])
            else:
                repl, what = (dim_repl, "dim") if a[0] == _DIM else (sym_repl, "symbol")
                if a[1] >= len(repl):
                    raise AffineError(f"no replacement for {what} {a[1]} in {self}")
                sub = AffineExpr._coerce(repl[a[1]])
                if sub is None:
                    raise AffineError(f"replacement {repl[a[1]]!r} is not an affine expression")
            result = result + sub._scale(k)
        return result

    def shift(self, num_dims_offset: int = 0, num_syms_offset: int = 0) -> AffineExpr:
        """``self`` with every ``d<i>`` renamed ``d<i + num_dims_offset>`` and ``s<j>`` likewise."""
        dims_ = [dim(i + num_dims_offset) for i in range(self.max_dim() + 1)]
        syms_ = [symbol(j + num_syms_offset) for j in range(self.max_symbol() + 1)]
        return self.replace(dims_, syms_)

    # ----- ranges -----
    def bounds(self, dim_ranges: Sequence[Range | None] = (),
               sym_ranges: Sequence[Range | None] = ()) -> tuple[int | None, int | None]:
        """A conservative inclusive interval ``(lo, hi)`` containing every value of ``self``.

        ``dim_ranges[i]`` / ``sym_ranges[j]`` are inclusive ``(lo, hi)`` ranges (either end
        None = unbounded; a missing or None entry = unbounded).  None in the result means
        unbounded on that side.
        """
        lo: int | None = self._const
        hi: int | None = self._const
        for a, k in self._terms:
            alo, ahi = _atom_bounds(a, dim_ranges, sym_ranges)
            if k < 0:
                alo, ahi = ahi, alo
            lo = None if lo is None or alo is None else lo + k * alo
            hi = None if hi is None or ahi is None else hi + k * ahi
        return lo, hi

    def simplify(self, dim_ranges: Sequence[Range | None] = (),
                 sym_ranges: Sequence[Range | None] = ()) -> AffineExpr:
        """An expression equal to ``self`` at every point within the given ranges.

        A div/mod term whose operand stays within one block ``[k*c, k*c + c - 1]``
        becomes ``k`` (floordiv), ``e - k*c`` (mod) or the constant ceildiv value, unless that
        would need a constant or coefficient outside 64 bits (``d0 mod 3`` for ``d0`` near
        ``-2**63`` stays): the result always prints as IR that parses back.
        """
        result = AffineExpr((), self._const)
        for a, k in self._terms:
            if a[0] != _DIV:
                result = result + AffineExpr(((a, k),), 0)
                continue
            kind, c = a[1], a[2]
            inner = a[3].simplify(dim_ranges, sym_ranges)
            lo, hi = inner.bounds(dim_ranges, sym_ranges)
            sub = None
            if lo is not None and hi is not None:
                if _div_value(kind, lo, c) == _div_value(kind, hi, c) and kind != MOD:
                    sub = AffineExpr((), _div_value(kind, lo, c))
                elif kind == MOD and lo // c == hi // c:
                    sub = inner - (lo // c) * c
            if sub is not None and not (_fits_int64(sub) and _fits_int64(result + sub._scale(k))):
                sub = None
            if sub is None:
                sub = _make_div(kind, inner, c)
            result = result + sub._scale(k)
        return result

    # ----- printing -----
    def to_str(self, dim_names: Sequence[str] | None = None,
               sym_names: Sequence[str] | None = None) -> str:
        """MLIR affine-expression text, naming ``d<i>`` as ``dim_names[i]`` (default ``d<i>``).

        Terms come in canonical order with the constant last, e.g. ``d0 + d1 * 2 - 3``,
        ``(d0 + 1) floordiv 4``, ``-(d0 mod 4) * 3``; the text re-parses to the same value
        under MLIR's precedence rules.
        """
        if not self._terms:
            return _MIN_TEXT if self._const == INDEX_MIN else str(self._const)
        out: list[str] = []
        for a, k in self._terms:
            atom = _atom_str(a, dim_names, sym_names)
            paren = f"({atom})" if a[0] == _DIV else atom
            if k == INDEX_MIN:  # 2**63 has no literal: -(2**63 - 1) times the atom, minus the atom
                out.append(f"{'' if not out else ' + '}{paren} * -{INDEX_MAX} - {atom}")
            elif not out:
                out.append(atom if k == 1 else f"-{paren}" if k == -1 else f"{paren} * {k}")
            else:
                sign = " + " if k > 0 else " - "
                out.append(sign + (atom if abs(k) == 1 else f"{paren} * {abs(k)}"))
        if self._const:
            out.append(f" + {self._const}" if self._const > 0 else f" - {-self._const}" if self._const != INDEX_MIN
                       else f" - {INDEX_MAX} - 1")
        return "".join(out)

    def __str__(self) -> str:
        return self.to_str()

    def __repr__(self) -> str:
        return f"AffineExpr({self})"


_ZERO = AffineExpr((), 0)


def compile_lambda(source: str):
    # The source is generated from integers and fixed operators only (see _source).
    return eval(source, {"__builtins__": {}})


def _divisor(e: AffineExpr, op: str, c: Any) -> int:
    value = c.constant_value if isinstance(c, AffineExpr) else _as_int(c)
    if value is None:
        raise AffineError(f"non-affine {op}: divisor ({c}) of ({e}) is not a constant")
    if value <= 0:
        raise AffineError(f"{op} of ({e}) by non-positive constant {value}")
    return value


#: The least and largest values of ``index`` (64-bit) and of every constant in affine expressions.
INDEX_MIN = -(1 << 63)
INDEX_MAX = (1 << 63) - 1
#: How -2**63 is written: the parser (as MLIR's) reads no literal past 2**63 - 1.
_MIN_TEXT = f"-{INDEX_MAX} - 1"


def fits_index(value: int) -> bool:
    """Whether ``value`` is an ``index`` (fits in a signed 64-bit integer)."""
    return INDEX_MIN <= value <= INDEX_MAX


def _fits_int64(e: AffineExpr) -> bool:
    """Whether the constant and the coefficients of ``e``'s terms fit in a signed 64-bit integer."""
    return all(fits_index(v) for v in (e._const, *(k for _, k in e._terms)))


def _make_div(kind: int, e: AffineExpr, c: int) -> AffineExpr:
    """Canonical ``e <kind> c`` for ``c > 0`` (exact, floor semantics)."""
    if not e._terms:
        return AffineExpr((), _div_value(kind, e._const, c))
    if c == 1:
        return _ZERO if kind == MOD else e
    if kind == MOD:
        return _make_mod(e, c)
    # e = q*c + r: pull out the terms whose coefficient is a multiple of c and the
    # constant's multiple of c (truncated toward zero so that |r.const| < c).
    q: dict[Atom, int] = {}
    r: dict[Atom, int] = {}
    for a, k in e._terms:
        if k % c == 0:
            q[a] = k // c
        else:
            r[a] = k
    qc = e._const // c if e._const >= 0 else -(-e._const // c)
    rc = e._const - qc * c
    quotient = AffineExpr._from(q, qc)
    if not r:
        return quotient + _div_value(kind, rc, c)
    g = math.gcd(c, rc, *r.values())
    if g > 1:
        r = {a: k // g for a, k in r.items()}
        rc, c = rc // g, c // g
    if len(r) == 1:
        (a, k), = r.items()
        if k == 1 and a[0] == _DIV and a[1] == kind:
            # (x floordiv a + rc) floordiv c == (x + rc*a) floordiv (a*c); same for ceildiv.
            return quotient + _make_div(kind, a[3] + rc * a[2], a[2] * c)
    return quotient + AffineExpr((((_DIV, kind, c, AffineExpr._from(r, rc)), 1),), 0)


def _make_mod(e: AffineExpr, c: int) -> AffineExpr:
    """Canonical ``e mod c``: coefficients and constant reduced into ``[0, c)``, gcd divided out."""
    r = {a: k % c for a, k in e._terms if k % c}
    rc = e._const % c
    if not r:
        return AffineExpr((), rc)
    g = math.gcd(c, rc, *r.values())
    if g > 1:
        return _make_mod(AffineExpr._from({a: k // g for a, k in r.items()}, rc // g), c // g)._scale(g)
    if len(r) == 1 and rc == 0:
        (a, k), = r.items()
        if k == 1 and a[0] == _DIV and a[1] == MOD:
            if a[2] <= c:  # (x mod a) mod c == x mod a when a <= c
                return AffineExpr(((a, 1),), 0)
            if a[2] % c == 0:  # (x mod a) mod c == x mod c when c divides a
                return _make_mod(a[3], c)
    return AffineExpr((((_DIV, MOD, c, AffineExpr._from(r, rc)), 1),), 0)


def _range_of(ranges: Sequence[Any], i: int) -> tuple[int | None, int | None]:
    if i < len(ranges) and ranges[i] is not None:
        lo, hi = ranges[i]
        return lo, hi
    return None, None


def _atom_bounds(a: Atom, dim_ranges: Sequence[Any],
                 sym_ranges: Sequence[Any]) -> tuple[int | None, int | None]:
    if a[0] == _DIM:
        return _range_of(dim_ranges, a[1])
    if a[0] == _SYM:
        return _range_of(sym_ranges, a[1])
    kind, c = a[1], a[2]
    lo, hi = a[3].bounds(dim_ranges, sym_ranges)
    if kind == MOD:
        if lo is not None and hi is not None and lo // c == hi // c:
            return lo % c, hi % c
        return 0, c - 1
    return (None if lo is None else _div_value(kind, lo, c),
            None if hi is None else _div_value(kind, hi, c))


def _atom_str(a: Atom, dim_names: Sequence[str] | None, sym_names: Sequence[str] | None) -> str:
    if a[0] != _DIV:
        names, prefix = (dim_names, "d") if a[0] == _DIM else (sym_names, "s")
        if names is None:
            return f"{prefix}{a[1]}"
        if a[1] >= len(names):
            raise AffineError(f"no name given for {prefix}{a[1]}")
        return names[a[1]]
    inner = a[3]
    text = inner.to_str(dim_names, sym_names)
    single = len(inner._terms) == 1 and inner._const == 0 and inner._terms[0][1] == 1 \
        and inner._terms[0][0][0] != _DIV
    return f"{text if single else f'({text})'} {KIND_NAMES[a[1]]} {a[2]}"


dim = AffineExpr.dim
symbol = AffineExpr.symbol
constant = AffineExpr.constant


def dims(n: int) -> tuple[AffineExpr, ...]:
    """``(d0, ..., d<n-1>)``."""
    return tuple(dim(i) for i in range(n))


def symbols(n: int) -> tuple[AffineExpr, ...]:
    """``(s0, ..., s<n-1>)``."""
    return tuple(symbol(i) for i in range(n))


def sum_exprs(exprs: Iterable[AffineExpr | int]) -> AffineExpr:
    """The canonical sum of ``exprs`` (0 when empty)."""
    total = _ZERO
    for e in exprs:
        total = total + e
    return total


def __getattr__(name: str) -> Any:
    # AffineMap and IntegerSet live in affine_map.py (which imports this module).
    if name in ("AffineMap", "IntegerSet"):
        from . import affine_map

        return getattr(affine_map, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
