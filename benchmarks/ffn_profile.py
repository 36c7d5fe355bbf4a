"""Where an FFN block's time goes, ours (``torch.compile(backend=affine_ir)`` with ``AFFINE_IR_WGMMA=1``)
vs Inductor and eager: each kernel's device time (``torch.profiler``, CUPTI: our kernels launched through
cuda-python appear as ``forward_kernel<k>``), the time per call of back-to-back calls, and the host time
per call (20 calls without synchronizing). Issue 19's FFN target; RESULTS.md 2026-12-07 (fourth session).

    python benchmarks/ffn_profile.py [--tokens 2048] [--d 4096]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("AFFINE_IR_WGMMA", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from frontend import torch_backend  # noqa: E402


def profile(name: str, fn, x, calls: int = 10) -> None:
    fn(x)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(x)
        torch.cuda.synchronize()
    events = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)
    kernels = [(e.key[:60], e.device_time_total / calls / 1e3) for e in events if e.device_time_total > 0]
    print(f"{name}: " + ", ".join(f"{k} {ms:.3f} ms" for k, ms in kernels[:6]))
    t = time.perf_counter()
    for _ in range(20):
        fn(x)
    torch.cuda.synchronize()
    per_call = (time.perf_counter() - t) / 20
    t = time.perf_counter()
    for _ in range(20):
        fn(x)
    host = (time.perf_counter() - t) / 20
    torch.cuda.synchronize()
    print(f"{name}: device total {sum(ms for _, ms in kernels):.3f} ms, back-to-back {per_call * 1e3:.3f} ms per "
          f"call, host {host * 1e3:.3f} ms per call")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--d", type=int, default=4096)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a GPU")
    d = args.d
    model = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))
    model = model.cuda().half().eval()
    x = torch.randn(args.tokens, d, device="cuda", dtype=torch.half)
    with torch.no_grad():
        ours = torch.compile(model, backend=torch_backend.affine_ir_backend)
        want = model(x)
        err = float((ours(x).float() - want.float()).abs().max() / want.float().abs().max())
        print(f"{torch.cuda.get_device_name()}: FFN {args.tokens} x {d} -> {4 * d} -> {d} f16; ours vs eager "
              f"relative error {err:.1e}")
        for name, fn in (("ours", ours), ("inductor", torch.compile(model)), ("eager", model)):
            profile(name, fn, x)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
