"""``gpu-map-mma{wgmma=true}``: contractions on Hopper's warpgroup MMA fed by TMA, with a producer
warpgroup and mbarrier-handed stages (issue 19, part 1).

On the interpreter's launch emulation (:mod:`affine_ir.interp.hopper`: TMA loads land when a thread
waits on their mbarrier, or with :func:`~affine_ir.interp.hopper.eager_copies` when issued; a wgmma
group reads shared memory when a wait retires it), in both thread orders and both copy schedules, the
mapped kernels give exactly the bits of the original nests on integer-valued data. A kernel that hands
a stage back too early, or never waits, is caught.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import affine_ir as air
from affine_ir.dialects.nvgpu_hopper import MBarrierTryWaitParityOp, TmaAsyncLoadOp
from affine_ir.dialects.nvgpu_warpgroup import WarpgroupMmaOp
from affine_ir.errors import InterpretError
from affine_ir.interp.hopper import eager_copies
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from analysis.targets import target
from transforms import PassManager
from transforms.gpu.map_wgmma import WgmmaTiles, choose_wgmma_tiles

L = air.library
PREPARE = ("canonicalize,affine-loop-fusion,affine-privatize{dynamic-shapes=false},gpu-expose-parallelism,"
           "affine-scalrep,canonicalize")


def map_wgmma(m, options: str = ""):
    pm = PassManager.parse(PREPARE + ",gpu-map-mma{wgmma=true" + (" " + options if options else "") + "}")
    out = pm.run(m)
    return out, [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]


def ops_of(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def assert_nvrtc_compiles(src: str, arch: str = "sm_90a") -> None:
    """NVRTC compiles ``src`` for ``arch`` without a warning (nothing to check where NVRTC is not installed)."""
    try:
        from test_cuda_emit import nvrtc_compile
    except pytest.skip.Exception:
        return
    cubin, log = nvrtc_compile(src, arch)
    assert cubin and log == ""


def without_wait_on(text: str, barrier: str) -> str:
    """The mapped kernel ``text`` without its guarded wait on the mbarrier group ``%barrier`` (``turn``,
    ``drained``): the ``affine.if`` around the ``try_wait.parity`` goes."""
    bad = re.sub(r"\n *affine\.if [^\n]*\{\n[^\n]*affine\.apply[^\n]*\n[^\n]*\n[^\n]*\n *nvgpu\.mbarrier\.try_wait"
                 rf"\.parity %{barrier}[^\n]*\n *\}}", "", text)
    assert bad != text and f"try_wait.parity %{barrier}" not in bad
    return bad


def check_same_bits(m, options: str = ""):
    out, decisions = map_wgmma(m, options)
    assert [d.kind for d in decisions] == ["applied"], [str(d) for d in decisions]
    assert "warpgroup MMA" in decisions[0].message, decisions[0].message
    args = library_inputs(m, 0)
    want = run(m, args)
    assert np.count_nonzero(want[-1]) > want[-1].size // 4
    assert_same_bits_in_both_thread_orders(want, out, args, context=str(decisions[0]))
    return out, decisions[0]


CASES = {
    "f16 128x32, k 128": lambda: L.matmul(128, 32, 128, dtype="f16", transpose_b=True),
    "bf16 64x64, k 192": lambda: L.matmul(64, 64, 192, dtype="bf16", transpose_b=True),
    "f16 accumulate": lambda: L.matmul(64, 48, 64, dtype="f16", transpose_b=True, accumulate=True),
    # partial tiles: TMA fills what lies past M, N, K with zeros; the epilogue is guarded
    "f16 200x40, k 200 (partial)": lambda: L.matmul(200, 40, 200, dtype="f16", transpose_b=True),
    "bf16 17x9 -> 24 wide tile, k 56 (partial)": lambda: L.matmul(17, 9, 56, dtype="bf16", transpose_b=True),
    # B given K x N (MN-major): 64-column chunks loaded by one TMA box each, wgmma with B transposed
    "f16 B K x N 64x128, k 128": lambda: L.matmul(64, 128, 128, dtype="f16"),
    "bf16 B K x N 150x136, k 200 (partial)": lambda: L.matmul(150, 136, 200, dtype="bf16"),
    # A given K x M (MN-major, wgmma with transposeA): 64-row chunks of 64 k rows, as B's K x N chunks
    "f16 A K x M 128x64, k 128": lambda: L.matmul(128, 64, 128, dtype="f16", transpose_a=True, transpose_b=True),
    "bf16 A K x M, B K x N 152x136, k 200 (partial)": lambda: L.matmul(152, 136, 200, dtype="bf16", transpose_a=True),
    # batched: 3-D tensor maps (boxes of 1 x rows x 64), grid z over the batch
    "f16 batched 3x40x24, k 128": lambda: L.batch_matmul(3, 40, 24, 128, dtype="f16", transpose_b=True),
    "bf16 batched B K x N 2x30x128, k 64": lambda: L.batch_matmul(2, 30, 128, 64, dtype="bf16"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_mapped_contractions_give_the_original_bits(name):
    out, decision = check_same_bits(CASES[name]())
    mma = ops_of(out, WarpgroupMmaOp)
    mn_major, a_mn_major = "B K x N" in name, "A K x M" in name
    assert len(mma) == 1 and mma[0].transpose_b != mn_major and mma[0].wait_group == 1
    assert mma[0].transpose_a == a_mn_major
    assert len(ops_of(out, MBarrierTryWaitParityOp)) == 2
    b_tile = mma[0].descriptor_b.type.tensor
    chunks = b_tile.shape[1] // 64 if mn_major else 1
    block_rows = int(re.search(r"block tile (\d+)x", decision.message).group(1))
    a_loads = block_rows // 64 if a_mn_major else 1  # an MN-major A: one 64-row chunk of 64 k rows per load
    assert len(ops_of(out, TmaAsyncLoadOp)) == a_loads + chunks


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_stage_counts(stages):
    """2 to 4 stages over 5 k steps: the phases of the full and empty barriers wrap around."""
    out, decision = check_same_bits(L.matmul(128, 16, 320, dtype="f16", transpose_b=True), f"stages={stages}")
    assert f"{stages} stages" in decision.message


def test_batched_and_split_k_together():
    """Grid z runs (slice, batch), the batch fastest; the partial sums are indexed by slice and band."""
    out, decision = check_same_bits(L.batch_matmul(2, 70, 64, 200, dtype="bf16"), "split-k=2")
    assert "slices" in decision.message and "MN-major" in decision.message


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("options", ["split-k=3", "split-k=2 wgmma-tiles=64,64,1",
                                     "split-k=2 wgmma-tiles=64,32,1 stages=2"])
def test_split_k_and_one_consumer(options, accumulate):
    """k in slices (grid z), their partial sums added in slice order by a second launch (the initial value
    first); one consumer warpgroup of 64 rows; slices whose last steps lie past K read TMA's zeros."""
    m = L.matmul(70, 40, 320, dtype="f16", transpose_b=True, accumulate=accumulate)
    out, decision = check_same_bits(m, options)
    assert "slices" in decision.message
    assert len([op for op in out.walk() if op.name == "gpu.launch"]) == 2


