"""The 30 PolyBench/C 4.2 kernels on the GPU pipeline, the CPU pipeline and PyTorch (issue 17), in one process.

For each kernel of ``benchmarks/polybench/`` at ``--dataset`` (default LARGE), its sizes compiled
in as constants as PolyBench/C compiles them (``#define``; ``--symbolic-sizes``: as index arguments,
one program for every size): **gpu** is ``runtime.compile(k.module(dataset), target="cuda")``
(the default GPU pipeline) on torch CUDA tensors (zero-copy); **cpu** ``runtime.compile(k.module(dataset),
target="cpu")`` (the default CPU pipeline,
threads on every host core) on numpy arrays; **torch** ``k.torch`` where there is one, on CUDA
tensors, TF32 off. Both compiles run with the kernel caches off (their seconds are in the table).

Correctness first: each side runs once on PolyBench's (inexact) inputs ``k.arguments(dataset)``;
cpu is compared with the numpy reference ``k.reference`` (not with ``--no-reference [NAMES]``;
above SMALL a reference whose SMALL time scaled by the flops ratio exceeds ``--ref-max-s`` is
skipped: some loop in Python for minutes), gpu and torch with cpu (with the reference when cpu
failed). Error: ``max |got - want| / max(1, max |want|)`` over the output arrays (non-finite
values that differ: infinite); tolerance: ``k.rtol`` (set for MINI) times the largest ratio of a
size parameter to its MINI value, as the float32 error bound of an n-term sum grows as n*u
(LARGE: 12x-64x). A larger error marks the row FAIL; its times are still shown.

Timing: the kernels update their arrays in place (stencils, solvers; run again on their own
output some drift to inf/nan), so every call gets a fresh copy of the inputs, made before the
timing. gpu and torch cycle through ``--warmup`` + ``--repeat`` device copies, each used once,
which also keeps each call's data out of L2 (at most ``--gpu-mem-gb`` of copies and
MAX_BOUND_LAUNCHES prepared launches: fewer copies are re-used, updated in place, as the row
says); gpu times the launches of ``exe.bind(*copy)`` (arguments checked and packed once, as a
torch op; the checked run was a full call), torch one call of ``k.torch``: the median of
``--repeat`` CUDA-event timings (:func:`runtime.cuda_driver.time_all_ms`, legacy default stream)
after ``--warmup``. cpu: wall-clock median of ``--cpu-repeat`` calls, each on a fresh host copy.
A checked run longer than ``--gpu-max-s`` / ``--cpu-max-s`` is not repeated: it is the time
("1 call"). A GPU call cannot be interrupted, so above SMALL a kernel with a 1x1x1 launch of a
loop nest (one GPU thread) is first timed at SMALL; if that time scaled by the flops ratio
exceeds ``--gpu-skip-s`` the gpu side is skipped (the row gives the estimate: low when the data
outgrows the caches, high when SMALL is launch-bound).

    python benchmarks/polybench.py [--dataset LARGE] [--only gemm,lu] [--repeat 20] [--record]
    python benchmarks/polybench.py --list            # kernels, sizes, flops, bytes (no GPU, no compile)

Without a GPU only the cpu side runs ("no GPU" in the gpu and torch columns). The table: times,
speedups cpu ms / gpu ms and torch ms / gpu ms (> 1: the GPU pipeline is faster), gpu GFLOP/s
(``k.flops``) and GB/s (``k.bytes``), launches per call (``bind``), 1x1x1 launches of a loop nest
(:func:`transforms.gpu.sequential_launches`, ``holds_loop``), compile seconds, the check; then a
summary. ``--record`` appends both to ``benchmarks/RESULTS.md`` with date, device, driver, host
cores and command.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import functools
import itertools
import math
import os
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import polybench  # noqa: E402  (the package benchmarks/polybench/: a package wins over this file)
from gpu import _cell, _clean, _driver_release, _first_line, ratio  # noqa: E402  (benchmarks/gpu.py's)

#: Most prepared launches kept bound at once, over the input copies (binding takes tens of us a launch;
#: at LARGE doitgen makes 42,000 a call, ludcmp 7,500, lu and atax 5,500, the stencils 1,000-2,000).
MAX_BOUND_LAUNCHES = 50_000
PROBE_DATASET = "SMALL"


@dataclass
class Options:
    """What to run and how (the command line's options; the defaults are its defaults)."""

    dataset: str = "LARGE"
    repeat: int = 20
    warmup: int = 3
    cpu_repeat: int = 3
    cpu_max_s: float = 20.0
    gpu_max_s: float = 2.0
    gpu_skip_s: float = 30.0
    gpu_mem_bytes: float = 16e9
    ref_max_s: float = 60.0
    no_reference: frozenset[str] | None = frozenset()  # None: no reference for any kernel
    constant_sizes: bool = True  # compile each dataset's sizes in as constants (PolyBench/C's #define)


@dataclass
class Side:
    """One side of a row: ``ms`` (None: not measured), over ``calls`` timed calls; ``status`` the
    cell text when there is no time ("no GPU", "n/a", "skipped", "failed"); ``err`` the check's
    error against ``against`` ("ref", "cpu"); ``note`` what the note column says of it."""

    ms: float | None = None
    calls: int = 0
    status: str = "-"
    err: float | None = None
    against: str = ""
    note: str = ""

    def cell(self) -> str:
        if self.ms is None:
            return self.status
        return f"{self.ms:.3f}" + (" (1 call)" if self.calls == 1 else "")


@dataclass
class Row:
    name: str
    category: str
    flops: float
    bytes: float
    tol: float
    gpu: Side = field(default_factory=Side)
    cpu: Side = field(default_factory=Side)
    torch: Side = field(default_factory=Side)
    launches: int | None = None
    sequential: int | None = None
    gpu_compile_s: float | None = None
    cpu_compile_s: float | None = None
    note: str = ""

    @property
    def speedup(self) -> float | None:
        """cpu ms / gpu ms (> 1: the GPU pipeline is faster)."""
        return ratio(self.cpu.ms, self.gpu.ms)

    @property
    def vs_torch(self) -> float | None:
        """torch ms / gpu ms (> 1: the GPU pipeline is faster)."""
        return ratio(self.torch.ms, self.gpu.ms)

    def rate(self, work: float) -> float | None:
        """``work`` (flops, bytes) per gpu second, in G/s."""
        return None if not self.gpu.ms else work / self.gpu.ms * 1e-6

    @property
    def failures(self) -> list[str]:
        """``"gpu vs cpu 3.1e-02"`` for each side whose check exceeded the tolerance."""
        return [f"{n} vs {s.against} {s.err:.1e}" for n, s in self.sides()
                if s.err is not None and not s.err <= self.tol]

    def sides(self) -> list[tuple[str, Side]]:
        return [("gpu", self.gpu), ("cpu", self.cpu), ("torch", self.torch)]


def tolerance(k: polybench.Kernel, dataset: str) -> float:
    """``k.rtol`` times the largest ratio of a size parameter at ``dataset`` to its MINI value (>= 1)."""
    sizes, mini = k.sizes[dataset], k.sizes["MINI"]
    return k.rtol * max([1.0] + [sizes[p] / mini[p] for p in k.params])


def max_error(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> float:
    """Max over the arrays of ``max |g - w| / max(1, max |w|)`` on the finite elements; inf when the
    non-finite elements differ (a NaN or inf where the other has none, or another one)."""
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape:
            return math.inf
        fin = np.isfinite(w)
        if not np.array_equal(fin, np.isfinite(g)) or not np.array_equal(g[~fin], w[~fin], equal_nan=True):
            return math.inf
        if fin.any():
            worst = max(worst, float(np.abs(g[fin] - w[fin]).max()) / max(1.0, float(np.abs(w[fin]).max())))
    return worst


def output_positions(k: polybench.Kernel) -> list[int]:
    """The argument positions of ``k.outputs`` (every array when it names none)."""
    hints = [a.name_hint for a in k.module().functions[0].args]
    if not k.outputs:
        args = k.arguments("MINI")
        return [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    return [hints.index(o) for o in k.outputs]


def _host_copy(args: Sequence) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@contextlib.contextmanager
def caches_off():
    """The kernel caches off: an empty disk cache directory, the NVRTC and CPU memory caches cleared."""
    from runtime import cpu, nvrtc

    with tempfile.TemporaryDirectory(prefix="affine-ir-polybench-") as cache, \
            mock.patch.dict(os.environ, {"AFFINE_IR_CACHE": cache}):
        nvrtc.clear_memory_cache()
        cpu.clear_memory_cache()
        yield


def compile_timed(k: polybench.Kernel, target: str, dataset: str | None = None):
    """(executable, seconds) of ``runtime.compile(k.module(dataset), target=target)`` (with a
    ``dataset``, its sizes compiled in as constants: the executable takes only those sizes), caches
    off, warnings muted (the 1x1x1 launches are counted in the table)."""
    import runtime

    with caches_off(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        exe = runtime.compile(k.module(dataset), target=target)
        return exe, time.perf_counter() - t0


# -- the sides ------------------------------------------------------------------------------------------------

def _wall_ms(fn: Callable, work: Sequence) -> float:
    t0 = time.perf_counter()
    fn(*work)
    return (time.perf_counter() - t0) * 1e3


def run_cpu(exe, args: Sequence, outputs: Sequence[int], o: Options) -> tuple[Side, list[np.ndarray]]:
    """The checked first call (its results), then ``o.cpu_repeat`` calls on fresh copies unless it took
    longer than ``o.cpu_max_s``."""
    first = _host_copy(args)
    times = [_wall_ms(exe, first)]
    if times[0] <= o.cpu_max_s * 1e3 and o.cpu_repeat > 0:
        times = [_wall_ms(exe, _host_copy(args)) for _ in range(o.cpu_repeat)]
    return Side(ms=statistics.median(times), calls=len(times)), [first[i] for i in outputs]


def _device(torch, args: Sequence) -> list:
    """The arrays as CUDA tensors, numpy scalars as Python numbers (for torch ops)."""
    return [torch.from_numpy(a).to("cuda") if isinstance(a, np.ndarray) else a.item() if isinstance(a, np.generic)
            else a for a in args]


def _clone(torch, dev: Sequence) -> list:
    return [a.clone() if torch.is_tensor(a) else a for a in dev]


def _set_bytes(args: Sequence) -> int:
    return sum(a.nbytes for a in args if isinstance(a, np.ndarray))


def run_device(torch, call: Callable, bind: Callable | None, args: Sequence, outputs: Sequence[int],
               o: Options) -> tuple[Side, list[np.ndarray], int | None]:
    """One side on the GPU: the checked first call of ``call(*copy)`` (timed with CUDA events), then
    (unless it took longer than ``o.gpu_max_s``) the median of ``o.repeat`` CUDA-event timings after
    ``o.warmup``, each call on its own fresh device copy, prepared by ``bind(*copy)`` (a callable with
    ``launches`` and ``close()``) or ``call`` itself. Returns (side, results, launches per call)."""
    from runtime import cuda_driver

    side = Side()
    pristine = _device(torch, args)
    checked = _clone(torch, pristine)
    side.ms, side.calls = cuda_driver.time_all_ms(lambda: call(*checked), repeat=1, warmup=0)[0], 1
    got = [checked[i].cpu().numpy() for i in outputs]
    checked.clear()
    calls, prepared = o.warmup + o.repeat, []

    def prepare():
        s = _clone(torch, pristine)
        prepared.append(bind(*s) if bind else functools.partial(call, *s))

    try:
        prepare()
        launches = len(prepared[0].launches) if bind else None
        if side.ms > o.gpu_max_s * 1e3:
            return side, got, launches
        count = min(calls, max(1, int(o.gpu_mem_bytes // max(1, _set_bytes(args)))),
                    max(1, MAX_BOUND_LAUNCHES // max(1, launches or 1)))
        for _ in range(count - 1):
            prepare()
        pristine.clear()
        cycle = itertools.cycle(prepared)
        times = cuda_driver.time_all_ms(lambda: next(cycle)(), repeat=o.repeat, warmup=o.warmup)
        side.ms, side.calls = statistics.median(times), o.repeat
        if count < calls:
            side.note = f"{count} input copies for {calls} calls: re-used, updated in place"
        return side, got, launches
    finally:
        for p in prepared:
            getattr(p, "close", lambda: None)()


def estimate_ms(run_small: Callable[[list], object], k: polybench.Kernel, dataset: str) -> tuple[float, float, float]:
    """(estimated ms at ``dataset``, ms at PROBE_DATASET, flops ratio): ``run_small(args)`` on
    PROBE_DATASET's arguments returns its ms, which is scaled by the flops ratio."""
    ms = float(run_small(k.arguments(PROBE_DATASET)))
    scale = k.flops(k.sizes[dataset]) / k.flops(k.sizes[PROBE_DATASET])
    return ms * scale, ms, scale


def _sizes(o: Options) -> str | None:
    """The dataset whose sizes the programs are compiled with as constants (None: sizes as arguments)."""
    return o.dataset if o.constant_sizes else None


def _probe(o: Options) -> bool:
    return polybench.DATASETS.index(o.dataset) > polybench.DATASETS.index(PROBE_DATASET)


def _failed(side: Side, stage: str, e: BaseException) -> None:
    traceback.print_exc()
    side.ms, side.status, side.note = None, "failed", f"{stage} failed: {_first_line(e)}"


def _check(side: Side, got, cpu_got, ref_got) -> None:
    against = ("cpu", cpu_got) if cpu_got is not None else ("ref", ref_got) if ref_got is not None else None
    if against is not None and got is not None:
        side.against, side.err = against[0], max_error(got, against[1])


def run_kernel(torch, k: polybench.Kernel, o: Options) -> Row:
    """Compile, check and time every side of ``k`` (see the module docstring); failures end up in the row."""
    row = Row(k.name, k.category, k.flops(k.sizes[o.dataset]), k.bytes(k.sizes[o.dataset]), tolerance(k, o.dataset))
    try:
        args, outputs = k.arguments(o.dataset), output_positions(k)
    except Exception as e:
        traceback.print_exc()
        row.note = f"inputs failed: {_first_line(e)}"
        row.gpu.status = row.cpu.status = row.torch.status = "failed"
        return row
    ref_got = run_reference(k, o, row, args, outputs)
    cpu_got = None
    try:
        stage = "compile"
        exe, row.cpu_compile_s = compile_timed(k, "cpu", _sizes(o))
        stage = "run"
        row.cpu, cpu_got = run_cpu(exe, args, outputs, o)
        _check(row.cpu, cpu_got, None, ref_got)
    except Exception as e:
        _failed(row.cpu, stage, e)
    if torch is None:
        row.gpu.status = row.torch.status = "no GPU"
        return row
    run_gpu(torch, k, o, row, args, outputs, cpu_got, ref_got)
    if k.torch is None:
        row.torch.status = "n/a"
        return row
    try:
        row.torch, got, _ = run_device(torch, k.torch, None, args, outputs, o)
        _check(row.torch, got, cpu_got, ref_got)
    except Exception as e:
        _failed(row.torch, "run", e)
    finally:
        torch.cuda.empty_cache()
    return row


def run_reference(k: polybench.Kernel, o: Options, row: Row, args, outputs) -> list[np.ndarray] | None:
    """The numpy reference's outputs, or None (not asked for, estimated too slow, failed: said in ``row.note``)."""
    if o.no_reference is None or k.name in o.no_reference:
        return None
    try:
        if _probe(o):
            est, _, _ = estimate_ms(lambda small: min(_wall_ms(k.reference, _host_copy(small)) for _ in range(2)), k,
                                    o.dataset)
            if est > o.ref_max_s * 1e3:
                row.note = f"reference skipped: estimated {est / 1e3:.0f} s from {PROBE_DATASET}"
                return None
        ref = _host_copy(args)
        k.reference(*ref)
        return [ref[i] for i in outputs]
    except Exception as e:
        traceback.print_exc()
        row.note = f"reference failed: {_first_line(e)}"
        return None


def run_gpu(torch, k: polybench.Kernel, o: Options, row: Row, args, outputs, cpu_got, ref_got) -> None:
    from runtime import cuda_driver
    from transforms.gpu import sequential_launches

    def probe_ms(small_args) -> float:  # one call after an untimed one
        dev = _device(torch, small_args)
        small = compile_timed(k, "cuda", PROBE_DATASET)[0] if o.constant_sizes else exe
        return cuda_driver.time_all_ms(lambda: small(*dev), repeat=1, warmup=1)[0]

    stage = "compile"
    try:
        exe, row.gpu_compile_s = compile_timed(k, "cuda", _sizes(o))
        row.sequential = sum(1 for s in sequential_launches(exe.trace.decisions) if s.holds_loop)
        if row.sequential and _probe(o):
            stage = f"{PROBE_DATASET} probe"
            est, ms, scale = estimate_ms(probe_ms, k, o.dataset)
            if est > o.gpu_skip_s * 1e3:
                row.gpu.status = "skipped"
                row.gpu.note = (f"skipped: a 1x1x1 launch, estimated {est / 1e3:.0f} s a call "
                                f"({PROBE_DATASET} {ms:.2f} ms x {scale:.0f} flops), over --gpu-skip-s")
                return
        stage = "run"
        row.gpu, got, row.launches = run_device(torch, exe, exe.bind, args, outputs, o)
        _check(row.gpu, got, cpu_got, ref_got)
    except Exception as e:
        _failed(row.gpu, stage, e)
    finally:
        torch.cuda.empty_cache()


# -- the table, the summary, the record -----------------------------------------------------------------------

HEADER = ("| kernel | category | gpu ms | cpu ms | torch ms | speedup (cpu / gpu) | torch / gpu | gpu GFLOP/s "
          "| gpu GB/s | launches | 1x1x1 | compile s (gpu / cpu) | check (tol) | note |")
COLUMNS = HEADER.count("|") - 1


def check_cell(row: Row) -> str:
    """``FAIL: gpu vs cpu 3.1e-02 (tol 4.0e-03)``, ``ok 2.1e-06 (tol 4.0e-03)`` or ``unchecked``."""
    errs = [s.err for _, s in row.sides() if s.err is not None]
    if not errs:
        return "unchecked"
    if row.failures:
        return f"FAIL: {', '.join(row.failures)} (tol {row.tol:.1e})"
    return f"ok {max(errs):.1e} (tol {row.tol:.1e})"


def table_row(row: Row) -> str:
    compile_cell = f"{_cell(row.gpu_compile_s, '.2f')} / {_cell(row.cpu_compile_s, '.2f')}"
    notes = [row.note] if row.note else []
    notes += [f"{n}: {s.note}" for n, s in row.sides() if s.note]
    cells = [row.name, row.category, row.gpu.cell(), row.cpu.cell(), row.torch.cell(), _cell(row.speedup, ".2f", "x"),
             _cell(row.vs_torch, ".2f", "x"), _cell(row.rate(row.flops), ".1f"), _cell(row.rate(row.bytes), ".1f"),
             _cell(row.launches, "d"), _cell(row.sequential, "d"), compile_cell, check_cell(row),
             "; ".join(_clean(n) for n in notes)]
    return "| " + " | ".join(cells) + " |"


def markdown_table(rows: Sequence[Row]) -> str:
    return "\n".join([HEADER, "|---|---|" + "---:|" * (COLUMNS - 4) + "---|---|"] + [table_row(r) for r in rows])


def _why_not(row: Row) -> str:
    """``0.52x``, or why there is no speedup (``gpu skipped: ...``, ``cpu run failed: ...``)."""
    if row.speedup is not None:
        return f"{row.speedup:.2f}x"
    name, side = ("gpu", row.gpu) if row.gpu.ms is None else ("cpu", row.cpu)
    return f"{name} {side.note or side.status}"


def summary_lines(rows: Sequence[Row]) -> list[str]:
    """How many kernels are faster on the GPU than on the CPU pipeline, the others and why, the check failures."""
    if rows and all(r.gpu.status == "no GPU" for r in rows):
        return [f"- No GPU: the cpu side only ({len(rows)} kernels)"] + check_summary(rows)
    both = [r for r in rows if r.speedup is not None]
    faster = [r for r in both if r.speedup > 1]
    lines = [f"- Faster on the GPU than on the CPU pipeline: {len(faster)} of {len(rows)} kernels "
             f"({len(both)} measured on both sides)"]
    if both:
        g = math.exp(sum(math.log(r.speedup) for r in both) / len(both))
        lines.append(f"- Speedup (cpu / gpu) over those {len(both)}: geometric mean {g:.2f}x, "
                     f"median {statistics.median(r.speedup for r in both):.2f}x")
    slower = [r for r in rows if r not in faster]
    lines.append(f"- Not faster ({len(slower)}): " + ("; ".join(f"{r.name} ({_clean(_why_not(r), 100)})"
                                                           for r in slower) or "none"))
    vs = [r for r in rows if r.vs_torch is not None]
    if vs:
        lines.append(f"- Faster than torch: {sum(r.vs_torch > 1 for r in vs)} of {len(vs)} kernels with a torch side")
    return lines + check_summary(rows)


def check_summary(rows: Sequence[Row]) -> list[str]:
    failed = [r for r in rows if r.failures]
    return [f"- Check failures: {len(failed)}" + (": " + "; ".join(f"{r.name} ({', '.join(r.failures)})"
                                                                 for r in failed) if failed else "")]


def record_section(table: str, summary: Sequence[str], meta: dict[str, str], command: str, date: str) -> str:
    facts = "\n".join(f"- {k}: {v}" for k, v in meta.items())
    return (f"\n## {date}: PolyBench/C 4.2 on the GPU (issue 17)\n\n{facts}\n- Command: `{command}`\n\n{table}\n\n"
            "Summary:\n\n" + "\n".join(summary) + "\n")


def list_text(kernels: Sequence[polybench.Kernel], dataset: str) -> str:
    """One line per kernel: name, category, sizes at ``dataset``, flops, bytes."""
    lines = []
    for k in kernels:
        p = k.sizes[dataset]
        sizes = " ".join(f"{n}={p[n]}" for n in k.params)
        lines.append(f"{k.name:15} {k.category:23} {sizes:38} {k.flops(p):10.3g} flops {k.bytes(p):10.3g} bytes"
                     + ("" if k.torch else "  (no torch)"))
    return "\n".join(lines)


def _meta(torch, why: str | None) -> dict[str, str]:
    from analysis.targets import host_cpu
    from runtime import cuda_driver

    cpu = host_cpu()
    if torch is None:
        meta = {"Device": f"no GPU ({why}): the cpu side only"}
    else:
        drv = cuda_driver.driver_version()
        meta = {"Device": torch.cuda.get_device_name(),
                "Driver": f"{_driver_release()} (CUDA {drv[0]}.{drv[1]}), torch {torch.__version__}"}
    return meta | {"Host CPU": f"{cpu.name}, {os.cpu_count()} cores (CPU-pipeline threads)"}


def run_all(torch, kernels: Sequence[polybench.Kernel], o: Options, out=None) -> list[Row]:
    """A row per kernel, printed (to ``out``, default stdout) as it comes; one failing kernel does not stop the
    others."""
    out, rows = out or sys.stdout, []
    print(HEADER, file=out, flush=True)
    for k in kernels:
        try:
            row = run_kernel(torch, k, o)
        except Exception as e:  # a bug here, not in a side: still a row
            traceback.print_exc()
            row = Row(k.name, k.category, 0.0, 0.0, k.rtol, note=f"failed: {_first_line(e)}")
        rows.append(row)
        print(table_row(row), file=out, flush=True)
    return rows


def _gpu_torch():
    """torch when a GPU is usable (and torch sees it), else None, and why not."""
    import runtime

    if not runtime.gpu_available():
        return None, runtime.cuda_driver.gpu_unavailable_reason()
    try:
        import torch
    except ImportError:
        return None, "torch is not installed (the gpu and torch sides need it)"
    if not torch.cuda.is_available():
        return None, "torch sees no GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, None


def parse_options(argv: list[str] | None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    d = Options
    ap.add_argument("--dataset", default=d.dataset, choices=polybench.DATASETS)
    ap.add_argument("--only", help="comma-separated kernel names (default: all 30)")
    ap.add_argument("--repeat", type=int, default=d.repeat, help="timed calls per GPU side (median)")
    ap.add_argument("--warmup", type=int, default=d.warmup, help="untimed calls per GPU side first")
    ap.add_argument("--cpu-repeat", type=int, default=d.cpu_repeat, help="timed cpu calls (median)")
    ap.add_argument("--cpu-max-s", type=float, default=d.cpu_max_s, help="a cpu call longer: not repeated")
    ap.add_argument("--gpu-max-s", type=float, default=d.gpu_max_s, help="a gpu/torch call longer: not repeated")
    ap.add_argument("--gpu-skip-s", type=float, default=d.gpu_skip_s,
                    help="skip the gpu side of a kernel with a 1x1x1 launch estimated longer than this a call")
    ap.add_argument("--gpu-mem-gb", type=float, default=16.0, help="device memory for the input copies, per side")
    ap.add_argument("--no-reference", nargs="?", const="", metavar="NAMES",
                    help="no numpy reference (for the comma-separated kernels, or all)")
    ap.add_argument("--ref-max-s", type=float, default=d.ref_max_s,
                    help="above SMALL, skip a reference estimated (from SMALL) longer than this")
    ap.add_argument("--list", action="store_true", help="list the kernels and exit (no GPU, no compile)")
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    ap.add_argument("--symbolic-sizes", action="store_true",
                    help="compile the sizes as index arguments (one program for every size) instead of as "
                         "constants (PolyBench/C's #define, the default)")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0 or args.cpu_repeat < 0:
        ap.error("--repeat must be >= 1, --warmup and --cpu-repeat >= 0")
    names = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else list(polybench.KERNELS)
    no_ref = [n.strip() for n in (args.no_reference or "").split(",") if n.strip()]
    unknown = [n for n in names + no_ref if n not in polybench.KERNELS]
    if unknown:
        ap.error(f"unknown kernel(s): {', '.join(unknown)} (known: {', '.join(polybench.KERNELS)})")
    o = Options(args.dataset, args.repeat, args.warmup, args.cpu_repeat, args.cpu_max_s, args.gpu_max_s,
                args.gpu_skip_s, args.gpu_mem_gb * 1e9, args.ref_max_s,
                None if args.no_reference == "" else frozenset(no_ref), not args.symbolic_sizes)
    return args, o, [polybench.KERNELS[n] for n in names]


def main(argv: list[str] | None = None) -> int:
    args, o, kernels = parse_options(argv)
    if args.list:
        print(list_text(kernels, o.dataset))
        return 0
    torch, why = _gpu_torch()
    meta = _meta(torch, why)
    refs = "none" if o.no_reference is None else "all" + (f" but {', '.join(sorted(o.no_reference))}"
                                                          if o.no_reference else "")
    meta["Method"] = (f"dataset {o.dataset}; gpu and torch: median of {o.repeat} CUDA-event timings after {o.warmup} "
                      f"warm-up calls, each call on a fresh device copy of the inputs (gpu: the launches of "
                      f"`exe.bind`); cpu: wall-clock median of {o.cpu_repeat} calls on fresh copies; calls over "
                      f"{o.gpu_max_s:g} s (GPU) / {o.cpu_max_s:g} s (CPU) not repeated; compiles with the caches "
                      f"off; checks against the cpu result (cpu: against the numpy reference, run for {refs}); "
                      f"sizes compiled in as "
                      f"{'constants (PolyBench/C #define)' if o.constant_sizes else 'index arguments'}")
    for key, value in meta.items():
        print(f"{key}: {value}")
    rows = run_all(torch, kernels, o)
    table, summary = markdown_table(rows), summary_lines(rows)
    print("\n" + table + "\n\n" + "\n".join(summary))
    if args.record:
        cmd = " ".join(["python benchmarks/polybench.py", *(argv if argv is not None else sys.argv[1:])])
        with open(Path(__file__).with_name("RESULTS.md"), "a") as fh:
            fh.write(record_section(table, summary, meta, cmd, datetime.date.today().isoformat()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
