"""The unoptimized GPU mapping (issue 7) against PyTorch on the same GPU, in one process:
matmul (cuBLAS, TF32 off), conv2d (cuDNN, benchmark mode) and softmax (torch.softmax).

Our side: ``runtime.compile(library op, target="cuda")`` -- ``gpu-map`` puts each top-level
nest on a grid (one thread per output element, reductions sequential per thread), CUDA C,
NVRTC -- run on device arrays (torch tensors, zero-copy) so no host copies are timed. Both
sides are checked against each other before timing and timed with CUDA events
(``triton.testing.do_bench``, median). This is the baseline the GPU pipeline (tiling, shared
memory, tensor cores) is measured against later.

    python benchmarks/cuda_baseline.py
"""

from __future__ import annotations

import torch
import triton.testing

import affine_ir as air
import runtime

L = air.library


def _bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def matmul(n: int):
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    c = torch.zeros(n, n, device="cuda")
    k = runtime.compile(L.matmul(n, n, n), target="cuda")
    k(a, b, c)
    torch.testing.assert_close(c, a @ b, rtol=1e-3, atol=1e-3)
    return f"matmul {n}x{n}x{n} f32", _bench(lambda: k(a, b, c)), _bench(lambda: a @ b), 2 * n**3


def conv2d(n, c, h, f, r):
    x, w = torch.randn(n, c, h, h, device="cuda"), torch.randn(f, c, r, r, device="cuda")
    out = torch.zeros(n, f, h - r + 1, h - r + 1, device="cuda")
    k = runtime.compile(L.conv2d(n, c, h, h, f, r, r), target="cuda")
    k(x, w, out)
    torch.testing.assert_close(out, torch.nn.functional.conv2d(x, w), rtol=1e-3, atol=1e-3)
    flops = 2 * n * f * (h - r + 1) ** 2 * c * r * r
    return (f"conv2d N{n} C{c} H{h} F{f} {r}x{r} f32", _bench(lambda: k(x, w, out)),
            _bench(lambda: torch.nn.functional.conv2d(x, w)), flops)


def softmax(rows, cols):
    x = torch.randn(rows, cols, device="cuda")
    y = torch.zeros_like(x)
    k = runtime.compile(L.softmax((rows, cols)), target="cuda")
    k(x, y)
    torch.testing.assert_close(y, torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
    return f"softmax {rows}x{cols} f32", _bench(lambda: k(x, y)), _bench(lambda: torch.softmax(x, -1)), None


def main() -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("| kernel | ours (ms) | torch (ms) | ours / torch time | ours GFLOP/s |")
    print("|---|---:|---:|---:|---:|")
    for name, ours, theirs, flops in (matmul(1024), matmul(4096), conv2d(8, 64, 56, 64, 3), softmax(4096, 4096)):
        rate = f"{flops / ours / 1e6:.0f}" if flops else "-"
        print(f"| {name} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.1f}x | {rate} |")


if __name__ == "__main__":
    main()
