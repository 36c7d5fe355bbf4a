"""What ``gpu-map-mma`` maps to the matrix units, and with which tiles.

A contraction of :func:`~.schedule_gpu_plan.plan_contraction` is *mappable* when its innermost
reduction body is the library's form of a mixed-precision product (16-bit storage, f32
arithmetic)::

    %a = affine.load %A[...] : memref<...xf16>      // side "A": varies with the rows and k
    %x = arith.extf %a : f16 to f32
    %b = affine.load %B[...] : memref<...xf16>      // side "B": varies with the columns and k
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    affine.yield %s : f32

(``bf16`` likewise; the factors in either order; a factor may be a zero-padded read, an
``affine.if`` yielding ``extf(load)`` inside a window and 0 outside), the band is not triangular.
The reduction chain may be several loops (a convolution's ``(kh, kw, c)``): its linear index is k.
Each packed read is staged (:func:`staged`) in 16-byte ``cp.async`` chunks when *chunkable*: its
flattened (row-major) address runs contiguously over a *fast chain* (:func:`contiguous_chain`) --
the innermost loops of k's chain (contiguous along k: ``A[i, k]``, ``B[j, k]``, an NHWC input along
``c``, an NCHW filter along its whole window ``(c, kh, kw)``) or of its side's loops (contiguous along
the rows/columns: ``B[k, j]``, a transposed ``A[k, i]``, an HWCF filter along ``f``, a 1x1 NCHW
input along ``(h, w)``) -- whose trip counts multiplied are a multiple of 8 elements (16 bytes),
which no padding window uses, and every other value moves the address by a multiple of 8 elements
(the read's constant offset too), so 8 consecutive values of the chain's linear index are one
16-byte-aligned ``cp.async`` (that may run on past the end of a row of the memref: the elements
are contiguous in memory); else it is gathered per element (the reason kept in
:attr:`MmaOperand.gather_reason`). A 32-bit (TF32) operand contiguous along
its side is chunked too, its fragments then read per element (:attr:`MmaOperand.element_reads`:
``ldmatrix`` transposes only 16-bit elements); an 8-bit one is gathered along k.

Anything else is refused with the reason (the nest then goes to ``gpu-schedule``): f32 inputs
without ``allow-tf32`` (the matrix units would round them to TF32), f64 and other types without
matrix-unit support on the target, non-affine reads, padding that is not zero, other reduction
bodies.

Tiles (:class:`MmaTiles`): a block tile ``BM x BN`` stepping ``BK`` along k, ``warps_m x warps_n``
warps each owning a ``BM/warps_m x BN/warps_n`` warp tile of ``m16n8k16`` fragments, and a ring of
``stages`` shared buffers. :func:`choose_mma_tiles` picks the candidate of least estimated time on
the target (its tensor rate, multiprocessors, shared memory and registers); the stages are as many
as the shared memory per block holds, at most :data:`MAX_STAGES` (2 when every operand is gathered:
:attr:`MmaPlan.most_stages`), at most one more than the k steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from affine_ir import AffineExpr, Operation, Value
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineLoadOp, AffineYieldOp
from affine_ir.dialects.arith import ConstantOp, ExtfOp, ExtsiOp, MulfOp, MuliOp
from affine_ir.floats import EIGHT_BIT
from affine_ir.types import FloatType, MemRefType, Type, f16, f32, i32
from analysis import iter_arg_reduction
from analysis.targets import GPUTarget

from ..loop_utils import access_subscripts, index_expr, loop_name
from .schedule_gpu_plan import Contraction

#: Bytes of one asynchronous copy (``cp.async.cg``) and of one ``ldmatrix`` row.
CHUNK_BYTES = 16
#: Rows of one 8 x 8 ``ldmatrix`` matrix: the lanes of one shared-memory phase.
LDMATRIX_ROWS = 8
#: Most stages of the shared-memory ring (FlagTree/CUTLASS use 3 to 5 on sm_80/sm_90).
MAX_STAGES = 4
#: (BM, BN, BK, warps_m, warps_n) candidates, largest first: 8 warps of 64x64 or 64x32 warp tiles
#: (the tiles of CUTLASS's sm_80 f16 GEMMs) down to 16-row tiles for a few rows (decoding).
MMA_TILE_CONFIGS = ((128, 256, 32, 2, 4), (128, 128, 32, 2, 4), (128, 64, 32, 2, 2), (64, 128, 32, 2, 2),
                    (64, 64, 32, 2, 2), (32, 64, 32, 1, 2), (32, 32, 32, 1, 2), (16, 128, 32, 1, 4),
                    (16, 64, 32, 1, 2))
#: Stages of a ring whose operands are all gathered (:attr:`MmaPlan.most_stages`).
GATHERED_STAGES = 2
#: Registers a thread needs besides its accumulators (fragments of A and B, addresses).
REGISTER_OVERHEAD = 64
#: Warps per multiprocessor that keep its matrix units busy (two per scheduler).
LATENCY_WARPS = 8
#: The target's tensor-rate key of each input type.
TENSOR_RATE = {"f16": "fp16", "bf16": "bf16", "f32": "tf32", "i8": "int8", "f8E4M3FN": "fp8", "f8E5M2": "fp8"}
#: The sum's type of each input type's default accumulation (the nest's sum must have it).
SUM_TYPE = {"f16": f32, "bf16": f32, "f32": f32, "i8": i32, "f8E4M3FN": f32, "f8E5M2": f32}
#: The k of each input type's ``mma.sync m16n8k{k}`` (16 bytes of a row: 8 f16, 4 tf32, 16 s8, times 2).
MMA_K = {"f16": 16, "bf16": 16, "f32": 8, "i8": 32, "f8E4M3FN": 32, "f8E5M2": 32}
#: Input types only the warpgroup-MMA mapping (sm_90a) takes: the ``mma.sync`` kernels have no 8-bit
#: float fragments yet.
WGMMA_ONLY = EIGHT_BIT


def padded_rows(rows: int, cols: int, unit: int, threads: int) -> int:
    """The rows a ring stage of ``rows x cols`` elements needs so that each of ``threads`` threads
    copies its own ``unit``-element slots: when the threads outnumber the stage's slots, the extra
    threads write padding rows (never read) instead of a slot another thread writes -- the same
    bytes, but a write-write race for ``compute-sanitizer --tool racecheck``."""
    slots = rows * cols // unit
    per_thread = -(-slots // threads)
    return max(rows, -(-per_thread * threads * unit // cols))


@dataclass(frozen=True)
class MmaKind:
    """The instruction: ``mma.sync.m16n8k{k}`` on ``input`` fragments accumulating in ``acc``."""

    input: Type
    acc: Type
    k: int = 16

    @property
    def bytes(self) -> int:
        return self.input.width // 8

    @property
    def chunk(self) -> int:
        """Elements of one 16-byte copy (one ``ldmatrix`` row)."""
        return CHUNK_BYTES // self.bytes

    def describe(self) -> str:
        src = "f32 as tf32" if self.input == f32 else str(self.input)
        return f"mma.sync m16n8k{self.k} {src} -> {self.acc}"


@dataclass(frozen=True)
class MmaTiles:
    """Block tile ``BM x BN``, k step ``BK``, ``warps_m x warps_n`` warps, a ring of ``stages``."""

    BM: int
    BN: int
    BK: int
    warps_m: int
    warps_n: int
    stages: int = 2

    @property
    def warp_m(self) -> int:
        return self.BM // self.warps_m

    @property
    def warp_n(self) -> int:
        return self.BN // self.warps_n

    @property
    def warps(self) -> int:
        return self.warps_m * self.warps_n

    def threads(self, warp_size: int = 32) -> int:
        return self.warps * warp_size

    @property
    def frags_m(self) -> int:
        """``m16`` fragments along a warp tile's rows."""
        return self.warp_m // 16

    @property
    def frags_n(self) -> int:
        """``n8`` fragments along a warp tile's columns."""
        return self.warp_n // 8

    def stage_bytes(self, kind: MmaKind, warp: int = 32) -> int:
        """Bytes of one stage of both rings, with the padding rows of :func:`padded_rows` (an upper
        bound: copies in 16-byte chunks, the larger of the two layouts)."""
        threads = self.threads(warp)
        return sum(max(padded_rows(self.BK, p, kind.chunk, threads) * p, padded_rows(p, self.BK, kind.chunk, threads)
                       * self.BK) * kind.bytes for p in (self.BM, self.BN))

    def invalid(self, kind: MmaKind) -> str | None:
        """Why these tiles make no kernel for ``kind``, or None."""
        if self.warps_m < 1 or self.warps_n < 1 or self.BM % (16 * self.warps_m) or self.BN % (8 * self.warps_n):
            return (f"block tile {self.BM}x{self.BN} does not split into {self.warps_m}x{self.warps_n} warp tiles of "
                    f"whole m16n8 fragments")
        if self.BK % kind.k or self.BK < kind.k:
            return f"k step {self.BK} is not a multiple of the fragment's k {kind.k}"
        if self.stages < 2:
            return f"{self.stages} stage(s): the ring needs at least 2"
        return None

    def with_stages(self, stages: int) -> MmaTiles:
        return MmaTiles(self.BM, self.BN, self.BK, self.warps_m, self.warps_n, stages)

    def describe(self) -> str:
        return (f"block tile {self.BM}x{self.BN}, k step {self.BK}, {self.warps_m}x{self.warps_n} warps of "
                f"{self.warp_m}x{self.warp_n} ({self.frags_m}x{self.frags_n} m16n8 fragments), {self.stages} stages")


