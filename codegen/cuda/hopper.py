"""Hopper's asynchronous ops in kernels (sm_90): mbarriers, TMA bulk tensor copies and warpgroup MMA
(``wgmma``) as inline PTX, the ``nvvm`` fences and waits, and ``memref.view`` of byte buffers. The
semantics are :mod:`affine_ir.dialects.nvgpu_hopper`'s (the interpreter's :mod:`affine_ir.interp.hopper`).

- ``nvgpu.mbarrier.create``: a ``__shared__ __align__(8) unsigned long long bar[num_barriers]`` hoisted
  to the kernel's top (with the workgroup buffers, so it moves to dynamic shared memory with them);
  ``init``/``arrive``/``arrive.expect_tx`` are ``mbarrier.*.shared::cta.b64`` (``if (predicate)`` around
  them), ``try_wait.parity`` a loop of ``mbarrier.try_wait.parity.shared::cta.b64`` with the time hint
  ``ticks`` (``air_mbarrier_wait_parity``).
- TMA: a tensor map is a ``const __grid_constant__ air_tensormap`` kernel parameter (the 128-byte,
  64-byte aligned ``CUtensorMap``, encoded on the host by :mod:`runtime.tensor_maps`), passed to PTX by
  its generic address ``&map``; ``tma.async.load`` is ``cp.async.bulk.tensor.<r>d.shared::cluster.global.
  mbarrier::complete_tx::bytes``, ``tma.async.store`` ``cp.async.bulk.tensor.<r>d.global.shared::cta.
  bulk_group``, ``tma.prefetch.descriptor`` ``prefetch.tensormap``; coordinates innermost first, as the
  IR holds them. A workgroup buffer that a TMA copy or a wgmma descriptor touches (through views) is
  declared ``__align__(1024)``: the 128-byte swizzle repeats every 1024 bytes of the shared address.
- ``warpgroup.generate.descriptor``: the 64-bit shared-memory matrix descriptor (``air_wgmma_desc``):
  start address >> 4 in bits 0-13, leading byte offset >> 4 in 16-29 (1: unused by K-major swizzled
  tiles), stride byte offset >> 4 in 32-45 (8 rows of the swizzle span: 1024 bytes for 128B), swizzle
  mode in 62-63 (1: 128B, 2: 64B, 3: 32B).
- A warpgroup accumulator ``vector<M x N x f32>`` is a struct of the thread's ``M/64 * N/2`` floats
  (``struct air_wgacc_64x64 { float v[32]; };``; part ``p`` from ``v[p * N/2]``); ``init.accumulator``
  zero-fills it. ``warpgroup.mma``: ``wgmma.fence.sync.aligned``, per k16 step and 64-row part one
  ``wgmma.mma_async.sync.aligned.m64n<N>k16.f32.<t>.<t>`` (``air_wgmma_m64n64k16_f32_f16``, a
  ``__forceinline__`` wrapper taking the N/2 registers as ``"+f"`` operands, scale-d 1, both operands
  K-major: imm-trans 0; 8-bit floats: ``m64n<N>k32.f32.e4m3.e4m3`` (``e5m2``), no imm-trans operands,
  K-major only) with the descriptors advanced by 32 bytes per k step (+2) and by 64 rows per part
  (``64 * span`` bytes), then ``wgmma.commit_group.sync.aligned`` and ``wgmma.wait_group.sync.aligned
  <waitGroup>``. The result updates its accumulator's variable in place when that has no other use (an
  iter_arg chained through the loop, a fresh ``init.accumulator``); otherwise it is a copy. Empty
  ``asm volatile("" : "+f"(v[i]) :: "memory")`` fences (``air_wgacc_fence_<n>``, no PTX) keep the
  compiler from moving accumulator accesses across the wgmma fence and waits.
- ``warpgroup.mma.store``: each thread stores its registers (row ``64p + 16w + g + 8((i/2)%2)``, column
  ``8(i/4) + 2q + (i%2)``) in fully unrolled loops (``#pragma unroll``: register arrays are indexed by
  constants only), two adjacent f32 as one ``float2`` store where aligned.
- ``nvvm``: ``wgmma.fence/commit_group/wait_group``, ``fence.proxy.<kind>[.shared::<space>]``,
  ``fence.mbarrier_init.release.cluster``, ``setmaxnreg.{inc,dec}.sync.aligned.u32 N`` (the kernel gets
  ``__launch_bounds__(threads, 1)``, without which ptxas ignores it), ``cp.async.bulk.commit_group``,
  ``cp.async.bulk.wait_group[.read] N``; ``nvvm.barrier id = %i number_of_threads = %n``: ``bar.sync``
  (without operands ``__syncthreads()``).

- Thread-block clusters: a launch with ``clusters(...)`` (constant sizes, at most 8 blocks) gets
  ``__cluster_dims__(x, y, z)``; ``gpu.cluster_block_id`` is the block id modulo the cluster size, ``gpu.cluster_id``
  the block id over it (CUDA's grouping of a grid into clusters); ``tma.async.load ... multicast_mask`` is the
  ``.multicast::cluster`` form (a 16-bit ``"h"`` mask); ``nvgpu.mbarrier.arrive.remote`` maps the barrier's shared
  address to the block of that rank (``mapa.shared::cluster.u32``) and arrives there with
  ``mbarrier.arrive.shared::cluster.b64`` (default semantics, as CUTLASS's cluster barriers: ``.release.cluster``
  halved the speed); ``nvvm.cluster.arrive/wait [aligned]`` are
  ``barrier.cluster.arrive/wait[.aligned]``. The ops that reach other blocks are refused in a launch without
  clusters.

Each kernel records the architecture it needs (:attr:`~.program.KernelSpec.min_arch`): ``sm_90a`` for
wgmma and setmaxnreg, ``sm_90`` for TMA, ``try_wait``, ``expect_tx`` and the proxy fences.
"""

