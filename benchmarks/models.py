"""Whole models through ``torch.compile``: eager PyTorch, Inductor (default mode) and ours
(``backend="affine_ir"``), side by side in one process, each checked against eager before timing
(issue 21). Models are built in code with random weights (nothing downloaded).

    python benchmarks/models.py                 # on the GPU when one is usable, else on the CPU
    python benchmarks/models.py --device cpu --only mlp --repeat 20

Prints a row per model: compile seconds of the first call (ours and Inductor's), the median warm
time of each, the speedups over eager and Inductor, and what ran eagerly in ours (``explain()``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from frontend import torch_backend  # noqa: E402


class GPT2Block(torch.nn.Module):
    """Pre-norm causal attention and a tanh-GELU MLP, with residuals (GPT-2's block)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def small_cnn(width: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.BatchNorm2d(width), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(width, width, 3, padding=1, groups=width), torch.nn.Conv2d(width, 2 * width, 1),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(2 * width, 10))


def models(device: str) -> dict:
    """name -> (model, input shape): the CPU's sizes, or the GPU's (``device == "cuda"``: MLP
    2048x1024x1024, the CNN at width 64 and batch 8, a GPT-2 block at d 768, 12 heads, batch 8; the
    names give the CPU's)."""
    big = device == "cuda"
    return {
        "mlp 256x1024x1024": (torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(),
                                                  torch.nn.Linear(1024, 1024)), (2048 if big else 256, 1024)),
        "small cnn 32x32": (small_cnn(64 if big else 16), (8 if big else 2, 3, 32, 32)),
        "gpt2 block d256 t128": (GPT2Block(768 if big else 256, 12 if big else 4),
                                 (8 if big else 1, 128, 768 if big else 256)),
    }


def _time(fn, x, repeat: int, device: str) -> float:
    times = []
    for _ in range(repeat):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn(x)
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=("f32", "f16"), default="f32")
    ap.add_argument("--only", default="")
    ap.add_argument("--repeat", type=int, default=10)
    args = ap.parse_args()
    dtype = {"f32": torch.float32, "f16": torch.float16}[args.dtype]
    print(f"device: {args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads, {args.dtype}; "
          f"median of {args.repeat} warm calls")
    print(f"{'model':<24} {'ours comp s':>11} {'ind. comp s':>11} {'eager ms':>9} {'inductor ms':>11} {'ours ms':>8} "
          f"{'vs eager':>8} {'vs ind.':>8}  eager parts")
    bad = 0
    for name, (model, shape) in models(args.device).items():
        if args.only not in name:
            continue
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
            if err > tol:
                print(f"{name}: MISMATCH (relative error {err:.1e})")
                bad += 1
                continue
            ind = torch.compile(model)
            t = time.perf_counter()
            ind(x)
            ind_compile = time.perf_counter() - t
            eager_s, ind_s, ours_s = (_time(f, x, args.repeat, args.device) for f in (model, ind, ours))
        eager_parts = ", ".join(f"{op} x{c}" for op, c in report["unsupported"].items()) or "-"
        print(f"{name:<24} {ours_compile:>11.2f} {ind_compile:>11.2f} {eager_s * 1e3:>9.3f} {ind_s * 1e3:>11.3f} "
              f"{ours_s * 1e3:>8.3f} {eager_s / ours_s:>7.2f}x {ind_s / ours_s:>7.2f}x  {eager_parts}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
