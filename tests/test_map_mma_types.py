"""``gpu-map-mma`` data types (issue 18): f32 through TF32 (``allow-tf32``, off by default), f16
accumulation (``accumulate-f16``) and int8 (``matmul(..., dtype="i8")``: i8 x i8 -> i32, exact).

On the interpreter's launch emulation (both thread orders): on integer-valued quarter data (exact in
TF32 and, for sums below 2048 units of 1/16, in f16) the mapped kernels give the nest's bits; on data
that TF32 or f16 sums must round they give the rounded result, not the nest's (the options really
change the arithmetic), within the tolerances of ``docs/tensor_cores.md``. NVRTC compiles the kernels
for sm_80 and sm_90a; the pipeline knobs (``gpu_pipeline(allow_tf32=..., accumulate_f16=...)``)
reach the pass and are off by default.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda_emit import nvrtc_compile
from test_map_mma import check_same_bits, map_mma, ops_of, prepared

import affine_ir as air
import runtime
from affine_ir.dialects.memref import LoadOp, StoreOp
from affine_ir.dialects.nvgpu import DeviceAsyncWaitOp, LdMatrixOp, MmaSyncOp
from affine_ir.interp.gpu import reversed_schedule
from affine_ir.testing import library_inputs, run
from affine_ir.types import f16, f32
from codegen.cuda import emit
from transforms import PassManager
from transforms.gpu.map_mma import swizzle
from transforms.pipelines import GPU_PIPELINE, gpu_pipeline

L = air.library
SMALL = "tile-sizes=32,32,16,2,2"
TF32 = SMALL + " allow-tf32=true"
F16ACC = SMALL + " accumulate-f16=true"


def both_orders(module, args) -> list:
    """The outputs of the mapped ``module`` in both thread orders (asserted equal), forward's."""
    got = run(module, args)
    with reversed_schedule():
        again = run(module, args)
    for x, y in zip(got, again):
        np.testing.assert_array_equal(x, y)
    return got


TF32_CASES = {
    "matmul B K x N (fragments read per element)": lambda: L.matmul(32, 40, 24, dtype="f32"),
    "matmul B K x N, N 22 (B gathered along k)": lambda: L.matmul(32, 22, 24, dtype="f32"),
    "matmul B transposed (both cp.async)": lambda: L.matmul(32, 32, 32, dtype="f32", transpose_b=True),
    "matmul A transposed, partial": lambda: L.matmul(20, 16, 40, dtype="f32", transpose_a=True),
    "batch matmul B transposed": lambda: L.batch_matmul(2, 16, 24, 16, dtype="f32", transpose_b=True),
    "conv NHWC pad 1": lambda: L.conv2d(1, 8, 5, 5, 16, 3, 3, padding=1, dtype="f32", layout="NHWC"),
    "conv NCHW stride 2": lambda: L.conv2d(1, 4, 7, 7, 8, 3, 3, stride=2, padding=1, dtype="f32"),
    "mlp gelu": lambda: L.mlp(32, 32, 16, dtype="f32"),
}


@pytest.mark.parametrize("name", list(TF32_CASES))
def test_tf32_contractions_give_the_original_bits_on_tf32_exact_data(name):
    out, decision = check_same_bits(TF32_CASES[name](), TF32)
    assert "m16n8k8 f32 as tf32 -> f32" in decision.message
    mma = ops_of(out, MmaSyncOp)
    assert mma and all(op.tf32_enabled for op in mma)
    assert not any(op.transpose for op in ops_of(out, LdMatrixOp))  # 32-bit: never ldmatrix.trans


@pytest.mark.parametrize("transpose_a", [False, True])
def test_tf32_operands_along_their_side_are_copied_in_chunks_and_read_per_element(transpose_a):
    """B given K x N (A given K x M): cp.async chunks like every other layout -- no gathered store --
    and each fragment element one ``memref.load`` of the shared ring (ldmatrix cannot transpose 32-bit
    elements); the 32x64 warp tiles of 4 k slices give the nest's bits in both thread orders."""
    make = lambda: L.matmul(64, 128, 64, dtype="f32", transpose_a=transpose_a)  # noqa: E731
    out, decision = check_same_bits(make(), "tile-sizes=64,128,32,2,2 allow-tf32=true")
    assert "B k-strided (fragments read per element), cp.async 16-byte chunks" in decision.message
    assert ("A k-strided (fragments read per element)" in decision.message) == transpose_a
    shared = [op for op in out.walk() if isinstance(op, (LoadOp, StoreOp)) and op.memref.type.memory_space]
    assert shared and all(isinstance(op, LoadOp) for op in shared)
    per_slice = 8 * 2 + (2 * 4 if transpose_a else 0)  # B: 8 fragments of 2 elements; A: 2 of 4
    assert len(shared) == per_slice * (1 + 4)  # the prologue's first slice, the k loop's 4 slices
    assert len(ops_of(out, LdMatrixOp)) == (0 if transpose_a else 2 * (1 + 4))