@dataclass(frozen=True)
class MmaOperand:
    """A packed load of the reduction: its side ("A": rows x k, "B": columns x k), whether its shared
    rows run along k (``k_fast``) or along its side's rows/columns, how it is staged (``gather``:
    per-element loads stored into shared memory, else 16-byte ``cp.async`` chunks, ``gather_reason``
    saying why not) and, for a zero-padded read, the ``affine.if`` around the load (``guard``)."""

    load: AffineLoadOp
    side: str
    k_fast: bool
    guard: AffineIfOp | None = None
    gather: bool = False
    gather_reason: str = ""

    def describe(self) -> str:
        layout = ("k-contiguous" if self.k_fast else
                  "k-strided (fragments read per element)" if self.element_reads else "k-strided (ldmatrix.trans)")
        staging = f"gathered per element ({self.gather_reason})" if self.gather else "cp.async 16-byte chunks"
        return f"{self.side} {layout}{', zero-padded' if self.guard else ''}, {staging}"

    @property
    def element_reads(self) -> bool:
        """Whether the warps read their fragments of this operand element by element (``memref.load``
        from shared memory) instead of by ``ldmatrix``: 32-bit (TF32) elements whose shared rows run
        along k -- ``ldmatrix`` transposes only 16-bit elements (CUTLASS's 32-bit congruous layouts
        are read so too)."""
        return not self.k_fast and self.load.results[0].type.width == 32

    @property
    def transpose(self) -> bool:
        """Whether ``ldmatrix`` transposes: the shared rows run along k (the operand is contiguous
        along the rows/columns)."""
        return not self.k_fast


