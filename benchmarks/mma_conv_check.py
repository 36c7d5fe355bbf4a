"""Matrix-unit convolutions and linear layers (``gpu-map-mma``) against cuDNN / Inductor: compile,
check, time (issue 18, items 2-3).

Convolutions: the ResNet-50 layers of :data:`gpu.RESNET50_LAYERS` in f16 at batch 1 and 8, NHWC
and NCHW (``air.library.conv2d(..., layout, dtype="f16")``: f16 storage, f32 sums), through
``runtime.compile(m, target="cuda")`` (the default GPU pipeline: ``gpu-map-mma`` maps them unless
its trace says why not; each operand's staging -- ``cp.async`` chunks or gathered per element -- is
printed), against ``F.conv2d`` with ``torch.backends.cudnn.benchmark = True`` on the same tensors
(channels-last tensors for NHWC). Linear layers: ``air.library.mlp(M, N, K, dtype="f16")``
(matmul + bias + GELU) against ``torch.compile`` of the same torch function. Matmuls 4096^3 through
the options of ``gpu_pipeline``: f32 with ``allow_tf32=True`` against cuBLAS-TF32 (B given ``K x N``,
gathered; and ``N x K``, ``cp.async``), f16 with ``accumulate_f16=True`` against cuBLAS f16, and
int8 (``dtype="i8"``: i8 x i8 -> i32, B given ``N x K``) against ``torch._int_mm`` (exact: the check
asks equality).

Each result is checked before timing: max |ours - torch| / max |torch| below ``--rtol`` (f16
outputs of f32 sums: both round once per element, the sums in different orders), else the row says
MISMATCH, it is not timed and the script exits 1. Timing: ``--warmup`` calls, then the median of
``--repeat`` CUDA-event timings (:func:`runtime.cuda_driver.time_all_ms`, ours through
``exe.bind``), inputs rotated over enough copies to exceed 2x L2; ratio = torch time / ours.
``--budget`` seconds (default 280) stops starting new rows, so the run ends in about 5 minutes.

    python benchmarks/mma_conv_check.py                        # all rows
    python benchmarks/mma_conv_check.py --only NHWC --batch 8  # a subset
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

from gpu import DEFAULT_L2_BYTES, RESNET50_LAYERS, Rotation, compile_ours, rotation_copies  # noqa: E402

import affine_ir as air  # noqa: E402

#: (M, N, K) of the linear layers (matmul + bias + GELU).
MLP_SHAPES = ((2048, 4096, 4096), (128, 11008, 4096))
HEADER = (f"{'case':<44} {'staging':<34} {'comp s':>6} {'rel err':>8} {'ours ms':>8} {'torch ms':>8} "
          f"{'ours TF':>8} {'torch TF':>8} {'ratio':>6}")


def staging(exe) -> str:
    """How gpu-map-mma staged each operand (or why it left the nest to gpu-schedule)."""
    for d in getattr(exe.trace, "decisions", []):
        if d.pass_name == "gpu-map-mma" and "contraction" in d.message:
            if d.kind != "applied":
                return "SIMT: " + d.message.split(": ", 2)[-1]
            if "on warpgroup MMA (sm_90a)" in d.message:
                box = d.message.split("TMA box of ")[-1].split(" ")[0] if "TMA box of" in d.message else "GEMM"
                return f"wgmma, A boxes {box}"
            parts = d.message.split("; ")[1:]
            return ", ".join(f"{p[0]} {'gather' if 'gathered' in p else 'cp.async'}" for p in parts)
    return "?"


def _time(fn_sets, args) -> float:
    from runtime import cuda_driver

    fn, sets = fn_sets
    return statistics.median(cuda_driver.time_all_ms(Rotation(fn, sets), repeat=args.repeat, warmup=args.warmup))


def _rel_err(got, want) -> float:
    """max |got - want| / max |want|; for integers 0 exactly when they are equal (else at least 1)."""
    if not got.dtype.is_floating_point:
        return 0.0 if torch_equal(got, want) else max(1.0, float((got.double() - want.double()).abs().max()))
    return float((got.double() - want.double()).abs().max() / want.double().abs().max())


def torch_equal(a, b) -> bool:
    return bool((a == b).all())


def run_case(torch, name: str, module, make_inputs, ours_out, reference, flops: float, args) -> tuple[str, bool]:
    """Compile ``module``, check it against ``reference`` on the first input set, time both."""
    module, pipeline = module if isinstance(module, tuple) else (module, None)
    exe, comp_s, _ = compile_ours(module, pipeline=pipeline)
    sets = make_inputs()
    exe(*sets[0])
    want = reference(*sets[0])
    err = _rel_err(ours_out(sets[0]), want)
    row = f"{name:<44} {staging(exe)[:34]:<34} {comp_s:>6.1f} {err:>8.1e}"
    if not err <= args.rtol:  # NaN (an element never written) fails too
        return row + f"  MISMATCH (rtol {args.rtol})", False
    bound = [exe.bind(*s) for s in sets]
    try:
        ours = _time((lambda b: b(), [(b,) for b in bound]), args)
    finally:
        for b in bound:
            b.close()
    theirs = _time((reference, sets), args)
    row += f" {ours:>8.3f} {theirs:>8.3f} {flops / ours / 1e9:>8.1f} {flops / theirs / 1e9:>8.1f} {theirs / ours:>6.2f}"
    return row, True


def conv_case(torch, n: int, layer: tuple, layout: str, args):
    import torch.nn.functional as F

    c, hw, f, k, s, p = layer
    o = (hw + 2 * p - k) // s + 1
    module = air.library.conv2d(n, c, hw, hw, f, k, k, stride=s, padding=p, layout=layout, dtype="f16")
    if args.wgmma_options:
        from transforms.pipelines import gpu_pipeline

        module = (module, gpu_pipeline(wgmma=True, wgmma_options=args.wgmma_options))
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    scale = 1 / math.sqrt(math.sqrt(c * k * k))
    nchw = layout == "NCHW"
    set_bytes = 2 * (n * c * hw * hw + f * c * k * k + n * f * o * o)

    def make_inputs():
        sets = []
        for _ in range(rotation_copies(set_bytes, args.l2)):
            x = (torch.randn(n, c, hw, hw, device="cuda", generator=gen) * scale).half()
            w = (torch.randn(f, c, k, k, device="cuda", generator=gen) * scale).half()
            if nchw:
                sets.append([x, w, torch.full((n, f, o, o), float("nan"), device="cuda", dtype=torch.half)])
            else:  # ours: input NHWC, filter HWCF, output NHWC; torch: the same storage as channels-last views
                sets.append([x.permute(0, 2, 3, 1).contiguous(), w.permute(2, 3, 1, 0).contiguous(),
                             torch.full((n, o, o, f), float("nan"), device="cuda", dtype=torch.half)])
        return sets

    def reference(x, w, _out):
        if nchw:
            return F.conv2d(x, w, stride=s, padding=p)
        return F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), stride=s, padding=p).permute(0, 2, 3, 1)

    name = f"conv {layout} n{n} c{c} {hw}x{hw} f{f} k{k} s{s} p{p}"
    return run_case(torch, name, module, make_inputs, lambda st: st[2], reference, 2.0 * n * f * o * o * c * k * k,
                    args)


def mlp_case(torch, shape: tuple, args):
    m, n, k = shape
    module = air.library.mlp(m, n, k, dtype="f16", approximate=args.gelu)
    names = [a.name_hint for a in module.functions[0].args]
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    scale = 1 / math.sqrt(math.sqrt(k))
    shapes = {"X": (m, k), "W": (k, n), "bias": (n,), "Y": (m, n)}
    if sorted(names) != sorted(shapes) or [tuple(a.type.shape) for a in module.functions[0].args] != [
            shapes[a] for a in names]:
        raise RuntimeError(f"mlp arguments {names}: expected X[M,K], W[K,N], bias[N], Y[M,N] (update this script)")
    set_bytes = 2 * (m * k + k * n + n + m * n)

    def make_inputs():
        sets = []
        for _ in range(rotation_copies(set_bytes, args.l2)):
            arrays = {a: (torch.randn(*shapes[a], device="cuda", generator=gen) * scale).half()
                      for a in ("X", "W", "bias")}
            arrays["Y"] = torch.full((m, n), float("nan"), device="cuda", dtype=torch.half)
            sets.append([arrays[a] for a in names])
        return sets

    pos = {a: names.index(a) for a in shapes}

    def eager(*arrays):
        x, w, b = arrays[pos["X"]], arrays[pos["W"]], arrays[pos["bias"]]
        return torch.nn.functional.gelu((x @ w) + b, approximate=args.gelu)

    compiled = torch.compile(eager)
    return run_case(torch, f"mlp f16 {m}x{n}x{k} (vs torch.compile)", module, make_inputs,
                    lambda st: st[pos["Y"]], compiled, 2.0 * m * n * k, args)


def matmul_case(torch, n: int, dtype: str, transpose_b: bool, args, **pipeline_options):
    from transforms.pipelines import gpu_pipeline

    module = air.library.matmul(n, n, n, dtype=dtype, transpose_b=transpose_b)
    tdt = {"f32": torch.float32, "f16": torch.float16, "i8": torch.int8}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    scale = 1 / math.sqrt(math.sqrt(n))
    set_bytes = 3 * n * n * tdt.itemsize

    def operand():
        if dtype == "i8":
            return torch.randint(-128, 128, (n, n), device="cuda", generator=gen, dtype=torch.int8)
        return (torch.randn(n, n, device="cuda", generator=gen) * scale).to(tdt)

    def make_inputs():
        out = torch.int32 if dtype == "i8" else tdt
        return [[operand(), operand(), torch.full((n, n), -1 if dtype == "i8" else float("nan"), device="cuda",
                                                  dtype=out)]
                for _ in range(rotation_copies(set_bytes, args.l2))]

    def reference(a, b, _c):
        b = b.T if transpose_b else b
        return torch._int_mm(a, b) if dtype == "i8" else a @ b

    what = " ".join(f"{k}" for k, v in pipeline_options.items() if v)
    anchor = {"f32": "cuBLAS-TF32", "f16": "cuBLAS", "i8": "torch._int_mm"}[dtype]
    name = f"matmul {dtype} {n}^3{' B^T' if transpose_b else ''} {what} (vs {anchor})"
    exe_module = (module, gpu_pipeline(**pipeline_options))
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "f32"
    try:
        return run_case(torch, name, exe_module, make_inputs, lambda st: st[2], reference, 2.0 * n ** 3, args)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="run the rows whose name contains this text (e.g. NHWC, 'k3 s1', mlp)")
    ap.add_argument("--batch", type=int, choices=(1, 8), help="one batch size (default: both)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rtol", type=float, default=2e-2, help="max |ours - torch| / max |torch| accepted")
    ap.add_argument("--budget", type=float, default=280.0, help="seconds after which no new row starts")
    ap.add_argument("--gelu", default="none", choices=("tanh", "none"),
                    help="the GELU form, in the library's mlp and in torch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wgmma-options", default="", help="convolutions through gpu_pipeline(wgmma=True) with these "
                                                        "gpu-map-mma options, e.g. 'wgmma-conv=true' (implicit GEMM "
                                                        "on warpgroup MMA)")
    args = ap.parse_args(argv)
    import torch

    import runtime

    if not torch.cuda.is_available() or not runtime.gpu_available():
        raise SystemExit(f"no usable GPU: {runtime.cuda_driver.gpu_unavailable_reason() or 'torch sees none'}")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    props = torch.cuda.get_device_properties(0)
    args.l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
    print(f"device: {props.name}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()} "
          f"(benchmark mode); median of {args.repeat} after {args.warmup} warm-up calls; inputs rotated past 2x L2",
          flush=True)
    print(HEADER, flush=True)
    def convs(n):
        return [(f"conv {layout} n{n} c{layer[0]} ", lambda n=n, layer=layer, layout=layout: conv_case(
            torch, n, layer, layout, args)) for layout in ("NHWC", "NCHW") for layer in RESNET50_LAYERS]

    extras = [(f"mlp {s[0]}x{s[1]}x{s[2]}", lambda s=s: mlp_case(torch, s, args)) for s in MLP_SHAPES]
    extras += [(f"matmul tf32{' B^T' if tb else ''}", lambda tb=tb: matmul_case(torch, 4096, "f32", tb, args,
                                                                                 allow_tf32=True))
               for tb in (False, True)]
    extras += [("matmul f16 accumulate_f16", lambda: matmul_case(torch, 4096, "f16", False, args,
                                                                 accumulate_f16=True))]
    extras += [("matmul i8 B^T", lambda: matmul_case(torch, 4096, "i8", True, args))]
    batches = (args.batch,) if args.batch else (1, 8)
    cases = convs(batches[0]) + extras + [c for n in batches[1:] for c in convs(n)]
    start, ok, skipped = time.perf_counter(), True, []
    for name, case in cases:
        if args.only and args.only not in name:
            continue
        if time.perf_counter() - start > args.budget:
            skipped.append(name.strip())
            continue
        try:
            row, good = case()
        except Exception as e:  # a failure is a row, the run goes on
            traceback.print_exc()
            row, good = f"{name:<44} FAILED: {type(e).__name__}: {str(e)[:200]}", False
        torch.cuda.empty_cache()
        print(row, flush=True)
        ok &= good
    if skipped:
        print(f"not run (over the {args.budget:.0f} s budget): {', '.join(skipped)}")
    if not ok:
        print("SOME CASES FAILED OR MISMATCHED (see the rows above)", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
