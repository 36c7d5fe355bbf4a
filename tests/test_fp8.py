"""8-bit floats (issue 19): the ``f8E4M3FN``/``f8E5M2`` types, their rounding in the interpreter and the
CUDA C printer, ``air.library.scaled_matmul`` (``torch._scaled_mm``'s per-tensor-scaled GEMM), and its
mapping onto warpgroup MMA (``wgmma ... k32 .e4m3``): the mapped kernels give the original's bits on
the interpreter's launch emulation, the CUDA C compiles for sm_90a, and what cannot take 8-bit operands
says so."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from test_map_wgmma import assert_nvrtc_compiles, check_same_bits, map_wgmma, ops_of

import affine_ir as air
from affine_ir import floats
from affine_ir.dialects.nvgpu_warpgroup import WarpgroupMmaOp
from affine_ir.errors import IRError
from affine_ir.library import reference as ref
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from affine_ir.types import f8E4M3FN, f8E5M2
from codegen.cuda import emit
from transforms import PassManager

L = air.library
NP = {"f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}

CASTS = """func.func @f(%A: memref<8xf8E4M3FN>, %B: memref<8xf32>, %C: memref<8xf8E4M3FN>, %D: memref<8xf8E5M2>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf8E4M3FN>
    %b = arith.extf %a : f8E4M3FN to f32
    affine.store %b, %B[%i] : memref<8xf32>
    %c = arith.mulf %b, %b : f32
    %d = arith.truncf %c : f32 to f8E4M3FN
    affine.store %d, %C[%i] : memref<8xf8E4M3FN>
    %e = arith.truncf %c : f32 to f8E5M2
    affine.store %e, %D[%i] : memref<8xf8E5M2>
  }
  return
}"""


def test_types_parse_print_and_have_width_8():
    m = air.parse(CASTS)
    assert str(air.parse(str(m))) == str(m)
    assert f8E4M3FN.width == f8E5M2.width == 8 and str(f8E4M3FN) == "f8E4M3FN"


@pytest.mark.parametrize("fmt", list(NP))
def test_rounding_agrees_with_ml_dtypes_on_every_f32_boundary(fmt):
    """Every value halfway between two neighbours (ties to even), just beside it, and beyond the largest
    finite value (overflow: NaN in f8E4M3FN, infinity in f8E5M2) rounds as ml_dtypes rounds it."""
    values = np.arange(256, dtype=np.uint8).view(NP[fmt]).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    mids = (finite[1:] + finite[:-1]) / 2
    probes = np.concatenate([finite, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                             [finite.max() * 1.5, -finite.max() * 3, 1e30]]).astype(np.float32)
    want = probes.astype(NP[fmt]).astype(np.float64)
    got = np.array([floats.ROUNDERS[fmt](float(x)) for x in probes])
    assert np.array_equal(got, want, equal_nan=True)
    assert math.isnan(floats.ROUNDERS["f8E4M3FN"](480.0)) and floats.ROUNDERS["f8E4M3FN"](464.0) == 448.0
    assert floats.ROUNDERS["f8E5M2"](61440.0) == math.inf


def test_the_interpreter_loads_extends_rounds_and_stores_bit_patterns():
    a = np.array([1.5, -2, 20, 0.0625, -0.0, 448, 0.001953125, -240], ml_dtypes.float8_e4m3fn)
    args = [a, np.zeros(8, np.float32), np.zeros(8, ml_dtypes.float8_e4m3fn), np.zeros(8, ml_dtypes.float8_e5m2)]
    _, b, c, d = run(air.parse(CASTS), args)
    sq = a.astype(np.float32) ** 2
    assert np.array_equal(b, a.astype(np.float32))
    assert np.array_equal(c.view(np.uint8), sq.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert np.array_equal(d.view(np.uint8), sq.astype(ml_dtypes.float8_e5m2).view(np.uint8))
    assert np.isnan(c[5].astype(np.float32)) and np.isinf(d[5].astype(np.float32))  # 448^2 overflows both
    assert c[4].view(np.uint8) == 0  # (-0)^2 = +0


def test_the_cuda_printer_converts_through_cuda_fp8_without_saturation():
    out = PassManager.parse("gpu-map").run(air.parse(CASTS))
    src = emit(out).source
    assert "#include <cuda_fp8.h>" in src and "const __nv_fp8_storage_t* __restrict__ A" in src
    assert "__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)" in src
    assert "__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)" in src
    assert "C[i] = air_to_f8E4M3FN(" in src and "float a = air_from_f8E4M3FN(A[i]);" in src
    try:
        from test_cuda_emit import assert_clean_compile
    except pytest.skip.Exception:  # no NVRTC here: the printed source is what is checked
        return
    assert_clean_compile(emit(out))


def test_the_cpu_backend_refuses_8_bit_floats_by_name():
    import runtime
    from runtime import CompileError

    with pytest.raises(CompileError, match=r"f8E4M3FN: 8-bit floats are not supported by the CPU backend"):
        runtime.compile(air.parse(CASTS), target="cpu")


@pytest.mark.parametrize("dtype,out_dtype", [("f8E4M3FN", "bf16"), ("f8E5M2", "f16"), ("f8E4M3FN", "f32")])
def test_scaled_matmul_matches_the_reference(dtype, out_dtype):
    m = L.scaled_matmul(6, 5, 16, dtype, out_dtype)
    args = library_inputs(m, 3)
    args[2][:], args[3][:] = 0.5, 3.0
    out = run(m, args)[-1]
    want = ref.scaled_matmul(*args[:4], out.dtype)
    assert np.array_equal(out.astype(np.float64), want.astype(np.float64))
    with pytest.raises(ValueError, match="out_dtype"):
        L.scaled_matmul(4, 4, 16, out_dtype="i8")
    with pytest.raises(ValueError):
        L.scaled_matmul(4, 4, 16, dtype="f16")


FP8_CASES = {
    "e4m3 128x64, k 256, bf16 out": (lambda: L.scaled_matmul(128, 64, 256), ""),
    "e5m2 70x40, k 208, f16 out (partial)": (lambda: L.scaled_matmul(70, 40, 208, "f8E5M2", "f16"), ""),
    "e4m3 split-k, f32 out": (lambda: L.scaled_matmul(64, 32, 512, out_dtype="f32"), "split-k=2"),
    "e4m3 two consumers, 4 stages": (lambda: L.scaled_matmul(128, 48, 640), "wgmma-tiles=128,48,2 stages=4"),
}


@pytest.mark.parametrize("name", list(FP8_CASES))
def test_scaled_matmul_on_warpgroup_mma_gives_the_original_bits(name):
    build, options = FP8_CASES[name]
    out, decision = check_same_bits(build(), options)
    assert "k step 128" in decision.message and "-> f32" in decision.message
    (mma,) = ops_of(out, WarpgroupMmaOp)
    assert mma.transpose_b and mma.descriptor_a.type.tensor.shape[1] == 128  # 128 one-byte elements a row


def test_the_kernel_prints_k32_e4m3_wgmma_and_compiles_for_sm_90a():
    out, _ = map_wgmma(L.scaled_matmul(256, 256, 512))
    p = emit(out, arch="sm_90a")
    src = p.source
    assert "wgmma.mma_async.sync.aligned.m64n" in src and "k32.f32.e4m3.e4m3" in src
    assert "p, 1, 1; }" in src  # no imm-trans operands for 8-bit inputs
    assert "air_wgmma_m64n" in src and "(v1.v, desc_a + 6, desc_b + 6);" in src  # 4 k32 steps of 32 bytes
    assert_nvrtc_compiles(src)


def test_what_cannot_take_8_bit_operands_says_so():
    # B given K x N: wgmma reads 8-bit operands K-major only -> SIMT, with both reasons
    text = str(L.scaled_matmul(64, 64, 128)).replace("memref<64x128xf8E4M3FN>, %scale_a",
                                                     "memref<128x64xf8E4M3FN>, %scale_a")
    text = text.replace("affine.load %B[%j_0, %k] : memref<64x128xf8E4M3FN>",
                        "affine.load %B[%k, %j_0] : memref<128x64xf8E4M3FN>")
    m = air.parse(text)
    _, decisions = map_wgmma(m)
    assert decisions[0].kind == "note" and "read K-major only" in decisions[0].message
    # without wgmma=true: no mma.sync kernel for 8-bit floats
    pm = PassManager.parse("canonicalize,affine-loop-fusion,affine-privatize{dynamic-shapes=false},"
                           "gpu-expose-parallelism,affine-scalrep,canonicalize,gpu-map-mma")
    pm.run(L.scaled_matmul(64, 64, 128))
    (d,) = [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]
    assert d.kind == "note" and "only through warpgroup MMA" in d.message
    # the op itself: a B not K-major is refused by the verifier
    out, _ = map_wgmma(L.scaled_matmul(64, 64, 128))
    bad = str(out).replace(" transposeB", "", 1)
    with pytest.raises(IRError, match="read K-major only"):
        air.parse(bad)


def test_the_whole_gpu_pipeline_maps_and_keeps_the_bits():
    from transforms.pipelines import gpu_pipeline

    m = L.scaled_matmul(96, 80, 256)
    pm = PassManager.parse(gpu_pipeline(wgmma=True))
    out = pm.run(m)
    assert any("warpgroup MMA" in d.message for d in pm.trace.decisions if d.kind == "applied")
    args = library_inputs(m, 0)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args)


@pytest.mark.gpu
def test_gpu_scaled_matmul_matches_torch_scaled_mm():
    torch = pytest.importorskip("torch")
    import runtime
    from transforms.pipelines import gpu_pipeline

    if not runtime.gpu_available() or not torch.cuda.is_available():
        pytest.skip("no usable GPU")
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("warpgroup MMA needs sm_90")
    m, n, k = 384, 512, 1024
    exe = runtime.compile(L.scaled_matmul(m, n, k), target="cuda", pipeline=gpu_pipeline(wgmma=True))
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = (torch.randn(m, k, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device="cuda", generator=gen) * 2).to(torch.float8_e4m3fn)
    sa, sb = torch.tensor([0.5], device="cuda"), torch.tensor([0.125], device="cuda")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    exe(a, b, sa, sb, c)
    want = torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True)
    exact = (a.double() @ b.double().t()) * (0.5 * 0.125)
    assert not c.isnan().any()
    # f8 products summed in f32 by the tensor cores; bf16 output: within a few bf16 ulps of the exact sum
    assert float((c.double() - exact).abs().max() / exact.abs().max()) < 1e-2
    assert float((c.double() - want.double()).abs().max() / exact.abs().max()) < 1e-2


BITS_AND_INTS = """func.func @f(%A: memref<4xf8E4M3FN>, %B: memref<4xi8>, %C: memref<4xf8E5M2>, %I: memref<4xi32>,
                 %D: memref<4xf8E4M3FN>) {
  affine.for %i = 0 to 4 {
    %a = affine.load %A[%i] : memref<4xf8E4M3FN>
    %b = arith.bitcast %a : f8E4M3FN to i8
    affine.store %b, %B[%i] : memref<4xi8>
    %c = arith.bitcast %b : i8 to f8E5M2
    affine.store %c, %C[%i] : memref<4xf8E5M2>
    %n = affine.load %I[%i] : memref<4xi32>
    %d = arith.sitofp %n : i32 to f8E4M3FN
    affine.store %d, %D[%i] : memref<4xf8E4M3FN>
  }
  return
}"""


def test_bitcasts_and_integer_conversions():
    a = np.array([1, -2, 0.5, 448], ml_dtypes.float8_e4m3fn)
    ints = np.array([17, -300, 464, 19], np.int32)
    args = [a, np.zeros(4, np.int8), np.zeros(4, ml_dtypes.float8_e5m2), ints, np.zeros(4, ml_dtypes.float8_e4m3fn)]
    _, b, c, _, d = run(air.parse(BITS_AND_INTS), args)
    assert np.array_equal(b, a.view(np.int8)) and np.array_equal(c.view(np.uint8)[:3], a.view(np.uint8)[:3])
    assert np.array_equal(d.astype(np.float32), [16, -288, 448, 20])  # ties to even; 464 -> 448
    src = emit(PassManager.parse("gpu-map").run(air.parse(BITS_AND_INTS))).source
    assert "float d = air_f64_to_f8E4M3FN((double)n);" in src and "(signed char)air_to_f8E4M3FN(a)" in src
