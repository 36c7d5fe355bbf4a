"""Attention through our GPU pipeline next to ``F.scaled_dot_product_attention`` and ``torch.compile`` of the eager
formula, in one process (issue 20's table).

``affine_ir.library.attention(B, H, S, D, dtype, causal, num_kv_heads, kv_len)`` compiled by
``runtime.compile(target="cuda")`` (``--online``: ``gpu_pipeline(online_reductions=True)``, the max and the sum in
one loop); its launches (grid, block) are printed. Every side runs on the same random normal torch tensors on the
device and is checked against SDPA in f32 first (max |x - sdpa| / max |sdpa| <= ``--rtol``; a row failing it is
not timed and the run exits 1); then timed: median of ``--repeat`` CUDA-event timings after ``--warmup`` calls,
ours through ``exe.bind(*args)`` (only the launches). The SDPA backend that ran is read from the profiler's
kernel names (flash, memory-efficient, cuDNN or math). TFLOP/s count ``4 * B * H * S * Skv * D`` (halved for
causal).

    python benchmarks/attention.py [--b 4 --h 16 --s 2048 --d 64] [--dtype f16] [--causal] [--online]
    python benchmarks/attention.py --table [--dtypes f16,bf16] [--budget 500]   # the issue's shapes and decode
"""

from __future__ import annotations

import argparse
import math
import time

#: (B, H, S, D) of issue 20's forward table, each causal and not.
FORWARD = ((4, 16, 2048, 64), (4, 16, 2048, 128), (2, 16, 8192, 128), (1, 32, 4096, 128))
#: Decode: one query row per sequence against a KV cache of ``S_kv`` (B, H, S_kv, D).
DECODE = (16, 32, 4096, 128)
BACKENDS = (("flash", "flash"), ("efficient", "memory-efficient"), ("cudnn", "cuDNN"), ("fmha", "memory-efficient"))


def sdpa_backend(torch, fn) -> str:
    """Which SDPA kernel ``fn`` runs, from the CUDA kernel names the profiler records."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = " ".join(e.name.lower() for e in prof.events())
    return next((label for key, label in BACKENDS if key in names), "math")


def run_case(a, b, h, s, d, dtype: str, causal: bool, skv: int | None = None) -> tuple[str, bool]:
    import torch
    import torch.nn.functional as F

    import runtime
    from affine_ir import library as L
    from runtime import cuda_driver

    tdtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    skv = skv or s
    m = L.attention(b, h, s, d, dtype=dtype, causal=causal, kv_len=skv if skv != s else None)
    pipeline = None
    if a.online:
        from transforms.pipelines import gpu_pipeline

        pipeline = gpu_pipeline(online_reductions=True, wgmma=runtime.cuda.has_wgmma(runtime.cuda.default_arch()))
    t0 = time.perf_counter()
    exe = runtime.compile(m, target="cuda", pipeline=pipeline)
    compile_s = time.perf_counter() - t0
    launches = [f"{k.name} block {k.block}" for k in exe.kernels]
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    q = torch.randn(b, h, s, d, device="cuda", dtype=tdtype, generator=gen)
    k_, v = (torch.randn(b, h, skv, d, device="cuda", dtype=tdtype, generator=gen) for _ in range(2))
    out = torch.full_like(q, float("nan"))

    def sdpa():
        return F.scaled_dot_product_attention(q, k_, v, is_causal=causal)

    def eager(q, k_, v):
        scores = q @ k_.transpose(-2, -1) / math.sqrt(d)
        if causal:
            scores = scores.masked_fill(torch.ones(s, skv, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
        return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v

    compiled = torch.compile(eager)
    exe(q, k_, v, out)
    want = sdpa().float()
    scale = want.abs().max()
    errs = {"ours": ((out.float() - want).abs().max() / scale).item(),
            "compile": ((compiled(q, k_, v).float() - want).abs().max() / scale).item()}
    flops = 4.0 * b * h * s * skv * d / (2 if causal else 1)
    name = f"B={b} H={h} S={s}{f' Skv={skv}' if skv != s else ''} D={d} {dtype}{' causal' if causal else ''}"
    if any(e > a.rtol for e in errs.values()):
        return f"{name}: MISMATCH ({', '.join(f'{k} {e:.2e}' for k, e in errs.items())})", False
    bound = exe.bind(q, k_, v, out)
    ours = cuda_driver.time_ms(bound, repeat=a.repeat, warmup=a.warmup)
    bound.close()
    ref = cuda_driver.time_ms(sdpa, repeat=a.repeat, warmup=a.warmup)
    comp = cuda_driver.time_ms(lambda: compiled(q, k_, v), repeat=a.repeat, warmup=a.warmup)
    backend = sdpa_backend(torch, sdpa)
    row = (f"{name}: ours {ours:.3f} ms ({flops / ours / 1e9:.1f} TFLOP/s), SDPA[{backend}] {ref:.3f} ms "
           f"({flops / ref / 1e9:.1f} TFLOP/s), torch.compile {comp:.3f} ms; SDPA/ours {ref / ours:.4f}, "
           f"compile/ours {comp / ours:.4f}; rel err {errs['ours']:.1e}; compile {compile_s:.1f} s; "
           f"{len(launches)} kernel(s): {'; '.join(launches)}")
    return row, True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("b", 4), ("h", 16), ("s", 2048), ("d", 64)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--kv-len", type=int, help="keys/values of this length (decode: --s 1)")
    ap.add_argument("--dtype", default="f16", choices=("f16", "bf16", "f32"))
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--table", action="store_true", help="issue 20's shapes, causal and not, and decode")
    ap.add_argument("--dtypes", default="f16,bf16", help="with --table: the dtypes")
    ap.add_argument("--budget", type=float, default=500.0, help="with --table: seconds after which no row starts")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=2e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--online", action="store_true", help="compile with gpu_pipeline(online_reductions=True) "
                                                         "(the max and the sum in one loop: online softmax)")
    a = ap.parse_args(argv)
    if not a.table:
        row, ok = run_case(a, a.b, a.h, a.s, a.d, a.dtype, a.causal, a.kv_len)
        print(row, flush=True)
        return 0 if ok else 1
    cases = [(shape, dtype, causal, None) for dtype in a.dtypes.split(",") for shape in FORWARD
             for causal in (False, True)]
    cases += [((DECODE[0], DECODE[1], 1, DECODE[3]), dtype, False, DECODE[2]) for dtype in a.dtypes.split(",")]
    start, ok = time.perf_counter(), True
    for (b, h, s, d), dtype, causal, skv in cases:
        if time.perf_counter() - start > a.budget:
            print(f"skipped (budget): B={b} H={h} S={s} D={d} {dtype}{' causal' if causal else ''}", flush=True)
            continue
        row, good = run_case(a, b, h, s, d, dtype, causal, skv)
        ok &= good
        print(row, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
