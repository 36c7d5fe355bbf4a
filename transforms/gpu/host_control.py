"""Host control flow of a mapped function: which ops the host runs, and which loops and ifs
``gpu-map`` keeps on the host around launches.

A host function (what ``gpu-map`` makes of a function) keeps at its top level only ops the host
runs: constants, ``affine.apply/min/max`` of host index values, global allocations of host sizes,
deallocations, ``gpu.launch`` ops, the operand-less return, and host control flow around launches:

- a *host loop*: an ``affine.for`` without iter_args, bounds of host values, its body of host ops
  (a loop carrying a dependence while nests inside it are parallel: a loop of launches);
- a *host if*: an ``affine.if`` without results, its condition of host values, its branches of
  host ops (a parallel nest under a condition the host decides, e.g. a loop of at most one
  iteration that canonicalize made an if, holding a loop carrying a dependence around parallel
  nests; the host evaluates the condition and runs the launches of one branch).

Values defined in a host loop's body or an if's branch are host values there when they are index
arguments (the loop's IV), constants or affine maps of host values (:func:`.gpu_map_nest.host_value_checker`).
"""

from __future__ import annotations

from affine_ir import Operation
from affine_ir.core import Block
from affine_ir.dialects.affine import AffineForOp, AffineIfOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.dialects.memref import AllocOp
from affine_ir.interfaces import LoopLikeOpInterface
from affine_ir.traits import AffineMapValue, ConstantLike, ReturnLike

from .demote_scalars import demotable_iter_args
from .gpu_map_nest import band_and_blocker, frees_memory, host_value_checker
from .sink_ifs import nests_after_sinking

__all__ = ["branches", "host_control_candidate", "host_if_candidate", "host_loop_candidate", "is_host_if",
           "is_host_loop", "is_host_op", "worth_hosting"]


def branches(op: AffineIfOp) -> list[Block]:
    """The blocks of ``op``: its then-block and, if any, its else-block."""
    return [op.then_block] + ([op.else_block] if op.else_block is not None else [])


def is_host_op(op: Operation, is_host_value) -> bool:
    """Whether a host function may keep ``op`` at its top level, asked of its traits and effects:
    a constant (``ConstantLike``), an ``AffineMapValue`` (affine.apply/min/max) or a global
    allocation (``memref.alloc``) of host values (``is_host_value``), an op that only frees memory
    (``memref.dealloc``), a ``gpu.launch``, a ``ReturnLike`` terminator returning nothing, a host
    loop or a host if."""
    if op.has_trait(ConstantLike) or isinstance(op, LaunchOp) or frees_memory(op):
        return True
    if op.has_trait(ReturnLike):
        return not op.operands
    if isinstance(op, AffineForOp):
        return is_host_loop(op, is_host_value)
    if isinstance(op, AffineIfOp):
        return is_host_if(op, is_host_value)
    return (op.has_trait(AffineMapValue) or isinstance(op, AllocOp)) and all(map(is_host_value, op.operands))


def is_host_loop(op: Operation, is_host_value) -> bool:
    """Whether ``op`` is a loop the host runs (what ``gpu-map`` keeps on the host: a loop of
    launches): an ``affine.for`` without iter_args whose bounds are host values and whose body
    holds only host ops (launches, host index values, other host loops and ifs)."""
    if not isinstance(op, AffineForOp) or op.iter_args or not all(map(is_host_value, op.operands)):
        return False
    inner = host_value_checker(op.body, is_host_value)
    return any(isinstance(x, LaunchOp) for x in op.walk()) and all(is_host_op(x, inner) for x in op.body.ops)


def is_host_if(op: Operation, is_host_value) -> bool:
    """Whether ``op`` is an if the host decides: an ``affine.if`` without results whose condition
    operands are host values and whose branches hold only host ops, a launch among them."""
    if not isinstance(op, AffineIfOp) or op.results or not all(map(is_host_value, op.operands)):
        return False
    return any(isinstance(x, LaunchOp) for x in op.walk()) and all(
        is_host_op(x, host_value_checker(b, is_host_value)) for b in branches(op) for x in b.ops)


def host_loop_candidate(op: Operation, is_host_value, demoting: bool = True) -> bool:
    """Whether ``op`` may run on the host as a loop of launches, whatever its body computes: an
    ``affine.for`` whose bounds are host values, without iter_args (with ``demoting``: or with
    iter_args that :func:`.demote_scalars.demote_iter_args` can pass through memory), and no
    allocation or deallocation directly in its body (a launch cannot free what another uses)."""
    if not isinstance(op, AffineForOp) or \
            not all(map(is_host_value, op.lower_bound_operands + op.upper_bound_operands)):
        return False
    if op.iter_args and not (demoting and demotable_iter_args(op)):
        return False
    return not _allocates_or_frees(op.body)


def host_if_candidate(op: Operation, is_host_value) -> bool:
    """Whether ``op`` may be decided on the host, whatever its branches compute: an ``affine.if``
    without results whose condition operands are host values, and no allocation or deallocation
    directly in its branches."""
    return isinstance(op, AffineIfOp) and not op.results and all(map(is_host_value, op.operands)) and \
        not any(_allocates_or_frees(b) for b in branches(op))


def host_control_candidate(op: Operation, is_host_value) -> bool:
    """:func:`host_loop_candidate` or :func:`host_if_candidate`."""
    return host_loop_candidate(op, is_host_value) or host_if_candidate(op, is_host_value)


def _allocates_or_frees(block: Block) -> bool:
    return any(isinstance(x, AllocOp) or frees_memory(x) for x in block.ops)


def worth_hosting(op: Operation, is_host_value) -> bool:
    """Whether ``op`` should stay on the host as control flow around launches: a nest whose
    outermost loop is not parallel, or an if, that is a :func:`host_control_candidate` (iter_args
    demoted) and holds in its body (branches) a nest with a parallel loop to map (directly, in an
    ``affine.if`` of host conditions that ``gpu-sink-ifs`` moves into it, or in a nest or if worth
    hosting itself) or a launch already made (by gpu-map-reductions)."""
    if not host_control_candidate(op, is_host_value):
        return False
    for block in ([op.body] if isinstance(op, AffineForOp) else branches(op)):
        inner = host_value_checker(block, is_host_value)
        if any(isinstance(x, LaunchOp) for x in block.ops):  # (gpu-map-reductions' launches in a loop left to host)
            return True
        if any(_worth_mapping(x, inner) for x in nests_after_sinking(block, inner)):
            return True
        if any(isinstance(x, AffineIfOp) and worth_hosting(x, inner) for x in block.ops):
            return True
    return False


def _worth_mapping(op: Operation, is_host_value) -> bool:
    return isinstance(op, LoopLikeOpInterface) and (bool(band_and_blocker(op, is_host_value)[0]) or
                                                     worth_hosting(op, is_host_value))