def test_small_m_is_split_on_narrow_tiles():
    """Decode-like M = 16: the 128 x 256 tile would leave most multiprocessors idle; the model picks a
    narrower tile and splits k."""
    t = choose_wgmma_tiles((1, 16, 4096, 4096), target("h100"))
    assert t.splits > 1 and t.BM == 64 and t.BM * t.BN < 128 * 256


def test_an_a_given_k_x_m_with_rows_not_16_byte_strided_stays_on_mma_sync_with_the_reason():
    """A given K x M with M = 60: TMA's global strides are multiples of 16 bytes (120 bytes are not)."""
    out, decisions = map_wgmma(L.matmul(60, 64, 64, dtype="f16", transpose_a=True))
    assert [d.kind for d in decisions] == ["applied"]
    assert "on the matrix units" in decisions[0].message and "not on warpgroup MMA" in decisions[0].message
    assert not ops_of(out, WarpgroupMmaOp)


@pytest.mark.parametrize("fuse", [False, True])
def test_the_whole_gpu_pipeline_with_an_mlp(fuse):
    """``gpu_pipeline(wgmma=True)``: an MLP layer (bias, ReLU) -- fused, its epilogue runs in the wgmma
    kernel's; unfused, the other nests go to gpu-schedule/gpu-map beside the TMA setup on the host."""
    from transforms.pipelines import gpu_pipeline

    m = L.mlp(64, 128, 64, dtype="f16", activation="relu")
    pm = PassManager.parse(gpu_pipeline(fuse=fuse, wgmma=True))
    out = pm.run(m)
    assert any("warpgroup MMA" in d.message for d in pm.trace.decisions if d.kind == "applied")
    args = library_inputs(m, 0)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args)
    launches = [op for op in out.walk() if op.name == "gpu.launch"]
    assert len(launches) == (1 if fuse else 3)


