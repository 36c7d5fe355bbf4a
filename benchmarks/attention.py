"""Attention through the default GPU pipeline next to ``F.scaled_dot_product_attention``, in one process.

``affine_ir.library.attention(B, H, S, D, dtype)`` compiled by ``runtime.compile(target="cuda")``;
its launches (grid, block) are printed from the compiled kernels, so one sees whether every
kernel is parallel (issue 17: at least 128 threads per block and B*H*S/128 blocks). Both sides run
on the same random normal torch tensors on the device, are checked against SDPA in f32 (max |ours
- sdpa| / max |sdpa| <= ``--rtol``), then timed: median of ``--repeat`` CUDA-event timings after
``--warmup`` calls; ours through ``exe.bind(*args)`` (only the launches, as a torch op).

    python benchmarks/attention.py [--b 4 --h 16 --s 2048 --d 64] [--dtype f16] [--causal] [--repeat 20] [--online]
"""

from __future__ import annotations

import argparse
import math
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("b", 4), ("h", 16), ("s", 2048), ("d", 64)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--dtype", default="f16", choices=("f16", "bf16", "f32"))
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=2e-2)
    ap.add_argument("--online", action="store_true", help="compile with gpu_pipeline(online_reductions=True) "
                                                         "(the max and the sum in one loop: online softmax)")
    a = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F

    import runtime
    from affine_ir import library as L
    from runtime import cuda_driver

    tdtype = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[a.dtype]
    m = L.attention(a.b, a.h, a.s, a.d, dtype=a.dtype, causal=a.causal)
    t0 = time.perf_counter()
    pipeline = None
    if a.online:
        from transforms.pipelines import gpu_pipeline

        pipeline = gpu_pipeline(online_reductions=True, wgmma=runtime.cuda.has_wgmma(runtime.cuda.default_arch()))
    exe = runtime.compile(m, target="cuda", pipeline=pipeline)
    compile_s = time.perf_counter() - t0
    for k in exe.kernels:
        threads = math.prod(k.block)
        print(f"kernel {k.name}: block {k.block} ({threads} threads), static shared {k.static_shared_bytes} B")
    for op in exe.function.walk():
        if op.name == "gpu.launch":
            print(f"  launch grid: {[v.owner.value if hasattr(v.owner, 'value') else '?' for v in op.grid_size]}")
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k_, v = (torch.randn(a.b, a.h, a.s, a.d, device="cuda", dtype=tdtype, generator=gen) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    exe(q, k_, v, out)
    want = F.scaled_dot_product_attention(q, k_, v, is_causal=a.causal)
    err = ((out.float() - want.float()).abs().max() / want.float().abs().max()).item()
    bound = exe.bind(q, k_, v, out)
    ours = cuda_driver.time_ms(bound, repeat=a.repeat, warmup=a.warmup)
    sdpa = cuda_driver.time_ms(lambda: F.scaled_dot_product_attention(q, k_, v, is_causal=a.causal),
                               repeat=a.repeat, warmup=a.warmup)
    bound.close()
    flops = 4.0 * a.b * a.h * a.s * a.s * a.d / (2 if a.causal else 1)
    print(f"attention B={a.b} H={a.h} S={a.s} D={a.d} {a.dtype}{' causal' if a.causal else ''}: ours {ours:.3f} ms "
          f"({flops / ours / 1e9:.1f} TFLOP/s), SDPA {sdpa:.3f} ms ({flops / sdpa / 1e9:.1f} TFLOP/s), "
          f"SDPA/ours {sdpa / ours:.4f}; max rel err {err:.2e} ({'ok' if err <= a.rtol else 'FAIL'}); "
          f"compile {compile_s:.1f} s")
    return 0 if err <= a.rtol else 1


if __name__ == "__main__":
    raise SystemExit(main())
