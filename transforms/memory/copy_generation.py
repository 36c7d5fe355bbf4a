"""``affine-data-copy-generate``: copy the footprint of a loop's accesses into fast memory.

:func:`generate_copies` is MLIR's ``affineDataCopyGenerate``/``generateCopyForMemRegion``
(``mlir/lib/Dialect/Affine/Utils/LoopUtils.cpp``): for each memref accessed under a loop (or
a range of ops of one block) it computes the footprint at that depth
(:func:`analysis.memref_region`: a box whose lower bounds are affine in the outer IVs and the
symbols, of constant size), allocates a buffer of that shape (``padding`` more elements on the
innermost dimension, against shared-memory bank conflicts) in the fast memory space, copies the
region in before and (when it is written) back out after, and rewrites the accesses to index
the buffer relative to the region's lower bound::

    affine.for %i = 0 to 64 step 16 {                affine.for %i = 0 to 64 step 16 {
      affine.for %ii = %i to %i + 16 {                 %A_fast = memref.alloc() : memref<16xf32, 1>
        %a = affine.load %A[%ii] ...        ==>        affine.for %A_c0 = %i to %i + 16 {
        ...                                              %0 = affine.load %A[%A_c0] ...
                                                         affine.store %0, %A_fast[%A_c0 - %i] ...
                                                       }
                                                       affine.for %ii = %i to %i + 16 {
                                                         %a = affine.load %A_fast[%ii - %i] ...
                                                       memref.dealloc %A_fast ...

:class:`AffineDataCopyGenerate` is the pass, with MLIR's options; like MLIR's it walks each
block, tries each loop, and goes into the loop's body when its footprint does not fit the
capacity (or has no constant size). Where ours differs from MLIR's, on purpose:

- ``generate-dma`` defaults to false and true is refused: there are no DMA ops here;
  ``min-dma-transfer`` and ``tag-mem-space`` are accepted and unused (they only matter for DMA).
- ``fast-mem-space`` also takes ``workgroup``/``private``/``global`` for
  ``#gpu.address_space<...>``; ``padding`` (elements) is ours.
- A written region is also copied in (MLIR copies only read regions in), so elements of the box
  that the loop does not write keep their values when the buffer is copied back (MLIR's
  write-only copy-out writes garbage there for strided or partial stores).
- Copy loops are clamped to the memref's bounds and to the exact accessed range, bounds that
  interval arithmetic proves redundant dropped, so copies never touch out-of-bounds elements
  even at outer iterations where the loop accesses nothing.
- A copy is hoisted above an enclosing loop (MLIR's ``findHighestBlockForPlacement``) only when
  no other op in that loop touches the memref and its bounds use no value defined in that loop.
- Memrefs with dynamic dims, accessed by non-affine ops, defined inside the loop, or whose region
  starts at a value defined inside the copied ops (an ``affine.max`` of an earlier copy's lower
  bound in a block range) are skipped (recorded); a block range may start with any op
  containing affine accesses (MLIR: a load or store), so accesses under ``affine.if`` are
  copied at inner levels too.
- Function memref arguments are assumed not to alias (as for every affine transform here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from affine_ir import Block, BlockArgument, FuncOp, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineParallelOp
from affine_ir.dialects.memref import AllocOp, DeallocOp, DimOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.types import MemRefType, memref
from analysis import MemRefRegion, Scop, UnsupportedError, element_size_in_bytes, memref_region

from ..errors import TransformError
from ..loop_utils import loop_name, loops_text, parse_memory_space, rewrite_access, value_name
from ..pass_base import Pass, PassContext, option, register_pass
from .copy_generation_nests import build_copy_nest, copy_bounds, iv_ranges

# parse_memory_space: re-exported from its old home (it lives in loop_utils, shared with fusion)
__all__ = ["AffineDataCopyGenerate", "CopyBuffer", "CopyResult", "generate_copies", "parse_memory_space"]

PASS = "affine-data-copy-generate"
UNLIMITED = 2**64 - 1  # MLIR's default fast-mem-capacity (KiB): unlimited


@dataclass
class CopyBuffer:
    """One memref copied to fast memory: its region, the buffer, and where the copies are."""

    memref: Value
    buffer: Value
    region: MemRefRegion
    placement: list[Operation]  # the ops the copies surround (the range, or a loop it was hoisted out of)
    copy_in: bool
    copy_out: bool
    size_in_bytes: int

    @property
    def depth(self) -> int:
        return self.region.depth

    def __str__(self) -> str:
        how = "in and out" if self.copy_in and self.copy_out else "in" if self.copy_in else "out"
        return (f"{value_name(self.memref)} -> {self.buffer.type} ({_size(self.size_in_bytes)}) at depth "
                f"{self.depth}, copied {how}")


@dataclass
class CopyResult:
    """What :func:`generate_copies` did: the buffers made, the memrefs skipped (with why)."""

    depth: int
    buffers: list[CopyBuffer] = field(default_factory=list)
    skipped: list[tuple[Value, str]] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(b.size_in_bytes for b in self.buffers)


def generate_copies(target: Operation | Sequence[Operation], *, fast_mem_space=1,
                    capacity_bytes: int | None = None, padding: int = 0, memrefs: Sequence[Value] | None = None,
                    slow_mem_space=0, hoist: bool = True, scop: Scop | None = None) -> CopyResult:
    """Copy the footprint of the accesses under ``target`` (a loop, or consecutive ops of one
    block) into buffers in ``fast_mem_space`` and rewrite those accesses to use them.

    For each memref in ``slow_mem_space`` (only those in ``memrefs`` when given) accessed by
    affine loads/stores under ``target``: a ``memref.alloc`` of the region's constant shape
    (``padding`` more elements on the last dim) before, a copy-in nest before (when read, or
    written: elements not written keep their values), a copy-out nest after (when written), a
    ``memref.dealloc`` after. A copy is hoisted above enclosing loops its region does not depend
    on when nothing else in them touches the memref (``hoist``).

    Guarantees: the program computes what it computed (copies run in program order around the
    accesses); copies stay in bounds of the memref and the buffer. Raises TransformError, before
    changing anything, when a region has no constant size or the buffers need more than
    ``capacity_bytes`` (``needs 80 KiB for %A and %B at depth 1, capacity 48 KiB``). Memrefs that
    cannot be copied (non-affine or unknown uses, dynamic dims, defined inside, a region whose
    bounds use a value defined inside) are skipped and listed in ``CopyResult.skipped``; a copy
    is never placed above a value its bounds use.

    Example: a 16-tiled loop ``%ii = %i to %i + 16`` reading ``%A[%ii]`` gets
    ``%A_fast = memref.alloc() : memref<16xf32, 1>``, the copy loop ``%A_c0 = %i to %i + 16``
    before it, and its load becomes ``affine.load %A_fast[%ii - %i]``.
    """
    ops = _as_range(target)
    fast_space = parse_memory_space(fast_mem_space)
    slow_space = parse_memory_space(slow_mem_space)
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    depth = _depth(ops[0])
    result = CopyResult(depth)
    if scop is None:
        scop = _scop_for(ops[0])
    plans = []
    for mem in _accessed_memrefs(ops, memrefs, slow_space, result):
        plan = _plan(mem, ops, depth, hoist, scop, result)
        if plan is not None:
            plans.append(plan)
    _check_sizes(plans, ops, depth, padding, capacity_bytes)
    for plan in plans:
        result.buffers.append(_materialize(plan, ops, fast_space, padding))
    return result


# -- what to copy ----------------------------------------------------------------------------------
def _as_range(target: Operation | Sequence[Operation]) -> list[Operation]:
    ops = [target] if isinstance(target, Operation) else list(target)
    if not ops:
        raise ValueError("generate_copies needs a loop or a non-empty range of ops")
    block = ops[0].parent
    if block is None:
        raise ValueError("generate_copies: the ops are not in a block")
    start = block.index_of(ops[0])
    if any(o.parent is not block for o in ops) or block.ops[start : start + len(ops)] != ops:
        raise ValueError("generate_copies: the ops must be consecutive ops of one block")
    if any(o.is_terminator for o in ops):
        raise ValueError("generate_copies: a block range cannot include the terminator")
    return ops


def _depth(op: Operation) -> int:
    n = 0
    for a in op.ancestors():
        if isinstance(a, AffineForOp):
            n += 1
        elif isinstance(a, AffineParallelOp):
            n += len(a.ivs)
    return n


def _scop_for(op: Operation) -> Scop | None:
    func = next((a for a in op.ancestors() if isinstance(a, FuncOp)), None)
    if func is None:
        return None
    try:
        return Scop(func)
    except UnsupportedError:
        return None


def _inside(op: Operation, ops: Sequence[Operation]) -> bool:
    return any(op is o or o.is_ancestor_of(op) for o in ops)


def _accessed_memrefs(ops, only, slow_space, result: CopyResult) -> list[Value]:
    """Memrefs that affine accesses in ``ops`` use, first-use order; the others are skipped with why."""
    found: list[Value] = []
    for top in ops:
        for op in top.walk():
            if isinstance(op, AffineAccessInterface) and all(op.memref is not m for m in found):
                found.append(op.memref)
    out = []
    for mem in found:
        if only is not None and all(mem is not m for m in only):
            continue
        mt: MemRefType = mem.type
        why = None
        if mt.memory_space != slow_space:
            why = f"in memory space {mt.memory_space or 0}, not the slow memory space"
        elif any(d is None for d in mt.shape):
            why = f"dynamic shape {mt}"
        elif element_size_in_bytes(mt) is None:
            why = f"element type {mt.element_type} has no size"
        elif not _defined_before(mem, ops[0]):
            why = "defined inside the copied ops"
        else:
            why = _other_use(mem, ops)
        if why is None:
            out.append(mem)
        else:
            result.skipped.append((mem, why))
    return out


def _defined_before(v: Value, op: Operation) -> bool:
    """``v`` is available just before ``op`` (a block argument or a result of an op before it
    in an enclosing block)."""
    owner = v.owner
    chain = [op, *op.ancestors()]
    if isinstance(v, BlockArgument) or isinstance(owner, Block):
        return any(a.parent is owner for a in chain)
    for a in chain:
        if a.parent is owner.parent and owner.parent is not None:
            return owner.parent.index_of(owner) < owner.parent.index_of(a)
    return False


def _other_use(mem: Value, ops) -> str | None:
    """Why ``mem`` cannot be copied because of a use under ``ops`` that is not an affine access."""
    for user in mem.users():
        if not _inside(user, ops) or isinstance(user, DimOp):
            continue
        if not isinstance(user, AffineAccessInterface) or user.memref is not mem:
            return f"used by '{user.name}' (not an affine access) at {user.location}"
    return None


@dataclass
class _Plan:
    memref: Value
    region: MemRefRegion
    placement: list[Operation]


def _plan(mem: Value, ops, depth: int, hoist: bool, scop, result: CopyResult) -> _Plan | None:
    """The region of ``mem`` at ``depth`` and where its copies go (hoisted when allowed)."""
    region = memref_region(ops, mem, depth, scop=scop)
    if region is None or region.num_elements == 0:
        result.skipped.append((mem, "not accessed (empty loops)"))
        return None
    if not region.is_exact:
        result.skipped.append((mem, "accessed by non-affine ops"))
        return None
    late = _late_operand(region, ops[0])
    if late is not None:
        result.skipped.append((mem, f"its region depends on {value_name(late)}, defined inside the copied ops"))
        return None
    placement = list(ops)
    while hoist and region.depth > 0 and region.num_elements is not None:
        loop = placement[0].parent_op
        if not isinstance(loop, AffineForOp) or _uses_dim(region, region.depth - 1):
            break
        if any(not _inside(u, placement) for u in mem.users() if loop.is_ancestor_of(u)):
            break
        if not _defined_before(mem, loop):
            break
        outer = memref_region(loop, mem, region.depth - 1, scop=scop)
        if outer is None or outer.num_elements is None or outer.num_elements > region.num_elements:
            break
        if _late_operand(outer, loop) is not None:  # its bounds would use a value defined in the loop
            break
        region, placement = outer, [loop]
    return _Plan(mem, region, placement)


def _late_operand(region: MemRefRegion, op: Operation) -> Value | None:
    """An operand of the region's bounds (an outer IV or a symbol) not available just before
    ``op``, where the copies and the buffer's index offsets would use it; None when all are."""
    return next((v for v in region.lower_bound_operands if not _defined_before(v, op)), None)


