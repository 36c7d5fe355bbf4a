"""The ``nvgpu`` ops of Hopper (sm_90): mbarriers, TMA copies and warpgroup matrix multiply (MLIR syntax).

Ops::

    %b = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    nvgpu.mbarrier.init %b[%id], %count [, predicate = %p] : !B
    %tok = nvgpu.mbarrier.arrive %b[%id] : !B -> !nvgpu.mbarrier.token
    nvgpu.mbarrier.arrive.expect_tx %b[%id], %txcount [, predicate = %p] : !B
    nvgpu.mbarrier.arrive.remote %b[%id], %cta : !B      (not upstream's: see MBarrierArriveRemoteOp)
    nvgpu.mbarrier.try_wait.parity %b[%id], %parity, %ticks : !B
    %d = nvgpu.tma.create.descriptor %t box[%b0, %b1] : memref<*xf16> -> !D
    nvgpu.tma.prefetch.descriptor %d [, predicate = %p] : !D
    nvgpu.tma.async.load %d[%x, %y], %b[%id] to %dst [multicast_mask = %m] [, predicate = %p]
        : !D, !B -> memref<128x64xf16, 3>
    nvgpu.tma.async.store %src to %d[%x, %y] [, predicate = %p] : memref<128x64xf16, 3> -> !D
    %w = nvgpu.warpgroup.generate.descriptor %smem, %d : memref<128x64xf16, 3>, !D
        -> !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, 3>>
    %acc = nvgpu.warpgroup.mma.init.accumulator -> !nvgpu.warpgroup.accumulator<fragmented = vector<128x64xf32>>
    %r = nvgpu.warpgroup.mma %wa, %wb, %acc waitGroup = 0 transposeB : !WA, !WB, !Acc -> !Acc
    nvgpu.warpgroup.mma.store %r, %out : !Acc to memref<128x64xf32>

(``!B`` an ``!nvgpu.mbarrier.group``, ``!D`` an ``!nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, 3>,
swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>``, ``!WA``/``!WB`` warpgroup descriptors,
``!Acc`` a warpgroup accumulator.) Types print in full; in these ops' type positions the parser also takes
the form upstream prints, with the dialect prefix elided (``: <memorySpace = ...>``), and ``!alias`` names
defined at the top of the text. ``warpgroup.mma`` takes its attributes as keywords after the operands
(upstream's syntax) or as a dictionary (``{waitGroup = 0 : i64, transposeB}``). The warpgroup ops are
defined in :mod:`.nvgpu_warpgroup` and re-exported here; the ``nvvm`` ops these programs use (wgmma fences
and groups, proxy fences, ``setmaxregister``, bulk-copy groups) are in :mod:`.nvvm`, ``memref.view`` and
``memref.cast`` in :mod:`.memref`.

Warpgroups and wgmma
--------------------
A warpgroup is 128 consecutive threads of a block, starting at a multiple of 128: thread ``t`` (linear
thread id) is thread ``t % 128`` of warpgroup ``t // 128``. ``warpgroup.mma``, ``warpgroup.mma.store`` and
``nvvm.wgmma.*`` are warpgroup-collective (:class:`~affine_ir.traits.WarpgroupCollective`): the 128 threads
reach them together.

``warpgroup.mma`` computes ``D = A * B + C`` for its warpgroup with PTX ``wgmma.mma_async`` of shape
``m64nNk16``: f16 or bf16 inputs, f32 accumulators (f16 accumulators are not supported yet), N a multiple
of 8 from 8 to 256. The accumulator ``vector<M x N x f32>`` is the warpgroup's whole M x N tile, M a
multiple of 64 (M / 64 rows of wgmma instructions). A and B are read from shared memory through the
descriptors ``warpgroup.generate.descriptor`` makes of their tiles. As upstream, the descriptors' tile
types are the logical operands, A ``M x K`` and B ``K x N`` (the verifier checks ``A[1] == B[0]``), and the
flags say how they lie in shared memory (NVVM's layouts: ``transposeA`` makes A ``col``, ``transposeB`` B
``col``). K = 64: one 128-byte row of 16-bit elements, the ``swizzle_128b`` span (128 of 8-bit ones). A
without ``transposeA`` is K-major: row-major ``M x K``, a swizzled row of K per row of A; with it, MN-major:
stored ``K x M`` as M / 64 column chunks (below). B with ``transposeB`` is K-major: stored row-major
``N x K`` (each column of B contiguous, a swizzled row of K per column); without, MN-major: stored ``K x N``,
N a multiple of 64, as N / 64 column chunks one after the other, each a swizzled K x 64 block (64 elements
= 128 bytes a row; element ``(k, n)`` at byte ``(n // 64) * K * 128 + k * 128 + (n % 64) * 2`` of the tile
before the swizzle) -- what TMA loads of K x 64 boxes into consecutive views make. So a K-major B's
``memref<K x N>`` tile (a view of the bytes a TMA box of ``N x K`` filled) has its shape, not its layout, from
its type. 8-bit floats are K-major only (no ``transposeA``, ``transposeB`` required). Anything else is a
verifier error saying "not supported yet". Upstream also refuses ``transposeA`` without ``transposeB``
(an MN-major A with an MN-major B), which this dialect runs.

Each thread holds its part of the accumulator (PTX "wgmma .m64nNk16 register fragment D"): for thread
``t`` of the warpgroup (0 .. 127), warp ``w = t // 32``, lane ``l = t % 32``, ``g = l // 4`` and
``q = l % 4``, and for each 64-row part ``p`` (0 .. M/64 - 1), the thread holds N/2 f32 values
``d[p][i]`` (``i`` in 0 .. N/2 - 1): the elements at row ``64p + 16w + g + 8 * ((i // 2) % 2)`` and column
``8 * (i // 4) + 2q + (i % 2)``. ``warpgroup.mma.init.accumulator`` gives zeros;
``warpgroup.mma.store`` writes each thread's values to those elements of an M x N memref.

Shared memory and swizzle
-------------------------
Shared memory is physical: a memref's elements are stored row-major from its first byte, and a
``memref.view`` of a byte buffer starts its tile ``byte_shift`` bytes in. A TMA load with
``swizzle_128b`` writes the box element at row-major byte offset ``b`` (from the destination's first
byte) to byte ``b ^ (((b >> 7) & 7) << 4)``: in each 1024-byte block of eight 128-byte rows, 16-byte
chunk ``c`` of row ``r`` lands in chunk ``c ^ r``. The wgmma reads its operands through the same
swizzle, so a ``memref.load`` of a swizzled tile sees the swizzled (physical) positions, as on a GPU.
A swizzled tile must start 1024-byte aligned within its workgroup buffer (the verifier checks the
constant byte shift of a ``memref.view``; the interpreter traps otherwise). Every box dimension is 1
to 256 elements, and the last one is a multiple of 16 bytes within the swizzle span (128 bytes for
``swizzle_128b``).

TMA coordinates are innermost first, as upstream passes them unchanged to PTX
(``cp.async.bulk.tensor``): the 2-D tile at row ``r``, column ``c`` is ``[%c, %r]``. The ``box`` of
``tma.create.descriptor`` is outermost first (memref order), equal to the descriptor's tile shape.
``create.descriptor`` runs on the host (outside ``gpu.launch``) on an unranked memref made by
``memref.cast``.

mbarriers
---------
``mbarrier.create`` gives each block one group of ``num_barriers`` mbarriers (PTX ``mbarrier``) in shared
memory, like a workgroup ``memref.alloc``; they are uninitialized until ``mbarrier.init``. An mbarrier
counts arrivals and transaction bytes through phases. ``init(count)``: expected = pending = count,
tx = 0, phase = 0. ``arrive``: pending -= 1. ``arrive.expect_tx(n)``: tx += n, then an arrive (``n`` in
bytes). A TMA load completing subtracts its bytes from tx. When pending = 0 and tx = 0 the phase
completes: phase += 1 and pending = expected. ``try_wait.parity %b[%id], %P, %ticks`` returns once the
phase of parity P has completed, that is once the current phase's parity differs from P (upstream
lowers it to a loop of bounded waits with the time hint ``ticks``). An op with a false ``predicate``
does nothing on its thread.

When asynchronous work completes
--------------------------------
As late as allowed, so that a program that relies on anything earlier fails here, as it may on a
GPU. A TMA load is performed (its data written, its bytes taken from tx) only when a thread waits on
its mbarrier. A wgmma group reads its shared operands only when a wait retires it: the ``waitGroup``
of a later ``warpgroup.mma`` (each ``warpgroup.mma`` commits its wgmmas as one group, then waits until
at most ``waitGroup`` groups, by default 1, are pending) or ``nvvm.wgmma.wait.group.sync.aligned N``.
Reading a pending accumulator by any op other than a chained ``warpgroup.mma`` is a Trap naming the
op. A TMA store reads shared memory at its thread's next ``nvvm.cp.async.bulk.wait_group`` (or at the
thread's end).

Traits and effects, for the passes: the mbarrier ops but ``create``, ``tma.prefetch.descriptor`` and the
nvvm ops have unknown effects (never erased, nothing moves across them); ``mbarrier.create`` ALLOCATEs
its result; ``tma.async.load`` WRITEs its destination and reads and writes memory that is not named (the
global tensor, the mbarrier); ``tma.async.store`` READs its source and writes unnamed memory;
``warpgroup.generate.descriptor`` READs its tile; ``warpgroup.mma`` reads and writes unnamed memory (its
operands' tiles, the wgmma groups); ``warpgroup.mma.store`` WRITEs its destination;
``warpgroup.mma.init.accumulator`` is ``Pure``; ``tma.create.descriptor`` has no memory effect.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Operation, Value
from ..traits import EffectKind, MemoryEffect, NoMemoryEffect
from ..types import (
    MBarrierGroupType,
    MBarrierTokenType,
    TensorMapDescriptorType,
    UnrankedMemRefType,
    i1,
    i16,
    index,
    mbarrier_token,
)
from ._nvgpu_common import (
    MAX_BOX_DIM,
    check_optional,
    is_shared_space,
    parse_barrier_ref,
    parse_predicate,
    print_predicate,
    verify_barrier_ref,
    verify_coordinates,
    verify_tensor_map,
    verify_tile,
)
from .arith import constant_int
from .nvgpu_warpgroup import (
    WarpgroupGenerateDescriptorOp,
    WarpgroupMmaInitAccumulatorOp,
    WarpgroupMmaOp,
    WarpgroupMmaStoreOp,
)

__all__ = ["MBarrierArriveExpectTxOp", "MBarrierArriveOp", "MBarrierArriveRemoteOp", "MBarrierCreateOp",
           "MBarrierInitOp", "MBarrierTryWaitParityOp", "TmaAsyncLoadOp", "TmaAsyncStoreOp", "TmaCreateDescriptorOp",
           "TmaPrefetchOp", "WarpgroupGenerateDescriptorOp", "WarpgroupMmaInitAccumulatorOp", "WarpgroupMmaOp",
           "WarpgroupMmaStoreOp"]


class MBarrierCreateOp(Operation):
    """``%b = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<...>``: in a ``gpu.launch``, one group of
    ``num_barriers`` mbarriers per block in shared memory (uninitialized until ``mbarrier.init``).
    Effects: ALLOCATE of the result."""

    name = "nvgpu.mbarrier.create"

    def __init__(self, group_type: MBarrierGroupType, location=None, name_hint=None, attributes=None):
        super().__init__([], [group_type], attributes, location=location, result_names=[name_hint])

    @property
    def barriers(self) -> Value:
        return self.result

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """ALLOCATE of the group."""
        return (MemoryEffect(EffectKind.ALLOCATE, self.result),)

    def print_(self, p) -> None:
        p.write(f"nvgpu.mbarrier.create{p.attr_dict(self)} -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        attrs = p.parse_optional_attr_dict()
        p.expect("->")
        return cls(p.parse_nvgpu_type(MBarrierGroupType), location=loc, attributes=attrs)

    def verify_(self) -> None:
        t = self.result.type
        if not isinstance(t, MBarrierGroupType):
            raise self.error(f"the result must be an !nvgpu.mbarrier.group, got {t}")
        if not is_shared_space(t.memory_space):
            raise self.error(f"mbarriers live in shared memory (address space 3 or workgroup), got memorySpace = "
                             f"{t.memory_space}")


class _BarrierOp(Operation):
    """An op on mbarrier ``mbar_id`` of the group ``barriers``: operands ``barriers, mbar_id, ...``,
    syntax ``name %barriers[%mbar_id]<rest> : <group type>``; unknown effects (they change the
    mbarrier's state or wait on it: never erased, nothing moves across them)."""

    @property
    def barriers(self) -> Value:
        return self.operands[0]

    @property
    def mbar_id(self) -> Value:
        return self.operands[1]

    def _head(self, p) -> str:
        return f"{self.name} {p.value(self.barriers)}[{p.value(self.mbar_id)}]"

    @classmethod
    def _parse_tail(cls, p, barriers: Value):
        """``{attrs} : <group type>``: the attributes (the type checked against ``barriers``)."""
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(barriers, p.parse_nvgpu_type(MBarrierGroupType), tloc)
        return attrs

    def _verify_operands(self, fixed: int, optional: int = 0) -> None:
        if not fixed <= len(self.operands) <= fixed + optional:
            raise self.error(f"takes {fixed}{f' or {fixed + optional}' if optional else ''} operands, got "
                             f"{len(self.operands)}")
        verify_barrier_ref(self, self.barriers, self.mbar_id)


class MBarrierInitOp(_BarrierOp):
    """``nvgpu.mbarrier.init %b[%id], %count [, predicate = %p] : !B``: initialize the mbarrier to expect
    ``count`` arrivals per phase (phase 0, no pending transaction bytes)."""

    name = "nvgpu.mbarrier.init"

    def __init__(self, barriers: Value, mbar_id: Value, count: Value, predicate: Value | None = None,
                 location=None, attributes=None):
        super().__init__([barriers, mbar_id, count] + ([predicate] if predicate is not None else []), [],
                         attributes, location=location)

    @property
    def count(self) -> Value:
        return self.operands[2]

    @property
    def predicate(self) -> Value | None:
        return self.operands[3] if len(self.operands) > 3 else None

    def print_(self, p) -> None:
        p.write(f"{self._head(p)}, {p.value(self.count)}{print_predicate(p, self.predicate)}{p.attr_dict(self)} : "
                f"{self.barriers.type}")

    @classmethod
    def parse_(cls, p, loc):
        b, k = parse_barrier_ref(p, cls.name)
        p.expect(",")
        count = p.parse_operand()
        pred = parse_predicate(p)
        return cls(b, k, count, pred, location=loc, attributes=cls._parse_tail(p, b))

    def verify_(self) -> None:
        self._verify_operands(3, 1)
        check_optional(self, self.count, index, "count")
        check_optional(self, self.predicate, i1, "predicate")


class MBarrierArriveOp(_BarrierOp):
    """``%tok = nvgpu.mbarrier.arrive %b[%id] : !B -> !nvgpu.mbarrier.token``: one arrival on the mbarrier
    (its pending count drops by one); the token is the mbarrier's state before it."""

    name = "nvgpu.mbarrier.arrive"

    def __init__(self, barriers: Value, mbar_id: Value, location=None, name_hint=None, attributes=None):
        super().__init__([barriers, mbar_id], [mbarrier_token], attributes, location=location,
                         result_names=[name_hint])

    def print_(self, p) -> None:
        p.write(f"{self._head(p)}{p.attr_dict(self)} : {self.barriers.type} -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        b, k = parse_barrier_ref(p, cls.name)
        attrs = cls._parse_tail(p, b)
        p.expect("->")
        p.parse_nvgpu_type(MBarrierTokenType)
        return cls(b, k, location=loc, attributes=attrs)

    def verify_(self) -> None:
        self._verify_operands(2)
        if len(self.results) != 1 or not isinstance(self.result.type, MBarrierTokenType):
            raise self.error("gives one !nvgpu.mbarrier.token")


class MBarrierArriveRemoteOp(_BarrierOp):
    """``nvgpu.mbarrier.arrive.remote %b[%id], %cta : !B``: one arrival on mbarrier ``id`` of the group at the same
    place in the shared memory of block ``cta`` (index: its rank, the linear id in the thread-block cluster) --
    how a consumer hands a stage back to the producers of the other blocks of its cluster, whose multicast TMA
    loads fill it (PTX ``mapa.shared::cluster`` then ``mbarrier.arrive.release.cluster.shared::cluster``).
    **Not an op of upstream MLIR**, whose ``nvgpu`` dialect has no arrival on another block's mbarrier (its
    ``nvvm`` dialect has ``mapa`` on LLVM pointers only): text with it does not parse there."""

    name = "nvgpu.mbarrier.arrive.remote"

    def __init__(self, barriers: Value, mbar_id: Value, cta: Value, location=None, attributes=None):
        super().__init__([barriers, mbar_id, cta], [], attributes, location=location)

    @property
    def cta(self) -> Value:
        return self.operands[2]

    def print_(self, p) -> None:
        p.write(f"{self._head(p)}, {p.value(self.cta)}{p.attr_dict(self)} : {self.barriers.type}")

    @classmethod
    def parse_(cls, p, loc):
        b, k = parse_barrier_ref(p, cls.name)
        p.expect(",")
        cta = p.parse_operand(index)
        return cls(b, k, cta, location=loc, attributes=cls._parse_tail(p, b))

    def verify_(self) -> None:
        self._verify_operands(3)
        check_optional(self, self.cta, index, "cta")


class MBarrierArriveExpectTxOp(_BarrierOp):
    """``nvgpu.mbarrier.arrive.expect_tx %b[%id], %txcount [, predicate = %p] : !B``: expect ``txcount``
    more bytes of transactions (TMA loads) in the current phase, then arrive."""

    name = "nvgpu.mbarrier.arrive.expect_tx"

    def __init__(self, barriers: Value, mbar_id: Value, txcount: Value, predicate: Value | None = None,
                 location=None, attributes=None):
        super().__init__([barriers, mbar_id, txcount] + ([predicate] if predicate is not None else []), [],
                         attributes, location=location)

    @property
    def txcount(self) -> Value:
        return self.operands[2]

    @property
    def predicate(self) -> Value | None:
        return self.operands[3] if len(self.operands) > 3 else None

    def print_(self, p) -> None:
        p.write(f"{self._head(p)}, {p.value(self.txcount)}{print_predicate(p, self.predicate)}{p.attr_dict(self)}"
                f" : {self.barriers.type}")

    @classmethod
    def parse_(cls, p, loc):
        b, k = parse_barrier_ref(p, cls.name)
        p.expect(",")
        tx = p.parse_operand()
        pred = parse_predicate(p)
        return cls(b, k, tx, pred, location=loc, attributes=cls._parse_tail(p, b))

    def verify_(self) -> None:
        self._verify_operands(3, 1)
        check_optional(self, self.txcount, index, "txcount")
        check_optional(self, self.predicate, i1, "predicate")


class MBarrierTryWaitParityOp(_BarrierOp):
    """``nvgpu.mbarrier.try_wait.parity %b[%id], %parity, %ticks : !B``: block until the mbarrier's phase
    of parity ``parity`` (i1) has completed (``ticks``: a time hint per bounded wait)."""

    name = "nvgpu.mbarrier.try_wait.parity"

    def __init__(self, barriers: Value, mbar_id: Value, parity: Value, ticks: Value, location=None,
                 attributes=None):
        super().__init__([barriers, mbar_id, parity, ticks], [], attributes, location=location)

    @property
    def parity(self) -> Value:
        return self.operands[2]

    @property
    def ticks(self) -> Value:
        return self.operands[3]

    def print_(self, p) -> None:
        p.write(f"{self._head(p)}, {p.value(self.parity)}, {p.value(self.ticks)}{p.attr_dict(self)} : "
                f"{self.barriers.type}")

    @classmethod
    def parse_(cls, p, loc):
        b, k = parse_barrier_ref(p, cls.name)
        p.expect(",")
        parity = p.parse_operand()
        p.expect(",")
        ticks = p.parse_operand()
        return cls(b, k, parity, ticks, location=loc, attributes=cls._parse_tail(p, b))

    def verify_(self) -> None:
        self._verify_operands(4)
        check_optional(self, self.parity, i1, "parity")
        check_optional(self, self.ticks, index, "ticks")


class TmaCreateDescriptorOp(Operation):
    """``%d = nvgpu.tma.create.descriptor %t box[%b0, %b1] : memref<*xf16> -> !D``: on the host, a TMA
    descriptor of the global tensor ``%t`` (unranked, from ``memref.cast``) whose box is the descriptor's
    tile (``box`` outermost first). No memory effect; not speculatable (encoding can fail)."""

    name = "nvgpu.tma.create.descriptor"
    traits = frozenset({NoMemoryEffect})

    def __init__(self, tensor: Value, box: Sequence[Value], descriptor_type: TensorMapDescriptorType,
                 location=None, name_hint=None, attributes=None):
        super().__init__([tensor, *box], [descriptor_type], attributes, location=location, result_names=[name_hint])

    @property
    def tensor(self) -> Value:
        return self.operands[0]

    @property
    def box(self) -> tuple[Value, ...]:
        return self.operands[1:]

    def print_(self, p) -> None:
        p.write(f"nvgpu.tma.create.descriptor {p.value(self.tensor)} box[{p.values(self.box)}]{p.attr_dict(self)} : "
                f"{self.tensor.type} -> {self.result.type}")

    @classmethod
    def parse_(cls, p, loc):
        t = p.parse_operand()
        p.expect("box")
        p.expect("[")
        box = p.parse_operands("]")
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(t, p.parse_type(), tloc)
        p.expect("->")
        return cls(t, box, p.parse_nvgpu_type(TensorMapDescriptorType), location=loc, attributes=attrs)

    def verify_(self) -> None:
        d = verify_tensor_map(self, self.result.type)
        t = self.tensor.type
        if not isinstance(t, UnrankedMemRefType):
            raise self.error(f"the tensor must be an unranked memref (memref.cast it), got {t}")
        if is_shared_space(t.memory_space):
            raise self.error(f"the tensor must be in global memory, got {t}")
        if t.element_type != d.tensor.element_type:
            raise self.error(f"the tensor's element type {t.element_type} differs from the box's "
                             f"{d.tensor.element_type}")
        if len(self.box) != d.tensor.rank:
            raise self.error(f"needs one box size per dimension of {d.tensor} ({d.tensor.rank}), got {len(self.box)}")
        for k, (v, want) in enumerate(zip(self.box, d.tensor.shape)):
            if v.type != index:
                raise self.error(f"box sizes must be of index type, got {v.type}")
            n = constant_int(v)
            if n is not None and not 1 <= n <= MAX_BOX_DIM:
                raise self.error(f"box dimension {k} is {n}: each must be 1 to {MAX_BOX_DIM}")
            if n is not None and n != want:
                raise self.error(f"box dimension {k} is {n}, but the descriptor's box {d.tensor} has {want}")


class TmaPrefetchOp(Operation):
    """``nvgpu.tma.prefetch.descriptor %d [, predicate = %p] : !D``: bring the descriptor into the cache.
    A hint; unknown effects all the same, so it is never erased."""

    name = "nvgpu.tma.prefetch.descriptor"

    def __init__(self, descriptor: Value, predicate: Value | None = None, location=None, attributes=None):
        super().__init__([descriptor] + ([predicate] if predicate is not None else []), [], attributes,
                         location=location)

    @property
    def descriptor(self) -> Value:
        return self.operands[0]

    @property
    def predicate(self) -> Value | None:
        return self.operands[1] if len(self.operands) > 1 else None

    def print_(self, p) -> None:
        p.write(f"nvgpu.tma.prefetch.descriptor {p.value(self.descriptor)}{print_predicate(p, self.predicate)}"
                f"{p.attr_dict(self)} : {self.descriptor.type}")

    @classmethod
    def parse_(cls, p, loc):
        d = p.parse_operand()
        pred = parse_predicate(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(d, p.parse_nvgpu_type(TensorMapDescriptorType), tloc)
        return cls(d, pred, location=loc, attributes=attrs)

    def verify_(self) -> None:
        if not 1 <= len(self.operands) <= 2:
            raise self.error(f"takes a descriptor and an optional predicate, got {len(self.operands)} operands")
        verify_tensor_map(self, self.descriptor.type)
        check_optional(self, self.predicate, i1, "predicate")


class TmaAsyncLoadOp(Operation):
    """``nvgpu.tma.async.load %d[%x, %y], %b[%id] to %dst [multicast_mask = %m] [, predicate = %p] : !D, !B
    -> memref<..., 3>``: an asynchronous copy of the box at the coordinates (innermost first) of the
    descriptor's tensor into the shared tile ``dst``; its bytes complete a transaction on mbarrier
    ``mbar_id``. Effects: WRITE of ``dst``, and READ and WRITE of unnamed memory (the global tensor, the
    mbarrier)."""

    name = "nvgpu.tma.async.load"

    def __init__(self, descriptor: Value, coordinates: Sequence[Value], barriers: Value, mbar_id: Value, dst: Value,
                 multicast_mask: Value | None = None, predicate: Value | None = None, location=None,
                 attributes=None):
        tail = [v for v in (multicast_mask, predicate) if v is not None]
        super().__init__([descriptor, *coordinates, barriers, mbar_id, dst, *tail], [], attributes,
                         location=location)

    def _split(self) -> tuple[int, Value | None, Value | None]:
        """(position of ``barriers``, multicast_mask, predicate): the barrier group is the first
        operand of its type; after it come ``mbar_id``, ``dst``, then the mask (i16) and the predicate."""
        k = next((j for j, v in enumerate(self.operands) if j and isinstance(v.type, MBarrierGroupType)),
                 len(self.operands))
        tail = list(self.operands[k + 3:])
        pred = tail.pop() if tail and (len(tail) == 2 or tail[-1].type != i16) else None
        return k, (tail[0] if tail else None), pred

    @property
    def descriptor(self) -> Value:
        return self.operands[0]

    @property
    def coordinates(self) -> tuple[Value, ...]:
        return self.operands[1:self._split()[0]]

    @property
    def barriers(self) -> Value:
        return self.operands[self._split()[0]]

    @property
    def mbar_id(self) -> Value:
        return self.operands[self._split()[0] + 1]

    @property
    def dst(self) -> Value:
        return self.operands[self._split()[0] + 2]

    @property
    def multicast_mask(self) -> Value | None:
        return self._split()[1]

    @property
    def predicate(self) -> Value | None:
        return self._split()[2]

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """WRITE of ``dst``; READ and WRITE of unnamed memory (the global tensor, the mbarrier's count)."""
        return (MemoryEffect(EffectKind.WRITE, self.dst), MemoryEffect(EffectKind.READ),
                MemoryEffect(EffectKind.WRITE))

    def print_(self, p) -> None:
        mask = "" if self.multicast_mask is None else f" multicast_mask = {p.value(self.multicast_mask)}"
        p.write(f"nvgpu.tma.async.load {p.value(self.descriptor)}[{p.values(self.coordinates)}], "
                f"{p.value(self.barriers)}[{p.value(self.mbar_id)}] to {p.value(self.dst)}{mask}"
                f"{print_predicate(p, self.predicate)}{p.attr_dict(self)} : {self.descriptor.type}, "
                f"{self.barriers.type} -> {self.dst.type}")

    @classmethod
    def parse_(cls, p, loc):
        d, coords = p.parse_indexed_operand()
        p.expect(",")
        b, k = parse_barrier_ref(p, cls.name)
        p.expect("to")
        dst = p.parse_operand()
        mask = None
        if p.accept("multicast_mask"):
            p.expect("=")
            mask = p.parse_operand(i16)  # typed here: the operands after dst are told apart by type
        pred = parse_predicate(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(d, p.parse_nvgpu_type(TensorMapDescriptorType), tloc)
        p.expect(",")
        p.check_type(b, p.parse_nvgpu_type(MBarrierGroupType), tloc)
        p.expect("->")
        p.check_type(dst, p.parse_type(), tloc)
        return cls(d, coords, b, k, dst, mask, pred, location=loc, attributes=attrs)

    def verify_(self) -> None:
        k = self._split()[0]
        if k + 3 > len(self.operands):
            raise self.error("expects a descriptor, coordinates, an mbarrier group, an mbar_id and a destination")
        d = verify_tensor_map(self, self.descriptor.type)
        verify_coordinates(self, self.coordinates, d.tensor)
        verify_barrier_ref(self, self.barriers, self.mbar_id)
        verify_tile(self, self.dst, d, "destination")
        check_optional(self, self.multicast_mask, i16, "multicast_mask")
        check_optional(self, self.predicate, i1, "predicate")


class TmaAsyncStoreOp(Operation):
    """``nvgpu.tma.async.store %src to %d[%x, %y] [, predicate = %p] : memref<..., 3> -> !D``: an
    asynchronous copy of the shared tile ``src`` to the box at the coordinates (innermost first) of the
    descriptor's tensor (a bulk group: ``nvvm.cp.async.bulk.commit.group/wait_group``). Effects: READ of
    ``src``, WRITE of unnamed memory (the global tensor)."""

    name = "nvgpu.tma.async.store"

    def __init__(self, src: Value, descriptor: Value, coordinates: Sequence[Value], predicate: Value | None = None,
                 location=None, attributes=None):
        super().__init__([src, descriptor, *coordinates] + ([predicate] if predicate is not None else []), [],
                         attributes, location=location)

    @property
    def src(self) -> Value:
        return self.operands[0]

    @property
    def descriptor(self) -> Value:
        return self.operands[1]

    @property
    def coordinates(self) -> tuple[Value, ...]:
        rest = self.operands[2:]
        return rest[:-1] if rest and rest[-1].type == i1 else rest

    @property
    def predicate(self) -> Value | None:
        rest = self.operands[2:]
        return rest[-1] if rest and rest[-1].type == i1 else None

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """READ of ``src``; WRITE of unnamed memory (the global tensor)."""
        return (MemoryEffect(EffectKind.READ, self.src), MemoryEffect(EffectKind.WRITE))

    def print_(self, p) -> None:
        p.write(f"nvgpu.tma.async.store {p.value(self.src)} to {p.value(self.descriptor)}[{p.values(self.coordinates)}]"
                f"{print_predicate(p, self.predicate)}{p.attr_dict(self)} : {self.src.type} -> {self.descriptor.type}")

    @classmethod
    def parse_(cls, p, loc):
        src = p.parse_operand()
        p.expect("to")
        d, coords = p.parse_indexed_operand()
        pred = parse_predicate(p)
        attrs = p.parse_optional_attr_dict()
        tloc = p.loc()
        p.expect(":")
        p.check_type(src, p.parse_type(), tloc)
        p.expect("->")
        p.check_type(d, p.parse_nvgpu_type(TensorMapDescriptorType), tloc)
        return cls(src, d, coords, pred, location=loc, attributes=attrs)

    def verify_(self) -> None:
        if len(self.operands) < 2:
            raise self.error("expects a source, a descriptor and coordinates")
        d = verify_tensor_map(self, self.descriptor.type)
        verify_coordinates(self, self.coordinates, d.tensor)
        verify_tile(self, self.src, d, "source")
