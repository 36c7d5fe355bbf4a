"""``gpu-map-mma`` on convolutions as implicit GEMM and on operands not in 16-byte chunks (issue 18).

A convolution's reduction is a chain of k loops (``(kh, kw, c)`` for NHWC, ``(c, kh, kw)`` for NCHW)
whose linear index is the GEMM's k; a padded input is a guarded read (zero outside the window).
An operand contiguous in aligned 16-byte chunks along the chain's innermost loop (NHWC input, C a
multiple of 8) or along its side's innermost loop (the HWCF filter along F) keeps the ``cp.async``
path, the padding through ``srcElements`` 0 (zero-filled chunks); any other operand (NCHW windows
and filters, sizes not a multiple of 8) is gathered per element (a guarded load stored into the same
swizzled shared layout). On the interpreter's launch emulation, in both thread orders, the mapped
kernels give the original nests' bits (integer-valued inputs, exact f32 sums); NVRTC compiles them.
"""

from __future__ import annotations

import pytest
from test_cuda_emit import nvrtc_compile
from test_map_mma import check_same_bits, map_mma, ops_of, prepared

import affine_ir as air
from affine_ir.dialects.affine import AffineIfOp
from affine_ir.dialects.memref import StoreOp
from affine_ir.dialects.nvgpu import DeviceAsyncCopyOp, MmaSyncOp
from codegen.cuda import emit
from transforms import PassManager

L = air.library
SMALL = "tile-sizes=32,32,16,2,2"
ASYNC, GATHER = "cp.async 16-byte chunks", "gathered per element"


def conv(layout, N=1, C=8, H=6, W=6, F=16, K=3, **kw):
    return L.conv2d(N, C, H, W, F, K, K, layout=layout, dtype=kw.pop("dtype", "f16"), **kw)


#: name -> (module, staging of A, staging of B)
CASES = {
    # NHWC: A = input (rows n, h, w; k = kh, kw, c), B = HWCF filter (columns f, contiguous along f)
    "NHWC 3x3 pad 1": (lambda: conv("NHWC", padding=1), ASYNC, ASYNC),
    "NHWC 3x3 stride 2 pad 1, batch 2": (lambda: conv("NHWC", N=2, H=7, W=7, stride=2, padding=1), ASYNC, ASYNC),
    "NHWC 3x3 dilation 2 pad 2, bf16": (lambda: conv("NHWC", C=16, H=7, W=5, padding=2, dilation=2,
                                                     dtype="bf16"), ASYNC, ASYNC),
    "NHWC 1x1 stride 2": (lambda: conv("NHWC", C=16, H=8, W=8, F=24, K=1, stride=2), ASYNC, ASYNC),
    "NHWC C=4 (input gathered)": (lambda: conv("NHWC", C=4, H=5, W=5, padding=1), GATHER, ASYNC),
    "NHWC F=12 (filter gathered)": (lambda: conv("NHWC", F=12, H=5, W=5), ASYNC, GATHER),
    # NCHW: A = filter (rows f; k = c, kh, kw: contiguous along the whole window, chunked when C*KH*KW
    # is a multiple of 8), B = input (columns n, h, w)
    "NCHW 3x3 pad 1 (filter along its window)": (lambda: conv("NCHW", padding=1), ASYNC, GATHER),
    "NCHW 3x3 stride 2 pad 1, batch 2, bf16": (lambda: conv("NCHW", N=2, H=7, W=7, C=3, stride=2, padding=1,
                                                           dtype="bf16"), GATHER, GATHER),
    "NCHW 3x3 dilation 2": (lambda: conv("NCHW", C=4, H=9, W=8, dilation=2), GATHER, GATHER),
    "NCHW 1x1 W=8 (input along w)": (lambda: conv("NCHW", C=8, H=4, W=8, F=16, K=1), ASYNC, ASYNC),
    "NCHW 1x1 C=12 (filter gathered)": (lambda: conv("NCHW", C=12, H=4, W=8, F=16, K=1), GATHER, ASYNC),
    "NCHW 1x1 W=4 (input along (h, w): chunks across its rows)": (lambda: conv("NCHW", C=8, H=6, W=4, F=16, K=1),
                                                                  ASYNC, ASYNC),
    "conv2d_bias_relu NCHW pad 1": (lambda: L.conv2d_bias_relu(1, 4, 5, 5, 16, 3, 3, padding=1, dtype="f16"),
                                    GATHER, GATHER),
    # plain matmuls whose operands are not in 16-byte chunks
    "matmul f16 32x33 (B gathered)": (lambda: L.matmul(32, 33, 32, dtype="f16"), ASYNC, GATHER),
    "matmul f16 k 20 (A gathered)": (lambda: L.matmul(32, 32, 20, dtype="f16"), GATHER, ASYNC),
    "matmul bf16 A transposed 21x16, k 13": (lambda: L.matmul(21, 16, 13, dtype="bf16", transpose_a=True),
                                             GATHER, ASYNC),
}