def _uses_dim(region: MemRefRegion, d: int) -> bool:
    maps = list(region.lower_bounds) + [m for m in region.extents if not isinstance(m, (int, type(None)))]
    for b in region.exact_bounds:
        if b is not None:
            maps += list(b)
    return any(d in e.used_dims() for m in maps for e in m.results)


def _buffer_shape(region: MemRefRegion, padding: int) -> tuple[int, ...]:
    shape = list(region.shape)
    if shape and padding:
        shape[-1] += padding
    return tuple(shape)


def _buffer_bytes(region: MemRefRegion, padding: int) -> int:
    n = 1
    for s in _buffer_shape(region, padding):
        n *= s
    return n * element_size_in_bytes(region.memref.type)


def _check_sizes(plans: list[_Plan], ops, depth: int, padding: int, capacity: int | None) -> None:
    unbounded = [p for p in plans if p.region.num_elements is None]
    what = _what(ops)
    if unbounded:
        regions = "; ".join(str(p.region) for p in unbounded)
        raise TransformError(PASS, f"cannot copy for {what} at depth {depth}: no constant size for {regions}",
                             loops=_loops(ops))
    total = sum(_buffer_bytes(p.region, padding) for p in plans)
    if capacity is not None and total > capacity:
        names = _names([value_name(p.memref) for p in plans])
        raise TransformError(PASS, f"cannot copy for {what}: needs {_size(total)} for {names} at depth {depth}, "
                             f"capacity {_size(capacity)}", loops=_loops(ops))