def test_an_sm80_target_keeps_mma_sync():
    out, decisions = map_wgmma(L.matmul(64, 64, 64, dtype="f16", transpose_b=True), "target=a100")
    assert "has no warpgroup MMA" in decisions[0].message and not ops_of(out, WarpgroupMmaOp)


def test_tiles_fit_the_shared_memory():
    h200 = target("h200")
    t = choose_wgmma_tiles((1, 4096, 4096, 4096), h200)
    assert isinstance(t, WgmmaTiles) and (t.BM, t.BN, t.consumers, t.stages) == (128, 256, 2, 4)
    assert t.shared_bytes <= h200.shared_memory_per_block_optin
    assert choose_wgmma_tiles((1, 64, 40, 64), h200).BN == 40
    assert WgmmaTiles(128, 264).invalid() and WgmmaTiles(96, 64).invalid()


def _racy(text: str) -> str:
    """The kernel with each consumer handing its stage back right after issuing the wgmma that reads it
    (instead of one step later, when that wgmma's group is complete)."""
    bad = text.replace("(d0 - 1 >= 0, d1 mod 128 == 0)", "(d0 >= 0, d1 mod 128 == 0)")
    bad = bad.replace("((d0 + 1) mod 2)", "(d0 mod 2)")
    assert bad != text
    return bad


def test_a_stage_handed_back_too_early_is_caught_when_copies_land_early():
    m = L.matmul(128, 32, 512, dtype="f16", transpose_b=True)
    out, _ = map_wgmma(m, "stages=2")
    args = library_inputs(m, 0)
    want = run(m, args)[-1]
    bad = air.parse(_racy(str(out)))
    with eager_copies():
        assert np.array_equal(run(out, args)[-1], want)
        assert not np.array_equal(run(bad, args)[-1], want)


def test_reading_the_accumulator_before_its_group_completes_is_an_error():
    m = L.matmul(64, 16, 64, dtype="f16", transpose_b=True)
    out, _ = map_wgmma(m)
    text = str(out).replace("nvvm.wgmma.wait.group.sync.aligned 0", "nvvm.wgmma.wait.group.sync.aligned 1")
    with pytest.raises(InterpretError, match="still in flight"):
        run(air.parse(text), library_inputs(m, 0))


def test_a_wait_on_a_phase_that_never_completes_is_a_deadlock():
    """The consumers hand back only their first stages: the producer waits for an empty stage forever."""
    m = L.matmul(64, 16, 512, dtype="f16", transpose_b=True)
    out, _ = map_wgmma(m, "stages=2")
    text = str(out).replace("(d0 - 1 >= 0, d1 mod 128 == 0)", "(d0 - 1 >= 0, d1 mod 128 == 0, -d0 + 1 >= 0)")
    assert text != str(out)
    with pytest.raises(InterpretError, match="deadlock"):
        run(air.parse(text), library_inputs(m, 0))


def test_an_a_given_k_x_m_prints_imm_trans_a_and_compiles_for_sm_90a():
    from codegen.cuda import emit

    out, _ = map_wgmma(L.matmul(256, 128, 256, dtype="f16", transpose_a=True, transpose_b=True))
    src = emit(out, arch="sm_90a").source
    assert "_f32_f16_amn(float* d" in src and "p, 1, 1, 1, 0; }" in src  # imm-trans-a 1, B K-major
    assert "desc_a + 128" in src  # k step 1 of an MN-major A: 16 rows of 128 bytes (address field >> 4)
    assert_nvrtc_compiles(src)


def gpu_matmul_is_exact(m: int, n: int, k: int, options: str = "", transpose_a: bool = False,
                        transpose_b: bool = True):
    """Compile the f16 ``m x n x k`` matmul with ``gpu_pipeline(wgmma=True, wgmma_options=options)``, run it on
    small integers (exact f32 sums, rounded once to f16 on both sides) and assert it equals torch's; returns the
    executable (skips without an sm_90 GPU)."""
    torch = pytest.importorskip("torch")
    import runtime
    from transforms.pipelines import gpu_pipeline

    if not runtime.gpu_available() or not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("needs an sm_90 GPU")
    exe = runtime.compile(L.matmul(m, n, k, dtype="f16", transpose_a=transpose_a, transpose_b=transpose_b),
                          target="cuda", pipeline=gpu_pipeline(wgmma=True, wgmma_options=options))
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randint(-3, 4, (k, m) if transpose_a else (m, k), device="cuda", generator=gen).half()
    b = torch.randint(-3, 4, (n, k) if transpose_b else (k, n), device="cuda", generator=gen).half()
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.half)
    exe(a, b, c)
    want = (a.float().t() if transpose_a else a.float()) @ (b.float().t() if transpose_b else b.float())
    assert torch.equal(c, want.half()), (m, n, k, options, transpose_a, transpose_b)
    return exe


