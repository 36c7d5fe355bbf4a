"""The generated code of the benchmark kernels, hashed, and the time the passes take on them.

For refactorings that must not change what the compiler emits (issue 16): run it before and
after, and compare. No GPU is needed (the CUDA C is printed, not compiled).

    python benchmarks/codegen_snapshot.py --out before.json [--repeat 3]
    python benchmarks/codegen_snapshot.py --out after.json
    python benchmarks/codegen_snapshot.py --compare before.json after.json

Each kernel of ``benchmarks/gpu.py --list`` goes through the default GPU pipeline and
``codegen.cuda.emit``; each of ``benchmarks/cpu.py`` through the CPU pipeline and
``codegen.llvm.emit``. Recorded per kernel: the sha256 of the CUDA C / LLVM IR text and the
pass time (the minimum over ``--repeat`` runs, each on a freshly built module).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codegen  # noqa: E402
from transforms import PassManager  # noqa: E402
from transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE  # noqa: E402


def _timed(build, pipeline: str, repeat: int):
    best, out = None, None
    for _ in range(repeat):
        module = build()
        t0 = time.perf_counter()
        out = PassManager.parse(pipeline).run(module)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    return out, best


def snapshot(repeat: int = 1) -> dict:
    """``{"cuda": {kernel: sha256}, "llvm": {...}, "gpu_pass_s": {...}, "cpu_pass_s": {...}}``."""
    import cpu as cpu_bench
    import gpu as gpu_bench

    res: dict = {"cuda": {}, "llvm": {}, "gpu_pass_s": {}, "cpu_pass_s": {}}
    for w in gpu_bench.workloads():
        mapped, seconds = _timed(w.build, GPU_PIPELINE, repeat)
        res["cuda"][w.label] = hashlib.sha256(codegen.cuda.emit(mapped).source.encode()).hexdigest()
        res["gpu_pass_s"][w.label] = round(seconds, 4)
    for w in cpu_bench.WORKLOADS:
        key = f"{w.name} {w.shape}"
        scheduled, seconds = _timed(w.module, CPU_PIPELINE, repeat)
        res["llvm"][key] = hashlib.sha256(str(codegen.llvm.emit(scheduled)).encode()).hexdigest()
        res["cpu_pass_s"][key] = round(seconds, 4)
    return res


def compare(a: dict, b: dict) -> list[str]:
    """Lines: each kernel whose code differs, then pass-time totals (before, after, ratio)."""
    lines = [f"DIFFERS {kind} {k}" for kind in ("cuda", "llvm") for k in a[kind] if a[kind][k] != b[kind].get(k)]
    lines.append("code: all identical" if not lines else f"code: {len(lines)} kernel(s) differ")
    for kind in ("gpu_pass_s", "cpu_pass_s"):
        ta, tb = sum(a[kind].values()), sum(b[kind].values())
        lines.append(f"{kind}: {ta:.3f} s -> {tb:.3f} s ({tb / ta:.3f}x)")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the snapshot (JSON) here")
    ap.add_argument("--repeat", type=int, default=1, help="runs per kernel; the pass time is the minimum")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two snapshots")
    args = ap.parse_args(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        lines = compare(a, b)
        print("\n".join(lines))
        return 1 if any(line.startswith("DIFFERS") for line in lines) else 0
    res = snapshot(max(1, args.repeat))
    text = json.dumps(res, indent=1, sort_keys=True)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
