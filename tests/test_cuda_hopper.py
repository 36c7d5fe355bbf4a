# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""Hopper's ops as CUDA C (issue 19): mbarriers, TMA bulk tensor copies and warpgroup MMA (wgmma) as
inline PTX, compiled by NVRTC for sm_90a without a warning (no C7510: wgmma wrappers are inlined; no
C7508: setmaxnreg sees a register cap), the architecture chosen from what the kernels use, the same
modules on the interpreter against numpy, the tensor maps' ``cuTensorMapEncodeTiled`` arguments and
launch plans with a fake driver, and -- marked ``gpu`` -- the kernels on a GPU against numpy."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest
from test_cuda_emit import body_lines, nvrtc_compile

import affine_ir as air
from codegen.cuda import EmitError, emit
from codegen.cuda.hopper import target_arch
from runtime import cuda_driver, tensor_maps
from runtime.arg_checks import written_arguments
from runtime.cuda_launch import pack_arguments
from runtime.errors import CompileError, LaunchError
from runtime.tensor_maps import TensorMapSpec

driver = pytest.importorskip("cuda.bindings.driver")

HAVE_GPU = cuda_driver.gpu_available()
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no usable GPU: {cuda_driver.gpu_unavailable_reason()}")

WG = "#gpu.address_space<workgroup>"

#: One warpgroup: TMA loads a 64x64 f16 tile of A and of B (N x K, K-major; its wgmma descriptor is of the
#: logical K x N tile, square here) into 1024-aligned views of a
#: workgroup byte buffer, waits on an mbarrier, C = A @ B^T with one warpgroup.mma (4 wgmmas m64n64k16).
TILE = """
!barrierType = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!tma = !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16, WG>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!wg = !nvgpu.warpgroup.descriptor<tensor = memref<64x64xf16, WG>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<64x64xf32>>
func.func @wgmma_tile(%A: memref<64x64xf16>, %B: memref<64x64xf16>, %C: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c8192 = arith.constant 8192 : index
  %c16384 = arith.constant 16384 : index
  %ticks = arith.constant 10000000 : index
  %false = arith.constant false
  %uA = memref.cast %A : memref<64x64xf16> to memref<*xf16>
  %uB = memref.cast %B : memref<64x64xf16> to memref<*xf16>
  %dA = nvgpu.tma.create.descriptor %uA box[%c64, %c64] : memref<*xf16> -> !tma
  %dB = nvgpu.tma.create.descriptor %uB box[%c64, %c64] : memref<*xf16> -> !tma
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %buf = memref.alloc() : memref<16384xi8, WG>
    %smA = memref.view %buf[%c0][] : memref<16384xi8, WG> to memref<64x64xf16, WG>
    %smB = memref.view %buf[%c8192][] : memref<16384xi8, WG> to memref<64x64xf16, WG>
    %bar = nvgpu.mbarrier.create -> !barrierType
    %leader = arith.cmpi eq, %tx, %c0 : index
    nvgpu.mbarrier.init %bar[%c0], %c1, predicate = %leader : !barrierType
    nvvm.fence.mbarrier.init
    gpu.barrier
    nvgpu.tma.prefetch.descriptor %dA, predicate = %leader : !tma
    nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c16384, predicate = %leader : !barrierType
    nvgpu.tma.async.load %dA[%c0, %c0], %bar[%c0] to %smA, predicate = %leader : !tma, !barrierType -> memref<64x64xf16, WG>
    nvgpu.tma.async.load %dB[%c0, %c0], %bar[%c0] to %smB, predicate = %leader : !tma, !barrierType -> memref<64x64xf16, WG>
    nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !barrierType
    %wA = nvgpu.warpgroup.generate.descriptor %smA, %dA : memref<64x64xf16, WG>, !tma -> !wg
    %wB = nvgpu.warpgroup.generate.descriptor %smB, %dB : memref<64x64xf16, WG>, !tma -> !wg
    %acc = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %r = nvgpu.warpgroup.mma %wA, %wB, %acc waitGroup = 0 transposeB : !wg, !wg, !acc -> !acc
    nvgpu.warpgroup.mma.store %r, %C : !acc to memref<64x64xf32>
    gpu.terminator
  }
  return
}
""".replace("WG", WG)

