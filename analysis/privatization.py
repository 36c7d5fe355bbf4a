"""Privatizable buffers: a local buffer that each iteration of a loop writes before it reads.

Fusion leaves such buffers behind (MLIR's private memrefs: a row of attention scores, a
softmax row maximum), allocated once before the fused nest. Every iteration of the loops
around their accesses stores into the same buffer, so the dependence analysis sees WAW and
WAR dependences carried by those loops and nothing is parallel. When every read of the
buffer reads an element stored earlier *in the same iteration* of a loop (exact, isl: the
read instances are a subset of the union, over the stores, of the read instances a store of
that iteration reaches), no value flows between iterations of that loop and none flows in
from before it: each iteration may have a buffer of its own (``affine-privatize`` allocates
it in the loop's body, after which :func:`analysis.dependences` sees no dependence across
iterations).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from affine_ir import FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp
from affine_ir.traits import allocating_op, only_frees_memory

from .dependences import DependenceAnalysis
from .fusion import reads_covered_within
from .isl_bridge import UnsupportedError, op_domain

__all__ = ["CopyOutScope", "PrivateScope", "copy_out_scope", "private_scope"]


@dataclass(frozen=True)
class PrivateScope:
    """``memref`` may be allocated anew in each iteration of ``loop`` (an affine.for or
    affine.parallel enclosing every access of it), the innermost such loop; ``depth`` is the
    number of IVs from the function down to and including ``loop``'s."""

    memref: Value
    loop: Operation
    depth: int


def private_scope(memref: Value, analysis: DependenceAnalysis | None = None) -> PrivateScope | None:
    """The innermost loop in each of whose iterations ``memref`` (a buffer a ``memref.alloc`` of
    the function allocates) is written before it is read, or None: not a local allocation, used
    by an op other than affine loads and stores and the ops that free it, accessed outside any
    loop or in no common loop, or some read sees a value stored by another iteration (or from
    before the loop) of every enclosing loop. ``analysis``: the function's, to reuse.

    Guarantees: when a scope is returned, allocating the buffer at the start of ``loop``'s body
    (and freeing it at its end) computes exactly what the program computed."""
    alloc = allocating_op(memref)
    if alloc is None:
        return None
    func = next((a for a in alloc.ancestors() if isinstance(a, FuncOp)), None)
    if func is None:
        return None
    if analysis is None or analysis.root is not func:
        analysis = DependenceAnalysis(func)
    stmts = [s for s in analysis.statements if s.memref is memref and not only_frees_memory(s.op)]
    accessing = {s.op for s in stmts}
    if not stmts or any(u.op not in accessing and not only_frees_memory(u.op) for u in memref.uses):
        return None
    if any(not s.is_affine or s.opaque or s.in_unknown_region for s in stmts):
        return None
    common = _common_loops(stmts)
    for loop, depth in reversed(common):
        if loop.is_ancestor_of(alloc):
            break
        if reads_covered_within(analysis, loop, memref, depth):
            return PrivateScope(memref, loop, depth)
    return None


def _common_loops(stmts) -> list[tuple[Operation, int]]:
    """The loop ops enclosing every statement of ``stmts``, outermost first, each with the number
    of IVs down to and including its own."""
    prefix = stmts[0].loops
    for s in stmts[1:]:
        n = 0
        for a, b in zip(prefix, s.loops):
            if a.op is not b.op or a.index != b.index:
                break
            n += 1
        prefix = prefix[:n]
    out: list[tuple[Operation, int]] = []
    for k, lp in enumerate(prefix):
        if lp.index == len(lp.op.induction_vars) - 1:
            out.append((lp.op, k + 1))
    return out


@dataclass(frozen=True)
class CopyOutScope:
    """``memref`` (a buffer whose contents are used after ``loop``: a function argument, or a
    buffer read after it) may be replaced by a buffer of its own in each iteration of ``loop``
    except the last, which keeps the original: every iteration writes what it reads, and the
    last iteration (of the ``depth`` loops from the function down to ``loop``, all ``affine.for``
    of step 1 with one upper bound) writes every element any iteration writes, so the original
    ends with the same contents (the *last-value copy-out*: the last iteration writes it)."""

    memref: Value
    loop: Operation
    depth: int
    loops: tuple[Operation, ...]  # the ``depth`` loops, outermost first


