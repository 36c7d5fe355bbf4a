"""``gpu-schedule``: contractions as shared-memory tiled kernels with register tiles.

On the interpreter's emulation of ``gpu.launch`` (every block and thread, barriers by phases),
in both thread orders, the kernels compute exactly what the original nests compute (each sum
keeps its order over ``k``); NVRTC compiles them with an empty log. With a GPU (``gpu``
marker) they run against the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
import runtime
from affine_ir.interp.gpu import reversed_schedule
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from analysis.targets import target
from transforms import PassManager, PipelineError
from transforms.gpu.schedule_gpu import TileConfig, choose_schedule, plan_contraction
from transforms.pipelines import gpu_pipeline

GPU = runtime.gpu_available()
L = air.library


def pipeline(options: str = "") -> str:
    return f"canonicalize,affine-loop-fusion,affine-scalrep,canonicalize,gpu-schedule{options},gpu-map,canonicalize,cse"


TRANSPOSED = """
func.func @mmT(%A: memref<16x64xf32>, %B: memref<32x16xf32>, %C: memref<64x32xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %r = affine.for %k = 0 to 16 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%k, %i] : memref<16x64xf32>
        %b = affine.load %B[%j, %k] : memref<32x16xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<64x32xf32>
    }
  }
  return
}
"""

PRE_POST = """
func.func @f(%A: memref<64x16xf32>, %B: memref<16x64xf32>, %S: memref<64xf32>, %C: memref<64x64xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      %s = affine.load %S[%j] : memref<64xf32>
      %r = affine.for %k = 0 to 16 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<64x16xf32>
        %b = affine.load %B[%k, %j] : memref<16x64xf32>
        %p = arith.mulf %a, %b : f32
        %q = arith.mulf %p, %s : f32
        %s2 = arith.addf %acc, %q : f32
        affine.yield %s2 : f32
      }
      %o = arith.mulf %r, %s : f32
      affine.store %o, %C[%i, %j] : memref<64x64xf32>
    }
  }
  return
}
"""


def contraction_text(m: int, n: int, k: int, *, init: str = "zero", direct: bool = False,
                     j_bounds: str = "0 to N", epilogue: bool = False) -> str:
    """``C[i, j] = (init) + sum_k A[i, k] * B[k, j] (* D[i, j])`` over ``i < m`` and ``j`` in
    ``j_bounds`` (``N`` the constant n; ``%i`` may appear: a triangular band). ``init``: "zero",
    "load" (``C[i, j]``) or "scaled" (``C[i, j] * 2``: PolyBench's ``beta * C``)."""
    first = {"zero": "%c0 = arith.constant 0.0 : f32",
             "load": "%c0 = affine.load %C[%i, %j] : memref<MxNxf32>",
             "scaled": "%c = affine.load %C[%i, %j] : memref<MxNxf32>\n      %c0 = arith.mulf %c, %two : f32"}[init]
    read = ("%d = affine.load %D[%i, %j] : memref<MxNxf32>\n        %q = arith.mulf %p, %d : f32" if direct
            else "%q = arith.mulf %p, %two : f32")
    out = "%o = arith.mulf %r, %two : f32" if epilogue else "%o = arith.addf %r, %zero : f32"
    bounds = j_bounds.replace("N", str(n))
    text = f"""
func.func @contraction(%A: memref<MxKxf32>, %B: memref<KxNxf32>, %D: memref<MxNxf32>, %C: memref<MxNxf32>) {{
  %two = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to M {{
    affine.for %j = {bounds} {{
      {first}
      %r = affine.for %k = 0 to K iter_args(%acc = %c0) -> (f32) {{
        %a = affine.load %A[%i, %k] : memref<MxKxf32>
        %b = affine.load %B[%k, %j] : memref<KxNxf32>
        %p = arith.mulf %a, %b : f32
        {read}
        %s = arith.addf %acc, %q : f32
        affine.yield %s : f32
      }}
      {out}
      affine.store %o, %C[%i, %j] : memref<MxNxf32>
    }}
  }}
  return
}}
"""
    return text.replace("MxKx", f"{m}x{k}x").replace("KxNx", f"{k}x{n}x").replace("MxNx", f"{m}x{n}x") \
        .replace("to M ", f"to {m} ").replace("to K ", f"to {k} ")


#: syrk's band (``for i { for j <= i }``), C = 2 * C + A @ B on the lower triangle.
SYRK_LIKE = contraction_text(37, 37, 19, init="scaled", j_bounds="0 to affine_map<(d0) -> (d0 + 1)>(%i)")
#: correlation's band (``for i < N - 1 { for j = i + 1 to N }``): j starts at 1.
UPPER_LIKE = contraction_text(36, 37, 19, init="load", j_bounds="affine_map<(d0) -> (d0 + 1)>(%i) to N")

CASES = {
    "matmul": (lambda: L.matmul(64, 64, 16), ""),
    "matmul_k24": (lambda: L.matmul(128, 64, 24), ""),
    "matmul_one_step": (lambda: L.matmul(32, 32, 8), ""),
    "batch_matmul": (lambda: L.batch_matmul(2, 32, 64, 16), ""),
    "mlp_gelu": (lambda: L.mlp(64, 32, 16, activation="gelu"), ""),
    "matmul_bf16": (lambda: L.matmul(32, 32, 16, dtype="bf16"), ""),
    "matmul_f16": (lambda: L.matmul(32, 64, 16, dtype="f16"), ""),
    "transposed_operands": (lambda: air.parse(TRANSPOSED), ""),
    "register_tile_8x8": (lambda: L.matmul(64, 64, 24), "{tile-sizes=64,64,8,8,8}"),
    "register_tile_8x8_no_prefetch": (lambda: L.matmul(64, 64, 24), "{tile-sizes=64,64,8,8,8 prefetch=false}"),
    "block_128x128": (lambda: L.matmul(128, 128, 16), "{tile-sizes=128,128,8,8,8}"),
    "block_128x64": (lambda: L.matmul(128, 64, 16), "{tile-sizes=128,64,8,8,4}"),
    "block_128x128_k16": (lambda: L.matmul(128, 128, 40), "{tile-sizes=128,128,16,8,8}"),
    "block_128x64_k16_partial_conv": (lambda: L.conv2d(1, 3, 9, 9, 20, 3, 3, padding=1), "{tile-sizes=128,64,16,8,4}"),
    "partial_tiles": (lambda: L.matmul(37, 50, 19), ""),
    "partial_tiles_no_prefetch": (lambda: L.matmul(37, 50, 19), "{prefetch=false}"),
    "partial_mlp": (lambda: L.mlp(33, 20, 9, activation="gelu"), ""),
    "partial_bf16": (lambda: L.matmul(17, 24, 32, dtype="bf16"), ""),
    "partial_8x8": (lambda: L.matmul(70, 66, 21), "{tile-sizes=64,64,8,8,8}"),
    "partial_8x8_no_prefetch": (lambda: L.matmul(70, 66, 21), "{tile-sizes=64,64,8,8,8 prefetch=false}"),
    "partial_batch": (lambda: L.batch_matmul(2, 9, 10, 11), ""),
    "value_before_the_reduction_used_in_and_after_it": (lambda: air.parse(PRE_POST), ""),
    # convolutions as implicit GEMMs: rows/columns/k delinearized, zero-padded windows packed on the fly
    "conv_nchw_padded": (lambda: L.conv2d(1, 4, 6, 6, 8, 3, 3, padding=1), ""),
    "conv_nchw_batch_stride": (lambda: L.conv2d(2, 3, 9, 9, 16, 3, 3, stride=2, padding=1), ""),
    "conv_nchw_no_prefetch": (lambda: L.conv2d(2, 3, 9, 9, 16, 3, 3, stride=2, padding=1), "{prefetch=false}"),
    "conv_nhwc_padded": (lambda: L.conv2d(2, 4, 6, 6, 8, 3, 3, padding=1, layout="NHWC"), ""),
    "conv_1x1_exact_tiles": (lambda: L.conv2d(1, 16, 8, 8, 32, 1, 1), ""),
    "conv_1x1_nhwc_vector_copies": (lambda: L.conv2d(1, 8, 8, 8, 32, 1, 1, layout="NHWC"), ""),
    "conv_dilated_asymmetric": (lambda: L.conv2d(1, 2, 7, 9, 8, 3, 2, padding=(2, 1), dilation=2), ""),
    "conv_bias_relu": (lambda: L.conv2d_bias_relu(1, 3, 8, 8, 16, 3, 3, padding=1), ""),
    "conv_8x8_register_tile": (lambda: L.conv2d(1, 4, 8, 8, 64, 3, 3, padding=1), "{tile-sizes=64,64,8,8,8}"),
    # split-K: slices of k in separate blocks, their sums added by a point-wise nest after the launch
    "split_k_matmul": (lambda: L.matmul(32, 32, 128), "{split-k=4}"),
    "split_k_no_prefetch": (lambda: L.matmul(32, 32, 128), "{split-k=4 prefetch=false}"),
    "split_k_conv": (lambda: L.conv2d(1, 8, 6, 6, 8, 3, 3, padding=1), "{split-k=3}"),
    "split_k_partial_mlp": (lambda: L.mlp(33, 20, 32, activation="gelu"), "{split-k=2}"),
    "split_k_batch": (lambda: L.batch_matmul(2, 9, 10, 32), "{split-k=2}"),
    "split_k_value_before_the_reduction": (lambda: air.parse(PRE_POST), "{split-k=2}"),
    # partial tiles whose initial values and per-element reads access memory: guarded per element
    "partial_initial_value_from_memory": (lambda: air.parse(contraction_text(37, 50, 19, init="scaled")), ""),
    "partial_direct_read_8x8": (lambda: air.parse(contraction_text(70, 66, 21, init="load", direct=True)),
                                "{tile-sizes=64,64,8,8,8}"),
    # triangular bands: the bounding box tiled, each element's work guarded by the loops' bounds
    "triangular_syrk": (lambda: air.parse(SYRK_LIKE), ""),
    "triangular_syrk_8x8": (lambda: air.parse(SYRK_LIKE), "{tile-sizes=64,64,8,8,8}"),
    "triangular_upper_from_1": (lambda: air.parse(UPPER_LIKE), "{prefetch=false}"),
    "triangular_split_k": (lambda: air.parse(contraction_text(30, 30, 32, init="load", epilogue=True,
                                                              j_bounds="%i to N")), "{split-k=2}"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_computes_what_the_nest_computes(name):
    build, options = CASES[name]
    m = build()
    pm = PassManager.parse(pipeline(options))
    out = pm.run(m)
    applied = [d for d in pm.trace.decisions if d.pass_name == "gpu-schedule" and d.kind == "applied"]
    assert len(applied) == 1, pm.trace.decisions
    assert "workgroup" in str(out) and "gpu.barrier" in str(out)
    for seed in range(2):
        args = library_inputs(m, seed)
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_compiles_with_nvrtc(name):
    build, options = CASES[name]
    k = runtime.compile(build(), target="cuda", arch="sm_90", pipeline=pipeline(options))
    assert not k.image.log.strip(), k.image.log
    assert "__shared__" in k.source and "__syncthreads();" in k.source


def test_large_matmul_uses_16_byte_copies_and_padded_transposed_tiles():
    k = runtime.compile(L.matmul(4096, 4096, 4096), target="cuda", arch="sm_90")
    decisions = [d.message for d in k.trace.decisions if d.pass_name == "gpu-schedule"]
    assert decisions == ["contraction (4096x4096, k 4096) of (%i, %j) over (%k): block tile 128x128, k step 16, "
                         "register tile 8x8, 16x16 threads, 2 operand(s) packed in shared memory"]
    assert "__shared__ __align__(16) float A_shared[2112];" in k.source  # 16 x (128 + 4)
    assert "reinterpret_cast<const air_v4f32*>(&B[" in k.source  # B copied by 16-byte loads


MAX_PLUS = """
func.func @f(%A: memref<32x64xf32>, %B: memref<64x32xf32>, %C: memref<32x32xf32>) {
  %z = arith.constant -1.0e30 : f32
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      %r = affine.for %k = 0 to 64 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<32x64xf32>
        %b = affine.load %B[%k, %j] : memref<64x32xf32>
        %p = arith.addf %a, %b : f32
        %s = arith.maximumf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<32x32xf32>
    }
  }
  return
}
"""


def test_split_k_splits_sums_only():
    for options in ("{split-k=2}", ""):
        m = air.parse(MAX_PLUS)
        pm = PassManager.parse(pipeline(options))
        out = pm.run(m)
        notes = [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
        assert any("contraction" in n and "split" not in n for n in notes), notes
        if options:
            assert "split-k=2 not used: the reduction (%k) is not a sum of terms" in notes
        assert "partial_sums" not in str(out)
        args = library_inputs(m, 0)
        assert all(np.array_equal(w, g) for w, g in zip(run(m, args), run(out, args)))
    m = L.matmul(32, 32, 128)
    out = PassManager.parse(pipeline("{split-k=4}")).run(m)
    text = str(out)
    assert text.count("gpu.launch") == 2 and "memref<4x32x32xf32>" in text and "memref.dealloc %partial_sums" in text


def test_tiles_and_splits_follow_the_cost_model():
    h200 = target("h200")
    big = TileConfig(128, 128, 16, 8, 8)
    assert choose_schedule((1, 4096, 4096, 4096), h200) == (big, 1)  # 1024 blocks fill the GPU
    assert choose_schedule((1, 8192, 8192, 8192), h200) == (big, 1)
    tiles, splits = choose_schedule((1, 1024, 1024, 1024), h200)  # 64 big blocks: k split to fill 132 SMs
    assert tiles == big and splits > 1
    tiles, splits = choose_schedule((1, 512, 49, 4608), h200)  # conv 7x7x512 at batch 1: few columns, long k
    assert splits >= 16 and tiles.BN <= 64
    assert choose_schedule((1, 32, 32, 8), h200) == (TileConfig(32, 32, 8, 2, 2), 1)  # too small to split
    assert choose_schedule((1, 512, 49, 4608), h200, split=False)[1] == 1


@pytest.mark.parametrize("text, reason", [
    ("func.func @f(%A: memref<8x8xf32>) {\n affine.for %i = 0 to 8 {\n affine.for %j = 0 to 8 {\n"
     " %x = affine.load %A[%i, %j] : memref<8x8xf32>\n affine.store %x, %A[%j, %i] : memref<8x8xf32>\n }\n }\n"
     " return\n}", "is not parallel"),
    ("func.func @f(%A: memref<8xf32>) {\n affine.for %i = 0 to 8 {\n %c = arith.constant 1.0 : f32\n"
     " affine.store %c, %A[%i] : memref<8xf32>\n }\n return\n}", "a band of 2 to 6 parallel loops"),
])
def test_other_nests_are_left_for_gpu_map(text, reason):
    m = air.parse(text)
    nest = [op for op in m.functions[0].body.ops if op.name == "affine.for"][0]
    assert reason in plan_contraction(nest)
    pm = PassManager.parse(pipeline())
    out = pm.run(m)
    notes = [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
    assert notes and notes[0].startswith("left for gpu-map:"), notes
    assert "gpu.launch" in str(out)


ACCUMULATE = """
func.func @acc(%A: memref<37x19xf32>, %B: memref<19x50xf32>, %C: memref<37x50xf32>) {
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 50 {
      %c = affine.load %C[%i, %j] : memref<37x50xf32>
      %r = affine.for %k = 0 to 19 iter_args(%acc = %c) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<37x19xf32>
        %b = affine.load %B[%k, %j] : memref<19x50xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<37x50xf32>
    }
  }
  return
}
"""


ROW_COLUMN_READ = """
func.func @scaled(%A: memref<37x19xf32>, %B: memref<19x50xf32>, %D: memref<37x50xf32>, %C: memref<37x50xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 37 {
    affine.for %j = 0 to 50 {
      %r = affine.for %k = 0 to 19 iter_args(%acc = %z) -> (f32) {
        %a = affine.load %A[%i, %k] : memref<37x19xf32>
        %b = affine.load %B[%k, %j] : memref<19x50xf32>
        %d = affine.load %D[%i, %j] : memref<37x50xf32>
        %p = arith.mulf %a, %b : f32
        %q = arith.mulf %p, %d : f32
        %s = arith.addf %acc, %q : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<37x50xf32>
    }
  }
  return
}
"""


def test_partial_tiles_guard_the_reads_of_the_reduction_by_row_and_column():
    """A load of the reduction read per element (here D[i, j]) would run past the sizes in a
    partial tile (out of bounds, found by fresh random programs on the interpreter): it runs
    inside an ``affine.if`` on the element lying inside the sizes."""
    m = air.parse(ROW_COLUMN_READ)
    pm = PassManager.parse(pipeline())
    out = pm.run(m)
    decisions = [d for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
    assert [d.kind for d in decisions] == ["applied"], decisions
    assert "contraction (37x50, k 19)" in decisions[0].message and "workgroup" in str(out)
    args = library_inputs(m)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args, "row/column read")


def test_divisible_tiles_read_by_row_and_column_directly():
    m = air.parse(ROW_COLUMN_READ.replace("37", "64").replace("50", "64").replace("19", "16"))
    pm = PassManager.parse(pipeline())
    out = pm.run(m)
    assert [d.kind for d in pm.trace.decisions if d.pass_name == "gpu-schedule"] == ["applied"]
    args = library_inputs(m)
    want = run(m, args)
    with reversed_schedule():
        got = run(out, args)
    assert all(np.array_equal(w, g) for w, g in zip(want, got))


def test_register_tiles_that_are_not_whole_runs_of_four_are_refused():
    pm = PassManager.parse(pipeline("{tile-sizes=48,48,8,6,6}"))
    out = pm.run(L.matmul(48, 48, 16))
    notes = [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
    assert notes == ["left for gpu-map: tile-sizes=48,48,8,6,6 give no valid block (whole copies per thread, TM/TN "
                     "multiples of 4 or below it, at most 1024 threads)"], notes
    assert "workgroup" not in str(out)


def test_partial_tiles_compute_initial_values_from_memory_only_inside_the_sizes():
    """``C[i, j]`` as the sum's initial value: loaded inside an ``affine.if`` on the element lying
    inside the sizes (the else branch yields 0, never stored), so partial tiles are scheduled."""
    m = air.parse(ACCUMULATE)
    pm = PassManager.parse(pipeline())
    out = pm.run(m)
    decisions = [d for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
    assert [d.kind for d in decisions] == ["applied"], decisions
    text = str(out)
    assert "workgroup" in text and "-> f32" in text.split("gpu.barrier")[0].split("affine.if")[1]
    for seed in range(2):
        args = library_inputs(m, seed)
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, "accumulate")


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_on_the_gpu_matches_the_interpreter(name):
    build, options = CASES[name]
    m = build()
    k = runtime.compile(m, target="cuda", pipeline=pipeline(options), fast_math=False)  # erf in double
    args = library_inputs(m, 3)
    want = run(m, args)
    got = [a.copy() for a in args]
    k(*got)
    for w, g in zip(want, got):  # exact: quarter-integer data, so fused multiply-adds round the same
        assert np.array_equal(w.astype(np.float64), g.astype(np.float64)), name


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
def test_bound_call_launches_the_same_kernels():
    m = L.mlp(64, 64, 32, activation="gelu")
    k = runtime.compile(m, target="cuda")
    args = library_inputs(m, 5)
    want = run(m, args)
    got = [a.copy() for a in args]
    with k.bind(*got) as call:  # numpy arguments: copied in now, back on close
        assert len(call.launches) == 1
        call()
        call()  # the same kernels again: the MLP does not read its output
    np.testing.assert_allclose(got[-1].astype(np.float64), want[-1].astype(np.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
def test_bound_call_keeps_its_temporaries_until_closed():
    m = L.attention(1, 2, 16, 8)  # unfused, the host function allocates and deallocates temporaries
    k = runtime.compile(m, target="cuda", pipeline=gpu_pipeline(fuse=False))
    assert any(op.name == "memref.dealloc" for op in k.function.body.ops)
    args = library_inputs(m, 2)
    want = run(m, args)
    got = [a.copy() for a in args]
    call = k.bind(*got)
    assert call.temporaries  # not freed by the recorded deallocs
    call()
    call()
    call.close()
    with pytest.raises(runtime.LaunchError, match="closed"):
        call()
    np.testing.assert_allclose(got[-1].astype(np.float64), want[-1].astype(np.float64), rtol=1e-5, atol=1e-6)


GUARDED = """
func.func @f(%A: memref<20x48xf32>, %B: memref<48x18xf32>, %S: memref<18xf32>, %C: memref<20x18xf32>) {
  %cst = arith.constant 0.5 : f32
  affine.for %i = 0 to 20 {
    affine.for %j = 0 to 18 {
      %s = affine.load %S[%j] : memref<18xf32>
      %0 = affine.for %k = 0 to 48 iter_args(%acc = %cst) -> (f32) {
        %g = affine.if affine_set<(d0, d1) : (d0 - d1 - 1 >= 0)>(%k, %i) -> f32 {
          %1 = affine.load %A[%i, %k] : memref<20x48xf32>
          affine.yield %1 : f32
        } else {
          affine.yield ELSE : f32
        }
        %2 = affine.load %B[%k, %j] : memref<48x18xf32>
        %3 = arith.mulf %g, %2 : f32
        %4 = arith.addf %acc, %3 : f32
        affine.yield %4 : f32
      }
      affine.store %0, %C[%i, %j] : memref<20x18xf32>
    }
  }
  return
}
"""


@pytest.mark.parametrize("other, scheduled", [("%cst", True), ("%acc", False), ("%s", False)])
def test_guarded_reads_using_values_of_the_nest_are_not_packed(other, scheduled):
    """A guarded read is packed only when its branches use nothing computed in the nest but
    induction variables (review finding: an else-branch yielding the running sum or a value
    computed before the reduction made the pass fail)."""
    m = air.parse(GUARDED.replace("ELSE", other))
    pm = PassManager.parse(pipeline("{tile-sizes=32,32,8,2,2}"))
    out = pm.run(m)
    notes = [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
    assert any("contraction" in n for n in notes) == scheduled, notes
    if not scheduled:
        assert any("uses a value computed in the nest" in n for n in notes), notes
    args = library_inputs(m, 0)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args, other)


def test_no_vector_copies_through_a_floordiv_of_the_column():
    """16-byte copies need the column to move the address by exactly 1 (review finding:
    ``B[k, j + j floordiv 2]`` was copied as 4 consecutive elements)."""
    m = air.parse("""
    func.func @f(%A: memref<8x16xf32>, %B: memref<16x100xf32>, %C: memref<8x64xf32>) {
      %z = arith.constant 0.0 : f32
      affine.for %i = 0 to 8 {
        affine.for %j = 0 to 64 {
          %r = affine.for %k = 0 to 16 iter_args(%acc = %z) -> (f32) {
            %a = affine.load %A[%i, %k] : memref<8x16xf32>
            %b = affine.load %B[%k, %j + %j floordiv 2] : memref<16x100xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %acc, %p : f32
            affine.yield %s : f32
          }
          affine.store %r, %C[%i, %j] : memref<8x64xf32>
        }
      }
      return
    }""")
    out = PassManager.parse(pipeline("{tile-sizes=128,64,16,8,4 split-k=1}")).run(m)
    assert "affine.vector_load %B" not in str(out)
    args = library_inputs(m, 0)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args)


@pytest.mark.parametrize("sizes", ["0,32,8,2,2", "32,32,0,2,2", "32,32,8,0,2", "-32,32,8,2,2"])
def test_tile_sizes_must_be_positive(sizes):
    with pytest.raises(PipelineError, match="tile-sizes must be positive"):
        PassManager.parse(f"gpu-schedule{{tile-sizes={sizes}}}")


def test_forced_tiles_must_fit_in_shared_memory():
    m = L.matmul(64, 64, 64)
    pm = PassManager.parse(pipeline("{tile-sizes=1024,1024,64,32,32}"))
    out = pm.run(m)
    notes = [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
    assert any("bytes of shared memory" in n and "h200 has 232448 per block" in n for n in notes), notes
    assert "workgroup" not in str(out)  # mapped by gpu-map instead


def test_reductions_holding_other_accesses_are_left_for_gpu_map():
    """The reduction body may hold affine loads and ops without memory effects only (asked of the
    ops' effects, not their names): a vector load is another access."""
    op = "%v = affine.vector_load %B[%k, 0] : memref<19x50xf32>, vector<4xf32>"
    m = air.parse(ACCUMULATE.replace("        %p = arith.mulf", f"        {op}\n        %p = arith.mulf"))
    nest = m.functions[0].body.ops[0]
    assert plan_contraction(nest) == "the reduction (%k) holds 'affine.vector_load' (only affine loads and arithmetic)"


@st.composite
def contractions(draw):
    """(module text, gpu-schedule options, triangular?) of :func:`contraction_text` with sizes no
    tile needs to divide, an initial value that is 0, loaded or computed from memory, maybe a
    read by row and column in the reduction, and a rectangular or triangular band."""
    m, n, k = draw(st.integers(2, 40)), draw(st.integers(2, 40)), draw(st.integers(2, 20))
    shape = draw(st.sampled_from(["box", "lower", "upper", "strict_upper"]))
    j_bounds = {"box": "0 to N", "lower": "0 to affine_map<(d0) -> (d0 + 1)>(%i)", "upper": "%i to N",
                "strict_upper": "affine_map<(d0) -> (d0 + 1)>(%i) to N"}[shape]
    if shape != "box":  # j within [0, n) for every i < m
        n = max(n, m + 1) if shape == "strict_upper" else max(n, m)
    text = contraction_text(m, n, k, init=draw(st.sampled_from(["zero", "load", "scaled"])),
                            direct=draw(st.booleans()), j_bounds=j_bounds, epilogue=draw(st.booleans()))
    options = " ".join(o for o in (draw(st.sampled_from(("", "tile-sizes=32,32,8,2,2", "tile-sizes=64,64,8,8,8",
                                                         "tile-sizes=32,64,8,2,4"))),
                                   draw(st.sampled_from(("", "prefetch=false")))) if o)
    return text, "{" + options + "}" if options else "", shape != "box"


def test_random_contractions_with_partial_tiles_initial_values_and_triangles():
    """Random ``C = init + A @ B`` (partial tiles, initial values and per-element reads from
    memory, triangular bands): always scheduled, and exact in both thread orders."""
    seen = {"cases": 0, "triangular": 0}

    @settings(max_examples=40, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(contractions())
    def case(c):
        text, options, triangular = c
        m = air.parse(text)
        pm = PassManager.parse(pipeline(options))
        out = pm.run(m)
        decisions = [d for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
        assert [d.kind for d in decisions] == ["applied"], (text, options, decisions)
        assert ("triangular" in decisions[0].message) == triangular and "block tile" in decisions[0].message
        assert "workgroup" in str(out)
        args = library_inputs(m)
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, f"{options} {text}")
        seen["cases"] += 1
        seen["triangular"] += triangular

    case()
    assert seen["cases"] >= 30 and seen["triangular"] >= 10, seen


def test_bands_whose_columns_do_not_fill_their_box_are_left_for_gpu_map():
    """``j = 2 * i`` (a diagonal, the band ``for i < 10 { for j = 2i to 2i + 1 }``): the odd
    columns of the box ``[0, 19)`` have no iteration, so packed copies of them could read what the
    band never reads: refused with the reason, the nest left for gpu-map."""
    m = air.parse(contraction_text(10, 19, 7, j_bounds="affine_map<(d0) -> (d0 * 2)>(%i) to "
                                                       "affine_map<(d0) -> (d0 * 2 + 1)>(%i)"))
    nest = [op for op in m.functions[0].body.ops if op.name == "affine.for"][0]
    reason = plan_contraction(nest)
    assert isinstance(reason, str) and "does not cover its bounding box along the columns (%j)" in reason, reason
    pm = PassManager.parse("gpu-schedule,gpu-map")  # (canonicalize would fold the one-iteration j)
    out = pm.run(m)
    assert [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"] == [f"left for gpu-map: {reason}"]
    assert "workgroup" not in str(out)
    args = library_inputs(m)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args, "diagonal band")