def staging(message: str, side: str) -> str:
    part = message.split(f"; {side} ")[1].split("; ")[0]
    return GATHER if GATHER in part else ASYNC if ASYNC in part else "?"


@pytest.mark.parametrize("name", list(CASES))
def test_convolutions_and_unchunked_operands_give_the_original_bits(name):
    make, a, b = CASES[name]
    out, decision = check_same_bits(make(), SMALL)
    assert (staging(decision.message, "A"), staging(decision.message, "B")) == (a, b), decision.message
    copies, stores = ops_of(out, DeviceAsyncCopyOp), ops_of(out, StoreOp)
    assert bool(copies) == (ASYNC in (a, b))
    assert bool([s for s in stores if s.memref.type.memory_space is not None]) == (GATHER in (a, b))
    assert ops_of(out, MmaSyncOp)


def test_padding_of_a_chunked_operand_zero_fills_its_chunks():
    """The NHWC input's window condition decides each chunk's srcElements (8 or 0) in an affine.if
    whose set holds the padding constraints: no per-element guard, no gathered store."""
    out, decision = check_same_bits(conv("NHWC", padding=1, H=5, W=5), SMALL)
    counts = [cp.src_elements for cp in ops_of(out, DeviceAsyncCopyOp) if cp.src.name_hint == "input"]
    assert counts and all(c is not None and isinstance(c.owner, AffineIfOp) for c in counts)
    assert len(counts[0].owner.condition.constraints) >= 4  # h and w inside [0, H) x [0, W)
    assert not ops_of(out, StoreOp) or all(s.memref.type.memory_space is None for s in ops_of(out, StoreOp))


@pytest.mark.parametrize("stages", [2, 3])
def test_gathered_operands_in_rings_of_two_and_three_stages(stages):
    """Every operand gathered: no copy groups, no waits; the barrier alone orders the ring."""
    out, decision = check_same_bits(conv("NCHW", padding=1, C=3, H=5, W=5), f"{SMALL} stages={stages}")
    assert f"{stages} stages" in decision.message and not ops_of(out, DeviceAsyncCopyOp)


@pytest.mark.parametrize("make,stages", [
    (lambda: L.conv2d(1, 3, 32, 32, 64, 7, 7, stride=2, padding=3, dtype="f16"), 2),  # both gathered
    (lambda: L.conv2d(1, 8, 32, 32, 64, 3, 3, padding=1, dtype="f16"), 4),  # the filter in chunks
    (lambda: L.conv2d(1, 3, 32, 32, 64, 7, 7, stride=2, padding=3, layout="NHWC", dtype="f16"), 4),  # the filter
])
def test_a_ring_of_gathered_operands_only_has_two_stages(make, stages):
    """With every operand gathered, the model's ring has 2 stages (a thread's gathered loads land
    before it stores them: a deeper ring hides nothing); with a chunked operand, as many as fit."""
    out, decision = map_mma(prepared(make()), "")
    assert f"{stages} stages" in decision[0].message, decision[0].message
    assert (stages == 2) == (not ops_of(out, DeviceAsyncCopyOp))


