"""Run-time semantics of the matrix-unit ops (``_W`` in generated code): whole-warp matrices
(``gpu.subgroup_mma_*``), per-lane fragments (``nvgpu.ldmatrix``, ``nvgpu.mma.sync``; layouts in
:mod:`affine_ir.dialects.nvgpu`) and asynchronous copies (``nvgpu.device_async_*``).

Values: a ``!gpu.mma_matrix`` is a numpy array of the whole matrix (every lane holds the same
one); a fragment is a numpy array of the lane's ``vector`` shape. The collective functions take
the operands of the 32 lanes of a warp (in lane order) and return the 32 results.

Products (:func:`matmul_accumulate`): f16/bf16 inputs are exact; f32 inputs are rounded to TF32
(:func:`round_tf32`); each element of ``A * B + C`` is the exact sum (``math.fsum``: its correctly
rounded f64 value) rounded once to the accumulator type; integer products are exact and wrap to
the accumulator's width.
"""

from __future__ import annotations

import math

import numpy as np

from ..dialects.nvgpu import fragment_position
from .memory import Buffer
from .semantics import OutOfBounds, Trap

WARP = 32


# ----------------------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------------------


def round_tf32(x: np.ndarray) -> np.ndarray:
    """``x`` (f32) rounded to TF32 (10 mantissa bits) to nearest, ties away from zero, as PTX's
    ``cvt.rna.tf32.f32``; infinities and NaNs are kept."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32)
    rounded = ((bits.astype(np.uint64) + 0x1000) & 0xFFFFE000).astype(np.uint32)
    return np.where(np.isfinite(x), rounded.view(np.float32), x)


def matmul_accumulate(a: np.ndarray, b: np.ndarray, c: np.ndarray, tf32: bool) -> np.ndarray:
    """``a @ b + c`` in the dtype of ``c`` (see the module docstring)."""
    if c.dtype.kind in "iu":
        d = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
        return d.astype(c.dtype)  # wraps (two's complement)
    if tf32:
        a, b = round_tf32(a), round_tf32(b)
    a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    m, n = c.shape
    out = np.empty((m, n), np.float64)
    with np.errstate(all="ignore"):
        for i in range(m):
            prods = a64[i][:, None] * b64  # k x n, exact: at most 2 x 11 significant bits
            for j in range(n):
                terms = [*prods[:, j].tolist(), float(c64[i, j])]
                out[i, j] = math.fsum(terms) if all(map(math.isfinite, terms)) else sum(terms)
        return out.astype(c.dtype)


# ----------------------------------------------------------------------------------------
# Whole-warp matrices (gpu.subgroup_mma_*)
# ----------------------------------------------------------------------------------------


def uniform(op: str, lanes: list, what: str):
    """The one value all lanes give for ``what`` (``op`` names the op in the error)."""
    first = lanes[0]
    for k, x in enumerate(lanes):
        if not _same(x, first):
            raise Trap(f"lanes 0 and {k} of the warp give different {what}: a subgroup op takes one value per warp")
    return first


def _same(x, y) -> bool:
    """Equal operands: the same buffer, equal bits of arrays, equal numbers; tuples element-wise."""
    if x is y:
        return True
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(map(_same, x, y))
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()
    if isinstance(x, Buffer) or isinstance(y, Buffer):
        return False
    return x == y


def _tile_offsets(buf: Buffer, idx: tuple, shape: tuple, lead: int, transpose: bool) -> np.ndarray:
    """Flat element offsets of a ``shape`` tile at ``idx`` with rows ``lead`` elements apart (columns
    with ``transpose``), checked against the buffer."""
    if not buf.alive:
        raise Trap("access to a deallocated buffer")
    if not all(0 <= i < n for i, n in zip(idx, buf.shape)):
        raise OutOfBounds(buf.shape, idx)
    base = int(np.ravel_multi_index(idx, buf.shape)) if buf.shape else 0
    r = np.arange(shape[0])[:, None]
    c = np.arange(shape[1])[None, :]
    offs = base + (c * lead + r if transpose else r * lead + c)
    if offs.max() >= buf.array.size:
        raise OutOfBounds(buf.shape, idx, tuple(shape))
    return offs


def load_matrix(lanes: list, shape: tuple, lead: int, transpose: bool) -> list:
    """``gpu.subgroup_mma_load_matrix``: the tile (element ``(r, c)`` at ``r * lead + c`` elements from
    the indexed element; ``c * lead + r`` with ``transpose``), the same for every lane."""
    buf, idx = uniform("load", lanes, "memrefs and indices")
    tile = buf.array.reshape(-1)[_tile_offsets(buf, idx, shape, lead, transpose)].copy()
    return [tile] * WARP


def store_matrix(lanes: list, lead: int, transpose: bool) -> list:
    """``gpu.subgroup_mma_store_matrix``: the warp's matrix written as :func:`load_matrix` reads it."""
    value, buf, idx = uniform("store", lanes, "matrices, memrefs or indices")
    buf.array.reshape(-1)[_tile_offsets(buf, idx, value.shape, lead, transpose)] = value
    return [None] * WARP