@dataclass
class MmaPlan:
    """A contraction mapped to the matrix units: the plan of :func:`plan_mma`."""

    c: Contraction
    kind: MmaKind
    a: MmaOperand
    b: MmaOperand
    combine: Operation  # the inner body's ``arith.addf`` of the carried sum and the product
    init_zero: bool  # the sums start at the constant 0 (else the initial value is added in the epilogue)
    note: str = ""  # an option that did not apply, and why

    def operands(self) -> tuple[MmaOperand, MmaOperand]:
        return self.a, self.b

    @property
    def most_stages(self) -> int:
        """The most stages worth a ring: :data:`GATHERED_STAGES` when every operand is gathered --
        a thread's gathered loads land before it stores them (nothing is in flight across steps),
        so a deeper ring hides no latency; it would take shared memory from other blocks and
        repeat the gathers of the prologue in the code -- else :data:`MAX_STAGES`."""
        return GATHERED_STAGES if all(op.gather for op in self.operands()) else MAX_STAGES


def _constant_zero(v: Value) -> bool:
    op = v.owner if isinstance(v.owner, Operation) else None
    return isinstance(op, ConstantOp) and op.value == 0


def _factor(v: Value, c: Contraction, allow_tf32: bool) -> tuple[Operation, AffineLoadOp, AffineIfOp | None] | str:
    """(the packed read, its load, its zero-padding guard or None) that is the factor ``v`` --
    ``extf(load)`` of a 16-bit load (an f32 load as loaded, through TF32, when ``allow_tf32``), or an
    ``affine.if`` yielding that inside a window and 0 outside -- or why ``v`` is not one."""
    op = v.owner if isinstance(v.owner, Operation) else None
    if isinstance(op, AffineIfOp) and op in c.packs:
        then = [o for o in op.then_block.ops if not isinstance(o, AffineYieldOp)]
        if not _constant_zero(op.else_block.ops[-1].operands[0]):
            return "a padded factor is not zero outside its window (cp.async can only zero-fill)"
        load = _loaded(op.then_block.ops[-1].operands[0], c, allow_tf32, guarded=True)
        if isinstance(load, str):
            return load
        if then[0] is not load or len(then) != (1 if then[-1] is load else 2):
            return "a zero-padded factor does more than load (and extend to f32) inside its window"
        return op, load, op
    load = _loaded(v, c, allow_tf32)
    return load if isinstance(load, str) else (load, load, None)