def test_the_prologue_gathers_its_steps_in_one_loop():
    """A gathered operand beside a chunked one: the prologue's S-1 steps copy their chunks one group
    per step (unrolled) and gather their elements in one loop over the steps (one copy of the
    gathers in the code), and the kernel keeps the original's bits (check_same_bits)."""
    out, decision = check_same_bits(conv("NHWC", C=4, H=5, W=5, K=5, padding=2), f"{SMALL} stages=4")
    launch = next(op for op in out.walk() if op.name == "gpu.launch")
    top = [op for op in launch.body.ops]
    loops = [op for op in top if op.name == "affine.for"]
    prologue, kloop = loops[0], loops[1]
    assert prologue.induction_var.name_hint.startswith("kstep_pro")
    assert (prologue.lower_bound_map.single_constant(), prologue.upper_bound_map.single_constant()) == (0, 3)
    assert [s for s in prologue.walk() if isinstance(s, StoreOp)]  # the gathered elements
    assert not [c for c in prologue.walk() if isinstance(c, DeviceAsyncCopyOp)]
    groups = [op for op in top[:top.index(prologue)] if op.name == "nvgpu.device_async_create_group"]
    assert len(groups) == 3  # one per prologue step, before the gathers
    assert kloop.induction_var.name_hint.startswith("kstep")


#: name -> module; NVRTC compiles the mapped kernel with the chosen (default) tiles
COMPILED = {
    "NHWC 3x3 pad 1 (ResNet-50 conv2_x)": lambda: L.conv2d(1, 64, 56, 56, 64, 3, 3, padding=1, layout="NHWC",
                                                           dtype="f16"),
    "NHWC 7x7 stride 2 pad 3, C=8": lambda: L.conv2d(2, 8, 32, 32, 64, 7, 7, stride=2, padding=3, layout="NHWC",
                                                     dtype="bf16"),
    "NCHW 3x3 stride 2 pad 1": lambda: L.conv2d(1, 64, 28, 28, 128, 3, 3, stride=2, padding=1, dtype="f16"),
    "NCHW 1x1": lambda: L.conv2d(2, 64, 14, 14, 256, 1, 1, dtype="f16"),
    "matmul f16 100x33, k 20": lambda: L.matmul(100, 33, 20, dtype="f16"),
}


@pytest.mark.parametrize("name", list(COMPILED))
def test_nvrtc_compiles_the_convolution_kernels(name):
    out, decisions = map_mma(prepared(COMPILED[name]()), "")
    assert [d.kind for d in decisions] == ["applied"], [str(d) for d in decisions]
    out = PassManager.parse("gpu-map,canonicalize,cse").run(out)
    src = emit(out).source
    assert "mma.sync.aligned.m16n8k16.row.col.f32." in src
    for arch in ("sm_80", "sm_90a"):
        cubin, log = nvrtc_compile(src, arch)
        assert cubin and log == "", f"{arch}: {log}"


def _rows_halved(row_length: int) -> air.ModuleOp:
    """A 32x32x32 f16 matmul whose A row is ``A[i floordiv 2, k]`` of ``memref<16 x row_length>``."""
    text = str(L.matmul(32, 32, 32, dtype="f16"))
    text = text.replace("%A: memref<32x32xf16>", f"%A: memref<16x{row_length}xf16>")
    text = text.replace("affine.load %A[%i_0, %k] : memref<32x32xf16>",
                        f"affine.load %A[%i_0 floordiv 2, %k] : memref<16x{row_length}xf16>")
    return air.parse(text)


@pytest.mark.parametrize("row_length, a", [(40, ASYNC), (36, GATHER)])
def test_a_division_outside_the_chunk_moves_it_by_a_multiple_of_the_chunk_or_it_is_gathered(row_length, a):
    """``A[i floordiv 2, k]``: i moves the address only through the division, by the row length; rows
    of 36 f16 (72 bytes) would start chunks off 16 bytes, so A is gathered; rows of 40 keep cp.async."""
    out, decision = check_same_bits(_rows_halved(row_length), SMALL)
    assert staging(decision.message, "A") == a, decision.message