@pytest.mark.gpu
def test_gpu_an_a_given_k_x_m_matches_torch():
    for tb in (True, False):
        exe = gpu_matmul_is_exact(320, 384, 448, transpose_a=True, transpose_b=tb)
        assert "_amn" in exe.source


PERSISTENT = {
    # a block per multiprocessor looping over tiles: persistent-blocks=2 makes each block take several
    "persistent, partial tiles": (lambda: L.matmul(200, 40, 200, dtype="f16", transpose_b=True),
                                  "wgmma-tiles=64,32,1 wgmma-schedule=persistent persistent-blocks=2 stages=2"),
    "persistent, two consumers, B K x N": (lambda: L.matmul(256, 128, 320, dtype="bf16"),
                                           "wgmma-tiles=128,64,2 wgmma-schedule=persistent persistent-blocks=3"),
    "persistent, batched, split-K": (lambda: L.batch_matmul(2, 70, 64, 200, dtype="bf16"),
                                     "wgmma-schedule=persistent persistent-blocks=3 split-k=2"),
    "pingpong, partial tiles": (lambda: L.matmul(200, 40, 200, dtype="f16", transpose_b=True),
                                "wgmma-tiles=64,32,2 wgmma-schedule=pingpong persistent-blocks=2 stages=2"),
    "pingpong, one block, A K x M and B K x N": (lambda: L.matmul(136, 64, 192, dtype="bf16", transpose_a=True),
                                                 "wgmma-tiles=64,64,2 wgmma-schedule=pingpong persistent-blocks=1"),
    "pingpong, 128-row tiles, accumulate": (
        lambda: L.matmul(256, 64, 640, dtype="f16", transpose_b=True, accumulate=True),
        "wgmma-tiles=128,32,2 wgmma-schedule=pingpong persistent-blocks=1 stages=3"),
}


@pytest.mark.parametrize("name", list(PERSISTENT))
def test_persistent_blocks_give_the_original_bits(name):
    """Persistent blocks (one per multiprocessor; fewer here, so that each loops over several tiles) keep
    the ring's phases going from tile to tile and hand the last step's stage back; the epilogue reads a
    buffer of its own, the next tile's loads filling the ring under it. Taking turns (pingpong), each
    consumer warpgroup computes whole tiles, the next tile's k loop starting once this one's has waited
    for all its steps."""
    build, options = PERSISTENT[name]
    out, decision = check_same_bits(build(), options)
    schedule = "pingpong" if "pingpong" in name else "persistent"
    assert f"persistent ({schedule}" in decision.message
    launch = next(op for op in out.walk() if op.name == "gpu.launch")
    blocks = int(re.search(r"persistent-blocks=(\d+)", options).group(1))
    assert [v.owner.value for v in launch.operands[:3]] == [blocks, 1, 1]


def test_taking_turns_without_waiting_for_the_previous_tile_is_caught():
    """Without the turn (tile i's k loop waiting until tile i - 1's consumer has waited for all its steps),
    a consumer's wait on a stage's full barrier passes on an earlier tile's phase of the same parity and
    the ring's accounting breaks: the interpreter reports it."""
    m = L.matmul(200, 40, 640, dtype="f16", transpose_b=True)
    out, _ = map_wgmma(m, "wgmma-tiles=64,32,2 wgmma-schedule=pingpong persistent-blocks=1 stages=3")
    text = str(out)
    bad = without_wait_on(text, "turn")
    with pytest.raises(InterpretError, match="deadlock|more arrivals"):
        run(air.parse(bad), library_inputs(m, 0))


def test_persistent_schedule_options_are_checked():
    from transforms.errors import PipelineError

    with pytest.raises(PipelineError, match="wgmma-schedule takes one of blocks, persistent, pingpong, got 'ring'"):
        map_wgmma(L.matmul(64, 64, 64, dtype="f16", transpose_b=True), "wgmma-schedule=ring")
    why = WgmmaTiles(128, 256, 2, schedule="pingpong").invalid()
    assert "256 registers per thread, more than 128" in why
    t = WgmmaTiles(128, 128, 2, 3, schedule="pingpong")
    assert t.invalid() is None and t.rows == 128 and t.shared_bytes == 3 * 256 * 128 + 128 * 128 * 4


