"""Drawing random program plans (see :mod:`.plan`) with hypothesis.

Every choice reads one byte of a drawn byte string (see :class:`Tape`); the simplest
value of each (a zero byte, what shrinking moves towards) gives the simplest program:
fewer nests, shallower loops, constant bounds, unit strides, offsets of 0.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from ..affine_expr import AffineExpr, constant, dim, symbol
from .plan import (
    ELEMENT_BOUND,
    EXPR_LIMIT,
    INDEX_MAX,
    INDEX_MIN,
    SYMBOL_RANGE,
    AccRef,
    Bin,
    Clamp,
    Const,
    Convert,
    If,
    IfValue,
    IndexValue,
    Load,
    Loop,
    MemSpec,
    Program,
    Reduction,
    ResultRef,
    Select,
    Store,
)

#: A subscript whose interval is wider than this is replaced by a simpler one (keeps memrefs small).
MAX_SUBSCRIPT_SPAN = 24
#: The extent ``ub - lb`` of a loop never exceeds this (nor ``max_trip * step``).
MAX_LOOP_EXTENT = 8
MEMREF_NAMES = "ABCDEFGH"
SYMBOL_NAMES = ("N", "M", "P")
#: Choices per statement (one byte each) in the drawn tape; past its end every choice is the simplest.
TAPE_BYTES_PER_STATEMENT = 128


@dataclass(frozen=True)
class Options:
    """The knobs of :func:`affine_ir.testing.programs` (see there)."""

    max_depth: int = 4
    max_nests: int = 3
    max_statements: int = 4
    element_types: tuple[str, ...] = ("f32", "i32")
    allow_symbols: bool = True
    allow_if: bool = True
    allow_iter_args: bool = True
    allow_minmax: bool = True
    allow_divmod: bool = True
    max_step: int = 3
    max_trip: int = 6
    max_iterations: int = 48
    max_memrefs: int = 4
    allow_aliasing: bool = False
    allow_limits: bool = False
    allow_wide_minmax: bool = False


#: Lower bounds of loops near the integer limits (``allow_limits``), before a small shift.
LIMIT_ANCHORS = (INDEX_MAX, 1 << 62, -(1 << 62), INDEX_MIN, 0)
#: Steps of loops near the integer limits: unit and tiny ones, and ones that reach ``INDEX_MAX`` in two.
LIMIT_STEPS = (1, 2, 3, 1 << 61, 1 << 62, (1 << 62) + 1)


@dataclass(frozen=True)
class _Ctx:
    ivs: tuple[int, ...] = ()                            # global dims of the enclosing loops, outermost first
    accs: tuple[tuple[int, int, str, int], ...] = ()     # (loop id, k, dtype, bound) of visible iter_args
    depth: int = 0
    iters: int = 1                                       # bound on the enclosing loops' iteration count
    if_depth: int = 0


class Tape:
    """Choices read from one drawn byte string: byte ``b`` picks option ``b % n`` of ``n``.

    One hypothesis draw per program instead of hundreds keeps generation fast; shrinking
    still works because a zero byte (and the end of the tape) always means the simplest
    option, so hypothesis simplifies a program by zeroing and dropping bytes.
    """

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def below(self, n: int) -> int:
        if n <= 1 or self.pos >= len(self.data):
            self.pos += 1
            return 0
        b = self.data[self.pos]
        self.pos += 1
        return b % n


class ProgramGenerator:
    def __init__(self, tape: Tape, opts: Options):
        self.tape = tape
        self.o = opts
        self.mems: list[MemSpec] = []
        self.symbols: list[str] = []
        self.dim_ranges: list[tuple[int, int]] = []
        self.loops = 0
        self.left = 0

    # ----- primitive choices (each simplest at a zero byte: first option, value nearest 0) -----
    def int(self, lo: int, hi: int) -> int:
        k = self.tape.below(hi - lo + 1)
        if lo > 0:
            return lo + k
        if hi < 0:
            return hi - k
        order = [0]  # 0, 1, -1, 2, -2, ... within [lo, hi]
        step = 1
        while len(order) <= k:
            order.extend(v for v in (step, -step) if lo <= v <= hi)
            step += 1
        return order[k]

    def coin(self, percent: int) -> bool:
        return self.tape.below(100) >= 100 - percent

    def pick(self, weighted):
        """One item of ``[(weight, item), ...]`` (zero weights excluded)."""
        options = [(w, x) for w, x in weighted if w > 0]
        r = self.tape.below(sum(w for w, _ in options))
        for w, x in options:
            if r < w:
                return x
            r -= w
        raise AssertionError("unreachable")

    def choice(self, seq):
        return seq[self.tape.below(len(seq))]

    # ----- ranges -----
    @property
    def sym_ranges(self):
        return [SYMBOL_RANGE] * len(self.symbols)

    def bounds(self, e: AffineExpr) -> tuple[int, int]:
        return e.bounds(self.dim_ranges, self.sym_ranges)

    # ----- program -----
    def program(self) -> Program:
        o = self.o
        self.symbols = list(SYMBOL_NAMES[: self.int(0, 2)]) if o.allow_symbols else []
        for k in range(self.int(1, o.max_memrefs)):
            rank = self.pick([(6, 1), (6, 2), (3, 3), (1, 0)])
            self.mems.append(MemSpec(MEMREF_NAMES[k], rank, self.choice(o.element_types)))
        same_shape: tuple[tuple[int, int], ...] = ()
        if o.allow_aliasing and len(self.mems) > 1 and self.coin(80):  # two memrefs of one type, to alias
            a = self.int(0, len(self.mems) - 2)
            b = a + 1 + self.int(0, len(self.mems) - a - 2)
            self.mems[b] = replace(self.mems[b], rank=self.mems[a].rank, dtype=self.mems[a].dtype)
            same_shape = ((a, b),)
        body: list = []
        for _ in range(self.int(1, o.max_nests)):
            self.left = o.max_statements
            body.extend(self.top_item())
        return Program(self.mems, self.symbols, self.dim_ranges, body, same_shape)

    def top_item(self) -> list:
        ctx = _Ctx()
        nest = self.o.max_depth > 0
        kind = self.pick([(10 if nest else 0, "loop"), (1 if nest and self.o.allow_iter_args else 0, "reduce"),
                          (1 if self.o.allow_if and self.symbols else 0, "if"), (1, "store"),
                          (3 if self.o.allow_limits else 0, "limits")])
        return self.item(ctx, kind)

    def block(self, ctx: _Ctx) -> list:
        items: list = []
        for _ in range(self.int(1, 3)):
            if self.left <= 0:
                break
            items.extend(self.item(ctx, None))
        return items

    def item(self, ctx: _Ctx, kind: str | None) -> list:
        if kind is None:
            nest = ctx.depth < self.o.max_depth and self.max_trip(ctx) >= 1
            guard = self.o.allow_if and ctx.if_depth < 2 and bool(ctx.ivs or self.symbols)
            limits = self.o.allow_limits and ctx.depth < self.o.max_depth and ctx.iters * 3 <= self.o.max_iterations
            kind = self.pick([(5, "store"), (5 if nest else 0, "loop"),
                              (2 if nest and self.o.allow_iter_args else 0, "reduce"), (2 if guard else 0, "if"),
                              (1 if limits else 0, "limits")])
        if kind == "loop":
            loop, inner = self.loop(ctx)
            loop.body = self.block(inner)
            return [loop]
        if kind == "reduce":
            return self.reduction(ctx)
        if kind == "limits":
            return self.limits_loop(ctx)
        if kind == "if":
            return [self.guard(ctx)]
        return [self.store(ctx)]

    # ----- loops -----
    def max_trip(self, ctx: _Ctx) -> int:
        return min(self.o.max_trip, self.o.max_iterations // ctx.iters)

    def bound_candidate(self, ctx: _Ctx, upper: bool, lb: AffineExpr, extent: int) -> AffineExpr:
        iv, sym = 3 if ctx.ivs else 0, 3 if self.symbols else 0
        kind = self.pick([(5, "rel"), (2, "const"), (iv, "iv"), (sym, "sym")] if upper
                         else [(5, "const"), (iv, "iv"), (sym * 2 // 3, "sym")])
        if kind == "rel":  # lb + extent; rarely an empty loop
            if self.o.allow_wide_minmax and self.coin(40):  # often a single iteration, or none
                return lb + (0 if self.coin(25) else 1)
            return lb + (0 if self.coin(5) else self.int(1, extent))
        if kind == "const":
            return constant(self.int(1, 6) if upper else self.pick([(6, 0), (1, 1), (1, 2), (1, -1), (1, -2)]))
        if kind == "iv":
            return dim(self.choice(ctx.ivs)) + (self.int(0, 2) if upper else self.int(-2, 1))
        return symbol(self.int(0, len(self.symbols) - 1)) + (self.int(-1, 1) if upper else self.int(-3, 0))

    def loop(self, ctx: _Ctx) -> tuple[Loop, _Ctx]:
        """A loop with at most ``max_trip(ctx)`` iterations; its IV's range is recorded."""
        max_trip = self.max_trip(ctx)
        step = self.pick([(6, 1), (2, 2), (1, 3)]) if self.o.max_step >= 3 else self.int(1, max(1, self.o.max_step))
        extent = min(max_trip * step, MAX_LOOP_EXTENT)
        lb = self.bound_candidate(ctx, False, constant(0), extent)
        lbs = [lb]
        if self.o.allow_minmax and self.coin(20):
            other = self.bound_candidate(ctx, False, lb, extent)
            if other != lb:
                lbs.append(other)
        ubs = [self.bound_candidate(ctx, True, lb, extent)]
        if self.o.allow_minmax and self.coin(25):
            other = self.bound_candidate(ctx, True, lb, extent)
            if other not in ubs:
                ubs.append(other)
        if self.o.allow_minmax and self.o.allow_wide_minmax and self.coin(50):
            lbs, ubs = self.widen(ctx, lbs, lb, extent), self.widen(ctx, ubs, lb, extent, upper=True)
            if self.coin(30):  # one iteration (or none) whatever the other terms say
                ubs.insert(self.int(0, len(ubs)), lb + (0 if self.coin(25) else 1))
        span = min(self.bounds(u - lb)[1] for u in ubs)
        if span > extent:  # cap the trip count: ub <= lb + extent
            cap = lb + self.int(1, extent)
            if not self.o.allow_minmax:
                ubs, span = [cap], self.bounds(cap - lb)[1]
            else:
                if cap not in ubs:
                    ubs.append(cap)
                span = min(span, self.bounds(cap - lb)[1])
        lo = max(self.bounds(e)[0] for e in lbs)
        hi = min(self.bounds(e)[1] for e in ubs) - 1
        if hi < lo and not self.o.allow_wide_minmax:  # provably empty: make it a plain range
            lbs, ubs = [lb], [lb + self.int(1, extent)]
            span = self.bounds(ubs[0] - lb)[1]
            lo, hi = self.bounds(lb)[0], self.bounds(ubs[0])[1] - 1
        trips = max(0, -(-span // step))
        d = len(self.dim_ranges)
        self.dim_ranges.append((lo, max(lo, hi)))
        loop = Loop(self.loops, d, tuple(lbs), tuple(ubs), step)
        self.loops += 1
        return loop, replace(ctx, ivs=(*ctx.ivs, d), depth=ctx.depth + 1, iters=ctx.iters * max(1, trips))

    def widen(self, ctx: _Ctx, terms: list, lb: AffineExpr, extent: int, upper: bool = False) -> list:
        """``terms`` with 1..3 more bound terms (constants among them), in a drawn order."""
        out = list(terms)
        for _ in range(self.int(1, 3)):
            extra = constant(self.int(-2, 8) if upper else self.int(-3, 3)) if self.coin(50) else \
                self.bound_candidate(ctx, upper, lb, extent)
            if extra not in out:
                out.append(extra)
        for k in range(len(out) - 1, 0, -1):  # a shuffle: terms in different orders
            j = self.int(0, k)
            out[k], out[j] = out[j], out[k]
        return out

    def limits_loop(self, ctx: _Ctx) -> list:
        """A loop whose bounds and step are near the index limits (its IV + step may pass
        ``INDEX_MAX``) that runs 0..3 iterations: an iter_args counter, stores at ``iv mod k``,
        and a store of the count after it. Only ``iv mod k`` ever reaches memory or values."""
        step = self.choice(LIMIT_STEPS)
        anchor = self.choice(LIMIT_ANCHORS)
        trips = self.int(0, 3)
        if anchor == INDEX_MAX:  # ends at the top: the last IV + step usually passes INDEX_MAX
            ub = INDEX_MAX - self.int(0, 3)
            lb = max(INDEX_MIN, min(ub, ub - trips * step + self.int(0, min(step - 1, 3))))
        else:
            lb = min(INDEX_MAX, max(INDEX_MIN, anchor + self.int(-3, 3)))
            ub = min(INDEX_MAX, lb + trips * step - (self.int(0, min(step - 1, 3)) if trips else 0))
        ubs: tuple[AffineExpr, ...] = (constant(ub),)
        if self.symbols and ub - SYMBOL_RANGE[1] >= lb and self.coin(30):  # ub = %N + c, near the limit too
            ubs = (symbol(self.int(0, len(self.symbols) - 1)) + (ub - SYMBOL_RANGE[1]),)
        d = len(self.dim_ranges)
        self.dim_ranges.append((lb, max(lb, ub - 1)))
        loop = Loop(self.loops, d, (constant(lb),), ubs, step)
        self.loops += 1
        trips = max(0, -(-(ub - lb) // step))
        loop.reduction = Reduction(["i32"], [Const(0)], ["add"], [Const(1)], [trips])
        mem = self.int(0, len(self.mems) - 1)
        rank = self.mems[mem].rank
        subs = tuple(dim(d) % self.int(2, 4) if self.coin(70) else constant(self.int(0, 1)) for _ in range(rank))
        value = AccRef(loop.id, 0, trips) if self.coin(50) else IndexValue(dim(d) % 3, 2)
        loop.body = [Store(mem, subs, self.convert(value, "i32", self.mems[mem].dtype))]
        after = self.int(0, len(self.mems) - 1)
        count = self.convert(ResultRef(loop.id, 0, trips), "i32", self.mems[after].dtype)
        self.left -= 2
        return [loop, Store(after, self.access(ctx, after), count)]

    def reduction(self, ctx: _Ctx) -> list:
        """A loop with iter_args followed by stores of (some of) its results."""
        n = 2 if self.coin(25) else 1
        dtypes = [self.choice(self.o.element_types) for _ in range(n)]
        inits = [self.expr(ctx, dt, 0) for dt in dtypes]
        loop, inner = self.loop(ctx)
        trips = max(1, inner.iters // ctx.iters)
        updates = [self.expr(inner, dt, self.int(0, 1)) for dt in dtypes]
        ops, bounds = [], []
        for init, upd in zip(inits, updates):
            op = self.pick([(3, "add"), (1, "sub"), (1, "max"), (1, "min")])
            bound = init.bound + trips * upd.bound if op in ("add", "sub") else max(init.bound, upd.bound)
            if bound > EXPR_LIMIT:
                op, bound = "max", max(init.bound, upd.bound)
            ops.append(op)
            bounds.append(bound)
        loop.reduction = Reduction(dtypes, inits, ops, updates, bounds)
        accs = tuple((loop.id, k, dt, b) for k, (dt, b) in enumerate(zip(dtypes, bounds)))
        loop.body = self.block(replace(inner, accs=ctx.accs + accs)) if self.coin(50) else []
        out: list = [loop]
        for k in range(n):
            if k == 0 or self.coin(50):
                mem = self.int(0, len(self.mems) - 1)
                subs = self.access(ctx, mem)
                value = self.convert(ResultRef(loop.id, k, bounds[k]), dtypes[k], self.mems[mem].dtype)
                if self.coin(40):
                    value = self.bin("add", Load(mem, subs), value)
                out.append(Store(mem, subs, self.clamp(value)))
                self.left -= 1
        return out

    # ----- conditions -----
    def guard(self, ctx: _Ctx) -> If:
        cond = self.condition(ctx)
        inner = replace(ctx, if_depth=ctx.if_depth + 1)
        then = self.block(inner)
        else_ = self.block(inner) if self.coin(40) else None
        return If(cond, then, else_ or None)

    def condition(self, ctx: _Ctx) -> tuple[tuple[AffineExpr, bool], ...]:
        out: list[tuple[AffineExpr, bool]] = []
        for _ in range(2 if self.coin(30) else 1):
            ivs, syms = ctx.ivs, self.symbols
            kind = self.pick([(3 if ivs else 0, "ge"), (2 if ivs else 0, "le"), (2 if ivs and syms else 0, "lt_sym"),
                              (2 if len(ivs) > 1 else 0, "diff"), (2 if ivs else 0, "mod_eq"), (1 if ivs else 0, "eq"),
                              (1 if syms else 0, "sym_ge")])
            if kind in ("ge", "le", "eq"):
                i = self.choice(ivs)
                lo, hi = self.dim_ranges[i]
                c = self.int(lo, hi)
                e = dim(i) - c if kind != "le" else c - dim(i)
                out.append((e, kind == "eq"))
            elif kind == "lt_sym":
                out.append((symbol(self.int(0, len(syms) - 1)) - 1 - dim(self.choice(ivs)), False))
            elif kind == "diff":
                i = self.int(0, len(ivs) - 2)
                out.append((dim(ivs[i + 1]) - dim(ivs[i]) + self.int(-1, 1), False))
            elif kind == "mod_eq":
                e = dim(self.choice(ivs))
                if len(ivs) > 1 and self.coin(40):
                    e = e + dim(self.choice(ivs))
                out.append(((e % self.int(2, 3)) - self.int(0, 1), True))
            else:
                out.append((symbol(self.int(0, len(syms) - 1)) - self.int(0, 4), False))
        return tuple((e, eq) for e, eq in out if not e.is_constant) or ((dim(ctx.ivs[-1]) if ctx.ivs else
                                                                         symbol(0), False),)

    # ----- accesses -----
    def access(self, ctx: _Ctx, mem: int, like: tuple[AffineExpr, ...] | None = None) -> tuple[AffineExpr, ...]:
        rank = self.mems[mem].rank
        if like is not None and len(like) == rank and rank and self.coin(40):
            subs = tuple(e + self.int(-1, 1) for e in like)  # a stencil neighbour of the stored element
            if all(self.span(e) <= MAX_SUBSCRIPT_SPAN for e in subs):
                return subs
        return tuple(self.subscript(ctx) for _ in range(rank))

    def span(self, e: AffineExpr) -> int:
        lo, hi = self.bounds(e)
        return hi - lo

    def subscript(self, ctx: _Ctx) -> AffineExpr:
        for _ in range(2):
            e = self.raw_subscript(ctx)
            if self.span(e) <= MAX_SUBSCRIPT_SPAN:
                return e
        return dim(ctx.ivs[-1]) % 5 if ctx.ivs else constant(0)

    def coeff(self) -> int:
        return self.pick([(6, 1), (1, 2), (1, 3), (1, -1)])

    def raw_subscript(self, ctx: _Ctx) -> AffineExpr:
        ivs = ctx.ivs
        kind = self.pick([(1, "const"), (8 if ivs else 0, "iv"), (2 if len(ivs) > 1 else 0, "two"),
                          (2 if ivs and self.o.allow_divmod else 0, "divmod"), (1 if self.symbols else 0, "sym")])
        if kind == "const":
            return constant(self.int(0, 3))
        if kind == "iv":
            return self.coeff() * dim(self.choice(ivs)) + self.int(-2, 2)
        if kind == "two":
            a, b = self.int(0, len(ivs) - 1), self.int(0, len(ivs) - 2)
            b = b if b < a else b + 1
            return dim(ivs[a]) + self.pick([(3, 1), (1, -1), (1, 2)]) * dim(ivs[b]) + self.int(-2, 2)
        if kind == "divmod":
            inner = self.coeff() * dim(self.choice(ivs)) + self.int(-2, 2)
            if len(ivs) > 1 and self.coin(30):
                inner = inner + dim(self.choice(ivs))
            k = self.int(2, 4)
            return (inner.floordiv(k) if self.coin(50) else inner.mod(k)) + self.int(0, 2)
        s = symbol(self.int(0, len(self.symbols) - 1))
        return (s + dim(self.choice(ivs)) if ivs and self.coin(60) else s) + self.int(-1, 1)

    # ----- statements and values -----
    def store(self, ctx: _Ctx) -> Store:
        mem = self.int(0, len(self.mems) - 1)
        dtype = self.mems[mem].dtype
        subs = self.access(ctx, mem)
        if self.coin(35):  # an update in place / a reduction into memory: M[s] = M[s] op expr
            value = self.bin(self.pick([(4, "add"), (1, "sub"), (1, "mul"), (1, "max"), (1, "min")]),
                             Load(mem, subs), self.expr(ctx, dtype, self.int(0, 1), subs))
        else:
            value = self.expr(ctx, dtype, self.int(0, 2), subs)
        self.left -= 1
        return Store(mem, subs, self.clamp(value))

    @staticmethod
    def clamp(value):
        return value if value.bound <= ELEMENT_BOUND else Clamp(value)

    @staticmethod
    def convert(value, src: str, dst: str):
        return value if src == dst else Convert(value, src)

    @staticmethod
    def bin(op: str, a, b):
        """``op(a, b)``, turned into ``max`` when its magnitude bound would pass EXPR_LIMIT."""
        bound = a.bound * b.bound if op == "mul" else a.bound + b.bound if op in ("add", "sub") else \
            max(a.bound, b.bound)
        if bound > EXPR_LIMIT:
            op, bound = "max", max(a.bound, b.bound)
        return Bin(op, a, b, bound)

    def expr(self, ctx: _Ctx, dtype: str, depth: int, like: tuple[AffineExpr, ...] | None = None):
        kind = "leaf"
        if depth > 0:
            cond = self.o.allow_if and bool(ctx.ivs or self.symbols)
            kind = self.pick([(2, "leaf"), (5, "bin"), (1, "select"), (1 if cond else 0, "if")])
        if kind == "bin":
            op = self.pick([(4, "add"), (2, "sub"), (2, "mul"), (1, "max"), (1, "min")])
            return self.bin(op, self.expr(ctx, dtype, depth - 1, like), self.expr(ctx, dtype, depth - 1, like))
        if kind == "select":
            pred = self.choice(("lt", "le", "gt", "ge", "eq", "ne"))
            lhs, rhs = self.expr(ctx, dtype, 0, like), self.expr(ctx, dtype, 0, like)
            a, b = self.expr(ctx, dtype, depth - 1, like), self.expr(ctx, dtype, depth - 1, like)
            return Select(pred, lhs, rhs, a, b, max(a.bound, b.bound))
        if kind == "if":
            a, b = self.expr(ctx, dtype, depth - 1, like), self.expr(ctx, dtype, depth - 1, like)
            return IfValue(self.condition(ctx), a, b, max(a.bound, b.bound))
        leaf = self.pick([(6, "load"), (2, "const"), (1 if ctx.ivs or self.symbols else 0, "index"),
                          (3 if ctx.accs else 0, "acc")])
        if leaf == "load":
            mem = self.int(0, len(self.mems) - 1)
            return self.convert(Load(mem, self.access(ctx, mem, like)), self.mems[mem].dtype, dtype)
        if leaf == "const":
            return Const(self.int(-3, 3))
        if leaf == "index":
            if ctx.ivs and (not self.symbols or self.coin(70)):
                e = dim(self.choice(ctx.ivs))
                if self.coin(30):
                    e = self.coeff() * e + self.int(-2, 2)
            else:
                e = symbol(self.int(0, len(self.symbols) - 1))
            lo, hi = self.bounds(e)
            return IndexValue(e, max(abs(lo), abs(hi)))
        loop, k, src, bound = self.choice(ctx.accs)
        return self.convert(AccRef(loop, k, bound), src, dtype)


def plan_bytes(opts: Options) -> int:
    """How many drawn bytes one plan under ``opts`` reads."""
    return max(1024, TAPE_BYTES_PER_STATEMENT * opts.max_nests * opts.max_statements)


def plan_from_bytes(data: bytes, opts: Options) -> Program:
    """The plan that ``data`` (:func:`plan_bytes` long) draws under ``opts``."""
    return ProgramGenerator(Tape(data), opts).program()


def plans(opts: Options) -> st.SearchStrategy[Program]:
    """Random program plans under ``opts``."""
    size = plan_bytes(opts)
    return st.binary(min_size=size, max_size=size).map(lambda data: plan_from_bytes(data, opts))