def compute(lanes: list, tf32: bool) -> list:
    """``gpu.subgroup_mma_compute``: ``A * B + C`` of the warp."""
    a, b, c = uniform("compute", lanes, "matrices")
    return [matmul_accumulate(a, b, c, tf32)] * WARP


# ----------------------------------------------------------------------------------------
# Per-lane fragments (nvgpu.mma.sync, nvgpu.ldmatrix)
# ----------------------------------------------------------------------------------------


def fragment_coords(role: str, k: int, per_register: int, registers: int) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) of the matrix element that ``[lane][r][e]`` of the ``role`` ("A", "B" or "C")
    fragment holds in ``mma.m16n8k{k}``, as arrays of shape (32, registers, per_register)."""
    lane = np.arange(WARP)[:, None, None]
    r = np.arange(registers)[None, :, None]
    e = np.arange(per_register)[None, None, :]
    rows, cols = fragment_position(role, lane >> 2, lane % 4, r, e, per_register)
    full = np.zeros((WARP, registers, per_register), np.int64)
    return rows + full, cols + full


def gather(lanes: list, role: str, k: int, shape: tuple) -> np.ndarray:
    """The matrix (``shape``) whose fragments the 32 lanes hold."""
    frag = np.stack(lanes)
    rows, cols = fragment_coords(role, k, frag.shape[2], frag.shape[1])
    out = np.zeros(shape, frag.dtype)
    out[rows, cols] = frag
    return out


def scatter(matrix: np.ndarray, role: str, k: int, frag_shape: tuple) -> list:
    """Each lane's fragment (``frag_shape``) of ``matrix``."""
    rows, cols = fragment_coords(role, k, frag_shape[1], frag_shape[0])
    frags = matrix[rows, cols]
    return [frags[lane].copy() for lane in range(WARP)]


def mma_sync(lanes: list, k: int, tf32: bool) -> list:
    """``nvgpu.mma.sync`` m16n8k``k``: each lane's D fragment of ``A * B + C``."""
    a = gather([x[0] for x in lanes], "A", k, (16, k))
    b = gather([x[1] for x in lanes], "B", k, (k, 8))
    c = gather([x[2] for x in lanes], "C", k, (16, 8))
    return scatter(matmul_accumulate(a, b, c, tf32), "C", k, lanes[0][2].shape)


def ldmatrix(lanes: list, num_tiles: int, transpose: bool, frag_shape: tuple) -> list:
    """``nvgpu.ldmatrix``: lane ``l < 8 * num_tiles`` gives row ``l % 8`` of matrix ``l // 8`` (16 bytes
    at its indices); each lane gets its fragment (module docstring of :mod:`affine_ir.dialects.nvgpu`)."""
    per_register = frag_shape[1]
    row_elems = 4 * per_register  # 16 bytes
    rows = []
    for lane in range(8 * num_tiles):
        buf, idx = lanes[lane]
        if not buf.alive:
            raise Trap("access to a deallocated buffer")
        last = idx[-1] if idx else 0
        if not (all(0 <= i < n for i, n in zip(idx, buf.shape)) and last + row_elems <= buf.shape[-1]):
            raise OutOfBounds(buf.shape, idx, (row_elems,))
        start = int(np.ravel_multi_index(idx, buf.shape))
        if start % row_elems:
            raise Trap(f"lane {lane} gives a row address that is not 16-byte aligned (element {start} of the buffer)")
        rows.append(buf.array.reshape(-1)[start:start + row_elems])
    mats = np.stack(rows).reshape(num_tiles, 8, row_elems)
    out = []
    for lane in range(WARP):
        g, t = lane >> 2, lane % 4
        if transpose:
            frag = mats[:, 2 * t:2 * t + 2, g]
        else:
            frag = mats[:, g, per_register * t:per_register * (t + 1)]
        out.append(frag.reshape(frag_shape).copy())
    return out


