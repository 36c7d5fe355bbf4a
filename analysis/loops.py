"""Loop properties: parallelism, reductions, permutable and perfectly nested bands, trip counts.

All answers come from the exact dependences of :mod:`analysis.dependences` (read-after-read
pairs ignored) of the loop analysed in its context: the IVs of enclosing loops are fixed
and bounded by their loops, symbols range over every value.

- ``is_parallel(loop)``: no dependence is carried by the loop (no two dependent accesses in
  different iterations of it with equal outer IVs), and it has no ``iter_args``; with
  ``allow_reductions=True`` the carried dependences and ``iter_args`` may be reductions.
- A *reduction* is a loop-carried value updated only by one associative and commutative
  op kind: ``iter_args`` whose value flows through a chain of ``arith.addf``/``mulf``/
  ``addi``/``muli``/``maximumf``/``minimumf``/``maxsi``/... into the ``affine.yield``, or a
  memory update ``C[f] = C[f] op ...`` (an ``affine.load`` and ``affine.store`` with the same
  subscript) whose carried dependences are only between that load and store.
- A band of directly nested loops is *permutable* when every dependence not carried
  outside it has non-negative distance on every loop of the band (so any order, and tiling,
  keeps it); only the innermost loop of a band may have ``iter_args``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineLoadOp, AffineStoreOp, AffineYieldOp
from affine_ir.traits import RecursiveMemoryEffects
from affine_ir.types import FloatType

from .dependences import Dependence, dependences
from .isl_bridge import (
    Scop,
    UnsupportedError,
    condition_may_hold,
    constant_index,
    is_scop_root,
    loop_domain_covers_context,
    loop_runs_at_most_once,
)

__all__ = [
    "ParallelDecision", "Reduction", "REDUCTION_OPS", "always_runs", "constant_trip_count", "is_parallel",
    "is_permutable",
    "loop_reductions", "parallel_decision", "perfect_band", "permutable_bands", "reduction_kind",
    "trip_count_expr",
]

# Associative and commutative combining ops and the reduction kind each performs.
# op-name: a registry of MLIR's reduction kinds (arith::AtomicRMWKind spellings) keyed by the op that combines.
REDUCTION_OPS = {f"arith.{k}": k for k in ("addf", "mulf", "addi", "muli", "maximumf", "minimumf", "maxnumf",
                                            "minnumf", "maxsi", "minsi", "maxui", "minui", "andi", "ori", "xori")}


def reduction_identity(kind: str, t) -> float | int:
    """The neutral element of the combining op ``kind`` (a value of :data:`REDUCTION_OPS`) on
    elements of type ``t``: ``-0.0`` for ``addf`` (``x + -0.0`` is ``x`` for every ``x``, ``-0.0``
    included; ``+0.0`` would turn a sum of ``-0.0`` into ``+0.0``), ``-inf`` for ``maximumf``..."""
    if isinstance(t, FloatType):
        return {"addf": -0.0, "mulf": 1.0, "maximumf": float("-inf"), "minimumf": float("inf"),
                "maxnumf": float("-inf"), "minnumf": float("inf")}[kind]
    w = t.width
    return {"addi": 0, "muli": 1, "maxsi": -(1 << (w - 1)), "minsi": (1 << (w - 1)) - 1, "maxui": 0, "minui": -1,
            "andi": -1, "ori": 0, "xori": 0}[kind]


@dataclass(frozen=True)
class Reduction:
    """A reduction carried by a loop: ``kind`` (``"addf"``...), the ``value`` reduced (an
    iter_arg, or a memref), the combining ``ops`` in chain order, and for a memory reduction
    the ``load`` and ``store`` of the accumulated element."""

    kind: str
    value: Value
    ops: tuple[Operation, ...]
    load: Operation | None = None
    store: Operation | None = None

    @property
    def is_memory(self) -> bool:
        return self.store is not None


class ParallelDecision:
    """Whether a loop is parallel and why; unpacks as ``(parallel, reason)``. ``dependence`` is
    the blocking dependence (None when the loop is parallel or iter_args block it)."""

    def __init__(self, parallel: bool, reason: str, dependence: Dependence | None = None,
                 reductions: tuple[Reduction, ...] = ()):
        self.parallel = parallel
        self.reason = reason
        self.dependence = dependence
        self.reductions = reductions

    def __iter__(self):
        return iter((self.parallel, self.reason))

    def __bool__(self) -> bool:
        return self.parallel

    def __repr__(self) -> str:
        return f"ParallelDecision({self.parallel}, {self.reason!r})"


def parallel_decision(loop: Operation, allow_reductions: bool = False,
                      symbols: dict[Value, int] | None = None) -> ParallelDecision:
    """Whether ``loop`` (an affine.for, or every IV of an affine.parallel) carries no dependence,
    with the reason naming the blocking dependence or iter_arg. With ``symbols``, for those
    symbol values only (else for every value)."""
    unknown = _unknown_effects(loop)
    if unknown is not None:
        where = f" at {unknown.location}" if unknown.location else ""
        return ParallelDecision(False, f"'{unknown.name}'{where} has unknown side effects")
    reds: list[Reduction] = []
    for k, arg in enumerate(getattr(loop, "iter_args", [])):
        red = iter_arg_reduction(loop, k)
        if not allow_reductions or red is None:
            what = "is not a reduction" if allow_reductions else "carries a value across iterations"
            return ParallelDecision(False, f"iter_arg {_name(arg)} {what}")
        reds.append(red)
    n = len(loop.induction_vars)
    deps = dependences(loop)
    if symbols:
        deps = [x for x in (d.instantiate(symbols) for d in deps) if x is not None]
    deps = [d for d in deps if any(d.carried_at(k) for k in range(1, n + 1))]
    memory, blocking = _memory_reductions(deps) if allow_reductions else ([], deps[0] if deps else None)
    if blocking is not None:
        return ParallelDecision(False, f"{blocking}", blocking)
    reds += memory
    if reds:
        kinds = ", ".join(f"{r.kind} of {_name(r.value)}" for r in reds)
        return ParallelDecision(True, f"only reductions are carried ({kinds})", None, tuple(reds))
    return ParallelDecision(True, "no dependence is carried")


def _unknown_effects(loop: Operation) -> Operation | None:
    """The first op in ``loop`` whose memory effects are unknown (``memory_effects()`` is None:
    calls, unregistered ops, barriers...): such a loop is never reported parallel, whatever
    memrefs the op uses. Loops and ifs are looked through (their nested ops are visited)."""
    for op in loop.walk():
        if not op.has_trait(RecursiveMemoryEffects) and op.memory_effects() is None:
            return op
    return None


def is_parallel(loop: Operation, allow_reductions: bool = False, symbols: dict[Value, int] | None = None) -> bool:
    """True when no dependence is carried by ``loop`` and it has no iter_args (see module doc);
    with ``symbols``, for those symbol values only."""
    return parallel_decision(loop, allow_reductions, symbols).parallel


def loop_reductions(loop: AffineForOp) -> list[Reduction] | None:
    """The reductions ``loop`` carries, or None when it carries something that is not one
    (an empty list: it carries nothing)."""
    out = []
    for k in range(len(loop.iter_args)):
        red = iter_arg_reduction(loop, k)
        if red is None:
            return None
        out.append(red)
    memory, blocking = _memory_reductions([d for d in dependences(loop) if d.carried_at(1)])
    return None if blocking is not None else out + memory


def reduction_kind(loop: AffineForOp) -> str | None:
    """The kind (``"addf"``, ``"maxsi"``...) when ``loop`` carries only reductions, all of one kind."""
    reds = loop_reductions(loop)
    kinds = {r.kind for r in reds or ()}
    return kinds.pop() if len(kinds) == 1 else None


def iter_arg_reduction(loop: AffineForOp, k: int) -> Reduction | None:
    """The reduction carried in ``loop``'s iter_arg ``k``: the value it yields is the iter_arg
    combined with others by a chain of ops of one kind (:data:`REDUCTION_OPS`), each value used
    once; None otherwise."""
    arg = loop.iter_args[k]
    term = loop.body.terminator
    if not isinstance(term, AffineYieldOp) or k >= len(term.operands):
        return None
    chain = _chain(arg, term.operands[k], loop.body)
    if not chain or len(term.operands[k].uses) != 1:
        return None
    return Reduction(REDUCTION_OPS[chain[0].name], arg, tuple(chain))


def _chain(start: Value, end: Value, block) -> list[Operation] | None:
    """The ops of one reduction kind taking ``start`` to ``end`` in ``block``, each value used once."""
    ops: list[Operation] = []
    v = start
    while v is not end:
        if len(v.uses) != 1:
            return None
        op = v.uses[0].op
        kind = REDUCTION_OPS.get(op.name)
        if op.parent is not block or kind is None or len(op.results) != 1 or \
                sum(o is v for o in op.operands) != 1 or (ops and kind != REDUCTION_OPS[ops[0].name]):
            return None
        ops.append(op)
        v = op.results[0]
    return ops or None


def _memory_reductions(deps: list[Dependence]) -> tuple[list[Reduction], Dependence | None]:
    """The memory reductions explaining the dependences ``deps``, and the first dependence
    that none explains (None when all are explained)."""
    found: dict[Operation, Reduction] = {}
    for d in deps:
        if d.kind == "RAR":
            continue
        store = d.src if isinstance(d.src, AffineStoreOp) else d.dst
        red = found.get(store) or (_memory_reduction(store) if isinstance(store, AffineStoreOp) else None)
        if red is None or not d.exact or {d.src, d.dst} - {red.load, red.store}:
            return list(found.values()), d
        found[store] = red
    return list(found.values()), None


def _memory_reduction(store: AffineStoreOp) -> Reduction | None:
    """``store`` as the end of ``C[f] = C[f] op x op y ...`` (one op kind, each value used once)."""
    v = store.value
    ops: list[Operation] = []
    while True:
        op = v.owner
        if not isinstance(op, Operation) or op.name not in REDUCTION_OPS or len(v.uses) != 1 or \
                op.parent is not store.parent or (ops and op.name != ops[0].name):
            return None
        ops.insert(0, op)
        load = next((o.owner for o in op.operands if isinstance(o.owner, AffineLoadOp) and
                     _same_access(o.owner, store)), None)
        if load is not None:
            if load.parent is not store.parent or len(load.result.uses) != 1:
                return None
            return Reduction(REDUCTION_OPS[op.name], store.memref, tuple(ops), load, store)
        prev = [o for o in op.operands if isinstance(o.owner, Operation) and o.owner.name == op.name]
        if len(prev) != 1:
            return None
        v = prev[0]


def _same_access(load: AffineLoadOp, store: AffineStoreOp) -> bool:
    return load.memref is store.memref and load.map == store.map and \
        all(a is b for a, b in zip(load.indices, store.indices)) and len(load.indices) == len(store.indices)


# -- bands -------------------------------------------------------------------------------------
def perfect_band(loop: AffineForOp) -> list[AffineForOp]:
    """``loop`` and the loops perfectly nested in it: each body holds only the next loop (and
    its ``affine.yield``), as MLIR's ``getPerfectlyNestedLoops``."""
    band = [loop]
    while True:
        ops = [o for o in band[-1].body.ops if not isinstance(o, AffineYieldOp)]
        if len(ops) != 1 or not isinstance(ops[0], AffineForOp):
            return band
        band.append(ops[0])


