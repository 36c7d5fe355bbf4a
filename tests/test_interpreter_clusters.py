# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""Thread-block clusters on the interpreter and in CUDA C (issue 19): ``gpu.launch clusters(...)``, the cluster's
ids, its barrier (``nvvm.cluster.arrive/wait``), arrivals on another block's mbarrier
(``nvgpu.mbarrier.arrive.remote``). The blocks of a cluster run together (:func:`affine_ir.interp.gpu.run_cluster`);
in the reversed schedule one block runs ahead of the others as far as it can, so a block barrier standing in for
the cluster's shows."""

from __future__ import annotations

import numpy as np
import pytest

import affine_ir as air
from affine_ir.interp import reversed_schedule
from codegen.cuda import emit
from codegen.cuda.errors import EmitError

HEAD = """func.func @k(%X: memref<4xf32>, %Y: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  gpu.launch clusters(%cx, %cy, %cz) in (%ncx = %c2, %ncy = %c1, %ncz = %c1) blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
"""
TAIL = """    gpu.terminator
  }
  return
}"""
#: each block writes X[its block id]; after SYNC, reads the other block's of its cluster
EXCHANGE = HEAD + """    %r = gpu.cluster_block_id x
    %i = arith.index_cast %bx : index to i32
    %f = arith.sitofp %i : i32 to f32
    memref.store %f, %X[%bx] : memref<4xf32>
    SYNC
    %other = affine.apply affine_map<(d0) -> (d0 + 1 - (d0 mod 2) * 2)>(%bx)
    %v = memref.load %X[%other] : memref<4xf32>
    memref.store %v, %Y[%bx] : memref<4xf32>
""" + TAIL
CLUSTER_SYNC = "nvvm.cluster.arrive\n    nvvm.cluster.wait"


def _exchange(sync: str, schedule=None):
    x = np.full(4, -1, np.float32)
    y = np.zeros(4, np.float32)
    m = air.parse(EXCHANGE.replace("SYNC", sync))
    if schedule is None:
        air.interpret(m, x, y)
    else:
        with schedule():
            air.interpret(m, x, y)
    return y


@pytest.mark.parametrize("schedule", [None, reversed_schedule])
def test_the_blocks_of_a_cluster_run_together_and_meet_at_its_barrier(schedule):
    assert _exchange(CLUSTER_SYNC, schedule).tolist() == [1, 0, 3, 2]


def test_a_block_barrier_does_not_order_the_blocks_of_a_cluster():
    """With ``gpu.barrier`` instead of the cluster's, the block running ahead reads its peer's value before the
    peer wrote it (the -1 the buffer held)."""
    assert _exchange("gpu.barrier", reversed_schedule).tolist() != [1, 0, 3, 2]


def test_cluster_ids_and_sizes():
    """``gpu.cluster_id`` (the cluster's index in the grid), ``gpu.cluster_block_id`` (the block's in its cluster)
    and the body's cluster-size argument."""
    text = HEAD.replace("%X: memref<4xf32>, %Y: memref<4xf32>", "%X: memref<4x3xindex>") + """    %c0 = arith.constant 0 : index
    %cid = gpu.cluster_id x
    %rank = gpu.cluster_block_id x
    memref.store %cid, %X[%bx, %c0] : memref<4x3xindex>
    memref.store %rank, %X[%bx, %c1] : memref<4x3xindex>
    memref.store %ncx, %X[%bx, %c2] : memref<4x3xindex>
""" + TAIL
    x = np.zeros((4, 3), np.int64)
    air.interpret(air.parse(text), x)
    assert x.T.tolist() == [[0, 0, 1, 1], [0, 1, 0, 1], [2, 2, 2, 2]]


@pytest.mark.parametrize("grid, cluster, msg", [
    ("%c2", "%c4", "is not a whole number of clusters"),
    ("%c4", "%c16", "a thread-block cluster has 1 to 8 blocks"),
])
def test_bad_cluster_sizes_are_errors(grid, cluster, msg):
    text = EXCHANGE.replace("SYNC", CLUSTER_SYNC).replace("(%gx = %c4", f"(%gx = {grid}")
    text = text.replace("(%ncx = %c2", f"(%ncx = {cluster}").replace("  %c4 = arith.constant 4 : index\n",
                                                                     "  %c4 = arith.constant 4 : index\n  %c16 = "
                                                                     "arith.constant 16 : index\n")
    with pytest.raises(air.InterpretError, match=msg):
        air.interpret(air.parse(text), np.zeros(4, np.float32), np.zeros(4, np.float32))


REMOTE = HEAD + """    %b = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    %c0 = arith.constant 0 : index
    nvgpu.mbarrier.init %b[%c0], %c1 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    PRE
    %r = gpu.cluster_block_id x
    %peer = affine.apply affine_map<(d0) -> (1 - d0)>(%r)
    nvgpu.mbarrier.arrive.remote %b[%c0], TARGET : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    %false = arith.constant false
    nvgpu.mbarrier.try_wait.parity %b[%c0], %false, %c4 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    POST
""" + TAIL


