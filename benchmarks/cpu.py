"""The CPU backend against numpy and against itself with no passes (issue 6).

For each workload: the module from ``affine_ir.library``; **ours** is
``runtime.compile(m, target="cpu")`` (the default CPU pipeline: fusion, cache tiles from the
cost model, register tiles, vectorization, threads; then LLVM -O3), **no passes** is
``runtime.compile(m, target="cpu", pipeline="")`` (the library's loop nests JIT-compiled as
they are, LLVM -O3 with its own vectorizers), **numpy** the same computation written the
natural way in numpy (matmul through its BLAS, OpenBLAS here). Before timing, ours and the
no-pass JIT are checked against numpy (``rtol`` per workload). Times are the median of
``--repeat`` calls after one warm-up call; compile times are measured with the kernel caches
disabled (a fresh cache directory and an empty memory cache): "passes" is the pass pipeline,
"llvm" emitting LLVM IR + optimizing + machine code + loading.

    python benchmarks/cpu.py [--repeat 9] [--only matmul] [--record]

``--record`` appends the table to ``benchmarks/RESULTS.md`` with the date and machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import affine_ir as air
import runtime
from analysis.targets import host_cpu
from transforms import PassManager
from transforms.pipelines import CPU_PIPELINE


@dataclass
class Workload:
    name: str
    shape: str
    module: Callable[[], air.ModuleOp]
    inputs: Callable[[np.random.Generator], list[np.ndarray]]  # every argument; the last is the output
    numpy: Callable[..., None]  # numpy(*args) writes the output (the last argument)
    work: float  # flops (matmul) or bytes moved at least once (memory-bound workloads)
    unit: str  # "GFLOP/s" or "GB/s"
    rtol: float


def _matmul(n: int) -> Workload:
    def inputs(rng):
        return [rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32),
                np.zeros((n, n), np.float32)]

    def ref(a, b, c):
        np.matmul(a, b, out=c)

    return Workload("matmul", f"{n}x{n}x{n} f32", lambda: air.library.matmul(n, n, n), inputs, ref, 2.0 * n**3,
                    "GFLOP/s", 1e-4)


GELU_C = np.float32(0.7978845608028654)


def _chain(m: int, n: int) -> Workload:
    def inputs(rng):
        return [rng.standard_normal((m, n), dtype=np.float32), rng.standard_normal((m, n), dtype=np.float32),
                np.zeros((m, n), np.float32)]

    def ref(x, b, y):
        v = x + b
        y[...] = np.float32(0.5) * v * (np.float32(1) + np.tanh(GELU_C * (v + np.float32(0.044715) * v * v * v)))

    return Workload("bias + GELU (chain)", f"{m}x{n} f32",
                    lambda: air.library.elementwise_chain(("add", "gelu"), (m, n), approximate="tanh"),
                    inputs, ref, 3.0 * 4 * m * n, "GB/s", 1e-4)


def _softmax(m: int, n: int) -> Workload:
    def inputs(rng):
        return [rng.standard_normal((m, n), dtype=np.float32), np.zeros((m, n), np.float32)]

    def ref(x, y):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        y[...] = e / e.sum(axis=1, keepdims=True)

    return Workload("softmax", f"{m}x{n} f32", lambda: air.library.softmax((m, n)), inputs, ref, 2.0 * 4 * m * n,
                    "GB/s", 1e-4)


def _layernorm(m: int, n: int) -> Workload:
    def inputs(rng):
        return [rng.standard_normal((m, n), dtype=np.float32), rng.standard_normal(n, dtype=np.float32),
                rng.standard_normal(n, dtype=np.float32), np.zeros((m, n), np.float32)]

    def ref(x, g, b, y):
        mu = x.mean(axis=1, keepdims=True)
        d = x - mu
        var = (d * d).mean(axis=1, keepdims=True)
        y[...] = d / np.sqrt(var + np.float32(1e-5)) * g + b

    return Workload("layer norm", f"{m}x{n} f32", lambda: air.library.layernorm(m, n), inputs, ref,
                    2.0 * 4 * m * n, "GB/s", 1e-3)


WORKLOADS = [_matmul(512), _matmul(1024), _chain(2048, 4096), _softmax(2048, 4096), _layernorm(2048, 4096)]


def _median_ms(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def _compile(module, pipeline: str) -> tuple[object, float, float]:
    """(executable, pass seconds, LLVM seconds), caches off."""
    t0 = time.perf_counter()
    optimized = PassManager.parse(pipeline).run(module) if pipeline else module
    t1 = time.perf_counter()
    runtime.cpu.clear_memory_cache()
    k = runtime.compile(optimized, target="cpu", pipeline="")
    return k, t1 - t0, time.perf_counter() - t1


def _check(name: str, out: np.ndarray, want: np.ndarray, rtol: float) -> None:
    scale = float(np.abs(want).max()) or 1.0
    err = float(np.abs(out.astype(np.float64) - want).max()) / scale
    if not err <= rtol:
        raise SystemExit(f"{name}: max error {err:.3g} (relative to max |x|) exceeds {rtol:g}")


def run(w: Workload, repeat: int) -> dict:
    rng = np.random.default_rng(0)
    args = w.inputs(rng)
    want = args[-1].copy()
    w.numpy(*args[:-1], want)
    module = w.module()
    ours, ours_passes, ours_llvm = _compile(module, CPU_PIPELINE)
    plain, _, plain_llvm = _compile(module, "")
    row = {"workload": w.name, "shape": w.shape, "passes_s": ours_passes, "llvm_s": ours_llvm,
           "plain_llvm_s": plain_llvm}
    for label, k in (("ours", ours), ("plain", plain)):
        out = [a.copy() for a in args]
        k(*out)
        _check(f"{w.name} {w.shape} ({label})", out[-1], want, w.rtol)
        row[f"{label}_ms"] = _median_ms(lambda k=k, out=out: k(*out), repeat)
    scratch = args[-1].copy()
    row["numpy_ms"] = _median_ms(lambda: w.numpy(*args[:-1], scratch), repeat)
    row["rate"] = w.work / (row["ours_ms"] * 1e-3) / 1e9
    row["unit"] = w.unit
    return row


def table(rows: list[dict]) -> str:
    head = ("| workload | shape | numpy ms | no passes ms | ours ms | ours vs numpy | ours vs no passes | ours rate "
            "| compile s (passes + LLVM) |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(f"| {r['workload']} | {r['shape']} | {r['numpy_ms']:.2f} | {r['plain_ms']:.1f} | "
                     f"{r['ours_ms']:.2f} | {r['numpy_ms'] / r['ours_ms']:.2f}x | "
                     f"{r['plain_ms'] / r['ours_ms']:.1f}x | "
                     f"{r['rate']:.1f} {r['unit']} | {r['passes_s'] + r['llvm_s']:.2f} "
                     f"({r['passes_s']:.2f} + {r['llvm_s']:.2f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--only", help="run the workloads whose name contains this text")
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    os.environ["AFFINE_IR_CACHE"] = tempfile.mkdtemp(prefix="affine-ir-bench-")
    cpu = host_cpu()
    print(f"{cpu.name}: {cpu.cores} cores, {cpu.vector_bits}-bit vectors; numpy {np.__version__}; "
          f"pipeline {CPU_PIPELINE}", flush=True)
    rows = []
    for w in WORKLOADS:
        if args.only and args.only not in w.name:
            continue
        rows.append(run(w, args.repeat))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    print("\n" + text)
    if args.record:
        date = datetime.date.today().isoformat()
        cmd = "python benchmarks/cpu.py " + " ".join(argv if argv is not None else sys.argv[1:])
        section = (f"\n## {date}: CPU backend vs numpy and vs no passes (issue 6)\n\n"
                   f"- Machine: {cpu.name}, {cpu.cores} cores, {cpu.vector_bits}-bit vectors, {platform.platform()}, "
                   f"Python {platform.python_version()}, numpy {np.__version__} (OpenBLAS); load average "
                   f"{os.getloadavg()[0]:.1f} at the end.\n- Command: `{cmd.strip()}`; median of {args.repeat} calls "
                   f"after a warm-up; compile times with the kernel caches off.\n- Pipeline: `{CPU_PIPELINE}`.\n\n"
                   f"{text}\n")
        with open(Path(__file__).with_name("RESULTS.md"), "a") as fh:
            fh.write(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
