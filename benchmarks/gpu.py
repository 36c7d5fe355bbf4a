"""Our CUDA kernels side by side with what users would pick instead (issue 8), in one process.

For each workload: the module from ``affine_ir.library``; **ours** is ``runtime.compile(m,
target="cuda")`` (the default CUDA pipeline, or ``--pipeline``), compiled with the kernel caches
off and timed (passes, then CUDA C + NVRTC); the **anchor** is PyTorch on the same GPU --
``torch.matmul`` (cuBLAS, TF32 off), ``F.conv2d`` (cuDNN, ``cudnn.benchmark=True``, TF32 off),
eager ``torch.softmax`` / ``F.layer_norm`` / ``F.gelu(x + b)`` / ``F.gelu(addmm)`` -- and, for
softmax, layer norm, the element-wise chain and the MLP, ``torch.compile`` of the same function
(Inductor). Inputs are random normal torch tensors on the device, passed to our executable
directly (zero-copy). Each side runs once and is checked against the eager anchor (max |ours -
anchor| / max |anchor| <= ``rtol``; outputs start as NaN, so an element never written fails);
a workload whose compile, check or run fails prints a row saying so and the run goes on.
Timing: ``--warmup`` calls, then the median of ``--repeat`` CUDA-event timings of one call
each (:func:`runtime.cuda_driver.time_all_ms`, legacy default stream, which torch also uses;
ours through ``exe.bind(*args)``: arguments checked and packed once, each call only launches
the kernels, as a torch op does -- the checked full call ran first for the correctness check);
when one input set (every argument) is smaller than 2x the L2 cache, enough copies to exceed
2x L2 are made and every side cycles through them, so no side reads a warm L2.

    python benchmarks/gpu.py [--repeat 50] [--warmup 10] [--only conv2d] [--pipeline TEXT] [--record]
    python benchmarks/gpu.py --list        # the workloads, their bytes and rotation copies (no GPU)

The table gives ours / anchor / torch.compile ms, the ratios (anchor time / our time: > 1 means
we are faster), our TFLOP/s (matmul, conv, MLP) or GB/s (memory-bound: each argument read or
written once), our compile seconds; then geometric-mean rows for conv2d and one line per
issue-8 target. ``--record`` appends all of it to ``benchmarks/RESULTS.md`` with the date,
device, driver and library versions and the command.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import affine_ir as air

#: Bytes of L2 assumed when the device's own figure is not known (the H200's, as issue 8 states it).
DEFAULT_L2_BYTES = 50 * 10**6
#: Most copies of one input set made for rotation.
MAX_COPIES = 256
GELU_APPROXIMATE = "tanh"

# Issue-8 targets.
MATMUL_TARGET_N = 4096
MATMUL_TARGET = 0.7  # x cuBLAS
CONV_GEOMEAN_TARGET = 0.6  # x cuDNN, geometric mean over the 12 cases
CONV_CASES = 12
CONV_BATCH1_WINS = 2  # batch-1 layers faster than cuDNN
VS_COMPILE_TARGET = 0.9  # x torch.compile for softmax, layer norm, the chain
COPY_GBPS = 4270.0  # measured device copy (read + write) on the H200
CHAIN_SHARE = 0.85  # of COPY_GBPS
COMPILE_LIMIT_S = 2.0  # passes + NVRTC per kernel


@dataclass(frozen=True)
class Workload:
    """One benchmark case. ``args``: the shape of every argument of the module's entry function
    (all f32), the last the output; ``anchor(torch, *inputs)`` returns the anchor's output for the
    inputs (every argument but the last). ``work``: flops (unit "TFLOP/s") or bytes moved once
    ("GB/s"). ``compiled``: also time ``torch.compile`` of the anchor."""

    key: str
    name: str
    shape: str
    build: Callable[[], air.ModuleOp]
    args: tuple[tuple[int, ...], ...]
    anchor: Callable
    anchor_name: str
    work: float
    unit: str
    rtol: float
    compiled: bool = False
    group: str = ""
    batch: int = 0

    @property
    def label(self) -> str:
        return f"{self.name} {self.shape}"

    @property
    def set_bytes(self) -> int:
        """Bytes of one input set: every argument, f32."""
        return sum(4 * math.prod(s) for s in self.args)


# -- the workloads ------------------------------------------------------------------------------------

def _matmul_anchor(torch, a, b):
    return torch.matmul(a, b)


def matmul_workload(n: int) -> Workload:
    return Workload(f"matmul-{n}", "matmul", f"{n}x{n}x{n}", lambda: air.library.matmul(n, n, n),
                    ((n, n), (n, n), (n, n)), _matmul_anchor, "torch.matmul (cuBLAS)", 2.0 * n**3, "TFLOP/s", 1e-3)


def conv_out_size(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size + 2 * padding - kernel) // stride + 1


def conv2d_workload(n: int, c: int, hw: int, f: int, k: int, stride: int = 1, padding: int = 0) -> Workload:
    """NCHW ``input[n, c, hw, hw]`` * ``filter[f, c, k, k]``."""
    o = conv_out_size(hw, k, stride, padding)

    def anchor(torch, x, w):
        return torch.nn.functional.conv2d(x, w, stride=stride, padding=padding)

    shape = f"N{n} C{c} {hw}x{hw} F{f} {k}x{k}" + (f" s{stride}" if stride != 1 else "") + (
        f" p{padding}" if padding else "")
    return Workload(f"conv2d-n{n}-c{c}-h{hw}-f{f}-k{k}", "conv2d", shape,
                    lambda: air.library.conv2d(n, c, hw, hw, f, k, k, stride=stride, padding=padding),
                    ((n, c, hw, hw), (f, c, k, k), (n, f, o, o)), anchor, "F.conv2d (cuDNN)",
                    2.0 * n * f * o * o * c * k * k, "TFLOP/s", 1e-3, group="conv2d", batch=n)


#: ResNet-50 layers (C, H=W, F, kernel, stride, padding).
RESNET50_LAYERS = ((64, 56, 64, 3, 1, 1), (128, 28, 128, 3, 1, 1), (256, 14, 256, 3, 1, 1), (512, 7, 512, 3, 1, 1),
                   (3, 224, 64, 7, 2, 3), (256, 56, 64, 1, 1, 0))


def _softmax_anchor(torch, x):
    return torch.softmax(x, dim=-1)


def softmax_workload(m: int, n: int) -> Workload:
    return Workload("softmax", "softmax", f"{m}x{n}", lambda: air.library.softmax((m, n)), ((m, n), (m, n)),
                    _softmax_anchor, "torch.softmax", 2.0 * 4 * m * n, "GB/s", 1e-5, compiled=True)


def layernorm_workload(m: int, n: int) -> Workload:
    def anchor(torch, x, gamma, beta):
        return torch.nn.functional.layer_norm(x, (n,), gamma, beta, eps=1e-5)

    return Workload("layernorm", "layer norm", f"{m}x{n}", lambda: air.library.layernorm(m, n, eps=1e-5),
                    ((m, n), (n,), (n,), (m, n)), anchor, "F.layer_norm", 4.0 * (2 * m * n + 2 * n), "GB/s", 1e-5,
                    compiled=True)


def _chain_anchor(torch, x, b):
    return torch.nn.functional.gelu(x + b, approximate=GELU_APPROXIMATE)


def chain_workload(m: int, n: int) -> Workload:
    return Workload("chain", "chain", f"{m}x{n} add+gelu",
                    lambda: air.library.elementwise_chain(("add", "gelu"), (m, n), approximate=GELU_APPROXIMATE),
                    ((m, n), (m, n), (m, n)), _chain_anchor, "F.gelu(x + b)", 3.0 * 4 * m * n, "GB/s", 1e-5,
                    compiled=True)


def _mlp_anchor(torch, x, w, bias):
    return torch.nn.functional.gelu(torch.addmm(bias, x, w), approximate=GELU_APPROXIMATE)


def mlp_workload(m: int, n: int, k: int) -> Workload:
    return Workload("mlp", "mlp", f"{m}x{n}x{k} +bias+gelu",
                    lambda: air.library.mlp(m, n, k, activation="gelu", approximate=GELU_APPROXIMATE),
                    ((m, k), (k, n), (n,), (m, n)), _mlp_anchor, "F.gelu(addmm)", 2.0 * m * n * k, "TFLOP/s", 1e-3,
                    compiled=True)


def workloads() -> list[Workload]:
    """The issue-8 workloads, in the order they run."""
    out = [matmul_workload(n) for n in (1024, 2048, 4096, 8192)]
    out += [conv2d_workload(batch, c, hw, f, k, s, p) for batch in (1, 8) for c, hw, f, k, s, p in RESNET50_LAYERS]
    out += [softmax_workload(8192, 4096), layernorm_workload(8192, 4096), chain_workload(8192, 8192),
            mlp_workload(4096, 4096, 4096)]
    return out


def select(ws: Sequence[Workload], only: str | None) -> list[Workload]:
    """The workloads whose key or label contains ``only`` (case-insensitive); all for None."""
    if not only:
        return list(ws)
    text = only.lower()
    return [w for w in ws if text in w.key.lower() or text in w.label.lower()]


def rotation_copies(set_bytes: int, l2_bytes: int = DEFAULT_L2_BYTES, max_copies: int = MAX_COPIES) -> int:
    """How many copies of an input set of ``set_bytes`` to cycle through: 1 when one set is larger
    than 2x L2, else the fewest whose total exceeds 2x L2 (at most ``max_copies``), so every set
    has left the L2 before it is used again. (A set between 1x and 2x L2 is rotated too: most of
    it would otherwise still be cached.)"""
    if set_bytes <= 0 or l2_bytes <= 0:
        raise ValueError(f"sizes must be positive: set {set_bytes} bytes, L2 {l2_bytes} bytes")
    if set_bytes > 2 * l2_bytes:
        return 1
    return min(max_copies, 2 * l2_bytes // set_bytes + 1)


class Rotation:
    """A no-argument callable calling ``fn(*sets[0])``, ``fn(*sets[1])``, ... cyclically; ``last``
    is the index of the set used by the latest call (None before the first)."""

    def __init__(self, fn: Callable, sets: Sequence[Sequence]):
        if not sets:
            raise ValueError("no input sets")
        self.fn, self.sets, self.last = fn, list(sets), None

    def __call__(self):
        self.last = 0 if self.last is None else (self.last + 1) % len(self.sets)
        return self.fn(*self.sets[self.last])


# -- results, ratios, targets -------------------------------------------------------------------------

@dataclass
class Result:
    """What one workload gave. ``error`` says why there are no figures (compile, check or run
    failed); ``notes`` what else happened (torch.compile failures)."""

    workload: Workload
    ours_ms: float | None = None
    anchor_ms: float | None = None
    compiled_ms: float | None = None
    compile_s: float | None = None
    passes_s: float | None = None
    max_err: float | None = None
    copies: int = 1
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        """Anchor time / our time (> 1: we are faster)."""
        return ratio(self.anchor_ms, self.ours_ms)

    @property
    def compiled_ratio(self) -> float | None:
        """torch.compile time / our time."""
        return ratio(self.compiled_ms, self.ours_ms)

    @property
    def rate(self) -> float | None:
        """Our TFLOP/s or GB/s (the workload's unit)."""
        return rate(self.workload.work, self.ours_ms, self.workload.unit)


def ratio(theirs_ms: float | None, ours_ms: float | None) -> float | None:
    if theirs_ms is None or ours_ms is None or ours_ms <= 0:
        return None
    return theirs_ms / ours_ms


def rate(work: float, ms: float | None, unit: str) -> float | None:
    """``work`` flops per ``ms`` in TFLOP/s, or bytes per ``ms`` in GB/s."""
    if ms is None or ms <= 0:
        return None
    scale = {"TFLOP/s": 1e-9, "GB/s": 1e-6}[unit]
    return work / ms * scale


def geomean(values: Sequence[float]) -> float:
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"geometric mean needs positive values, got {list(values)}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def check_failure(err: float, rtol: float) -> str | None:
    """None when ``err`` (max |ours - anchor| / max |anchor|) is within ``rtol``, else why not (NaN fails)."""
    if err <= rtol:
        return None
    return f"check failed: max error {err:.3g} (relative to max |anchor|) exceeds {rtol:g}"


def conv_geomean(results: Sequence[Result], batch: int | None = None) -> tuple[float | None, int, int]:
    """(geometric mean of anchor/ours over the measured conv2d cases, measured, cases) for one batch
    size or all; None when none was measured."""
    cases = [r for r in results if r.workload.group == "conv2d" and (batch is None or r.workload.batch == batch)]
    ratios = [r.ratio for r in cases if r.ratio is not None]
    return (geomean(ratios) if ratios else None), len(ratios), len(cases)


def _short(value: float, target: float) -> str:
    if value <= 0:
        return "missed"
    return f"missed by {1 - value / target:.0%} (needs {target / value:.2f}x faster)"


def target_lines(results: Sequence[Result]) -> list[str]:
    """One line per issue-8 target: measured figure, target, met / missed by how much / not measured."""
    by_key = {r.workload.key: r for r in results}
    lines = []

    def at_least(what: str, value: float | None, target: float, fmt: str = ".2f", unit: str = "x") -> None:
        if value is None:
            lines.append(f"- {what}: target >= {target:{fmt}}{unit}: not measured")
        else:
            verdict = "met" if value >= target else _short(value, target)
            lines.append(f"- {what}: {value:{fmt}}{unit}, target >= {target:{fmt}}{unit}: {verdict}")

    mm = by_key.get(f"matmul-{MATMUL_TARGET_N}")
    at_least(f"matmul n={MATMUL_TARGET_N} vs cuBLAS", mm.ratio if mm else None, MATMUL_TARGET)

    g, measured, cases = conv_geomean(results)
    if measured == CONV_CASES:
        at_least(f"conv2d geomean vs cuDNN over {CONV_CASES} cases", g, CONV_GEOMEAN_TARGET)
    else:
        partial = f" (geomean {g:.2f}x over those)" if g is not None else ""
        lines.append(f"- conv2d geomean vs cuDNN over {CONV_CASES} cases: target >= {CONV_GEOMEAN_TARGET:.2f}x: "
                     f"not measured: {measured} of {CONV_CASES} cases measured{partial}")

    b1 = [r for r in results if r.workload.group == "conv2d" and r.workload.batch == 1]
    wins = sum(1 for r in b1 if r.ratio is not None and r.ratio > 1)
    b1_measured = sum(1 for r in b1 if r.ratio is not None)
    names = ", ".join(r.workload.shape for r in b1 if r.ratio is not None and r.ratio > 1)
    what = f"conv2d batch-1 layers faster than cuDNN: {wins} of {b1_measured} measured"
    what += f" ({names})" if names else ""
    if wins >= CONV_BATCH1_WINS:
        verdict = "met"
    elif b1_measured < len(RESNET50_LAYERS):
        verdict = f"not established ({len(RESNET50_LAYERS) - b1_measured} of {len(RESNET50_LAYERS)} not measured)"
    else:
        verdict = f"missed by {CONV_BATCH1_WINS - wins}"
    lines.append(f"- {what}, target >= {CONV_BATCH1_WINS}: {verdict}")

    for key in ("softmax", "layernorm", "chain"):
        r = by_key.get(key)
        name = r.workload.label if r else key
        at_least(f"{name} vs torch.compile", r.compiled_ratio if r else None, VS_COMPILE_TARGET)

    chain = by_key.get("chain")
    chain_rate = chain.rate if chain else None
    share = chain_rate / COPY_GBPS if chain_rate is not None else None
    at_least(f"chain bandwidth as a share of the {COPY_GBPS:.0f} GB/s device copy"
             + (f" ({chain_rate:.0f} GB/s)" if chain_rate is not None else ""), share, CHAIN_SHARE, ".0%", "")

    compiled = [r for r in results if r.compile_s is not None]
    if not compiled:
        lines.append(f"- compile (passes + NVRTC) per kernel: target <= {COMPILE_LIMIT_S:g} s: not measured")
    else:
        worst = max(compiled, key=lambda r: r.compile_s)
        over = [r for r in compiled if r.compile_s > COMPILE_LIMIT_S]
        verdict = "met" if not over else (f"missed by {worst.compile_s / COMPILE_LIMIT_S - 1:.0%} at worst; "
                                          f"{len(over)} over: " + ", ".join(r.workload.label for r in over))
        lines.append(f"- compile (passes + NVRTC) per kernel: max {worst.compile_s:.2f} s ({worst.workload.label}) "
                     f"over {len(compiled)} kernels, target <= {COMPILE_LIMIT_S:g} s: {verdict}")
    return lines


# -- the table ----------------------------------------------------------------------------------------

HEADER = ("| workload | shape | anchor | ours ms | anchor ms | torch.compile ms | anchor / ours | torch.compile / ours "
          "| ours rate | compile s (passes + rest) | sets | max err | note |")
COLUMNS = HEADER.count("|") - 1


def _cell(value: float | None, fmt: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{fmt}}{suffix}"


def _clean(text: str, limit: int = 160) -> str:
    line = " ".join(text.split()).replace("|", "/")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def table_row(r: Result) -> str:
    w = r.workload
    compile_cell = "-" if r.compile_s is None else (
        f"{r.compile_s:.2f} ({r.passes_s:.2f} + {r.compile_s - r.passes_s:.2f})" if r.passes_s is not None
        else f"{r.compile_s:.2f}")
    rate_cell = "-" if r.rate is None else f"{r.rate:.1f} {w.unit}" if w.unit == "TFLOP/s" else f"{r.rate:.0f} {w.unit}"
    note = "; ".join(_clean(t) for t in ([r.error] if r.error else []) + r.notes)
    cells = [w.name, w.shape, w.anchor_name, _cell(r.ours_ms, ".3f"), _cell(r.anchor_ms, ".3f"),
             _cell(r.compiled_ms, ".3f") if w.compiled else "", _cell(r.ratio, ".2f", "x"),
             _cell(r.compiled_ratio, ".2f", "x") if w.compiled else "", rate_cell, compile_cell, str(r.copies),
             _cell(r.max_err, ".1e"), note]
    return "| " + " | ".join(cells) + " |"


def geomean_rows(results: Sequence[Result]) -> list[str]:
    """A row per conv2d geometric mean (all cases, then each batch size) when any conv2d case ran."""
    rows = []
    batches = sorted({r.workload.batch for r in results if r.workload.group == "conv2d"})
    for label, batch in [("all", None)] + [(f"N{b}", b) for b in batches]:
        g, measured, cases = conv_geomean(results, batch)
        if cases == 0:
            continue
        cells = ["**conv2d geomean**", f"{label}: {measured} of {cases} cases", "F.conv2d (cuDNN)", "", "", "",
                 _cell(g, ".2f", "x"), "", "", "", "", "", ""]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def markdown_table(results: Sequence[Result]) -> str:
    """The header, a row per result, then the conv2d geometric-mean rows."""
    lines = [HEADER, "|" + "---|" * 3 + "---:|" * (COLUMNS - 4) + "---|"]
    lines += [table_row(r) for r in results]
    lines += geomean_rows(results)
    return "\n".join(lines)


def record_section(table: str, targets: Sequence[str], meta: dict[str, str], command: str, date: str) -> str:
    """The RESULTS.md section: title, what was run where, the table, the target lines."""
    facts = "\n".join(f"- {k}: {v}" for k, v in meta.items())
    return (f"\n## {date}: the GPU pipeline (issue 8) against cuBLAS, cuDNN, eager PyTorch and torch.compile\n\n"
            f"{facts}\n- Command: `{command}`\n\n{table}\n\nTargets (issue 8):\n\n" + "\n".join(targets) + "\n")


def list_text(ws: Sequence[Workload], l2_bytes: int = DEFAULT_L2_BYTES) -> str:
    """One line per workload: key, label, anchor, bytes of one set, rotation copies."""
    return "\n".join(f"{w.key:28} {w.label:42} {w.anchor_name:22} {w.set_bytes / 1e6:9.1f} MB "
                     f"x{rotation_copies(w.set_bytes, l2_bytes)}" for w in ws)


# -- compiling and running (torch and a GPU from here on) --------------------------------------------

def compile_ours(module: air.ModuleOp, pipeline: str | None = None, arch: str | None = None,
                 fast_math: bool | None = None):
    """(executable, total seconds, pass seconds) of ``runtime.compile(module, target="cuda")`` with
    the kernel caches off: the NVRTC memory cache cleared and an empty disk cache directory. Raises
    RuntimeError if NVRTC was not actually run (a cache hit)."""
    import runtime
    from runtime import nvrtc

    old = os.environ.get("AFFINE_IR_CACHE")
    with tempfile.TemporaryDirectory(prefix="affine-ir-gpu-bench-") as cache:
        os.environ["AFFINE_IR_CACHE"] = cache
        nvrtc.clear_memory_cache()
        before = nvrtc.cache_info()["compiles"]
        try:
            t0 = time.perf_counter()
            options = {} if fast_math is None else {"fast_math": fast_math}
            exe = runtime.compile(module, target="cuda", pipeline=pipeline, arch=arch, **options)
            total = time.perf_counter() - t0
        finally:
            if old is None:
                os.environ.pop("AFFINE_IR_CACHE", None)
            else:
                os.environ["AFFINE_IR_CACHE"] = old
    if nvrtc.cache_info()["compiles"] == before:
        raise RuntimeError("NVRTC did not run (a cache hit): the compile time would be wrong")
    passes = sum(t.seconds for t in exe.trace) if exe.trace is not None else 0.0
    return exe, total, passes


def _max_error(out, want) -> float:
    scale = float(want.abs().max()) or 1.0
    return float((out.double() - want.double()).abs().max()) / scale


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def _make_sets(torch, w: Workload, copies: int, seed: int) -> list[list]:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    sets = []
    for _ in range(copies):
        inputs = [torch.randn(s, device="cuda", generator=gen) for s in w.args[:-1]]
        sets.append([*inputs, torch.full(w.args[-1], float("nan"), device="cuda")])
    return sets


def run_workload(torch, w: Workload, *, repeat: int, warmup: int, l2_bytes: int, pipeline: str | None,
                 seed: int = 0, compile_mode: str | None = None, fast_math: bool | None = None) -> Result:
    """Compile, check and time ``w`` (see the module docstring); failures end up in ``Result.error``."""
    r = Result(w, copies=rotation_copies(w.set_bytes, l2_bytes))
    try:
        exe, r.compile_s, r.passes_s = compile_ours(w.build(), pipeline, fast_math=fast_math)
    except Exception as e:
        traceback.print_exc()
        r.error = f"compile failed: {_first_line(e)}"
        return r
    _check_and_time(torch, w, exe, r, repeat, warmup, seed, compile_mode)
    torch.cuda.empty_cache()  # the input sets are gone with _check_and_time's frame
    return r


def _check_and_time(torch, w: Workload, exe, r: Result, repeat: int, warmup: int, seed: int,
                    compile_mode: str | None) -> None:
    from runtime import cuda_driver

    reference = w.anchor

    def anchor(*xs):
        return reference(torch, *xs)

    def median_ms(rotation: Rotation) -> float:
        return statistics.median(cuda_driver.time_all_ms(rotation, repeat=repeat, warmup=warmup))

    stage = "inputs"
    try:
        sets = _make_sets(torch, w, r.copies, seed)
        inputs = [s[:-1] for s in sets]
        stage = "run"
        exe(*sets[0])
        stage = "anchor"
        want = anchor(*inputs[0])
        r.max_err = _max_error(sets[0][-1], want)
        r.error = check_failure(r.max_err, w.rtol)
        if r.error:
            return
        compiled = _torch_compiled(torch, w, anchor, inputs[0], want, r, compile_mode) if w.compiled else None
        stage = "timing"
        # Ours: the kernels alone, launched as a PyTorch op launches them (arguments prepared
        # once by ``bind``; the first check above went through the full call).
        bound = [exe.bind(*s) if hasattr(exe, "bind") else None for s in sets]
        try:
            ours = Rotation(lambda k: bound[k]() if bound[k] is not None else exe(*sets[k]),
                            [(k,) for k in range(len(sets))])
            r.ours_ms = median_ms(ours)
        finally:
            for b in bound:
                if b is not None:
                    b.close()
        r.anchor_ms = median_ms(Rotation(anchor, inputs))
        if compiled is not None:
            r.compiled_ms = median_ms(Rotation(compiled, inputs))
        stage = "check after timing"
        err = _max_error(sets[ours.last][-1], anchor(*inputs[ours.last]))
        failure = check_failure(err, w.rtol)
        if failure:  # the set of our last timed call is wrong: no figures
            r.ours_ms = r.anchor_ms = r.compiled_ms = None
            r.error = f"input set {ours.last} after timing: {failure}"
    except Exception as e:
        traceback.print_exc()
        r.ours_ms = r.anchor_ms = r.compiled_ms = None
        r.error = f"{stage} failed: {_first_line(e)}"


def _torch_compiled(torch, w: Workload, anchor, inputs, want, r: Result, mode: str | None):
    """``torch.compile(anchor)`` after one checked call, or None (with a note) when it fails."""
    try:
        torch._dynamo.reset()  # the closure's code object is the same for every workload
        fn = torch.compile(anchor, mode=mode)
        err = _max_error(fn(*inputs), want)
    except Exception as e:
        traceback.print_exc()
        r.notes.append(f"torch.compile failed: {_first_line(e)}")
        return None
    failure = check_failure(err, w.rtol)
    if failure:
        r.notes.append(f"torch.compile {failure}")
        return None
    return fn


def _driver_release() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _versions(torch) -> dict[str, str]:
    from importlib import metadata

    import runtime
    from runtime import cuda_driver, nvrtc

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "absent"

    drv = cuda_driver.driver_version()
    return {"Device": f"{torch.cuda.get_device_name()} (driver {_driver_release()}, CUDA {drv[0]}.{drv[1]})",
            "Software": f"Python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}, "
                        f"cuDNN {torch.backends.cudnn.version()}), triton {version('triton')}, NVRTC "
                        f"{'.'.join(map(str, nvrtc.nvrtc_version()))}, cuda-bindings {version('cuda-bindings')}",
            "Ours": "`runtime.compile(m, target=\"cuda\")`, pipeline "
                    f"`{runtime.cuda.DEFAULT_PIPELINE}`"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50, help="timed calls per side (median)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls per side first")
    ap.add_argument("--only", help="run the workloads whose key or name contains this text")
    ap.add_argument("--pipeline", help="our pass pipeline (default: runtime.cuda's)")
    ap.add_argument("--compile-mode", help="torch.compile mode (default: its default)")
    ap.add_argument("--exact-math", action="store_true", help="compile ours with fast_math=False (math functions in "
                                                              "double, rounded once: the interpreter's results)")
    ap.add_argument("--l2-mb", type=float, help="L2 bytes for rotation, in MB (default: the device's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--list", action="store_true", help="list the workloads and exit (no GPU needed)")
    ap.add_argument("--record", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    chosen = select(workloads(), args.only)
    if not chosen:
        ap.error(f"no workload matches {args.only!r}")
    if args.list:
        l2 = int(args.l2_mb * 1e6) if args.l2_mb else DEFAULT_L2_BYTES
        print(list_text(chosen, l2))
        return 0

    try:
        import torch
    except ImportError:
        raise SystemExit("benchmarks/gpu.py needs torch (with CUDA) and a GPU") from None
    import runtime

    if not torch.cuda.is_available() or not runtime.gpu_available():
        raise SystemExit(f"no usable GPU: {runtime.cuda_driver.gpu_unavailable_reason() or 'torch sees none'}")
    torch.cuda.init()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    l2 = int(args.l2_mb * 1e6) if args.l2_mb else (getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)
                                                  or DEFAULT_L2_BYTES)
    meta = _versions(torch)
    if args.pipeline:
        meta["Ours"] = f"`runtime.compile(m, target=\"cuda\", pipeline=...)`, pipeline `{args.pipeline}`"
    if args.exact_math:
        meta["Ours"] = meta.get("Ours", "`runtime.compile(m, target=\"cuda\")`") + ", fast_math=False"
    meta["Method"] = (f"median of {args.repeat} CUDA-event timings of one call after {args.warmup} warm-up calls "
                      f"(ours: the kernel launches of `exe.bind(*args)`, arguments prepared once, as a torch op); "
                      f"inputs rotated over enough copies to exceed 2x L2 ({l2 / 2**20:.0f} MiB); TF32 off, "
                      f"cudnn.benchmark on; each side checked against the eager anchor before timing; our compile "
                      f"time with the kernel caches off")
    for k, v in meta.items():
        print(f"{k}: {v}")
    print(HEADER, flush=True)
    results = []
    for w in chosen:
        r = run_workload(torch, w, repeat=args.repeat, warmup=args.warmup, l2_bytes=l2, pipeline=args.pipeline,
                         seed=args.seed, compile_mode=args.compile_mode,
                         fast_math=False if args.exact_math else None)
        results.append(r)
        print(table_row(r), flush=True)
    table = markdown_table(results)
    targets = target_lines(results)
    print("\n" + table + "\n\n" + "\n".join(targets))
    if args.record:
        cmd = " ".join(["python benchmarks/gpu.py", *(argv if argv is not None else sys.argv[1:])])
        section = record_section(table, targets, meta, cmd, datetime.date.today().isoformat())
        with open(Path(__file__).with_name("RESULTS.md"), "a") as fh:
            fh.write(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
