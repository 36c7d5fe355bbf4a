"""MLIR's ``-test-memref-dependence-check`` remarks, from the exact dependences.

For every pair ``(i, j)`` of ``affine.load``/``affine.store`` ops (numbered in walk order,
``i == j`` included) and every depth ``d`` from 1 to (common loops + 1), MLIR's test pass
(``mlir/test/lib/Analysis/TestMemRefDependenceCheck.cpp``) attaches to op ``i`` the remark
``dependence from i to j at depth d = R`` where ``R`` is

- ``false``: no dependence at that depth (different memrefs, two loads, or no pair of
  iterations touching the same element with the ordering of depth ``d``);
- ``true``: a dependence at a depth with no distance vector (``d`` = common loops + 1, or no
  common loops);
- ``[lo, hi][lo, hi]...``: a dependence carried at depth ``d``, with the range of
  ``dst IV - src IV`` for each common loop (``-inf``/``+inf`` for unbounded sides).

Differences from MLIR, all from exactness: MLIR bounds distances over the rational relaxation
and may report a dependence isl proves empty; here both are exact over the integers (MLIR's
``mod_div_3d`` prints ``[1, 3][-7, 7][-3, 3]``, this prints ``[1, 3][-6, 6][-3, 3]``). Symbols
are quantified existentially, as in MLIR. Accesses the model cannot express exactly get
conservative answers: ``[0, 0]`` before the carrying loop, ``[1, +inf]`` for it and
``[-inf, +inf]`` after.
"""

from __future__ import annotations

from affine_ir import FuncOp, Operation
from affine_ir.interfaces import AffineAccessInterface

from .dependences import DependenceAnalysis, format_range

__all__ = ["format_remarks", "memref_dependence_remarks"]


def memref_dependence_remarks(op: Operation) -> list[tuple[Operation, str]]:
    """``(source op, message)`` for every remark MLIR's ``-test-memref-dependence-check`` emits
    on ``op`` (a function or a module: accesses of all its functions are numbered together,
    as the MLIR pass does on a module), in emission order."""
    accesses = [o for o in op.walk() if _is_scalar_affine_access(o)]
    analyses: dict[FuncOp, DependenceAnalysis] = {}
    where: dict[Operation, tuple[DependenceAnalysis, object]] = {}
    for a in accesses:
        func = _function_of(a)
        if func is None:
            continue
        if func not in analyses:
            analyses[func] = DependenceAnalysis(func)
        analysis = analyses[func]
        stmt = next((s for s in analysis.statements if s.op is a), None)
        if stmt is not None:
            where[a] = (analysis, stmt)
    out = []
    for i, a in enumerate(accesses):
        for j, b in enumerate(accesses):
            sa, sb = where.get(a), where.get(b)
            if sa is None or sb is None or sa[0] is not sb[0]:
                out.append((a, f"dependence from {i} to {j} at depth 1 = false"))
                continue
            analysis, s = sa
            t = sb[1]
            common = analysis.scop.common_depth(s, t)
            dep = None
            if s.memref is t.memref and (s.is_write or t.is_write):
                dep = analysis.pair(s, t)
            for d in range(1, common + 2):
                out.append((a, f"dependence from {i} to {j} at depth {d} = {_result(dep, d, common)}"))
    return out


def format_remarks(op: Operation, filename: str | None = None) -> str:
    """The remarks as ``file:line:col: remark: message`` lines (``filename`` replaces the file of
    the ops' locations when given), as ``mlir-opt`` prints them on stderr."""
    lines = []
    for o, message in memref_dependence_remarks(op):
        loc = o.location
        if loc is None:
            place = f"{filename or '<unknown>'}:0:0"
        else:
            place = f"{filename or loc.file}:{loc.line}:{loc.col}"
        lines.append(f"{place}: remark: {message}\n")
    return "".join(lines)


def _result(dep, depth: int, common: int) -> str:
    if dep is None:
        return "false"
    comps = dep.distances_at(depth)
    if comps is None:
        return "false"
    if common == 0 or depth > common:
        return "true"
    return "".join(_bracket(r) for r in comps)


def _bracket(r) -> str:
    text = format_range(r)
    return text if text.startswith("[") else f"[{text}, {text}]"


def _is_scalar_affine_access(op: Operation) -> bool:
    """The accesses MLIR's test pass numbers: affine loads and stores of one element (not vectors)."""
    return isinstance(op, AffineAccessInterface) and op.vector_type is None


def _function_of(op: Operation) -> FuncOp | None:
    for a in op.ancestors():
        if isinstance(a, FuncOp):
            return a
    return None
