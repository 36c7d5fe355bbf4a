"""Legality of producer-consumer fusion at a computation slice, decided exactly with isl.

Fusing producer nest ``P`` into consumer nest ``C`` at depth ``d`` with slice ``s``
(:func:`analysis.compute_slice`) runs, at the start of each iteration ``x`` of ``C``'s first
``d`` loops, the producer's *slice iterations* ``box(x)`` (iterations of its slice loops,
each with everything below them) in producer order; the producer nest itself is erased or
kept in place. :func:`check_fusion` says which orders of the original program such an
interleaving keeps:

- ``single_execution``: no producer iteration lies in two boxes (``box^-1`` single-valued);
- ``covers_producer``: every producer iteration lies in some box;
- ``order_violation`` (for single execution): a dependence between a producer iteration ``p``
  and a consumer iteration ``y`` (RAW, WAR, WAW) with ``box^-1(p)`` after ``y``'s first ``d``
  IVs, or between producer iterations ``p1 < p2`` with ``box^-1(p1)`` after ``box^-1(p2)``;
- ``recompute_violation``: why running a producer iteration a second time (in two boxes, or
  in a box after the kept producer) could store a different value: producer iterations that
  depend on each other (through what one writes and another accesses), or a consumer write
  to a memref the producer accesses (WAR/WAW between the nests). Without either, every run
  of a producer iteration reads the same values and stores the same values.
  Also a producer iteration reading an element it stores itself before storing it
  (``B[x] = B[x] + 1``): a second run would read the first run's value.
- ``structure_violation``: what keeps the slice from being cloned soundly: producer ops
  outside the slice loops, consumer accesses to shared memrefs outside the ``d`` loops (the
  slice could not run before them), accesses that are not affine.

A RAW dependence needs no order check: the slice's box contains every producer iteration
writing an element the consumer reads in that iteration (``compute_slice`` checks it), so
with single execution the last writer runs in the same consumer iteration, before the read.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from affine_ir import Operation

from .dependences import DependenceAnalysis
from .isl_bridge import Scop, Statement, statements_under
from .isl_results import BudgetExceeded, isl_budget
from .regions import enclosing_root, value_label
from .slices import ComputationSlice, SliceError, SliceErrorKind

__all__ = ["FusionCheck", "check_fusion", "reads_covered_within"]

_DT = isl.dim_type
FUSION_BUDGET = 3_000_000


@dataclass
class FusionCheck:
    """What fusing at ``slice`` preserves (see the module docstring)."""

    slice: ComputationSlice
    single_execution: bool
    covers_producer: bool
    self_dependent: bool  # producer iterations depend on each other
    order_violation: str | None
    recompute_violation: str | None
    structure_violation: str | None

    def fusion_violation(self, remove_producer: bool) -> str | None:
        """Why fusing with the producer erased (``remove_producer``) or kept is illegal, or None.
        Erasing also needs the caller to know that uncovered producer iterations are dead."""
        if self.structure_violation:
            return self.structure_violation
        runs_again = not remove_producer or not self.single_execution
        if runs_again:
            return self.recompute_violation
        return self.order_violation


def check_fusion(s: ComputationSlice, scop: Scop | None = None) -> FusionCheck:
    """Which dependences fusing at slice ``s`` keeps (exact; see the module docstring).

    ``scop`` is the Scop ``s`` was computed with (rebuilt when None). Raises SliceError when
    isl's operation budget runs out."""
    if scop is None or scop.root is not enclosing_root(s.src_nest):
        scop = Scop(enclosing_root(s.src_nest))
    try:
        with isl_budget(FUSION_BUDGET):
            return _check(s, scop)
    except BudgetExceeded:
        raise SliceError("the dependences between the nests are too complex for isl's operation budget",
                         SliceErrorKind.TOO_COMPLEX) from None


def _at(op: Operation) -> str:
    return f" at {op.location}" if op.location else ""


def _check(s: ComputationSlice, scop: Scop) -> FusionCheck:
    src, dst = statements_under(scop, s.src_nest), statements_under(scop, s.dst_nest)
    nsrc, npre = len(s.src_loops), len(s.dst_loops)
    binv = s.box.reverse()
    single = binv.is_single_valued()
    src_dom = s._domains[1].set_tuple_name("P")
    covers = src_dom.is_subset(s.box.range())
    structure = _structure(s, src, dst)
    order = recompute = None
    self_dep = False
    if structure is None:
        order, recompute = _between_nests(s, src, dst, binv, nsrc, npre)
        self_order, self_recompute = _within_producer(s, src, binv, nsrc)
        self_dep = self_recompute is not None
        order = order or self_order
        recompute = self_recompute or _exposed_read(DependenceAnalysis(scop.root, scop), s, src, nsrc) or recompute
    return FusionCheck(s, single, covers, self_dep, order, recompute, structure)


def _structure(s: ComputationSlice, src: list[Statement], dst: list[Statement]) -> str | None:
    inner = s.src_loops[-1].op
    for t in src:
        if not inner.is_ancestor_of(t.op):
            return (f"the producer's '{t.op.name}'{_at(t.op)} is outside its slice loops "
                    f"({', '.join(value_label(lp.iv) for lp in s.src_loops)})")
    shared = {t.memref for t in src}
    for t in src + dst:
        if t.memref in shared and (not t.is_affine or t.opaque or t.in_unknown_region):
            return f"'{t.op.name}'{_at(t.op)} on {value_label(t.memref)} is not an affine access"
    written = {t.memref for t in src if t.is_write}
    pre = s.dst_loops[-1].op
    for t in dst:
        if t.memref in shared and (t.is_write or t.memref in written) and not pre.is_ancestor_of(t.op):
            return (f"the consumer's '{t.op.name}'{_at(t.op)} on {value_label(t.memref)} is outside "
                    f"{value_label(s.dst_loops[-1].iv)}, the loop that would receive the slice")
    return None


