"""The interpreter's semantics of the matrix-unit and asynchronous-copy ops (issue 18): one warp
computing a 16 x 8 tile with ``device_async_copy`` + ``ldmatrix`` + ``mma.sync`` and a 16 x 16 tile
with the ``gpu.subgroup_mma_*`` ops, against numpy, in both thread orders; fragment ownership per
lane against the PTX ISA's tables restated here element by element; rounding (TF32, f16
accumulation); the collective rules and token checks as located errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mma_kernels import mma_tile_kernel, wmma_kernel

import affine_ir as air
from affine_ir import InterpretError
from affine_ir.interp import mma as W
from affine_ir.interp import reversed_schedule
from affine_ir.interp.memory import Buffer
from affine_ir.interp.semantics import scalar_info

DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "i8": np.int8, "i32": np.int32}
VARIANTS = [("f16", "f32", 16, True), ("f16", "f16", 16, True), ("bf16", "f32", 16, True), ("f16", "f32", 16, False),
            ("f32", "f32", 8, False), ("i8", "i32", 32, False)]


def _inputs(el, acc, k, seed=0, lo=-4, hi=5):
    rng = np.random.default_rng(seed)
    a = rng.integers(lo, hi, (16, k)).astype(DT[el])
    b = rng.integers(lo, hi, (k, 8)).astype(DT[el])
    c = rng.integers(lo, hi, (16, 8)).astype(DT[acc])
    return a, b, c


def _run_tile(m, a, b, c, b_trans, acc):
    d = np.zeros((16, 8), DT[acc])
    air.interpret(m, a, b if b_trans else np.ascontiguousarray(b.T), c, d)
    return d


@pytest.mark.parametrize("el, acc, k, b_trans", VARIANTS)
def test_one_warp_tile_with_async_copy_ldmatrix_and_mma_sync(el, acc, k, b_trans):
    m = air.parse(mma_tile_kernel(el, acc, k, b_trans))
    a, b, c = _inputs(el, acc, k)
    want = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)  # exact: small integers
    assert np.array_equal(_run_tile(m, a, b, c, b_trans, acc).astype(np.int64), want)
    with reversed_schedule():
        assert np.array_equal(_run_tile(m, a, b, c, b_trans, acc).astype(np.int64), want)


def test_int8_products_wrap_to_int32():
    m = air.parse(mma_tile_kernel("i8", "i32", 32, False))
    a, b, c = _inputs("i8", "i32", 32, lo=-128, hi=128)
    c[:] = np.int32(2**31 - 1)
    want = (a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)).astype(np.int32)  # wraps
    got = _run_tile(m, a, b, c, False, "i32")
    assert np.array_equal(got, want) and (got < 0).any()


def test_tf32_inputs_are_rounded_to_nearest_away():
    """1 + 2**-11 is halfway between TF32 neighbours 1 and 1 + 2**-10: rounded away from zero;
    1 + 2**-12 is below half an ulp: rounded down. The accumulator itself stays f32."""
    m = air.parse(mma_tile_kernel("f32", "f32", 8, False))
    a = np.zeros((16, 8), np.float32)
    a[:, 0] = 1 + 2**-11
    a[:, 1] = 1 + 2**-12
    a[:, 2] = -(1 + 2**-11)
    b = np.ones((8, 8), np.float32)
    c = np.full((16, 8), 2**-20, np.float32)
    got = _run_tile(m, a, b, c, False, "f32")
    assert np.all(got == np.float32((1 + 2**-10) + 1 - (1 + 2**-10) + 2**-20))
    assert np.array_equal(W.round_tf32(np.float32([1 + 2**-11, -(1 + 2**-11), 1 + 2**-12, np.inf])),
                          np.float32([1 + 2**-10, -(1 + 2**-10), 1, np.inf]))


def test_f16_accumulation_rounds_to_f16_and_f32_does_not():
    """16 x 128 + 1 = 2049 is not an f16 (its neighbours 2048 and 2050: ties to even give 2048)."""
    a = np.ones((16, 16), np.float16)
    b = np.full((16, 8), 128, np.float16)
    c16, c32 = np.ones((16, 8), np.float16), np.ones((16, 8), np.float32)
    d16 = _run_tile(air.parse(mma_tile_kernel("f16", "f16", 16, True)), a, b, c16, True, "f16")
    d32 = _run_tile(air.parse(mma_tile_kernel("f16", "f32", 16, True)), a, b, c32, True, "f32")
    assert np.all(d16 == 2048) and np.all(d32 == 2049)


def test_without_the_wait_the_shared_tiles_are_read_before_the_copies_land():
    """Copies are performed when a wait retires them: without the waits, ldmatrix reads the
    zero-filled shared buffers and D is C."""
    text = mma_tile_kernel("f16", "f32", 16, True)
    text = "\n".join(ln for ln in text.splitlines() if "device_async_wait" not in ln)
    a, b, c = _inputs("f16", "f32", 16)
    assert np.array_equal(_run_tile(air.parse(text), a, b, c, True, "f32"), c)


# -- whole-warp matrices (gpu.subgroup_mma_*) -----------------------------------------------------------------------


@pytest.mark.parametrize("el, acc", [("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("i8", "i32")])
def test_wmma_tile_with_elementwise_epilogue(el, acc):
    m = air.parse(wmma_kernel(el, acc))
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (32, 16)).astype(DT[el])
    b = rng.integers(-4, 5, (16, 16)).astype(DT[el])
    bias = rng.integers(-30, 30, (16, 16)).astype(DT[acc])
    prod = a[16:].astype(np.int64) @ b.astype(np.int64)
    want = (prod + bias) * bias if acc == "i32" else np.maximum(prod + bias.astype(np.int64), 0)
    for reverse in (False, True):
        d = np.zeros((16, 16), DT[acc])
        if reverse:
            with reversed_schedule():
                air.interpret(m, a, np.ascontiguousarray(b.T), bias, d)
        else:
            air.interpret(m, a, np.ascontiguousarray(b.T), bias, d)
        assert np.array_equal(d.astype(np.int64), want)


# -- fragment ownership: the PTX ISA's tables, restated per element -------------------------------------------------


def ptx_a(i: int, lane: int, kind: str) -> tuple[int, int]:
    """(row, col) of element a_i of ``lane`` (PTX ISA, "Matrix Fragments for mma.m16n8k*")."""
    g, t = lane >> 2, lane % 4
    if kind == "f16":  # m16n8k16 .f16/.bf16: a0..a7
        row = g if i < 2 or 4 <= i < 6 else g + 8
        col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
    elif kind == "tf32":  # m16n8k8 .tf32: a0..a3
        row = g if i in (0, 2) else g + 8
        col = t if i < 2 else t + 4
    else:  # m16n8k32 .s8: a0..a15
        row = g if i < 4 or 8 <= i < 12 else g + 8
        col = t * 4 + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def ptx_b(i: int, lane: int, kind: str) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    if kind == "f16":
        row = t * 2 + (i & 1) + (8 if i >= 2 else 0)
    elif kind == "tf32":
        row = t if i == 0 else t + 4
    else:
        row = t * 4 + (i & 3) + (16 if i >= 4 else 0)
    return row, g


def ptx_c(i: int, lane: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


SHAPES = {"f16": (16, (4, 2), (2, 2), np.float16, np.float32), "tf32": (8, (4, 1), (2, 1), np.float32, np.float32),
          "s8": (32, (4, 4), (2, 4), np.int8, np.int32)}


def _fragments(matrix, shape, where):
    out = []
    for lane in range(32):
        flat = [matrix[where(i, lane)] for i in range(shape[0] * shape[1])]
        out.append(np.array(flat, matrix.dtype).reshape(shape))
    return out


@given(kind=st.sampled_from(sorted(SHAPES)), seed=st.integers(0, 2**32 - 1))
def test_mma_sync_lane_ownership_matches_the_ptx_tables(kind, seed):
    """Random integer-valued A, B, C distributed to the lanes by the PTX tables: every lane's D
    fragment holds the PTX-owned elements of numpy's A @ B + C, exactly."""
    k, ashape, bshape, dt, acc = SHAPES[kind]
    rng = np.random.default_rng(seed)
    lim = 100 if kind == "s8" else 8
    a = rng.integers(-lim, lim, (16, k)).astype(dt)
    b = rng.integers(-lim, lim, (k, 8)).astype(dt)
    c = rng.integers(-1000, 1000, (16, 8)).astype(acc)
    lanes = list(zip(_fragments(a, ashape, lambda i, ln: ptx_a(i, ln, kind)),
                     _fragments(b, bshape, lambda i, ln: ptx_b(i, ln, kind)),
                     _fragments(c, (2, 2), ptx_c)))
    d = W.mma_sync(lanes, k, tf32=kind == "tf32")
    want = a.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64)
    for lane in range(32):
        assert d[lane].shape == (2, 2)
        for i in range(4):
            assert d[lane].reshape(-1)[i] == want[ptx_c(i, lane)]


