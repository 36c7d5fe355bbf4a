"""Slicing-based loop fusion: ``affine-loop-fusion`` (producer-consumer and sibling).

**Producer-consumer** (:func:`fuse_loops`): a top-level producer nest that stores what a later
consumer nest loads is computed inside the consumer, at the start of an iteration of its
first ``d`` loops, for the producer iterations that iteration needs (the computation slice,
:func:`analysis.compute_slice`, exact with isl). For each depth ``d`` the fusion is

- *legal* when :func:`analysis.check_fusion` finds no dependence reversed: every producer
  iteration running once keeps each WAR/WAW order with the consumer and among producer
  iterations; producer iterations that run more than once (a slice shared by several
  consumer iterations, or the producer kept as well) must store the same values each time
  (no dependences between producer iterations, no consumer write to what the producer
  accesses). Nests between the two must not depend on the producer (the fused nest goes
  where the consumer is), or the consumer on them (it goes where the producer was);
- *without the producer* when every producer iteration runs in some slice, or what the
  others store is never read (local buffers only the two nests use); otherwise the
  producer stays and its slices are extra work;
- *profitable* when the extra computation (:func:`extra_computation`, MLIR's
  ``additionalComputeFraction``: the work after fusion over the work of producer *and*
  consumer before, minus one) is within ``compute-tolerance`` (0.30 as MLIR);
  among profitable depths the least redundant, then the deepest, wins (``maximal``: the
  deepest legal depth).

After fusion an intermediate that only the fused nest uses gets a private buffer of one
iteration's footprint (:mod:`.fuse_private`): ``memref<1xf32>`` for a point slice.

**Sibling** (:func:`fuse_siblings`): two nests reading the same memref with no dependence
between them (none direct, none through the nests in between), whose outer loops have
identical bounds, merge loop by loop so the loads are shared. Always legal: no iteration of
one depends on the other.

Every candidate pair gets a decision in the trace (fused at depth d with the slice, or the
reason it was not). Where MLIR gives up (symbolic sizes) the exact slices work unchanged.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import analysis
from affine_ir import AffineWriteOpInterface, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp
from analysis import ComputationSlice, DependenceGraph, SliceError, SliceErrorKind

from ..cleanup.canonicalize import compose_affine_maps
from ..errors import RefusalKind, TransformError
from ..loop_utils import at_location, depends_on, enclosing_function, loop_name, parse_memory_space, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .fuse_common import (
    PASS,
    DepthRefusal,
    FusionResult,
    between,
    check_pair,
    edge_text,
    nest_name,
    only_inner_loop,
    refuse,
)
from .fuse_private import PrivateBuffer, private_candidates, private_candidates_kept, privatize
from .fuse_sibling import fuse_siblings
from .fuse_slice import insert_slice

__all__ = ["FusionCandidate", "FusionResult", "LoopFusion", "extra_computation", "fuse_loops", "fuse_siblings",
           "fusion_candidates", "fusion_refusals"]

DEFAULT_TOLERANCE = 0.30


@dataclass
class FusionCandidate:
    """Fusion at one depth: the slice, whether the producer goes, the extra computation."""

    depth: int
    slice: ComputationSlice
    remove_producer: bool
    redundancy: float | None  # extra computation relative to the work of both nests, None when unknown

    def redundancy_text(self) -> str:
        return "unknown" if self.redundancy is None else f"{self.redundancy:.0%}"

    def work_text(self) -> str:
        """Both figures behind the extra computation: the producer's and the consumer's work."""
        s = self.slice
        return f"producer {s.src_work if s.src_work is not None else '?'} ops, " \
               f"consumer {s.dst_work if s.dst_work is not None else '?'} ops"


def extra_computation(s: ComputationSlice, remove_producer: bool) -> float | None:
    """MLIR's ``additionalComputeFraction``: the work after fusion (the slices, at the producer's
    work per iteration, inside the consumer; plus the producer itself when it stays) over the
    work of producer and consumer before, minus one; None when a count is unknown. A cheap
    producer recomputed under a long consumer body costs little (``T[i] + T[i+1]`` readers)."""
    if s.slice_iterations is None or not s.src_iterations or s.src_work is None or s.dst_work is None:
        return None
    before = s.src_work + s.dst_work
    if before == 0:
        return 0.0
    after = s.slice_iterations * s.src_work / s.src_iterations + s.dst_work + (0 if remove_producer else s.src_work)
    return max(0.0, after / before - 1.0)


def producer_loop_count(nest: AffineForOp) -> int:
    """The loops of ``nest`` enclosing all its ops: the perfectly nested outer loops, counting
    the innermost one whatever its body holds."""
    n, loop = 1, nest
    while (inner := only_inner_loop(loop)) is not None:
        n, loop = n + 1, inner
    return n


def _placement(graph: DependenceGraph, src: Operation, dst: Operation) -> str:
    """Where the fused nest can go: "dst" (the consumer stays), "src" (the consumer moves up
    next to the producer); TransformError naming the nest in between that forbids both."""
    nodes = between(graph, src, dst)
    forward = [e for n in nodes for e in graph.edges_between(src, n) if e.kind != "SSA"]
    if not forward:
        return "dst"
    backward = [e for n in nodes for e in graph.edges_between(n, dst)]
    if backward:
        raise refuse(src, dst, f"a nest between them depends on the producer ({edge_text(graph, forward[0])}) "
                                f"and the consumer depends on one between them ({edge_text(graph, backward[0])})",
                     RefusalKind.DEPENDENCE)
    body = dst.parent
    first = body.index_of(src)
    for op in dst.walk():
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent is body and first < body.index_of(owner) \
                    < body.index_of(dst):
                raise refuse(src, dst, f"a nest between them depends on the producer "
                                        f"({edge_text(graph, forward[0])}) and the consumer uses "
                                        f"{value_name(v)}, defined between them", RefusalKind.DEPENDENCE)
    return "src"


def _written_memrefs(graph: DependenceGraph, op: Operation) -> list[Value]:
    node = graph.node(op)
    return [m for m in node.memrefs if node.stores_of(m)]


#: The refusal kind of each slice failure (any other: UNSUPPORTED).
SLICE_REFUSAL_KINDS = {SliceErrorKind.NO_DEPENDENCE: RefusalKind.NO_DEPENDENCE,
                       SliceErrorKind.DEPTH_EXCEEDS: RefusalKind.DEPTH_EXCEEDS,
                       SliceErrorKind.INVALID_REQUEST: RefusalKind.INVALID_REQUEST,
                       SliceErrorKind.CUTS_CARRIED_LOOP: RefusalKind.DEPENDENCE}


def _candidate(graph, scop, src, dst, depth) -> FusionCandidate | DepthRefusal:
    try:
        s = analysis.compute_slice(src, dst, depth, scop=scop, max_src_loops=producer_loop_count(src),
                                   symbol_values=_symbol_values(src))
        check = analysis.check_fusion(s, scop)
    except SliceError as e:
        return DepthRefusal(SLICE_REFUSAL_KINDS.get(e.kind, RefusalKind.UNSUPPORTED), e.reason)
    for lp in (*s.src_loops, *s.dst_loops):
        if not isinstance(lp.op, AffineForOp):
            return DepthRefusal(RefusalKind.UNSUPPORTED, f"'{lp.op.name}'{at_location(lp.op)} is not an affine.for")
    if check.structure_violation:
        return DepthRefusal(RefusalKind.UNSUPPORTED, check.structure_violation)
    strided = [lp for lp in s.src_loops if lp.op.step != 1]
    if not s.is_valid and strided:
        return DepthRefusal(RefusalKind.UNSUPPORTED,
                            f"the slice leaves the producer's domain and {loop_name(strided[0].op)} has step "
                            f"{strided[0].op.step}: clamping its bounds would run iterations off its stride")
    written = _written_memrefs(graph, src)
    dead_rest = not check.self_dependent and len(private_candidates((src, dst), written)) == len(written)
    remove = (check.covers_producer or dead_rest) and check.fusion_violation(True) is None
    if not remove:
        why = check.fusion_violation(False)
        if why is not None:
            if check.fusion_violation(True) is None:
                why = (f"the producer must stay (some of its iterations are in no slice and what they store "
                       f"is used elsewhere), and running it again inside the consumer is unsafe: {why}")
            return DepthRefusal(RefusalKind.DEPENDENCE, why)
    return FusionCandidate(depth, s, remove, extra_computation(s, remove))


#: Symbols take this value when the redundancy of a slice is counted (a count at MLIR's usual
#: default of 1024 per symbol is often too large to enumerate; ratios rarely depend on it).
COUNT_SYMBOL_VALUE = 64


def _symbol_values(op: Operation) -> dict[Value, int]:
    func = enclosing_function(op)
    return {a: COUNT_SYMBOL_VALUE for a in func.args if str(a.type) == "index"} if func is not None else {}


def fusion_refusals(src: AffineForOp, dst: AffineForOp, graph: DependenceGraph | None = None,
                    depths: list[int] | None = None) -> tuple[list[FusionCandidate], dict[int, DepthRefusal]]:
    """The legal fusions of ``src`` into ``dst`` per depth (in depth order), and the refusal of
    each illegal depth tried. The search over depths stops at the first DEPTH_EXCEEDS refusal
    (kept only when it is the first result: every deeper depth exceeds too) and after a
    NO_DEPENDENCE one (the same at every depth); it decides on the kinds, never on the wording."""
    func = check_pair(src, dst)
    graph = graph or DependenceGraph(func)
    scop = graph.analysis.scop
    legal: list[FusionCandidate] = []
    refusals: dict[int, DepthRefusal] = {}
    for d in depths if depths is not None else range(1, _loop_depth(dst) + 1):
        c = _candidate(graph, scop, src, dst, d)
        if isinstance(c, FusionCandidate):
            legal.append(c)
            continue
        if c.kind is RefusalKind.DEPTH_EXCEEDS:
            if not legal and not refusals:
                refusals[d] = c
            break
        refusals[d] = c
        if c.kind is RefusalKind.NO_DEPENDENCE:
            break
    return legal, refusals


def fusion_candidates(src: AffineForOp, dst: AffineForOp, graph: DependenceGraph | None = None,
                      depths: list[int] | None = None) -> tuple[list[FusionCandidate], dict[int, str]]:
    """The legal fusions of ``src`` into ``dst`` per depth, and the reason for each illegal depth
    (:func:`fusion_refusals` with the refusals' messages)."""
    legal, refusals = fusion_refusals(src, dst, graph, depths)
    return legal, {d: r.reason for d, r in refusals.items()}


def _loop_depth(op: Operation) -> int:
    """The deepest nesting of affine.for loops in ``op`` (itself included)."""
    inner = [_loop_depth(o) for r in op.regions for b in r.blocks for o in b.ops]
    return (1 if isinstance(op, AffineForOp) else 0) + max(inner, default=0)


def _choose(legal: list[FusionCandidate], tolerance: float, maximal: bool) -> FusionCandidate | None:
    if maximal:
        return legal[-1] if legal else None
    ok = [c for c in legal if c.redundancy is not None and c.redundancy <= tolerance + 1e-9]
    if not ok:
        return None
    return min(ok, key=lambda c: (round(c.redundancy, 6), -c.depth))


def fuse_loops(src: AffineForOp, dst: AffineForOp, depth: int | None = None, *,
               compute_tolerance: float = DEFAULT_TOLERANCE, maximal: bool = False, fast_mem_space=None,
               local_buf_threshold_bytes: int = 0, graph: DependenceGraph | None = None) -> FusionResult:
    """Fuse the top-level producer nest ``src`` into the later consumer nest ``dst`` (see the
    module docstring), at ``depth`` or at the best depth by the cost model.

    Guarantees: the program computes what it did (every dependence kept, exact); the producer
    is erased only when nothing it stored is lost; intermediates used only by the fused nest
    get private buffers of one iteration's footprint. Raises :class:`TransformError` naming the
    nests and the dependence, placement or cost that forbids it, leaving the IR unchanged."""
    func = check_pair(src, dst)
    graph = graph or DependenceGraph(func)
    if not any(e.kind == "RAW" for e in graph.edges_between(src, dst)):
        raise refuse(src, dst, "the consumer loads nothing the producer stores", RefusalKind.NO_DEPENDENCE)
    placement = _placement(graph, src, dst)
    legal, refusals = fusion_refusals(src, dst, graph, None if depth is None else [depth])
    chosen = next((c for c in legal if c.depth == depth), None) if depth is not None else \
        _choose(legal, compute_tolerance, maximal)
    if chosen is None:
        reasons = {d: r.reason for d, r in refusals.items()}
        raise refuse(src, dst, _why_not(legal, reasons, compute_tolerance, depth), _refusal_kind(legal, refusals))
    written = _written_memrefs(graph, src)
    result = FusionResult(nest_name(src), nest_name(dst), chosen.depth, str(chosen.slice), chosen.remove_producer,
                          placement == "src", chosen.redundancy, cost=f"{chosen.work_text()}, tolerance "
                                                                     f"{compute_tolerance:.0%}")
    carried = [m for m in written if any(m is x for x in chosen.slice.memrefs)]
    consumer_stored = [m for m in carried if graph.node(dst).stores_of(m)]
    _apply(func, src, dst, chosen, placement, (carried, consumer_stored), result, fast_mem_space,
           local_buf_threshold_bytes)
    return result


def _refusal_kind(legal: list[FusionCandidate], refusals: dict[int, DepthRefusal]) -> RefusalKind:
    """The kind of the refusal of a pair: UNPROFITABLE when some depth is legal (the cost model
    rejected it), else the kind of the shallowest refused depth."""
    if legal:
        return RefusalKind.UNPROFITABLE
    return refusals[min(refusals)].kind if refusals else RefusalKind.INVALID_REQUEST


def _why_not(legal: list[FusionCandidate], reasons: dict[int, str], tolerance: float, depth: int | None) -> str:
    parts = [f"at depth {d}: {r}" for d, r in sorted(reasons.items())]
    for c in legal:
        parts.append(f"at depth {c.depth}: redundant computation {c.redundancy_text()} > {tolerance:.0%} "
                     f"({c.work_text()})" + ("" if c.remove_producer else " (the producer must stay)"))
    if depth is not None and not parts:
        parts.append(f"no slice at depth {depth}")
    return "; ".join(parts) or "no legal depth"


def _apply(func, src, dst, chosen: FusionCandidate, placement: str, memrefs: tuple[list[Value], list[Value]],
           result: FusionResult, fast_mem_space, threshold: int) -> None:
    """Fuse as ``chosen`` says; ``memrefs``: what the slice carries, and which of those the
    consumer itself stores to (decided before the slice's copies of the producer's stores land)."""
    carried, consumer_stored = memrefs
    if placement == "src":
        dst.detach()
        func.body.insert_after(src, dst)
    receiver = chosen.slice.insertion_loop
    insert_slice(chosen.slice)
    compose_affine_maps(dst)
    kept = not chosen.remove_producer
    if not kept:
        src.erase()
    space = parse_memory_space(fast_mem_space) if fast_mem_space not in (None, "", "0", 0) else None
    candidates = private_candidates_kept(dst, src, carried, consumer_stored) if kept else \
        private_candidates(dst, carried)
    for m in candidates:
        p = privatize(func, dst, receiver, m, chosen.depth, fast_space=space, threshold_bytes=threshold,
                      keep_original=kept)
        if isinstance(p, PrivateBuffer):
            result.private.append(p)
            compose_affine_maps(dst)
        else:
            result.notes.append(p)


def reduction_loop(nest: AffineForOp) -> AffineForOp | None:
    """The first loop of ``nest`` (outermost first) around a store whose subscripts do not use the loop's IV
    (every iteration stores to the same element: a reduction into memory, ``acc[i, j] += ...`` in ``k``),
    or that carries iter_args; None when there is none. Structural: no dependence analysis."""
    for loop in [nest, *(op for op in nest.walk() if isinstance(op, AffineForOp) and op is not nest)]:
        if loop.iter_args:
            return loop
        iv = loop.induction_var
        for op in loop.walk():
            if isinstance(op, AffineWriteOpInterface) and not any(depends_on(v, iv) for v in op.indices):
                return loop
    return None


# -- the pass --------------------------------------------------------------------------------------
MODES = ("greedy", "producer", "sibling")


@register_pass
@dataclass(frozen=True)
class LoopFusion(Pass):
    """MLIR's ``affine-loop-fusion``: producer-consumer fusion (``mode=producer``), sibling
    fusion (``mode=sibling``) or both (``greedy``: producer-consumer first), with MLIR's options."""

    name = PASS
    summary = "Fuse affine loop nests"
    compute_tolerance: float = option(DEFAULT_TOLERANCE, "Fractional increase in additional computation tolerated "
                                                         "while fusing")
    fast_mem_space: str = option("0", "Faster memory space to promote fusion buffers to: an integer (0: none) "
                                      "or workgroup (GPU shared memory)")
    local_buf_threshold: int = option(0, "Threshold size (KiB) for promoting local buffers to fast memory space")
    maximal: bool = option(False, "Enables maximal loop fusion")
    mode: str = option("greedy", "fusion mode to attempt: greedy, producer or sibling")
    separate_reductions: bool = option(False, "never fuse two nests that both hold a reduction loop (a loop whose "
                                              "IV indexes no store inside it): each contraction stays a nest of its "
                                              "own for the GPU mapping (not in MLIR)")

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.compute_tolerance < 0:
            raise ValueError(f"compute-tolerance must be >= 0, got {self.compute_tolerance}")
        parse_memory_space(self.fast_mem_space)

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        if not func.regions or not func.regions[0].blocks:
            return
        if self.mode in ("greedy", "producer"):
            _Fuser(func, ctx, self).producers()
        if self.mode in ("greedy", "sibling"):
            _Fuser(func, ctx, self).siblings()


class _Fuser:
    """Repeated fusion over a function's top-level nests, one decision per candidate pair."""

    def __init__(self, func: FuncOp, ctx: PassContext, opts: LoopFusion):
        self.func, self.ctx, self.opts = func, ctx, opts
        # (first, second) -> (where to record, the refusal); insertion order is the order of the trace
        self.refused: dict[tuple[Operation, Operation], tuple[Operation, TransformError]] = {}
        self.version: dict[Operation, int] = {}
        self.tried: set[tuple] = set()  # IR states tried (they hold the ops, so erased ones stay distinct)
        self.fused_pairs: set[tuple[Operation, Operation]] = set()  # (producer, consumer) fused, the producer kept

    def _key(self, graph: DependenceGraph, a: Operation, b: Operation) -> tuple:
        """The IR state of the nests from ``a`` to ``b``: each op with its version (bumped when it changes)."""
        nodes = graph.nodes[graph.node(a).id : graph.node(b).id + 1]
        return tuple((n.op, self.version.get(n.op, 0)) for n in nodes)

    def _loop_nodes(self, graph: DependenceGraph) -> list:
        return [n for n in graph.nodes if isinstance(n.op, AffineForOp)]

    def producers(self) -> None:
        while self._one_producer_fusion():
            pass
        self._flush()

    def _one_producer_fusion(self) -> bool:
        graph = DependenceGraph(self.func)
        for dst in self._loop_nodes(graph):
            srcs = sorted({e.src for e in graph.in_edges(dst) if e.kind == "RAW"}, reverse=True)
            for sid in srcs:
                src = graph.nodes[sid]
                if not isinstance(src.op, AffineForOp):
                    continue
                if (src.op, dst.op) in self.fused_pairs:
                    continue
                fuse = functools.partial(self._fuse_pair, src.op, dst.op, graph)
                if self._attempt(self._key(graph, src.op, dst.op), src.op, dst.op, fuse):
                    return True
        return False

    def _fuse_pair(self, src: AffineForOp, dst: AffineForOp, graph: DependenceGraph) -> FusionResult:
        o = self.opts
        self._check_reductions(src, dst)
        return fuse_loops(src, dst, compute_tolerance=o.compute_tolerance, maximal=o.maximal,
                          fast_mem_space=o.fast_mem_space, local_buf_threshold_bytes=o.local_buf_threshold * 1024,
                          graph=graph)

    def _attempt(self, key: tuple, first: Operation, second: Operation, fuse, sibling: bool = False) -> bool:
        """Run ``fuse`` (the fusion of ``first`` into ``second``, or of ``second`` into ``first`` for
        siblings) once per IR state ``key``; record the result. Whether it fused."""
        if key in self.tried:
            return False
        self.tried.add(key)
        try:
            r = fuse()
        except TransformError as e:
            self.refused[(first, second)] = (second, e)
            return False
        self._fused(*((second, first) if sibling else (first, second)), r)
        return True

    def siblings(self) -> None:
        while self._one_sibling_fusion():
            pass
        self._flush()

    def _one_sibling_fusion(self) -> bool:
        graph = DependenceGraph(self.func, include_rar=True)
        for a in self._loop_nodes(graph):
            for e in graph.out_edges(a):
                b = graph.nodes[e.dst]
                if e.kind != "RAR" or not isinstance(b.op, AffineForOp):
                    continue
                key = ("sibling",) + self._key(graph, a.op, b.op)
                fuse = functools.partial(self._fuse_siblings, a.op, b.op, graph)
                if self._attempt(key, a.op, b.op, fuse, sibling=True):
                    return True
        return False

    def _fuse_siblings(self, a: AffineForOp, b: AffineForOp, graph: DependenceGraph) -> FusionResult:
        self._check_reductions(a, b)
        return fuse_siblings(a, b, graph=graph)

    def _check_reductions(self, src: AffineForOp, dst: AffineForOp) -> None:
        """With ``separate-reductions``: refuse the pair when both nests hold a reduction loop."""
        if not self.opts.separate_reductions:
            return
        found = [reduction_loop(op) for op in (src, dst)]
        if all(found):
            raise refuse(src, dst, f"both nests hold a reduction ({loop_name(found[0])} and {loop_name(found[1])}) "
                                   f"and separate-reductions keeps them apart", RefusalKind.UNPROFITABLE)

    def _fused(self, gone: Operation, kept: Operation, r: FusionResult) -> None:
        self.fused_pairs.add((gone, kept))
        self.refused.pop((gone, kept), None)
        self.refused.pop((kept, gone), None)
        self.version[kept] = self.version.get(kept, 0) + 1
        extra = "" if r.redundancy is None or r.redundancy == 0 else \
            f", {r.redundancy:.0%} redundant computation" + (f" ({r.cost})" if r.cost else "")
        msg = f"{r}: {r.slice_text}{extra}"
        if r.moved_consumer:
            msg += "; the fused nest takes the producer's place"
        for p in r.private:
            msg += f"; {p}"
        self.ctx.applied(kept, msg)
        for note in r.notes:
            self.ctx.note(kept, note)

    def _flush(self) -> None:
        for op, error in self.refused.values():
            self.ctx.refused(op, error)
        self.refused.clear()
