"""Immutable affine maps and integer sets (MLIR's ``AffineMap`` / ``IntegerSet``).

Both hold canonical :class:`~affine_ir.affine_expr.AffineExpr` results, so structural
equality and hashing mean equality of the functions the results compute.  They are
also importable from :mod:`affine_ir.affine_expr`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .affine_expr import AffineExpr, Range, compile_lambda, constant, dim, symbol
from .errors import AffineError

__all__ = ["AffineMap", "IntegerSet"]


def _check_exprs(what: str, num_dims: int, num_symbols: int, exprs: Sequence[Any]) -> tuple:
    if num_dims < 0 or num_symbols < 0:
        raise AffineError(f"{what} with negative dim/symbol count ({num_dims}, {num_symbols})")
    out = []
    for e in exprs:
        expr = AffineExpr._coerce(e)
        if expr is None:
            raise AffineError(f"{what} result {e!r} is not an affine expression")
        if expr.max_dim() >= num_dims:
            raise AffineError(f"{what} uses d{expr.max_dim()} but has {num_dims} dims: {expr}")
        if expr.max_symbol() >= num_symbols:
            raise AffineError(f"{what} uses s{expr.max_symbol()} but has {num_symbols} symbols: {expr}")
        out.append(expr)
    return tuple(out)


def _header(num_dims: int, num_symbols: int) -> str:
    text = "(" + ", ".join(f"d{i}" for i in range(num_dims)) + ")"
    if num_symbols:
        text += "[" + ", ".join(f"s{i}" for i in range(num_symbols)) + "]"
    return text


def _check_point(what: Any, dims_: Sequence[int], symbols_: Sequence[int]) -> None:
    if len(dims_) != what.num_dims or len(symbols_) != what.num_symbols:
        raise AffineError(f"{what} needs {what.num_dims} dims and {what.num_symbols} symbols, "
                          f"got {len(dims_)} and {len(symbols_)}")


@dataclass(frozen=True)
class AffineMap:
    """``(d0, ..., d<n-1>)[s0, ...] -> (results)``; results use only its own dims and symbols."""

    num_dims: int
    num_symbols: int
    results: tuple[AffineExpr, ...]
    _fn: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "results", _check_exprs("affine map", self.num_dims,
                                                         self.num_symbols, self.results))

    def __reduce__(self):
        return (AffineMap, (self.num_dims, self.num_symbols, self.results))

    # ----- constructors -----
    @classmethod
    def identity(cls, n: int) -> AffineMap:
        """``(d0, ..., d<n-1>) -> (d0, ..., d<n-1>)``."""
        return cls(n, 0, tuple(dim(i) for i in range(n)))

    @classmethod
    def dim_identity(cls) -> AffineMap:
        """``(d0) -> (d0)``."""
        return cls.identity(1)

    @classmethod
    def symbol_identity(cls) -> AffineMap:
        """``()[s0] -> (s0)``."""
        return cls(0, 1, (symbol(0),))

    @classmethod
    def constant_map(cls, c: int) -> AffineMap:
        """``() -> (c)``."""
        return cls(0, 0, (constant(c),))

    @classmethod
    def empty(cls, num_dims: int = 0, num_symbols: int = 0) -> AffineMap:
        """A map with the given inputs and no results."""
        return cls(num_dims, num_symbols, ())

    @classmethod
    def permutation(cls, perm: Sequence[int]) -> AffineMap:
        """``(d0, ..., d<n-1>) -> (d<perm[0]>, ..., d<perm[n-1]>)``; ``perm`` must be a permutation."""
        if sorted(perm) != list(range(len(perm))):
            raise AffineError(f"{list(perm)} is not a permutation")
        return cls(len(perm), 0, tuple(dim(p) for p in perm))

    # ----- queries -----
    @property
    def num_results(self) -> int:
        """Number of results."""
        return len(self.results)

    @property
    def num_inputs(self) -> int:
        """``num_dims + num_symbols``."""
        return self.num_dims + self.num_symbols

    @property
    def is_identity(self) -> bool:
        """True when result ``i`` is ``d<i>`` for every dim (symbols, if any, unused; as MLIR)."""
        return self.num_results == self.num_dims and all(
            r.as_dim() == i for i, r in enumerate(self.results))

    @property
    def is_permutation(self) -> bool:
        """True when the results are the dims in some order, each exactly once."""
        return sorted(r.as_dim() if r.is_dim else -1 for r in self.results) == list(range(self.num_dims))

    @property
    def is_constant(self) -> bool:
        """True when every result is constant (vacuously true without results)."""
        return all(r.is_constant for r in self.results)

    @property
    def fits_index(self) -> bool:
        """True when every integer of every result fits in 64 bits (``AffineExpr.fits_index``):
        the map's text parses back."""
        return all(r.fits_index for r in self.results)

    def constant_results(self) -> tuple[int, ...] | None:
        """The values of the results when all are constant, else None."""
        return tuple(r.constant_term for r in self.results) if self.is_constant else None

    @property
    def is_single_constant(self) -> bool:
        """True when the map has exactly one result and it is constant."""
        return self.num_results == 1 and self.results[0].is_constant

    def single_constant(self) -> int | None:
        """The value of a single-constant-result map, else None."""
        return self.results[0].constant_term if self.is_single_constant else None

    @property
    def is_symbol_identity(self) -> bool:
        """True for ``()[s0] -> (s0)``."""
        return (self.num_dims, self.num_symbols, self.num_results) == (0, 1, 1) \
            and self.results[0].as_symbol() == 0

    # ----- evaluation and transformation -----
    def evaluate(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> tuple[int, ...]:
        """The exact value of every result at the point (floor semantics).

        Raises AffineError unless exactly ``num_dims`` dims and ``num_symbols`` symbols are given.
        """
        _check_point(self, dims, symbols)
        fn = self._fn
        if fn is None:
            body = "".join(r._source() + ", " for r in self.results)
            fn = compile_lambda(f"lambda d, s: ({body})")
            object.__setattr__(self, "_fn", fn)
        return fn(dims, symbols)

    def compose(self, inner: AffineMap) -> AffineMap:
        """``self ∘ inner``: inner's results feed self's dims (as MLIR's ``AffineMap::compose``).

        The result has inner's dims and ``self.num_symbols + inner.num_symbols`` symbols,
        self's first, so ``self.compose(inner).evaluate(x, s_self + s_inner) ==
        self.evaluate(inner.evaluate(x, s_inner), s_self)``.
        """
        if inner.num_results != self.num_dims:
            raise AffineError(f"cannot compose {self} with {inner}: {inner.num_results} results "
                              f"for {self.num_dims} dims")
        inner_results = [r.shift(0, self.num_symbols) for r in inner.results]
        syms = [symbol(j) for j in range(self.num_symbols)]
        return AffineMap(inner.num_dims, self.num_symbols + inner.num_symbols,
                         tuple(r.replace(inner_results, syms) for r in self.results))

    def replace(self, dim_repl: Sequence[AffineExpr | int], sym_repl: Sequence[AffineExpr | int] = (),
                num_dims: int | None = None, num_symbols: int | None = None) -> AffineMap:
        """Each result with ``d<i> -> dim_repl[i]``, ``s<j> -> sym_repl[j]``, in a map of
        ``num_dims``/``num_symbols`` inputs (default: unchanged counts)."""
        return AffineMap(self.num_dims if num_dims is None else num_dims,
                         self.num_symbols if num_symbols is None else num_symbols,
                         tuple(r.replace(dim_repl, sym_repl) for r in self.results))

    def sub_map(self, indices: Sequence[int]) -> AffineMap:
        """The map with only the results at ``indices`` (in that order), same inputs."""
        return AffineMap(self.num_dims, self.num_symbols, tuple(self.results[i] for i in indices))

    def with_results(self, results: Sequence[AffineExpr | int]) -> AffineMap:
        """The same inputs with new results."""
        return AffineMap(self.num_dims, self.num_symbols, tuple(results))

    def shift_dims(self, offset: int) -> AffineMap:
        """``d<i>`` renamed ``d<i + offset>``, with ``offset`` more dims (the first ones unused)."""
        return AffineMap(self.num_dims + offset, self.num_symbols,
                         tuple(r.shift(offset, 0) for r in self.results))

    def shift_symbols(self, offset: int) -> AffineMap:
        """``s<j>`` renamed ``s<j + offset>``, with ``offset`` more symbols (the first ones unused)."""
        return AffineMap(self.num_dims, self.num_symbols + offset,
                         tuple(r.shift(0, offset) for r in self.results))

    def simplify(self, dim_ranges: Sequence[Range | None] = (), sym_ranges: Sequence[Range | None] = ()) -> AffineMap:
        """Each result simplified with :meth:`AffineExpr.simplify`; equal on the given ranges."""
        return self.with_results([r.simplify(dim_ranges, sym_ranges) for r in self.results])

    def __str__(self) -> str:
        return f"{_header(self.num_dims, self.num_symbols)} -> ({', '.join(map(str, self.results))})"

    def __repr__(self) -> str:
        return f"AffineMap({self})"


@dataclass(frozen=True)
class IntegerSet:
    """``(dims)[syms] : (c0 >= 0, c1 == 0, ...)``: the points where every constraint holds.

    ``eq_flags[k]`` says constraint ``k`` is ``== 0`` (else ``>= 0``); an empty
    ``eq_flags`` with constraints means all are inequalities.
    """

    num_dims: int
    num_symbols: int
    constraints: tuple[AffineExpr, ...] = ()
    eq_flags: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        cons = _check_exprs("integer set", self.num_dims, self.num_symbols, self.constraints)
        flags = tuple(bool(f) for f in self.eq_flags) if self.eq_flags else (False,) * len(cons)
        if len(flags) != len(cons):
            raise AffineError(f"integer set has {len(cons)} constraints but {len(flags)} eq flags")
        object.__setattr__(self, "constraints", cons)
        object.__setattr__(self, "eq_flags", flags)

    @classmethod
    def universe(cls, num_dims: int = 0, num_symbols: int = 0) -> IntegerSet:
        """The set without constraints (every point)."""
        return cls(num_dims, num_symbols, (), ())

    @classmethod
    def empty(cls, num_dims: int = 0, num_symbols: int = 0) -> IntegerSet:
        """The canonical empty set ``(1 == 0)``, as MLIR's ``IntegerSet::getEmptySet``."""
        return cls(num_dims, num_symbols, (constant(1),), (True,))

    @property
    def num_constraints(self) -> int:
        """Number of constraints."""
        return len(self.constraints)

    @property
    def num_equalities(self) -> int:
        """Number of ``== 0`` constraints."""
        return sum(self.eq_flags)

    @property
    def num_inequalities(self) -> int:
        """Number of ``>= 0`` constraints."""
        return self.num_constraints - self.num_equalities

    def contains(self, dims: Sequence[int], symbols: Sequence[int] = ()) -> bool:
        """True when every constraint holds at the point (exact, floor semantics)."""
        _check_point(self, dims, symbols)
        for c, eq in zip(self.constraints, self.eq_flags, strict=True):
            v = c.evaluate(dims, symbols)
            if (eq and v != 0) or v < 0:
                return False
        return True

    @property
    def is_empty_trivially(self) -> bool:
        """True when some constraint is a constant that fails (e.g. ``1 == 0``)."""
        return any(c.is_constant and (c.constant_term != 0 if eq else c.constant_term < 0)
                   for c, eq in zip(self.constraints, self.eq_flags, strict=True))

    @property
    def is_universe(self) -> bool:
        """True when every constraint is a constant that holds (or there are none)."""
        return all(c.is_constant and (c.constant_term == 0 if eq else c.constant_term >= 0)
                   for c, eq in zip(self.constraints, self.eq_flags, strict=True))

    def replace(self, dim_repl: Sequence[AffineExpr | int], sym_repl: Sequence[AffineExpr | int] = (),
                num_dims: int | None = None, num_symbols: int | None = None) -> IntegerSet:
        """Each constraint with ``d<i> -> dim_repl[i]``, ``s<j> -> sym_repl[j]``, in a set of
        ``num_dims``/``num_symbols`` inputs (default: unchanged counts)."""
        return IntegerSet(self.num_dims if num_dims is None else num_dims,
                          self.num_symbols if num_symbols is None else num_symbols,
                          tuple(c.replace(dim_repl, sym_repl) for c in self.constraints), self.eq_flags)

    def simplify(self, dim_ranges: Sequence[Range | None] = (), sym_ranges: Sequence[Range | None] = ()) -> IntegerSet:
        """A set with the same points within the given ranges.

        Constraints are simplified and divided by the gcd of their coefficients; those
        that always hold are dropped; one that never holds gives :meth:`empty`.
        """
        kept: list[AffineExpr] = []
        flags: list[bool] = []
        for c, eq in zip(self.constraints, self.eq_flags, strict=True):
            c = _normalize_constraint(c.simplify(dim_ranges, sym_ranges), eq)
            if c is None:
                return IntegerSet.empty(self.num_dims, self.num_symbols)
            lo, hi = c.bounds(dim_ranges, sym_ranges)
            if (hi is not None and hi < 0) or (eq and lo is not None and lo > 0):
                return IntegerSet.empty(self.num_dims, self.num_symbols)
            if (lo is not None and lo >= 0) and (not eq or hi == 0):
                continue
            if (c, eq) not in zip(kept, flags, strict=True):
                kept.append(c)
                flags.append(eq)
        return IntegerSet(self.num_dims, self.num_symbols, tuple(kept), tuple(flags))

    def __str__(self) -> str:
        body = ", ".join(f"{c} {'==' if eq else '>='} 0"
                         for c, eq in zip(self.constraints, self.eq_flags, strict=True))
        return f"{_header(self.num_dims, self.num_symbols)} : ({body or '0 == 0'})"

    def __repr__(self) -> str:
        return f"IntegerSet({self})"


def _normalize_constraint(c: AffineExpr, eq: bool) -> AffineExpr | None:
    """``c`` divided by the gcd of its coefficients (None when ``c == 0`` has no solution)."""
    g = math.gcd(*(k for _, k in c._terms))
    if g <= 1:
        return c
    rest = c - c.constant_term
    terms = AffineExpr(tuple((a, k // g) for a, k in rest._terms), 0)
    if eq:
        return None if c.constant_term % g else terms + c.constant_term // g
    return terms + c.constant_term // g  # g*t + k >= 0  <=>  t + floor(k/g) >= 0
