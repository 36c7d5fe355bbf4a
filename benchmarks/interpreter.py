"""Speed of the reference interpreter on matmul bodies: innermost iterations per second.

Two forms of ``C[i, j] += A[i, k] * B[k, j]`` in f32: load/mulf/addf/store on C in the
innermost loop ("store"), and the iter_args reduction that stores once per (i, j)
("iter_args"). Run::

    python benchmarks/interpreter.py [--shapes 64x64x64,32x32x32] [--repeat 3]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

import affine_ir as air
from affine_ir.interp.driver import _cache_key
from affine_ir.interpreter import compile_function
from affine_ir.testing.examples import MATMUL_TEMPLATES

FORMS = {"store": MATMUL_TEMPLATES["store"], "iter_args": MATMUL_TEMPLATES["iter_args"],
         "dynamic (checked)": MATMUL_TEMPLATES["dynamic"]}


def bench(form: str, M: int, N: int, K: int, repeat: int) -> dict:
    module = air.parse(FORMS[form].format(M=M, N=N, K=K))
    rng = np.random.default_rng(0)
    A = rng.integers(-4, 5, (M, K)).astype(np.float32)
    B = rng.integers(-4, 5, (K, N)).astype(np.float32)
    extra = (M, N, K) if form.startswith("dynamic") else ()
    t0 = time.perf_counter()
    fn = compile_function(module)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _cache_key(module)
    key_s = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeat):
        C = np.zeros((M, N), np.float32)
        t0 = time.perf_counter()
        fn(A, B, C, *extra)
        best = min(best, time.perf_counter() - t0)
        assert (C == A @ B).all()
    return {"form": form, "shape": f"{M}x{N}x{K}", "iters": M * N * K, "seconds": best,
            "iters_per_s": M * N * K / best, "compile_ms": compile_s * 1e3, "key_ms": key_s * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="64x64x64,128x128x128")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.processor() or platform.machine()}")
    print(f"{'form':<18} {'shape':>12} {'iterations':>11} {'best s':>8} {'iter/s':>12} {'compile ms':>11} "
          f"{'cache key ms':>13}")
    for shape in args.shapes.split(","):
        M, N, K = map(int, shape.split("x"))
        for form in FORMS:
            r = bench(form, M, N, K, args.repeat)
            print(f"{r['form']:<18} {r['shape']:>12} {r['iters']:>11} {r['seconds']:>8.3f} {r['iters_per_s']:>12,.0f} "
                  f"{r['compile_ms']:>11.2f} {r['key_ms']:>13.3f}")


if __name__ == "__main__":
    main()