def _loops(ops) -> tuple[Operation, ...]:
    return tuple(o for o in ops if isinstance(o, AffineForOp)) or tuple(ops[:1])


def _what(ops) -> str:
    if len(ops) == 1 and isinstance(ops[0], AffineForOp):
        return f"loop {loops_text(ops)}"
    parent = ops[0].parent_op
    where = f"the body of {loop_name(parent)}" if isinstance(parent, AffineForOp) else \
        f"a branch of the affine.if at {parent.location}" if isinstance(parent, AffineIfOp) else "the function body"
    return f"{len(ops)} op{'s' if len(ops) != 1 else ''} of {where}"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    k = n / 1024
    return f"{k:.0f} KiB" if k == int(k) else f"{k:.1f} KiB"


# -- making the copies ----------------------------------------------------------------------------------
def _materialize(plan: _Plan, ops, fast_space, padding: int) -> CopyBuffer:
    region, mem, placement = plan.region, plan.memref, plan.placement
    loc = placement[0].location
    name = value_name(mem)[1:].replace("#", "_")
    mt: MemRefType = mem.type
    buf_type = memref(_buffer_shape(region, padding), mt.element_type, fast_space)
    first, last = placement[0], placement[-1]
    block = first.parent
    alloc = AllocOp(buf_type, location=loc, name_hint=f"{name}_fast")
    block.insert_before(first, alloc)
    buffer = alloc.result
    bounds = copy_bounds(region, iv_ranges(first))
    written = region.kind != "read"
    # Copy in what is read, and what is written too: the copy-out writes back the whole box.
    for op in build_copy_nest(region, bounds, buffer, True, loc, name):
        block.insert_before(first, op)
    anchor = last
    if written:
        for op in build_copy_nest(region, bounds, buffer, False, loc, name):
            block.insert_after(anchor, op)
            anchor = op
    block.insert_after(anchor, DeallocOp([buffer], location=loc))
    for top in ops:
        for op in list(top.walk()):
            if isinstance(op, AffineAccessInterface) and op.memref is mem:
                rewrite_access(op, buffer, region)
    return CopyBuffer(mem, buffer, region, placement, True, written, _buffer_bytes(region, padding))


