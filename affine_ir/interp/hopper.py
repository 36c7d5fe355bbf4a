"""Run-time semantics of Hopper's asynchronous ops (``_H`` in generated code): mbarriers, TMA bulk
tensor copies, warpgroup MMA (layouts and rules in :mod:`affine_ir.dialects.nvgpu_hopper`).

Asynchronous work completes as late as the program lets it, so a kernel that reads too early or
reuses a buffer too soon computes a wrong result here, as it may on a GPU:

- a TMA load (:meth:`BlockAsync.tma_load`) is pending until a thread waits on its mbarrier; the
  wait performs it (writes the shared tile, completes its bytes on the barrier);
- a ``warpgroup.mma`` reads its shared operands only when a wait retires its group (its own
  ``waitGroup``, a later one's, or ``nvvm.wgmma.wait.group.sync.aligned``); the accumulator it
  returns (:class:`Accumulator`) cannot be read before;
- a TMA store reads its shared tile at the thread's next ``nvvm.cp.async.bulk.wait_group`` (or
  its end).

The blocks of a thread-block cluster share a :class:`Cluster`: a multicast TMA load is one pending load per
block of its mask (into the tile and onto the mbarrier at the same places of that block's shared memory),
``mbarrier.arrive.remote`` arrives on another block's mbarrier, ``nvvm.cluster.arrive/wait`` are the cluster's
barrier; a copy into, or an arrival on, a block whose threads have all ended is an error (the block's
shared memory is gone: a kernel must keep its blocks alive, with a cluster barrier, while others may still
reach them).

Shared memory is physical: a swizzled TMA tile is stored at its swizzled byte positions (see
:func:`swizzle`), and the matrix units read it back through the same function.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from .memory import Buffer
from .mma import matmul_accumulate
from .semantics import OutOfBounds, Trap

WARPGROUP = 128
_EAGER = [False]


@contextlib.contextmanager
def eager_copies() -> Iterator[None]:
    """Within the block, TMA copies complete when they are issued instead of as late as possible: a
    kernel that hands a stage back to its producer before the matrix units have read it (so the next
    load overwrites the tile an in-flight wgmma still reads) then computes a wrong result. Tests run a
    kernel both ways (the late schedule catches reads before the wait)."""
    saved = _EAGER[0]
    _EAGER[0] = True
    try:
        yield
    finally:
        _EAGER[0] = saved
SWIZZLE_SPAN = {"none": 0, "swizzle_32b": 32, "swizzle_64b": 64, "swizzle_128b": 128}


def swizzle(byte_offsets: np.ndarray, span: int) -> np.ndarray:
    """Physical byte offsets of row-major ``byte_offsets`` in a tile swizzled with a ``span``-byte
    pattern (32, 64 or 128; 0: none): the 16-byte chunk index (bits 4 and up, ``log2(span / 16)``
    of them) is XORed with the 128-byte row index (bits 7 and up) modulo ``span / 16``. The
    pattern repeats every ``8 * span`` bytes, so a tile must start at such a multiple."""
    if not span:
        return byte_offsets
    mask = span // 16 - 1
    return byte_offsets ^ (((byte_offsets >> 7) & mask) << 4)


def _bytes_view(buf: Buffer) -> np.ndarray:
    return buf.array.reshape(-1).view(np.uint8)


def _root_offset(buf: Buffer) -> int:
    """The byte offset of ``buf``'s first element in the allocation it views (0 for an allocation)."""
    base = buf.array
    while isinstance(base, np.ndarray) and base.base is not None and isinstance(base.base, np.ndarray):
        base = base.base
    return int(buf.array.__array_interface__["data"][0] - base.__array_interface__["data"][0])


def _check_alignment(buf: Buffer, span: int, what: str) -> None:
    if span and _root_offset(buf) % (8 * span):
        raise Trap(f"{what}: a tile swizzled with a {span}-byte pattern must start at a multiple of {8 * span} bytes "
                   f"of its shared buffer, this one starts at byte {_root_offset(buf)}")


def tile_read(buf: Buffer, span: int, shape: tuple | None = None) -> np.ndarray:
    """The logical (row-major) contents of the shared tile ``buf`` stored swizzled with ``span``, as a
    ``shape`` array (default: the buffer's; a K-major B's ``K x N`` view holds ``N x K`` rows)."""
    if not buf.alive:
        raise Trap("access to a deallocated buffer")
    item = buf.array.dtype.itemsize
    n = buf.array.size
    logical = np.arange(n * item, dtype=np.int64)
    phys = swizzle(logical, span)
    raw = _bytes_view(buf)[phys]
    return raw.view(buf.array.dtype).reshape(shape or buf.shape)


