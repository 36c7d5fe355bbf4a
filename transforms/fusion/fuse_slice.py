"""Inserting a computation slice: a copy of the producer nest at the start of a consumer loop,
its slice loops bounded by the slice (MLIR's ``insertBackwardComputationSlice``).

The copy's slice loop ``k`` iterates ``max(lower_bounds[k]) .. min(upper_bounds[k])`` of the
slice (operands: the consumer's prefix IVs and symbols, all defined at the insertion point);
when the slice may leave the producer's domain (``is_valid`` False), the producer loop's own
bounds are kept too (``max``/``min`` of both), so the copy never runs an iteration the
producer did not. Slice loops that then run exactly once are replaced by their bodies.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import AffineExpr, AffineMap, Value
from affine_ir.dialects.affine import AffineForOp
from analysis import ComputationSlice

from ..cleanup.canonicalize_loops import promote_if_single_iteration

__all__ = ["insert_slice"]


def insert_slice(s: ComputationSlice) -> AffineForOp:
    """Insert a copy of ``s.src_nest`` at the start of ``s.insertion_loop``'s body with the slice
    bounds (see the module docstring) and return it (it may be gone when its outermost slice loop
    ran once and was promoted; the caller only needs its ops). The producer is left as it was."""
    mapping: dict[Value, Value] = {}
    clone = s.src_nest.clone(mapping)
    body = s.insertion_loop.body
    body.insert_before(body.ops[0], clone)
    copies = [_loop_copy(lp.op, mapping) for lp in s.src_loops]
    for loop, lb, ub in zip(copies, s.lower_bounds, s.upper_bounds):
        lower, lower_ops = lb, list(s.operands)
        upper, upper_ops = ub, list(s.operands)
        if not s.is_valid:
            lower, lower_ops = concat_bounds(lower, lower_ops, loop.lower_bound_map, loop.lower_bound_operands)
            upper, upper_ops = concat_bounds(upper, upper_ops, loop.upper_bound_map, loop.upper_bound_operands)
        loop.set_bounds(lower, lower_ops, upper, upper_ops)
    for loop in copies:
        promote_if_single_iteration(loop)
    return clone


def _loop_copy(loop: AffineForOp, mapping: dict[Value, Value]) -> AffineForOp:
    op = mapping[loop.induction_var].owner.parent_op
    assert isinstance(op, AffineForOp)
    return op


def concat_bounds(a: AffineMap, a_ops: Sequence[Value], b: AffineMap, b_ops: Sequence[Value]) -> tuple[AffineMap, list]:
    """One bound map whose results are ``a``'s then ``b``'s (operands: ``a``'s dims, ``b``'s
    dims, ``a``'s symbols, ``b``'s symbols), with duplicate results dropped."""
    na, nb = a.num_dims, b.num_dims
    sa, sb = a.num_symbols, b.num_symbols
    shift_b = b.replace([AffineExpr.dim(na + k) for k in range(nb)], [AffineExpr.symbol(sa + k) for k in range(sb)],
                        na + nb, sa + sb)
    shift_a = a.replace([AffineExpr.dim(k) for k in range(na)], [AffineExpr.symbol(k) for k in range(sa)],
                        na + nb, sa + sb)
    results: list[AffineExpr] = []
    for e in (*shift_a.results, *shift_b.results):
        if e not in results:
            results.append(e)
    operands = [*a_ops[:na], *b_ops[:nb], *a_ops[na:], *b_ops[nb:]]
    return AffineMap(na + nb, sa + sb, tuple(results)), operands
