"""Computation slices for producer-consumer fusion (MLIR's ``ComputationSliceState`` from
``computeSliceUnion``), computed exactly with isl.

For a producer nest ``src`` and a consumer nest ``dst`` in the same block (``src`` first),
:func:`compute_slice` answers: which producer iterations does one iteration of the first
``depth`` loops of ``dst`` need? As in MLIR's producer-consumer strategy, a producer
iteration is needed when one of its stores writes an element that the consumer accesses
(reads: RAW, or writes: WAW) in that consumer iteration -- every such writer, not only the
last, so a reduction in the producer brings its whole reduction loop.

- *Needed* relation: ``{ D[consumer prefix] -> P[producer loop IVs] }``, the union over
  dependent (store, access) pairs of ``access^-1 . store`` restricted to equal values of the
  loops enclosing both nests, projected onto the consumer's first ``depth`` IVs (after the
  common ones) and onto the producer loops enclosing all its dependent stores (the *slice
  loops*; loops below them are kept whole).
- Bounds per slice loop ``p``: isl's exact ``dim_min``/``dim_max`` of ``p`` as functions of
  the consumer prefix IVs and symbols, written as MLIR loop bounds: ``lower_bounds[k]`` is a
  map whose results' ``max`` is the lower bound, ``upper_bounds[k]`` one whose results' ``min``
  is the *exclusive* upper bound (MLIR's ``lbs``/``ubs``). When a bound is piecewise but not a
  max/min of its pieces, one that bounds it is used instead (a piece of it, else the producer
  loop's own range, else a constant; noted in ``notes``) and the slice may be inexact. Map
  operands: the consumer prefix IVs (the loops enclosing both nests first), then the symbols
  used.
- The *box*: ``{ D[x] -> P[p] : lb(x) <= p < ub(x), p = lb(x) + step * e }`` over the executed
  consumer prefix iterations: what a fused nest whose slice loops take these bounds runs. It
  always contains the needed relation (checked); ``is_exact``: it equals it;
  ``is_valid``: every box point is a producer iteration (MLIR's ``isSliceValid``);
  ``is_maximal``: every consumer prefix iteration gets the whole producer (MLIR's
  ``isMaximal``).
- ``num_src_iterations``: box points per consumer prefix iteration (an int when constant, an
  AffineMap of the prefix IVs and symbols when affine, else None).
- ``computation_ratio = slice_iterations / src_iterations - 1`` where ``slice_iterations`` is
  the number of box points over all consumer prefix iterations (= ``num_src_iterations`` x
  consumer prefix iterations when constant; only the points in the producer's domain when the
  box leaves it: a fused nest clamps the slice loops to the producer's bounds) and
  ``src_iterations`` the producer's slice-loop iterations: the redundant computation MLIR
  compares with ``compute-tolerance`` (``isFusionProfitable``). Symbols take their values from ``symbol_values``, else
  ``DEFAULT_SYMBOL_VALUE`` (1024, as the cost model; noted in ``notes``); None when a set is
  unbounded or too large to count.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import islpy as isl

from affine_ir import AffineExpr, AffineMap, Operation, Value
from affine_ir.interfaces import LoopLikeOpInterface
from affine_ir.traits import IsTerminator

from .isl_bridge import (
    LoopInfo,
    Scop,
    UnsupportedError,
    enclosing_loops,
    expr_to_isl,
    op_domain,
    statements_under,
)
from .isl_results import (
    BudgetExceeded,
    aff_bounds_pw,
    affs_to_exprs,
    compact_symbols,
    count_points,
    distinct_affs,
    fix_params,
    integral_pw_aff,
    isl_budget,
    pw_aff_as_extremum,
    val_to_int,
)
from .nest_model import DEFAULT_SYMBOL_VALUE
from .regions import enclosing_root, op_label, value_label

__all__ = ["ComputationSlice", "SliceError", "SliceErrorKind", "compute_slice", "nest_work"]

_DT = isl.dim_type
# isl operations allowed for one slice (and again for its counts): past it, SliceError (counts None).
SLICE_BUDGET = 3_000_000


class SliceErrorKind(enum.Enum):
    """What kind of reason there is no slice (:attr:`SliceError.kind`): callers decide on it,
    never on the wording of the message."""

    NO_DEPENDENCE = "no-dependence"  #: the producer writes nothing the consumer accesses (at any depth)
    DEPTH_EXCEEDS = "depth-exceeds"  #: fewer consumer loops enclose the accesses than the depth (deeper too)
    INVALID_REQUEST = "invalid-request"  #: not two loops of one block in order, or a depth below 1
    NO_PRODUCER_LOOP = "no-producer-loop"  #: no producer loop encloses all its accesses
    NOT_AFFINE = "not-affine"  #: an access or a loop bound that is not affine
    BOUNDS = "bounds"  #: the slice bounds cannot be written as affine loop bounds covering what is needed
    TOO_COMPLEX = "too-complex"  #: isl's operation budget ran out
    CUTS_CARRIED_LOOP = "cuts-carried-loop"  #: the slice runs part of a loop that carries values (iter_args)


class SliceError(Exception):
    """No slice: no dependence between the nests, an unsupported construct, or bounds that
    cannot be written as affine loop bounds. ``reason`` says which, for people; ``kind``
    (a :class:`SliceErrorKind`) says which, for decisions."""

    def __init__(self, reason: str, kind: SliceErrorKind):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


@dataclass
class ComputationSlice:
    """The producer iterations one consumer prefix iteration needs (see the module docstring)."""

    src_nest: Operation
    dst_nest: Operation
    depth: int
    src_loops: list[LoopInfo]  # the slice loops, outermost first
    dst_loops: list[LoopInfo]  # the loops enclosing both nests, then the consumer's first ``depth``
    lower_bounds: list[AffineMap]  # per slice loop: max of results
    upper_bounds: list[AffineMap]  # per slice loop: min of results, exclusive
    operands: list[Value]  # common IVs, consumer prefix IVs, then symbols
    memrefs: list[Value]  # memrefs carrying the dependences
    is_exact: bool
    is_valid: bool
    is_maximal: bool
    num_src_iterations: int | AffineMap | None
    slice_iterations: int | None
    src_iterations: int | None
    dst_iterations: int | None  # consumer prefix iterations
    computation_ratio: float | None
    notes: list[str] = field(default_factory=list)
    needed: isl.Map | None = field(default=None, repr=False, compare=False)
    box: isl.Map | None = field(default=None, repr=False, compare=False)
    _domains: tuple | None = field(default=None, repr=False, compare=False)  # (prefix, producer, per)
    src_work: int | None = None  # ops the whole producer nest executes (None: unknown)
    dst_work: int | None = None  # ops the whole consumer nest executes

    @property
    def src_ivs(self) -> list[Value]:
        return [lp.iv for lp in self.src_loops]

    @property
    def dst_ivs(self) -> list[Value]:
        return [lp.iv for lp in self.dst_loops]

    @property
    def lb_operands(self) -> list[Value]:
        return self.operands

    @property
    def ub_operands(self) -> list[Value]:
        return self.operands

    @property
    def insertion_loop(self) -> Operation:
        """The consumer loop whose body receives the slice (at its start, for a backward slice)."""
        return self.dst_loops[-1].op

    def bounds_at(self, values: dict[Value, int]) -> list[tuple[int, int]]:
        """Per slice loop ``[lb, ub)`` at concrete consumer prefix IVs and symbols."""
        args = [values[v] for v in self.operands]
        out = []
        for lb, ub in zip(self.lower_bounds, self.upper_bounds):
            n = lb.num_dims
            out.append((max(lb.evaluate(args[:n], args[n:])), min(ub.evaluate(args[:n], args[n:]))))
        return out

    def __str__(self) -> str:
        n = self.lower_bounds[0].num_dims if self.lower_bounds else 0
        dn = [value_label(v) for v in self.operands[:n]]
        sn = [value_label(v) for v in self.operands[n:]]

        def bound(m: AffineMap, kind: str) -> str:
            texts = [e.to_str(dn, sn) for e in m.results]
            return texts[0] if len(texts) == 1 else f"{kind}({', '.join(texts)})"

        loops = ", ".join(f"{value_label(lp.iv)} in [{bound(lb, 'max')}, {bound(ub, 'min')})"
                          for lp, lb, ub in zip(self.src_loops, self.lower_bounds, self.upper_bounds))
        it = self.num_src_iterations
        per = "?" if it is None else str(it) if isinstance(it, int) else it.results[0].to_str(dn, sn)
        ratio = "?" if self.computation_ratio is None else f"{self.computation_ratio:.2f}"
        flags = [w for w, ok in (("exact", self.is_exact), ("maximal", self.is_maximal)) if ok]
        if not self.is_valid:
            flags.append("INVALID (leaves the producer's domain)")
        mems = ", ".join(value_label(m) for m in self.memrefs)
        plural = "" if it == 1 else "s"
        return (f"slice of {op_label(self.src_nest)} in {op_label(self.dst_nest)} at depth {self.depth} "
                f"(through {mems}): {loops}; {per} iteration{plural} per consumer iteration, computation ratio "
                f"{ratio}{'; ' + ', '.join(flags) if flags else ''}")


def compute_slice(src_nest: Operation, dst_nest: Operation, depth: int, *, scop: Scop | None = None,
                  symbol_values: dict[Value, int] | None = None, max_src_loops: int | None = None) -> ComputationSlice:
    """The backward slice of producer ``src_nest`` needed by one iteration of the first
    ``depth`` loops of consumer ``dst_nest`` (both loops in one block, ``src_nest`` first).

    Guarantees: the bounds' box contains every producer iteration that writes an element the
    consumer accesses in that prefix iteration; ``is_exact`` / ``is_valid`` / ``is_maximal``
    are decided exactly by isl. ``symbol_values`` fixes symbols for the iteration counts.
    Raises :class:`SliceError` with the reason when there is no slice.

    Example: producer ``B[%i] = ...`` (``%i`` in [0, 10)), consumer ``%j`` in [1, 9) reading
    ``B[%j - 1], B[%j], B[%j + 1]``, depth 1: ``%i in [%j - 1, %j + 2)``, 3 iterations per
    consumer iteration, ratio 24 / 10 - 1 = 1.4, exact.

    ``max_src_loops`` caps the slice loops at the producer's outermost ones (fusion uses the
    loops enclosing all of the producer's ops, so that the slice is a whole producer iteration).
    """
    _check_nests(src_nest, dst_nest, depth)
    root = enclosing_root(src_nest)
    if scop is None or scop.root is not root:
        scop = Scop(root)
    common, _ = enclosing_loops(src_nest, root, include_self=False)
    try:
        with isl_budget(SLICE_BUDGET):
            s = _slice(scop, src_nest, dst_nest, depth, common, max_src_loops)
    except BudgetExceeded:
        raise SliceError(f"the dependences between {op_label(src_nest)} and {op_label(dst_nest)} are too "
                         f"complex for isl's operation budget ({SLICE_BUDGET})", SliceErrorKind.TOO_COMPLEX) from None
    try:
        with isl_budget(SLICE_BUDGET):
            counts = _counts(s, scop, symbol_values)
    except BudgetExceeded:
        counts = (None, None, None)
    try:
        with isl_budget(SLICE_BUDGET):
            s.src_work, s.dst_work = (nest_work(n, scop, symbol_values) for n in (src_nest, dst_nest))
    except (BudgetExceeded, UnsupportedError):
        pass
    s.slice_iterations, s.src_iterations, s.dst_iterations = counts
    if counts[0] is not None and counts[1]:
        s.computation_ratio = counts[0] / counts[1] - 1
    return s


def _slice(scop: Scop, src_nest: Operation, dst_nest: Operation, depth: int,
           common: list[LoopInfo], max_src_loops: int | None = None) -> ComputationSlice:
    nc = len(common)
    deps = _dependences(scop, src_nest, dst_nest, nc)
    dst_chain = _common_loops([b for _, b, _ in deps])[nc:]
    src_chain = _common_loops([a for a, _, _ in deps])[nc:]
    if max_src_loops is not None:
        if max_src_loops < 1:
            raise SliceError(f"the producer {op_label(src_nest)} has no loop enclosing all its accesses",
                             SliceErrorKind.NO_PRODUCER_LOOP)
        src_chain = src_chain[:max_src_loops]
    if depth > len(dst_chain):
        raise SliceError(f"depth {depth} exceeds the {len(dst_chain)} consumer loops enclosing all accesses "
                         f"that depend on {op_label(src_nest)}", SliceErrorKind.DEPTH_EXCEEDS)
    npre, nsrc = nc + depth, len(src_chain)
    needed = None
    for _, _, rel in deps:
        rel = rel.project_out(_DT.in_, npre, rel.dim(_DT.in_) - npre)
        rel = rel.project_out(_DT.out, nc + nsrc, rel.dim(_DT.out) - nc - nsrc).project_out(_DT.out, 0, nc)
        rel = rel.set_tuple_name(_DT.in_, "D").set_tuple_name(_DT.out, "P")
        needed = rel if needed is None else needed.union(rel)
    needed = needed.coalesce()
    try:
        pre_dom = _prefix(op_domain(scop, dst_chain[depth - 1].op), npre, "D")
        src_dom = _prefix(op_domain(scop, src_chain[-1].op), nc + nsrc, "L")
    except UnsupportedError as e:
        raise SliceError(f"non-affine loop bounds: {e}", SliceErrorKind.NOT_AFFINE) from None
    src_rel = _src_relation(pre_dom, src_dom, nc)
    steps = [_step(lp) for lp in src_chain]
    for use_pieces in (True, False):
        notes: list[str] = []
        lowers, uppers = _bounds(needed, src_rel, src_chain, notes, npre, scop, use_pieces)
        box = _box(lowers, uppers, steps, scop, npre).intersect_domain(pre_dom)
        if needed.is_subset(box):
            break
    else:
        strided = ", ".join(value_label(lp.iv) for lp, s in zip(src_chain, steps) if s != 1)
        raise SliceError(f"the slice bounds cannot cover the needed producer iterations: the iterations of "
                         f"strided {strided} are not aligned with a bound of the consumer IVs and symbols",
                         SliceErrorKind.BOUNDS)
    _check_carried_loops(box, src_rel, src_chain)
    per = _per_iteration(box, src_chain, npre, scop)
    extra = [[per]] if isinstance(per, AffineExpr) else []
    maps, syms = compact_symbols(lowers + uppers + extra, npre, scop)
    s = ComputationSlice(src_nest, dst_nest, depth, src_chain, (common + dst_chain)[:npre], maps[:nsrc],
                         maps[nsrc : 2 * nsrc], [lp.iv for lp in (common + dst_chain[:depth])] + syms,
                         _unique([a.memref for a, _, _ in deps]), box.is_subset(needed), box.is_subset(src_rel),
                         src_rel.is_subset(box), maps[-1] if extra else per, None, None, None, None, notes,
                         needed, box)
    s._domains = (pre_dom, src_dom, per)
    return s


def _check_carried_loops(box: isl.Map, src_rel: isl.Map, src_chain: list[LoopInfo]) -> None:
    """SliceError when the slice ``box`` runs only part of a producer loop that carries values
    from one iteration to the next (iter_args, reductions of an affine.parallel): the values the
    slice's iterations start from would be the loop's initial ones, not those of the iterations
    left out. A loop the slice runs whole (for each value of the loops around it) is fine."""
    nsrc = len(src_chain)
    for k, lp in enumerate(src_chain):
        if not lp.op.results or not _carried_values_matter(lp.op):
            continue
        box_k = box.project_out(_DT.out, k + 1, nsrc - k - 1)
        outer = box.project_out(_DT.out, k, nsrc - k).insert_dims(_DT.out, k, 1)
        whole = src_rel.project_out(_DT.out, k + 1, nsrc - k - 1).intersect(outer)
        if not whole.is_subset(box_k):
            raise SliceError(f"the slice would run part of {value_label(lp.iv)}, which carries values from one "
                             f"iteration to the next ({len(lp.op.results)} loop result(s)): its slice iterations "
                             f"would start from the initial values", SliceErrorKind.CUTS_CARRIED_LOOP)


def _carried_values_matter(loop: Operation) -> bool:
    """Whether what ``loop`` carries from one iteration to the next reaches anything a slice keeps:
    its results are used, or an op with memory effects (a store) in its body uses a value computed
    from its iter_args. (A carried value that only feeds an unused result does not.)"""
    if any(r.uses for r in loop.results):
        return True
    body = loop.regions[0].blocks[0]
    ivs = set(loop.induction_vars)
    tainted = {a for a in body.args if a not in ivs}
    for op in loop.walk():
        if op is loop:
            continue
        if any(v in tainted for v in op.operands):
            if op.memory_effects() != () and not op.has_trait(IsTerminator):
                return True
            tainted.update(op.results)
            for region in op.regions:
                for b in region.blocks:
                    tainted.update(b.args)
    return False


def _bounds(needed: isl.Map, src_rel: isl.Map, src_chain: list[LoopInfo], notes: list[str], npre: int,
            scop: Scop, use_pieces: bool) -> tuple[list[list[AffineExpr]], list[list[AffineExpr]]]:
    """Per slice loop, the lower (max of) and exclusive upper (min of) bound expressions."""
    ctx = needed.domain()
    lowers, uppers = [], []
    for k, lp in enumerate(src_chain):
        lo, hi = needed.dim_min(k).floor(), needed.dim_max(k).floor()
        whole_lo = functools.partial(_whole_bound, src_rel, k, "max")
        whole_hi = functools.partial(_whole_bound, src_rel, k, "min")
        lowers.append(_bound(lo, ctx, "max", whole_lo, lp, notes, npre, scop, use_pieces))
        uppers.append([e + 1 for e in _bound(hi, ctx, "min", whole_hi, lp, notes, npre, scop, use_pieces)])
    return lowers, uppers


def _whole_bound(src_rel: isl.Map, k: int, kind: str) -> isl.PwAff:
    """The range of producer loop ``k`` over the producer's domain (per consumer prefix): its
    least value for ``kind`` "max" (a lower bound), its greatest for "min". Computed only when
    a slice bound needs it: on tiled nests with symbolic ``min`` bounds isl takes minutes."""
    return (src_rel.dim_min(k) if kind == "max" else src_rel.dim_max(k)).floor()


def _dependences(scop: Scop, src_nest: Operation, dst_nest: Operation, nc: int) -> list:
    """(producer store, consumer access, ``{consumer iteration -> producer iteration}`` on the
    same element at equal common IVs) for each dependent pair; SliceError when there is none
    or an access is not affine."""
    src_stmts = [s for s in statements_under(scop, src_nest) if s.is_write]
    dst_stmts = statements_under(scop, dst_nest)
    pairs = [(a, b) for a in src_stmts for b in dst_stmts if a.memref is b.memref]
    if not pairs:
        raise SliceError(f"no dependence: {op_label(src_nest)} writes no memref that {op_label(dst_nest)} accesses",
                         SliceErrorKind.NO_DEPENDENCE)
    for s in (x for p in pairs for x in p):  # the first one that is not affine, in pair order
        if not s.is_affine or s.in_unknown_region:
            raise SliceError(f"'{s.op.name}' on {value_label(s.memref)} is not an affine access in an affine nest",
                             SliceErrorKind.NOT_AFFINE)
    deps = []
    for a, b in pairs:
        rel = b.access.apply_range(a.access.reverse())
        for k in range(nc):
            rel = rel.equate(_DT.in_, k, _DT.out, k)
        if not rel.is_empty():
            deps.append((a, b, rel))
    if not deps:
        mems = ", ".join(sorted({value_label(a.memref) for a, _ in pairs}))
        raise SliceError(f"no dependence: the elements of {mems} that {op_label(src_nest)} writes are not "
                         f"accessed by {op_label(dst_nest)}", SliceErrorKind.NO_DEPENDENCE)
    return deps


def _check_nests(src: Operation, dst: Operation, depth: int) -> None:
    if not isinstance(src, LoopLikeOpInterface) or not isinstance(dst, LoopLikeOpInterface):
        raise SliceError("both nests must be affine loops", SliceErrorKind.INVALID_REQUEST)
    if src is dst or src.parent is None or src.parent is not dst.parent:
        raise SliceError(f"{op_label(src)} and {op_label(dst)} are not two loops of one block",
                         SliceErrorKind.INVALID_REQUEST)
    block = src.parent
    if block.index_of(src) > block.index_of(dst):
        raise SliceError(f"the producer {op_label(src)} does not precede the consumer {op_label(dst)}",
                         SliceErrorKind.INVALID_REQUEST)
    if depth < 1:
        raise SliceError(f"depth must be at least 1, got {depth}", SliceErrorKind.INVALID_REQUEST)


def _common_loops(stmts) -> list[LoopInfo]:
    """The loops enclosing all of ``stmts`` (outermost first)."""
    out = list(stmts[0].loops)
    for s in stmts[1:]:
        n = 0
        while n < min(len(out), len(s.loops)) and out[n].op is s.loops[n].op and out[n].index == s.loops[n].index:
            n += 1
        out = out[:n]
    return out


def _prefix(s: isl.Set, n: int, name: str) -> isl.Set:
    return s.project_out(_DT.set, n, s.dim(_DT.set) - n).set_tuple_name(name)


def _step(lp: LoopInfo) -> int:
    return lp.op.steps[lp.index]


def _bound(pw: isl.PwAff, ctx: isl.Set, kind: str, whole: Callable[[], isl.PwAff], lp: LoopInfo,
           notes: list[str], npre: int, scop: Scop, use_pieces: bool = True) -> list[AffineExpr]:
    """Expressions whose ``kind`` (max for lower, min for upper) is ``pw`` on ``ctx``; else
    one that bounds it: a piece of it, the producer loop's own bound ``whole()`` (its range
    over the producer's domain), a constant; each approximation noted in ``notes``."""
    what = "lower" if kind == "max" else "upper"
    try:
        exact = pw_aff_as_extremum(pw, ctx, kind)
        if exact is not None:
            return affs_to_exprs(exact, npre, scop)
        for aff in distinct_affs(pw) if use_pieces else []:
            if aff_bounds_pw(aff, pw, ctx, kind):
                notes.append(f"{what} bound of {value_label(lp.iv)} over-approximated by one piece of {pw}")
                return affs_to_exprs([aff], npre, scop)
        whole_pw = whole()
        full = pw_aff_as_extremum(whole_pw, whole_pw.domain(), kind)
        if full is not None:
            notes.append(f"{what} bound of {value_label(lp.iv)}: the producer loop's own")
            return affs_to_exprs(full, npre, scop)
    except UnsupportedError as e:
        raise SliceError(f"the bound of {value_label(lp.iv)} is not affine: {e}", SliceErrorKind.NOT_AFFINE) from None
    val = integral_pw_aff(pw).min_val() if kind == "max" else integral_pw_aff(pw).max_val()
    if val.is_int():
        notes.append(f"{what} bound of {value_label(lp.iv)} over-approximated by the constant {val_to_int(val)}")
        return [AffineExpr.constant(val_to_int(val))]
    raise SliceError(f"the {what} bound of {value_label(lp.iv)} in the slice, {pw}, is not a {kind} of affine "
                     f"functions of the consumer IVs and symbols", SliceErrorKind.BOUNDS)