#: A K loop (K = 256 in 4 steps of 64) of 128x128 tiles: two 64-row wgmma parts of m64n128k16, the
#: accumulator an iter_arg updated in place (waitGroup = WAIT, then a wait of 0 after the loop), 96 KiB
#: of shared memory (dynamic, the base rounded up to 1024), the result stored through shared memory
#: and a TMA store (proxy fence, bulk group, wait for the reads).
GEMM = """
!bar = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>>
!tA = !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, WG>, swizzle = swizzle_128b, l2promo = l2promo_128b, oob = zero, interleave = none>
!tC = !nvgpu.tensormap.descriptor<tensor = memref<128x128xf32, WG>, swizzle = none, l2promo = none, oob = zero, interleave = none>
!wA = !nvgpu.warpgroup.descriptor<tensor = memref<128x64xf16, WG>>
!wB = !nvgpu.warpgroup.descriptor<tensor = memref<64x128xf16, WG>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
func.func @gemm(%A: memref<128x256xf16>, %B: memref<128x256xf16>, %C: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c16384 = arith.constant 16384 : index
  %c32768 = arith.constant 32768 : index
  %ticks = arith.constant 10000000 : index
  %uA = memref.cast %A : memref<128x256xf16> to memref<*xf16>
  %uB = memref.cast %B : memref<128x256xf16> to memref<*xf16>
  %uC = memref.cast %C : memref<128x128xf32> to memref<*xf32>
  %dA = nvgpu.tma.create.descriptor %uA box[%c128, %c64] : memref<*xf16> -> !tA
  %dB = nvgpu.tma.create.descriptor %uB box[%c128, %c64] : memref<*xf16> -> !tA
  %dC = nvgpu.tma.create.descriptor %uC box[%c128, %c128] : memref<*xf32> -> !tC
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %buf = memref.alloc() : memref<98304xi8, WG>
    %smA = memref.view %buf[%c0][] : memref<98304xi8, WG> to memref<128x64xf16, WG>
    %smB = memref.view %buf[%c16384][] : memref<98304xi8, WG> to memref<128x64xf16, WG>
    %smBt = memref.view %buf[%c16384][] : memref<98304xi8, WG> to memref<64x128xf16, WG>
    %smC = memref.view %buf[%c32768][] : memref<98304xi8, WG> to memref<128x128xf32, WG>
    %bar = nvgpu.mbarrier.create -> !bar
    %leader = arith.cmpi eq, %tx, %c0 : index
    nvgpu.mbarrier.init %bar[%c0], %c1, predicate = %leader : !bar
    nvvm.fence.mbarrier.init
    gpu.barrier
    %acc0 = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %res = affine.for %k = 0 to 4 iter_args(%acc = %acc0) -> (!acc) {
      %kk = affine.apply affine_map<(d0) -> (d0 * 64)>(%k)
      %par = affine.apply affine_map<(d0) -> (d0 mod 2)>(%k)
      %parity = arith.cmpi ne, %par, %c0 : index
      nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %c32768, predicate = %leader : !bar
      nvgpu.tma.async.load %dA[%kk, %c0], %bar[%c0] to %smA, predicate = %leader : !tA, !bar -> memref<128x64xf16, WG>
      nvgpu.tma.async.load %dB[%kk, %c0], %bar[%c0] to %smB, predicate = %leader : !tA, !bar -> memref<128x64xf16, WG>
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %parity, %ticks : !bar
      %wA = nvgpu.warpgroup.generate.descriptor %smA, %dA : memref<128x64xf16, WG>, !tA -> !wA
      %wB = nvgpu.warpgroup.generate.descriptor %smBt, %dB : memref<64x128xf16, WG>, !tA -> !wB
      %r = nvgpu.warpgroup.mma %wA, %wB, %acc waitGroup = WAIT transposeB : !wA, !wB, !acc -> !acc
      gpu.barrier
      affine.yield %r : !acc
    }
    nvvm.wgmma.wait.group.sync.aligned 0
    nvgpu.warpgroup.mma.store %res, %smC : !acc to memref<128x128xf32, WG>
    nvvm.fence.proxy <async.shared>, space = <cta>
    gpu.barrier
    nvgpu.tma.async.store %smC to %dC[%c0, %c0], predicate = %leader : memref<128x128xf32, WG> -> !tC
    nvvm.cp.async.bulk.commit.group
    nvvm.cp.async.bulk.wait_group 0 read
    gpu.terminator
  }
  return
}
""".replace("WG", WG)

#: Warp specialization: each warpgroup's role one branch of an if/else, with its register budget.
ROLES = """
func.func @roles(%out: memref<256xf32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c128 = arith.constant 128 : i32
  %c1_i32 = arith.constant 1 : i32
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    affine.if affine_set<(d0) : (d0 - 128 >= 0)>(%tx) {
      nvvm.setmaxregister increase 232
      nvvm.barrier id = %c1_i32 number_of_threads = %c128
      affine.store %one, %out[%tx] : memref<256xf32>
    } else {
      nvvm.setmaxregister decrease 40
      affine.store %two, %out[%tx] : memref<256xf32>
    }
    gpu.terminator
  }
  return
}
"""