@given(seed=st.integers(0, 2**32 - 1), tiles=st.sampled_from([1, 2, 4]), trans=st.booleans())
def test_ldmatrix_gives_each_lane_its_ptx_fragment(seed, tiles, trans):
    """ldmatrix m8n8.x{1,2,4}[.trans].b16 from row addresses the lanes give (PTX ISA, ldmatrix):
    lane l gets elements (l / 4, 2 (l % 4) + {0, 1}) of each 8 x 8 matrix, transposed with .trans."""
    rng = np.random.default_rng(seed)
    mats = rng.integers(-1000, 1000, (tiles, 8, 8)).astype(np.float16)
    shared = np.zeros((64, 16), np.float16)  # matrix m's row r at row 8m + r (a permutation of rows)
    perm = rng.permutation(64)[:8 * tiles]
    for lane in range(8 * tiles):
        shared[perm[lane], 8:] = mats[lane // 8, lane % 8]
    buf = Buffer(shared, scalar_info(air.types.f16))
    lanes = [(buf, (int(perm[ln]) if ln < 8 * tiles else 0, 8)) for ln in range(32)]
    got = W.ldmatrix(lanes, tiles, trans, (tiles, 2))
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for m in range(tiles):
            want = [mats[m, 2 * t, g], mats[m, 2 * t + 1, g]] if trans else [mats[m, g, 2 * t], mats[m, g, 2 * t + 1]]
            assert list(got[lane][m]) == want


# -- the rules, as located errors ------------------------------------------------------------------------------------


def test_a_divergent_collective_names_the_op_and_the_lanes():
    lines = mma_tile_kernel("f16", "f32", 16, True).splitlines()
    k = next(i for i, ln in enumerate(lines) if "nvgpu.mma.sync" in ln)
    lines[k] = "      affine.if affine_set<(d0) : (15 - d0 >= 0)>(%tx) {\n" + lines[k].replace("%d =", "%dd =") + \
        "\n      }\n      %d = arith.constant dense<0.0> : vector<2x2xf32>"
    m = air.parse("\n".join(lines))
    a, b, c = _inputs("f16", "f32", 16)
    with pytest.raises(InterpretError, match=r"'nvgpu.mma.sync': the lanes of warp 0 .* diverge at a warp-collective "
                                             r"op: lane 0 .* lane 16 .*reached the end of the body"):
        _run_tile(m, a, b, c, True, "f32")


def test_a_warp_needs_32_threads():
    m = air.parse(mma_tile_kernel("f16", "f32", 16, True).replace("%sx = %c32", "%sx = %c16").replace(
        "%c32 = arith.constant 32 : index", "%c32 = arith.constant 32 : index\n  %c16 = arith.constant 16 : index"))
    a, b, c = _inputs("f16", "f32", 16)
    with pytest.raises(InterpretError, match=r"'nvgpu.ldmatrix'.* needs the 32 lanes of a warp, but warp 0 .* has 16"):
        _run_tile(m, a, b, c, True, "f32")


def test_subgroup_ops_need_one_value_per_warp():
    m = air.parse(wmma_kernel("f16", "f32").replace("%A[%c16, %c0]", "%A[%tx, %c0]").replace(
        "memref<32x16xf16>", "memref<48x16xf16>"))
    with pytest.raises(InterpretError, match=r"'gpu.subgroup_mma_load_matrix'.*lanes 0 and 1 of the warp give "
                                             r"different memrefs and indices"):
        air.interpret(m, np.zeros((48, 16), np.float16), np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float32),
                      np.zeros((16, 16), np.float32))


