"""Run every library op once on the GPU through ``runtime.compile(target="cuda")`` (small
shapes), checking each against the interpreter: the program that ``compute-sanitizer``
(memcheck, racecheck) runs on the device machine (issue 7).

    compute-sanitizer --tool memcheck python benchmarks/cuda_sanitize.py
    compute-sanitizer --tool racecheck python benchmarks/cuda_sanitize.py
"""

from __future__ import annotations

import sys

import numpy as np

import affine_ir as air
import runtime

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


def main() -> int:
    bad = 0
    for name, build in OPS.items():
        m = build()
        rng = np.random.default_rng(0)
        args = []
        for a in m.functions[0].args:
            dt = air.testing.numpy_dtype(a.type.element_type)
            args.append((rng.integers(-3, 4, size=a.type.shape).astype(np.float64) / 4).astype(dt))
        want = [a.copy() for a in args]
        air.interpret(m, *want)
        runtime.compile(m, target="cuda")(*args)
        tol = 3e-2 if "16" in str(m) else 1e-5
        ok = all(np.allclose(g.astype(float), w.astype(float), rtol=tol, atol=tol) for g, w in zip(args, want))
        bad += not ok
        print(f"{name}: {'ok' if ok else 'MISMATCH'}", flush=True)
    print(f"{len(OPS)} library ops, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