# ----------------------------------------------------------------------------------------
# Asynchronous copies (nvgpu.device_async_*): one AsyncCopies per thread
# ----------------------------------------------------------------------------------------


class AsyncCopies:
    """A thread's asynchronous copies: pending (issued, not yet in a group), then in groups, done
    when a wait retires their group (or the thread ends)."""

    def __init__(self):
        self.pending: list[int] = []
        self.copies: dict[int, tuple] = {}
        self.groups: list[tuple[int, list[int]]] = []  # (group token, copies), oldest first
        self.done_groups: set[int] = set()
        self.count = 0

    def _token(self) -> int:
        self.count += 1
        return self.count

    def copy(self, dst: Buffer, dst_idx: tuple, src: Buffer, src_idx: tuple, n: int, src_n: int | None) -> int:
        """Issue a copy of ``n`` elements (``src_n`` read, the rest zeros); returns its token."""
        src_n = n if src_n is None else src_n
        if not 0 <= src_n <= n:
            raise Trap(f"srcElements is {src_n}, expected 0 to {n} (the elements copied)")
        for buf, idx, count in ((dst, dst_idx, n), (src, src_idx, src_n)):
            if not buf.alive:
                raise Trap("access to a deallocated buffer")
            inside = all(0 <= i < m for i, m in zip(idx, buf.shape))
            if count and not (inside and count <= _room(buf, idx, buf is src)):
                if buf is dst:
                    raise Trap(f"the destination: {count} elements at index {tuple(idx)} are out of bounds for the "
                               f"shared buffer of shape {tuple(buf.shape)}")
                raise OutOfBounds(buf.shape, idx, (count,))
        tok = self._token()
        self.copies[tok] = (dst, dst_idx, src, src_idx, n, src_n)
        self.pending.append(tok)
        return tok

    def commit(self, tokens: tuple) -> int:
        """Group the pending copies (``cp.async.commit_group``); ``tokens`` must name exactly them."""
        named = list(tokens)
        if len(set(named)) != len(named) or set(named) != set(self.pending):
            extra = [t for t in named if t not in self.pending]
            what = "a copy that is already in a group" if extra else \
                "not all of the thread's pending copies (commit_group groups them all)"
            raise Trap(f"the tokens name {what}")
        tok = self._token()
        self.groups.append((tok, self.pending))
        self.pending = []
        return tok

    def wait(self, group: int, keep: int) -> None:
        """Complete all but the ``keep`` most recent groups (``cp.async.wait_group keep``); the group
        ``group`` must be complete after it."""
        while len(self.groups) > keep:
            tok, copies = self.groups.pop(0)
            for c in copies:
                _perform(*self.copies.pop(c))
            self.done_groups.add(tok)
        if group not in self.done_groups:
            raise Trap(f"the group waited for is still pending after the wait: numGroups = {keep} lets the "
                       f"{keep} most recent groups stay in flight")

    def finish(self) -> None:
        """At the end of the thread: every copy lands (issued copies complete on the GPU too)."""
        for c in [*(c for _, cs in self.groups for c in cs), *self.pending]:
            _perform(*self.copies.pop(c))
        self.groups, self.pending = [], []


def _room(buf: Buffer, idx: tuple, in_memory: bool) -> int:
    """The elements from ``idx`` (inside ``buf``) to the end of its row, or with ``in_memory`` to the
    end of the row-major buffer: a copy's source runs on past its row as the hardware reads it, its
    destination stays in its row of the shared buffer."""
    if in_memory:
        return buf.array.size - int(np.ravel_multi_index(idx, buf.shape))
    return buf.shape[-1] - (idx[-1] if idx else 0)


def _perform(dst: Buffer, dst_idx: tuple, src: Buffer, src_idx: tuple, n: int, src_n: int) -> None:
    lead = tuple(dst_idx[:-1])
    j = dst_idx[-1]
    values = np.zeros(n, dst.array.dtype)
    if src_n:
        start = int(np.ravel_multi_index(src_idx, src.shape))
        values[:src_n] = src.array.reshape(-1)[start:start + src_n]
    dst.array[lead + (slice(j, j + n),)] = values