def copy_out_scope(memref: Value, analysis: DependenceAnalysis) -> CopyOutScope | str | None:
    """The innermost loop ``memref`` can be privatized in with a last-value copy-out (see
    :class:`CopyOutScope`), among the loops enclosing all its accesses in one top-level nest of
    ``analysis.root`` (a function) where some dependence on it is carried by those loops; or why
    there is none (the last candidate's reason); None when no such loop carries a dependence on
    it (nothing to privatize). Exact (isl).

    Guarantees: when a scope is returned, running every iteration of ``loop`` but the last on a
    fresh buffer in place of ``memref`` (the last on ``memref``) computes exactly what the program
    computed, ``memref``'s final contents included."""
    stmts = [s for s in analysis.statements if s.memref is memref and not only_frees_memory(s.op)]
    if not stmts:
        return None
    accessing = {s.op for s in stmts}
    if any(u.op not in accessing and not only_frees_memory(u.op) for u in memref.uses):
        return "used by an op that is not an affine load or store"
    if any(not s.is_affine or s.opaque or s.in_unknown_region for s in stmts):
        return "an access that is not affine"
    reason = None
    for nest in _top_level_nests(stmts, analysis.root):
        inner = [s for s in stmts if nest.is_ancestor_of(s.op)]
        if not inner:  # an access at the function's top level
            continue
        for loop, depth in reversed(_common_loops(inner)):
            if not _carried(analysis, inner, depth):
                continue
            why = _copy_out_violation(analysis, memref, inner, loop, depth)
            if why is None:
                return CopyOutScope(memref, loop, depth, tuple(lp.op for lp in inner[0].loops[:depth]))
            reason = f"({_iv_names(inner[0].loops[:depth])}): {why}"
    return reason


def _iv_names(loops) -> str:
    return ", ".join(lp.iv.name_hint or "?" for lp in loops)


def _top_level_nests(stmts, root: Operation) -> list[Operation]:
    """The ops of ``root``'s body holding the statements, in program order."""
    out: list[Operation] = []
    for s in stmts:
        top = s.op
        while top.parent_op is not None and top.parent_op is not root:
            top = top.parent_op
        if top.parent_op is root and top not in out:
            out.append(top)
    return out


def _copy_out_violation(analysis: DependenceAnalysis, memref: Value, stmts, loop: Operation,
                        depth: int) -> str | None:
    """Why ``memref`` cannot be privatized in ``loop`` with a last-value copy-out, or None."""
    loops = [lp.op for lp in stmts[0].loops[:depth]]
    if any(not isinstance(lp, AffineForOp) or lp.step != 1 or len(lp.upper_bound_map.results) != 1
           for lp in loops):
        return "the loops must be affine.for of step 1 with one upper bound (the last iteration's guard)"
    if loop.iter_args:
        return "the loop carries values in iter_args (its body cannot move into the guard)"
    if not reads_covered_within(analysis, loop, memref, depth):
        return "an iteration reads a value it did not write first"
    other = _other_carried(analysis, memref, loop, depth)
    if other is not None:
        return f"the loops would still carry a dependence (on {other}): privatizing gains no parallel loop"
    scop = analysis.scop
    try:
        domain = op_domain(scop, stmts[0].op, "L", include_self=False)
    except UnsupportedError:
        return "bounds that are not affine"
    n = domain.dim(isl.dim_type.set)
    domain = domain.project_out(isl.dim_type.set, depth, n - depth).set_tuple_name("L")
    last = domain.lexmax()
    if not last.is_subset(_guard_set(scop, loops, domain)):
        return "the last iteration is not where every loop is at its upper bound minus 1"
    written = None
    for s in stmts:
        if not s.is_write:
            continue
        rel = s.access.project_out(isl.dim_type.in_, depth, s.depth - depth).set_tuple_name(isl.dim_type.in_, "L")
        written = rel if written is None else written.union(rel)
    if written is None:
        return "never written"
    if not written.range().is_subset(written.intersect_domain(last).range()):
        return "the last iteration does not write every element the others write"
    return None


def _other_carried(analysis: DependenceAnalysis, memref: Value, loop: Operation, depth: int) -> str | None:
    """The name of a memref other than ``memref`` through which the ``depth`` outermost loops
    carry a dependence between accesses under ``loop``, or None."""
    for dep in analysis.all():
        if dep.memref is memref or not (loop.is_ancestor_of(dep.src) and loop.is_ancestor_of(dep.dst)):
            continue
        if any(level <= depth for level in dep.depths):
            return dep.memref.name_hint or "a buffer"
    return None


def _carried(analysis: DependenceAnalysis, stmts, depth: int) -> bool:
    """Whether a dependence between ``stmts`` (one of each pair a write) is carried by the
    ``depth`` outermost loops."""
    for a in stmts:
        for b in stmts:
            if not (a.is_write or b.is_write):
                continue
            dep = analysis.pair(a, b)
            if dep is not None and any(level <= depth for level in dep.depths):
                return True
    return False


def _guard_set(scop, loops, domain):
    """The points of ``domain`` (``L[i0, ...]``) where each of ``loops`` is at its upper bound - 1."""
    ivs = [lp.induction_var for lp in loops]
    cons = []
    for k, lp in enumerate(loops):
        (ub,) = scop.map_exprs(lp.upper_bound_map, lp.upper_bound_operands, ivs[:k])
        cons.append(f"i{k} = ({ub}) - 1")
    dims = ", ".join(f"i{k}" for k in range(len(loops)))
    guard = isl.Set(f"{scop._param_prefix()}{{ L[{dims}] : {' and '.join(cons)} }}")
    return guard.align_params(domain.get_space()).intersect(domain)
