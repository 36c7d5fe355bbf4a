"""Private buffers after fusion: an intermediate only used inside a fused nest shrinks to the
footprint of one iteration of the loop that received the slice (MLIR's ``createPrivateMemRef``).

For a local ``memref.alloc`` whose accesses are all inside the fused nest (besides its
``memref.dealloc``), and each read of which reads an element written earlier in the same
iteration of the ``depth`` outer loops (:func:`analysis.reads_covered_within`), a new buffer
of the footprint's constant bounding shape (:func:`analysis.memref_region` at ``depth``) is
allocated just before the nest; every access is rewritten relative to the footprint's lower
bound (``%t[%i, %j]`` -> ``%t_private[0, %j]`` for a row slice, ``[0]`` for a point); the old
alloc and dealloc go. Small buffers can go to a fast memory space (``fast_space`` when the
size is at most ``threshold_bytes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import analysis
from affine_ir import FuncOp, Operation, Value
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.types import memref as memref_type

from ..loop_utils import rewrite_access, value_name

__all__ = ["PrivateBuffer", "privatize", "private_candidates", "private_candidates_kept"]


@dataclass(frozen=True)
class PrivateBuffer:
    """``original`` replaced by ``buffer`` (``shape``, ``bytes``) inside the fused nest."""

    original: Value
    buffer: Value
    shape: tuple[int, ...]
    bytes: int | None

    def __str__(self) -> str:
        return f"{value_name(self.original)} -> private {self.buffer.type}"


def _local_alloc(m: Value) -> AllocOp | None:
    owner = m.owner
    return owner if isinstance(owner, AllocOp) else None


def private_candidates(nests: Operation | Sequence[Operation], memrefs: list[Value]) -> list[Value]:
    """Those of ``memrefs`` that are local allocs used only inside ``nests`` (and deallocs)."""
    nests = [nests] if isinstance(nests, Operation) else list(nests)
    return [m for m in memrefs if _local_alloc(m) is not None and
            all(isinstance(u, DeallocOp) or any(n.is_ancestor_of(u) for n in nests) for u in m.users())]


def private_candidates_kept(nest: Operation, producer: Operation, memrefs: list[Value],
                            consumer_stored: list[Value]) -> list[Value]:
    """Those of ``memrefs`` that may get a private buffer inside the fused ``nest`` while the
    ``producer`` stays (MLIR's ``canCreatePrivateMemRef``): static shapes whose stores inside
    ``nest`` nobody outside can miss. The slice's stores repeat the kept producer's (which
    still writes the original), so only the consumer's own stores (``consumer_stored``: the
    memrefs the consumer stored to before fusion) matter: such a memref qualifies only as a
    local alloc used by nothing but ``nest``, the producer and deallocs (a function argument
    or a buffer read later would lose those stores)."""
    own = [m for m in memrefs if any(m is c for c in consumer_stored)]
    dead = private_candidates((nest, producer), own)
    return [m for m in memrefs if m.type.has_static_shape and
            (not any(m is c for c in own) or any(m is d for d in dead))]


def privatize(func: FuncOp, nest: Operation, receiver: Operation, memref: Value, depth: int, *,
              fast_space=None, threshold_bytes: int = 0, keep_original: bool = False) -> PrivateBuffer | str:
    """Give ``memref`` (a candidate of :func:`private_candidates`) a private buffer per
    iteration of the ``depth`` loops ending at ``receiver`` inside the top-level ``nest``; the
    buffer, or the reason it was not made (the IR unchanged).

    ``keep_original``: ``memref`` stays for the other nests (a producer kept after fusion
    writes it); only the accesses inside ``nest`` move to the private buffer, which needs the
    same guarantee (every read inside reads a store of its own iteration) and no store inside
    ``nest`` that others must see (:func:`private_candidates_kept` says which qualify)."""
    da = analysis.DependenceAnalysis(func)
    if not analysis.reads_covered_within(da, nest, memref, depth):
        return (f"{value_name(memref)} keeps its size: a value stored in one iteration of the fused loops is read "
                f"in another (or a read has no store before it)")
    region = analysis.memref_region(receiver, memref, depth, scop=da.scop)
    if region is None or any(n is None for n in region.shape):
        return f"{value_name(memref)} keeps its size: its footprint per fused iteration has no constant bound"
    shape = tuple(int(n) for n in region.shape)
    if shape == tuple(memref.type.shape):
        return f"{value_name(memref)} keeps its size: one iteration of the fused loops uses all of it"
    size = region.size_in_bytes
    space = memref.type.memory_space
    if fast_space is not None and size is not None and size <= threshold_bytes:
        space = fast_space
    old = None if keep_original else _local_alloc(memref)
    name = (memref.name_hint or "buf") + "_private"
    loc = old.location if old is not None else nest.location
    alloc = AllocOp(memref_type(shape, memref.type.element_type, space), location=loc, name_hint=name)
    nest.parent.insert_before(nest, alloc)
    for op in list(nest.walk()):
        if isinstance(op, AffineAccessInterface) and op.memref is memref:
            rewrite_access(op, alloc.result, region)
    if old is None:
        nest.parent.insert_after(nest, DeallocOp([alloc.result], location=loc))
        return PrivateBuffer(memref, alloc.result, shape, size)
    deallocs = [u for u in memref.users() if isinstance(u, DeallocOp)]
    if deallocs:
        nest.parent.insert_after(nest, DeallocOp([alloc.result], location=deallocs[0].location))
    for u in deallocs:
        u.erase()
    old.erase()
    return PrivateBuffer(memref, alloc.result, shape, size)
