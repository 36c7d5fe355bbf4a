"""Matrix-unit matmul (``gpu-map-mma``) against cuBLAS: compile, check, time (issue 18, item 2).

For each shape and dtype (f16, bf16): ``air.library.matmul(M, N, K, dtype)`` -- ``C = A @ B``, A
``M x K``, B ``K x N``, C ``M x N``, all in the dtype, f32 sums -- through ``runtime.compile(m,
target="cuda")`` (the default GPU pipeline: ``gpu-map-mma`` maps it to ``mma.sync`` unless its trace
says why not, printed); the result checked against ``torch.matmul`` on the same inputs (random
normal, scaled by 1/sqrt(K)): max |ours - torch| / max |torch| must stay below ``--rtol`` (f16/bf16
outputs of f32 sums of K terms: both round once per element, cuBLAS may sum in another order),
else the row says MISMATCH, the shape is not timed and the script exits 1 at the end. Timing:
``--warmup`` calls, then the median of ``--repeat`` CUDA-event timings of one call each
(:func:`runtime.cuda_driver.time_all_ms`; ours through ``exe.bind``: arguments packed once, each
call launches the kernel, as a torch op does), inputs rotated over enough copies to exceed 2x L2
(:func:`gpu.rotation_copies`), torch's side the same way. TF32 is off (it does not apply to 16-bit
inputs anyway).

    python benchmarks/mma_check.py                       # every shape, f16 and bf16 (about 2-3 minutes)
    python benchmarks/mma_check.py --only 4096 --dtype f16 --repeat 20
    python benchmarks/mma_check.py --transpose-b --wgmma # B given N x K (a linear layer's weight), on
                                                         # Hopper's warpgroup MMA (issue 19)

``--dtype e4m3 --wgmma``: the 8-bit float GEMM, ``air.library.scaled_matmul`` (``f8E4M3FN`` operands, per-tensor
f32 scales, bf16 output) against ``torch._scaled_mm`` (its default ``use_fast_accum=False``; the row adds the
``use_fast_accum=True`` time, the accumulation our kernel does: the tensor cores' own).

``--transpose-b``: ``C = A @ B^T`` with B given ``N x K`` (``air.library.matmul(..., transpose_b=True)``,
cuBLAS's side ``torch.matmul(A, B.t())``); ``--wgmma``: the GPU pipeline with ``gpu-map-mma{wgmma=true}``
(``transforms.pipelines.gpu_pipeline(wgmma=True)``).

The table: shape, dtype, our tiles (from the trace), compile seconds, relative error, ours ms,
cuBLAS ms, our TFLOP/s, cuBLAS TFLOP/s and the ratio (cuBLAS time / ours: the issue's target is
>= 0.6 at 4096 and 8192).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu import DEFAULT_L2_BYTES, Rotation, compile_ours, rotation_copies  # noqa: E402

import affine_ir as air  # noqa: E402

#: (M, N, K): the issues' squares (1024 and 2048: issue 19), then LLM-layer shapes (decode-like M = 16,
#: prefill M = 2048).
SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)] + [
    (m, n, k) for m in (16, 128, 2048) for n, k in ((4096, 4096), (11008, 4096), (4096, 11008))]
DTYPES = ("f16", "bf16")
#: The 8-bit float runs (``--dtype e4m3``): ``air.library.scaled_matmul`` against ``torch._scaled_mm``
#: (per-tensor scales, bf16 output, B given N x K), on warpgroup MMA only.
FP8 = {"e4m3": "f8E4M3FN"}
TARGET_RATIO = 0.6
HEADER = (f"{'M':>5} {'N':>6} {'K':>6} {'dtype':>5}  {'tiles':<44} {'comp s':>6} {'rel err':>8} {'ours ms':>8} "
          f"{'cuBLAS':>8} {'ours TF':>8} {'cuBLAS TF':>9} {'ratio':>6}")


def mapped_tiles(exe) -> str:
    """What gpu-map-mma decided for the contraction (the tiles, or why it left it to gpu-schedule)."""
    for d in getattr(exe.trace, "decisions", []):
        if d.pass_name == "gpu-map-mma" and "contraction" in d.message:
            if d.kind == "applied" and "warpgroup MMA" in d.message:
                return "wgmma " + d.message.split("block tile ", 1)[-1].split(";", 1)[0]
            if d.kind == "applied":
                text = d.message.split("block tile ", 1)[-1]
                return "mma " + text.split(", A ", 1)[0].replace(" m16n8 fragments", "")
            return "SIMT: " + d.message.split(": ", 2)[-1]
    return "?"


def check_and_time(torch, m: int, n: int, k: int, dtype: str, args) -> tuple[str, float | None]:
    """(the table row, cuBLAS time / ours; None on a mismatch)."""
    from runtime import cuda_driver

    fp8 = dtype in FP8
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "e4m3": torch.bfloat16}[dtype]
    t0 = time.perf_counter()
    tb = args.transpose_b or fp8
    module = air.library.scaled_matmul(m, n, k, FP8[dtype], "bf16") if fp8 else \
        air.library.matmul(m, n, k, dtype=dtype, transpose_b=tb)
    exe, comp_s, _ = compile_ours(module, pipeline=args.pipeline)
    tiles = mapped_tiles(exe)
    set_bytes = (m * k + k * n) * (1 if fp8 else 2) + m * n * 2
    copies = rotation_copies(set_bytes, args.l2)
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    scale = (4 if fp8 else 1) / math.sqrt(math.sqrt(k))  # 8-bit: values of a few units, scaled back by 1/16
    idt = torch.float8_e4m3fn if fp8 else tdt
    sets = [[(torch.randn(m, k, device="cuda", generator=gen) * scale).to(idt),
             (torch.randn(*((n, k) if tb else (k, n)), device="cuda", generator=gen) * scale).to(idt),
             *((torch.tensor([0.25], device="cuda"), torch.tensor([0.25], device="cuda")) if fp8 else ()),
             torch.full((m, n), float("nan"), device="cuda", dtype=tdt)] for _ in range(copies)]

    def anchor(a, b, *scales, out=None, fast=False):
        if fp8:  # torch._scaled_mm takes B column-major: B^T of our N x K
            return torch._scaled_mm(a, b.t(), scales[0], scales[1], out_dtype=tdt, use_fast_accum=fast)
        return torch.matmul(a, b.t() if tb else b, out=out)

    exe(*sets[0])
    want = anchor(*sets[0][:-1])
    err = float((sets[0][-1].double() - want.double()).abs().max() / want.double().abs().max())
    row = f"{m:>5} {n:>6} {k:>6} {dtype:>5}  {tiles[:44]:<44} {comp_s:>6.1f} {err:>8.1e}"
    if not err <= args.rtol:  # NaN (an element never written) fails too
        bad = (sets[0][-1].double() - want.double()).abs() > args.rtol * want.double().abs().max()
        where = bad.nonzero()[:3].tolist()
        return row + f"  MISMATCH (rtol {args.rtol}; first bad elements {where}, {int(bad.sum())} in all)", None
    bound = [exe.bind(*s) for s in sets]
    try:
        ours = statistics.median(cuda_driver.time_all_ms(Rotation(lambda b: b(), [(b,) for b in bound]),
                                                         repeat=args.repeat, warmup=args.warmup))
    finally:
        for b in bound:
            b.close()
    out = torch.empty(m, n, device="cuda", dtype=tdt)

    def time_anchor(fast: bool = False) -> float:
        return statistics.median(cuda_driver.time_all_ms(
            Rotation(lambda *xs: anchor(*xs[:-1], out=out, fast=fast), sets), repeat=args.repeat, warmup=args.warmup))

    theirs = time_anchor()
    exe(*sets[-1])  # the last set again: with more sets than timed calls, the timing may not have reached it
    err2 = float((sets[-1][-1].double() - anchor(*sets[-1][:-1]).double()).abs().max()
                 / want.double().abs().max())
    flops = 2 * m * n * k
    ratio = theirs / ours
    row += (f" {ours:>8.3f} {theirs:>8.3f} {flops / ours / 1e9:>8.1f} {flops / theirs / 1e9:>9.1f} {ratio:>6.2f}"
            f"  ({time.perf_counter() - t0:.0f} s)")
    if fp8:  # ours accumulates as the tensor cores do, which is cuBLAS's use_fast_accum=True
        fast = time_anchor(True)
        row += f"  fast-accum cuBLAS {fast:.3f} ms, {flops / fast / 1e9:.1f} TF, ratio {fast / ours:.2f}"
    if not err2 <= args.rtol:
        return row + f"  MISMATCH after timing (input set {len(sets) - 1}: rel err {err2:.1e})", None
    return row, ratio


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="run the shapes whose 'MxNxK' contains this text")
    ap.add_argument("--dtype", choices=DTYPES + tuple(FP8), help="one dtype (default: f16 and bf16; e4m3: the "
                    "8-bit float GEMM vs torch._scaled_mm, needs --wgmma)")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=2e-2, help="max |ours - torch| / max |torch| accepted")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pipeline", help="compile with this pass pipeline instead of the default GPU pipeline (e.g. "
                                       "gpu_pipeline() with gpu-map-mma{tile-sizes=... stages=...})")
    ap.add_argument("--transpose-b", action="store_true", help="B given N x K: C = A @ B^T (a linear layer)")
    ap.add_argument("--wgmma", action="store_true", help="map onto warpgroup MMA (gpu_pipeline(wgmma=True))")
    ap.add_argument("--wgmma-options", default="", help="more gpu-map-mma options with --wgmma, e.g. "
                                                        "'wgmma-schedule=pingpong wgmma-tiles=128,128,2'")
    args = ap.parse_args(argv)
    if args.wgmma:
        from transforms.pipelines import gpu_pipeline

        args.pipeline = args.pipeline or gpu_pipeline(wgmma=True, wgmma_options=args.wgmma_options)
    import torch

    import runtime

    if not torch.cuda.is_available() or not runtime.gpu_available():
        raise SystemExit(f"no usable GPU: {runtime.cuda_driver.gpu_unavailable_reason() or 'torch sees none'}")
    torch.backends.cuda.matmul.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    args.l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
    print(f"device: {props.name}, torch {torch.__version__}, cuBLAS via torch.matmul; L2 {args.l2 / 2**20:.0f} MiB; "
          f"median of {args.repeat} after {args.warmup} warm-up calls; inputs rotated past 2x L2", flush=True)
    print(HEADER, flush=True)
    ok = True
    ratios: dict[tuple, float] = {}
    for m, n, k in SHAPES:
        if args.only and args.only not in f"{m}x{n}x{k}":
            continue
        for dtype in ([args.dtype] if args.dtype else DTYPES):
            try:
                row, ratio = check_and_time(torch, m, n, k, dtype, args)
            except Exception as e:  # a failure is a row, the run goes on
                traceback.print_exc()
                row, ratio = f"{m:>5} {n:>6} {k:>6} {dtype:>5}  FAILED: {type(e).__name__}: {str(e)[:200]}", None
            torch.cuda.empty_cache()  # the shape's input sets are gone with check_and_time's frame
            print(row, flush=True)
            ok &= ratio is not None
            if ratio is not None:
                ratios[(m, n, k, dtype)] = ratio
    squares = {key: r for key, r in ratios.items() if key[0] == key[1] == key[2]}
    for key, r in squares.items():
        verdict = "meets" if r >= TARGET_RATIO else "below"
        print(f"{key[3]} {key[0]}^3: {r:.2f}x cuBLAS ({verdict} the {TARGET_RATIO}x target)")
    if not ok:
        print("SOME SHAPES FAILED OR MISMATCHED (see the rows above)", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