def test_tile_out_of_bounds_is_located():
    m = air.parse(wmma_kernel("f16", "f32").replace("%A[%c16, %c0] leadDimension 16", "%A[%c16, %c0] leadDimension 17"))
    with pytest.raises(InterpretError, match=r"'gpu.subgroup_mma_load_matrix' of %A.*out of bounds"):
        air.interpret(m, np.zeros((32, 16), np.float16), np.zeros((16, 16), np.float16), np.zeros((16, 16), np.float32),
                      np.zeros((16, 16), np.float32))


def test_a_misaligned_ldmatrix_row_is_an_error():
    m = air.parse(mma_tile_kernel("f16", "f32", 16, True).replace(
        "affine_map<(d0) -> ((d0 floordiv 16) * 8)>(%tx)", "affine_map<(d0) -> ((d0 floordiv 16) * 7)>(%tx)"))
    a, b, c = _inputs("f16", "f32", 16)
    with pytest.raises(InterpretError, match=r"'nvgpu.ldmatrix' of %sA.*lane 16 gives a row address that is not "
                                             r"16-byte aligned"):
        _run_tile(m, a, b, c, True, "f32")


def test_a_group_must_name_every_pending_copy():
    text = mma_tile_kernel("f16", "f32", 16, True)
    text = text.replace("      %ga = nvgpu.device_async_create_group %ta\n", "")
    text = text.replace("%gb = nvgpu.device_async_create_group %tb", "%gb = nvgpu.device_async_create_group %tb\n"
                        "      %ga = arith.constant 0 : index")
    text = text.replace("      nvgpu.device_async_wait %ga numGroups = 1\n", "")
    m = air.parse(text)
    a, b, c = _inputs("f16", "f32", 16)
    with pytest.raises(InterpretError, match=r"'nvgpu.device_async_create_group'.*the tokens name not all of the "
                                             r"thread's pending copies"):
        _run_tile(m, a, b, c, True, "f32")