def tile(el: str, m: int, n: int) -> str:
    """One warpgroup, ``C = A @ B^T`` for an M x 64 A and N x 64 B of ``el`` (one 128-byte swizzled row
    each; B's wgmma descriptor is of the logical 64 x N tile, a second view of the bytes, as upstream): mbarrier 1 of a group of 2 counts the leader's expect_tx and every thread's arrive; two
    chained warpgroup.mma (waitGroup 1, then 0) give 2 * A @ B^T."""
    bytes_a, bytes_b = m * 128, n * 128
    return f"""
!bar = !nvgpu.mbarrier.group<memorySpace = {WG}, num_barriers = 2>
!tA = !nvgpu.tensormap.descriptor<tensor = memref<{m}x64x{el}, {WG}>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!tB = !nvgpu.tensormap.descriptor<tensor = memref<{n}x64x{el}, {WG}>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!wA = !nvgpu.warpgroup.descriptor<tensor = memref<{m}x64x{el}, {WG}>>
!wB = !nvgpu.warpgroup.descriptor<tensor = memref<64x{n}x{el}, {WG}>>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<{m}x{n}xf32>>
func.func @t(%A: memref<{m}x64x{el}>, %B: memref<{n}x64x{el}>, %C: memref<{m}x{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %cm = arith.constant {m} : index
  %cn = arith.constant {n} : index
  %c128 = arith.constant 128 : index
  %c129 = arith.constant 129 : index
  %cB = arith.constant {bytes_a} : index
  %tx_bytes = arith.constant {bytes_a + bytes_b} : index
  %ticks = arith.constant 1000 : index
  %false = arith.constant false
  %uA = memref.cast %A : memref<{m}x64x{el}> to memref<*x{el}>
  %uB = memref.cast %B : memref<{n}x64x{el}> to memref<*x{el}>
  %dA = nvgpu.tma.create.descriptor %uA box[%cm, %c64] : memref<*x{el}> -> !tA
  %dB = nvgpu.tma.create.descriptor %uB box[%cn, %c64] : memref<*x{el}> -> !tB
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {{
    %buf = memref.alloc() : memref<{bytes_a + bytes_b}xi8, {WG}>
    %smA = memref.view %buf[%c0][] : memref<{bytes_a + bytes_b}xi8, {WG}> to memref<{m}x64x{el}, {WG}>
    %smB = memref.view %buf[%cB][] : memref<{bytes_a + bytes_b}xi8, {WG}> to memref<{n}x64x{el}, {WG}>
    %smBt = memref.view %buf[%cB][] : memref<{bytes_a + bytes_b}xi8, {WG}> to memref<64x{n}x{el}, {WG}>
    %bar = nvgpu.mbarrier.create -> !bar
    %leader = arith.cmpi eq, %tx, %c0 : index
    nvgpu.mbarrier.init %bar[%c1], %c129, predicate = %leader : !bar
    gpu.barrier
    nvgpu.mbarrier.arrive.expect_tx %bar[%c1], %tx_bytes, predicate = %leader : !bar
    nvgpu.tma.async.load %dA[%c0, %c0], %bar[%c1] to %smA, predicate = %leader : !tA, !bar -> memref<{m}x64x{el}, {WG}>
    nvgpu.tma.async.load %dB[%c0, %c0], %bar[%c1] to %smB, predicate = %leader : !tB, !bar -> memref<{n}x64x{el}, {WG}>
    %tok = nvgpu.mbarrier.arrive %bar[%c1] : !bar -> !nvgpu.mbarrier.token
    nvgpu.mbarrier.try_wait.parity %bar[%c1], %false, %ticks : !bar
    %wA = nvgpu.warpgroup.generate.descriptor %smA, %dA : memref<{m}x64x{el}, {WG}>, !tA -> !wA
    %wB = nvgpu.warpgroup.generate.descriptor %smBt, %dB : memref<64x{n}x{el}, {WG}>, !tB -> !wB
    %acc = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %r = nvgpu.warpgroup.mma %wA, %wB, %acc transposeB : !wA, !wB, !acc -> !acc
    %r2 = nvgpu.warpgroup.mma %wA, %wB, %r waitGroup = 0 transposeB : !wA, !wB, !acc -> !acc
    nvgpu.warpgroup.mma.store %r2, %C : !acc to memref<{m}x{n}xf32>
    gpu.terminator
  }}
  return
}}"""


def gemm(wait: int = 0) -> str:
    return GEMM.replace("WAIT", str(wait))


def _inputs(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(-4, 5, (m, k)).astype(np.float16), rng.integers(-4, 5, (n, k)).astype(np.float16))


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) @ b.astype(np.float32).T


def _compiles_cleanly(program) -> None:
    """NVRTC (ptxas included) compiles the program for its arch with an empty log: no warning, and no
    ptxas note such as C7510 (a wgmma wrapper not inlined), C7508 (setmaxnreg ignored) or C7517/C7519
    (waits injected around accumulator accesses)."""
    cubin, log = nvrtc_compile(program.source, program.arch)
    assert cubin and log == "", log


# ----------------------------------------------------------------------------------------------
# The kernels as CUDA C
# ----------------------------------------------------------------------------------------------


