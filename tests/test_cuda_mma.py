"""CUDA C of the matrix-unit and asynchronous-copy ops (issue 18): the ``nvgpu`` ops as inline PTX
and the ``gpu.subgroup_mma_*`` ops through WMMA, printed with the IR's names, compiled by NVRTC for
sm_80 and sm_90a without a warning; refusals name the op."""

from __future__ import annotations

import pytest
from mma_kernels import mma_tile_kernel, wmma_kernel
from test_cuda_emit import body_lines, nvrtc_compile

import affine_ir as air
from codegen.cuda import EmitError, emit

TILES = [("f16", "f32", 16, True), ("f16", "f16", 16, True), ("bf16", "f32", 16, True), ("f32", "f32", 8, False),
         ("i8", "i32", 32, False)]
PTX = {("f16", "f32"): "m16n8k16.row.col.f32.f16.f16.f32", ("f16", "f16"): "m16n8k16.row.col.f16.f16.f16.f16",
       ("bf16", "f32"): "m16n8k16.row.col.f32.bf16.bf16.f32", ("f32", "f32"): "m16n8k8.row.col.f32.tf32.tf32.f32",
       ("i8", "i32"): "m16n8k32.row.col.s32.s8.s8.s32"}


def _compiles_cleanly(source: str) -> None:
    for arch in ("sm_80", "sm_90a"):
        cubin, log = nvrtc_compile(source, arch)
        assert log == "" and cubin, f"{arch}: {log}"


@pytest.mark.parametrize("el, acc, k, b_trans", TILES)
def test_mma_sync_tile_prints_inline_ptx_and_compiles(el, acc, k, b_trans):
    p = emit(air.parse(mma_tile_kernel(el, acc, k, b_trans)))
    src = p.source
    assert f"mma.sync.aligned.{PTX[el, acc]}" in src
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in src
    assert ("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16" in src) == b_trans
    assert "cp.async.cg.shared.global [%0], [%1], 16, %2;" in src
    assert "cp.async.ca.shared.global [%0], [%1], 8, %2;" in src
    assert ("cvt.rna.tf32.f32" in src) == (el == "f32")
    assert "__cvta_generic_to_shared" in src and "__forceinline__" in src
    body = body_lines(p)
    assert body[body.index('asm volatile("cp.async.wait_group 1;" ::: "memory");') + 1] == \
        'asm volatile("cp.async.wait_group 0;" ::: "memory");'
    assert sum(ln == 'asm volatile("cp.async.commit_group;" ::: "memory");' for ln in body) == 2
    frag = f"air_v{k // (2 * max(1, 32 // {'f16': 16, 'bf16': 16, 'f32': 32, 'i8': 8}[el]))}x"
    assert any(ln.startswith(frag) and ln.endswith(" a;") for ln in body)  # the IR's names: %a, %b, %d
    assert any(ln.startswith("air_mma_m16n8k") and ln.endswith("(d.v, a.v, b.v, ci11.v);") for ln in body)
    _compiles_cleanly(src)


@pytest.mark.parametrize("el, acc", [("f16", "f32"), ("f16", "f16"), ("bf16", "f32"), ("i8", "i32")])
def test_wmma_tile_prints_the_wmma_api_and_compiles(el, acc):
    p = emit(air.parse(wmma_kernel(el, acc)))
    src = p.source
    assert "#include <mma.h>" in src
    body = body_lines(p)
    assert "nvcuda::wmma::load_matrix_sync(a, &A[256], 16);" in body
    assert "nvcuda::wmma::load_matrix_sync(b, &B[0], 16);" in body
    assert any("matrix_b" in ln and "col_major> b;" in ln for ln in body)  # transpose: a column-major B
    assert "nvcuda::wmma::mma_sync(c, a, b, z);" in body
    assert "nvcuda::wmma::store_matrix_sync(&D[0], r, 16, nvcuda::wmma::mem_row_major);" in body
    assert any(ln.startswith("for (int i = 0; i < s.num_elements; ++i) s.x[i] =") for ln in body)
    _compiles_cleanly(src)


def test_tf32_wmma_is_refused_with_the_op_named():
    text = wmma_kernel("f16", "f32").replace("xf16", "xf32")
    with pytest.raises(EmitError, match=r"cannot emit 'gpu.subgroup_mma_load_matrix' as CUDA: f32 \(TF32\) WMMA"):
        emit(air.parse(text))


def test_a_partial_extract_is_refused_with_the_op_named():
    text = mma_tile_kernel("f16", "f32", 16, True).replace(
        "      %x00 = vector.extract %d[0, 0] : f32 from vector<2x2xf32>",
        "      %row = vector.extract %d[0] : vector<2xf32> from vector<2x2xf32>\n"
        "      %x00 = vector.extract %row[0] : f32 from vector<2xf32>")
    with pytest.raises(EmitError, match=r"cannot emit 'vector.extract' as CUDA: only the extraction/insertion of one"):
        emit(air.parse(text))