def test_a_wait_must_complete_the_group_it_names():
    text = mma_tile_kernel("f16", "f32", 16, True).replace("nvgpu.device_async_wait %gb numGroups = 0",
                                                           "nvgpu.device_async_wait %gb numGroups = 1")
    a, b, c = _inputs("f16", "f32", 16)
    with pytest.raises(InterpretError, match=r"'nvgpu.device_async_wait'.*still pending after the wait"):
        _run_tile(air.parse(text), a, b, c, True, "f32")


def test_collective_ops_outside_a_launch_are_refused():
    m = air.parse("""
func.func @f(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  %d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [16, 8, 16]
         : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}""")
    with pytest.raises(InterpretError, match=r"cannot interpret 'nvgpu.mma.sync' \(outside a gpu.launch"):
        air.interpret(m, np.zeros((4, 2), np.float16), np.zeros((2, 2), np.float16), np.zeros((2, 2), np.float32))


ROW_CROSSING_COPY = """func.func @f(%src: memref<4x6xf16>, %out: memref<8xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = arith.constant ROW : index
  %col = arith.constant COL : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %ring = memref.alloc() : memref<1x8xf16, #gpu.address_space<workgroup>>
    %t = nvgpu.device_async_copy %src[%row, %col], %ring[%c0, %c0], 8
           : memref<4x6xf16> to memref<1x8xf16, #gpu.address_space<workgroup>>
    %g = nvgpu.device_async_create_group %t
    nvgpu.device_async_wait %g numGroups = 0
    affine.for %i = 0 to 8 {
      %v = memref.load %ring[%c0, %i] : memref<1x8xf16, #gpu.address_space<workgroup>>
      memref.store %v, %out[%i] : memref<8xf16>
    }
    gpu.terminator
  }
  return
}"""


def test_an_async_copy_reads_on_past_the_end_of_its_source_row():
    """The source elements are contiguous in memory (an NCHW filter read along its whole window, a
    chunk of 8 spanning rows of 6): the row-major buffer is read on into the next row."""
    src = np.arange(24, dtype=np.float16).reshape(4, 6)
    out = np.zeros(8, np.float16)
    air.interpret(air.parse(ROW_CROSSING_COPY.replace("ROW", "1").replace("COL", "2")), src, out)
    assert out.tolist() == list(range(8, 16))


def test_an_async_copy_past_the_end_of_its_source_buffer_is_out_of_bounds():
    m = air.parse(ROW_CROSSING_COPY.replace("ROW", "3").replace("COL", "0"))
    with pytest.raises(InterpretError, match=r"'nvgpu.device_async_copy'.*out of bounds"):
        air.interpret(m, np.zeros((4, 6), np.float16), np.zeros(8, np.float16))