@pytest.mark.parametrize("dtype, options, peeled", [
    ("f16", "tile-sizes=32,32,32,2,2 stages=3", True),  # 2 k slices a step
    ("f32", "tile-sizes=32,32,32,2,2 stages=3 allow-tf32=true", False),  # 4 k slices a step
    ("f32", "tile-sizes=32,32,32,2,2 stages=4 allow-tf32=true", False),
])
def test_steps_of_four_slices_run_in_one_loop_and_shorter_ones_peel_the_tail(dtype, options, peeled):
    """K = 160 (5 steps of 32): f16 peels the last S-1 steps (waits S-3 .. 0 after the loop); TF32 runs
    all 5 steps in one loop whose step ahead wraps past the end, then retires its copies
    (numGroups 0); both give the nest's bits in both thread orders."""
    out, _ = check_same_bits(L.matmul(32, 32, 160, dtype=dtype), options)
    stages = int(options.split("stages=")[1].split()[0])
    loops = [op for op in out.walk() if isinstance(op, air.dialects.affine.AffineForOp)
             and op.induction_var.name_hint == "kstep"]
    assert len(loops) == 1
    assert loops[0].upper_bound_map.single_constant() == (5 - (stages - 1) if peeled else 5)
    inner = {id(op) for op in loops[0].walk()}
    after = [op.num_groups for op in ops_of(out, DeviceAsyncWaitOp) if id(op) not in inner][1:]  # past the prologue
    assert after == (list(range(stages - 3, -1, -1)) if peeled else [0])


def _element_banks(swz, chunks: int, k0: int, n0: int) -> set[int]:
    """The banks the 32 lanes of one 32-bit B fragment load hit in rows of ``chunks`` 16-byte chunks."""
    out = set()
    for lane in range(32):
        row, col = k0 + lane % 4, n0 + lane // 4
        out.add((row * chunks * 4 + (col ^ (swz.evaluate([row]) * 4))) % 32)
    return out


def test_the_swizzle_of_rings_read_per_element_is_conflict_free():
    """A 32-bit fragment load reads rows k0 + t + 4r (t = lane mod 4) at columns n0 + g (g = lane / 4,
    n0 a multiple of 8): with the spread swizzle its 32 lanes hit 32 distinct banks for rows of 32 to
    256 floats; the plain swizzle gives 2-way conflicts. Each row's chunks are still permuted."""
    d0 = air.AffineExpr.dim(0)
    for chunks in (8, 16, 32, 64):
        spread, plain = swizzle(d0, chunks, 2), swizzle(d0, chunks)
        for k0 in range(0, 32, 4):
            for n0 in range(0, chunks * 4, 8):
                assert len(_element_banks(spread, chunks, k0, n0)) == 32, (chunks, k0, n0)
                assert len(_element_banks(plain, chunks, k0, n0)) == 16, (chunks, k0, n0)
        for row in range(32):
            x = spread.evaluate([row])
            assert sorted(c ^ x for c in range(chunks)) == list(range(chunks))


def test_tf32_rounds_the_inputs_and_stays_within_the_documented_tolerance():
    """1 + 2**-12 is 1 in TF32 (10-bit mantissa): the mapped sum of K such products is K, the nest's
    K * (1 + 2**-12). On random data the error stays below 2**-10 * sum |a||b| (plus f32 sums)."""
    m, n, k = 16, 16, 64
    mod = L.matmul(m, n, k, dtype="f32", transpose_b=True)
    out, _ = map_mma(prepared(mod), TF32)
    a = np.full((m, k), 1 + 2.0 ** -12, np.float32)
    b = np.ones((n, k), np.float32)
    c = np.zeros((m, n), np.float32)
    assert np.all(run(mod, [a, b, c])[-1] == np.float32(k * (1 + 2.0 ** -12)))
    assert np.all(both_orders(out, [a, b, c])[-1] == k)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
    got = both_orders(out, [a, b, c])[-1].astype(np.float64)
    exact = a.astype(np.float64) @ b.astype(np.float64).T
    bound = 2.0 ** -10 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64).T) + 1e-5
    assert np.all(np.abs(got - exact) <= bound)
    assert np.abs(got - exact).max() > 1e-6  # the inputs really were rounded