def _box(lowers: list[list[AffineExpr]], uppers: list[list[AffineExpr]], steps: list[int], scop: Scop,
         npre: int) -> isl.Map:
    """``{ D[d..] -> P[p..] : max(lower) <= p < min(upper), p - max(lower) divisible by step }``
    (expressions over the prefix dims and the Scop's parameters as symbols)."""
    dn = [f"d{k}" for k in range(npre)]
    sn = [n for n, _ in scop.params.values()]
    cons = []
    for k, (lower, upper, step) in enumerate(zip(lowers, uppers, steps)):
        p = f"p{k}"
        los = [expr_to_isl(e, dn, sn) for e in lower]
        cons += [f"{p} >= {x}" for x in los] + [f"{p} < {expr_to_isl(e, dn, sn)}" for e in upper]
        if step != 1:
            alts = [" and ".join([f"exists (e{k} : {p} = {x} + {step} * e{k})"] +
                                 [f"{x} >= {y}" for j, y in enumerate(los) if j != r])
                    for r, x in enumerate(los)]
            cons.append("(" + " or ".join(f"({a})" for a in alts) + ")")
    ps = ", ".join(f"p{k}" for k in range(len(lowers)))
    body = " and ".join(f"({c})" for c in cons) or "true"
    return isl.Map(f"{scop._param_prefix()}{{ D[{', '.join(dn)}] -> P[{ps}] : {body} }}")


