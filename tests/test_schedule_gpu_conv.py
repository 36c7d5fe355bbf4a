"""``gpu-schedule`` on random convolutions: the implicit GEMM (rows, columns and k delinearized,
zero-padded windows packed on the fly, partial tiles, aligned k steps, split-K) computes what the
library's conv computes, exactly, on the interpreter's launch emulation in both thread orders
(data of quarter-integers: every sum is exact in any order, so split-K's reassociation shows no
rounding). Each drawn case is asserted to be scheduled by ``gpu-schedule`` (not left to gpu-map).
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from transforms import PassManager

PIPELINE = "canonicalize,affine-loop-fusion,affine-scalrep,canonicalize,gpu-schedule{},gpu-map,canonicalize,cse"
TILES = ("", "tile-sizes=32,32,8,2,2", "tile-sizes=64,64,8,4,4", "tile-sizes=128,64,16,8,4")


@st.composite
def convolutions(draw):
    """(module, gpu-schedule options, layout) for a small conv2d / conv2d_bias_relu with at least 2
    filters, channels and output positions."""
    n, c, f = draw(st.integers(1, 2)), draw(st.integers(2, 8)), draw(st.integers(2, 20))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    split = draw(st.booleans())
    if split:  # k = 8 * 2 * kw: whole k steps of 8 in 2 slices
        c, kh = 8, 2
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), 1)
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    h = draw(st.integers(dilation[0] * (kh - 1) + 1, 7))
    w = draw(st.integers(kw, 7))
    ho = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    wo = (w + 2 * padding[1] - (kw - 1) - 1) // stride[1] + 1
    assume(n * ho * wo >= 2)  # rows, columns and k each of at least 2 (a contraction)
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    if layout == "NCHW" and draw(st.booleans()):
        m = air.library.conv2d_bias_relu(n, c, h, w, f, kh, kw, stride=stride, padding=padding, dilation=dilation)
    else:
        m = air.library.conv2d(n, c, h, w, f, kh, kw, stride=stride, padding=padding, dilation=dilation,
                               layout=layout)
    options = [draw(st.sampled_from(TILES)), draw(st.sampled_from(["", "split-k=2", "split-k=3"])),
               draw(st.sampled_from(["", "prefetch=false"]))]
    if split:
        options[:2] = ["tile-sizes=32,32,8,2,2", "split-k=2"]
    text = " ".join(o for o in options if o)
    return m, "{" + text + "}" if text else "", layout


def test_random_convolutions_as_implicit_gemms():
    seen = {"cases": 0, "split": 0, "partial": 0, "nhwc": 0}

    @settings(max_examples=150, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(convolutions())
    def case(c):
        m, options, layout = c
        pm = PassManager.parse(PIPELINE.format(options))
        out = pm.run(m)
        applied = [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule" and d.kind == "applied"]
        assert len(applied) == 1, [d.message for d in pm.trace.decisions if d.pass_name == "gpu-schedule"]
        seen["cases"] += 1
        seen["split"] += "k split" in applied[0]
        seen["partial"] += "affine.if" in str(out)
        seen["nhwc"] += layout == "NHWC"
        args = library_inputs(m, 0)
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, options)

    case()
    assert seen["cases"] >= 140 and seen["split"] >= 20 and seen["nhwc"] >= 20, seen
