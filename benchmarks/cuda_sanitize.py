"""Run every library op once on the GPU through ``runtime.compile(target="cuda")`` (small
shapes), checking each against the interpreter: the program that ``compute-sanitizer``
(memcheck, racecheck) runs on the device machine (issue 7). The ``mma_*`` rows are the matrix-unit
kernels of the benchmarks (issue 18) at small sizes: the 4096^3 matmul's tiles (128 x 256, k step
32, 4 stages), the 8192^3 one's block-row groups (more blocks than one wave), split-K, partial
tiles, convolutions NHWC (cp.async, zero-filled padding) and NCHW (gathered), the MLP epilogue,
TF32 and int8.

    compute-sanitizer --tool memcheck python benchmarks/cuda_sanitize.py
    compute-sanitizer --tool racecheck python benchmarks/cuda_sanitize.py
    compute-sanitizer --tool racecheck python benchmarks/cuda_sanitize.py mma_   # the matrix-unit rows
    compute-sanitizer --tool synccheck python benchmarks/cuda_sanitize.py wgmma_ # Hopper's (sm_90 only)
"""

from __future__ import annotations

import sys

import numpy as np

import affine_ir as air
import runtime
from transforms.pipelines import GPU_PIPELINE, gpu_pipeline

L = air.library
OPS = {
    "matmul": lambda: L.matmul(37, 50, 19),
    "matmul_bf16": lambda: L.matmul(16, 24, 32, dtype="bf16"),
    "batch_matmul": lambda: L.batch_matmul(2, 8, 9, 10),
    "conv2d": lambda: L.conv2d(1, 3, 9, 9, 4, 3, 3, stride=2, padding=1),
    "depthwise_conv2d": lambda: L.depthwise_conv2d(1, 3, 8, 8, 3, 3),
    "max_pool2d": lambda: L.max_pool2d(1, 2, 8, 8, (2, 2), stride=2),
    "avg_pool2d": lambda: L.avg_pool2d(1, 2, 8, 8, (3, 3)),
    "softmax": lambda: L.softmax((9, 70)),
    "layernorm": lambda: L.layernorm(9, 64),
    "attention": lambda: L.attention(1, 2, 16, 8),
    "mlp": lambda: L.mlp(8, 16, 32),
    "gelu": lambda: L.gelu((5, 300)),
    "relu": lambda: L.relu((5, 300)),
    "bias_add": lambda: L.bias_add((5, 30)),
    "binary_add": lambda: L.binary("add", (4, 30), (30,)),
    "unary_exp": lambda: L.unary("exp", (4, 30)),
    "reduce": lambda: L.reduce("sum", (6, 70), 1),
    "conv2d_bias_relu": lambda: L.conv2d_bias_relu(1, 2, 6, 6, 3, 3, 3),
    "elementwise_chain": lambda: L.elementwise_chain(["relu", "add", "exp"], (7, 45)),
}


def _mma(options: str, pipeline: str = GPU_PIPELINE) -> str:
    return pipeline.replace("gpu-map-mma,", "gpu-map-mma{" + options + "},")


#: name: (builder, pipeline): the matrix-unit kernels with the benchmarks' tiles and options.
MMA_OPS = {
    "mma_matmul_f16_4096_tiles": (lambda: L.matmul(128, 256, 128, dtype="f16"),
                                  _mma("tile-sizes=128,256,32,2,4 stages=4")),
    "mma_matmul_bf16_block_row_groups": (lambda: L.matmul(128, 136, 64, dtype="bf16"),
                                         _mma("tile-sizes=16,8,16,1,1")),
    "mma_matmul_f16_split_k": (lambda: L.matmul(16, 256, 1024, dtype="f16"), _mma("split-k=4")),
    "mma_matmul_f16_partial_transposed": (lambda: L.matmul(33, 40, 24, dtype="f16", transpose_a=True),
                                          GPU_PIPELINE),
    "mma_conv_nhwc_f16_padded": (lambda: L.conv2d(1, 16, 9, 9, 32, 3, 3, stride=2, padding=1, layout="NHWC",
                                                  dtype="f16"), GPU_PIPELINE),
    "mma_conv_nchw_f16": (lambda: L.conv2d(2, 8, 7, 7, 16, 3, 3, padding=1, dtype="f16"), GPU_PIPELINE),
    "mma_conv_nchw_f16_1x1": (lambda: L.conv2d(2, 16, 8, 8, 16, 1, 1, dtype="f16"), GPU_PIPELINE),
    "mma_conv_nchw_f16_stem": (lambda: L.conv2d(2, 3, 16, 16, 16, 7, 7, stride=2, padding=3, dtype="f16"),
                               GPU_PIPELINE),
    "mma_mlp_f16": (lambda: L.mlp(64, 128, 96, dtype="f16"), GPU_PIPELINE),
    "mma_matmul_tf32": (lambda: L.matmul(64, 64, 64), gpu_pipeline(allow_tf32=True)),
    "mma_matmul_tf32_a_transposed_4096_tiles": (lambda: L.matmul(128, 256, 96, transpose_a=True),
                                                _mma("tile-sizes=128,256,32,2,4 allow-tf32=true")),
    "mma_matmul_i8": (lambda: L.matmul(64, 64, 128, dtype="i8", transpose_b=True), GPU_PIPELINE),
}
#: Hopper's warpgroup-MMA kernels (issue 19; sm_90 only): the benchmarks' 128 x 256 tiles, clusters of 2 blocks
#: multicasting B (K-major and MN-major), the persistent pingpong schedule.
WGMMA_OPS = {
    "wgmma_matmul_f16_128x256": (lambda: L.matmul(256, 512, 384, dtype="f16", transpose_b=True),
                                 gpu_pipeline(wgmma=True)),
    "wgmma_matmul_f16_cluster2": (lambda: L.matmul(512, 512, 384, dtype="f16", transpose_b=True),
                                  gpu_pipeline(wgmma=True, wgmma_options="wgmma-cluster=2")),
    "wgmma_matmul_bf16_cluster2_b_k_x_n": (lambda: L.matmul(512, 512, 384, dtype="bf16"),
                                           gpu_pipeline(wgmma=True, wgmma_options="wgmma-cluster=2")),
    "wgmma_matmul_f16_pingpong": (lambda: L.matmul(512, 256, 384, dtype="f16", transpose_b=True),
                                  gpu_pipeline(wgmma=True, wgmma_options="wgmma-schedule=pingpong "
                                                                        "wgmma-tiles=128,128,2 persistent-blocks=3")),
}


def main(only: str = "") -> int:
    """Run the rows whose name contains ``only`` (all by default); 1 on a mismatch."""
    bad = 0
    rows = {name: (build, None) for name, build in OPS.items()} | MMA_OPS | WGMMA_OPS
    rows = {name: row for name, row in rows.items() if only in name}
    for name, (build, pipeline) in rows.items():
        m = build()
        rng = np.random.default_rng(0)
        args = []
        for a in m.functions[0].args:
            dt = air.testing.numpy_dtype(a.type.element_type)
            args.append((rng.integers(-3, 4, size=a.type.shape).astype(np.float64) / 4).astype(dt))
        want = [a.copy() for a in args]
        air.interpret(m, *want)
        runtime.compile(m, target="cuda", pipeline=pipeline)(*args)
        tol = 3e-2 if "16" in str(m) else 1e-5
        ok = all(np.allclose(g.astype(float), w.astype(float), rtol=tol, atol=tol) for g, w in zip(args, want))
        bad += not ok
        print(f"{name}: {'ok' if ok else 'MISMATCH'}", flush=True)
    print(f"{len(rows)} kernels, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
