"""Random multi-nest programs shaped for loop fusion: :func:`fusion_programs`, :func:`fusion_features`.

What a program is
-----------------
One ``func.func @kernel(memrefs..., index symbols...)`` whose body is: ``memref.alloc`` of
its temporaries, 2..``max_nests`` top-level ``affine.for`` nests in sequence, the
temporaries' ``memref.dealloc``, ``return``.  The nests communicate through memrefs.

A program is drawn in two steps.  First its *dataflow*: a topology -- a chain
(``A -> t0 -> t1 -> Y``), a diamond (``t0 -> t1, t0 -> t2, (t1, t2) -> Y``), a producer with
two consumers, two nests reading the same input (siblings) or independent nests -- whose
every step relates the written buffer to those read: the same shape, transposed
(``Y[i, j] = t[j, i]``), reduced over an axis (``s[i] = init; for j: s[i] = s[i] + X[i, j]``
in one imperfect nest, or an init nest followed by an accumulating nest, also over a
producer's output) or broadcast (a row ``t[i]`` read inside a ``j`` loop).  Intermediate
buffers are ``memref.alloc``'d temporaries, sometimes function arguments (live-out, escaping).
Then, with ``allow_hazards``, up to two nests are inserted that a fusion pass must respect:
a write to a memref an earlier nest reads (WAR), a second writer of a memref (WAW), an
in-place update (``t[i] = t[i] + ...``, or ``A[i] = A[i - 1] + A[i + 1]``), or a nest between
a producer and its consumer touching their memrefs.

Second, each nest's details: reads at offsets (``t[i + 1]``, ``t[i - 1]``, several offsets
of one buffer: a stencil), loop orders (``i, j`` or ``j, i``), steps of 2, and values built
from the loads with add/sub/max/min/mul and small constants.

Shapes and bounds
-----------------
A program has 1..3 *axes*; every loop iterates one axis and every memref dimension is one
axis, subscripted by that axis' IV plus an offset.  An axis' extent is a constant
(3..``max_extent``; 2..4 with three axes) or, with ``allow_symbols``, an ``index`` argument ``%N`` in
:data:`SYMBOL_RANGE`; the memref dimension is then sized for its largest value (6).  The
extents of all axes multiply to at most 64, so no nest runs more than 64 iterations and no
loop more than 8.  A loop runs ``lo to E - hi`` (``E`` the extent), with ``lo``/``hi``
just large enough that every offset read stays in bounds.

Guarantees
----------
- The module verifies, prints and parses back, and the interpreter runs it with
  :func:`affine_ir.testing.inputs` (any symbol values in :data:`SYMBOL_RANGE`): every
  access is in bounds.
- No element of a temporary is read before it is written (the interpreter zero-fills an
  alloc, MLIR leaves it undefined, so a pass may change what such a read sees): the first
  nest writing a temporary covers a box of it with unit steps, and every later read stays
  in that box, for every symbol value.
- Values are exact integers: inputs in :data:`VALUE_RANGE`, no division; a stored value
  that could leave ``[-ELEMENT_BOUND, ELEMENT_BOUND]`` is clamped (``min(max(v, -16), 16)``),
  except accumulations, which stay within :data:`ACC_BOUND` (an accumulation that could
  pass it becomes a ``max``), and a product whose bound could pass 2**16 becomes a ``max``.
  So memory holds integers of magnitude <= ``ACC_BOUND`` and every f32 value is exact.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
from dataclasses import dataclass, field, replace

from hypothesis import strategies as st

from ..builder import Builder, Index
from ..dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from ..dialects.builtin import ModuleOp
from ..types import index
from .build import BINARY_OP_METHODS
from .checks import kernel_function
from .generate import ProgramGenerator, Tape
from .plan import ELEMENT_BOUND, SYMBOL_RANGE, VALUE_RANGE, Bin, Clamp, Const, Convert
from .strategies import INPUT_BYTES, inputs_from_bytes

__all__ = ["ACC_BOUND", "fusion_features", "fusion_program_from_bytes", "fusion_programs",
           "fusion_programs_with_inputs", "fusion_tape_bytes"]

#: Every memref element of a generated fusion program stays within ``[-ACC_BOUND, ACC_BOUND]``.
ACC_BOUND = 1 << 12
MAX_NEST_ITERATIONS = 64
AXIS_IVS = "ijk"
SYMBOL_NAMES = "NMP"
TAPE_BYTES = 2048


@dataclass(frozen=True)
class FusionOptions:
    """The knobs of :func:`fusion_programs` (see there)."""

    max_nests: int = 6
    max_depth: int = 3
    element_types: tuple[str, ...] = ("f32", "i32")
    allow_symbols: bool = True
    allow_steps: bool = True
    allow_hazards: bool = True
    max_extent: int = 8


@dataclass
class _Buf:
    name: str
    axes: tuple[int, ...]
    dtype: str
    kind: str                                        # "in", "out" (function arguments) or "temp" (memref.alloc)
    bound: int                                       # magnitude bound of its elements so far
    valid: dict[int, tuple[int, int]] | None = None  # temps, once written: per axis, [lo, E - hi) holds values


@dataclass(frozen=True)
class _Read:
    buf: int
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class _Loop:
    axis: int
    lo: int
    hi: int      # the loop runs lo to E - hi
    step: int


@dataclass
class _Nest:
    """``kind``: map (``W = f(reads)``), init (``W = c``), reduce (``W = c`` then accumulate over the
    non-W axes, one imperfect nest), update (``W = W op f(reads)``, accumulating over the non-W axes)."""

    kind: str
    target: int
    reads: list[int]
    loops: list[_Loop] = field(default_factory=list)
    split: int = 0          # reduce: loops[:split] enclose the init store
    accesses: list[_Read] = field(default_factory=list)
    value: object = None
    init: object = None
    op: str = "add"


@dataclass(frozen=True)
class _Load:
    read: _Read
    bound: int


class FusionGenerator:
    int = ProgramGenerator.int
    coin = ProgramGenerator.coin
    pick = ProgramGenerator.pick
    choice = ProgramGenerator.choice

    def __init__(self, tape: Tape, opts: FusionOptions):
        self.tape = tape
        self.o = opts
        self.bufs: list[_Buf] = []
        self.nests: list[_Nest] = []
        self.extents: list[tuple[int, bool]] = []   # per axis: (constant extent or symbol's maximum, symbolic)
        self.spare = 0

    # ----- axes and buffers -----
    def draw_axes(self) -> None:
        depth = max(1, min(self.o.max_depth, 3))
        na = self.pick([(2, 1), (6 if depth >= 2 else 0, 2), (4 if depth >= 3 else 0, 3)])
        symbolic = self.o.allow_symbols and self.coin(35)
        top = max(3, min(self.o.max_extent, 8 if na < 3 else 4))
        for x in range(na):
            if symbolic and (x == 0 or self.coin(35)):
                self.extents.append((SYMBOL_RANGE[1], True))
            else:
                self.extents.append((self.int(3 if na < 3 else 2, top), False))
        while math.prod(e for e, _ in self.extents) > MAX_NEST_ITERATIONS:  # shrink constants first
            x = max(range(na), key=lambda k: (not self.extents[k][1] and self.extents[k][0] > 2, self.extents[k][0]))
            e, sym = self.extents[x]
            self.extents[x] = (4, False) if sym else (e - 1, False)

    @property
    def na(self) -> int:
        return len(self.extents)

    def new_buf(self, axes: tuple[int, ...], kind: str) -> int:
        names = {"in": "ABCDEFGH", "out": "YZWVUSRQ"}
        count = sum(b.kind == kind for b in self.bufs)
        name = f"t{count}" if kind == "temp" else names[kind][count % 8]
        types = [(3 if t == "f32" else 1, t) for t in self.o.element_types]
        self.bufs.append(_Buf(name, axes, self.pick(types), kind, VALUE_RANGE[1] if kind != "temp" else 0))
        return len(self.bufs) - 1

    def new_input(self, within: tuple[int, ...] | None = None) -> int:
        axes = within if within is not None else tuple(range(self.na))
        if len(axes) > 1 and self.coin(15):  # a lower-rank input (a row or a column)
            axes = (self.choice(axes),)
        return self.new_buf(axes, "in")

    def axes_of(self, reads: list[int]) -> tuple[int, ...]:
        out: list[int] = []
        for r in reads:
            out.extend(a for a in self.bufs[r].axes if a not in out)
        return tuple(out)

    # ----- dataflow -----
    def derive(self, reads: list[int], out: bool) -> int:
        """A new buffer computed from ``reads`` by one nest (two for an init + accumulate reduction)."""
        if self.coin(25):  # a second operand: an input, sometimes one another nest also reads
            u = self.axes_of(reads)
            shared = [k for k, b in enumerate(self.bufs) if b.kind == "in" and set(b.axes) <= set(u)
                      and k not in reads]
            reads = [*reads, self.choice(shared) if shared and self.coin(50) else self.new_input(u)]
        u = self.axes_of(reads)
        many = len(u) >= 2
        rel = self.pick([(6, "same"), (2 if many else 0, "transpose"), (4 if many else 0, "reduce"),
                         (2 if len(u) < self.na else 0, "broadcast")])
        if rel == "same":
            axes = u
        elif rel == "transpose":
            axes = u[1:] + u[:1]
        elif rel == "reduce":
            drop = u[-1] if self.coin(70) else self.choice(u)
            axes = tuple(a for a in u if a != drop)
        else:
            new = self.choice([a for a in range(self.na) if a not in u])
            axes = (new, *u) if self.coin(50) else (*u, new)
        t = self.new_buf(axes, "out" if out else "temp")
        if rel != "reduce":
            self.nests.append(_Nest("map", t, reads))
        elif self.spare > 0 and self.coin(40):
            self.spare -= 1
            self.nests += [_Nest("init", t, []), _Nest("update", t, reads)]
        else:
            self.nests.append(_Nest("reduce", t, reads))
        return t

    def topology(self) -> None:
        m = self.o.max_nests
        topo = self.pick([(5, "chain"), (3 if m >= 4 else 0, "diamond"), (3 if m >= 3 else 0, "fanout"),
                          (2, "siblings"), (1, "independent")])
        if topo == "chain":
            n = self.int(2, min(4, m))
            self.spare = m - n
            cur = self.new_input()
            for k in range(n):
                cur = self.derive([cur], out=k == n - 1 or self.coin(20))
        elif topo == "diamond":
            self.spare = m - 4
            t0 = self.derive([self.new_input()], self.coin(15))
            t1, t2 = self.derive([t0], False), self.derive([t0], False)
            self.derive([t1, t2], True)
        elif topo == "fanout":
            self.spare = m - 3
            t0 = self.derive([self.new_input()], self.coin(20))
            self.derive([t0], True)
            self.derive([t0], True)
        else:
            self.spare = m - 2
            a = self.new_input()
            self.derive([a], True)
            self.derive([a if topo == "siblings" else self.new_input()], True)

    # ----- hazards -----
    def valid_at(self, p: int) -> list[int]:
        """Buffers that hold values before nest position ``p`` (arguments, temporaries written earlier)."""
        written = {n.target for n in self.nests[:p]}
        return [k for k, b in enumerate(self.bufs) if b.kind != "temp" or k in written]

    def hazards(self) -> None:
        for _ in range(self.pick([(4, 0), (4, 1), (2, 2)]) if self.o.allow_hazards else 0):
            if len(self.nests) >= self.o.max_nests:
                return
            kind = self.pick([(3, "war"), (2, "waw"), (2, "inplace"), (3, "intervene")])
            ns = self.nests
            if kind == "war":  # write a buffer an earlier nest reads
                reads = [(k, b) for k, n in enumerate(ns) for b in n.reads]
                if not reads:
                    continue
                k, b = self.choice(reads)
                self.insert_writer(self.int(k + 1, len(ns)), b, False)
            elif kind == "waw":  # a second writer
                k = self.int(0, len(ns) - 1)
                self.insert_writer(self.int(k + 1, len(ns)), ns[k].target, False)
            elif kind == "inplace":
                p = self.int(1, len(ns))
                self.insert_writer(p, self.choice(self.valid_at(p)), True)
            else:  # between a producer and a consumer of its buffer
                pairs = [(k, m, n.target) for k, n in enumerate(ns) for m in range(k + 1, len(ns))
                         if n.target in ns[m].reads]
                if not pairs:
                    continue
                k, m, t = self.choice(pairs)
                p = self.int(k + 1, m)
                what = self.pick([(2, "consumer"), (2, "war"), (1, "update")])
                if what == "consumer":
                    self.nests.insert(p, _Nest("map", self.new_buf(self.bufs[t].axes, "out"), [t]))
                elif what == "war" and ns[k].reads:
                    self.insert_writer(p, self.choice(ns[k].reads), False)
                else:
                    self.insert_writer(p, t, True)

    def insert_writer(self, p: int, target: int, inplace: bool) -> None:
        """A nest at position ``p`` writing ``target`` (a buffer holding values there)."""
        axes = set(self.bufs[target].axes)
        valid = [k for k in self.valid_at(p) if k != target]
        if self.coin(45) or inplace and self.coin(50):  # accumulate: target = target op f(reads)
            reads = [self.choice(valid)] if valid and self.coin(85) else []
            nest = _Nest("update", target, reads)
        else:
            fits = [k for k in valid if set(self.bufs[k].axes) <= axes]
            reads = [self.choice(fits)] if fits and self.coin(80) else []
            if inplace:
                reads.append(target)
            nest = _Nest("map", target, reads)
        self.nests.insert(p, nest)

    # ----- loops, accesses and values -----
    def concretize(self, n: _Nest) -> None:
        t = self.bufs[n.target]
        first = t.kind == "temp" and t.valid is None
        n.accesses = []
        for b in n.reads:
            n.accesses.append(_Read(b, self.offsets(b)))
            if n.kind == "map" and self.coin(25):  # a stencil: more offsets of the same buffer
                for _ in range(self.int(1, 2)):
                    n.accesses.append(_Read(b, self.offsets(b, force=True)))
        axes = list(t.axes) + [a for a in self.axes_of(n.reads) if a not in t.axes]
        own = [_Read(n.target, (0,) * len(t.axes))] if n.kind == "update" else []
        lo, hi, n.accesses = self.ranges(n.accesses, own, axes)
        red = [a for a in axes if a not in t.axes]
        steps = {a: 2 if self.o.allow_steps and (not first or a in red) and self.coin(15) else 1 for a in axes}
        if n.kind == "reduce":
            outer = self.shuffled(list(t.axes)) if self.coin(30) else list(t.axes)
            inner = self.shuffled(red) if self.coin(30) else red
            order, n.split = outer + inner, len(outer)
        else:
            order = self.shuffled(axes) if self.coin(30) else axes
        n.loops = [_Loop(a, lo[a], hi[a], steps[a]) for a in order]
        if first:
            t.valid = {a: (lo[a], hi[a]) for a in t.axes}
        self.values(n, t, red)

    def offsets(self, b: int, force: bool = False) -> tuple[int, ...]:
        rank = len(self.bufs[b].axes)
        if not force and not self.coin(35):
            return (0,) * rank
        out = [self.pick([(4, 0), (3, 1), (3, -1), (1, 2), (1, -2)]) for _ in range(rank)]
        if force and not any(out):
            out[self.int(0, rank - 1)] = self.choice((1, -1))
        return tuple(out)

    def ranges(self, accesses: list[_Read], own: list[_Read], axes: list[int]):
        """Per axis, the least ``lo``/``hi`` keeping every access (and ``own``) within its buffer's
        valid box, and the accesses: offsets on an axis whose constant extent would leave no
        iteration are dropped."""
        for _ in range(2):
            lo, hi = dict.fromkeys(axes, 0), dict.fromkeys(axes, 0)
            for r in accesses + own:
                buf = self.bufs[r.buf]
                for a, o in zip(buf.axes, r.offsets):
                    vlo, vhi = buf.valid[a] if buf.valid is not None else (0, 0)
                    lo[a], hi[a] = max(lo[a], vlo - o), max(hi[a], vhi + o)
            empty = {a for a in axes if not self.extents[a][1] and self.extents[a][0] - lo[a] - hi[a] < 1}
            if not empty:
                break
            accesses = [_Read(r.buf, tuple(0 if a in empty else o for a, o in zip(self.bufs[r.buf].axes, r.offsets)))
                        for r in accesses]
        return lo, hi, accesses

    def shuffled(self, xs: list[int]) -> list[int]:
        xs = list(xs)
        for k in range(len(xs) - 1, 0, -1):
            j = self.int(0, k)
            xs[k], xs[j] = xs[j], xs[k]
        return xs

    def trips(self, loop: _Loop) -> int:
        return max(0, -(-(self.extents[loop.axis][0] - loop.lo - loop.hi) // loop.step))

    def values(self, n: _Nest, t: _Buf, red: list[int]) -> None:
        dt = t.dtype
        if n.kind == "init":
            n.value = Const(self.pick([(4, 0), (1, 1), (1, -1)]))
            t.bound = max(t.bound, n.value.bound)
            return
        g = self.expr(n, dt)
        if n.kind == "map":
            n.value = ProgramGenerator.clamp(g)
            t.bound = max(t.bound, n.value.bound)
            return
        g = ProgramGenerator.clamp(g)
        start = t.bound
        if n.kind == "reduce":
            n.init = Const(self.pick([(4, 0), (1, 1), (1, -1)]))
            start = n.init.bound
        times = math.prod(self.trips(lp) for lp in n.loops if lp.axis in red)
        n.op = self.pick([(5, "add"), (1, "sub"), (1, "max"), (1, "min")])
        bound = start + times * g.bound if n.op in ("add", "sub") else max(start, g.bound)
        if bound > ACC_BOUND:
            n.op, bound = "max", max(start, g.bound)
        n.value = g
        t.bound = max(t.bound, bound)

    def expr(self, n: _Nest, dt: str):
        v = None
        for r in n.accesses:
            b = self.bufs[r.buf]
            bound = max(b.bound, ELEMENT_BOUND) if r.buf == n.target else b.bound  # an in-place map
            leaf = _Load(r, bound) if b.dtype == dt else Convert(_Load(r, bound), b.dtype)
            v = leaf if v is None else ProgramGenerator.bin(self.pick([(4, "add"), (2, "sub"), (1, "max"), (1, "min"),
                                                                 (1, "mul")]), v, leaf)
        if v is None:
            return Const(self.int(-3, 3))
        if self.coin(25):
            op = self.pick([(2, "add"), (1, "mul")])  # drawn before the constant, as always
            v = ProgramGenerator.bin(op, v, Const(self.pick([(2, 2), (1, -1), (1, 3)])))
        return v

    def program(self) -> FusionGenerator:
        self.draw_axes()
        self.topology()
        self.hazards()
        for n in self.nests:
            self.concretize(n)
        return self


# ----- building the IR -------------------------------------------------------------------------------
def _build(g: FusionGenerator) -> ModuleOp:
    used = {lp.axis for n in g.nests for lp in n.loops if g.extents[lp.axis][1]}
    syms = sorted(used)
    shape = {k: tuple(g.extents[a][0] for a in b.axes) for k, b in enumerate(g.bufs)}
    args = [k for kind in ("in", "out") for k, b in enumerate(g.bufs) if b.kind == kind]
    temps = [k for k, b in enumerate(g.bufs) if b.kind == "temp"]
    sig = [(g.bufs[k].name, Builder.memref(*shape[k], dtype=g.bufs[k].dtype)) for k in args]
    sig += [(SYMBOL_NAMES[a], index) for a in syms]
    b = Builder()
    with b.function("kernel", sig) as values:
        mems = dict(zip(args, values))
        sym_values = dict(zip(syms, values[len(args):]))
        for k in temps:
            mems[k] = b.alloc(Builder.memref(*shape[k], dtype=g.bufs[k].dtype), name=g.bufs[k].name)
        for n in g.nests:
            _Emitter(b, g, mems, sym_values).nest(n)
        for k in temps:
            b.dealloc(mems[k])
    return b.module


class _Emitter:
    def __init__(self, b: Builder, g: FusionGenerator, mems: dict, syms: dict):
        self.b, self.g, self.mems, self.syms = b, g, mems, syms
        self.ivs: dict[int, Index] = {}

    def open(self, stack: ExitStack, loops: list[_Loop]) -> None:
        for lp in loops:
            extent, symbolic = self.g.extents[lp.axis]
            ub = Index.of(self.syms[lp.axis]) - lp.hi if symbolic else extent - lp.hi
            self.ivs[lp.axis] = stack.enter_context(self.b.affine_for(lp.lo, ub, lp.step, name=AXIS_IVS[lp.axis]))

    def subscripts(self, r: _Read) -> list[Index]:
        return [self.ivs[a] + o for a, o in zip(self.g.bufs[r.buf].axes, r.offsets)]

    def nest(self, n: _Nest) -> None:
        b, t = self.b, self.g.bufs[n.target]
        mem, here = self.mems[n.target], _Read(n.target, (0,) * len(t.axes))
        with ExitStack() as outer:
            self.open(outer, n.loops[: n.split] if n.kind == "reduce" else n.loops)
            if n.kind == "reduce":
                b.store(self.value(n.init, t.dtype), mem, self.subscripts(here))
                with ExitStack() as inner:
                    self.open(inner, n.loops[n.split:])
                    self.accumulate(n, mem, here, t.dtype)
            elif n.kind == "update":
                self.accumulate(n, mem, here, t.dtype)
            else:
                b.store(self.value(n.value, t.dtype), mem, self.subscripts(here))

    def accumulate(self, n: _Nest, mem, here: _Read, dt: str) -> None:
        acc = self.b.load(mem, self.subscripts(here))
        new = getattr(self.b, BINARY_OP_METHODS[dt][n.op])(acc, self.value(n.value, dt))
        self.b.store(new, mem, self.subscripts(here))

    def value(self, e, dt: str):
        b = self.b
        if isinstance(e, _Load):
            return b.load(self.mems[e.read.buf], self.subscripts(e.read))
        if isinstance(e, Const):
            return b.constant(e.value, dt)
        if isinstance(e, Convert):
            return b.cast("sitofp" if dt == "f32" else "fptosi", self.value(e.a, e.src), dt)
        if isinstance(e, Bin):
            return getattr(b, BINARY_OP_METHODS[dt][e.op])(self.value(e.a, dt), self.value(e.b, dt))
        if isinstance(e, Clamp):
            v = getattr(b, BINARY_OP_METHODS[dt]["max"])(self.value(e.a, dt), b.constant(-ELEMENT_BOUND, dt))
            return getattr(b, BINARY_OP_METHODS[dt]["min"])(v, b.constant(ELEMENT_BOUND, dt))
        raise TypeError(f"not a value expression: {e!r}")


# ----- public strategies ---------------------------------------------------------------------------------
def fusion_programs(max_nests: int = 6, max_depth: int = 3, element_types: tuple[str, ...] = ("f32", "i32"),
                    allow_symbols: bool = True, allow_steps: bool = True, allow_hazards: bool = True,
                    max_extent: int = 8) -> st.SearchStrategy[ModuleOp]:
    """Random ``func.func @kernel`` modules of 2..``max_nests`` loop nests that communicate
    through memrefs (see the module docstring for what they contain and guarantee).

    - ``max_nests``: top-level nests (2..8);
    - ``max_depth``: loops per nest (1..3);
    - ``element_types``: memref element types drawn from (``"f32"``, ``"i32"``);
    - ``allow_symbols``: ``index`` arguments as loop upper bounds (``0 to %N``);
    - ``allow_steps``: steps of 2 (never on the loops of a temporary's first writer that
      span the temporary);
    - ``allow_hazards``: inserted WAR/WAW/in-place/intervening nests;
    - ``max_extent``: largest constant extent of an axis (3..8).
    """
    opts = fusion_options(FusionOptions(max_nests, max_depth, tuple(element_types), allow_symbols, allow_steps,
                                  allow_hazards, max_extent))
    return st.binary(min_size=TAPE_BYTES, max_size=TAPE_BYTES).map(
        lambda data: _build(FusionGenerator(Tape(data), opts).program()))


def fusion_programs_with_inputs(**kw) -> st.SearchStrategy[tuple[ModuleOp, list]]:
    """``(module, args)`` pairs: :func:`fusion_programs` (same keywords) and arguments for it,
    as :func:`~affine_ir.testing.inputs` makes them: numpy arrays of integers in
    :data:`VALUE_RANGE` for the memrefs, ints in :data:`SYMBOL_RANGE` for the ``index`` arguments.

    Program and arguments come from one drawn byte string (the arguments from its last
    :data:`INPUT_BYTES` bytes, by :func:`inputs_from_bytes`; the program from the rest): drawing
    the arguments separately (``flatmap``) lets hypothesis spend most examples varying the
    arguments of a few programs.
    """
    opts = fusion_options(FusionOptions(**kw))

    def make(data: bytes) -> tuple[ModuleOp, list]:
        m = _build(FusionGenerator(Tape(data[:TAPE_BYTES]), opts).program())
        return m, inputs_from_bytes(m, data[TAPE_BYTES:])

    return st.binary(min_size=TAPE_BYTES + INPUT_BYTES, max_size=TAPE_BYTES + INPUT_BYTES).map(make)


def fusion_tape_bytes() -> int:
    """How many bytes :func:`fusion_program_from_bytes` reads."""
    return TAPE_BYTES


def fusion_program_from_bytes(data: bytes, **kw) -> ModuleOp:
    """The program :func:`fusion_programs` (same keywords) draws from ``data``
    (:func:`fusion_tape_bytes` long; missing bytes read as zeros, the simplest choices)."""
    return _build(FusionGenerator(Tape(data), fusion_options(FusionOptions(**kw))).program())


def fusion_options(o: FusionOptions) -> FusionOptions:
    if not 2 <= o.max_nests <= 8 or not 1 <= o.max_depth <= 3 or not 3 <= o.max_extent <= 8:
        raise ValueError("need 2 <= max_nests <= 8, 1 <= max_depth <= 3, 3 <= max_extent <= 8")
    if not o.element_types or set(o.element_types) - {"f32", "i32"}:
        raise ValueError(f"element_types must be a non-empty subset of ('f32', 'i32'), got {o.element_types!r}")
    return replace(o, element_types=tuple(o.element_types))


# ----- features ----------------------------------------------------------------------------------------
def fusion_features(module: ModuleOp) -> frozenset[str]:
    """What the nests of ``@kernel`` (its first function) contain, for coverage checks.

    Between top-level nests: ``temp_flow`` (an alloc'd memref stored by a nest and loaded by
    a later one), ``escaping`` (the same through a function argument), ``chain`` (a nest
    consumes one buffer and produces another that a later nest loads), ``fanout`` (a buffer
    loaded by two later nests), ``diamond`` (a fanout whose two consumers feed one nest),
    ``siblings`` (two nests load a memref that no nest wrote before), ``independent`` (two
    nests not linked by shared memrefs, even through other nests), ``war``, ``waw``,
    ``intervening`` (a nest between a producer and a consumer touching a memref either
    touches).  Within a nest: ``offset_read`` (a load of a memref written by an earlier nest,
    with a constant offset), ``stencil`` (one memref loaded at several subscripts),
    ``transposed`` (a load and a store using the same IVs in another order), ``row_read`` (a
    load not using every enclosing IV, of a memref the nest does not store), ``reduction``
    (a store inside a loop whose IV it does not use, of an element loaded in its block),
    ``reduction_init`` (a store followed by a loop in one block), ``consumer_reduction`` (a
    reduction loading what an earlier nest stored), ``inplace`` (a nest loads and stores one
    memref), ``loop_order`` (a store whose subscripts take the IVs out of nesting order).
    Also ``alloc``, ``symbols``, ``step``, ``depth<n>`` (a nest ``n`` loops deep),
    ``nests<n>``, ``f32``, ``i32``.
    """
    f = kernel_function(module)
    nests = [op for op in f.body.ops if isinstance(op, AffineForOp)]
    feats = {f"nests{len(nests)}"}
    for a in f.args:
        feats.add("symbols" if a.type == index else str(a.type.element_type))
    allocs = {id(op.results[0]) for op in f.body.ops if op.name == "memref.alloc"}
    if allocs:
        feats.add("alloc")
    loads = [{id(op.memref) for op in n.walk() if isinstance(op, AffineLoadOp)} for n in nests]
    stores = [{id(op.memref) for op in n.walk() if isinstance(op, AffineStoreOp)} for n in nests]
    touched = [ld | s for ld, s in zip(loads, stores)]
    flows = [(k, m, x) for k in range(len(nests)) for m in range(k + 1, len(nests)) for x in stores[k] & loads[m]]
    for k, m, x in flows:
        feats.add("temp_flow" if x in allocs else "escaping")
        if any(x in loads[p] for p in range(k + 1, len(nests)) if p != m):
            feats.add("fanout")
            if any(stores[m] & loads[q] and stores[p] & loads[q] for p in range(k + 1, len(nests))
                   if p != m and x in loads[p] for q in range(max(m, p) + 1, len(nests))):
                feats.add("diamond")
        if any(kk == m and xx != x for kk, _, xx in flows):
            feats.add("chain")
        if any((touched[k] | touched[m]) & touched[p] for p in range(k + 1, m)):
            feats.add("intervening")
    for k in range(len(nests)):
        for m in range(k + 1, len(nests)):
            if loads[k] & stores[m]:
                feats.add("war")
            if stores[k] & stores[m]:
                feats.add("waw")
            if any(not any(x in stores[p] for p in range(m + 1)) for x in loads[k] & loads[m]):
                feats.add("siblings")
    component = list(range(len(nests)))  # nests linked by shared memrefs, transitively
    for k in range(len(nests)):
        for m in range(k):
            if touched[k] & touched[m]:
                old, new = component[k], component[m]
                component = [new if c == old else c for c in component]
    if len(set(component)) > 1:
        feats.add("independent")
    earlier: set[int] = set()
    for k, n in enumerate(nests):
        _nest_features(n, stores[k], earlier, feats)
        earlier |= stores[k]
    return frozenset(feats)


def _iv_ids(op) -> list[int]:
    """The IVs (ids) that the subscripts of ``op`` using a single IV use, in subscript order."""
    return [id(op.indices[min(e.used_dims())]) for e in op.map.results if len(e.used_dims()) == 1]


def _nest_features(nest: AffineForOp, stored: set[int], earlier: set[int], feats: set[str]) -> None:
    depth = 0
    for op in nest.walk():
        if isinstance(op, AffineForOp):
            depth = max(depth, 1 + sum(isinstance(a, AffineForOp) for a in op.ancestors()))
            body = [c for c in op.body.ops if not c.is_terminator]
            feats.update(n for n, c in (("step", op.step > 1), ("reduction_init", isinstance(body[-1], AffineForOp)
                                        and any(isinstance(c, AffineStoreOp) for c in body))) if c)
    feats.add(f"depth{depth}")
    accesses = [op for op in nest.walk() if isinstance(op, (AffineLoadOp, AffineStoreOp))]
    loaded = {id(x.memref) for x in accesses if isinstance(x, AffineLoadOp)}
    store_ivs = [_iv_ids(x) for x in accesses if isinstance(x, AffineStoreOp)]
    subscripts: dict[int, set] = {}
    for op in accesses:
        enclosing = [id(a.induction_var) for a in op.ancestors() if isinstance(a, AffineForOp)][::-1]
        used, mem = _iv_ids(op), id(op.memref)
        key = (op.map, tuple(id(v) for v in op.indices))
        if isinstance(op, AffineLoadOp):
            subscripts.setdefault(mem, set()).add(key)
            if mem in earlier and any(e.constant_term and e.used_dims() for e in op.map.results):
                feats.add("offset_read")
            if mem not in stored and len(set(used)) < len(enclosing):
                feats.add("row_read")
            if len(used) >= 2 and any(set(s) == set(used) and s != used for s in store_ivs):
                feats.add("transposed")
            continue
        if mem in loaded:
            feats.add("inplace")
        order = [enclosing.index(v) for v in used]
        if order != sorted(order):
            feats.add("loop_order")
        if set(enclosing) - set(used) and any(isinstance(x, AffineLoadOp) and x.memref is op.memref and
                                              (x.map, tuple(id(v) for v in x.indices)) == key for x in op.parent.ops):
            feats.add("reduction")
            if (loaded - {mem}) & earlier:
                feats.add("consumer_reduction")
    if any(len(keys) > 1 for keys in subscripts.values()):
        feats.add("stencil")