def _kind(a: Statement, b: Statement) -> str:
    return "RAW" if a.is_write and not b.is_write else "WAR" if b.is_write and not a.is_write else "WAW"


def _pairs(a: Statement, b: Statement, na: int, nb: int) -> isl.Map:
    """``{ P[a's first na IVs] -> X[b's first nb IVs] }`` where a and b touch the same element."""
    rel = a.access.apply_range(b.access.reverse())
    rel = rel.project_out(_DT.in_, na, rel.dim(_DT.in_) - na)
    return rel.project_out(_DT.out, nb, rel.dim(_DT.out) - nb)


def _lex_gt(rel: isl.Map) -> isl.Map:
    """The pairs of ``rel`` (equal-length tuples) whose input is lexicographically greater."""
    n = rel.dim(_DT.in_)
    out = None
    eq = rel
    for k in range(n):
        part = eq.order_gt(_DT.in_, k, _DT.out, k)
        out = part if out is None else out.union(part)
        eq = eq.equate(_DT.in_, k, _DT.out, k)
    return out if out is not None else rel.subtract(rel)


def _between_nests(s, src, dst, binv, nsrc, npre) -> tuple[str | None, str | None]:
    order = recompute = None
    for a in src:
        for b in dst:
            if a.memref is not b.memref or not (a.is_write or b.is_write):
                continue
            rel = _pairs(a, b, nsrc, npre)
            if rel.is_empty():
                continue
            kind = _kind(a, b)
            where = (f"{kind} on {value_label(a.memref)} from the producer's '{a.op.name}'{_at(a.op)} to the "
                     f"consumer's '{b.op.name}'{_at(b.op)}")
            if b.is_write and recompute is None:
                recompute = f"the consumer writes {value_label(b.memref)}, which the producer accesses ({where})"
            if kind != "RAW" and order is None:
                rel = rel.set_tuple_name(_DT.in_, "P").set_tuple_name(_DT.out, "D")
                late = _lex_gt(rel.apply_domain(binv))
                if not late.is_empty():
                    order = f"the slice would run after the consumer iteration it must precede ({where})"
    return order, recompute


def _within_producer(s, src, binv, nsrc) -> tuple[str | None, str | None]:
    order = recompute = None
    for a in src:
        for c in src:
            if a.memref is not c.memref or not (a.is_write or c.is_write):
                continue
            rel = _pairs(a, c, nsrc, nsrc).set_tuple_name(_DT.in_, "P").set_tuple_name(_DT.out, "P")
            later = _lex_gt(rel.reverse()).reverse()  # p1 < p2: a at p1 runs before c at p2
            if later.is_empty():
                continue
            kind = _kind(a, c)
            where = (f"{kind} on {value_label(a.memref)} from '{a.op.name}'{_at(a.op)} to '{c.op.name}'{_at(c.op)} "
                     f"between different iterations of "
                     f"({', '.join(value_label(lp.iv) for lp in s.src_loops)})")
            if recompute is None:
                recompute = f"the producer's iterations depend on each other ({where})"
            if order is None and not _lex_gt(later.apply_domain(binv).apply_range(binv)).is_empty():
                order = f"the slices would run producer iterations out of order ({where})"
    return order, recompute


def reads_covered_within(analysis: DependenceAnalysis, nest: Operation, memref, depth: int) -> bool:
    """Whether every read of ``memref`` under ``nest`` reads an element written before it in
    the same iteration of the ``depth`` outermost loops (counted from ``analysis.root``): then
    each such iteration can have a buffer of its own (no value flows between iterations or in
    from before). False for accesses that are not affine."""
    stmts = [t for t in statements_under(analysis.scop, nest) if t.memref is memref]
    if any(not t.is_affine or t.opaque or t.in_unknown_region for t in stmts):
        return False
    writes = [t for t in stmts if t.is_write]
    for r in (t for t in stmts if not t.is_write):
        covered = r.domain.subtract(r.domain)
        for w in writes:
            dep = analysis.pair(w, r)
            if dep is None:
                continue
            for level, rel in zip(dep.depths, dep.by_depth):
                if level > depth:
                    covered = covered.union(rel.range())
        if not r.domain.is_subset(covered):
            return False
    return True


def _exposed_read(da: DependenceAnalysis, s: ComputationSlice, src: list[Statement], nsrc: int) -> str | None:
    """A producer read of an element that its own slice iteration stores, not after a store
    of that iteration to it: the first such read, described."""
    written = {t.memref for t in src if t.is_write}
    for r in src:
        if r.is_write or r.memref not in written:
            continue
        writes = [w for w in src if w.is_write and w.memref is r.memref]
        same = None
        for w in writes:
            rel = r.access.apply_range(w.access.reverse())
            for k in range(nsrc):
                rel = rel.equate(_DT.in_, k, _DT.out, k)
            same = rel.domain() if same is None else same.union(rel.domain())
        covered = r.domain.subtract(r.domain)
        for w in writes:
            dep = da.pair(w, r)
            if dep is not None:
                for level, rel in zip(dep.depths, dep.by_depth):
                    if level > nsrc:
                        covered = covered.union(rel.range())
        if not same.subtract(covered).is_empty():
            return (f"running a producer iteration again would read what it stored the first time: "
                    f"'{r.op.name}'{_at(r.op)} on {value_label(r.memref)} reads an element its own iteration of "
                    f"({', '.join(value_label(lp.iv) for lp in s.src_loops)}) stores, without storing it first")
    return None