def _src_relation(pre_dom: isl.Set, src_dom: isl.Set, nc: int) -> isl.Map:
    """``{ D[c, x] -> P[p] : [c, x] executed, [c, p] a producer iteration }``."""
    rel = isl.Map.from_domain_and_range(pre_dom, src_dom)
    for k in range(nc):
        rel = rel.equate(_DT.in_, k, _DT.out, k)
    return rel.project_out(_DT.out, 0, nc).set_tuple_name(_DT.out, "P")


def _per_iteration(box: isl.Map, src_chain: list[LoopInfo], npre: int, scop: Scop) -> int | AffineExpr | None:
    """Box points per consumer prefix iteration (among those with a non-empty box): an int
    when constant, an expression of the prefix dims and the Scop's symbols when affine."""
    if box.is_empty():
        return 0
    const, varying = 1, []
    for k, lp in enumerate(src_chain):
        step = isl.Val.int_from_si(box.get_ctx(), _step(lp))
        trips = integral_pw_aff((box.dim_max(k) - box.dim_min(k)).scale_down_val(step).floor() + 1)
        lo, hi = trips.min_val(), trips.max_val()
        if lo.is_int() and hi.is_int() and val_to_int(lo) == val_to_int(hi):
            const *= val_to_int(lo)
            continue
        single = pw_aff_as_extremum(trips, box.domain(), "max")
        if single is None or len(single) != 1:
            return None
        varying.append(single[0])
    if len(varying) > 1:
        return None
    if not varying:
        return const
    try:
        return affs_to_exprs(varying, npre, scop)[0] * const
    except UnsupportedError:
        return None


