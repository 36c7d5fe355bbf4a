"""What a host function of a GPU program may run on the host, asked of the ops' classes, traits
and effects: the printer refuses any other op at a host function's top level, and the runtime's
host side (:mod:`runtime.cuda`) runs these, in order, around the kernel launches.

- ``VALUE``: a constant (a ``ConstantLike`` op: ``arith.constant``, its ``value``) or an index value of an affine map
  (``affine.apply/min/max``): computed on the host (:func:`host_value`);
- ``ALLOCATE``: an allocation of its result that is not scoped to a block (``memref.alloc``;
  a ``memref.alloca`` lives on a stack the host has not got);
- ``FREE``: an op whose effects free memory only (``memref.dealloc``);
- ``VIEW``: a view of a memref as the same memory under another type that the host can follow
  (a :class:`~affine_ir.traits.ViewLike` op of one operand whose result is unranked or of the
  source's own type: ``memref.cast``): its result is its source's buffer;
- ``TENSOR_MAP``: ``nvgpu.tma.create.descriptor``: a TMA descriptor of a global memref (through
  ``memref.cast``), encoded by the runtime for each call's pointer and passed to the kernels that
  use it by value;
- ``LAUNCH``: a ``gpu.launch``, printed as a kernel;
- ``LOOP``: an ``affine.for`` without iter_args whose body holds only these ops, a launch among
  them (a loop of
  launches: ``gpu-map`` keeps a loop carrying a dependence on the host when nests inside it are
  parallel), its terminator aside; the host runs its iterations in order;
- ``IF``: an ``affine.if`` without results whose branches hold only these ops, a launch among
  them: the host evaluates its condition (:func:`host_if_branch`) and runs the ops of that branch;
- ``RETURN``: the terminator returning to the caller (``func.return``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence

from affine_ir.core import Block, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp
from affine_ir.dialects.affine_apply import AffineMapValueOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.dialects.memref import AllocaOp
from affine_ir.dialects.nvgpu_hopper import TmaCreateDescriptorOp
from affine_ir.traits import (
    ConstantLike,
    IsTerminator,
    ReturnLike,
    ViewLike,
    only_allocates_results,
    only_frees_memory,
)
from affine_ir.types import UnrankedMemRefType

__all__ = ["HostRole", "host_body_ops", "host_if_branch", "host_loop_range", "host_role", "host_value",
           "launches_of"]


class HostRole(enum.Enum):
    """What an op at a host function's top level does there."""

    VALUE = "value"
    ALLOCATE = "allocate"
    FREE = "free"
    VIEW = "view"
    TENSOR_MAP = "tensor_map"
    LAUNCH = "launch"
    LOOP = "loop"
    IF = "if"
    RETURN = "return"


def host_role(op: Operation) -> HostRole | None:
    """The role of ``op`` on the host, or None when the host cannot run it (it must be mapped to
    the GPU). A loop is the host's when it launches kernels, an if when it does or is empty
    (gpu-map may keep an if on the host for a nest in its branch that it then removes, as it runs
    no iteration; an empty loop at the top level is refused: it looks like gpu-map did not run).
    Decided by the op's class (constants, affine map values, launches), its traits (a
    return-like terminator) and its memory effects (allocating its result, freeing memory)."""
    if op.has_trait(ConstantLike) or isinstance(op, AffineMapValueOp):
        return HostRole.VALUE
    if isinstance(op, LaunchOp):
        return HostRole.LAUNCH
    if isinstance(op, TmaCreateDescriptorOp):
        return HostRole.TENSOR_MAP
    if op.has_trait(ViewLike) and len(op.operands) == 1 and op.results and (
            isinstance(op.results[0].type, UnrankedMemRefType) or op.results[0].type == op.operands[0].type):
        return HostRole.VIEW
    if op.has_trait(IsTerminator) and op.has_trait(ReturnLike):
        return HostRole.RETURN
    if isinstance(op, AffineForOp):
        body = [x for x in op.body.ops if not x.has_trait(IsTerminator)]
        ok = not op.iter_args and all(host_role(x) is not None for x in body) and launches_of(body)
        return HostRole.LOOP if ok else None
    if isinstance(op, AffineIfOp):
        body = [x for b in _branches(op) for x in b.ops if not x.has_trait(IsTerminator)]
        ok = not op.results and all(host_role(x) is not None for x in body) and (launches_of(body) or not body)
        return HostRole.IF if ok else None
    effects = op.memory_effects()
    if not effects:
        return None
    if only_allocates_results(op) and not isinstance(op, AllocaOp):
        return HostRole.ALLOCATE
    if only_frees_memory(op):
        return HostRole.FREE
    return None


def host_value(op: Operation, values: Mapping[Value, int | float]) -> int | float | tuple:
    """The value of the result of a ``VALUE`` op, its operands having ``values``: a constant's
    ``value``, or the affine map value of the operands (min/max of its results where the op says)."""
    if op.has_trait(ConstantLike):
        return op.value
    return op.evaluate([int(values[v]) for v in op.operands])


def launches_of(ops: Sequence[Operation]) -> list[LaunchOp]:
    """The kernel launches among ``ops`` and in the host loops and ifs among them, in program order."""
    out: list[LaunchOp] = []
    for op in ops:
        if isinstance(op, LaunchOp):
            out.append(op)
        elif host_role(op) in (HostRole.LOOP, HostRole.IF):
            out += launches_of(host_body_ops(op))
    return out


def host_body_ops(op: Operation) -> list[Operation]:
    """The ops the host may run inside ``op`` if it is a loop (its body) or an if (every branch), in
    order; none for other ops."""
    if isinstance(op, AffineForOp):
        return list(op.body.ops)
    if isinstance(op, AffineIfOp):
        return [x for b in _branches(op) for x in b.ops]
    return []


def _branches(op: AffineIfOp) -> list[Block]:
    return [op.then_block] + ([op.else_block] if op.else_block is not None else [])


def host_if_branch(op: AffineIfOp, values: Mapping[Value, int | float]) -> Block | None:
    """The branch of the host if ``op`` that runs, its condition operands having ``values`` (None:
    the condition is false and it has no else)."""
    cond = op.condition
    vals = [int(values[v]) for v in op.operands]
    if cond.contains(vals[: cond.num_dims], vals[cond.num_dims:]):
        return op.then_block
    return op.else_block


def host_loop_range(op: AffineForOp, values: Mapping[Value, int | float]) -> range:
    """The iterations of the host loop ``op``, its bound operands having ``values``."""
    def bounds(m, operands) -> tuple[int, ...]:
        vals = [int(values[v]) for v in operands]
        return m.evaluate(vals[: m.num_dims], vals[m.num_dims:])

    lo = max(bounds(op.lower_bound_map, op.lower_bound_operands))
    hi = min(bounds(op.upper_bound_map, op.upper_bound_operands))
    return range(lo, hi, op.step)
