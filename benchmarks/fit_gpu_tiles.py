"""Fit the constants of gpu-schedule's cost model to measured sweeps (needs scipy).

Reads the tables ``benchmarks/gpu_tiles.py`` printed (recorded in ``benchmarks/data/``), fits
by least squares on log time the per-configuration shares of the fp32 rate, the warps that hide
latency and the two launch costs of ``transforms.gpu.schedule_gpu_plan.estimate_seconds`` (the
blocks resident per multiprocessor are fixed from the registers), prints them with the RMS error,
and for every workload the fitted model's pick next to the best measured candidate; last, the
fitted constants in the format of ``analysis/data/gpu_model_<gpu>.json`` (the target's model,
see :mod:`analysis.gpu_models`; add the provenance by hand)::

    python benchmarks/fit_gpu_tiles.py benchmarks/data/gpu_tiles_2026-11-29.md [--target h200]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis.gpu_models import GPUCostModel  # noqa: E402
from analysis.targets import target  # noqa: E402
from transforms.gpu.schedule_gpu_plan import TileConfig, estimate_seconds  # noqa: E402

#: The configurations fitted, (BM, BN, BK, TM, TN).
CONFIGS = ((128, 128, 16, 8, 8), (128, 64, 16, 8, 4), (64, 64, 8, 4, 4), (32, 32, 8, 2, 2))


def rows(paths: list[str], sizes_of: dict) -> list[tuple]:
    """(sizes, config, slices, seconds, anchor seconds, workload) of every measured row of the
    configurations in :data:`CONFIGS` (a later row of the same workload, configuration and
    slices replaces an earlier one)."""
    out = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 6 or cells[0] not in sizes_of:
                continue
            m = re.match(r"(\d+)x(\d+)x(\d+) (\d+)x(\d+)", cells[1])
            if m is None:
                continue
            try:
                ours, anchor = float(cells[4]) * 1e-3, float(cells[5]) * 1e-3
            except ValueError:
                continue
            cfg = tuple(int(x) for x in m.groups())
            if cfg in CONFIGS:
                out[(cells[0], cfg, int(cells[2]))] = (sizes_of[cells[0]], cfg, int(cells[2]), ours, anchor, cells[0])
    return list(out.values())


def constants(p, shipped: GPUCostModel) -> GPUCostModel:
    """The model ``shipped`` with the constants of the parameter vector ``p`` (rates per
    configuration, latency warps, launch and split-launch seconds); resident blocks stay as
    shipped (from the registers)."""
    rates = {(bm, bn, tm, tn): (float(r), shipped.rates[(bm, bn, tm, tn)][1])
             for (bm, bn, _, tm, tn), r in zip(CONFIGS, p[:4])}
    return dataclasses.replace(shipped, rates=rates, latency_warps=float(p[4]), launch_s=float(p[5]),
                               split_launch_s=float(p[6]), tile_configs=CONFIGS)


def model_json(model: GPUCostModel) -> str:
    """``model`` in the format of ``analysis/data/gpu_model_*.json`` (without provenance)."""
    return json.dumps({
        "tile_configs": [list(c) for c in model.tile_configs],
        "rates": [{"tile": list(k), "fma_share": round(r, 3), "blocks_per_sm": b} for k, (r, b) in model.rates.items()],
        "latency_warps": round(model.latency_warps, 1), "launch_s": float(f"{model.launch_s:.2g}"),
        "split_launch_s": float(f"{model.split_launch_s:.3g}"), "max_splits": model.max_splits,
        "min_slice_steps": model.min_slice_steps, "max_split_blocks_per_sm": model.max_split_blocks_per_sm,
        "max_aligned_bk": model.max_aligned_bk, "register_overhead_per_thread": model.register_overhead_per_thread,
    }, indent=2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tables", nargs="+")
    ap.add_argument("--target", default="h200", help="the GPU measured (a name of analysis.targets)")
    ns = ap.parse_args(argv)
    import gpu as bench
    import gpu_tiles
    from scipy.optimize import least_squares

    sizes_of = {w.label: gpu_tiles.contraction_sizes(w.build()) for w in bench.workloads()
                if w.group == "conv2d" or w.name == "matmul"}
    data = rows(ns.tables, sizes_of)

    gpu = target(ns.target)
    shipped = gpu.schedule_model

    def model(p, sizes, cfg, splits):
        return estimate_seconds(sizes, TileConfig(*cfg), splits, gpu, constants(p, shipped))

    def residuals(p):
        return [math.log(model(p, s, c, k) / t) for s, c, k, t, _, _ in data]

    fit = least_squares(residuals, [0.6, 0.4, 0.2, 0.08, 16, 5e-6, 1e-5],
                        bounds=([0.01] * 4 + [1, 0, 0], [1.0] * 4 + [128, 1e-4, 1e-4]))
    p = fit.x
    rms = math.sqrt(sum(r * r for r in residuals(p)) / len(data))
    print(f"{len(data)} kernels; rates {[round(float(x), 3) for x in p[:4]]} for {list(CONFIGS)}; latency warps "
          f"{p[4]:.1f}; launch {p[5] * 1e6:.1f} us; split launch {p[6] * 1e6:.1f} us; RMS log error {rms:.3f}")
    by: dict[str, list] = {}
    for s, c, k, t, a, name in data:
        by.setdefault(name, []).append((model(p, s, c, k), t, a, c, k))
    print("| workload | model's pick | its time (anchor / ours) | best measured | its time (anchor / ours) |")
    print("|---|---|---:|---|---:|")
    for name, cands in by.items():
        pick, best = min(cands), min(cands, key=lambda x: x[1])
        print(f"| {name} | {pick[3]} x{pick[4]} | {pick[1] * 1e3:.4f} ms ({pick[2] / pick[1]:.2f}x) | "
              f"{best[3]} x{best[4]} | {best[1] * 1e3:.4f} ms ({best[2] / best[1]:.2f}x) |")
    print(model_json(constants(p, shipped)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
