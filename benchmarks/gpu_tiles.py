"""Every tile configuration and k split ``gpu-schedule`` could pick for a workload, measured.

For each selected workload of :mod:`benchmarks.gpu` that ``gpu-schedule`` schedules, compiles
the default GPU pipeline once per (tile configuration, k slices) candidate -- forced through
``gpu-schedule{tile-sizes=... split-k=...}`` -- checks it against the anchor and times it; prints
one row per candidate with the cost model's estimate (``estimate_seconds``) and marks the
model's choice, so the model can be judged against measurements::

    python benchmarks/gpu_tiles.py [--only conv2d-n1] [--repeat 10] [--warmup 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu as bench  # noqa: E402

from analysis.targets import target  # noqa: E402
from transforms.gpu.schedule_gpu_plan import (  # noqa: E402
    TileConfig,
    choose_schedule,
    estimate_seconds,
    plan_contraction,
    split_candidates,
)
from transforms.pipelines import GPU_PIPELINE  # noqa: E402
from transforms.testing import run_pipeline  # noqa: E402


def contraction_sizes(module) -> tuple[int, int, int, int] | None:
    """The sizes of the first contraction ``gpu-schedule`` would see in ``module``."""
    m = run_pipeline("canonicalize,affine-loop-fusion,affine-scalrep,canonicalize", module)
    for op in m.functions[0].body.ops:
        if op.name == "affine.for":
            c = plan_contraction(op)
            if not isinstance(c, str):
                return c.sizes
    return None


#: Slice counts measured (of those ``split_candidates`` allows).
SWEPT_SLICES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)


def candidates(sizes, gpu, extra=(), extra_only=False, slices=SWEPT_SLICES) -> list[tuple[TileConfig, int]]:
    """(tiles, slices) to measure: the tile configurations of ``gpu``'s model (unless
    ``extra_only``) and ``extra`` configurations, each with the slice counts ``split_candidates``
    allows among ``slices``."""
    configs = [TileConfig(*c) for c in ((() if extra_only else gpu.schedule_model.tile_configs) + tuple(extra))]
    return [(t, s) for t in configs for s in split_candidates(sizes, t, gpu) if s in slices]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="conv2d", help="comma-separated texts: the workloads whose key or name "
                                                      "contains one")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--extra", default="", help="more tile configurations to measure: BM,BN,BK,TM,TN;...")
    ap.add_argument("--extra-only", action="store_true", help="measure only the --extra configurations")
    ap.add_argument("--slices", default=",".join(map(str, SWEPT_SLICES)), help="slice counts to measure")
    ap.add_argument("--target", default="h200", help="the GPU whose model is shown (a name of analysis.targets)")
    ns = ap.parse_args(argv)
    slices = tuple(int(x) for x in ns.slices.split(","))
    extra = [tuple(int(x) for x in c.split(",")) for c in ns.extra.split(";") if c]
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    gpu = target(ns.target)
    print("| workload | tiles | slices | model us | ours ms | anchor ms | anchor / ours | model's pick |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    chosen = [w for w in bench.workloads() if any(w in bench.select([w], t) for t in ns.only.split(","))]
    for w in chosen:
        sizes = contraction_sizes(w.build())
        if sizes is None:
            continue
        pick = choose_schedule(sizes, gpu)
        for t, s in candidates(sizes, gpu, extra, ns.extra_only, slices):
            opts = f"gpu-schedule{{tile-sizes={t.BM},{t.BN},{t.BK},{t.TM},{t.TN} split-k={s}}}"
            pipeline = GPU_PIPELINE.replace("gpu-schedule", opts, 1)
            r = bench.run_workload(torch, w, repeat=ns.repeat, warmup=ns.warmup, l2_bytes=bench.DEFAULT_L2_BYTES,
                                   pipeline=pipeline)
            est = estimate_seconds(sizes, t, s, gpu) * 1e6
            cells = [w.label, f"{t.BM}x{t.BN}x{t.BK} {t.TM}x{t.TN}", str(s), f"{est:.1f}",
                     f"{r.ours_ms:.4f}" if r.ours_ms else (r.error or "-"),
                     f"{r.anchor_ms:.4f}" if r.anchor_ms else "-",
                     f"{r.ratio:.2f}x" if r.ratio else "-", "<--" if (t, s) == pick else ""]
            print("| " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