def test_a_pingpong_kernel_compiles_for_sm_90a():
    from codegen.cuda import emit

    out, _ = map_wgmma(L.matmul(512, 512, 512, dtype="f16", transpose_b=True),
                       "wgmma-tiles=128,128,2 wgmma-schedule=pingpong")
    src = emit(out, arch="sm_90a").source
    assert "bar.sync" in src and "m64n128k16" in src
    assert_nvrtc_compiles(src)


UPSTREAM = {  # (module, options): the production tiles, one and two consumers, 8-bit floats, both layouts
    "f16 128x256 two consumers": (lambda: L.matmul(256, 512, 128, dtype="f16", transpose_b=True),
                                  "wgmma-tiles=128,256,2"),
    "bf16 B K x N 128x128 pingpong": (lambda: L.matmul(256, 256, 128, dtype="bf16"),
                                      "wgmma-tiles=128,128,2 wgmma-schedule=pingpong"),
    "f16 64x40 one consumer": (lambda: L.matmul(64, 40, 128, dtype="f16", transpose_b=True), ""),
    "f16 A K x M, B N x K": (lambda: L.matmul(128, 96, 64, dtype="f16", transpose_a=True, transpose_b=True), ""),
    "e4m3 128x48": (lambda: L.scaled_matmul(128, 48, 256), "wgmma-tiles=128,48,2"),
    "bf16 batched 2x64x24": (lambda: L.batch_matmul(2, 64, 24, 128, dtype="bf16", transpose_b=True), ""),
}
IREE_OPT = __import__("shutil").which("iree-opt")


