"""Privatization with a last-value copy-out (the part of ``affine-privatize`` for buffers whose
contents are used after the loop: function arguments, buffers read afterwards).

When every iteration of a loop writes a buffer before reading it and the last iteration writes
every element any iteration writes (:func:`analysis.copy_out_scope`, exact), the iterations but
the last run on a buffer of their own, and the last one runs on the original, which therefore
ends with the contents it had (the copy-out is the last iteration's own writes: no copy loop)::

    affine.for %r = 0 to %nr {                  %sum_private = memref.alloc(%nr, %np) : memref<?x?xf32>
      affine.for %p = 0 to %np {                affine.for %r = 0 to %nr {
        affine.store %zero, %sum[%p]              affine.if (%r == %nr - 1) {
        ...                                         ... (the body on %sum)
      }                                           } else {
      affine.for %p ... { load %sum[%p] }           ... (the body on %sum_private[%r, ...])
    }                                             }
                                                }
                                                memref.dealloc %sum_private

The private buffer is one per iteration: allocated at the start of the else-branch for a static
shape, or, for a dynamic shape (a GPU thread cannot allocate one), one buffer expanded by the
privatized loops (their trip counts leading dimensions) allocated before the nest, each
iteration using its own slice. The loops around the buffer's accesses then carry no dependence
through it.
"""

from __future__ import annotations

from affine_ir import AffineExpr, AffineMap, FuncOp, IntegerSet, Operation, Value
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineIfOp
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.traits import IsTerminator
from affine_ir.types import memref
from analysis import memref_region
from analysis.privatization import CopyOutScope

from ..errors import TransformError
from ..loop_utils import rewrite_access, value_name

__all__ = ["privatize_with_copy_out"]

PASS = "affine-privatize"


def privatize_with_copy_out(scope: CopyOutScope) -> Value:
    """Rewrite ``scope.loop``'s body as ``affine.if <last iteration> { body } else { body on a
    private buffer }`` (module docstring); returns the private buffer. The caller checked
    ``scope`` (:func:`analysis.copy_out_scope`); the program computes exactly what it computed,
    the original buffer's final contents included. TransformError (IR unchanged) when the
    buffer's shape is dynamic and the privatized loops' bounds are not known before the nest."""
    top = _top_nest(scope.loop)
    dynamic = not scope.memref.type.has_static_shape
    region = _expansion_region(scope, top) if dynamic else None  # checked before anything changes
    loop = scope.loop
    body = loop.body
    ops = [op for op in body.ops if not op.has_trait(IsTerminator)]
    guard = _last_iteration_guard(scope)
    body.insert_before(body.ops[-1], guard)
    then_end, else_end = guard.then_block.ops[-1], guard.else_block.ops[-1]
    mapping: dict[Value, Value] = {}
    for op in ops:
        op.detach()
        guard.then_block.insert_before(then_end, op)
    clones = []
    for op in ops:
        clone = op.clone(mapping)
        guard.else_block.insert_before(else_end, clone)
        clones.append(clone)
    if dynamic:
        return _expand(scope, top, guard, clones, region)
    t = scope.memref.type
    private = AllocOp(memref(t.shape, t.element_type), location=loop.location,
                      name_hint=f"{value_name(scope.memref).lstrip('%')}_private")
    guard.else_block.insert(0, private)
    guard.else_block.insert_before(else_end, DeallocOp([private.results[0]], location=loop.location))
    _retarget(clones, scope.memref, private.results[0], [])
    return private.results[0]


def _top_nest(op: Operation) -> Operation:
    """The op of the function body holding ``op``."""
    while op.parent_op is not None and not isinstance(op.parent_op, FuncOp):
        op = op.parent_op
    return op


def _last_iteration_guard(scope: CopyOutScope) -> AffineIfOp:
    """``affine.if`` true where each of ``scope.loops`` is at its upper bound minus 1 (the last
    iteration, as :func:`analysis.copy_out_scope` checked), with an else-branch."""
    loops: tuple[AffineForOp, ...] = scope.loops
    operands: list[Value] = [lp.induction_var for lp in loops]
    cons = []
    for k, lp in enumerate(loops):
        m = lp.upper_bound_map
        first = len(operands)
        dims = [AffineExpr.dim(first + i) for i in range(m.num_dims)]
        syms = [AffineExpr.dim(first + m.num_dims + j) for j in range(m.num_symbols)]
        operands += list(lp.upper_bound_operands)
        cons.append(AffineExpr.dim(k) + 1 - m.results[0].replace(dims, syms))
    cond = IntegerSet(len(operands), 0, tuple(cons), (True,) * len(cons))
    return AffineIfOp(cond, operands, with_else=True, location=scope.loop.location)