def _loaded(v: Value, c: Contraction, allow_tf32: bool, guarded: bool = False) -> AffineLoadOp | str:
    """The packed load (the load inside a guarded read when ``guarded``) whose value, extended to
    f32 (or as loaded: f32 through TF32 when ``allow_tf32``) is ``v``; else why not."""
    op = v.owner if isinstance(v.owner, Operation) else None
    if isinstance(op, AffineLoadOp):
        t = op.results[0].type
        if t != f32 or not allow_tf32:
            return _type_reason(t) + " (a factor is multiplied as loaded)"
        ld = op
    elif (isinstance(op, (ExtfOp, ExtsiOp)) and op.results[0].type in (f32, i32)  # op-name: f32/i32 widening
          and isinstance(op.operands[0].owner, AffineLoadOp)):
        ld = op.operands[0].owner
    else:
        return "a factor of the product is not an arith.extf to f32 of a load"
    if ld not in c.packs and not guarded:
        return "a factor of the product is not a plain affine.load varying with k and one side"
    return ld


def plan_mma(c: Contraction, gpu: GPUTarget, allow_tf32: bool = False, accumulate_f16: bool = False) -> MmaPlan | str:
    """The matrix-unit plan of ``c`` on ``gpu`` (see the module docstring), or why there is none.
    ``allow_tf32``: f32 operands go through ``mma.sync m16n8k8`` on TF32 (their mantissas rounded
    to 10 bits); ``accumulate_f16``: f16 operands accumulate in f16 fragments (bf16 and TF32 have no
    f16 accumulation: they keep f32, said in :attr:`MmaPlan.note`)."""
    if c.triangular:
        return f"the band of {c.describe()} is triangular"
    if c.direct:
        return "the reduction reads operands per element (not packed on one side)"
    red = iter_arg_reduction(c.inner, 0)
    if red is None or red.kind not in ("addf", "addi") or len(red.ops) != 1:
        return f"the reduction ({loop_name(c.inner)}) is not one arith.addf (addi) of a product per step"
    if c.red.results[0].type not in (f32, i32):
        return _type_reason(c.red.results[0].type)
    combine = red.ops[0]
    term = next(v for v in combine.operands if v is not red.value)
    mul = term.owner if isinstance(term.owner, Operation) else None
    if not isinstance(mul, (MulfOp, MuliOp)):  # op-name: the product of the two factors, float or integer
        return "the term added per step is not an arith.mulf (muli) of two factors"
    reads = [_factor(v, c, allow_tf32) for v in mul.operands]
    bad = next((f for f in reads if isinstance(f, str)), None)
    if bad is not None:
        return bad
    (ra, la, _), (rb, lb, _) = reads
    ta, tb = la.results[0].type, lb.results[0].type
    if ta != tb or str(ta) not in TENSOR_RATE:
        return _type_reason(ta if str(ta) not in TENSOR_RATE else tb)
    if gpu.compute_capability < (8, 0) or TENSOR_RATE[str(ta)] not in gpu.tensor_flops:
        return f"{gpu.name} has no mma.sync on {ta} (sm_80 or later with {TENSOR_RATE[str(ta)]} tensor cores)"
    if {c.packs[ra], c.packs[rb]} != {"A", "B"}:
        return "the two factors are not one operand of each side (rows x k and columns x k)"
    used = {ra, rb, mul.operands[0].owner, mul.operands[1].owner, mul, combine}
    extra = [op for op in c.inner.body.ops if op not in used and not isinstance(op, AffineYieldOp)]
    single = (la.results[0], lb.results[0], term, *mul.operands)
    if extra or any(len(v.uses) != 1 for v in single):
        return f"the reduction ({loop_name(c.inner)}) computes more than the product of its two operands"
    note = ""
    acc = f16 if accumulate_f16 and ta == f16 else f32
    if accumulate_f16 and ta != f16:
        note = f"accumulate-f16 does not apply to {ta} operands (no f16 accumulation): {SUM_TYPE[str(ta)]} sums"
    if SUM_TYPE[str(ta)] != c.red.results[0].type:
        return f"{ta} operands summed in {c.red.results[0].type} (mma.sync sums them in {SUM_TYPE[str(ta)]})"
    kind = MmaKind(ta, acc if ta == f16 else SUM_TYPE[str(ta)], MMA_K[str(ta)])
    operands = {}
    for _, ld, guard in reads:
        op = staged(ld, guard, c, kind)
        operands[op.side] = op
    return MmaPlan(c, kind, operands["A"], operands["B"], combine, _constant_zero(c.red.inits[0]), note)