def test_wgmma_tile_prints_tma_mbarriers_and_inlined_wgmma_and_compiles_for_sm_90a():
    p = emit(air.parse(TILE), arch="sm_90")
    src = p.source
    assert p.arch == "sm_90a" and p.kernels[0].min_arch == "sm_90a"
    assert "'nvgpu.warpgroup.mma' at" in p.kernels[0].min_arch_reason
    assert "struct __align__(64) air_tensormap { unsigned long long opaque[16]; };" in src
    assert "const __grid_constant__ air_tensormap dA" in src and "const __grid_constant__ air_tensormap dB" in src
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" in src
    assert "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;" in src
    assert "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" in src
    assert "prefetch.tensormap [%0];" in src
    assert "static __device__ __forceinline__ void air_wgmma_m64n64k16_f32_f16(float* d, " in src
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1," in src and "p, 1, 1, 0, 0;" in src
    assert '"+f"(d[31])' in src and '"+f"(d[32])' not in src
    body = body_lines(p)
    assert body[:2] == ["__shared__ __align__(1024) signed char buf[16384];",
                        "__shared__ __align__(8) unsigned long long bar[1];"]
    assert "__half* smB = (__half*)(buf + 8192);" in body
    assert "if (leader) air_mbarrier_init(&bar[0], 1);" in body
    assert "if (leader) air_tma_load_2d(smA, &dA, &bar[0], 0, 0);" in body
    assert "air_mbarrier_wait_parity(&bar[0], 0, 10000000);" in body
    assert "unsigned long long wA = air_wgmma_desc(smA, 16, 1024, 1);" in body
    assert "air_wgacc_64x64 acc = {};" in body
    k = body.index('asm volatile("wgmma.fence.sync.aligned;" ::: "memory");')
    assert body[k - 1] == "air_wgacc_fence_32(acc.v);"
    assert body[k + 1:k + 8] == [
        "air_wgmma_m64n64k16_f32_f16(acc.v, wA, wB);", "air_wgmma_m64n64k16_f32_f16(acc.v, wA + 2, wB + 2);",
        "air_wgmma_m64n64k16_f32_f16(acc.v, wA + 4, wB + 4);", "air_wgmma_m64n64k16_f32_f16(acc.v, wA + 6, wB + 6);",
        'asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");',
        'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");', "air_wgacc_fence_32(acc.v);"]
    assert "const int wg_thread = (int)(threadIdx.x % 128);  // the thread's place in its warpgroup" in body
    assert "*reinterpret_cast<float2*>(&C[(wg_row + 8 * (wg_i / 2 % 2)) * 64 + 8 * (wg_i / 4) + wg_col]) = " \
           "make_float2(acc.v[wg_i], acc.v[wg_i + 1]);" in body
    _compiles_cleanly(p)


def test_wgmma_descriptor_bits():
    """The descriptor helper puts the fields where PTX's matrix descriptor has them."""
    p = emit(air.parse(TILE), arch="sm_90")
    assert "return ((a & 0x3FFFFULL) >> 4) | ((unsigned long long)((leading_bytes >> 4) & 0x3FFF) << 16) |" in p.source
    assert "((unsigned long long)(stride_bytes >> 4) << 32) | ((unsigned long long)swizzle << 62);" in p.source


@pytest.mark.parametrize("wait", [0, 1])
def test_gemm_loop_two_parts_dynamic_shared_memory_and_tma_store(wait):
    p = emit(air.parse(gemm(wait)), arch="sm_90a")
    k = p.kernels[0]
    assert (k.static_shared_bytes, k.dynamic_shared_bytes) == (0, 98320 + 1008)
    body = body_lines(p)
    assert body[:2] == ["extern __shared__ __align__(1024) unsigned char air_smem_base[];  // 98320 + 1008 bytes (alignment)",
                        "unsigned char* air_smem = air_smem_base + ((0u - (unsigned)__cvta_generic_to_shared(air_smem_base)) & 1023u);"]
    assert "signed char* buf = (signed char*)(air_smem + 0);" in body
    assert "unsigned long long* bar = (unsigned long long*)(air_smem + 98304);" in body
    assert "air_wgacc_128x128 acc = acc0;" in body  # the iter_arg, updated in place: no copy per step
    assert "air_wgmma_m64n128k16_f32_f16(acc.v + 64, wA + 518, wB + 6);" in body  # part 1: 64 rows on, k step 3
    assert "if (leader) air_tma_load_2d(smA, &dA, &bar[0], (int)kk, 0);" in body
    assert "air_mbarrier_wait_parity(&bar[0], (unsigned)parity, 10000000);" in body
    inner_wait = body.index(f'asm volatile("wgmma.wait_group.sync.aligned {wait};" ::: "memory");')
    loop_end = body.index("}", inner_wait)
    # the fence after the wait that retires the group: in the loop (waitGroup = 0) or after it (1)
    fence = "air_wgacc_fence_128(acc.v);"
    assert (body[inner_wait + 1] == fence) == (wait == 0)
    assert body[loop_end + 1] == 'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");'
    assert (body[loop_end + 2] == fence) == (wait == 1)
    assert not any(" res" in ln for ln in body)  # the loop's result is its carried variable
    assert "make_float2(acc.v[64 * wg_part + wg_i], acc.v[64 * wg_part + wg_i + 1]);" in body[-8]
    assert body[-5:] == ['asm volatile("fence.proxy.async.shared::cta;" ::: "memory");', "__syncthreads();",
                           "if (leader) air_tma_store_2d(&dC, smC, 0, 0);",
                           'asm volatile("cp.async.bulk.commit_group;" ::: "memory");',
                           'asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");']
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" in p.source
    _compiles_cleanly(p)


