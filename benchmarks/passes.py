"""Speed of the mid-level optimizer: matmul + bias + ReLU through the S3 passes (issue 4).

The module is ``air.library.mlp(M, N, K, activation="relu")``: three nests (zero the f32
temporary, accumulate ``tmp += X @ W`` over ``(i, j, k)``, then ``Y = relu(tmp + bias)``).
The pipeline: canonicalize; two-level tiling (block tile then an inner tile per level);
copy generation of each block tile's footprint into ``#gpu.address_space<workgroup>``
buffers under a capacity, padded by one element; unroll-jam of the two innermost point
loops (a register tile); scalar replacement (the accumulators move to iter_args); a final
canonicalize. Timed as the median of ``--repeat`` runs of ``PassManager.run`` from the parsed
module, verification after every pass included, IR capture off (``--trace`` turns it on);
per-pass medians are printed too. Before timing, the same pipeline on a small module is
checked against the original with the reference interpreter.

    python benchmarks/passes.py [--size 256] [--repeat 7] [--trace]
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

PIPELINE = ("canonicalize,"
            "affine-loop-tile{tile-levels=2 tile-sizes=64,64,32,16,16,8},"
            "affine-data-copy-generate{fast-mem-space=workgroup fast-mem-capacity=48 padding=1},"
            "affine-loop-unroll-jam{unroll-jam-factor=4 loop-depth=6},"
            "affine-loop-unroll-jam{unroll-jam-factor=4 loop-depth=7},"
            "affine-scalrep,canonicalize")


def check(size: int = 72) -> str:
    """Run the pipeline on a small mlp and compare with the original on the interpreter."""
    m = air.library.mlp(size, size, size, activation="relu")
    pm = PassManager.parse(PIPELINE)
    out = pm.run(m)
    rng = np.random.default_rng(0)
    args = [rng.integers(-3, 4, s).astype(np.float32) for s in ((size, size), (size, size), (size,))]
    assert_equivalent(m, out, args + [np.zeros((size, size), np.float32)])
    return f"mlp {size}^3 through the pipeline == the original on the interpreter"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--trace", action="store_true", help="capture the IR before/after each pass while timing")
    args = ap.parse_args(argv)
    print(check())
    module = air.library.mlp(args.size, args.size, args.size, activation="relu")
    totals, per_pass, last = [], {}, None
    for _ in range(args.repeat):
        pm = PassManager.parse(PIPELINE, capture_ir=args.trace)
        t0 = time.perf_counter()
        last = pm.run(module)
        totals.append(time.perf_counter() - t0)
        for k, t in enumerate(pm.trace):
            per_pass.setdefault((k, str(t.pass_)), []).append(t.seconds)
    print(f"python {platform.python_version()} on {platform.machine()}, mlp {args.size}^3 relu, "
          f"median of {args.repeat} runs, IR capture {'on' if args.trace else 'off'}")
    print("| pass | median (s) | decisions |")
    print("|---|---:|---|")
    for k, t in enumerate(pm.trace):
        counts = {kind: sum(d.kind == kind for d in t.decisions) for kind in ("applied", "refused", "note")}
        what = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
        print(f"| `{t.pass_}` | {statistics.median(per_pass[(k, str(t.pass_))]):.4f} | {what} |")
    print(f"| **total** (incl. clone + verification) | **{statistics.median(totals):.4f}** | |")
    ops = sum(1 for _ in last.walk())
    print(f"result: {ops} ops")


if __name__ == "__main__":
    main()