def staged(ld: AffineLoadOp, guard: AffineIfOp | None, c: Contraction, kind: MmaKind) -> MmaOperand:
    """How the packed read of ``ld`` (inside ``guard`` when zero-padded) is staged: in 16-byte
    ``cp.async`` chunks when :func:`chunkable`, else gathered per element, its shared rows along
    whichever of k (the reduction chain's innermost loop) and its side's innermost loop moves its
    address less (the side's on a tie: an NCHW input window along the output columns), so
    consecutive threads read nearby elements."""
    op = chunkable(ld, guard, c, kind)
    if isinstance(op, MmaOperand):
        return op
    read = guard or ld
    side = c.packs[read]
    _, leaves, address = _flattened(ld)
    strides = _strides(leaves, address)
    k_stride = abs(strides.get(c.inner.induction_var, 0))
    p_stride = abs(strides.get(c.side_loops(side)[-1].induction_var, 0))
    k_fast = kind.input.width != 16 or not (p_stride and (not k_stride or p_stride <= k_stride))
    return MmaOperand(ld, side, k_fast, guard, gather=True, gather_reason=op)


def _flattened(ld: AffineLoadOp) -> tuple[tuple[AffineExpr, ...], list[Value], AffineExpr]:
    """The subscripts of ``ld`` over its leaf values (dims, :func:`access_subscripts`), those values,
    and its flattened (row-major) address over them (a dynamic dimension counted as 1)."""
    leaves: list[Value] = []
    subs = access_subscripts(ld, leaves)
    shape = ld.memref.type.shape
    address, stride = AffineExpr.constant(0), 1
    for dim in reversed(range(len(subs))):
        address = address + subs[dim] * stride
        stride *= shape[dim] if shape[dim] is not None else 1
    return subs, leaves, address


def _strides(leaves: list[Value], address: AffineExpr) -> dict[Value, int]:
    """How far one step of each leaf value moves the flattened ``address``."""
    return {v: address.coefficient_of_dim(i) for i, v in enumerate(leaves)}


def _type_reason(t: Type) -> str:
    if isinstance(t, FloatType) and t.name == "f32":
        return "f32 operands would be rounded to TF32 by the matrix units (allow-tf32 is off)"
    return f"{t} has no matrix-unit support here (f16/bf16/f8E4M3FN/f8E5M2 inputs with f32 sums, tf32, i8 with " \
           f"i32 sums)"


def contiguous_chain(loops: list[AffineForOp], strides: dict[Value, int], trips: dict[AffineForOp, int],
                     n: int) -> list[AffineForOp]:
    """The innermost loops of the chain ``loops`` (outermost first) over which a read's flattened
    address runs contiguously in runs of a multiple of ``n`` elements: the innermost moves it by 1,
    each loop outside by the trip counts inside it multiplied (a row-major ``filter[c][kh][kw]``
    along its window ``(c, kh, kw)``), as few loops as make the trip counts multiplied a multiple of
    ``n`` (an NHWC input along ``c`` alone when ``C`` is one, along ``(kw, c)`` otherwise) -- so
    ``n`` consecutive values of their linear index are ``n`` consecutive elements -- or all such
    loops when none do; loops of one trip fit anywhere. Empty when the innermost loop does not
    move the address by 1."""
    chain: list[AffineForOp] = []
    want = 1
    for lp in reversed(loops):
        if trips[lp] > 1 and strides.get(lp.induction_var, 0) != want:
            break
        chain.append(lp)
        want *= trips[lp]
        if want % n == 0:
            break
    return chain[::-1] if want > 1 else []