def test_setmaxnreg_gets_a_register_cap_and_named_barriers_print_bar_sync():
    p = emit(air.parse(ROLES), arch="sm_90")
    assert p.arch == "sm_90a"
    assert 'extern "C" __global__ void __launch_bounds__(256, 1) roles_kernel0(' in p.source
    body = body_lines(p)
    assert body[body.index("if (tx >= 128) {") + 1] == 'asm volatile("setmaxnreg.inc.sync.aligned.u32 232;" ::: "memory");'
    assert 'asm volatile("setmaxnreg.dec.sync.aligned.u32 40;" ::: "memory");' in body
    assert 'asm volatile("bar.sync %0, %1;" :: "r"(1), "r"(128) : "memory");' in body
    _compiles_cleanly(p)  # without the cap ptxas ignores setmaxnreg (C7508)
    no_cap = p.source.replace("__launch_bounds__(256, 1)", "__launch_bounds__(256)")
    assert "C7508" in nvrtc_compile(no_cap, "sm_90a")[1]  # what the check above would see


@pytest.mark.parametrize("el, m, n", [("bf16", 64, 8), ("bf16", 128, 24), ("f16", 64, 256), ("f16", 128, 128)])
def test_wgmma_shapes_and_types_compile_cleanly_and_interpret(el, m, n):
    import ml_dtypes

    p = emit(air.parse(tile(el, m, n)), arch="sm_90")
    body = body_lines(p)
    assert f"air_wgacc_{m}x{n} acc = {{}};" in body
    assert body.count(f"air_wgmma_m64n{n}k16_f32_{el}(acc.v, wA + 6, wB + 6);") == 2  # two chained warpgroup.mma
    assert (f"air_wgmma_m64n{n}k16_f32_{el}(acc.v + {n // 2}, wA + 512, wB);" in body) == (m == 128)
    assert "air_mbarrier_arrive(&bar[1]);" in body and "air_mbarrier_wait_parity(&bar[1], 0, 1000);" in body
    waits = [ln for ln in body if "wgmma.wait_group" in ln]
    assert waits == ['asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");',
                     'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");']
    fence = f"air_wgacc_fence_{m // 64 * n // 2}(acc.v);"
    assert body.count(fence) == 3  # before each wgmma.fence, and after the wait that retires the groups
    assert body[body.index(waits[0]) + 1:body.index(waits[0]) + 3] == [fence, 'asm volatile("wgmma.fence.sync.aligned;" ::: "memory");']
    assert body[body.index(waits[1]) + 1] == fence
    _compiles_cleanly(p)
    if m * n <= 128 * 24:  # the interpreter is slow on big tiles
        rng = np.random.default_rng(5)
        dt = ml_dtypes.bfloat16 if el == "bf16" else np.float16
        a, b = rng.integers(-4, 5, (m, 64)).astype(dt), rng.integers(-4, 5, (n, 64)).astype(dt)
        c = np.zeros((m, n), np.float32)
        air.interpret(air.parse(tile(el, m, n)), a, b, c)
        assert np.array_equal(c, 2 * _reference(a, b))


def test_a_wrapper_that_is_not_inlined_would_show_in_the_log():
    """What the clean-compile checks guard against (GPU.md: C7510 serializes the wgmmas)."""
    src = emit(air.parse(TILE), arch="sm_90").source
    bad = src.replace("static __device__ __forceinline__ void air_wgmma_", "static __device__ __noinline__ void air_wgmma_")
    assert "C7510" in nvrtc_compile(bad, "sm_90a")[1]


# ----------------------------------------------------------------------------------------------
# Architectures
# ----------------------------------------------------------------------------------------------


def test_the_target_follows_what_the_kernels_use():
    assert emit(air.parse(TILE)).arch is None  # no target given: nothing checked
    assert emit(air.parse(TILE), arch="sm_90a").arch == "sm_90a"
    assert emit(air.parse(TILE), arch="compute_90").arch == "compute_90a"
    tma_only = TILE.split("    %wA = ")[0] + "    gpu.terminator\n  }\n  return\n}\n"
    p = emit(air.parse(tma_only), arch="sm_100")
    assert p.arch == "sm_100" and p.kernels[0].min_arch == "sm_90"
    with pytest.raises(EmitError, match=r"kernel wgmma_tile_kernel0: 'nvvm.fence.mbarrier.init' at .* needs "
                                        r"sm_90 or newer .* the target is sm_80"):
        emit(air.parse(tma_only), arch="sm_80")
    with pytest.raises(EmitError, match=r"'nvgpu.warpgroup.mma' at .* needs the sm_90a target .* the target is sm_100"):
        emit(air.parse(TILE), arch="sm_100")
    assert target_arch("sm_80", None) == "sm_80" and target_arch(90, "sm_90a") == "sm_90a"


