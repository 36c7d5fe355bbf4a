"""The matrix-unit kernels on the GPU (issue 18): every contraction library op in f16, bf16, TF32
(``allow_tf32``) and int8, at aligned and odd sizes, compiled by ``runtime.compile(target="cuda")``
(``gpu-map-mma`` maps each: the trace is checked) and run on the device with random normal data
(random integers for int8), against the interpreter's run of the original nest (f32 sums, the
output rounded to its dtype). Tolerances (``docs/tensor_cores.md``), relative to the largest
output element: f16/bf16 outputs 1e-2 (the output's own rounding is 5e-4 / 4e-3; the sums are
reassociated), TF32 4e-3 (inputs rounded to 10-bit mantissas), int8 exact. Marked ``gpu``: skipped
without one (CI); run on the device machine with ``pytest -m gpu``. Besides the tiles the cost
model picks for these sizes, the benchmarks' large tiles (128 x 256, 3-4 stages) and the block-row
groups of grids past one wave are forced on some.
"""

from __future__ import annotations

import numpy as np
import pytest

import affine_ir as air
import runtime
from affine_ir.testing import run
from transforms.pipelines import GPU_PIPELINE, gpu_pipeline

GPU = runtime.gpu_available()
L = air.library
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")]



def _tiles(options: str, pipeline: str = GPU_PIPELINE) -> str:
    return pipeline.replace("gpu-map-mma,", "gpu-map-mma{" + options + "},")


#: name: (builder, pipeline or None for the default).
CASES = {
    "matmul f16 aligned": (lambda: L.matmul(256, 512, 128, dtype="f16"), None),
    "matmul f16, the 4096^3 tiles": (lambda: L.matmul(256, 512, 128, dtype="f16"),
                                     _tiles("tile-sizes=128,256,32,2,4 stages=4")),
    "matmul bf16, 128x256 tiles, k step 64": (lambda: L.matmul(256, 512, 256, dtype="bf16"),
                                              _tiles("tile-sizes=128,256,64,2,4 stages=3")),
    "matmul f16, block-row groups": (lambda: L.matmul(128, 136, 32, dtype="f16"), _tiles("tile-sizes=16,8,16,1,1")),
    "matmul f16 odd": (lambda: L.matmul(67, 93, 45, dtype="f16"), None),
    "matmul bf16 odd, A transposed": (lambda: L.matmul(61, 40, 77, dtype="bf16", transpose_a=True), None),
    "matmul f16 B transposed": (lambda: L.matmul(128, 96, 200, dtype="f16", transpose_b=True), None),
    "matmul f16 both transposed, accumulate": (lambda: L.matmul(64, 72, 64, dtype="f16", transpose_a=True,
                                                                transpose_b=True, accumulate=True), None),
    "matmul f16 decode (split-K)": (lambda: L.matmul(16, 256, 2048, dtype="f16"), None),
    "batch matmul bf16": (lambda: L.batch_matmul(3, 40, 56, 72, dtype="bf16"), None),
    "batch matmul f16 B transposed odd": (lambda: L.batch_matmul(2, 33, 17, 29, dtype="f16", transpose_b=True), None),
    "conv2d f16 NHWC stride 2 pad 1": (lambda: L.conv2d(2, 32, 14, 14, 64, 3, 3, stride=2, padding=1, layout="NHWC",
                                                        dtype="f16"), None),
    "conv2d f16 NCHW 1x1": (lambda: L.conv2d(1, 64, 7, 7, 128, 1, 1, dtype="f16"), None),
    # chunks that run on past the end of a row: the filter along (c, kh, kw), the input along (h, w)
    "conv2d f16 NCHW 3x3 pad 1, filter in chunks": (lambda: L.conv2d(2, 8, 13, 13, 24, 3, 3, padding=1,
                                                                     dtype="f16"), None),
    "conv2d bf16 NCHW 1x1 W=4, input in chunks": (lambda: L.conv2d(1, 16, 6, 4, 32, 1, 1, dtype="bf16"), None),
    "conv2d bf16 NCHW dilation 2 odd": (lambda: L.conv2d(1, 5, 11, 9, 7, 3, 3, padding=2, dilation=2,
                                                         dtype="bf16"), None),
    "conv2d+bias+relu f16": (lambda: L.conv2d_bias_relu(1, 16, 10, 10, 32, 3, 3, padding=1, dtype="f16"), None),
    "mlp f16 gelu": (lambda: L.mlp(128, 256, 192, dtype="f16"), None),
    "mlp bf16 relu odd": (lambda: L.mlp(50, 70, 90, dtype="bf16", activation="relu"), None),
    "matmul tf32 aligned": (lambda: L.matmul(128, 256, 128), gpu_pipeline(allow_tf32=True)),
    "matmul tf32 odd, B transposed": (lambda: L.matmul(45, 61, 70, transpose_b=True), gpu_pipeline(allow_tf32=True)),
    "matmul i8 B transposed, 128x256 tiles": (lambda: L.matmul(128, 256, 256, dtype="i8", transpose_b=True),
                                              _tiles("tile-sizes=128,256,64,2,4 stages=3")),
    "batch matmul i8 odd": (lambda: L.batch_matmul(2, 33, 40, 96, dtype="i8"), None),
}


def _inputs(m, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for a in m.functions[0].args:
        dt = air.testing.numpy_dtype(a.type.element_type)
        if np.issubdtype(dt, np.integer):
            out.append(rng.integers(-128, 128, size=a.type.shape).astype(dt))
        else:
            out.append((rng.standard_normal(a.type.shape) / 4).astype(dt))
    return out


def _tolerance(m) -> float:
    text = str(m)
    if "xi8>" in text:
        return 0.0
    return 1e-2 if ("f16>" in text or "bf16>" in text) else 4e-3


@pytest.mark.parametrize("name", list(CASES))
def test_mapped_kernels_on_the_gpu_match_the_interpreter(name):
    build, pipeline = CASES[name]
    m = build()
    exe = runtime.compile(m, target="cuda", pipeline=pipeline)
    applied = [d for d in exe.trace.decisions if d.pass_name == "gpu-map-mma" and d.kind == "applied"]
    assert applied, [str(d) for d in exe.trace.decisions if d.pass_name == "gpu-map-mma"]
    args = _inputs(m, 0)
    want = run(m, [a.copy() for a in args])
    got = [a.copy() for a in args]
    exe(*got)
    out, ref = got[-1].astype(np.float64), want[-1].astype(np.float64)
    err = float(np.abs(out - ref).max()) / max(float(np.abs(ref).max()), 1e-30)
    assert err <= _tolerance(m), f"{name}: max error {err:.2e} of the largest output (trace: {applied[0].message})"