from __future__ import annotations

import re

from affine_ir.core import BlockArgument, Operation, Value
from affine_ir.dialects.nvgpu_hopper import (
    MBarrierCreateOp,
    TmaAsyncLoadOp,
    TmaAsyncStoreOp,
    WarpgroupGenerateDescriptorOp,
    WarpgroupMmaOp,
)
from affine_ir.traits import view_source
from affine_ir.types import (
    MBarrierTokenType,
    MemRefType,
    TensorMapDescriptorType,
    WarpgroupAccumulatorType,
    WarpgroupDescriptorType,
    i64,
    memref,
    swizzle_bytes,
)

from .errors import EmitError
from .kernel import MemInfo
from .types import storage_type

DEVICE = "static __device__ __forceinline__"
#: The ``CUtensorMap`` of a kernel parameter (NVRTC has no ``<cuda.h>`` by default).
TENSOR_MAP_TYPE = "air_tensormap"
TENSOR_MAP_STRUCT = f"struct __align__(64) {TENSOR_MAP_TYPE} {{ unsigned long long opaque[16]; }};"
TENSOR_MAP_CTYPE = f"const __grid_constant__ {TENSOR_MAP_TYPE}"
#: Alignment of a shared buffer that TMA or wgmma reads or writes (the 128-byte swizzle's period).
TMA_ALIGN = 1024
MBARRIER_ALIGN = 8
WARPGROUP = 128
WGMMA_M, WGMMA_K = 64, 16
#: Each input type's name in the wgmma instruction and its k per instruction (32 bytes of a row).
WGMMA_TYPES = {"f16": ("f16", 16), "bf16": ("bf16", 16), "f8E4M3FN": ("e4m3", 32), "f8E5M2": ("e5m2", 32)}
SWIZZLE_MODE = {128: 1, 64: 2, 32: 3}  # descriptor bits 62-63
SM90, SM90A = "sm_90", "sm_90a"
_SMEM = "(unsigned)__cvta_generic_to_shared({})"
_PROXY = {("async", None): "fence.proxy.async;", ("async.global", None): "fence.proxy.async.global;",
          ("alias", None): "fence.proxy.alias;", ("async.shared", "cta"): "fence.proxy.async.shared::cta;",
          ("async.shared", "cluster"): "fence.proxy.async.shared::cluster;"}


# -- the PTX wrappers (each its own helper source, see helpers.helper_source) ------------------------


def _asm(ptx: str, outs: str = "", ins: str = "", clobber: bool = True) -> str:
    return f'asm volatile("{ptx}" : {outs} : {ins}{" : " + chr(34) + "memory" + chr(34) if clobber else ""});'


def mbarrier_helper(kind: str) -> tuple[str, str]:
    """``air_mbarrier_<kind>`` for kind init, arrive, arrive_token, expect_tx, wait_parity."""
    bar = _SMEM.format("bar")
    if kind == "init":
        body = _asm("mbarrier.init.shared::cta.b64 [%0], %1;", "", f'"r"({bar}), "r"(count)')
        return "air_mbarrier_init", (f"{DEVICE} void air_mbarrier_init(unsigned long long* bar, unsigned count) {{\n"
                                     f"  {body}\n}}")
    if kind == "arrive":
        body = _asm("mbarrier.arrive.shared::cta.b64 _, [%0];", "", f'"r"({bar})')
        return "air_mbarrier_arrive", f"{DEVICE} void air_mbarrier_arrive(unsigned long long* bar) {{\n  {body}\n}}"
    if kind == "arrive_token":
        body = _asm("mbarrier.arrive.shared::cta.b64 %0, [%1];", '"=l"(state)', f'"r"({bar})')
        return "air_mbarrier_arrive_token", (
            f"{DEVICE} unsigned long long air_mbarrier_arrive_token(unsigned long long* bar) {{\n"
            f"  unsigned long long state;\n  {body}\n  return state;\n}}")
    if kind == "expect_tx":
        body = _asm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;", "", f'"r"({bar}), "r"(bytes)')
        return "air_mbarrier_arrive_expect_tx", (
            f"{DEVICE} void air_mbarrier_arrive_expect_tx(unsigned long long* bar, unsigned bytes) {{\n  {body}\n}}")
    assert kind == "wait_parity", kind
    body = _asm("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3; selp.u32 %0, 1, 0, p; }",
                '"=r"(done)', '"r"(a), "r"(parity), "r"(ticks)')
    return "air_mbarrier_wait_parity", (
        f"{DEVICE} void air_mbarrier_wait_parity(unsigned long long* bar, unsigned parity, unsigned ticks) {{\n"
        f"  unsigned a = {bar}, done;\n  do {{\n    {body}\n  }} while (!done);\n}}")