def test_runtime_compile_picks_sm_90a_and_refuses_older_targets():
    from runtime import cuda

    exe = cuda.compile(air.parse(TILE), pipeline="", arch="sm_90")
    assert exe.image.arch == "sm_90a" and exe.image.kind == "cubin" and exe.image.log == ""
    with pytest.raises(CompileError, match=r"needs the sm_90a target .* the target is sm_80"):
        cuda.compile(air.parse(TILE), pipeline="", arch="sm_80")


def test_refusals_name_the_op():
    multicast = TILE.replace("to %smA, predicate = %leader", "to %smA multicast_mask = %mask, predicate = %leader").replace(
        "    %leader = arith.cmpi", "    %mask = arith.constant 1 : i16\n    %leader = arith.cmpi")
    with pytest.raises(EmitError, match=r"cannot emit 'nvgpu.tma.async.load' as CUDA: reaches other blocks of a "
                                        r"thread-block cluster: the gpu.launch needs clusters"):
        emit(air.parse(multicast))
    unranked_arg = TILE.replace("func.func @wgmma_tile(%A: memref<64x64xf16>,", "func.func @wgmma_tile(%U: memref<*xf16>, %A: memref<64x64xf16>,").replace(
        "%dA = nvgpu.tma.create.descriptor %uA", "%dA = nvgpu.tma.create.descriptor %U")
    with pytest.raises(EmitError, match=r"a TMA descriptor is made of a ranked memref in global memory cast to "
                                        r"unranked on the host \(memref.cast\), got memref<\*xf16>"):
        emit(air.parse(unranked_arg))


# ----------------------------------------------------------------------------------------------
# The interpreter: the same modules, against numpy
# ----------------------------------------------------------------------------------------------


def test_wgmma_tile_on_the_interpreter_is_a_times_b_transposed():
    a, b = _inputs(64, 64, 64)
    c = np.zeros((64, 64), np.float32)
    air.interpret(air.parse(TILE), a, b, c)
    assert np.array_equal(c, _reference(a, b))


def test_gemm_loop_on_the_interpreter_is_a_times_b_transposed():
    a, b = _inputs(128, 128, 256, seed=1)
    c = np.zeros((128, 128), np.float32)
    air.interpret(air.parse(gemm(0)), a, b, c)
    assert np.array_equal(c, _reference(a, b))


# ----------------------------------------------------------------------------------------------
# The host side: tensor maps, parameters, launch plans (a fake driver)
# ----------------------------------------------------------------------------------------------


class _FakeEncoder:
    """Stands for ``cuda.bindings.driver`` in :func:`runtime.tensor_maps.encode`: the real enums, a
    ``cuTensorMapEncodeTiled`` that records its arguments and returns words made of them."""

    def __init__(self, refuse: bool = False):
        self.calls: list[tuple] = []
        self.refuse = refuse
        for name in ("CUresult", "CUtensorMapDataType", "CUtensorMapInterleave", "CUtensorMapSwizzle",
                     "CUtensorMapL2promotion", "CUtensorMapFloatOOBfill", "cuuint64_t", "cuuint32_t"):
            setattr(self, name, getattr(driver, name))

    def cuTensorMapEncodeTiled(self, *args):
        """Records the arguments (the lists as ints, after checking their binding types)."""
        lists = args[3:7]
        assert [type(x) for x in lists[0] + lists[1]] == [driver.cuuint64_t] * (len(lists[0]) + len(lists[1]))
        assert [type(x) for x in lists[2] + lists[3]] == [driver.cuuint32_t] * (len(lists[2]) + len(lists[3]))
        self.calls.append((*args[:3], *([int(x) for x in xs] for xs in lists), *args[7:]))
        if self.refuse:
            return driver.CUresult.CUDA_ERROR_INVALID_VALUE, None
        address, dims = args[2], lists[0]
        words = [driver.cuuint64_t(address), *dims, *[driver.cuuint64_t(0)] * (15 - len(dims))]
        return driver.CUresult.CUDA_SUCCESS, SimpleNamespace(opaque=words)