def _counts(s: ComputationSlice, scop: Scop,
            symbol_values: dict[Value, int] | None) -> tuple[int | None, int | None, int | None]:
    """(slice iterations over all consumer prefix iterations, producer iterations, consumer
    prefix iterations), each None when unknown (unbounded or too big to count). Symbols
    without a value in ``symbol_values`` take :data:`DEFAULT_SYMBOL_VALUE` (noted)."""
    pre_dom, src_dom, per = s._domains
    values = symbol_values or {}
    fixed = dict(symbol_values or {})
    for name, v in scop.params.values():
        if v in values:
            continue
        for x in (pre_dom, src_dom, s.box):
            pos = x.find_dim_by_name(_DT.param, name)
            if pos >= 0 and x.involves_dims(_DT.param, pos, 1):
                fixed[v] = DEFAULT_SYMBOL_VALUE
                s.notes.append(f"counted with symbol {value_label(v)} = {DEFAULT_SYMBOL_VALUE} "
                               f"(default; pass symbol_values)")
                break

    def count(x):
        x = fix_params(x, scop, fixed)
        return None if x is None else count_points(x)

    if not s.is_valid:  # what a fused nest runs: the box clamped to the producer's iterations
        total = count(s.box.intersect(_src_relation(pre_dom, src_dom, len(s.dst_loops) - s.depth)).wrap())
    elif isinstance(per, int):
        n_dom = count(s.box.domain())
        total = None if n_dom is None else per * n_dom
    else:
        total = count(s.box.wrap())
    return total, count(src_dom), count(pre_dom)