@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt (upstream MLIR) not on PATH")
@pytest.mark.parametrize("name", list(UPSTREAM))
def test_upstream_mlir_verifies_the_mapped_kernels(name):
    """Upstream's verifier (iree-opt) accepts every mapped kernel: the wgmma descriptors are of the logical
    ``M x K`` and ``K x N`` tiles whatever the layout (checked ``A[1] == B[0]``), a K-major B's ``N x K`` TMA box
    viewed again as ``K x N`` -- before this, only square B tiles verified there. Upstream refuses transposeA
    without transposeB (an MN-major A with an MN-major B), which runs here: that one is refused with its reason."""
    import subprocess

    build, options = UPSTREAM[name]
    out, decisions = map_wgmma(build(), options)
    assert "warpgroup MMA (sm_90a)" in decisions[0].message, decisions[0].message
    proc = subprocess.run([IREE_OPT, "-"], input=str(out), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[:2000]
    mma = ops_of(out, WarpgroupMmaOp)[0]
    a, b = mma.descriptor_a.type.tensor.shape, mma.descriptor_b.type.tensor.shape
    assert a[1] == b[0] and (a[0], b[1]) == mma.matrix_c.type.fragmented.shape


@pytest.mark.skipif(IREE_OPT is None, reason="iree-opt (upstream MLIR) not on PATH")
def test_upstream_mlir_refuses_an_mn_major_a_with_an_mn_major_b_which_runs_here():
    import subprocess

    m = L.matmul(128, 128, 64, dtype="f16", transpose_a=True)
    out, _ = check_same_bits(m)
    proc = subprocess.run([IREE_OPT, "-"], input=str(out), capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "supports non-transpose A (Row Major) and transpose B (Column Major)" in proc.stderr


def test_the_epilogue_stores_its_tile_through_shared_memory_and_tma():
    """Where the nest ends in its only store (at the row and column, TMA-strided rows), the epilogue writes the
    output tile to shared memory (in the ring after the sums) and the first consumer thread stores it with one
    TMA store after a proxy fence and a barrier of the consumers (``tma-store=true``; off by default, slower on
    the H100); ``tma-store=false`` keeps the per-element global stores. Both give the nest's bits; without the
    barrier the store leaves other threads' elements unwritten, and the bit check catches it. (The interpreter
    does not model the async proxy: dropping the fence goes unnoticed there; compute-sanitizer runs on the GPU.)"""
    from affine_ir.dialects.nvgpu_hopper import TmaAsyncStoreOp

    m = L.mlp(128, 64, 128, dtype="f16")
    out, decision = check_same_bits(m, "wgmma-tiles=128,64,2 tma-store=true")
    assert "the output tile stored by TMA" in decision.message
    (store,) = ops_of(out, TmaAsyncStoreOp)
    assert store.src.type.shape == (128, 64) and store.descriptor.type.swizzle == "none"
    direct, d2 = check_same_bits(m, "wgmma-tiles=128,64,2 tma-store=false")
    assert not ops_of(direct, TmaAsyncStoreOp) and "stored by TMA" not in d2.message
    lines = str(out).split("\n")
    at = next(i for i, line in enumerate(lines) if "nvvm.fence.proxy" in line)
    assert "nvvm.barrier" in lines[at + 1]
    racy = air.parse("\n".join(lines[:at + 1] + lines[at + 2:]))
    args = library_inputs(m, 0)
    assert not np.array_equal(run(racy, args)[-1], run(m, args)[-1])


def test_a_128x256_kernel_with_a_tma_store_compiles_for_sm_90a():
    from codegen.cuda import emit

    out, decision = map_wgmma(L.mlp(512, 1024, 256, dtype="bf16"), "wgmma-tiles=128,256,2 tma-store=true")
    assert "stored by TMA" in decision[0].message
    src = emit(out, arch="sm_90a").source
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in src and "fence.proxy.async.shared::cta" in src
    assert_nvrtc_compiles(src)


def test_taking_turns_on_one_sums_buffer_without_waiting_is_caught_when_threads_interleave():
    """Without the ``drained`` wait, tile i's consumer stores its sums into the buffer tile i - 1's consumer is
    still reading. Each thread running to its next barrier (both default orders) hides it; threads taking turns
    at every shared access (``interleaved_schedule``, part of ``assert_same_bits_in_both_thread_orders``) show
    it."""
    from affine_ir.interp.gpu import interleaved_schedule

    m = L.matmul(200, 40, 200, dtype="f16", transpose_b=True)
    out, _ = map_wgmma(m, "wgmma-tiles=64,32,2 wgmma-schedule=pingpong persistent-blocks=2 stages=2")
    text = str(out)
    bad = without_wait_on(text, "drained")
    args = library_inputs(m, 0)
    want = run(m, args)[-1]
    assert np.array_equal(run(air.parse(bad), args)[-1], want)  # the default schedule misses it
    with interleaved_schedule():
        assert np.array_equal(run(out, args)[-1], want)
        assert not np.array_equal(run(air.parse(bad), args)[-1], want)


def test_an_output_indexed_row_batch_column_keeps_its_per_element_stores():
    """The TMA store's box is (batch, row, column): an output the nest indexes (row, batch, column), with the
    batch loop inside the rows (gpu-schedule's band order allows it), is stored element by element -- the
    same bits either way."""
    text = """
func.func @bm(%A: memref<3x64x64xf16>, %B: memref<3x64x64xf16>, %C: memref<64x3x64xf16>) {
  %acc = memref.alloc() : memref<64x3x64xf32>
  %cst = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to 64 {
    affine.for %b = 0 to 3 {
      affine.for %j = 0 to 64 {
        affine.store %cst, %acc[%i, %b, %j] : memref<64x3x64xf32>
      }
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %b = 0 to 3 {
      affine.for %j = 0 to 64 {
        affine.for %k = 0 to 64 {
          %0 = affine.load %A[%b, %i, %k] : memref<3x64x64xf16>
          %1 = arith.extf %0 : f16 to f32
          %2 = affine.load %B[%b, %j, %k] : memref<3x64x64xf16>
          %3 = arith.extf %2 : f16 to f32
          %4 = arith.mulf %1, %3 : f32
          %5 = affine.load %acc[%i, %b, %j] : memref<64x3x64xf32>
          %6 = arith.addf %5, %4 : f32
          affine.store %6, %acc[%i, %b, %j] : memref<64x3x64xf32>
        }
      }
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %b = 0 to 3 {
      affine.for %j = 0 to 64 {
        %7 = affine.load %acc[%i, %b, %j] : memref<64x3x64xf32>
        %8 = arith.truncf %7 : f32 to f16
        affine.store %8, %C[%i, %b, %j] : memref<64x3x64xf16>
      }
    }
  }
  memref.dealloc %acc : memref<64x3x64xf32>
  return
}
"""
    out, decision = check_same_bits(air.parse(text), "tma-store=true")
    assert "stored by TMA" not in decision.message
