"""``gpu-map-mma{wgmma=true wgmma-cluster=C}``: warpgroup-MMA kernels in thread-block clusters of C blocks along M
that share the B tile, each block loading a slice of it and multicasting it to all by TMA (issue 19).

On the interpreter (blocks of a cluster run together: :func:`affine_ir.interp.gpu.run_cluster`), the mapped kernels
give the nest's bits in every schedule, one of them with a block of each cluster running ahead and copies landing
when issued; each synchronization the clusters need is shown necessary by removing it: the cluster barrier after
the mbarriers' init, the one before the blocks exit, the arrivals on the other blocks' ``empty`` barriers, the
multicast itself.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from test_map_wgmma import IREE_OPT, assert_nvrtc_compiles, check_same_bits, gpu_matmul_is_exact, map_wgmma, ops_of

import affine_ir as air
from affine_ir.dialects.nvgpu_hopper import MBarrierArriveRemoteOp, TmaAsyncLoadOp
from affine_ir.errors import InterpretError
from affine_ir.interp.gpu import reversed_schedule
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from transforms.errors import PipelineError

L = air.library

CASES = {
    "f16 2 blocks, B N x K": (lambda: L.matmul(256, 64, 320, dtype="f16", transpose_b=True),
                              "wgmma-tiles=128,64,2 wgmma-cluster=2 stages=2"),
    "bf16 4 blocks, partial N and K": (lambda: L.matmul(256, 60, 200, dtype="bf16", transpose_b=True),
                                       "wgmma-tiles=64,64,1 wgmma-cluster=4 stages=2"),
    "f16 2 blocks, B K x N (chunks)": (lambda: L.matmul(256, 128, 192, dtype="f16"),
                                       "wgmma-tiles=128,128,2 wgmma-cluster=2 stages=2"),
    "bf16 batched, split-K": (lambda: L.batch_matmul(2, 128, 64, 256, dtype="bf16", transpose_b=True),
                              "wgmma-tiles=64,64,1 wgmma-cluster=2 split-k=2 stages=2"),
    "e4m3 2 blocks": (lambda: L.scaled_matmul(256, 64, 256), "wgmma-tiles=128,64,2 wgmma-cluster=2 stages=2"),
    "f16 2 blocks, TMA store": (lambda: L.matmul(256, 64, 192, dtype="f16", transpose_b=True),
                                "wgmma-tiles=128,64,2 wgmma-cluster=2 stages=2 tma-store=true"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_clustered_kernels_give_the_original_bits(name):
    build, options = CASES[name]
    out, decision = check_same_bits(build(), options)
    size = int(re.search(r"wgmma-cluster=(\d)", options).group(1))
    assert f"clusters of {size} blocks along M" in decision.message
    launch = next(op for op in out.walk() if op.name == "gpu.launch" and op.cluster_size)
    assert [v.owner.value for v in launch.cluster_size] == [size, 1, 1]
    assert launch.operands[0].owner.value % size == 0
    multicast = [op for op in ops_of(out, TmaAsyncLoadOp) if op.multicast_mask is not None]
    assert multicast and all(op.multicast_mask.owner.value == (1 << size) - 1 for op in multicast)
    assert len(ops_of(out, MBarrierArriveRemoteOp)) == 1


def _mapped():
    m = L.matmul(256, 64, 320, dtype="f16", transpose_b=True)
    out, _ = map_wgmma(m, "wgmma-tiles=128,64,2 wgmma-cluster=2 stages=2")
    return m, str(out)


def _run(text: str, m, schedule=None):
    args = library_inputs(m, 0)
    if schedule is None:
        return run(air.parse(text), args)
    with schedule():
        return run(air.parse(text), args)


def test_without_the_cluster_barrier_before_exiting_a_block_exits_while_another_still_arrives_on_it():
    m, text = _mapped()
    bad = text.replace("      nvvm.cluster.arrive\n      nvvm.cluster.wait\n", "")
    assert bad != text
    with pytest.raises(InterpretError, match="block 1 of the cluster has exited"):  # block 1 ran ahead
        _run(bad, m, reversed_schedule)


def test_without_the_cluster_barrier_after_init_a_block_reaches_another_before_it_started():
    m, text = _mapped()
    bad = text.replace("nvvm.cluster.arrive aligned\n      nvvm.cluster.wait aligned\n", "gpu.barrier\n")
    assert bad != text
    with pytest.raises(InterpretError, match="reaches block 1's shared memory before a cluster barrier"):
        _run(bad, m)


def test_releasing_a_stage_to_the_own_producer_only_is_caught_when_a_block_runs_ahead():
    """Each consumer warpgroup's threads 0 and 1 arriving on their own block's ``empty`` barrier (the count still
    met) lets a producer multicast into a stage the other block still reads: with copies landing when issued
    and one block ahead, the bits differ."""
    m, text = _mapped()
    bad = re.sub(r"nvgpu\.mbarrier\.arrive\.remote (%empty\[%done_stage\]), %cta : (![^\n]*)",
                 r"%tok = nvgpu.mbarrier.arrive \1 : \2 -> !nvgpu.mbarrier.token", text)
    assert bad != text
    args = library_inputs(m, 0)
    with pytest.raises(AssertionError, match="a block of each cluster ahead"):
        assert_same_bits_in_both_thread_orders(run(m, args), bad, args)


def test_a_load_for_the_own_block_only_leaves_the_others_waiting():
    m, text = _mapped()
    bad = text.replace("arith.constant 3 : i16", "arith.constant 1 : i16")
    assert bad != text
    with pytest.raises(InterpretError, match="deadlock"):
        _run(bad, m)


def test_cluster_options_are_checked_and_refusals_say_why():
    with pytest.raises(PipelineError, match="wgmma-cluster takes 1, 2, 4 or 8 blocks, got 3"):
        map_wgmma(L.matmul(64, 64, 64, dtype="f16", transpose_b=True), "wgmma-cluster=3")
    _, d = map_wgmma(L.matmul(192, 64, 64, dtype="f16", transpose_b=True), "wgmma-tiles=64,64,1 wgmma-cluster=2")
    assert "no clusters: 3 tile rows are not a whole number of clusters of 2" in d[0].message
    _, d = map_wgmma(L.matmul(256, 64, 64, dtype="f16", transpose_b=True),
                     "wgmma-tiles=128,64,2 wgmma-cluster=2 wgmma-schedule=persistent")
    assert "no clusters: clusters of 2 blocks are built for the blocks schedule, not persistent" in d[0].message
    _, d = map_wgmma(L.matmul(256, 64, 64, dtype="f16"), "wgmma-tiles=128,64,2 wgmma-cluster=2")
    assert "no clusters: an MN-major B's 32-column slices are not whole 64-column chunks" in d[0].message


def test_a_clustered_kernel_compiles_for_sm_90a():
    from codegen.cuda import emit

    m = L.matmul(512, 512, 256, dtype="bf16", transpose_b=True)
    out, _ = map_wgmma(m, "wgmma-cluster=2")
    src = emit(out, arch="sm_90a").source
    assert "__cluster_dims__(2, 1, 1)" in src
    assert ".multicast::cluster" in src and "mapa.shared::cluster.u32" in src
    assert "barrier.cluster.arrive.aligned;" in src and "barrier.cluster.wait;" in src
    assert_nvrtc_compiles(src)


@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt (upstream MLIR) not on PATH")
def test_upstream_mlir_reads_the_clustered_kernel_but_the_remote_arrival():
    """``gpu.launch clusters``, multicast TMA loads and ``nvvm.cluster.*`` are upstream's; the arrival on another
    block's mbarrier is ours (upstream's nvgpu has none): without those ops the kernel verifies there."""
    _, text = _mapped()
    proc = subprocess.run([IREE_OPT, "-"], input=text, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "nvgpu.mbarrier.arrive.remote" in proc.stderr
    without = re.sub(r"\n *nvgpu\.mbarrier\.arrive\.remote [^\n]*", "", text)
    proc = subprocess.run([IREE_OPT, "-"], input=without, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[:2000]


@pytest.mark.gpu
def test_gpu_clustered_kernels_match_torch():
    for tb, cluster in ((True, 2), (False, 2), (True, 4)):
        exe = gpu_matmul_is_exact(512, 512, 448, f"wgmma-cluster={cluster} split-k=1 wgmma-tiles=128,128,2",
                                  transpose_b=tb)
        assert f"__cluster_dims__({cluster}, 1, 1)" in exe.source