@pytest.mark.parametrize("name", ["matmul", "matmul A transposed partial", "conv NHWC", "mlp relu"])
def test_f16_accumulation_gives_the_original_bits_on_small_sums(name):
    make = {"matmul": lambda: L.matmul(32, 32, 48, dtype="f16"),
            "matmul A transposed partial": lambda: L.matmul(24, 40, 32, dtype="f16", transpose_a=True),
            "conv NHWC": lambda: L.conv2d(1, 8, 5, 5, 16, 3, 3, padding=1, dtype="f16", layout="NHWC"),
            "mlp relu": lambda: L.mlp(32, 32, 32, dtype="f16", activation="relu")}[name]
    out, decision = check_same_bits(make(), F16ACC)
    assert "m16n8k16 f16 -> f16" in decision.message
    assert all(op.result.type.element_type == f16 for op in ops_of(out, MmaSyncOp))


def test_f16_accumulation_rounds_each_mma_sum_to_f16():
    """Each mma.sync rounds its sum to f16 (spacing 2 above 2048): 2048 + 1 + 1 over two k16 steps
    stays 2048 with f16 sums, 2050 (exact in the f16 output) with f32 sums."""
    mod = L.matmul(16, 8, 32, dtype="f16")
    out, _ = map_mma(prepared(mod), F16ACC)
    f32_out, _ = map_mma(prepared(mod), SMALL)
    a = np.ones((16, 32), np.float16)
    b = np.zeros((32, 8), np.float16)
    b[0], b[1], b[16] = 2048, 1, 1
    c = np.zeros((16, 8), np.float16)
    assert np.all(run(mod, [a, b, c])[-1] == 2050)
    assert np.all(both_orders(f32_out, [a, b, c])[-1] == 2050)
    assert np.all(both_orders(out, [a, b, c])[-1] == 2048)


def test_options_that_do_not_apply_are_noted_and_f32_stays_refused_by_default():
    out, decision = check_same_bits(L.matmul(32, 32, 32, dtype="bf16"), F16ACC)
    assert "bf16 -> f32" in decision.message and "accumulate-f16 does not apply to bf16" in decision.message
    before = prepared(L.matmul(32, 32, 32, dtype="f32"))
    out, decisions = map_mma(before, SMALL)
    assert str(out) == str(before) and "allow-tf32 is off" in decisions[0].message


def test_the_pipeline_knobs_reach_the_pass_and_are_off_by_default():
    assert "allow-tf32" not in GPU_PIPELINE and "accumulate-f16" not in GPU_PIPELINE
    m = L.matmul(64, 64, 64, dtype="f32")
    for pipeline, mapped in ((GPU_PIPELINE, False), (gpu_pipeline(allow_tf32=True), True)):
        out = PassManager.parse(pipeline).run(m)
        assert bool(ops_of(out, MmaSyncOp)) == mapped
    out = PassManager.parse(gpu_pipeline(accumulate_f16=True)).run(L.matmul(64, 64, 64, dtype="f16"))
    assert {op.result.type.element_type for op in ops_of(out, MmaSyncOp)} == {f16}
    args = library_inputs(m)
    np.testing.assert_array_equal(run(m, args)[-1], run(PassManager.parse(gpu_pipeline(allow_tf32=True)).run(m),
                                                         args)[-1])


def test_runtime_compile_with_the_tf32_pipeline_prints_tf32_mma():
    k = runtime.compile(L.matmul(64, 64, 64, dtype="f32"), target="cuda", arch="sm_90",
                        pipeline=gpu_pipeline(allow_tf32=True))
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in k.source and "cvt.rna.tf32.f32" in k.source
    plain = runtime.compile(L.matmul(64, 64, 64, dtype="f32"), target="cuda", arch="sm_90")
    assert "mma.sync" not in plain.source


COMPILED = {
    "tf32 matmul 256 B transposed": (lambda: L.matmul(256, 256, 256, dtype="f32", transpose_b=True), "allow-tf32=true"),
    "tf32 matmul 128x96 k 72 (B per element)": (lambda: L.matmul(128, 96, 72, dtype="f32"), "allow-tf32=true"),
    "tf32 matmul 256 A transposed (A per element)": (lambda: L.matmul(256, 256, 256, dtype="f32", transpose_a=True),
                                                     "allow-tf32=true"),
    "tf32 conv NHWC": (lambda: L.conv2d(1, 64, 28, 28, 64, 3, 3, padding=1, dtype="f32", layout="NHWC"),
                       "allow-tf32=true"),
    "f16-accumulated matmul 256": (lambda: L.matmul(256, 256, 256, dtype="f16"), "accumulate-f16=true"),
    "f16-accumulated mlp partial": (lambda: L.mlp(100, 72, 40, dtype="f16"), "accumulate-f16=true"),
}


