"""Sibling fusion for ``affine-loop-fusion``: two top-level nests that read the same memref and do
not depend on each other merge loop by loop over their outer loops with identical bounds, so
the loads are shared (MLIR's sibling fusion, for nests with equal bounds).

Legal by construction: no dependence (RAW, WAR, WAW) connects the nests, directly or through
the nests between them (the merged nest goes to the first one's place when the second can
move up past those, else to the second one's place when the first can move down).
"""

from __future__ import annotations

from affine_ir import Operation, Value
from affine_ir.dialects.affine import AffineForOp
from analysis import DependenceGraph

from ..errors import RefusalKind
from ..loop_utils import value_name
from .fuse_common import FusionResult, between, check_pair, edge_text, nest_name, only_inner_loop, refuse

__all__ = ["fuse_siblings"]


def _matching_depth(a: AffineForOp, b: AffineForOp) -> tuple[list[AffineForOp], list[AffineForOp]]:
    """The outer loops of ``a`` and ``b`` with identical bounds and steps, each but the last
    holding only the next one (perfectly nested)."""
    la, lb = [], []
    x, y = a, b
    while isinstance(x, AffineForOp) and isinstance(y, AffineForOp) and not x.results and not y.results \
            and x.step == y.step and x.lower_bound_map == y.lower_bound_map \
            and x.upper_bound_map == y.upper_bound_map \
            and [_outer(v, la) for v in x.operands] == [_outer(v, lb) for v in y.operands]:
        la.append(x)
        lb.append(y)
        x, y = only_inner_loop(x), only_inner_loop(y)
    return la, lb


def _outer(v: Value, mine: list[AffineForOp]) -> object:
    """A bound operand compared across nests: the depth of one of our IVs, else the value."""
    for k, loop in enumerate(mine):
        if v is loop.induction_var:
            return ("iv", k)
    return v


def _direct_dependence(graph: DependenceGraph, a: Operation, b: Operation) -> str | None:
    """The text of a dependence (not RAR) from ``a`` to ``b``, or None (paths through the nests
    between them are the placement's concern)."""
    direct = [e for e in graph.edges_between(a, b) if e.kind != "RAR"]
    if direct:
        return edge_text(graph, direct[0])
    return None


def _sibling_placement(graph: DependenceGraph, a: Operation, b: Operation) -> str:
    nodes = between(graph, a, b)
    forward = [e for n in nodes for e in graph.edges_between(a, n) if e.kind != "RAR"]
    if not forward:
        return "b"
    backward = [e for n in nodes for e in graph.edges_between(n, b) if e.kind != "RAR"]
    if backward:
        raise refuse(a, b, f"a nest between them depends on the first ({edge_text(graph, forward[0])}) and the "
                            f"second depends on one between them ({edge_text(graph, backward[0])})",
                     RefusalKind.DEPENDENCE)
    body = b.parent
    for op in b.walk():
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner.parent is body and \
                    body.index_of(a) < body.index_of(owner) < body.index_of(b):
                raise refuse(a, b, f"the second nest uses {value_name(v)}, defined between them",
                             RefusalKind.DEPENDENCE)
    return "a"


def fuse_siblings(a: AffineForOp, b: AffineForOp, *, graph: DependenceGraph | None = None) -> FusionResult:
    """Merge the later top-level nest ``b`` into ``a`` loop by loop over their outer loops with
    identical bounds (see the module docstring). Guarantees: legal (no dependence between the
    nests, none through the nests between them); the merged nest runs ``a``'s then ``b``'s body
    in each iteration. Raises :class:`TransformError` (IR unchanged) when they depend on each
    other, share no memref read, or have no outer loop with the same bounds."""
    func = check_pair(a, b)
    graph = graph or DependenceGraph(func, include_rar=True)
    dep = _direct_dependence(graph, a, b)
    if dep is not None:
        raise refuse(a, b, f"they are not siblings: {dep}", RefusalKind.DEPENDENCE)
    shared = [e.value for e in graph.edges_between(a, b) if e.kind == "RAR"]
    if not shared:
        raise refuse(a, b, "they read no memref in common", RefusalKind.NO_DEPENDENCE)
    la, lb = _matching_depth(a, b)
    if not la:
        raise refuse(a, b, f"their outer loops differ ({_bounds_text(a)} vs {_bounds_text(b)})",
                     RefusalKind.UNSUPPORTED)
    placement = _sibling_placement(graph, a, b)
    depth = len(la)
    _merge(la, lb)
    if placement == "b":
        a.detach()
        func.body.insert_before(b, a)
    b.erase()
    result = FusionResult(nest_name(b), nest_name(a), depth, f"sibling loops share {value_name(shared[0])}", True,
                          placement == "a", 0.0)
    return result


def _bounds_text(loop: AffineForOp) -> str:
    """The loop's header as printed: ``affine.for %i = 0 to 10 step 2``."""
    return str(loop).split("\n", 1)[0].rstrip(" {")


def _merge(la: list[AffineForOp], lb: list[AffineForOp]) -> None:
    for x, y in zip(la, lb):
        y.induction_var.replace_all_uses_with(x.induction_var)
    inner_a, inner_b = la[-1].body, lb[-1].body
    anchor = inner_a.terminator
    for op in [o for o in inner_b.ops if not o.is_terminator]:
        op.detach()
        inner_a.insert_before(anchor, op)


# -- the pass --------------------------------------------------------------------------------------
