# ruff: noqa: E501  (MLIR text in strings keeps its long lines)
"""Implicit-GEMM NHWC convolutions on warpgroup MMA (``gpu-map-mma{wgmma=true wgmma-conv=true}``, issue 19): each k
step's A tile is one TMA box of the input window (the padding TMA's zero fill), B the HWCF filter's 64 x 64 boxes.

On the interpreter, the mapped kernels give the nest's bits in every schedule (partial pixel blocks along each
coordinate, 1x1 windows whose loops canonicalization removed, split-K, clusters, the pingpong schedule); what the
path does not take is refused with the reason and stays on ``mma.sync``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_map_wgmma import assert_nvrtc_compiles, check_same_bits, map_wgmma, ops_of

import affine_ir as air
from affine_ir.dialects.nvgpu_hopper import TmaAsyncLoadOp
from transforms import PassManager

L = air.library
ON = "wgmma-conv=true"


def conv(n, c, hw, f, k, padding, dtype="f16", stride=1, layout="NHWC"):
    h, w = hw
    return L.conv2d(n, c, h, w, f, k, k, stride=stride, padding=padding, layout=layout, dtype=dtype)


CASES = {
    "f16 3x3 pad 1, partial blocks": (lambda: conv(2, 64, (5, 6), 64, 3, 1), "wgmma-tiles=64,64,1 stages=2"),
    "bf16 1x1, one image (loops removed)": (lambda: conv(1, 128, (5, 9), 64, 1, 0, "bf16"), "stages=2"),
    "f16 5x5 pad 2": (lambda: conv(1, 64, (6, 6), 64, 5, 2), "wgmma-tiles=64,64,1 stages=3"),
    "f16 split-K": (lambda: conv(1, 64, (4, 4), 64, 3, 1), "wgmma-tiles=64,64,1 split-k=3 stages=2"),
    "f16 one output column (its loop removed)": (lambda: conv(1, 64, (4, 3), 64, 3, 0), "stages=2"),
    "f16 clusters of 2": (lambda: conv(2, 64, (8, 8), 128, 3, 1), "wgmma-tiles=64,128,1 wgmma-cluster=2 stages=2"),
    "bf16 pingpong": (lambda: conv(2, 64, (5, 6), 64, 3, 1, "bf16"),
                      "wgmma-tiles=64,64,2 wgmma-schedule=pingpong persistent-blocks=2 stages=2"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_convolutions_give_the_original_bits(name):
    build, options = CASES[name]
    out, decision = check_same_bits(build(), f"{ON} {options}")
    assert "implicit GEMM: each k step's A tile one TMA box of" in decision.message, decision.message
    boxes = [op.descriptor.type.tensor.shape for op in ops_of(out, TmaAsyncLoadOp)]
    assert all(len(b) == 4 for b in boxes)
    bn, bh, bw, ch = boxes[0]
    rows = int(decision.message.split("block tile ")[1].split("x")[0])
    assert bn * bh * bw == rows and ch == 64 and all(b == (1, 1, 64, 64) for b in boxes[1:])


def test_the_pixel_block_wastes_the_fewest_rows():
    from transforms.gpu.map_wgmma_conv import ConvGeometry

    g = ConvGeometry(8, (56, 56), (3, 3), 64, (1, 1))
    assert g.with_box(128).box == (2, 8, 8) and g.with_box(128).tiles == 4 * 7 * 7  # no pixel past an edge
    g = ConvGeometry(1, (56, 56), (3, 3), 64, (1, 1))
    assert g.with_box(128).tiles * 128 == 64 * 56  # one image: 8 of every 64 columns wasted, no more
    g = ConvGeometry(8, (7, 7), (3, 3), 512, (1, 1))
    assert g.with_box(128).box == (2, 8, 8)


@pytest.mark.parametrize("build, why", [
    (lambda: conv(1, 64, (8, 8), 64, 3, 1, stride=2), "strided or dilated windows are not built"),
    (lambda: conv(1, 8, (8, 8), 64, 3, 1), "8 channels: a multiple of 64"),
    (lambda: conv(1, 64, (8, 8), 64, 3, 1, layout="NCHW"), "not an NHWC convolution"),
])
def test_what_the_implicit_gemm_does_not_take_stays_on_mma_sync_with_the_reason(build, why):
    _, decisions = map_wgmma(build(), ON)
    assert decisions[0].kind == "applied" and "m16n8" in decisions[0].message
    assert "not on warpgroup MMA: " in decisions[0].message and why in decisions[0].message, decisions[0].message


def test_block_rows_that_are_no_block_of_pixels_are_refused():
    _, decisions = map_wgmma(conv(1, 64, (8, 8), 64, 3, 1), f"{ON} wgmma-tiles=192,64,3")
    assert "not on warpgroup MMA: block rows 192 are not a block of output pixels" in decisions[0].message


def test_k_is_split_into_whole_steps_only():
    """9 k steps (3x3 by 64 channels) do not split in 2: a step past K would shift the input window onto real
    pixels (whose Inf or NaN times the filter's zero fill would reach the sums), so k is not split; in 3 it is."""
    _, d = map_wgmma(conv(1, 64, (4, 4), 64, 3, 1), f"{ON} wgmma-tiles=64,64,1 split-k=2")
    assert "implicit GEMM" in d[0].message and "slices" not in d[0].message
    _, d = map_wgmma(conv(1, 64, (4, 4), 64, 3, 1), f"{ON} wgmma-tiles=64,64,1 split-k=3")
    assert "k split in 3 slices" in d[0].message


def _prepared(module) -> str:
    """The text of ``module`` after the passes that run before gpu-map-mma."""
    from test_map_wgmma import PREPARE

    return str(PassManager.parse(PREPARE).run(module))


def _decision(text: str) -> str:
    """What gpu-map-mma{wgmma=true wgmma-conv=true} says of the one nest in ``text``."""
    pm = PassManager.parse(f"gpu-map-mma{{wgmma=true {ON}}}")
    pm.run(air.parse(text))
    (d,) = [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]
    return d.message


def test_a_guarded_filter_read_is_refused():
    text = _prepared(conv(1, 64, (4, 4), 64, 3, 1))
    load = next(line for line in text.splitlines() if "affine.load %filter" in line)
    value = load.split("=")[0].strip()
    ext = next(line for line in text.splitlines() if f"arith.extf {value} " in line)
    ext_value = ext.split("=")[0].strip()
    guarded = text.replace(load + "\n" + ext, f"""                  {ext_value} = affine.if affine_set<(d0, d1) : (d0 - d1 == 0)>(%kh, %kw) -> f32 {{
{load}
{ext.replace(ext_value + " =", "%fx =")}
                    affine.yield %fx : f32
                  }} else {{
                    affine.yield %cst : f32
                  }}""")
    assert guarded != text
    assert "the filter's read is guarded" in _decision(guarded)


def test_auto_takes_warpgroup_mma_for_grids_of_half_the_gpu_or_more():
    """wgmma-conv=auto (the default): the implicit GEMM where its pixel blocks by tile columns fill at least half
    the H200's 132 multiprocessors (66 blocks), mma.sync below (measured faster on such grids); true forces the
    implicit GEMM, false refuses it."""
    small = conv(1, 64, (8, 8), 64, 3, 1)  # 64 pixels: one block
    _, decisions = map_wgmma(small)
    assert "1 blocks of implicit-GEMM tiles fill fewer than half of 132 multiprocessors" in decisions[0].message
    assert "on the matrix units: mma.sync" in decisions[0].message
    _, decisions = map_wgmma(small, "wgmma-conv=false")
    assert "an NHWC convolution takes warpgroup MMA with wgmma-conv=true or auto" in decisions[0].message
    assert "implicit GEMM" in map_wgmma(small, ON)[1][0].message
    for images, blocks in ((2, 64), (3, 96)):  # 64 x 64 pixels per image, 128-row tiles, one tile column
        (d,) = map_wgmma(conv(images, 64, (64, 64), 64, 1, 0), "wgmma-tiles=128,64,2")[1]
        if 2 * blocks >= 132:
            assert "implicit GEMM" in d.message, d.message
        else:
            assert f"{blocks} blocks of implicit-GEMM tiles fill fewer than half" in d.message, d.message


def test_the_wgmma_conv_option_takes_auto_true_or_false():
    with pytest.raises(Exception, match="wgmma-conv takes one of auto, true, false, got 'yes'"):
        PassManager.parse("gpu-map-mma{wgmma=true wgmma-conv=yes}")


def test_a_guard_other_than_the_padding_is_refused():
    """TMA's fill is exactly the zero padding: an input read guarded by anything else (here a bound one short)
    keeps the mma.sync path."""
    text = _prepared(conv(1, 64, (8, 8), 64, 3, 1))
    narrower = text.replace("-d0 - d1 + 8 >= 0", "-d0 - d1 + 7 >= 0")
    assert narrower != text
    assert "the input's guard is not its zero padding" in _decision(narrower)


def test_an_implicit_gemm_kernel_compiles_for_sm_90a():
    from codegen.cuda import emit

    out, _ = map_wgmma(conv(8, 64, (56, 56), 64, 3, 1), ON)
    src = emit(out, arch="sm_90a").source
    assert "cp.async.bulk.tensor.4d.shared::cluster.global" in src
    assert_nvrtc_compiles(src)


@st.composite
def convolutions(draw):
    k = draw(st.sampled_from([1, 3]))
    pad = draw(st.integers(0, 2)) if k > 1 else 0
    least = max(1, k - 2 * pad)  # the window fits
    hw = (draw(st.integers(least, 7)), draw(st.integers(least, 9)))
    n = draw(st.integers(1, 3))
    assume(n * (hw[0] + 2 * pad - k + 1) * (hw[1] + 2 * pad - k + 1) > 1)  # a band of two or more loops
    module = conv(n, 64 * draw(st.integers(1, 2)), hw, 8 * draw(st.integers(1, 12)), k, pad,
                  draw(st.sampled_from(["f16", "bf16"])))
    tiles = draw(st.sampled_from(["64,64,1", "128,64,2", "64,128,1"]))
    return module, f"{ON} wgmma-tiles={tiles} stages={draw(st.integers(2, 3))} split-k={draw(st.sampled_from([1, 2]))}"


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(convolutions())
def test_random_convolutions_keep_their_bits(case):
    module, options = case
    out, decision = check_same_bits(module, options)
    assert "implicit GEMM" in decision.message, decision.message


@pytest.mark.gpu
def test_gpu_implicit_gemm_convolutions_match_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    import runtime
    from transforms.pipelines import gpu_pipeline

    if not runtime.gpu_available() or not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("needs an sm_90 GPU")
    for n, c, hw, f, k, p in ((2, 64, 14, 128, 3, 1), (1, 128, 9, 64, 1, 0), (3, 64, 7, 192, 3, 1)):
        exe = runtime.compile(conv(n, c, (hw, hw), f, k, p), target="cuda",
                              pipeline=gpu_pipeline(wgmma=True, wgmma_options=ON))
        assert "cp.async.bulk.tensor.4d" in exe.source
        gen = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randint(-2, 3, (n, hw, hw, c), device="cuda", generator=gen).half()
        w = torch.randint(-2, 3, (k, k, c, f), device="cuda", generator=gen).half()
        o = hw + 2 * p - k + 1
        y = torch.full((n, o, o, f), float("nan"), device="cuda", dtype=torch.half)
        exe(x, w, y)
        want = F.conv2d(x.permute(0, 3, 1, 2).float(), w.permute(3, 2, 0, 1).float(), padding=p).permute(0, 2, 3, 1)
        assert torch.equal(y, want.half()), (n, c, hw, f, k, p)