def is_permutable(band: Sequence[AffineForOp]) -> bool:
    """True when ``band`` (each loop directly inside the previous one) is fully permutable:
    every dependence between accesses under it that is carried inside the band has a
    non-negative distance on each band loop; only the innermost loop may have iter_args."""
    if not band or any(b.parent_op is not a for a, b in zip(band, band[1:])):
        return False
    return _permutable_prefix(band, dependences(band[0])) == len(band)


def permutable_bands(root: Operation) -> list[list[AffineForOp]]:
    """Maximal permutable bands of perfectly nested loops under ``root`` (a function or a loop,
    which is then the first band's outermost loop), outermost first, in walk order; every
    affine.for is in exactly one band."""
    bands: list[list[AffineForOp]] = []

    def take(loop: AffineForOp) -> None:
        chain = perfect_band(loop)
        while chain:
            n = max(1, _permutable_prefix(chain, dependences(chain[0])))
            bands.append(chain[:n])
            chain = chain[n:]
        visit(bands[-1][-1])

    def visit(op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    if isinstance(child, AffineForOp):
                        take(child)
                    else:
                        visit(child)

    if isinstance(root, AffineForOp):
        take(root)
    else:
        visit(root)
    return bands


def _permutable_prefix(chain: Sequence[AffineForOp], deps: list[Dependence]) -> int:
    """How many leading loops of ``chain`` form a permutable band."""
    best = len(chain)
    for k, loop in enumerate(chain[:-1]):
        if loop.iter_args:
            best = min(best, k + 1)
    for d in deps:
        if d.kind == "RAR":
            continue
        for depth, comps in zip(d.depths, d.components):
            for k in range(depth - 1, min(best, len(comps))):
                lo = comps[k][0]
                if lo is None or lo < 0:
                    best = min(best, max(k, 1))
                    break
    return best


# -- trip counts -------------------------------------------------------------------------------
def constant_trip_count(loop: AffineForOp) -> int | None:
    """The number of iterations when it is the same for every execution of ``loop`` (constant
    bounds, or bounds that differ by a constant such as ``%i to %i + 4``), else None."""
    lbs, ubs = _bounds(loop)
    if len(lbs) == 1:
        diffs = [u - lbs[0] for u in ubs]
        if all(e.is_constant for e in diffs):
            return max(0, min(-(-e.constant_value // loop.step) for e in diffs))
    if all(e.is_constant for e in lbs + ubs):
        span = min(e.constant_value for e in ubs) - max(e.constant_value for e in lbs)
        return max(0, -(-span // loop.step))
    return None


def always_runs(loop: AffineForOp, scop: Scop | None = None) -> bool:
    """True when ``loop`` runs at least one iteration every time it is reached: for every
    iteration of the enclosing loops (under their ``affine.if`` guards) and every value of
    the symbols (exact, isl). ``0 to 8`` and ``%ii to min(%ii + 32, 100)`` (under
    ``%ii = 0 to 100 step 32``) always run; ``0 to %N`` does not (``%N`` may be 0). False
    when a bound cannot be modelled. ``scop``: a Scop of the enclosing function to reuse."""
    trips = constant_trip_count(loop)
    if trips is not None:
        return trips > 0
    if scop is None:
        root = loop
        while root.parent_op is not None and not isinstance(root, FuncOp):
            root = root.parent_op
        if not is_scop_root(root):
            return False
        scop = Scop(root, accesses=False)
    try:
        return loop_domain_covers_context(scop, loop)
    except UnsupportedError:
        return False


def runs_at_most_once(loop: AffineForOp) -> bool:
    """True when ``loop`` runs at most one iteration every time it is reached: for every iteration
    of the enclosing loops (under their ``affine.if`` guards) and every value of the symbols (exact,
    isl: the loop's iterations minus the first one of each outer point are empty). ``max(1, %j - 1)
    to min(%N - 1, 2)`` runs at most once; ``0 to %N`` does not. False when a bound cannot be
    modelled. The model is rooted at the outermost loop around ``loop``: values defined above it
    are free parameters (only more points, so a True stays exact)."""
    trips = constant_trip_count(loop)
    if trips is not None:
        return trips <= 1
    try:
        return loop_runs_at_most_once(Scop(_model_root(loop), accesses=False), loop)
    except UnsupportedError:
        return False


def may_hold_at(loop: AffineForOp, condition: IntegerSet, operands: Sequence[Value]) -> bool:
    """Whether ``condition`` over ``operands`` (index values valid at ``loop``) holds where ``loop``
    is reached, for some iteration of the enclosing loops (under their guards) and some symbol
    values (exact, isl, modelled as in :func:`runs_at_most_once`). False only when it never
    holds there; True also when it cannot be modelled."""
    try:
        return condition_may_hold(Scop(_model_root(loop), accesses=False), loop, condition, operands)
    except UnsupportedError:
        return True


def _model_root(loop: AffineForOp) -> Operation:
    """The outermost loop around ``loop`` through loops and ifs (the root of its model)."""
    root: Operation = loop
    while root.parent_op is not None and isinstance(root.parent_op, AffineForOp | AffineIfOp):
        root = root.parent_op
    while not is_scop_root(root):  # an affine.if at the top: model from the op below it
        root = next(a for a in [loop, *loop.ancestors()] if a.parent_op is root)
    return root


def trip_count_expr(loop: AffineForOp) -> tuple[AffineMap, tuple[Value, ...]] | None:
    """``((ub - lb) ceildiv step)`` as a one-result map and its operands, for single-result
    bounds (None otherwise). The value is negative when the loop does not run (``ub < lb``);
    constant operands are folded in."""
    lbs, ubs, dims, syms = _bounds(loop, with_operands=True)
    if len(lbs) != 1 or len(ubs) != 1:
        return None
    e = (ubs[0] - lbs[0]).ceildiv(loop.step)
    used_d, used_s = sorted(e.used_dims()), sorted(e.used_symbols())
    e = e.replace([AffineExpr.dim(used_d.index(k)) if k in used_d else 0 for k in range(len(dims))],
                  [AffineExpr.symbol(used_s.index(k)) if k in used_s else 0 for k in range(len(syms))])
    return AffineMap(len(used_d), len(used_s), (e,)), tuple(dims[k] for k in used_d) + tuple(syms[k] for k in used_s)


def _bounds(loop: AffineForOp, with_operands: bool = False):
    """Lower and upper bound exprs over one operand list (dims, then symbols), constants folded."""
    parts = [(loop.lower_bound_map, loop.lower_bound_operands), (loop.upper_bound_map, loop.upper_bound_operands)]
    dims: list[Value] = []
    syms: list[Value] = []

    def index(lst: list[Value], v: Value) -> int:
        for k, x in enumerate(lst):
            if x is v:
                return k
        lst.append(v)
        return len(lst) - 1

    for m, ops in parts:
        for v in ops[: m.num_dims]:
            if constant_index(v) is None:
                index(dims, v)
    for m, ops in parts:
        for v in ops[m.num_dims :]:
            if constant_index(v) is None and not any(x is v for x in dims):
                index(syms, v)

    def repl(v: Value) -> AffineExpr:
        c = constant_index(v)
        if c is not None:
            return AffineExpr.constant(c)
        if any(x is v for x in dims):
            return AffineExpr.dim(index(dims, v))
        return AffineExpr.symbol(index(syms, v))

    lists = []
    for m, ops in parts:
        r = [repl(v) for v in ops]
        lists.append([e.replace(r[: m.num_dims], r[m.num_dims :]) for e in m.results])
    return (lists[0], lists[1], dims, syms) if with_operands else (lists[0], lists[1])


def _name(v: Value) -> str:
    return f"%{v.name_hint}" if v.name_hint else "%?"