def nest_work(nest: Operation, scop: Scop, symbol_values: dict[Value, int] | None = None) -> int | None:
    """The ops ``nest`` executes (MLIR's compute cost: each op other than loops and terminators
    counts once per run), exact from isl's iteration counts, symbols fixed by ``symbol_values``
    (else :data:`DEFAULT_SYMBOL_VALUE`); None when a count is unbounded or too large."""
    per_loop: dict[Operation, int] = {}
    for op in nest.walk():
        if op.regions or op.has_trait(IsTerminator):
            continue
        loop = op.parent_op
        while loop is not None and not isinstance(loop, LoopLikeOpInterface):
            loop = loop.parent_op
        if loop is not None and (loop is nest or nest.is_ancestor_of(loop)):
            per_loop[loop] = per_loop.get(loop, 0) + 1
    fixed = {v: DEFAULT_SYMBOL_VALUE for _, v in scop.params.values()} | dict(symbol_values or {})
    total = 0
    for loop, ops in per_loop.items():
        dom = fix_params(op_domain(scop, loop), scop, fixed)
        n = None if dom is None else count_points(dom)
        if n is None:
            return None
        total += n * ops
    return total


def _unique(values: list[Value]) -> list[Value]:
    out: list[Value] = []
    for v in values:
        if all(v is not w for w in out):
            out.append(v)
    return out