def _remote(pre=CLUSTER_SYNC, target="%peer", post=CLUSTER_SYNC, schedule=None):
    m = air.parse(REMOTE.replace("PRE", pre).replace("TARGET", target).replace("POST", post))
    args = np.zeros(4, np.float32), np.zeros(4, np.float32)
    if schedule is None:
        air.interpret(m, *args)
    else:
        with schedule():
            air.interpret(m, *args)


def test_a_remote_arrival_completes_the_peer_blocks_barrier():
    _remote()
    _remote(schedule=reversed_schedule)
    _remote(target="%r")  # the own block's, through the cluster: as a local arrival


@pytest.mark.parametrize("pre, target, post, msg", [
    (CLUSTER_SYNC, "%c4", CLUSTER_SYNC, "block 4 is not in the cluster of 2 blocks"),
    ("", "%peer", CLUSTER_SYNC, "before a cluster barrier .* made sure every block of the cluster has started"),
    ("nvvm.cluster.wait", "%peer", CLUSTER_SYNC, "nvvm.cluster.wait without nvvm.cluster.arrive"),
    ("nvvm.cluster.arrive\n    nvvm.cluster.arrive", "%peer", CLUSTER_SYNC, "arrive twice"),
])
def test_misuse_of_the_cluster_is_an_error(pre, target, post, msg):
    with pytest.raises(air.InterpretError, match=msg):
        _remote(pre, target, post)


ONE_WAY = HEAD + """    %b = nvgpu.mbarrier.create -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    %c0 = arith.constant 0 : index
    nvgpu.mbarrier.init %b[%c0], %c1 : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    nvvm.cluster.arrive
    nvvm.cluster.wait
    %r = gpu.cluster_block_id x
    %peer = affine.apply affine_map<(d0) -> (1 - d0)>(%r)
    affine.if affine_set<(d0) : (d0 - RANK == 0)>(%r) {
      nvgpu.mbarrier.arrive.remote %b[%c0], TARGET : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
    }
""" + TAIL


@pytest.mark.parametrize("rank", [0, 1])
def test_a_block_that_exited_is_known_by_its_rank_in_either_schedule(rank):
    """Without a cluster barrier before exiting, block ``rank`` arriving on its peer is caught in the schedule where
    the peer ends first (the reversed one runs the last block ahead); arriving on itself is fine in both."""
    args = np.zeros(4, np.float32), np.zeros(4, np.float32)
    m = air.parse(ONE_WAY.replace("RANK", str(rank)).replace("TARGET", "%r"))
    air.interpret(m, *args)
    with reversed_schedule():
        air.interpret(m, *args)
    m = air.parse(ONE_WAY.replace("RANK", str(rank)).replace("TARGET", "%peer"))
    with pytest.raises(air.InterpretError, match=f"block {1 - rank} of the cluster has exited"):
        if rank == 0:
            with reversed_schedule():
                air.interpret(m, *args)
        else:
            air.interpret(m, *args)


def test_a_cluster_launch_without_synchronization_still_checks_its_cluster_size():
    text = HEAD.replace("(%gx = %c4", "(%gx = %c3").replace("  %c4 = arith.constant 4 : index\n",
                                                             "  %c4 = arith.constant 4 : index\n  %c3 = arith.constant 3 : index\n") + TAIL
    with pytest.raises(air.InterpretError, match="is not a whole number of clusters"):
        air.interpret(air.parse(text), np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_the_cuda_printer_gives_cluster_dims_and_the_cluster_ops():
    src = emit(air.parse(REMOTE.replace("PRE", CLUSTER_SYNC).replace("TARGET", "%peer").replace("POST", "")),
               arch="sm_90a").source
    assert "__cluster_dims__(2, 1, 1)" in src and "(blockIdx.x % 2u)" in src
    assert "mapa.shared::cluster.u32" in src and "mbarrier.arrive.shared::cluster.b64" in src
    assert "barrier.cluster.arrive;" in src and "barrier.cluster.wait;" in src
    from test_map_wgmma import assert_nvrtc_compiles

    assert_nvrtc_compiles(src)


def test_the_cuda_printer_refuses_what_a_cluster_launch_needs_without_one():
    no_clusters = REMOTE.replace("clusters(%cx, %cy, %cz) in (%ncx = %c2, %ncy = %c1, %ncz = %c1) ", "")
    m = air.parse(no_clusters.replace("PRE", "").replace("TARGET", "%peer").replace("POST", ""))
    with pytest.raises(EmitError, match="reaches other blocks of a thread-block cluster: the gpu.launch needs "
                                        "clusters"):
        emit(m, arch="sm_90a")


def test_cluster_ops_round_trip_and_verify():
    text = REMOTE.replace("PRE", "nvvm.cluster.arrive aligned\n    nvvm.cluster.wait aligned").replace(
        "TARGET", "%peer").replace("POST", "")
    m = air.parse(text)
    assert "nvvm.cluster.arrive aligned" in str(m) and str(air.parse(str(m))) == str(m)
    bad = text.replace("arrive.remote %b[%c0], %peer", "arrive.remote %b[%c0], %i1").replace(
        "%r = gpu.cluster_block_id x", "%r = gpu.cluster_block_id x\n    %i1 = arith.constant 1 : i32")
    with pytest.raises(air.ParseError, match="index"):
        air.parse(bad)