def chunkable(ld: AffineLoadOp, guard: AffineIfOp | None, c: Contraction, kind: MmaKind) -> MmaOperand | str:
    """The operand of the packed load ``ld`` (inside the zero-padding ``guard``, if any) when
    16-byte chunks of it are contiguous and aligned (see the module docstring) and the guard does
    not change within a chunk, or why not."""
    side = c.packs[guard or ld]
    t = ld.memref.type
    what = f"the read of %{ld.memref.name_hint or '?'}"
    if not isinstance(t, MemRefType) or None in t.shape or not t.shape:
        return f"{what} is not of a memref of static shape"
    subs, leaves, address = _flattened(ld)
    strides = _strides(leaves, address)
    n = kind.chunk
    chains = [ch for ch in (contiguous_chain(c.red_loops, strides, c.trips, n),
                            contiguous_chain(c.side_loops(side), strides, c.trips, n)) if ch]
    if len(chains) != 1:
        return f"{what} is not contiguous along k or along its innermost {'row' if side == 'A' else 'column'} loop"
    chain = chains[0]
    names = ", ".join(loop_name(lp) for lp in chain)
    ivs = {lp.induction_var for lp in chain}
    if subs[-1].div_terms() or any(e.div_terms() and any(leaves[i] in ivs for i in e.used_dims()) for e in subs):
        return f"{what} divides in its last subscript or in one that uses ({names})"
    offset = address.constant_term + sum(strides.get(lp.induction_var, 0) * c.lows.get(lp, 0) for lp in chain)
    others = [strides[v] for v in leaves if v not in ivs] + [t.coeff for t in address.div_terms()]
    if math.prod(c.trips[lp] for lp in chain) % n or offset % n or any(x % n for x in others):
        return (f"{what} is not in aligned 16-byte chunks along ({names}) (their trip counts multiplied, the "
                f"read's offset and its strides along every other value and division must be multiples of "
                f"{n} elements)")
    k_fast = chain[-1] is c.inner
    if not k_fast and kind.input.width not in (16, 32):
        return (f"{what} is contiguous along ({names}), not k: ldmatrix transposes only 16-bit "
                f"elements, and {kind.input.width}-bit fragments read per element are not built")
    if guard is not None:
        used: list[Value] = []
        for v in guard.operands:
            index_expr(v, used)
        if any(v in ivs for v in used):
            return f"the zero-padding of {what} changes along ({names}) within a 16-byte chunk"
    return MmaOperand(ld, side, k_fast, guard)


