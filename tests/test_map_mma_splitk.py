"""``gpu-map-mma`` split-K (issue 18 item 2): where the tiles give fewer blocks than the target has
multiprocessors and k is long, k runs in slices over grid z, each block writing its slice's partial
f32 tile into a buffer the function allocates; a second launch adds the slices in slice order (no
atomics: the same bits every run) and runs the epilogue.

On the interpreter, in both thread orders, forced splits of small shapes give the original nest's
bits (inputs multiples of 1/4: every f32 sum exact whatever its order), even slices and uneven
ones (K not a multiple of ``S * BK``: the last slice's steps past K read zeros), with partial tiles,
an initial value, a bias + ReLU epilogue and a batch. The chooser (the target's multiprocessors and
the split-K facts of its model) splits ``16 x 4096 x 4096`` and not ``4096^3`` (plans only); NVRTC
compiles the split kernels.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_cuda_emit import nvrtc_compile
from test_map_mma import L, check_same_bits, map_mma, ops_of, prepared

import runtime
from affine_ir.dialects.affine import AffineStoreOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.dialects.memref import AllocOp, DeallocOp
from affine_ir.dialects.nvgpu import MmaSyncOp
from affine_ir.testing import library_inputs, run
from affine_ir.types import f16, f32
from analysis.targets import DEFAULT_GPU
from codegen.cuda import emit
from transforms import PassManager
from transforms.gpu.map_mma_plan import (
    MmaKind,
    choose_mma_split,
    choose_mma_tiles,
    effective_splits,
    mma_split_candidates,
    slice_steps,
)

SMALL = "tile-sizes=32,32,16,2,2"

CASES = {
    # (module, split-k, expected slices)
    "matmul f16, k 96 in 3 even slices": (lambda: L.matmul(32, 32, 96, dtype="f16"), 3, 3),
    "matmul f16, k 80 in 2 uneven slices (3 + 2 steps)": (lambda: L.matmul(32, 32, 80, dtype="f16"), 2, 2),
    "matmul f16, k 72 (a partial step) in 4 slices": (lambda: L.matmul(32, 32, 72, dtype="f16"), 4, 3),
    "matmul f16 33x40 partial tiles, k 88 in 3": (lambda: L.matmul(33, 40, 88, dtype="f16"), 3, 3),
    "matmul bf16 A transposed, k 64 in 2": (lambda: L.matmul(32, 32, 64, dtype="bf16", transpose_a=True), 2, 2),
    "matmul f16 accumulate (initial value C), k 64 in 4": (lambda: L.matmul(32, 32, 64, dtype="f16",
                                                                            accumulate=True), 4, 4),
    "mlp f16 bias + relu, k 80 in 2": (lambda: L.mlp(32, 32, 80, dtype="f16", activation="relu"), 2, 2),
    "batch matmul f16 B transposed, batch 2, k 48 in 2": (lambda: L.batch_matmul(2, 32, 32, 48, dtype="f16",
                                                                                 transpose_b=True), 2, 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_forced_splits_give_the_original_bits_in_both_thread_orders(name):
    make, split, slices = CASES[name]
    out, decision = check_same_bits(make(), f"{SMALL} split-k={split}")
    assert f"k split in {slices} slices" in decision.message and "slice order" in decision.message
    launches = ops_of(out, LaunchOp)
    assert len(launches) == 2  # the matrix-unit launch, then the launch adding the slices
    assert ops_of(launches[0], MmaSyncOp) and not ops_of(launches[1], MmaSyncOp)
    partial = [op for op in ops_of(out, AllocOp) if (op.results[0].name_hint or "").startswith("partial_sums")]
    assert len(partial) == 1 and partial[0].results[0].type.shape[0] == slices
    assert partial[0].results[0].type.element_type == f32
    assert len(ops_of(out, DeallocOp)) == 1
    # the matrix-unit launch only writes partial sums; the epilogue's stores are all in the second launch
    stores = [op for op in ops_of(launches[0], AffineStoreOp)]
    assert stores and all(op.memref is partial[0].results[0] for op in stores)


def test_split_k_1_is_off_and_the_trace_says_so():
    m = L.matmul(32, 32, 96, dtype="f16")
    out, decisions = map_mma(prepared(m), f"{SMALL} split-k=1")
    assert len(ops_of(out, LaunchOp)) == 1 and "k not split (split-k=1)" in decisions[0].message


def test_a_split_runs_the_same_bits_every_time():
    """The slices are added in slice order by one thread per element: two runs, the same bits,
    also on data whose sums round (no integer-valued inputs)."""
    m = L.matmul(32, 32, 96, dtype="f16")
    out, _ = map_mma(prepared(m), f"{SMALL} split-k=3")
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(a.shape).astype(a.dtype) for a in library_inputs(m)]
    first, second = run(out, [a.copy() for a in args]), run(out, [a.copy() for a in args])
    assert first[-1].tobytes() == second[-1].tobytes()
    np.testing.assert_allclose(first[-1].astype(np.float64), run(m, args)[-1].astype(np.float64), rtol=2e-2,
                               atol=2e-2)


def test_bad_split_k_is_refused():
    with pytest.raises(Exception, match="split-k"):
        PassManager.parse("gpu-map-mma{split-k=-1}")


# -- the chooser: the target's multiprocessors and the split-K facts of its model ------------------------------------
def test_the_chooser_splits_decoding_shapes_and_not_large_ones():
    kind = MmaKind(f16, f32)
    for sizes in ((1, 16, 4096, 4096), (1, 128, 4096, 4096), (1, 16, 11008, 4096), (1, 16, 4096, 11008)):
        tiles = choose_mma_tiles(sizes, kind, DEFAULT_GPU)
        blocks = -(-sizes[1] // tiles.BM) * -(-sizes[2] // tiles.BN)
        splits = choose_mma_split(sizes, tiles, kind, DEFAULT_GPU)
        cost = DEFAULT_GPU.schedule_model
        assert blocks < DEFAULT_GPU.sm_count or splits == 1
        assert blocks * splits <= max(blocks, cost.max_split_blocks_per_sm * DEFAULT_GPU.sm_count)
        assert splits == 1 or slice_steps(sizes[3], tiles.BK, splits) >= cost.min_slice_steps
        print(sizes, tiles.describe(), blocks, "blocks:", splits, "slices")
    big = (1, 4096, 4096, 4096)
    tiles = choose_mma_tiles(big, kind, DEFAULT_GPU)
    assert mma_split_candidates(big, tiles, DEFAULT_GPU) == [1] and choose_mma_split(big, tiles, kind, DEFAULT_GPU) == 1
    # the M=16 decoding shape: at least one split, and it must be chosen
    tiles = choose_mma_tiles((1, 16, 4096, 4096), kind, DEFAULT_GPU)
    assert choose_mma_split((1, 16, 4096, 4096), tiles, kind, DEFAULT_GPU) > 1


def test_effective_splits_leave_no_empty_slice():
    assert effective_splits(80, 16, 2) == 2 and slice_steps(80, 16, 2) == 3
    assert effective_splits(72, 16, 4) == 3  # 5 steps: slices of 2, 2, 1
    assert effective_splits(16, 16, 4) == 1


@pytest.mark.parametrize("m, split", [(16, True), (4096, False)])
def test_the_pass_decides_from_the_target_and_records_why(m, split):
    """The pass on 16 x 4096 x 4096 (the grid too small) and 4096^3 (it fills the target): IR only."""
    out, decisions = map_mma(prepared(L.matmul(m, 4096, 4096, dtype="f16")), "")
    msg = decisions[0].message
    assert decisions[0].kind == "applied"
    if split:
        assert "the grid is too small" in msg and f"for {DEFAULT_GPU.sm_count} multiprocessors" in msg
        assert len(ops_of(out, LaunchOp)) == 2
    else:
        assert "k not split" in msg and len(ops_of(out, LaunchOp)) == 1


# -- CUDA ------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, options", [
    (lambda: L.matmul(16, 4096, 4096, dtype="f16"), ""),
    (lambda: L.mlp(50, 48, 200, dtype="bf16", activation="relu"), f"{SMALL} split-k=3"),
    (lambda: L.batch_matmul(2, 64, 64, 256, dtype="f16"), "split-k=4"),
])
def test_nvrtc_compiles_the_split_kernels(make, options):
    out, decisions = map_mma(prepared(make()), options)
    assert "k split in" in decisions[0].message
    out = PassManager.parse("gpu-map,canonicalize,cse").run(out)
    src = emit(out).source
    assert "mma.sync.aligned.m16n8k16.row.col.f32." in src and "atomic" not in src
    assert src.count("__global__") == 2
    for arch in ("sm_80", "sm_90a"):
        cubin, log = nvrtc_compile(src, arch)
        assert cubin and log == "", f"{arch}: {log}"


def test_runtime_compile_of_a_decoding_matmul_holds_the_split_kernels():
    from transforms.pipelines import GPU_PIPELINE

    k = runtime.compile(L.matmul(16, 4096, 4096, dtype="f16"), target="cuda", arch="sm_90a", pipeline=GPU_PIPELINE)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in k.source
    assert k.source.count("__global__") == 2 and "atomic" not in k.source
    assert f16 and k.image


def test_the_gpu_pipeline_with_a_forced_split_keeps_the_bits():
    """The rest of GPU_PIPELINE (gpu-schedule, gpu-map, cleanups) leaves both launches intact."""
    from affine_ir.testing import assert_same_bits_in_both_thread_orders
    from transforms.pipelines import GPU_PIPELINE

    m = L.mlp(32, 32, 80, dtype="f16", activation="relu")
    pipe = GPU_PIPELINE.replace("gpu-map-mma", "gpu-map-mma{" + SMALL + " split-k=3}")
    assert pipe != GPU_PIPELINE
    pm = PassManager.parse(pipe)
    out = pm.run(m)
    assert any("k split in 3 slices" in d.message for d in pm.trace.decisions if d.pass_name == "gpu-map-mma")
    args = library_inputs(m)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args)