def test_tensor_map_encoding_arguments():
    tensor_maps.clear_cache()
    drv = _FakeEncoder()
    spec = TensorMapSpec("f16", 2, (128, 256), (128, 64), "swizzle_128b", "l2promo_128b", "zero", "none")
    words = tensor_maps.encode(spec, 0x10000, drv, "the TMA descriptor %dA of %A")
    ((dtype, rank, address, dims, strides, box, steps, interleave, swizzle, l2, oob),) = drv.calls
    assert dtype == driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16 and rank == 2 and address == 0x10000
    assert (dims, strides, box, steps) == ([256, 128], [512], [64, 128], [1, 1])  # innermost first, strides in bytes
    assert interleave == driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE
    assert swizzle == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    assert l2 == driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B
    assert oob == driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
    assert words[:3] == (0x10000, 256, 128) and len(words) == 16
    assert tensor_maps.encode(spec, 0x10000, drv) == words and len(drv.calls) == 1  # cached per (pointer, spec)
    tensor_maps.encode(spec, 0x20000, drv)
    assert len(drv.calls) == 2 and drv.calls[1][2] == 0x20000
    nan = TensorMapSpec("bf16", 2, (8, 4, 64), (1, 4, 64), "none", "none", "nan", "none")
    tensor_maps.encode(nan, 0x30000, drv)
    assert drv.calls[2][0] == driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    assert drv.calls[2][3:6] == ([64, 4, 8], [128, 512], [64, 4, 1])
    assert drv.calls[2][10] == driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA


@pytest.mark.parametrize("spec, ptr, message", [
    (TensorMapSpec("f16", 2, (64, 64), (64, 64), "swizzle_128b"), 0x10008,
     r"the TMA descriptor %dA of %A: the global address 0x10008 is not 16-byte aligned"),
    (TensorMapSpec("f16", 2, (100, 30), (64, 8)), 0x10000,
     r"the byte strides \(60,\) of dims \(100, 30\) \(innermost first\) must be multiples of 16"),
    (TensorMapSpec("f16", 2, (512, 512), (300, 64)), 0x10000, r"box sizes must be 1 to 256, got \(300, 64\)"),
    (TensorMapSpec("f16", 2, (512, 512), (64, 128), "swizzle_128b"), 0x10000,
     r"with swizzle_128b the box's innermost extent is at most 128 bytes, got 256"),
    (TensorMapSpec("f32", 4, (512, 512), (64, 3)), 0x10000, r"innermost extent must be a multiple of 16 bytes, got 12"),
])
def test_tensor_maps_the_driver_would_refuse_are_refused_first(spec, ptr, message):
    tensor_maps.clear_cache()
    drv = _FakeEncoder()
    with pytest.raises(LaunchError, match=message):
        tensor_maps.encode(spec, ptr, drv, "the TMA descriptor %dA of %A")
    assert drv.calls == []


def test_a_refusal_of_the_driver_names_the_descriptor():
    tensor_maps.clear_cache()
    spec = TensorMapSpec("f16", 2, (64, 64), (64, 64), "swizzle_128b")
    with pytest.raises(LaunchError, match=r"the TMA descriptor %dB of %B at .*: cuTensorMapEncodeTiled refused "
                                          r"CU_TENSOR_MAP_DATA_TYPE_FLOAT16, dims \[64, 64\].*CUDA_ERROR_INVALID_VALUE"):
        tensor_maps.encode(spec, 0x10000, _FakeEncoder(refuse=True), "the TMA descriptor %dB of %B at <string>:3:4")


def test_a_tensor_map_is_passed_by_value_as_128_bytes():
    words = tuple(range(1, 17))
    params, keep = pack_arguments([("const __grid_constant__ air_tensormap", words), ("float*", 0x1000)],
                                  param_sizes=(128, 8))
    arg = keep[0][0]
    assert ctypes.sizeof(arg) == 128 and tuple(arg) == words and params[0] == ctypes.addressof(arg)
    with pytest.raises(LaunchError, match=r"argument #0 \(const __grid_constant__ air_tensormap\): expected the 16 "
                                          r"64-bit words of an encoded tensor map"):
        pack_arguments([("const __grid_constant__ air_tensormap", (1, 2))])


def test_launch_plans_encode_the_tensor_maps_for_each_calls_pointers(monkeypatch):
    """The host side: memref.cast and create.descriptor run on the host; each launch gets the maps
    of the call's pointers (encoded once per pointer), also when a recorded plan is replayed."""
    from runtime import cuda
    from runtime.cuda import _Buffer

    tensor_maps.clear_cache()
    encoder = _FakeEncoder()
    monkeypatch.setattr(cuda_driver, "_drv", lambda: encoder)
    exe = cuda.compile(air.parse(TILE), pipeline="", arch="sm_90")
    exe._function = lambda spec: spec.name  # no module to load without a GPU
    a, b, c = exe.function.args
    launched = []

    class Driver:
        DeviceBuffer = None
        encode_tensor_map = staticmethod(cuda_driver.encode_tensor_map)

        def prepare_launch(self, fn, grid, block, args, shared_bytes=0):
            params, keep = pack_arguments(args)

            class Prepared:
                def __init__(self):
                    self.keep = keep

                def __call__(self, stream=None):
                    launched.append([tuple(v) if isinstance(v, ctypes.Array) else v.value for v in keep[0]])

            return Prepared()

    def call(pa, pb, pc):
        exe._run({a: _Buffer(pa, (64, 64)), b: _Buffer(pb, (64, 64)), c: _Buffer(pc, (64, 64))}, [], Driver())
        return launched[-1]

    first = call(0x10000, 0x20000, 0x30000)
    assert [p.kind for p in exe.kernels[0].params] == ["ptr", "tensormap", "tensormap"]
    assert first[0] == 0x30000 and first[1][:3] == (0x10000, 64, 64) and first[2][0] == 0x20000
    assert len(exe._plans) == 1 and len(encoder.calls) == 2
    again = call(0x40000, 0x20000, 0x50000)  # the plan replayed: A's map encoded for its new pointer
    assert len(exe._plans) == 1 and len(encoder.calls) == 3
    assert again[0] == 0x50000 and again[1][0] == 0x40000 and again[2] == first[2]
    with pytest.raises(LaunchError, match=r"the TMA descriptor %dA of %A at .*: the global address 0x40008 is not "
                                          r"16-byte aligned"):
        call(0x40008, 0x20000, 0x50000)