def stage_count(tiles: MmaTiles, kind: MmaKind, k: int, gpu: GPUTarget, requested: int = 0,
                most: int = MAX_STAGES) -> int:
    """The stages of the ring: ``requested`` if given, else as many as ``gpu``'s shared memory per
    block holds (at most ``most``: :data:`MAX_STAGES`, or :data:`GATHERED_STAGES` for a plan whose
    operands are all gathered); never more than one more than the k steps."""
    steps = -(-k // tiles.BK)
    fit = gpu.shared_memory_per_block_optin // tiles.stage_bytes(kind)
    stages = requested or min(most, fit)
    return max(2, min(stages, steps + 1))


def fits(tiles: MmaTiles, kind: MmaKind, gpu: GPUTarget) -> str | None:
    """Why ``tiles`` do not fit ``gpu`` (threads, shared memory, registers), or None."""
    threads = tiles.threads(gpu.warp_size)
    if threads > gpu.max_threads_per_block:
        return f"{threads} threads exceed {gpu.name}'s {gpu.max_threads_per_block} per block"
    need = tiles.stage_bytes(kind) * tiles.stages
    if need > gpu.shared_memory_per_block_optin:
        return (f"{tiles.describe()} needs {need} bytes of shared memory, {gpu.name} has "
                f"{gpu.shared_memory_per_block_optin} per block")
    regs = tiles.warp_m * tiles.warp_n * kind.acc.width // (32 * gpu.warp_size) + REGISTER_OVERHEAD
    if regs > gpu.max_registers_per_thread or regs * threads > gpu.registers_per_block:
        return f"{tiles.describe()} needs about {regs} registers per thread"
    return None


def estimate_mma_seconds(sizes: tuple[int, int, int, int], tiles: MmaTiles, kind: MmaKind, gpu: GPUTarget) -> float:
    """The kernel's time: the blocks spread evenly over the multiprocessors, each doing ``2 * BM *
    BN * K`` FLOPs at the multiprocessor's tensor rate, scaled by the tile's reuse (``BM*BN/(BM+BN)``
    against 64, the 128x128 tile's: smaller tiles read more from shared memory per FLOP) and by
    the warps resident at once (as many blocks as the shared memory, threads and block slots
    allow) against :data:`LATENCY_WARPS`; or, when longer, the time to read every block's ``BM x K``
    and ``BN x K`` panels at the L2 bandwidth of the multiprocessors the blocks occupy."""
    b, m, n, k = sizes
    blocks = b * math.ceil(m / tiles.BM) * math.ceil(n / tiles.BN)
    per_sm = math.ceil(blocks / gpu.sm_count)
    resident = max(1, min(gpu.shared_memory_per_sm // (tiles.stage_bytes(kind) * tiles.stages),
                          gpu.max_threads_per_sm // tiles.threads(gpu.warp_size), gpu.max_blocks_per_sm))
    warps = min(per_sm, resident) * tiles.warps
    reuse = min(1.0, tiles.BM * tiles.BN / (tiles.BM + tiles.BN) / 64)
    rate = gpu.tensor_flops[TENSOR_RATE[str(kind.input)]] / gpu.sm_count * reuse * min(1.0, warps / LATENCY_WARPS)
    compute = per_sm * 2 * tiles.BM * tiles.BN * k / rate
    # every block reads its BM x K and BN x K panels (through L2), at the share of the chip's L2
    # bandwidth its multiprocessors draw
    panels = blocks * (tiles.BM + tiles.BN) * k * kind.bytes
    memory = panels / (gpu.l2_bandwidth * min(1.0, blocks / gpu.sm_count))
    return max(compute, memory)


def choose_mma_tiles(sizes: tuple[int, int, int, int], kind: MmaKind, gpu: GPUTarget,
                     stages: int = 0, most: int = MAX_STAGES) -> MmaTiles | str:
    """The candidate of :data:`MMA_TILE_CONFIGS` fitting ``gpu`` with the least
    :func:`estimate_mma_seconds` (partial tiles count whole; ties: a tile not twice M or N
    (:func:`overhangs`), then the larger tile), its stages from :func:`stage_count`; or why none
    fits. (A tie is common when the panels' traffic bounds the estimate: a ``128 x 256`` tile
    over 64 rows reads what two ``64 x 128`` tiles read, and computes twice their products.)"""
    best = None
    for rank, cfg in enumerate(MMA_TILE_CONFIGS):
        tiles = MmaTiles(*cfg)
        tiles = tiles.with_stages(stage_count(tiles, kind, sizes[3], gpu, stages, most))
        if tiles.invalid(kind) or fits(tiles, kind, gpu):
            continue
        key = (estimate_mma_seconds(sizes, tiles, kind, gpu), overhangs(sizes, tiles), rank)
        if best is None or key < best[0]:
            best = (key, tiles)
    if best is None:
        return (f"no tile candidate fits {gpu.name} "
                f"({', '.join(f'{c[0]}x{c[1]}x{c[2]}' for c in MMA_TILE_CONFIGS)})")
    return best[1]


def overhangs(sizes: tuple[int, int, int, int], tiles: MmaTiles) -> bool:
    """Whether the tile has at least twice the rows of all of M or the columns of all of N: half
    the products of every block are then never stored."""
    _, m, n, _ = sizes
    return tiles.BM >= 2 * m or tiles.BN >= 2 * n


def mma_split_candidates(sizes: tuple[int, int, int, int], tiles: MmaTiles, gpu: GPUTarget) -> list[int]:
    """1, and when the tiles alone give fewer blocks than multiprocessors (the grid is too small),
    the k slice counts (at most the model's ``max_splits``) leaving each slice at least
    ``min_slice_steps`` k steps and giving at most ``max_split_blocks_per_sm`` blocks per
    multiprocessor (the split-K facts of ``gpu.schedule_model``, as ``gpu-schedule``'s)."""
    cost = gpu.schedule_model
    b, m, n, k = sizes
    blocks = b * -(-m // tiles.BM) * -(-n // tiles.BN)
    steps = -(-k // tiles.BK)
    if blocks >= gpu.sm_count:
        return [1]
    return [1] + [s for s in range(2, cost.max_splits + 1)
                  if -(-steps // s) >= cost.min_slice_steps
                  and blocks * s <= cost.max_split_blocks_per_sm * gpu.sm_count]


def estimate_split_seconds(sizes: tuple[int, int, int, int], tiles: MmaTiles, kind: MmaKind, splits: int,
                           gpu: GPUTarget) -> float:
    """The time of the matrix-unit kernel with k in ``splits`` slices (:func:`estimate_mma_seconds`
    of ``splits`` times the blocks, each over ``K / splits``) plus, for a split, one more launch
    (the model's ``launch_s``: the launch adding the slices is a plain element-wise kernel) and its
    traffic: the f32 slices written and read back at the DRAM bandwidth. (The model's
    ``split_launch_s`` is fitted with gpu-schedule's SIMT kernels, whose estimate includes their
    own launch; the matrix-unit estimate has none, so the split pays one launch more.)"""
    b, m, n, k = sizes
    seconds = estimate_mma_seconds((b * splits, m, n, slice_steps(k, tiles.BK, splits) * tiles.BK), tiles, kind, gpu)
    if splits > 1:
        seconds += gpu.schedule_model.launch_s + 2 * 4 * b * m * n * splits / gpu.dram_bandwidth
    return seconds


def slice_steps(k: int, bk: int, splits: int) -> int:
    """The k steps of each of ``splits`` slices: the steps of ``k`` spread evenly, rounded up (the
    last slice's steps past ``k`` read zeros)."""
    steps = -(-k // bk)
    return -(-steps // splits)


def effective_splits(k: int, bk: int, splits: int) -> int:
    """The slices of ``splits`` requested that get a k step each (no empty slice)."""
    steps = -(-k // bk)
    return -(-steps // slice_steps(k, bk, splits))


def choose_mma_split(sizes: tuple[int, int, int, int], tiles: MmaTiles, kind: MmaKind, gpu: GPUTarget) -> int:
    """The slices of :func:`mma_split_candidates` with the least :func:`estimate_split_seconds`
    (ties: fewer slices)."""
    return min((estimate_split_seconds(sizes, tiles, kind, s, gpu), s)
               for s in mma_split_candidates(sizes, tiles, gpu))[1]


#: The most block rows whose blocks run column by column together (:func:`raster_order`).
RASTER_ROWS = 8


def raster_order(cols: int, rows: int, sm_count: int, bx: Value, by: Value, at) -> tuple[Value, Value]:
    """The (tile column, tile row) block ``(bx, by)`` computes when the blocks run in groups of ``G`` block
    rows, column by column within a group (``G``: the largest divisor of the block rows up to
    :data:`RASTER_ROWS`): the blocks running at once then share the B columns they read, so B is read from
    DRAM about once per group instead of once per block row. The tile of block ``(bx, by)`` (``p = by *
    cols + bx``) is row ``(p floordiv (G * cols)) * G + p mod G`` and column ``(p mod (G * cols)) floordiv
    G``; ``(bx, by)`` unchanged within one wave. ``at``: an emitter in the launch body."""
    group = max(g for g in range(1, min(rows, RASTER_ROWS) + 1) if rows % g == 0)
    if group == 1 or cols == 1 or rows * cols <= sm_count:  # one wave: every block runs at once
        return bx, by
    p = AffineExpr.dim(1) * cols + AffineExpr.dim(0)
    row = p.floordiv(group * cols) * group + p % group
    col = (p % (group * cols)).floordiv(group)
    return at.apply(col, [bx, by], "tile_col"), at.apply(row, [bx, by], "tile_row")


def epilogue_ops(plan: MmaPlan, inside, mapping: dict, total: Value, skip: Operation | None = None) -> None:
    """The nest's ops around the reduction for one element whose sum is ``total``, into the emitter
    ``inside`` (``mapping``: the band's induction values for the element, extended as the ops are
    cloned): the ops before the reduction, the initial value combined with the sum (unless it is the
    constant 0), then the ops after it but ``skip`` (a store the caller makes itself)."""
    c = plan.c
    acc_arg = c.inner.body.args[1]
    term = next(v for v in plan.combine.operands if v is not acc_arg)
    for op in c.pre:
        inside.add(op.clone(mapping))
    if not plan.init_zero:
        init = mapping.get(c.red.inits[0], c.red.inits[0])
        total = inside.add(plan.combine.clone({acc_arg: init, term: total})).results[0]
    mapping[c.red.results[0]] = total
    for op in c.post:
        if op is not skip:
            inside.add(op.clone(mapping))