def mbarrier_remote_helper() -> tuple[str, str]:
    """``air_mbarrier_arrive_remote``: an arrival on the mbarrier at ``bar``'s place in block ``cta`` of the
    cluster (its shared address mapped there by ``mapa``), with the arrive's default semantics, as CUTLASS's
    ``ClusterBarrier::arrive(cta_id)``: ``.release.cluster`` made the 4096^3 matmul in clusters of 2 twice as
    slow on the H100 (0.499 ms against 0.256 with 128x128 tiles, RESULTS.md 2026-12-07 sixth session)."""
    mapa = _asm("mapa.shared::cluster.u32 %0, %1, %2;", '"=r"(remote)', '"r"(a), "r"(cta)', clobber=False)
    arrive = _asm("mbarrier.arrive.shared::cluster.b64 _, [%0];", "", '"r"(remote)')
    return "air_mbarrier_arrive_remote", (
        f"{DEVICE} void air_mbarrier_arrive_remote(unsigned long long* bar, unsigned cta) {{\n"
        f"  unsigned a = {_SMEM.format('bar')}, remote;\n  {mapa}\n  {arrive}\n}}")


def _coords(rank: int, first: int) -> str:
    return "{" + ", ".join(f"%{first + k}" for k in range(rank)) + "}"


def tma_load_helper(rank: int, multicast: bool = False) -> tuple[str, str]:
    """``air_tma_load_<rank>d`` (``_multicast``: into the same place of each block of the cluster in ``mask``,
    completing on the mbarrier at ``bar``'s place in each)."""
    name = f"air_tma_load_{rank}d{'_multicast' if multicast else ''}"
    params = ", ".join(f"int c{k}" for k in range(rank)) + (", unsigned short mask" if multicast else "")
    ins = f'"r"({_SMEM.format("dst")}), "l"(map), "r"({_SMEM.format("bar")}), ' + \
        ", ".join(f'"r"(c{k})' for k in range(rank)) + (', "h"(mask)' if multicast else "")
    tail = f".multicast::cluster [%0], [%1, {_coords(rank, 3)}], [%2], %{3 + rank};" if multicast else \
        f" [%0], [%1, {_coords(rank, 3)}], [%2];"
    body = _asm(f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes{tail}", "", ins)
    return name, (f"{DEVICE} void {name}(void* dst, const void* map, unsigned long long* bar, {params}) {{\n"
                  f"  {body}\n}}")


def tma_store_helper(rank: int) -> tuple[str, str]:
    name = f"air_tma_store_{rank}d"
    params = ", ".join(f"int c{k}" for k in range(rank))
    ins = f'"l"(map), "r"({_SMEM.format("src")}), ' + ", ".join(f'"r"(c{k})' for k in range(rank))
    body = _asm(f"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%0, {_coords(rank, 2)}], [%1];", "", ins)
    return name, f"{DEVICE} void {name}(const void* map, const void* src, {params}) {{\n  {body}\n}}"


def tma_prefetch_helper() -> tuple[str, str]:
    body = _asm("prefetch.tensormap [%0];", "", '"l"(map)')
    return "air_tma_prefetch", f"{DEVICE} void air_tma_prefetch(const void* map) {{\n  {body}\n}}"


def wgmma_desc_helper() -> tuple[str, str]:
    return "air_wgmma_desc", (
        f"{DEVICE} unsigned long long air_wgmma_desc(const void* tile, unsigned leading_bytes, unsigned stride_bytes,\n"
        f"                                            unsigned swizzle) {{\n"
        f"  // start address >> 4 (bits 0-13), leading byte offset >> 4 (bits 16-29: between the column chunks of\n"
        f"  // an MN-major tile; 16, unused, for a K-major one), stride byte offset >> 4 (bits 32-45: between\n"
        f"  // groups of 8 rows), swizzle mode (bits 62-63: 1 = 128B, 2 = 64B, 3 = 32B)\n"
        f"  unsigned long long a = {_SMEM.format('tile')};\n"
        f"  return ((a & 0x3FFFFULL) >> 4) | ((unsigned long long)((leading_bytes >> 4) & 0x3FFF) << 16) |\n"
        f"         ((unsigned long long)(stride_bytes >> 4) << 32) | ((unsigned long long)swizzle << 62);\n}}")


def wgmma_helper(n: int, el: str, b_mn_major: bool = False, a_mn_major: bool = False) -> tuple[str, str]:
    """``wgmma.mma_async.sync.aligned.m64n<n>k<k>.f32.<el>.<el>`` on ``d[0 .. n/2)`` (scale-d 1, A and B K-major
    or, with ``a_mn_major``/``b_mn_major``, MN-major: imm-trans-a/b 1); ``el`` the PTX type (``f16``, ``bf16``,
    and ``e4m3``/``e5m2`` with k 32, which take no imm-trans operands: both K-major)."""
    k = 32 if el in ("e4m3", "e5m2") else 16
    name = f"air_wgmma_m64n{n}k{k}_f32_{el}" + ("_amn" if a_mn_major else "") + ("_bmn" if b_mn_major else "")
    regs = n // 2
    dregs = "{" + ", ".join(f"%{k}" for k in range(regs)) + "}"
    outs = ", ".join(f'"+f"(d[{k}])' for k in range(regs))
    trans = "" if k == 32 else f", {int(a_mn_major)}, {int(b_mn_major)}"
    ptx = (f"{{ .reg .pred p; setp.ne.b32 p, %{regs + 2}, 0; wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{el}.{el} "
           f"{dregs}, %{regs}, %{regs + 1}, p, 1, 1{trans}; }}")
    body = f'asm volatile("{ptx}"\n               : {outs}\n               : "l"(a), "l"(b), "r"(1));'
    return name, f"{DEVICE} void {name}(float* d, unsigned long long a, unsigned long long b) {{\n  {body}\n}}"


def accumulator_fence_helper(count: int) -> tuple[str, str]:
    """An empty asm on each of ``count`` registers (no PTX): accesses stay on their side of it."""
    name = f"air_wgacc_fence_{count}"
    return name, (f"{DEVICE} void {name}(float* d) {{\n#pragma unroll\n"
                  f"  for (int i = 0; i < {count}; ++i) asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n}}")


def accumulator_struct(t: WarpgroupAccumulatorType) -> tuple[str, str]:
    m, n = t.fragmented.shape
    name = f"air_wgacc_{m}x{n}"
    return name, f"struct {name} {{ float v[{m // WGMMA_M * n // 2}]; }};"


# -- architectures ------------------------------------------------------------------------------------

_ARCH = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


def target_arch(arch: str | int, need: str | None, reason: str = "") -> str:
    """The architecture to compile for when the target is ``arch`` and the kernels need ``need``
    (``"sm_90"``, ``"sm_90a"`` or None): ``sm_90`` becomes ``sm_90a`` for wgmma/setmaxnreg (which exist
    on the sm_90a target only); :class:`EmitError` naming ``reason`` (the op) when the target cannot
    run them."""
    a = f"sm_{arch}" if isinstance(arch, int) or str(arch).isdigit() else str(arch)
    m = _ARCH.match(a)
    if m is None or need is None:
        return a
    cc = int(m.group(2))
    if need == SM90A:
        if cc != 90:
            raise EmitError(f"{reason} needs the sm_90a target (wgmma and setmaxnreg exist on Hopper only); the "
                            f"target is {a}")
        return f"{m.group(1)}_90a"
    if cc < 90:
        raise EmitError(f"{reason} needs sm_90 or newer (TMA, mbarrier transactions: Hopper); the target is {a}")
    return a


def _is_int(text: str) -> bool:
    return re.fullmatch(r"-?\d+", text) is not None


def _u32(text: str) -> str:
    if text in ("true", "false"):
        return "1" if text == "true" else "0"
    return text if _is_int(text) else f"(unsigned)({text})" if not text.isidentifier() else f"(unsigned){text}"


def _i32(text: str) -> str:
    return text if _is_int(text) else f"(int)({text})" if not text.isidentifier() else f"(int){text}"


def _plus(base: str, k: int) -> str:
    return base if k == 0 else f"{base} + {k}"


class HopperOps:
    """The Hopper printer methods of :class:`~.kernel.KernelPrinter` (a mixin, first in the bases).

    ``min_arch``: (architecture, the op needing it) or None; ``min_blocks``: 1 when the kernel needs
    ``__launch_bounds__(threads, 1)``; ``views``: ``memref.view`` results -> (the buffer's MemInfo,
    the byte shift); ``inflight``: accumulators of committed wgmma groups -> the C scope of their
    variable (fenced after a wait while that scope is open)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.min_arch: tuple[str, str] | None = None
        self.min_blocks: int | None = None
        self.views: dict[Value, tuple[MemInfo, Value]] = {}
        self.inflight: list[tuple[Value, dict | None]] = []

    # -- types, shared memory, architecture -------------------------------------------------------------
    def ctype(self, t) -> str:
        if isinstance(t, WarpgroupAccumulatorType):
            name, src = accumulator_struct(t)
            self._helpers.add(src)
            return name
        if isinstance(t, (WarpgroupDescriptorType, MBarrierTokenType)):
            return "unsigned long long"
        return super().ctype(t)

    def loop_result(self, r: Value, carried: Value) -> None:
        """A loop's accumulator result is its carried variable (no copy of registers that may be in
        flight)."""
        if isinstance(r.type, WarpgroupAccumulatorType):
            self.alias(r, carried)
            return
        super().loop_result(r, carried)

    def require(self, arch: str, op: Operation) -> None:
        """Note that ``op`` needs ``arch`` (sm_90 or sm_90a); the first op of the strongest need is kept."""
        have = self.min_arch
        if have is None or (have[0] == SM90 and arch == SM90A):
            where = f" at {op.location}" if op.location else ""
            self.min_arch = (arch, f"'{op.name}'{where}")

    def hoist_shared(self, body) -> None:
        """Workgroup buffers (see KernelPrinter), mbarrier groups (8-byte words), and 1024-byte alignment
        for the buffers TMA copies and wgmma descriptors use."""
        super().hoist_shared(body)
        for op in body.walk():
            if isinstance(op, MBarrierCreateOp):
                res = op.results[0]
                n = res.type.num_barriers
                t = memref((n,), i64, 3)  # for the declaration: n 8-byte words
                name = self.name(res)
                self.mems[res] = MemInfo(name, [n], t, res)
                self.shared.append((res, t))
                self.shared_align[res] = MBARRIER_ALIGN
                self.shared_ctype[res] = "unsigned long long"
        for op in body.walk():
            for v in _tma_tiles(op):
                root = view_source(v)
                if any(root is s for s, _ in self.shared):
                    self.shared_align[root] = max(self.shared_align.get(root, 0), TMA_ALIGN)

    def base_aligned(self, mem) -> bool:
        """A view is aligned when its buffer is and its byte shift is a multiple of 16."""
        view = self.views.get(mem.value)
        if view is not None:
            source, shift = view
            return self.base_aligned(source) and self.value_multiple(shift) % 16 == 0
        return super().base_aligned(mem)

    # -- memref.view / memref.cast ------------------------------------------------------------------------
    def op_memref_view(self, op: Operation) -> None:
        res = op.results[0]
        t: MemRefType = res.type
        src = self.mem(op.source)
        sizes = iter(op.sizes)
        dims = [d if d is not None else self.val(next(sizes)) for d in t.shape]
        st = storage_type(t.element_type)
        self.use_type(t.element_type)
        shift = self.val(op.byte_shift)
        base = self.val(op.source)
        addr = base if shift == "0" else f"{base} + {shift}"
        name = self.name(res)
        self.mems[res] = MemInfo(name, dims, t, res)
        self.views[res] = (src, op.byte_shift)
        self.emit(f"{st}* {name} = ({st}*)({addr});", defines=res)

    def op_memref_cast(self, op: Operation) -> None:
        res = op.results[0]
        if not isinstance(res.type, MemRefType):
            raise self.error(op, f"an unranked memref ({res.type}) cannot be used in a kernel")
        self.mems[res] = self.mem(op.source)
        self.alias(res, op.source)  # reads of the cast keep the source's declaration

    # -- mbarriers --------------------------------------------------------------------------------------
    def op_nvgpu_mbarrier_create(self, op: Operation) -> None:
        pass  # hoisted to the kernel's top (see hoist_shared)

    def _bar(self, op: Operation) -> str:
        return f"&{self.val(op.barriers)}[{self.val(op.mbar_id)}]"

    def _predicated(self, op: Operation, call: str) -> None:
        pred = getattr(op, "predicate", None)
        self.emit(call if pred is None else f"if ({self.val(pred)}) {call}")

    def op_nvgpu_mbarrier_init(self, op: Operation) -> None:
        fn = self.helper(mbarrier_helper("init"))
        self._predicated(op, f"{fn}({self._bar(op)}, {_u32(self.val(op.count))});")

    def op_nvgpu_mbarrier_arrive(self, op: Operation) -> None:
        tok = op.results[0] if op.results and op.results[0].has_uses else None
        if tok is None:
            self.emit(f"{self.helper(mbarrier_helper('arrive'))}({self._bar(op)});")
            return
        name = self.name(tok)
        self.emit(f"unsigned long long {name};", defines=tok)
        fn = self.helper(mbarrier_helper("arrive_token"))
        self._refs.add(tok)
        self.emit(f"{name} = {fn}({self._bar(op)});")

    def op_nvgpu_mbarrier_arrive_remote(self, op: Operation) -> None:
        self.require(SM90, op)
        self._cluster_launch(op)
        self.emit(f"{self.helper(mbarrier_remote_helper())}({self._bar(op)}, {_u32(self.val(op.cta))});")

    def _cluster_launch(self, op: Operation) -> None:
        if not self.launch.cluster_size:
            raise self.error(op, "reaches other blocks of a thread-block cluster: the gpu.launch needs clusters(...)")

    def op_nvgpu_mbarrier_arrive_expect_tx(self, op: Operation) -> None:
        self.require(SM90, op)
        fn = self.helper(mbarrier_helper("expect_tx"))
        self._predicated(op, f"{fn}({self._bar(op)}, {_u32(self.val(op.txcount))});")

    def op_nvgpu_mbarrier_try_wait_parity(self, op: Operation) -> None:
        self.require(SM90, op)
        fn = self.helper(mbarrier_helper("wait_parity"))
        self.emit(f"{fn}({self._bar(op)}, {_u32(self.val(op.parity))}, {_u32(self.val(op.ticks))});")

    # -- TMA ----------------------------------------------------------------------------------------------
    def _map(self, v: Value) -> str:
        if not isinstance(v.type, TensorMapDescriptorType):
            raise self.error(self.cur, f"expected a TMA descriptor, got {v.type}")
        return f"&{self.val(v)}"

    def op_nvgpu_tma_prefetch_descriptor(self, op: Operation) -> None:
        self.require(SM90, op)
        self._predicated(op, f"{self.helper(tma_prefetch_helper())}({self._map(op.descriptor)});")

    def op_nvgpu_tma_async_load(self, op: Operation) -> None:
        self.require(SM90, op)
        coords = ", ".join(_i32(self.val(c)) for c in op.coordinates)
        if op.multicast_mask is not None:
            self._cluster_launch(op)
            coords += f", (unsigned short)({self.val(op.multicast_mask)})"
        fn = self.helper(tma_load_helper(len(op.coordinates), op.multicast_mask is not None))
        self._predicated(op, f"{fn}({self.val(op.dst)}, {self._map(op.descriptor)}, {self._bar(op)}, {coords});")

    def op_nvgpu_tma_async_store(self, op: Operation) -> None:
        self.require(SM90, op)
        coords = ", ".join(_i32(self.val(c)) for c in op.coordinates)
        fn = self.helper(tma_store_helper(len(op.coordinates)))
        self._predicated(op, f"{fn}({self._map(op.descriptor)}, {self.val(op.src)}, {coords});")

    # -- warpgroup MMA ------------------------------------------------------------------------------------
    def op_nvgpu_warpgroup_generate_descriptor(self, op: Operation) -> None:
        span = swizzle_bytes(op.tensor_map.type.swizzle)
        if span is None:
            raise self.error(op, f"a wgmma descriptor needs a swizzled tile, got swizzle {op.tensor_map.type.swizzle} "
                                 f"(not supported yet)")
        fn = self.helper(wgmma_desc_helper())
        k = _mn_major_k(self, op)  # an MN-major tile: its column chunks lie K rows of the span apart
        chunk = k * span if k else 16
        self.define(op.results[0], f"{fn}({self.val(op.tensor)}, {chunk}, {8 * span}, {SWIZZLE_MODE[span]})")

    def op_nvgpu_warpgroup_mma_init_accumulator(self, op: Operation) -> None:
        self.define(op.results[0], "{}")

    def _in_place(self, op: Operation, c: Value) -> bool:
        """Whether ``op`` may update the variable of its accumulator ``c`` in place: ``c`` has no other
        use and is defined in ``op``'s block (so ``op`` runs once per definition)."""
        block = c.block if isinstance(c, BlockArgument) else c.owner.parent
        return len(c.uses) == 1 and block is op.parent and self.aliases.get(c, c) in self.vars

    def op_nvgpu_warpgroup_mma(self, op: Operation) -> None:
        self.require(SM90A, op)
        a, b = op.descriptor_a.type.tensor, op.descriptor_b.type.tensor
        m, n = op.matrix_c.type.fragmented.shape
        el = a.element_type.name
        if el not in WGMMA_TYPES or b.element_type != a.element_type:
            raise self.error(op, "only f16/bf16/f8E4M3FN/f8E5M2 operands of one type are supported yet")
        ptx_type, k_per = WGMMA_TYPES[el]
        if k_per == 32 and (op.transpose_a or not op.transpose_b):
            raise self.error(op, f"{el} operands are read K-major only: A without transposeA, B with transposeB")
        a_k, b_k = a.shape[1], b.shape[0]  # the logical M x K and K x N tiles (upstream's descriptor types)
        span = a_k * (a.element_type.width // 8)  # the K rows of an MN-major A are one swizzle span too
        if span not in SWIZZLE_MODE or b_k != a_k:
            raise self.error(op, f"A {a} and B {b} must share K, one swizzle span (not supported yet)")
        # per k step (32 bytes of a row: k16, or k32 of 8-bit floats): a K-major tile moves 32 bytes along its
        # rows (+2 in the address field), an MN-major B 16 rows of column chunks (16 * span bytes)
        b_step = 2 if op.transpose_b else 16 * span // 16
        a_step = 16 * span // 16 if op.transpose_a else 2
        c, res = op.matrix_c, op.results[0]
        if self._in_place(op, c):
            self.alias(res, c)
        else:
            self.define(res, self.val(c), self.ctype(res.type))
        acc = self.aliases.get(res, res)
        regs, parts = n // 2, m // WGMMA_M
        mma = self.helper(wgmma_helper(n, ptx_type, not op.transpose_b, op.transpose_a))
        self.emit(f"{self.helper(accumulator_fence_helper(regs * parts))}({self.val(acc)}.v);")
        self.emit('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
        # per 64-row part: 64 rows of a K-major A, one column chunk (K rows) of an MN-major one
        part_step = (a_k if op.transpose_a else WGMMA_M) * span // 16
        for k in range(a_k // k_per):
            for p in range(parts):  # + 32 bytes per k step, + 64 rows per part (address field: bytes >> 4)
                d = _plus(f"{self.val(acc)}.v", p * regs)
                da = _plus(self.val(op.descriptor_a), p * part_step + a_step * k)
                self.emit(f"{mma}({d}, {da}, {_plus(self.val(op.descriptor_b), b_step * k)});")
        self.emit('asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");')
        self.inflight.append((acc, self._scope_of(acc)))
        self._wgmma_wait(op.wait_group)

    def _scope_of(self, v: Value) -> dict | None:
        """The open C scope (a dict of :attr:`known`) that declares ``v``'s variable: the one its
        defining op is printed in (for a loop's carried variable, the loop's); None outside the launch."""
        holder = v.block.parent_op if isinstance(v, BlockArgument) else v.owner
        depth = 0
        for anc in holder.ancestors() if holder is not None else ():
            if anc is self.launch:
                return self.known[depth] if depth < len(self.known) else None
            depth += 1
        return None

    def _wgmma_wait(self, keep: int) -> None:
        """``wgmma.wait_group.sync.aligned keep``, then a fence on each accumulator the wait retires (all
        but the ``keep`` last committed, in program order) whose variable is in scope (no PTX: reads of
        the retired registers stay after the wait)."""
        self.emit(f'asm volatile("wgmma.wait_group.sync.aligned {keep};" ::: "memory");')
        retired = self.inflight[:len(self.inflight) - keep] if keep < len(self.inflight) else []
        self.inflight = self.inflight[len(retired):]
        open_scopes = {id(s) for s in self.known}
        done: set[Value] = set()
        for v, scope in retired:
            if scope is not None and id(scope) in open_scopes and v not in done:
                done.add(v)
                m, n = v.type.fragmented.shape
                fence = self.helper(accumulator_fence_helper(m // WGMMA_M * n // 2))
                self.emit(f"{fence}({self.val(v)}.v);")

    def op_nvgpu_warpgroup_mma_store(self, op: Operation) -> None:
        m, n = op.matrix_d.type.fragmented.shape
        dst = self.mem(op.dst)
        if len(dst.dims) != 2:
            raise self.error(op, f"the destination must be a 2-D memref, got {dst.type}")
        regs, parts = n // 2, m // WGMMA_M
        t, row, col = (self.namer.fresh(x) for x in ("wg_thread", "wg_row", "wg_col"))
        p, i = self.namer.fresh("wg_part"), self.namer.fresh("wg_i")
        ld = dst.dims[1]
        pair = dst.type.element_type.name == "f32" and self.base_aligned(dst) and isinstance(ld, int) and ld % 2 == 0
        self.emit("{")
        self.emit(f"  const int {t} = {self._warpgroup_thread()};  // the thread's place in its warpgroup")
        self.emit(f"  const int {row} = 16 * ({t} / 32) + {t} % 32 / 4, {col} = 2 * ({t} % 4);")
        base = f"64 * {p} + {row}" if parts > 1 else row
        reg = f"{regs} * {p} + {i}" if parts > 1 else i
        where = f"({base} + 8 * ({i} / 2 % 2)) * {ld if isinstance(ld, int) else f'({ld})'} + 8 * ({i} / 4) + {col}"
        pad = "  "
        if parts > 1:
            self.emit("#pragma unroll")
            self.emit(f"  for (int {p} = 0; {p} < {parts}; ++{p})")
            pad = "    "
        self.emit("#pragma unroll")
        self.emit(f"{pad}for (int {i} = 0; {i} < {regs}; {i} += 2) {{")

        def element(k: int) -> tuple[str, str]:  # (the destination element, the register) of pair member k
            self._refs.add(dst.value)
            d = self.val(op.matrix_d)
            return f"{dst.name}[{where}{' + 1' if k else ''}]", f"{d}.v[{reg}{' + 1' if k else ''}]"

        if pair:
            (el0, r0), (_, r1) = element(0), element(1)
            self.emit(f"{pad}  *reinterpret_cast<float2*>(&{el0}) = make_float2({r0}, {r1});")
        else:
            for k in range(2):
                el, r = element(k)
                self.emit(f"{pad}  {el} = {r};")
        self.emit(f"{pad}}}")
        self.emit("}")

    def _warpgroup_thread(self) -> str:
        """The C expression of the thread's index in its warpgroup (linear thread id % 128)."""
        bx, by, bz = self.block_size
        if bx % WARPGROUP == 0:
            return f"(int)(threadIdx.x % {WARPGROUP})"
        linear = "threadIdx.x"
        if by > 1 or bz > 1:
            linear += f" + {bx} * (threadIdx.y" + (f" + {by} * threadIdx.z" if bz > 1 else "") + ")"
        return f"(int)(({linear}) % {WARPGROUP})"

    # -- nvvm ---------------------------------------------------------------------------------------------
    def _statement(self, op: Operation, ptx: str, arch: str) -> None:
        self.require(arch, op)
        self.emit(f'asm volatile("{ptx}" ::: "memory");')

    def op_nvvm_wgmma_fence_aligned(self, op: Operation) -> None:
        self._statement(op, "wgmma.fence.sync.aligned;", SM90A)

    def op_nvvm_wgmma_commit_group_sync_aligned(self, op: Operation) -> None:
        self._statement(op, "wgmma.commit_group.sync.aligned;", SM90A)

    def op_nvvm_wgmma_wait_group_sync_aligned(self, op: Operation) -> None:
        self.require(SM90A, op)
        self._wgmma_wait(op.group)

    def op_nvvm_fence_proxy(self, op: Operation) -> None:
        ptx = _PROXY.get((op.kind, op.space))
        if ptx is None:
            raise self.error(op, f"no PTX for a proxy fence <{op.kind}> in space {op.space}")
        self._statement(op, ptx, SM90)

    def op_nvvm_fence_mbarrier_init(self, op: Operation) -> None:
        self._statement(op, "fence.mbarrier_init.release.cluster;", SM90)

    def op_nvvm_setmaxregister(self, op: Operation) -> None:
        self.min_blocks = 1  # setmaxnreg needs a register cap at entry: __launch_bounds__(threads, 1)
        action = {"increase": "inc", "decrease": "dec"}[op.action]
        self._statement(op, f"setmaxnreg.{action}.sync.aligned.u32 {op.reg_count};", SM90A)

    def op_nvvm_barrier(self, op: Operation) -> None:
        """``__syncthreads()``, or ``bar.sync id[, number_of_threads]`` (a barrier of some warps)."""
        bid, n = op.barrier_id, op.number_of_threads
        if bid is None and n is None:
            self.emit("__syncthreads();")
            return
        bid_text = _u32(self.val(bid)) if bid is not None else "0"
        if n is None:
            self.emit(f'asm volatile("bar.sync %0;" :: "r"({bid_text}) : "memory");')
        else:
            self.emit(f'asm volatile("bar.sync %0, %1;" :: "r"({bid_text}), "r"({_u32(self.val(n))}) : "memory");')

    def op_nvvm_cluster_arrive(self, op: Operation) -> None:
        self._statement(op, f"barrier.cluster.arrive{'.aligned' if op.aligned else ''};", SM90)

    def op_nvvm_cluster_wait(self, op: Operation) -> None:
        self._statement(op, f"barrier.cluster.wait{'.aligned' if op.aligned else ''};", SM90)

    def op_nvvm_cp_async_bulk_commit_group(self, op: Operation) -> None:
        self._statement(op, "cp.async.bulk.commit_group;", SM90)

    def op_nvvm_cp_async_bulk_wait_group(self, op: Operation) -> None:
        self._statement(op, f"cp.async.bulk.wait_group{'.read' if op.read else ''} {op.group};", SM90)


def _tma_tiles(op: Operation) -> list[Value]:
    """The shared tiles ``op`` copies with TMA or describes for wgmma."""
    if isinstance(op, TmaAsyncLoadOp):
        return [op.dst]
    if isinstance(op, TmaAsyncStoreOp):
        return [op.src]
    if isinstance(op, WarpgroupGenerateDescriptorOp):
        return [op.tensor]
    return []


def _mn_major_k(emitter, op: Operation) -> int:
    """K when the tile of the ``warpgroup.generate.descriptor`` ``op`` is read MN-major (as A with
    ``transposeA``, as B without ``transposeB``: stored in column chunks), else 0. The descriptor's type is
    the logical tile either way (upstream's), so the layout comes from the ``warpgroup.mma`` ops using it;
    ones that disagree, or another use (through which the layout could not be followed), are an error."""
    layouts = set()
    tile = op.tensor.type
    for use in op.results[0].uses:
        mma = use.op
        if not isinstance(mma, WarpgroupMmaOp) or use.index > 1:
            raise emitter.error(op, f"a wgmma descriptor must be used by warpgroup.mma ops directly (its layout comes "
                                    f"from their transposeA/transposeB), not by '{mma.name}' (not supported yet)")
        if use.index == 0:
            layouts.add(tile.shape[1] if mma.transpose_a else 0)
        else:
            layouts.add(0 if mma.transpose_b else tile.shape[0])
    if len(layouts) > 1:
        raise emitter.error(op, "a wgmma descriptor read both K-major and MN-major by its warpgroup.mma ops")
    return layouts.pop() if layouts else 0