# -- the pass ----------------------------------------------------------------------------------------
@register_pass
@dataclass(frozen=True)
class AffineDataCopyGenerate(Pass):
    """MLIR's ``affine-data-copy-generate`` with point-wise copies (see the module docstring)."""

    name = "affine-data-copy-generate"
    summary = "Generate explicit copying for affine memory operations"

    fast_mem_capacity: int = option(UNLIMITED, "Set fast memory space capacity in KiB (default: unlimited)")
    fast_mem_space: str = option("1", "Fast memory space identifier for copy generation: an integer, or "
                                 "workgroup/private/global for #gpu.address_space<...> (default: 1)")
    generate_dma: bool = option(False, "Generate DMA instead of point-wise copy (not supported: no DMA ops; "
                                "default false, MLIR's is true)")
    min_dma_transfer: int = option(1024, "Minimum DMA transfer size in bytes (unused: no DMA)")
    slow_mem_space: int = option(0, "Slow memory space identifier for copy generation (default: 0)")
    skip_non_unit_stride_loops: bool = option(False, "Testing purposes: avoid non-unit stride loop choice depths "
                                              "for copy placement")
    tag_mem_space: int = option(0, "Tag memory space identifier for copy generation (unused: no DMA)")
    padding: int = option(0, "Elements added to the innermost dimension of each buffer (bank conflicts)")

    def __post_init__(self) -> None:
        if self.generate_dma:
            raise ValueError("generate-dma=true is not supported: there are no DMA ops here; "
                             "use generate-dma=false (point-wise copy loops)")
        parse_memory_space(self.fast_mem_space)
        if self.padding < 0:
            raise ValueError(f"padding must be >= 0, got {self.padding}")
        if self.fast_mem_capacity < 0:
            raise ValueError(f"fast-mem-capacity must be >= 0, got {self.fast_mem_capacity}")

    @property
    def capacity_bytes(self) -> int | None:
        return None if self.fast_mem_capacity >= UNLIMITED else self.fast_mem_capacity * 1024

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        try:
            scop = Scop(func)  # one analysis per function: later ranges' statements stay valid
        except UnsupportedError:
            scop = None
        self._run_on_block(func.body, ctx, scop)

    def _run_on_block(self, block: Block, ctx: PassContext, scop) -> None:
        for rng in _block_ranges(block):
            loop = rng[0] if len(rng) == 1 and isinstance(rng[0], AffineForOp) else None
            if loop is not None and self.skip_non_unit_stride_loops and loop.step != 1:
                self._run_on_block(loop.body, ctx, scop)
                continue
            try:
                result = self._copy(rng, scop)
            except TransformError as e:
                if loop is None:
                    ctx.refused(rng[0], e)
                    continue
                ctx.note(loop, f"{e.reason}; copying inside {loop_name(loop)} instead")
                self._run_on_block(loop.body, ctx, scop)
                continue
            _record(result, rng, ctx, self.capacity_bytes)

    def _copy(self, rng: list[Operation], scop) -> CopyResult:
        return generate_copies(rng, fast_mem_space=self.fast_mem_space, capacity_bytes=self.capacity_bytes,
                               padding=self.padding, slow_mem_space=self.slow_mem_space, scop=scop)


def _block_ranges(block: Block) -> list[list[Operation]]:
    """MLIR's block ranges: each ``affine.for`` alone, and each run of other ops that starts at
    an op containing an affine access (up to the next loop or the terminator)."""
    ranges: list[list[Operation]] = []
    current: list[Operation] = []
    for op in block.ops:
        if isinstance(op, AffineForOp) or op.is_terminator:
            if current:
                ranges.append(current)
                current = []
            if isinstance(op, AffineForOp):
                ranges.append([op])
            continue
        if current or any(isinstance(o, AffineAccessInterface) for o in op.walk()):
            current.append(op)
    if current:
        ranges.append(current)
    return ranges


def _record(result: CopyResult, rng, ctx: PassContext, capacity: int | None) -> None:
    for mem, why in result.skipped:
        ctx.note(rng[0], f"{value_name(mem)} not copied: {why}")
    if not result.buffers:
        return
    cap = "" if capacity is None else f" of {_size(capacity)}"
    what = _what(rng)
    bufs = "; ".join(str(b) for b in result.buffers)
    ctx.applied(rng[0], f"copies for {what} at depth {result.depth} ({_size(result.total_bytes)}{cap}): {bufs}")
