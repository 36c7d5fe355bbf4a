"""Whole models through ``torch.compile``: eager PyTorch, Inductor (default mode) and ours
(``backend="affine_ir"``), side by side in one process, each checked against eager before timing
(issue 21). Models are built in code with random weights (nothing downloaded).

    python benchmarks/models.py                 # on the GPU when one is usable, else on the CPU
    python benchmarks/models.py --device cpu --only mlp --repeat 20
    python benchmarks/models.py --batch 1,8 --dtype f32,f16 --json rows.jsonl --chart benchmarks/models.png

Models: benchmarks/model_zoo.py (ResNet-18/50, MobileNetV2, a BERT-base encoder layer, a GPT-2
block, an MLP-Mixer block; on the GPU also a transformer FFN block, 2048 tokens x 4096 -> 16384 -> 4096
with GELU), at full size on the GPU, small on the CPU (``--size``). On an sm_90 GPU the f16/bf16 linear layers
go to Hopper's warpgroup MMA (``AFFINE_IR_WGMMA=0``: ``mma.sync``). Prints a row per
(model, batch, dtype): compile seconds of the first call (ours and Inductor's), the median warm time
of each (CUDA events on the GPU), the speedups over eager and Inductor, and what ran eagerly in ours
(``explain()``); ``--chart`` draws the speedups as bars (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from model_zoo import small_cnn, zoo  # noqa: E402

from frontend import torch_backend  # noqa: E402


def models(device: str, batch: int, size: str) -> dict:
    """name -> (model, input shape): the zoo's (``size`` "full": 224x224 images, d 768; "small": 32x32,
    d 64), and on the CPU two small ones more (an MLP, a small CNN)."""
    out = zoo(batch, small=size == "small")
    if device == "cuda" and size != "small":  # issue 19's transformer FFN block: two linears around a GELU
        tokens, d = 2048 * batch, 4096
        out[f"ffn {tokens}x{d}x{4 * d}"] = (torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                                                torch.nn.Linear(4 * d, d)), (tokens, d))
    if device == "cpu":
        out["mlp 256x1024x1024"] = (torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(),
                                                        torch.nn.Linear(1024, 1024)), (256, 1024))
        out["small_cnn 32x32"] = (small_cnn(16), (2, 3, 32, 32))
    return out


def _time(fn, x, repeat: int, device: str) -> float:
    """Median seconds of a warm call (CUDA events around each call on the GPU)."""
    fn(x)
    times = []
    for _ in range(repeat):
        if device == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            t = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def run_one(name: str, model, shape, dtype, args) -> dict | None:
    """One row: compile times (first call), warm times, the check against eager (None: mismatch)."""
    torch.manual_seed(0)
    model = model.to(args.device, dtype).eval()
    x = torch.randn(shape, device=args.device, dtype=dtype)
    with torch.no_grad():
        want = model(x)
        torch._dynamo.reset()
        torch_backend.reset()
        ours = torch.compile(model, backend=torch_backend.affine_ir_backend)
        t = time.perf_counter()
        got = ours(x)
        ours_compile = time.perf_counter() - t
        report = torch_backend.explain()
        tol = 1e-3 if dtype == torch.float32 else 2e-2
        err = ((got.float() - want.float()).abs().max() / want.float().abs().max().clamp(min=1e-6)).item()
        if not err <= tol:
            print(f"{name}: MISMATCH (relative error {err:.1e} > {tol})", flush=True)
            return None
        ind = torch.compile(model)
        t = time.perf_counter()
        ind(x)
        ind_compile = time.perf_counter() - t
        eager_s, ind_s, ours_s = (_time(f, x, args.repeat, args.device) for f in (model, ind, ours))
    return {"model": name, "batch": shape[0], "dtype": str(dtype).removeprefix("torch."), "error": err,
            "ours_compile_s": ours_compile, "inductor_compile_s": ind_compile, "eager_ms": eager_s * 1e3,
            "inductor_ms": ind_s * 1e3, "ours_ms": ours_s * 1e3, "vs_eager": eager_s / ours_s,
            "vs_inductor": ind_s / ours_s,
            "eager_parts": ", ".join(f"{op} x{c}" for op, c in report["unsupported"].items()) or "-"}


def chart(rows: list[dict], path: str) -> None:
    """Bars of our speedup over eager and over Inductor per model, one panel per (batch, dtype)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(r["batch"], r["dtype"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4), squeeze=False)
    for ax, (batch, dtype) in zip(axes[0], groups):
        sel = [r for r in rows if (r["batch"], r["dtype"]) == (batch, dtype)]
        xs = range(len(sel))
        ax.bar([x - 0.2 for x in xs], [r["vs_eager"] for r in sel], 0.4, label="vs eager")
        ax.bar([x + 0.2 for x in xs], [r["vs_inductor"] for r in sel], 0.4, label="vs Inductor")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(list(xs), [r["model"] for r in sel], rotation=30, ha="right")
        ax.set_title(f"batch {batch}, {dtype}")
        ax.set_ylabel("speedup (higher is better)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="f32", help="comma-separated: f32,f16")
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes")
    ap.add_argument("--size", choices=("full", "small"), default=None,
                    help="the models' sizes (default: full on the GPU, small on the CPU)")
    ap.add_argument("--only", default="", help="comma-separated parts of model names")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--json", help="append the rows to this JSON-lines file")
    ap.add_argument("--chart", help="draw the rows (and the JSON file's) as bars into this PNG")
    args = ap.parse_args()
    size = args.size or ("full" if args.device == "cuda" else "small")
    print(f"device: {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {size} sizes; median of {args.repeat} warm calls")
    print(f"{'model':<18} {'b':>2} {'dtype':>8} {'ours comp s':>11} {'ind. comp s':>11} {'eager ms':>9} "
          f"{'inductor ms':>11} {'ours ms':>8} {'vs eager':>8} {'vs ind.':>8}  eager parts")
    rows, bad = [], 0
    for batch in map(int, args.batch.split(",")):
        for dt in args.dtype.split(","):
            dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dt]
            for name, (model, shape) in models(args.device, batch, size).items():
                if args.only and not any(o in name for o in args.only.split(",")):
                    continue
                r = run_one(name, model, shape, dtype, args)
                if r is None:
                    bad += 1
                    continue
                rows.append(r)
                print(f"{name:<18} {batch:>2} {r['dtype']:>8} {r['ours_compile_s']:>11.2f} "
                      f"{r['inductor_compile_s']:>11.2f} {r['eager_ms']:>9.3f} {r['inductor_ms']:>11.3f} "
                      f"{r['ours_ms']:>8.3f} {r['vs_eager']:>7.2f}x {r['vs_inductor']:>7.2f}x  {r['eager_parts']}",
                      flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    if args.chart:
        everything = [json.loads(line) for line in open(args.json)] if args.json else rows
        chart(everything, args.chart)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