def tile_read_chunked(buf: Buffer, span: int, shape: tuple | None = None) -> np.ndarray:
    """The logical ``K x N`` contents of an MN-major wgmma tile: ``N / c`` column chunks (``c`` elements of
    ``span`` bytes a row) one after the other, each a swizzled ``K x c`` block (as TMA loads of ``K x c``
    boxes into consecutive views lay them out); ``shape``: ``(K, N)`` (default: the buffer's)."""
    if not buf.alive:
        raise Trap("access to a deallocated buffer")
    rows, cols = shape or buf.shape
    item = buf.array.dtype.itemsize
    chunk = span // item
    k = np.arange(rows, dtype=np.int64)[:, None]
    n = np.arange(cols, dtype=np.int64)[None, :]
    first = (n // chunk) * (rows * span) + k * span + (n % chunk) * item  # each element's first byte
    phys = swizzle(first[..., None] + np.arange(item, dtype=np.int64), span)
    raw = _bytes_view(buf)[phys.reshape(-1)]
    return raw.view(buf.array.dtype).reshape(rows, cols)


def tile_write(buf: Buffer, values: np.ndarray, span: int) -> None:
    """Store the logical tile ``values`` into ``buf`` at its swizzled physical positions."""
    if not buf.alive:
        raise Trap("access to a deallocated buffer")
    raw = np.ascontiguousarray(values.astype(buf.array.dtype, copy=False)).reshape(-1).view(np.uint8)
    logical = np.arange(raw.size, dtype=np.int64)
    _bytes_view(buf)[swizzle(logical, span)] = raw


# ----------------------------------------------------------------------------------------
# Tensor maps (nvgpu.tma.create.descriptor)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorMap:
    """A TMA descriptor: the global tensor, the box (outermost dimension first), the swizzle span
    in bytes and the out-of-bounds fill."""

    tensor: Buffer
    box: tuple[int, ...]
    span: int
    nan_fill: bool

    def window(self, coords: tuple[int, ...]) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
        """For the box at ``coords`` (innermost first, as PTX takes them): the slices of the global
        tensor inside it and the matching slices of the box."""
        outer_first = tuple(reversed(coords))
        if len(outer_first) != len(self.box):
            raise Trap(f"{len(coords)} coordinates for a {len(self.box)}-d tensor map")
        g_sl, b_sl = [], []
        for c, b, n in zip(outer_first, self.box, self.tensor.shape):
            lo, hi = max(c, 0), min(c + b, n)
            if hi <= lo:
                lo = hi = 0
            g_sl.append(slice(lo, hi))
            b_sl.append(slice(lo - c, hi - c) if hi > lo else slice(0, 0))
        return tuple(g_sl), tuple(b_sl)


def create_tensor_map(tensor: Buffer, box: tuple, swizzle_name: str, oob: str) -> TensorMap:
    """``nvgpu.tma.create.descriptor``: checks the box against the hardware's limits."""
    if not tensor.alive:
        raise Trap("a tensor map of a deallocated buffer")
    box = tuple(int(b) for b in box)
    if len(box) != len(tensor.shape) or not 1 <= len(box) <= 5:
        raise Trap(f"the box {box} must have one size per dimension of the tensor {tuple(tensor.shape)} (1 to 5)")
    if any(not 1 <= b <= 256 for b in box):
        raise Trap(f"box sizes must be 1 to 256, got {box}")
    span = SWIZZLE_SPAN[swizzle_name]
    inner = box[-1] * tensor.array.dtype.itemsize
    if inner % 16:
        raise Trap(f"the box's innermost dimension must be a multiple of 16 bytes, got {inner}")
    if span and inner != span:
        raise Trap(f"with {swizzle_name} the box's innermost dimension must be {span} bytes, got {inner}")
    return TensorMap(tensor, box, span, oob == "nan")


# ----------------------------------------------------------------------------------------
# mbarriers
# ----------------------------------------------------------------------------------------


@dataclass
class MBarrier:
    """One mbarrier: expected arrivals, pending arrivals, transaction bytes, completed phases."""

    expected: int = 0
    pending: int = 0
    tx: int = 0
    phase: int = 0
    initialized: bool = False

    def describe(self) -> str:
        return f"phase {self.phase}, {self.pending} of {self.expected} arrivals and {self.tx} bytes outstanding"


class MBarrierGroup:
    """The ``num_barriers`` mbarriers of ``nvgpu.mbarrier.create`` (one group per block)."""

    def __init__(self, count: int):
        self.barriers = [MBarrier() for _ in range(count)]

    def get(self, k: int) -> MBarrier:
        if not 0 <= k < len(self.barriers):
            raise Trap(f"mbarrier index {k} out of range for a group of {len(self.barriers)}")
        return self.barriers[k]

    def _ready(self, k: int) -> MBarrier:
        b = self.get(k)
        if not b.initialized:
            raise Trap(f"mbarrier {k} is used before nvgpu.mbarrier.init")
        return b

    def init(self, k: int, count: int, predicate: bool = True) -> None:
        if not predicate:
            return
        if not 1 <= count < 2**20:
            raise Trap(f"an mbarrier's arrival count must be 1 to 2**20 - 1, got {count}")
        self.get(k)  # in range
        self.barriers[k] = MBarrier(count, count, 0, 0, True)

    def arrive(self, k: int, predicate: bool = True) -> None:
        if not predicate:
            return
        b = self._ready(k)
        if b.pending <= 0:
            raise Trap(f"mbarrier {k}: more arrivals than its count {b.expected} in phase {b.phase}")
        b.pending -= 1
        self._maybe_complete(b)

    def expect_tx(self, k: int, nbytes: int, predicate: bool = True) -> None:
        """``arrive.expect_tx``: expect ``nbytes`` more, then arrive."""
        if not predicate:
            return
        b = self._ready(k)
        b.tx += nbytes
        self.arrive(k)

    def complete_tx(self, k: int, nbytes: int) -> None:
        b = self._ready(k)
        b.tx -= nbytes
        self._maybe_complete(b)

    @staticmethod
    def _maybe_complete(b: MBarrier) -> None:
        if b.pending == 0 and b.tx == 0:
            b.phase += 1
            b.pending = b.expected
        elif b.pending == 0 and b.tx < 0:
            raise Trap(f"an mbarrier received {-b.tx} more transaction bytes than it expected")

    def phase_done(self, k: int, parity: bool) -> bool:
        """Whether the phase of parity ``parity`` has completed (the current phase's parity differs)."""
        return (self._ready(k).phase & 1) != int(parity)


# ----------------------------------------------------------------------------------------
# Warpgroup MMA accumulators
# ----------------------------------------------------------------------------------------


class Accumulator:
    """A warpgroup's ``M x N`` f32 accumulator (each of its 128 threads holds a reference): a
    ``matrix`` once its group completes, ``None`` while its wgmma group is in flight."""

    __slots__ = ("matrix", "shape")

    def __init__(self, shape: tuple, matrix: np.ndarray | None):
        self.shape = tuple(shape)
        self.matrix = matrix

    def value(self, what: str) -> np.ndarray:
        if self.matrix is None:
            raise Trap(f"{what} reads a warpgroup accumulator whose wgmma group is still in flight (wait for it "
                       f"with waitGroup or nvvm.wgmma.wait.group.sync.aligned first)")
        return self.matrix


def init_accumulator(shape: tuple) -> Accumulator:
    return Accumulator(shape, np.zeros(shape, np.float32))


def buffer_key(buf: Buffer) -> tuple:
    """What identifies the memory a buffer views (threads make their own views of one tile)."""
    return (buf.array.__array_interface__["data"][0], tuple(buf.shape), buf.array.dtype.str)


@dataclass(frozen=True)
class WgmmaDescriptor:
    """``nvgpu.warpgroup.generate.descriptor``: a shared tile and the swizzle it is read with."""

    tile: Buffer
    span: int

    def key(self) -> tuple:
        return (buffer_key(self.tile), self.span)


def generate_descriptor(tile: Buffer, tmap: TensorMap) -> WgmmaDescriptor:
    _check_alignment(tile, tmap.span, "a warpgroup matrix descriptor")
    return WgmmaDescriptor(tile, tmap.span)


@dataclass
class _Group:
    """One committed wgmma group: computes its result from the shared tiles when retired."""

    jobs: list = field(default_factory=list)  # (result Accumulator, C Accumulator, A desc, B desc, flags)


def _product(a: WgmmaDescriptor, b: WgmmaDescriptor, c: np.ndarray, transpose_a: bool, transpose_b: bool):
    """``A * B + C`` of the logical ``M x K`` and ``K x N`` tiles (their views' shapes, as upstream's descriptor
    types): A K-major (``M`` rows of the swizzle span), with ``transpose_a`` MN-major (stored ``K x M``, column
    chunks); B with ``transpose_b`` K-major (stored ``N x K``), else MN-major (stored ``K x N``, column chunks)."""
    av = tile_read_chunked(a.tile, a.span, tuple(a.tile.shape)[::-1]).T if transpose_a else tile_read(a.tile, a.span)
    bv = tile_read(b.tile, b.span, tuple(b.tile.shape)[::-1]).T if transpose_b else tile_read_chunked(b.tile, b.span)
    m, k = av.shape
    n = bv.shape[1]
    if bv.shape[0] != k or c.shape != (m, n):
        raise Trap(f"warpgroup.mma shapes do not agree: A {av.shape}, B {bv.shape}, C {c.shape}")
    return matmul_accumulate(av, bv, c, False)


# ----------------------------------------------------------------------------------------
# The block's asynchronous state
# ----------------------------------------------------------------------------------------


class BlockAsync:
    """Per block: pending TMA loads (by mbarrier), in-flight wgmma groups (by warpgroup), pending
    TMA stores (by thread)."""

    def __init__(self):
        self.loads: list[tuple] = []  # (group, k, dst, tmap, coords)
        self.groups: dict[int, list[_Group]] = {}
        self.stores: dict[int, list[tuple]] = {}

    # -- TMA -------------------------------------------------------------------------------
    def tma_load(self, tmap: TensorMap, coords: tuple, group: MBarrierGroup, k: int, dst: Buffer,
                 predicate: bool = True) -> None:
        """``nvgpu.tma.async.load``: pending until a thread waits on mbarrier ``k`` of ``group``."""
        if not predicate:
            return
        if tuple(dst.shape) != tmap.box:
            raise Trap(f"the destination tile {tuple(dst.shape)} is not the tensor map's box {tmap.box}")
        _check_alignment(dst, tmap.span, "a TMA destination")
        group._ready(k)
        self.loads.append((group, k, dst, tmap, tuple(int(c) for c in coords)))
        if _EAGER[0]:
            self._perform_loads(group, k)

    def _perform_loads(self, group: MBarrierGroup | None, k: int | None) -> None:
        keep = []
        for load in self.loads:
            g, j, dst, tmap, coords = load
            if group is None or (g is group and j == k):
                box = np.full(tmap.box, np.nan if tmap.nan_fill else 0, dst.array.dtype)
                g_sl, b_sl = tmap.window(coords)
                box[b_sl] = tmap.tensor.array[g_sl]
                tile_write(dst, box, tmap.span)
                g.complete_tx(j, box.nbytes)
            else:
                keep.append(load)
        self.loads = keep

    def wait_ready(self, group: MBarrierGroup, k: int, parity: bool) -> bool:
        """``nvgpu.mbarrier.try_wait.parity``: complete the loads the barrier waits for, then whether the
        phase of ``parity`` has completed."""
        if not group.phase_done(k, parity):
            self._perform_loads(group, k)
        return group.phase_done(k, parity)

    def tma_store(self, thread: int, src: Buffer, tmap: TensorMap, coords: tuple, predicate: bool = True) -> None:
        if not predicate:
            return
        if tuple(src.shape) != tmap.box:
            raise Trap(f"the source tile {tuple(src.shape)} is not the tensor map's box {tmap.box}")
        _check_alignment(src, tmap.span, "a TMA source")
        self.stores.setdefault(thread, []).append((src, tmap, tuple(int(c) for c in coords)))
        if _EAGER[0]:
            self.bulk_wait(thread)

    def bulk_wait(self, thread: int) -> None:
        """``nvvm.cp.async.bulk.wait_group``: the thread's TMA stores read shared memory and land."""
        for src, tmap, coords in self.stores.pop(thread, []):
            box = tile_read(src, tmap.span)
            g_sl, b_sl = tmap.window(coords)
            if not tmap.tensor.alive:
                raise Trap("a TMA store into a deallocated buffer")
            tmap.tensor.array[g_sl] = box[b_sl]

    # -- wgmma -----------------------------------------------------------------------------
    def wgmma(self, lanes: list, wait_group: int, transpose_a: bool, transpose_b: bool) -> list:
        """``nvgpu.warpgroup.mma`` of the 128 threads of a warpgroup (``lanes``: each thread's
        ``(thread id, A descriptor, B descriptor, C accumulator)``): commits one group, then waits
        until at most ``wait_group`` groups are in flight."""
        tid, a, b, c = lanes[0]
        for _, a2, b2, c2 in lanes[1:]:
            same_c = c2 is c or (c2.matrix is not None and c.matrix is not None and np.array_equal(c2.matrix, c.matrix))
            if a2.key() != a.key() or b2.key() != b.key() or not same_c:
                raise Trap("the threads of the warpgroup give different operands to warpgroup.mma")
        wg = tid // WARPGROUP
        result = Accumulator(c.shape, None)
        self.groups.setdefault(wg, []).append(_Group([(result, c, a, b, transpose_a, transpose_b)]))
        self._retire(wg, wait_group)
        return [result] * WARPGROUP

    def _retire(self, wg: int, keep: int) -> None:
        groups = self.groups.get(wg, [])
        while len(groups) > keep:
            for result, c, a, b, ta, tb in groups.pop(0).jobs:
                result.matrix = _product(a, b, c.value("warpgroup.mma"), ta, tb).astype(np.float32)

    def wgmma_wait(self, lanes: list, keep: int) -> list:
        """``nvvm.wgmma.wait.group.sync.aligned keep`` of a warpgroup (``lanes``: thread ids)."""
        self._retire(lanes[0] // WARPGROUP, keep)
        return [None] * len(lanes)

    def finish(self) -> None:
        """At the end of the block: loads nobody waited for land; stores land."""
        self._perform_loads(None, None)
        for thread in list(self.stores):
            self.bulk_wait(thread)


def mma_store(lanes: list) -> list:
    """``nvgpu.warpgroup.mma.store`` of a warpgroup: ``lanes`` are ``(accumulator, memref)``."""
    acc, dst = lanes[0]
    for a2, d2 in lanes[1:]:
        if a2 is not acc or buffer_key(d2) != buffer_key(dst):
            raise Trap("the threads of the warpgroup give different operands to warpgroup.mma.store")
    m = acc.value("warpgroup.mma.store")
    if not dst.alive:
        raise Trap("access to a deallocated buffer")
    if tuple(dst.shape) != m.shape:
        raise OutOfBounds(dst.shape, (0,) * len(dst.shape), m.shape)
    dst.array[...] = m.astype(dst.array.dtype)
    return [None] * len(lanes)


def view(src: Buffer, shift: int, shape: tuple, info) -> Buffer:
    """``memref.view``: ``shape`` elements of ``info``'s type from byte ``shift`` of the i8 buffer ``src``."""
    if not src.alive:
        raise Trap("a view of a deallocated buffer")
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(info.np_dtype).itemsize
    if shift < 0 or shift + nbytes > src.array.size:
        raise Trap(f"memref.view of {nbytes} bytes at byte {shift} runs past the {src.array.size}-byte buffer")
    if shift % np.dtype(info.np_dtype).itemsize:
        raise Trap(f"memref.view at byte {shift} is not aligned to its element size")
    raw = src.array.reshape(-1).view(np.uint8)[shift:shift + nbytes]
    return Buffer(raw.view(info.np_dtype).reshape(shape), info)


# ----------------------------------------------------------------------------------------
# Thread-block clusters
# ----------------------------------------------------------------------------------------


@dataclass
class _Member:
    """One block of a cluster: its workgroup buffers and mbarrier groups (in the order of their ops) and its
    asynchronous state."""

    buffers: list
    groups: list
    state: BlockAsync


class _ClusterWait:
    """The payload of a thread's ``nvvm.cluster.wait``: ready once the cluster's phase is complete."""

    def __init__(self, cluster: Cluster, thread: tuple):
        self.cluster, self.thread = cluster, thread

    def describe(self) -> str:
        c = self.cluster
        gen = c.phase.get(self.thread, 0)
        return f"the cluster's barrier: {c.arrivals.get(gen, 0)} of its {c.total} threads arrived"


class Cluster:
    """The blocks of one thread-block cluster (``size`` blocks of ``threads`` threads, by rank: the block's linear
    id in the cluster)."""

    def __init__(self, size: int, threads: int):
        self.members: list[_Member | None] = [None] * size
        self.exited = [False] * size
        self.total = size * threads
        self.arrivals: dict[int, int] = {}  # barrier phase -> threads arrived
        self.phase: dict[tuple, int] = {}  # (rank, thread) -> the phase of its next arrival
        self.arrived: set[tuple] = set()  # threads that arrived and have not waited yet

    def add_block(self, rank: int, buffers: list, groups: list, state: BlockAsync) -> None:
        self.members[rank] = _Member(list(buffers), list(groups), state)

    def exit(self, rank: int) -> None:
        """All threads of block ``rank`` have ended: its shared memory is gone."""
        self.exited[rank] = True

    def finish(self) -> None:
        for m in self.members:
            m.state.finish()

    # -- the peers' shared memory --------------------------------------------------------------
    def _peer(self, rank: int, peer: int, what: str, thread: int) -> _Member:
        if not 0 <= peer < len(self.members):
            raise Trap(f"{what}: block {peer} is not in the cluster of {len(self.members)} blocks")
        if peer != rank and not self.phase.get((rank, thread)):
            raise Trap(f"{what}: block {rank} reaches block {peer}'s shared memory before a cluster barrier "
                       f"(nvvm.cluster.arrive/wait) made sure every block of the cluster has started")
        if self.exited[peer]:
            raise Trap(f"{what}: block {peer} of the cluster has exited (its shared memory is gone; keep it alive "
                       f"with a cluster barrier, nvvm.cluster.arrive/wait, until no block reaches it)")
        return self.members[peer]

    def _peer_buffer(self, rank: int, buf: Buffer, peer: int, info) -> Buffer:
        """The view of block ``peer``'s shared memory at the place ``buf`` has in block ``rank``'s."""
        if peer == rank:
            return buf
        root = _root(buf.array)
        for k, own in enumerate(self.members[rank].buffers):
            if _root(own.array) is root:
                start = _root_offset(buf) - _root_offset(own)
                raw = self.members[peer].buffers[k].array.reshape(-1).view(np.uint8)
                return Buffer(raw[start:start + buf.array.nbytes].view(buf.array.dtype).reshape(buf.shape), info)
        raise Trap("a multicast copy's destination is not in the block's shared memory")

    def _peer_group(self, rank: int, group: MBarrierGroup, peer: int) -> MBarrierGroup:
        for k, own in enumerate(self.members[rank].groups):
            if own is group:
                return self.members[peer].groups[k]
        raise Trap("the mbarrier is not in the block's shared memory")

    def tma_load(self, rank: int, thread: int, tmap: TensorMap, coords: tuple, group: MBarrierGroup, k: int,
                 dst: Buffer, info, mask: int, predicate: bool = True) -> None:
        """``nvgpu.tma.async.load ... multicast_mask``: the box into ``dst``'s place in each block of ``mask`` (bit
        ``r``: the block of rank ``r``), completing its bytes on mbarrier ``k`` at ``group``'s place there."""
        if not predicate:
            return
        mask = int(mask) & 0xFFFF
        if not mask or mask >> len(self.members):
            raise Trap(f"multicast mask {mask:#x} names no block or a block outside the cluster of "
                       f"{len(self.members)} blocks")
        for peer in range(len(self.members)):
            if mask >> peer & 1:
                m = self._peer(rank, peer, "a multicast TMA load", thread)
                m.state.tma_load(tmap, coords, self._peer_group(rank, group, peer), k,
                                 self._peer_buffer(rank, dst, peer, info))

    def remote_arrive(self, rank: int, thread: int, group: MBarrierGroup, k: int, peer: int) -> None:
        """``nvgpu.mbarrier.arrive.remote``: one arrival on mbarrier ``k`` at ``group``'s place in block ``peer``."""
        self._peer(rank, int(peer), "mbarrier.arrive.remote", thread)
        self._peer_group(rank, group, int(peer)).arrive(k)

    # -- the cluster's barrier ------------------------------------------------------------------
    def arrive(self, rank: int, thread: int) -> None:
        key = (rank, thread)
        if key in self.arrived:
            raise Trap("nvvm.cluster.arrive twice without nvvm.cluster.wait between")
        self.arrived.add(key)
        gen = self.phase.get(key, 0)
        self.arrivals[gen] = self.arrivals.get(gen, 0) + 1

    def wait(self, rank: int, thread: int) -> _ClusterWait:
        if (rank, thread) not in self.arrived:
            raise Trap("nvvm.cluster.wait without nvvm.cluster.arrive before it")
        return _ClusterWait(self, (rank, thread))


def cluster_wait_ready(payload: _ClusterWait) -> bool:
    """Whether every thread of the cluster arrived in the waiting thread's phase (it then goes on)."""
    c, key = payload.cluster, payload.thread
    gen = c.phase.get(key, 0)
    if c.arrivals.get(gen, 0) < c.total:
        return False
    c.phase[key] = gen + 1
    c.arrived.discard(key)
    return True


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array