def test_only_the_tma_store_writes_its_tensor():
    assert written_arguments(air.parse(TILE).functions[0]) == {2}  # C by warpgroup.mma.store; A, B only read
    assert written_arguments(air.parse(gemm()).functions[0]) == {2}  # C by the TMA store


# ----------------------------------------------------------------------------------------------
# On a GPU
# ----------------------------------------------------------------------------------------------


@pytest.mark.gpu
@needs_gpu
def test_gpu_wgmma_tile_matches_numpy():
    from runtime import cuda

    exe = cuda.compile(air.parse(TILE), pipeline="")
    a, b = _inputs(64, 64, 64, seed=2)
    c = np.zeros((64, 64), np.float32)
    exe(a, b, c)
    assert np.array_equal(c, _reference(a, b))


@pytest.mark.gpu
@needs_gpu
def test_gpu_gemm_loop_with_tma_store_matches_numpy_twice():
    """Dynamic shared memory, two wgmma parts, the TMA store; the second call replays the launch plan
    with tensor maps of the new arrays. (waitGroup = 0: with 1, the next step's TMA load would
    overwrite tiles a wgmma in flight still reads.)"""
    from runtime import cuda

    exe = cuda.compile(air.parse(gemm(0)), pipeline="")
    for seed in (3, 4):
        a, b = _inputs(128, 128, 256, seed=seed)
        c = np.full((128, 128), np.nan, np.float32)
        exe(a, b, c)
        assert np.array_equal(c, _reference(a, b)), f"call with seed {seed}"


def test_an_sm80_gpu_gets_the_mma_sync_path_and_a_forced_wgmma_pipeline_a_clear_error():
    """Without a pipeline, runtime.compile picks the one of the target arch: sm_90 gets warpgroup MMA
    (compiled for sm_90a), sm_100 the mma.sync path with the H200's tiles (wgmma is sm_90a's only), sm_80 the
    A100's (mma.sync tiles, nothing of sm_90) and compiles; the wgmma pipeline asked for on sm_80 is a
    CompileError naming sm_90a, never a crash."""
    from runtime import cuda
    from transforms.pipelines import gpu_pipeline

    m = air.library.matmul(128, 128, 128, dtype="f16", transpose_b=True)
    exe = cuda.compile(m, arch="sm_80")
    assert exe.program.arch == "sm_80" and "wgmma" not in exe.source and "mma.sync" in exe.source
    assert cuda.default_pipeline("sm_90") == cuda.HOPPER_PIPELINE == gpu_pipeline(wgmma=True)
    assert cuda.default_pipeline("sm_100") == cuda.DEFAULT_PIPELINE != cuda.default_pipeline("sm_80")
    hopper = cuda.compile(m, arch="sm_90")
    assert hopper.program.arch == "sm_90a" and "wgmma.mma_async" in hopper.source
    with pytest.raises(CompileError, match="sm_90a"):
        cuda.compile(m, arch="sm_80", pipeline=gpu_pipeline(wgmma=True))


def test_a_wgmma_descriptor_reaching_its_mma_through_a_loop_is_refused():
    """The CUDA printer takes a descriptor's layout (its leading byte offset) from the warpgroup.mma ops using it;
    one that reaches its mma through a loop's iter_args could not be followed: an EmitError, not a guess."""
    from codegen.cuda import emit

    text = TILE.replace("""    %acc = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %r = nvgpu.warpgroup.mma %wA, %wB, %acc""", """    %acc = nvgpu.warpgroup.mma.init.accumulator -> !acc
    %wB2 = affine.for %q = 0 to 1 iter_args(%d = %wB) -> (!wg) {
      affine.yield %d : !wg
    }
    %r = nvgpu.warpgroup.mma %wA, %wB2, %acc""")
    assert text != TILE
    with pytest.raises(EmitError, match="must be used by warpgroup.mma ops directly"):
        emit(air.parse(text), arch="sm_90a")