@pytest.mark.parametrize("name", list(COMPILED))
def test_nvrtc_compiles_the_tf32_and_f16_accumulating_kernels(name):
    make, options = COMPILED[name]
    out, decisions = map_mma(prepared(make()), options)
    assert [d.kind for d in decisions] == ["applied"], [str(d) for d in decisions]
    out = PassManager.parse("gpu-map,canonicalize,cse").run(out)
    src = emit(out).source
    want = ".f32.tf32.tf32.f32" if "tf32" in options else ".f16.f16.f16.f16"
    assert "mma.sync.aligned.m16n8k" + ("8" if "tf32" in options else "16") + ".row.col" + want in src
    for arch in ("sm_80", "sm_90a"):
        cubin, log = nvrtc_compile(src, arch)
        assert cubin and log == "", f"{arch}: {log}"


def test_the_default_accumulators_are_f32():
    out, decision = check_same_bits(L.matmul(16, 16, 16, dtype="f16"), "tile-sizes=16,16,16,1,2")
    assert {op.result.type.element_type for op in ops_of(out, MmaSyncOp)} == {f32}


# -- int8: i8 x i8 -> i32 on mma.sync m16n8k32, exact -------------------------------------------------------------
def int8_inputs(module, seed: int = 0) -> list:
    """Full-range i8 operands (and i32 outputs/initial values): the i32 sums are exact."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, a.type.shape).astype(np.int8 if a.type.element_type.width == 8 else np.int32)
            for a in module.functions[0].args]


def test_the_library_builds_int8_matmuls_with_i32_outputs():
    m = L.matmul(5, 6, 7, dtype="i8", transpose_b=True)
    assert [str(a.type) for a in m.functions[0].args] == ["memref<5x7xi8>", "memref<6x7xi8>", "memref<5x6xi32>"]
    a, b, c = int8_inputs(m)
    got = run(m, [a, b, c])[-1]
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)
    acc = run(L.batch_matmul(2, 3, 4, 5, dtype="i8", accumulate=True), int8_inputs(L.batch_matmul(2, 3, 4, 5,
                                                                                                  dtype="i8")))
    assert acc[-1].dtype == np.int32
    with pytest.raises(ValueError, match="dtype must be one of"):
        L.softmax((4, 4), dtype="i8")  # only the matmuls take integers


INT8_CASES = {
    "matmul (B gathered: N not a multiple of 16)": (lambda: L.matmul(32, 40, 64, dtype="i8"), "32,32,32,2,2"),
    "matmul B transposed, partial k": (lambda: L.matmul(20, 24, 48, dtype="i8", transpose_b=True), "32,32,32,2,2"),
    "batch matmul A transposed, accumulate": (lambda: L.batch_matmul(2, 16, 16, 40, dtype="i8", transpose_a=True,
                                                                     accumulate=True), "16,16,32,1,2"),
}


@pytest.mark.parametrize("name", list(INT8_CASES))
def test_int8_contractions_are_exact_in_both_thread_orders(name):
    make, tiles = INT8_CASES[name]
    m = make()
    out, decisions = map_mma(prepared(m), f"tile-sizes={tiles}")
    assert [d.kind for d in decisions] == ["applied"] and "m16n8k32 i8 -> i32" in decisions[0].message
    args = int8_inputs(m)
    want = run(m, args)[-1]
    assert np.abs(want).max() > 2 ** 14  # full-range products, not small sums
    np.testing.assert_array_equal(both_orders(out, args)[-1], want)
    assert not any(op.transpose for op in ops_of(out, LdMatrixOp))


def test_int8_tiles_need_a_k_step_of_32():
    before = prepared(L.matmul(32, 32, 64, dtype="i8"))
    out, decisions = map_mma(before, SMALL)
    assert str(out) == str(before) and "not a multiple of the fragment's k 32" in decisions[0].message


def test_nvrtc_compiles_the_int8_kernel():
    out, decisions = map_mma(prepared(L.matmul(256, 256, 256, dtype="i8", transpose_b=True)), "")
    assert [d.kind for d in decisions] == ["applied"]
    src = emit(PassManager.parse("gpu-map,canonicalize,cse").run(out)).source
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in src and "cp.async.cg" in src
    for arch in ("sm_80", "sm_90a"):
        cubin, log = nvrtc_compile(src, arch)
        assert cubin and log == "", f"{arch}: {log}"
