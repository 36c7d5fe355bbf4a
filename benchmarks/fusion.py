"""Speed of loop fusion: a 10-nest element-wise chain through ``affine-loop-fusion`` (issue 5).

The module is ``air.library.elementwise_chain(OPS, shape)``: ten perfect nests, one per op,
communicating through nine ``memref.alloc`` temporaries (the unfused form a framework
emits). ``affine-loop-fusion`` must make it one nest whose temporaries are 1-element private
buffers (``affine-scalrep`` then removes them). Timed as the median of ``--repeat`` runs of
``PassManager.run`` from the built module (verification after the pass included); static
shape and symbolic (``?x?``, which MLIR's pass does not fuse) both. Before timing, the fused
program is checked against the original on the interpreter.

    python benchmarks/fusion.py [--size 256] [--repeat 7]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import numpy as np

import affine_ir as air
from affine_ir.testing import assert_equivalent
from transforms import PassManager

OPS = ["relu", "add", "neg", "mul", "abs", "relu", "add", "tanh", "mul", "abs"]
PIPELINE = "affine-loop-fusion"


def _shape(module) -> tuple[list, list[str]]:
    f = module.functions[0]
    nests = [op for op in f.body.ops if op.name == "affine.for"]
    return nests, [str(op.results[0].type) for op in f.body.ops if op.name == "memref.alloc"]


def check() -> str:
    """Fuse a small chain and compare with the original on the interpreter."""
    ops = [o if o != "tanh" else "neg" for o in OPS]  # exact integer arithmetic
    m = air.library.elementwise_chain(ops, (5, 7))
    out = PassManager.parse(PIPELINE).run(m)
    nests, allocs = _shape(out)
    assert len(nests) == 1 and allocs == ["memref<1x1xf32>"] * 9, (len(nests), allocs)
    rng = np.random.default_rng(0)
    args = [rng.integers(-3, 4, (5, 7)).astype(np.float32) for _ in range(1 + ops.count("add") + ops.count("mul"))]
    assert_equivalent(m, out, args + [np.zeros((5, 7), np.float32)])
    return "10-op chain 5x7: one nest, nine 1-element private buffers, == the original on the interpreter"


def bench(shape, repeat: int) -> tuple[float, str]:
    module = air.library.elementwise_chain(OPS, shape)
    times = []
    for _ in range(repeat):
        pm = PassManager.parse(PIPELINE)
        t0 = time.perf_counter()
        out = pm.run(module)
        times.append(time.perf_counter() - t0)
    nests, allocs = _shape(out)
    applied = sum(d.kind == "applied" for d in pm.trace.decisions)
    return statistics.median(times), f"{len(_shape(module)[0])} -> {len(nests)} nests, {applied} fusions, " \
                                     f"buffers {sorted(set(allocs))}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    print(check())
    print(f"python {platform.python_version()} on {platform.machine()}, median of {args.repeat} runs")
    print("| program | median (s) | result |")
    print("|---|---:|---|")
    for shape in ((args.size, args.size), ("M", "N")):
        t, what = bench(shape, args.repeat)
        label = "x".join(str(s) for s in shape)
        print(f"| 10-nest chain {label} | {t:.3f} | {what} |")


if __name__ == "__main__":
    main()