def _host_value(v: Value, top: Operation) -> bool:
    owner = v.owner
    return not (top.is_ancestor_of(owner) if isinstance(owner, Operation) else top.is_ancestor_of(owner.parent_op))


def _expansion_region(scope: CopyOutScope, top: Operation):
    """The box of ``scope.memref``'s elements ``top`` accesses (the expanded buffer's last
    dimensions); TransformError when it is not exact or the loops' bounds are not host values."""
    for lp in scope.loops:
        ok = len(lp.lower_bound_map.results) == 1 and all(
            _host_value(v, top) for v in (*lp.lower_bound_operands, *lp.upper_bound_operands))
        if not ok:
            names = ", ".join(value_name(x.induction_var) for x in scope.loops)
            raise TransformError(PASS, f"cannot expand {value_name(scope.memref)} by ({names}): their bounds are "
                                       f"not known before the nest", loops=list(scope.loops))
    region = memref_region(top, scope.memref, 0)
    if region is None or not region.is_exact or any(x is None for x in region.extents):
        raise TransformError(PASS, f"cannot expand {value_name(scope.memref)}: the box of its accessed elements "
                                   f"is not known exactly", loops=list(scope.loops))
    return region


def _bound_expr(m: AffineMap, first: int) -> AffineExpr:
    return m.results[0].replace([AffineExpr.dim(first + i) for i in range(m.num_dims)],
                                [AffineExpr.dim(first + m.num_dims + j) for j in range(m.num_symbols)])


def _expand(scope: CopyOutScope, top: Operation, guard: AffineIfOp, clones: list[Operation], region) -> Value:
    """One buffer ``[trip counts of scope.loops..., the memref's shape]`` before ``top``, each
    iteration's accesses (in ``clones``) on its slice ``[iv - lower bound, ...]``."""
    loc = scope.loop.location
    t = scope.memref.type
    sizes: list[Value] = []
    for lp in scope.loops:
        lb, ub = list(lp.lower_bound_operands), list(lp.upper_bound_operands)
        e = _bound_expr(lp.upper_bound_map, 0) - _bound_expr(lp.lower_bound_map, len(ub))
        trip = AffineApplyOp(AffineMap(len(ub) + len(lb), 0, (e,)), ub + lb, location=loc)
        top.parent.insert_before(top, trip)
        sizes.append(trip.results[0])
    shape: list[int | None] = [None] * len(scope.loops)
    for extent in region.extents:
        if isinstance(extent, int):
            shape.append(extent)
            continue
        size = AffineApplyOp(extent, list(region.lower_bound_operands), location=loc)
        top.parent.insert_before(top, size)
        sizes.append(size.results[0])
        shape.append(None)
    buf = AllocOp(memref(tuple(shape), t.element_type), sizes, location=loc,
                  name_hint=f"{value_name(scope.memref).lstrip('%')}_private")
    top.parent.insert_before(top, buf)
    top.parent.insert_after(top, DeallocOp([buf.results[0]], location=loc))
    offsets = []
    for lp in scope.loops:
        lb = list(lp.lower_bound_operands)
        e = AffineExpr.dim(0) - _bound_expr(lp.lower_bound_map, 1)
        off = AffineApplyOp(AffineMap(1 + len(lb), 0, (e,)), [lp.induction_var, *lb], location=loc)
        guard.else_block.insert(len(offsets), off)
        offsets.append(off.results[0])
    _retarget(clones, scope.memref, buf.results[0], offsets, region)
    return buf.results[0]


def _retarget(ops: list[Operation], old: Value, new: Value, leading: list[Value], region=None) -> None:
    """Make every access of ``old`` in ``ops`` access ``new`` at ``[leading..., its subscripts]``
    (each subscript less ``region``'s lower bound when given)."""
    for root in ops:
        for op in [x for x in root.walk() if isinstance(x, AffineAccessInterface) and x.memref is old]:
            if region is not None:
                rewrite_access(op, new, region)
            m, idx = op.map, list(op.map_operands)
            nd = m.num_dims
            results = tuple(AffineExpr.dim(nd + i) for i in range(len(leading))) + m.results
            op.set_operand(op.memref_index, new)
            op.set_access(AffineMap(nd + len(leading), m.num_symbols, results), [*idx[:nd], *leading, *idx[nd:]])
