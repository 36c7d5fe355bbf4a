"""``gpu-map-mma``: contractions of 16-bit operands on the matrix units (issue 18 item 2).

On the interpreter's launch emulation (every block and thread; ``ldmatrix``/``mma.sync`` run once
all 32 lanes of a warp reach them; asynchronous copies land at the wait that retires their group),
in both thread orders, the mapped kernels give exactly the bits of the original nests: the inputs
are small multiples of 1/4 (``library_inputs``), so every product and every partial sum is exact in
f32 whatever the order of the sums (``mma.sync`` reassociates them). Refused contractions leave the
IR unchanged with the reason in the trace; NVRTC compiles every mapped kernel for sm_80 and sm_90a
without a warning.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cuda_emit import nvrtc_compile

import affine_ir as air
import runtime
from affine_ir.dialects.nvgpu import DeviceAsyncWaitOp, LdMatrixOp, MmaSyncOp
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from affine_ir.types import bf16, f16, f32
from analysis.targets import DEFAULT_GPU, target
from codegen.cuda import emit
from transforms import PassManager
from transforms.gpu.map_mma import swizzle
from transforms.gpu.map_mma_plan import (
    MmaKind,
    MmaTiles,
    choose_mma_tiles,
    estimate_mma_seconds,
    overhangs,
    stage_count,
)
from transforms.pipelines import GPU_PIPELINE

L = air.library
#: What the GPU pipeline runs before gpu-map-mma: the contraction nests with scalar sums.
PREPARE = ("canonicalize,affine-loop-fusion,affine-privatize{dynamic-shapes=false},gpu-expose-parallelism,"
           "affine-scalrep,canonicalize")
#: Small tiles for the interpreter: 32x32 blocks of 2x2 warps (16x16 warp tiles), k step 16.
SMALL = "tile-sizes=32,32,16,2,2"


def prepared(m):
    return PassManager.parse(PREPARE).run(m)


def map_mma(m, options: str = SMALL):
    """(the module after gpu-map-mma, its decisions), from the prepared ``m``."""
    pm = PassManager.parse("gpu-map-mma{" + options + "}")
    out = pm.run(m)
    return out, [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]


def ops_of(m, cls):
    return [op for op in m.walk() if isinstance(op, cls)]


def check_same_bits(m, options: str = SMALL, seed: int = 0):
    """Map the prepared ``m``, check it was mapped and runs to the original's bits in both orders."""
    before = prepared(m)
    out, decisions = map_mma(before, options)
    assert [d.kind for d in decisions] == ["applied"], [str(d) for d in decisions]
    args = library_inputs(m, seed)
    want = run(m, args)
    assert np.count_nonzero(want[-1]) > want[-1].size // 4  # the output: many nonzero sums (ReLU zeroes half)
    assert_same_bits_in_both_thread_orders(want, out, args, context=str(decisions[0]))
    return out, decisions[0]


