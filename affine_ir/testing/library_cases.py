"""Library ops at shapes and dtypes worth testing every backend on, and their inputs.

:data:`LIBRARY_CASES` maps a case name to a function building the module (odd sizes that
leave remainders, symbolic sizes, f16/bf16 storage); :data:`CPU_CASES` adds sizes at which the
CPU pipeline's register tiles and vector loops apply. :func:`library_inputs` draws arguments:
integer multiples of 1/4 in [-3/4, 3/4] (sums and products of them are exact in f32, so
programs without division or transcendental functions give exactly equal results in any
evaluation order), ``symbol`` for every index argument and ``?`` dimension.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import library as L
from ..dialects.builtin import ModuleOp
from .strategies import numpy_dtype

__all__ = ["CPU_CASES", "LIBRARY_CASES", "library_inputs", "uses_inexact_ops"]

LIBRARY_CASES: dict[str, Callable[[], ModuleOp]] = {
    "matmul": lambda: L.matmul(37, 50, 19),
    "matmul_sym": lambda: L.matmul("M", 40, "K"),
    "matmul_bf16": lambda: L.matmul(16, 24, 32, dtype="bf16"),
    "matmul_f16": lambda: L.matmul(16, 24, 32, dtype="f16"),
    "batch_matmul": lambda: L.batch_matmul(3, 8, 9, 10),
    "conv2d": lambda: L.conv2d(2, 3, 9, 9, 4, 3, 3, stride=2, padding=1),
    "conv2d_bias_relu": lambda: L.conv2d_bias_relu(1, 2, 6, 6, 3, 3, 3),
    "depthwise": lambda: L.depthwise_conv2d(1, 3, 8, 8, 3, 3),
    "max_pool": lambda: L.max_pool2d(1, 2, 8, 8, (2, 2), stride=2),
    "avg_pool": lambda: L.avg_pool2d(1, 2, 8, 8, (3, 3)),
    "softmax": lambda: L.softmax((33, 70)),
    "softmax_f16": lambda: L.softmax((8, 40), dtype="f16"),
    "layernorm": lambda: L.layernorm(9, 64),
    "attention": lambda: L.attention(1, 2, 16, 8),
    "attention_causal": lambda: L.attention(1, 1, 12, 8, causal=True),
    "mlp": lambda: L.mlp(8, 16, 32),
    "gelu": lambda: L.gelu((5, 300)),
    "chain": lambda: L.elementwise_chain(["relu", "add", "exp", "mul"], (7, 45)),
    "reduce": lambda: L.reduce("sum", (6, 70), 1),
}

CPU_CASES: dict[str, Callable[[], ModuleOp]] = {
    **LIBRARY_CASES,
    "matmul_tiled": lambda: L.matmul(128, 256, 64),
    "matmul_tiled_bf16": lambda: L.matmul(64, 128, 48, dtype="bf16"),
    "matmul_f64": lambda: L.matmul(32, 64, 24, dtype="f64"),
    "batch_matmul_tiled": lambda: L.batch_matmul(2, 32, 64, 16),
    "mlp_tiled": lambda: L.mlp(64, 128, 40, activation="gelu"),
    "conv2d_nchw_wide": lambda: L.conv2d(1, 8, 10, 66, 16, 3, 3, padding=1),
    "softmax_wide": lambda: L.softmax((12, 256)),
    "softmax_bf16": lambda: L.softmax((8, 128), dtype="bf16"),
    "layernorm_wide": lambda: L.layernorm(10, 320),
    "layernorm_sym": lambda: L.layernorm("M", "N"),
    "chain_wide": lambda: L.elementwise_chain(("add", "gelu"), (9, 200), approximate="tanh"),
    "chain_sym": lambda: L.elementwise_chain(("mul", "relu", "add"), ("M", "N")),
    "reduce_max": lambda: L.reduce("max", (5, 130), 1),
}


def library_inputs(module: ModuleOp, seed: int = 0, symbol: int = 5) -> list:
    """Arguments for the first function of ``module`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    out: list = []
    for a in module.functions[0].args:
        t = a.type
        if not hasattr(t, "shape"):
            out.append(symbol)
            continue
        dims = tuple(symbol if d is None else d for d in t.shape)
        dt = numpy_dtype(t.element_type)
        out.append(np.asarray((rng.integers(-3, 4, size=dims).astype(np.float32) / 4).astype(dt)))  # 0-d for rank 0
    return out


def uses_inexact_ops(module: ModuleOp) -> bool:
    """True when ``module`` divides or calls a math function (results then depend on rounding)."""
    return any(op.name.startswith("math.") or op.name in ("arith.divf",) for op in module.walk())
