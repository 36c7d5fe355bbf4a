"""Shared machinery of the library: sizes (static or symbolic), the function being built,
hoisted constants and allocations, loop nests, and f32 accumulation.

Conventions every op follows:

- A size is an ``int`` (>= 1) or a ``str`` naming a symbolic size. A symbolic size makes
  the memref dims it sizes dynamic (``?``) and adds a trailing ``index`` argument with that
  name to the function (one per distinct name, in order of first appearance among the op's
  size parameters); loops use it as a symbol in their bounds.
- Storage is in ``dtype``; arithmetic is in the *compute type*: f32 for f32/f16/bf16
  (f64 for f64; i32 for i8, which only the ops listing :data:`INT_DTYPES` accept: ``matmul``,
  ``batch_matmul``, with an i32 output). Loaded values are ``arith.extf``'d to it and results ``arith.truncf``'d
  when stored, so f16/bf16 round once per stored element.
- Constants, size conversions and ``memref.alloc`` temporaries sit at the top of the
  function; temporaries are ``memref.dealloc``'d at its end.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from ..builder import Builder, Index
from ..core import Operation, Value
from ..dialects.builtin import ModuleOp
from ..dialects.func import FuncOp
from ..types import IntegerType, MemRefType, Type, index, memref, scalar
from ..verifier import verify

DTYPES = ("f32", "f16", "bf16", "f64")
#: Integer storage types: only the ops that say so accept them (int8 matmuls: i8 x i8 -> i32, exact).
INT_DTYPES = ("i8",)
# Loop IV names for the dims of a generic shape (element-wise ops, reductions, softmax).
DIM_NAMES = ("i", "j", "k", "l", "m", "n", "o", "p")
NEG_INF = float("-inf")

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Derived:
    """A size computed from other sizes (a conv output height...); symbolic when any input is.

    ``fn`` takes the resolved inputs (ints or :class:`Index`) and returns the size.
    """

    fn: Callable
    deps: tuple


def derive(fn: Callable, *deps):
    """``fn(*deps)`` now when every dep is an int, else a :class:`Derived` to resolve in the function."""
    if all(isinstance(d, int) for d in deps):
        return fn(*deps)
    return Derived(fn, tuple(deps))


def check_dtype(dtype: str, allowed: Sequence[str] = DTYPES) -> str:
    if dtype not in allowed:
        raise ValueError(f"dtype must be one of {tuple(allowed)}, got {dtype!r}")
    return dtype


def check_size(size, what: str = "size"):
    """``size`` itself when it is a valid size (int >= 1, identifier str or Derived)."""
    if isinstance(size, bool):
        raise TypeError(f"{what} must be an int or a str, got {size!r}")
    if isinstance(size, int):
        if size < 1:
            raise ValueError(f"{what} must be >= 1, got {size}")
        return size
    if isinstance(size, str):
        if not _IDENT.match(size):
            raise ValueError(f"symbolic {what} {size!r} must be an identifier")
        return size
    if isinstance(size, Derived):
        return size
    raise TypeError(f"{what} must be an int or a str naming a symbolic size, got {size!r}")


def check_shape(shape, what: str = "shape") -> tuple:
    if isinstance(shape, (int, str)):
        shape = (shape,)
    return tuple(check_size(s, f"{what} dim") for s in shape)


def pair(x, what: str) -> tuple[int, int]:
    """``(x, x)`` for an int, the pair itself for a 2-sequence of ints."""
    t = (x, x) if isinstance(x, int) else tuple(x)
    if len(t) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in t):
        raise ValueError(f"{what} must be an int or a pair of ints, got {x!r}")
    return t


def normalize_axis(axis: int, rank: int) -> int:
    """``axis`` in ``[0, rank)`` (negative axes count from the end); ValueError when out of range."""
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise ValueError(f"axis {axis!r} is out of range for rank {rank}")
    return axis % rank


def symbol_names(sizes) -> list[str]:
    """Distinct symbolic size names in ``sizes`` (nested sequences and Derived walked), in order."""
    out: list[str] = []

    def walk(s):
        if isinstance(s, str):
            if s not in out:
                out.append(s)
        elif isinstance(s, Derived):
            for d in s.deps:
                walk(d)
        elif isinstance(s, (tuple, list)):
            for d in s:
                walk(d)

    walk(sizes)
    return out


def compute_dtype(dtype: str) -> str:
    return {"f64": "f64", "i8": "i32"}.get(dtype, "f32")


class Kernel:
    """One ``func.func`` under construction (see the module docstring for conventions).

    Usage::

        k = Kernel("matmul", "f16", sizes=(M, N, K))
        with k.function(A=(M, K), B=(K, N), C=(M, N)) as (A, B, C):
            ... k.loops(...), k.load(...), k.store(...) ...
        module = k.module
    """

    def __init__(self, name: str, dtype: str, sizes: Sequence = (), dtypes: Sequence[str] = DTYPES):
        self.name = name
        self.dtype = check_dtype(dtype, dtypes)
        self.stype: Type = scalar(dtype)
        self.ctype: Type = scalar(compute_dtype(dtype))
        self.b = Builder()
        self._size_order = tuple(sizes)
        self._syms: dict[str, Value] = {}
        self._consts: dict[tuple, Value] = {}
        self._counts: dict[str, Value] = {}
        self._prologue: list[Operation] = []
        self._temps: list[Value] = []
        self._body = None

    # -- the function ---------------------------------------------------------------
    @contextlib.contextmanager
    def function(self, element_types: dict[str, str] | None = None, **shapes) -> Iterator[tuple[Value, ...]]:
        """Build the function with memref arguments ``name=shape`` (in order, element type
        ``dtype``, or ``element_types[name]``) and trailing index arguments for the symbolic sizes;
        yields the memrefs. On exit, deallocates the temporaries and verifies the module."""
        names = symbol_names(list(self._size_order) + list(shapes.values()))
        types = element_types or {}
        args = [(n, self.memref_type(shape, types.get(n))) for n, shape in shapes.items()]
        args += [(n, index) for n in names]
        with self.b.function(self.name, args) as vals:
            self._body = vals[0].owner  # the entry block (every op has a memref argument)
            self._syms = dict(zip(names, vals[len(shapes):]))
            yield vals[: len(shapes)]
            for t in self._temps:
                self.b.dealloc(t)
        verify(self.b.module)

    @property
    def module(self) -> ModuleOp:
        return self.b.module

    @property
    def func(self) -> FuncOp:
        return self._body.parent_op

    def memref_type(self, shape, dtype: Type | str | None = None) -> MemRefType:
        return memref(tuple(s if isinstance(s, int) else None for s in shape), dtype or self.stype)

    # -- sizes --------------------------------------------------------------------------
    def size(self, s):
        """A size as a loop bound / index: an int, or an :class:`Index` over size arguments."""
        if isinstance(s, (int, Index)):
            return s
        if isinstance(s, str):
            return Index.of(self._syms[s])
        if isinstance(s, Derived):
            return s.fn(*[self.size(d) for d in s.deps])
        raise TypeError(f"not a size: {s!r}")

    def count(self, *sizes) -> Value:
        """The product of sizes as a compute-type float (a hoisted constant, or index_cast +
        sitofp of each symbolic size, multiplied)."""
        static = 1
        for s in sizes:
            if isinstance(s, int):
                static *= s
        out = None if static == 1 and any(not isinstance(s, int) for s in sizes) else self.const(float(static))
        for s in sizes:
            if not isinstance(s, int):
                f = self._count1(s)
                if out is None:
                    out = f
                else:
                    with self.prologue():
                        out = self.b.mulf(out, f)
        return out

    def _count1(self, s) -> Value:
        key = repr(s)
        if key not in self._counts:
            v = self.index_value(s)
            with self.prologue():
                i = self.b.cast("index_cast", v, "i64")
                self._counts[key] = self.b.cast("sitofp", i, self.ctype)
        return self._counts[key]

    def index_value(self, s) -> Value:
        """A symbolic size as one index Value (an argument, or a hoisted affine.apply)."""
        idx = self.size(s)
        try:
            return idx.value
        except ValueError:
            with self.prologue():
                return self.b.apply(idx)

    # -- prologue: constants and allocations at the top of the function ------------------------
    @contextlib.contextmanager
    def prologue(self) -> Iterator[None]:
        """Insert after the ops already in the prologue (at the top of the function)."""
        ops = self._body.ops
        start = self._body.index_of(self._prologue[-1]) + 1 if self._prologue else 0
        n = len(ops)
        cm = self.b.before(ops[start]) if start < n else self.b.at_end(self._body)
        with cm:
            yield
        added = len(ops) - n
        self._prologue.extend(ops[start:start + added])

    def const(self, value: float, type_: Type | str | None = None) -> Value:
        """A hoisted ``arith.constant`` (the compute type by default), created once."""
        t = type_ or self.ctype
        t = scalar(t) if isinstance(t, str) else t
        if isinstance(t, IntegerType):
            value = int(value)
        key = (repr(value), t)
        if key not in self._consts:
            with self.prologue():
                self._consts[key] = self.b.constant(value, t)
        return self._consts[key]

    def temp(self, name: str, shape, dtype: Type | str | None = None) -> Value:
        """A hoisted ``memref.alloc`` of ``shape`` (compute type by default), deallocated at the end."""
        t = self.memref_type(shape, dtype or self.ctype)
        dyn = [self.index_value(s) for s in shape if not isinstance(s, int)]
        with self.prologue():
            m = self.b.alloc(t, dyn, name=name)
        self._temps.append(m)
        return m

    # -- loops and accesses -----------------------------------------------------------------
    @contextlib.contextmanager
    def loops(self, *specs) -> Iterator[list[Index]]:
        """Nested ``affine.for`` loops, outermost first; each spec is ``(name, upper)`` or
        ``(name, lower, upper)`` with sizes/Index bounds; yields the IVs."""
        with contextlib.ExitStack() as stack:
            ivs = []
            for name, *bounds in specs:
                lo, hi = (0, bounds[0]) if len(bounds) == 1 else bounds
                ivs.append(stack.enter_context(self.b.affine_for(self.size(lo), self.size(hi), name=name)))
            yield ivs

    @property
    def integer(self) -> bool:
        """Whether the arithmetic is on integers (i8 storage, i32 compute)."""
        return isinstance(self.ctype, IntegerType)

    def load(self, mem: Value, indices: Sequence) -> Value:
        """``affine.load`` converted to the compute type."""
        return self.b.convert(self.b.load(mem, list(indices)), self.ctype)

    def store(self, value: Value, mem: Value, indices: Sequence) -> None:
        """``affine.store`` of ``value`` rounded to ``mem``'s element type."""
        self.b.store(self.b.convert(value, mem.type.element_type), mem, list(indices))

    def update(self, mem: Value, indices: Sequence, fn: Callable[[Value], Value]) -> None:
        """``mem[indices] = fn(mem[indices])`` (load, combine in the compute type, store)."""
        self.store(fn(self.load(mem, indices)), mem, indices)

    # -- reductions into outputs -----------------------------------------------------------
    def accumulator(self, out: Value, shape, name: str = "acc") -> Value:
        """Where a sum into ``out`` accumulates: ``out`` itself when it stores the compute
        type, else a new compute-type temporary ``%acc`` (so f16/bf16 sums stay in f32)."""
        if out.type.element_type == self.ctype:
            return out
        return self.temp(name, shape)

    def fill(self, mem: Value, loops: Sequence, index_fn: Callable, value: float) -> None:
        """A nest ``mem[index_fn(ivs)] = value`` over ``loops`` (a constant of ``mem``'s element type)."""
        c = self.const(value, mem.type.element_type)
        with self.loops(*loops) as ivs:
            self.store(c, mem, index_fn(ivs))

    def copy_out(self, acc: Value, out: Value, loops: Sequence, index_fn: Callable,
                 fn: Callable[[Value], Value] | None = None) -> None:
        """A final nest ``out[...] = fn(acc[...])`` rounded to ``out``'s dtype; nothing when
        ``acc`` is ``out`` and there is no ``fn``."""
        if acc is out and fn is None:
            return
        with self.loops(*loops) as ivs:
            idx = index_fn(ivs)
            v = self.load(acc, idx)
            self.store(fn(v) if fn is not None else v, out, idx)