CASES = {
    "matmul f16": lambda: L.matmul(64, 32, 32, dtype="f16"),
    "matmul bf16": lambda: L.matmul(32, 64, 48, dtype="bf16"),
    "matmul f16 A transposed": lambda: L.matmul(64, 32, 32, dtype="f16", transpose_a=True),
    "matmul bf16 B transposed": lambda: L.matmul(32, 64, 32, dtype="bf16", transpose_b=True),
    "matmul f16 both transposed": lambda: L.matmul(32, 32, 64, dtype="f16", transpose_a=True, transpose_b=True),
    "matmul f16 accumulate": lambda: L.matmul(32, 32, 32, dtype="f16", accumulate=True),
    "batch matmul f16": lambda: L.batch_matmul(3, 32, 32, 32, dtype="f16"),
    "batch matmul bf16 B transposed": lambda: L.batch_matmul(2, 32, 64, 16, dtype="bf16", transpose_b=True),
    "mlp f16 relu": lambda: L.mlp(32, 64, 32, dtype="f16", activation="relu"),
    "mlp bf16 gelu": lambda: L.mlp(32, 32, 32, dtype="bf16"),
    # partial tiles: copies past a size zero-filled (srcElements 0), the epilogue guarded
    "matmul f16 33x40, k 24 (partial)": lambda: L.matmul(33, 40, 24, dtype="f16"),
    "matmul f16 A transposed 40x24, k 40 (partial)": lambda: L.matmul(40, 24, 40, dtype="f16", transpose_a=True),
    "matmul bf16 B transposed 17x9, k 56 (partial)": lambda: L.matmul(17, 9, 56, dtype="bf16", transpose_b=True),
    "batch matmul f16 B transposed 20x30, k 8 (partial)": lambda: L.batch_matmul(2, 20, 30, 8, dtype="f16",
                                                                                transpose_b=True),
    "mlp f16 gelu 50x48, k 40 (partial)": lambda: L.mlp(50, 48, 40, dtype="f16"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_mapped_contractions_give_the_original_bits_in_both_thread_orders(name):
    m = CASES[name]()
    out, decision = check_same_bits(m)
    assert "on the matrix units" in decision.message
    ldm = ops_of(out, LdMatrixOp)
    f = m.functions[0]
    # ldmatrix transposes exactly for the operands contiguous along the rows/columns (not along k)
    a_t = "A transposed" in name or "both" in name
    b_t = not ("B transposed" in name or "both" in name)
    a_ops = [op for op in ldm if op.results[0].name_hint == "a"]
    b_ops = [op for op in ldm if op.results[0].name_hint == "b"]
    assert {op.num_tiles for op in a_ops} == {4} and {op.num_tiles for op in b_ops} <= {2, 4}
    assert a_ops and b_ops and {op.transpose for op in a_ops} == {a_t} and {op.transpose for op in b_ops} == {b_t}
    assert ops_of(out, MmaSyncOp) and f.name


@pytest.mark.parametrize("options", ["tile-sizes=32,32,16,2,2 stages=2", "tile-sizes=32,32,16,2,2 stages=3",
                                     "tile-sizes=32,64,16,1,2 stages=4", "tile-sizes=64,32,16,2,1",
                                     "tile-sizes=32,32,32,2,2 stages=3",
                                     "tile-sizes=16,32,16,1,2 stages=2"])
def test_tile_shapes_and_stage_counts(options):
    """Warps of one or two fragments in either direction, 2 to 4 stages over k of 64 (4 steps of 16:
    the loop and the peeled steps; 2 steps of 32 in 3 stages: the peeled steps alone), the same bits."""
    out, decision = check_same_bits(L.matmul(64, 64, 64, dtype="f16"), options)
    stages = int(options.split("stages=")[1]) if "stages=" in options else None
    waits = sorted(op.num_groups for op in ops_of(out, DeviceAsyncWaitOp))
    if stages:
        assert f"{stages} stages" in decision.message
        assert max(waits) == stages - 2  # the loop waits for the oldest of S-1 groups in flight
        assert waits[0] == 0  # the last peeled step waits for everything


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("options, b_tiles", [("tile-sizes=32,32,16,2,2", 4), ("tile-sizes=32,48,32,2,2", 2),
                                              ("tile-sizes=16,24,16,1,1 stages=3", 2)])
def test_b_fragments_load_in_pairs_when_the_warp_has_an_even_count(transpose_b, options, b_tiles):
    """An even number of B fragments per warp: one ``ldmatrix.x4`` per pair, split by
    ``vector.extract_strided_slice``; an odd number (3: 24 columns a warp): ``ldmatrix.x2`` each. B
    contiguous along k (``transpose``-free) and along the columns (``.trans``), the same bits."""
    m = L.matmul(32, 48, 64, dtype="f16", transpose_b=transpose_b)
    out, _ = check_same_bits(m, options)
    b_ops = [op for op in ops_of(out, LdMatrixOp) if op.results[0].name_hint == "b"]
    assert b_ops and {op.num_tiles for op in b_ops} == {b_tiles}
    assert {op.transpose for op in b_ops} == {not transpose_b}
    slices = [op for op in out.walk() if op.name == "vector.extract_strided_slice"]
    assert len(slices) == (2 * len(b_ops) if b_tiles == 4 else 0)


def test_grids_past_one_wave_run_in_groups_of_block_rows():
    """More blocks than the target has multiprocessors (8 x 17 tiles of 16 x 8 on the H200's 132):
    block (bx, by) computes a tile of a group of 8 block rows taken column by column; every tile
    is computed once (the same bits), the remap is in the IR as ``tile_row``/``tile_col``; one wave
    keeps the plain order."""
    out, _ = check_same_bits(L.matmul(128, 136, 16, dtype="f16"), "tile-sizes=16,8,16,1,1")
    names = {op.results[0].name_hint for op in out.walk() if op.name == "affine.apply"}
    assert {"tile_row", "tile_col"} <= names
    small, _ = check_same_bits(L.matmul(64, 64, 16, dtype="f16"), "tile-sizes=16,8,16,1,1")  # 32 blocks
    assert "tile_row" not in {op.results[0].name_hint for op in small.walk() if op.name == "affine.apply"}


@pytest.mark.parametrize("make, pairs", [
    (lambda: L.matmul(64, 32, 32, dtype="f16"), True),
    (lambda: L.mlp(32, 64, 32, dtype="bf16"), True),  # bias load, GELU, truncation: then one 2-element store
    (lambda: L.matmul(33, 40, 24, dtype="f16"), True),  # partial rows: the guard of the first column holds both
    (lambda: L.matmul(32, 33, 16, dtype="f16"), False),  # an odd column count: the second column may lie outside
])
def test_the_two_columns_of_a_fragment_row_are_stored_together(make, pairs):
    """Columns 2t and 2t + 1 of a fragment row are adjacent in the output: one ``affine.vector_store``
    of 2 elements (the CUDA backend prints one 4-byte store where it proves the alignment), the
    same bits; not where the column count is odd."""
    out, _ = check_same_bits(make())
    vector_stores = [op for op in out.walk() if op.name == "affine.vector_store"]
    scalar_stores = [op for op in out.walk() if op.name == "affine.store"]
    assert bool(vector_stores) == pairs and bool(scalar_stores) != pairs
    assert all(op.value.type.shape == (2,) for op in vector_stores)


def test_the_4096_matmul_stores_four_byte_pairs():
    from transforms.pipelines import gpu_pipeline

    src = runtime.compile(L.matmul(256, 256, 256, dtype="f16"), target="cuda", pipeline=gpu_pipeline()).source
    assert src.count("*reinterpret_cast<air_v2f16*>(&C[") > 0 and "C[" not in src.replace("(&C[", "")


def _at_thread(v, tid_arg, tid: int) -> int:
    """The value of ``v`` (an expression of the thread id: affine.apply, arith.xori, constants) at ``tid``."""
    if v is tid_arg:
        return tid
    op = v.owner
    if op.name == "arith.constant":
        return op.attributes["value"].value if hasattr(op.attributes["value"], "value") else op.attributes["value"]
    args = [_at_thread(x, tid_arg, tid) for x in op.operands]
    if op.name == "affine.apply":
        n = op.map.num_dims
        return op.map.evaluate(args[:n], args[n:])[0]
    assert op.name == "arith.xori", op.name
    return args[0] ^ args[1]


@pytest.mark.parametrize("make, options", [
    (lambda: L.matmul(32, 16, 32, dtype="f16"), "tile-sizes=16,8,16,1,1"),  # B: 16 chunks a stage, 32 threads
    (lambda: L.matmul(32, 16, 32, dtype="f16", transpose_a=True), "tile-sizes=16,8,16,1,1"),
    (lambda: L.conv2d(1, 3, 6, 6, 8, 3, 3, padding=1, dtype="f16"), "tile-sizes=16,8,16,1,1"),  # gathered
])
def test_each_thread_writes_its_own_shared_slots(make, options):
    """More threads than a stage has chunks (elements, gathered): the extra threads write padding rows
    of the ring, so no two threads write one slot in a step (compute-sanitizer's racecheck flagged
    the benign double writes of the same bytes); the tile's slots are all written (the same bits)."""
    out, _ = check_same_bits(make(), options)
    launch = next(op for op in out.walk() if op.name == "gpu.launch")
    tid_arg = launch.body.args[3]
    first = [op for op in launch.walk() if op.name in ("nvgpu.device_async_copy", "memref.store")
             and op.parent_op is launch]  # the prologue's copies of step 0 and step 1 ...
    for ring in {op.operands[1] if op.name == "memref.store" else op.dst for op in first}:
        ops = [op for op in first if (op.operands[1] if op.name == "memref.store" else op.dst) is ring]
        idx = [list(op.operands[2:]) if op.name == "memref.store" else list(op.dst_indices) for op in ops]
        slots = [tuple(_at_thread(v, tid_arg, t) for v in ix) for ix in idx for t in range(32)]
        assert len(slots) == len(set(slots)), "two threads write one shared slot"


def test_a_ring_wait_that_lets_the_needed_group_stay_in_flight_is_caught():
    """The emulation performs a thread's copies only when a wait retires their group: a wait with one
    group too many in flight leaves the stage stale, and the interpreter refuses the named group."""
    m = L.matmul(32, 32, 64, dtype="f16")
    out, _ = map_mma(prepared(m), SMALL + " stages=3")
    loop_wait = next(op for op in ops_of(out, DeviceAsyncWaitOp) if op.num_groups == 1)
    text = str(out).replace("numGroups = 1", "numGroups = 2", 1)
    assert text != str(out) and loop_wait
    with pytest.raises(air.InterpretError, match="still pending after the wait"):
        run(text, library_inputs(m))


def test_the_swizzle_makes_ldmatrix_phases_and_copies_conflict_free():
    """For rows of 2 to 16 chunks of 16 bytes, the 8 rows of an ldmatrix phase (8 consecutive rows,
    one logical chunk) and the chunks 8 consecutive threads copy (consecutive chunks of consecutive
    rows) fall in 8 distinct 16-byte bank groups; without the swizzle the phase conflicts."""
    for chunks in (2, 4, 8, 16):
        d0 = air.AffineExpr.dim(0)
        swz = swizzle(d0, chunks)

        def phys(row, c, swz=swz):
            return c ^ swz.evaluate([row])

        for base in range(0, 32, 8):
            for c in range(chunks):
                groups = {(row * chunks + phys(row, c)) % 8 for row in range(base, base + 8)}
                assert len(groups) == 8, (chunks, base, c)
                assert len({(row * chunks + c) % 8 for row in range(base, base + 8)}) < 8
        for first in range(0, 64, 8):
            idx = range(first, first + 8)
            assert len({(i // chunks * chunks + phys(i // chunks, i % chunks)) % 8 for i in idx}) == 8
        for row in range(32):
            assert sorted(phys(row, c) for c in range(chunks)) == list(range(chunks))  # a permutation per row
    assert swizzle(air.AffineExpr.dim(0), 1) is None


def test_the_swizzle_permutes_every_row_of_any_chunk_count():
    """Rows of 3, 5, 6, 12, 24 ... chunks (blocks of 24 or 48 columns, chosen by the tile-sizes option):
    the swizzle permutes each row's chunks (it once XORed chunk 5 of a 6-chunk row to 6, past the row:
    the copies wrote outside the ring)."""
    d0 = air.AffineExpr.dim(0)
    for chunks in range(1, 41):
        swz = swizzle(d0, chunks)
        for row in range(64):
            x = swz.evaluate([row]) if swz is not None else 0
            assert sorted(c ^ x for c in range(chunks)) == list(range(chunks)), (chunks, row)


# -- refusals: the IR unchanged, the reason in the trace ------------------------------------------------------------
NON_AFFINE = """
func.func @gather_mm(%A: memref<32x32xf16>, %B: memref<32x32xf16>, %P: memref<32xindex>, %C: memref<32x32xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      %r = affine.for %k = 0 to 32 iter_args(%acc = %z) -> (f32) {
        %p = affine.load %P[%k] : memref<32xindex>
        %a = memref.load %A[%i, %p] : memref<32x32xf16>
        %x = arith.extf %a : f16 to f32
        %b = affine.load %B[%k, %j] : memref<32x32xf16>
        %y = arith.extf %b : f16 to f32
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %m : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<32x32xf32>
    }
  }
  return
}
"""

PADDED_WITH_ONE = """
func.func @pad_one(%A: memref<32x40xf16>, %B: memref<32x32xf16>, %C: memref<32x32xf32>) {
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 32 {
      %r = affine.for %k = 0 to 32 iter_args(%acc = %z) -> (f32) {
        %x = affine.if affine_set<(d0) : (d0 - 4 >= 0)>(%k) -> f32 {
          %a = affine.load %A[%i, %k] : memref<32x40xf16>
          %e = arith.extf %a : f16 to f32
          affine.yield %e : f32
        } else {
          affine.yield %one : f32
        }
        %b = affine.load %B[%k, %j] : memref<32x32xf16>
        %y = arith.extf %b : f16 to f32
        %m = arith.mulf %x, %y : f32
        %s = arith.addf %acc, %m : f32
        affine.yield %s : f32
      }
      affine.store %r, %C[%i, %j] : memref<32x32xf32>
    }
  }
  return
}
"""

REFUSED = {
    "f32 without TF32": (lambda: L.matmul(32, 32, 32, dtype="f32"), "rounded to TF32"),
    "f64": (lambda: L.matmul(32, 32, 32, dtype="f64"), "f64 has no matrix-unit support"),
    "non-affine read": (lambda: air.parse(NON_AFFINE), "memref.load"),
    "padding that is not zero": (lambda: air.parse(PADDED_WITH_ONE), "not zero outside its window"),
    "not a contraction": (lambda: L.softmax((32, 32), dtype="f16"), "not a contraction"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refusals_leave_the_ir_unchanged_with_the_reason(name):
    make, reason = REFUSED[name]
    before = prepared(make())
    text = str(before)
    out, decisions = map_mma(before, SMALL)
    assert str(out) == text
    assert decisions and all(d.kind == "note" for d in decisions)
    assert any(reason in d.message and "left for gpu-schedule (SIMT)" in d.message for d in decisions), \
        [d.message for d in decisions]


def test_the_gpu_pipeline_maps_f16_and_leaves_f32_to_gpu_schedule():
    for dtype, mapped in (("f16", True), ("bf16", True), ("f32", False)):
        pm = PassManager.parse(GPU_PIPELINE)
        m = L.matmul(64, 64, 64, dtype=dtype)
        out = pm.run(m)
        mma = [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]
        sched = [d for d in pm.trace.decisions if d.pass_name == "gpu-schedule" and d.kind == "applied"]
        assert bool(ops_of(out, MmaSyncOp)) == mapped
        assert [d.kind for d in mma] == ["applied" if mapped else "note"], [str(d) for d in mma]
        assert bool(sched) != mapped  # the SIMT schedule maps what is left
        args = library_inputs(m)
        assert_same_bits_in_both_thread_orders(run(m, args), out, args)


def test_runtime_compile_without_a_gpu_prints_the_mma_kernel():
    """Without a GPU and a pipeline: sm_90 (the default arch) gets warpgroup MMA, sm_80 and the GPU pipeline
    without wgmma the mma.sync kernel."""
    from transforms.pipelines import GPU_PIPELINE

    for arch, pipeline in (("sm_90", GPU_PIPELINE), ("sm_80", None)):
        k = runtime.compile(L.matmul(64, 64, 64, dtype="f16"), target="cuda", arch=arch, pipeline=pipeline)
        assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in k.source
        assert "cp.async.cg.shared.global" in k.source and "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in k.source
    k = runtime.compile(L.matmul(64, 64, 64, dtype="f16"), target="cuda")
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in k.source and "mma.sync" not in k.source


# -- CUDA: NVRTC compiles every mapped kernel ---------------------------------------------------------------------
COMPILED = {
    "matmul f16 256 (default tiles)": (lambda: L.matmul(256, 256, 256, dtype="f16"), ""),
    "matmul bf16 B transposed 128x256 tiles": (lambda: L.matmul(256, 512, 128, dtype="bf16", transpose_b=True), ""),
    "matmul f16 A transposed": (lambda: L.matmul(128, 128, 64, dtype="f16", transpose_a=True), ""),
    "batch matmul f16": (lambda: L.batch_matmul(4, 64, 64, 64, dtype="f16"), ""),
    "mlp f16 gelu": (lambda: L.mlp(128, 128, 64, dtype="f16"), ""),
    "matmul f16 small tiles": (lambda: L.matmul(64, 64, 64, dtype="f16"), SMALL),
    "matmul bf16 16-row tiles": (lambda: L.matmul(16, 256, 128, dtype="bf16"), ""),
    "matmul f16 partial tiles": (lambda: L.matmul(100, 72, 40, dtype="f16"), ""),
    "mlp bf16 partial tiles": (lambda: L.mlp(50, 48, 40, dtype="bf16"), SMALL),
}


@pytest.mark.parametrize("name", list(COMPILED))
def test_nvrtc_compiles_the_mapped_kernels_without_a_warning(name):
    make, options = COMPILED[name]
    out, decisions = map_mma(prepared(make()), options)
    assert [d.kind for d in decisions] == ["applied"]
    out = PassManager.parse("gpu-map,canonicalize,cse").run(out)
    src = emit(out).source
    assert "mma.sync.aligned.m16n8k16.row.col.f32." in src and "cp.async.wait_group" in src
    for arch in ("sm_80", "sm_90a"):
        cubin, log = nvrtc_compile(src, arch)
        assert cubin and log == "", f"{arch}: {log}"


# -- tiles and stages from the target -------------------------------------------------------------------------------
def test_tiles_and_stages_come_from_the_target():
    kind = MmaKind(f16, f32)
    big = choose_mma_tiles((1, 4096, 4096, 4096), kind, DEFAULT_GPU)
    assert (big.BM, big.BN, big.warps) == (128, 256, 8) and big.stages == 4
    assert choose_mma_tiles((1, 16, 4096, 4096), kind, DEFAULT_GPU).BM <= 64  # not 8x the rows it needs
    assert choose_mma_tiles((1, 64, 64, 64), kind, DEFAULT_GPU).stages == 3  # k of 2 steps: at most 3 stages
    tiles = MmaTiles(128, 256, 32, 2, 4)
    assert stage_count(tiles, kind, 4096, DEFAULT_GPU) == 4
    small = dataclasses.replace(target("a100"), shared_memory_per_block_optin=2 * tiles.stage_bytes(kind))
    assert stage_count(tiles, kind, 4096, small) == 2
    odd = choose_mma_tiles((1, 33, 64, 64), MmaKind(bf16, f32), DEFAULT_GPU)  # partial tiles count whole
    assert (odd.BM, odd.BN) in {(32, 64), (64, 64)}


def test_a_tie_goes_to_a_tile_not_twice_the_rows_there_are():
    """The NCHW ResNet stem at batch 8 (64 filters x 100352 pixels, k 147): the panels' traffic bounds
    the estimate, 128x256 and 64x128 tie; the 128x256 tile would compute 64 rows never stored."""
    kind, sizes = MmaKind(f16, f32), (1, 64, 100352, 147)
    big, small = (MmaTiles(*cfg).with_stages(2) for cfg in ((128, 256, 32, 2, 4), (64, 128, 32, 2, 2)))
    assert estimate_mma_seconds(sizes, big, kind, DEFAULT_GPU) == estimate_mma_seconds(sizes, small, kind, DEFAULT_GPU)
    assert overhangs(sizes, big) and not overhangs(sizes, small)
    chosen = choose_mma_tiles(sizes, kind, DEFAULT_GPU, most=2)
    assert (chosen.BM, chosen.BN) == (64, 128)


def test_bad_options_are_refused():
    for text in ("gpu-map-mma{tile-sizes=32,32,16}", "gpu-map-mma{stages=1}", "gpu-map-mma{tile-sizes=0,32,16,2,2}"):
        with pytest.raises(Exception, match="tile-sizes|stages"):
            PassManager.parse(text)


def test_tiles_that_do_not_fit_the_fragments_are_left_with_the_reason():
    before = prepared(L.matmul(64, 64, 64, dtype="f16"))
    out, decisions = map_mma(before, "tile-sizes=32,32,8,2,2")
    assert str(out) == str(before) and "not a multiple of the fragment's k 16" in decisions[0].message


# -- a property over random small contractions --------------------------------------------------------------------
@settings(max_examples=8, deadline=None)
@given(st.sampled_from(["f16", "bf16"]), st.sampled_from([16, 24, 40, 64]), st.sampled_from([8, 32, 56]),
       st.sampled_from([8, 16, 24, 48]), st.booleans(), st.booleans(), st.integers(1, 2), st.integers(0, 3))
def test_random_small_contractions_keep_their_bits(dtype, m, n, k, ta, tb, batch, seed):
    """Sizes in whole 16-byte chunks (multiples of 8), most of them partial tiles of 16x32, k step 16."""
    mod = (L.matmul(m, n, k, dtype=dtype, transpose_a=ta, transpose_b=tb) if batch == 1 else
           L.batch_matmul(batch, m, n, k, dtype=dtype, transpose_a=ta, transpose_b=tb))
    check_same_bits(mod, f"tile-sizes=16,32,16,1,2 stages={2 + seed % 2}", seed)
