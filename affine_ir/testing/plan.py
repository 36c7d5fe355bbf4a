"""The plan of a random program: a small tree that the strategies draw and ``build`` turns into IR.

Index expressions in a plan are :class:`AffineExpr` over *global* dims and symbols:
``d<k>`` is the induction variable of the ``k``-th loop created in the program, ``s<j>``
the ``j``-th index argument.  Each loop records the inclusive interval its IV can take
(``Program.dim_ranges[k]``), so :meth:`AffineExpr.bounds` gives every subscript's
interval, and :func:`memref_layout` sizes each memref to cover all of them.

Value expressions carry ``bound``: a proven bound on the magnitude of every value they
can take (see :data:`ELEMENT_BOUND`), which keeps all arithmetic exact in ``f32``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..affine_expr import INDEX_MAX, INDEX_MIN, AffineExpr

__all__ = [
    "ELEMENT_BOUND", "EXPR_LIMIT", "INDEX_MAX", "INDEX_MIN",
    "SYMBOL_RANGE", "VALUE_RANGE", "AccRef", "Bin", "Clamp", "Const", "Convert",
    "If", "IfValue", "IndexValue", "Load", "Loop", "MemSpec", "Program", "Reduction", "ResultRef", "Select",
    "Store", "index_exprs", "memref_layout", "used_symbols", "walk",
]

#: Every index argument (symbol) of a generated ``@kernel`` takes a value in this inclusive range.
SYMBOL_RANGE = (0, 6)
#: Generated input arrays hold integers in this inclusive range.
VALUE_RANGE = (-4, 4)
#: Invariant of generated programs: every memref element stays within ``[-ELEMENT_BOUND, ELEMENT_BOUND]``
#: (a store whose value could leave it is clamped with max/min first).
ELEMENT_BOUND = 16
#: No intermediate value exceeds this magnitude by much (a product that could is turned into a max),
#: so every f32 result is an exactly represented integer (< 2**24).
EXPR_LIMIT = 1 << 16


# ----- value expressions (evaluated in the element type of their context) -----------------------
@dataclass(frozen=True)
class Load:
    """``affine.load mem[subs]`` (subscripts before the layout's shift)."""

    mem: int
    subs: tuple[AffineExpr, ...]
    bound: int = ELEMENT_BOUND


@dataclass(frozen=True)
class Const:
    value: int

    @property
    def bound(self) -> int:
        return abs(self.value)


@dataclass(frozen=True)
class IndexValue:
    """The value of an index expression (``affine.apply`` when not a plain IV/symbol), cast to the element type."""

    expr: AffineExpr
    bound: int


@dataclass(frozen=True)
class Bin:
    """``op(a, b)`` with op in add, sub, mul, max, min."""

    op: str
    a: object
    b: object
    bound: int


@dataclass(frozen=True)
class Select:
    """``select(cmp(pred, lhs, rhs), a, b)`` with pred in lt, le, gt, ge, eq, ne."""

    pred: str
    lhs: object
    rhs: object
    a: object
    b: object
    bound: int


@dataclass(frozen=True)
class Convert:
    """``a`` computed in element type ``src`` and converted (sitofp / fptosi; values are integers)."""

    a: object
    src: str

    @property
    def bound(self) -> int:
        return self.a.bound


@dataclass(frozen=True)
class Clamp:
    """``min(max(a, -ELEMENT_BOUND), ELEMENT_BOUND)``."""

    a: object
    bound: int = ELEMENT_BOUND


@dataclass(frozen=True)
class AccRef:
    """Iter_arg ``k`` of the reduction loop ``loop`` (inside its body)."""

    loop: int
    k: int
    bound: int


@dataclass(frozen=True)
class ResultRef:
    """Result ``k`` of the reduction loop ``loop`` (after it)."""

    loop: int
    k: int
    bound: int


@dataclass(frozen=True)
class IfValue:
    """An ``affine.if`` with one result: ``then`` when ``cond`` holds, else ``else_``."""

    cond: tuple[tuple[AffineExpr, bool], ...]
    then: object
    else_: object
    bound: int


# ----- statements ---------------------------------------------------------------------------------
@dataclass
class Store:
    """``affine.store value, mem[subs]``; ``value`` is computed in the memref's element type."""

    mem: int
    subs: tuple[AffineExpr, ...]
    value: object


@dataclass
class Reduction:
    """Iter_args of a loop: ``acc_k`` starts at ``inits[k]`` and each iteration yields ``ops[k](acc_k, updates[k])``."""

    dtypes: list[str]
    inits: list[object]
    ops: list[str]
    updates: list[object]
    bounds: list[int]


@dataclass
class Loop:
    """``affine.for d<dim> = max(lbs) to min(ubs) step step``; ``id`` names it for Acc/ResultRef."""

    id: int
    dim: int
    lbs: tuple[AffineExpr, ...]
    ubs: tuple[AffineExpr, ...]
    step: int
    body: list = field(default_factory=list)
    reduction: Reduction | None = None


@dataclass
class If:
    """``affine.if`` over constraints ``(expr, is_eq)`` meaning ``expr >= 0`` / ``expr == 0``."""

    cond: tuple[tuple[AffineExpr, bool], ...]
    then: list
    else_: list | None


@dataclass
class MemSpec:
    name: str
    rank: int
    dtype: str


@dataclass
class Program:
    """``same_shape``: pairs of memrefs (same rank and element type) that get one shape, so a
    caller may pass one array for both (aliasing arguments)."""

    mems: list[MemSpec]
    symbols: list[str]
    dim_ranges: list[tuple[int, int]]
    body: list
    same_shape: tuple[tuple[int, int], ...] = ()


# ----- traversal and layout ---------------------------------------------------------------------
def walk(node):
    """``node`` and every statement and value expression nested in it, pre-order."""
    yield node
    if isinstance(node, Store):
        yield from walk(node.value)
    elif isinstance(node, Loop):
        if node.reduction is not None:
            for e in (*node.reduction.inits, *node.reduction.updates):
                yield from walk(e)
        for s in node.body:
            yield from walk(s)
    elif isinstance(node, If):
        for s in (*node.then, *(node.else_ or ())):
            yield from walk(s)
    elif isinstance(node, (Bin, Select, Convert, Clamp, IfValue)):
        for name in ("a", "b", "lhs", "rhs", "then", "else_"):
            child = getattr(node, name, None)
            if child is not None:
                yield from walk(child)


def index_exprs(node) -> list[AffineExpr]:
    """Every affine expression a node uses (subscripts, bounds, conditions, index values)."""
    out: list[AffineExpr] = []
    for n in walk(node):
        if isinstance(n, (Load, Store)):
            out.extend(n.subs)
        elif isinstance(n, Loop):
            out.extend((*n.lbs, *n.ubs))
        elif isinstance(n, (If, IfValue)):
            out.extend(e for e, _ in n.cond)
        elif isinstance(n, IndexValue):
            out.append(n.expr)
    return out


def memref_layout(program: Program) -> dict[int, tuple[tuple[int, ...], tuple[int, ...]]]:
    """``mem -> (shape, offsets)`` for every accessed memref.

    ``offsets[d]`` is the least value subscript ``d`` can take (over the IV ranges and
    :data:`SYMBOL_RANGE`); the built program accesses ``subs[d] - offsets[d]``, which lies in
    ``[0, shape[d])``.  Memrefs that are never accessed are absent.
    """
    sym_ranges = [SYMBOL_RANGE] * len(program.symbols)
    box: dict[int, list[list[int]]] = {}
    for s in program.body:
        for n in walk(s):
            if not isinstance(n, (Load, Store)):
                continue
            cur = box.setdefault(n.mem, [[1 << 30, -(1 << 30)] for _ in n.subs])
            for d, e in enumerate(n.subs):
                lo, hi = e.bounds(program.dim_ranges, sym_ranges)
                cur[d][0] = min(cur[d][0], lo)
                cur[d][1] = max(cur[d][1], hi)
    layout = {m: (tuple(hi - lo + 1 for lo, hi in b), tuple(lo for lo, _ in b)) for m, b in box.items()}
    for a, b in program.same_shape:  # each keeps its offsets; both get the larger extent per dimension
        if a in layout and b in layout:
            shape = tuple(max(x, y) for x, y in zip(layout[a][0], layout[b][0]))
            layout[a], layout[b] = (shape, layout[a][1]), (shape, layout[b][1])
    return layout


def used_symbols(program: Program) -> list[int]:
    """Indices of the symbols the program uses, ascending."""
    used: set[int] = set()
    for s in program.body:
        for e in index_exprs(s):
            used |= e.used_symbols()
    return sorted(used)
