"""The GPU benchmark harness (benchmarks/gpu.py) without a GPU: the workload table against the
library's modules, rotation counts, ratios, geometric means, target lines, the markdown table and
the RESULTS.md section; the compile timing with the caches off (NVRTC works without a GPU); a
failing compile becomes a row. Tests marked ``gpu`` run the harness on small workloads with torch
on the device (check before timing, a wrong anchor refused)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import runtime
from affine_ir.types import MemRefType

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_bench", _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


gb = _load()
WORKLOADS = gb.workloads()
BY_KEY = {w.key: w for w in WORKLOADS}


# -- the workload table -------------------------------------------------------------------------------

def test_workloads_are_the_issue_8_set():
    assert [w.key for w in WORKLOADS if w.name == "matmul"] == [f"matmul-{n}" for n in (1024, 2048, 4096, 8192)]
    convs = [w for w in WORKLOADS if w.group == "conv2d"]
    assert len(convs) == gb.CONV_CASES == 12
    assert sorted(w.batch for w in convs) == [1] * 6 + [8] * 6
    assert {w.key for w in WORKLOADS if w.compiled} == {"softmax", "layernorm", "chain", "mlp"}
    assert len({w.key for w in WORKLOADS}) == len(WORKLOADS)
    assert len({w.label for w in WORKLOADS}) == len(WORKLOADS)
    assert math.prod(BY_KEY["chain"].args[0]) == 64 * 2**20  # a 64M-element chain


@pytest.mark.parametrize("key", sorted(BY_KEY))
def test_argument_shapes_match_the_module(key):
    w = BY_KEY[key]
    func = next(op for op in w.build().body.ops if op.name == "func.func")
    types = [a.type for a in func.args]
    assert all(isinstance(t, MemRefType) and str(t.element_type) == "f32" for t in types)
    assert [tuple(t.shape) for t in types] == list(w.args)


def test_conv_geometry():
    # (224 + 2*3 - 7) // 2 + 1 = 112; 3x3 pad 1 keeps the size; 1x1 pad 0 too
    assert gb.conv_out_size(224, 7, 2, 3) == 112
    assert BY_KEY["conv2d-n8-c3-h224-f64-k7"].args[-1] == (8, 64, 112, 112)
    assert BY_KEY["conv2d-n1-c512-h7-f512-k3"].args[-1] == (1, 512, 7, 7)
    assert BY_KEY["conv2d-n1-c256-h56-f64-k1"].args == ((1, 256, 56, 56), (64, 256, 1, 1), (1, 64, 56, 56))


def test_work_figures():
    assert BY_KEY["matmul-4096"].work == 2 * 4096**3
    # 2 * N * F * Ho * Wo * C * KH * KW = 2 * 1 * 64 * 56 * 56 * 64 * 9
    assert BY_KEY["conv2d-n1-c64-h56-f64-k3"].work == 231_211_008
    assert BY_KEY["mlp"].work == 2 * 4096**3
    assert BY_KEY["softmax"].work == 268_435_456  # read and write 8192 x 4096 f32 once
    for w in WORKLOADS:  # memory-bound: every argument read or written once = one input set
        assert w.unit in ("TFLOP/s", "GB/s")
        if w.unit == "GB/s":
            assert w.work == w.set_bytes, w.key


def test_tolerances():
    for w in WORKLOADS:
        contraction = w.name in ("matmul", "conv2d", "mlp")
        assert w.rtol == (1e-3 if contraction else 1e-5), w.key


def test_select():
    assert gb.select(WORKLOADS, None) == WORKLOADS
    assert len(gb.select(WORKLOADS, "conv2d")) == 12
    assert [w.key for w in gb.select(WORKLOADS, "MATMUL-4096")] == ["matmul-4096"]
    assert {w.batch for w in gb.select(WORKLOADS, "conv2d N8")} == {8}
    assert len(gb.select(WORKLOADS, "conv2d N8")) == 6
    assert gb.select(WORKLOADS, "no such workload") == []


# -- rotation -----------------------------------------------------------------------------------------

def test_rotation_copies_examples():
    l2 = 50 * 10**6
    assert gb.rotation_copies(201_326_592, l2) == 1  # matmul 4096: 3 x 64 MiB > 2x L2
    assert gb.rotation_copies(l2, l2) == 3  # 2 copies are exactly 2x L2, not more
    assert gb.rotation_copies(2 * l2, l2) == 2
    assert gb.rotation_copies(2 * l2 + 1, l2) == 1
    assert gb.rotation_copies(1, l2, max_copies=16) == 16
    with pytest.raises(ValueError):
        gb.rotation_copies(0, l2)


@given(st.integers(1, 10**9), st.integers(1, 10**8))
def test_rotation_copies_exceed_twice_l2_minimally(set_bytes, l2):
    k = gb.rotation_copies(set_bytes, l2, max_copies=10**12)
    assert k >= 1 and k * set_bytes > 2 * l2
    if k > 1:
        assert (k - 1) * set_bytes <= 2 * l2


def test_rotation_cycles_through_the_sets():
    seen = []
    call = gb.Rotation(lambda *xs: seen.append(xs), [(1, "a"), (2, "b"), (3, "c")])
    assert call.last is None
    for _ in range(7):
        call()
    assert seen == [(1, "a"), (2, "b"), (3, "c")] * 2 + [(1, "a")]
    assert call.last == 0
    call()
    assert call.last == 1 and seen[-1] == (2, "b")
    with pytest.raises(ValueError):
        gb.Rotation(print, [])


# -- ratios, rates, geometric means, targets ----------------------------------------------------------

def test_ratio_rate_geomean_check():
    assert gb.ratio(3.0, 1.5) == 2.0 and gb.ratio(None, 1.0) is None and gb.ratio(1.0, None) is None
    assert gb.rate(2e12, 1000.0, "TFLOP/s") == pytest.approx(2.0)
    assert gb.rate(4.27e9, 1.0, "GB/s") == pytest.approx(4270.0)
    assert gb.rate(1.0, None, "GB/s") is None
    assert gb.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert gb.geomean([0.3] * 5) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        gb.geomean([])
    with pytest.raises(ValueError):
        gb.geomean([1.0, 0.0])
    assert gb.check_failure(1e-6, 1e-5) is None
    assert gb.check_failure(1e-5, 1e-5) is None
    assert "exceeds" in gb.check_failure(2e-5, 1e-5)
    assert "exceeds" in gb.check_failure(float("nan"), 1e-5)


def _result(key, ours=1.0, anchor=1.0, compiled=None, compile_s=0.5, **kw):
    return gb.Result(BY_KEY[key], ours_ms=ours, anchor_ms=anchor, compiled_ms=compiled, compile_s=compile_s,
                     passes_s=0.1, max_err=1e-7, **kw)


def _all_results(conv_ratio=0.5, b1_fast=0, chain_share=0.9, vs_compile=1.0, matmul=0.7, slow_compile=None):
    out = []
    for w in WORKLOADS:
        seconds = slow_compile if slow_compile and w.key == "mlp" else 0.5
        if w.group == "conv2d":
            fast = w.batch == 1 and sum(r.workload.batch == 1 for r in out if r.workload.group == "conv2d") < b1_fast
            out.append(_result(w.key, anchor=1.5 if fast else conv_ratio))
        elif w.key == "matmul-4096":
            out.append(_result(w.key, anchor=matmul))
        elif w.key == "chain":
            ms = w.work / (chain_share * gb.COPY_GBPS * 1e6)  # GB/s = bytes / ms * 1e-6
            out.append(_result(w.key, ours=ms, anchor=ms, compiled=ms * vs_compile))
        else:
            out.append(_result(w.key, compiled=vs_compile if w.compiled else None, compile_s=seconds))
    return out


def _line(lines, start):
    (line,) = [x for x in lines if x.startswith(f"- {start}")]
    return line


def test_conv_geomean_over_cases_and_batches():
    rs = _all_results(conv_ratio=0.5, b1_fast=2)
    g, measured, cases = gb.conv_geomean(rs)
    assert (measured, cases) == (12, 12)
    assert g == pytest.approx((1.5**2 * 0.5**10) ** (1 / 12))
    assert gb.conv_geomean(rs, batch=8)[0] == pytest.approx(0.5)
    rs[5] = gb.Result(rs[5].workload, error="compile failed: boom")
    assert gb.conv_geomean(rs)[1:] == (11, 12)


def test_target_lines_all_met():
    lines = gb.target_lines(_all_results(conv_ratio=0.7, b1_fast=2, chain_share=0.9, vs_compile=0.95, matmul=0.7))
    assert len(lines) == 8
    assert all(line.endswith(": met") for line in lines), lines
    assert "2 of 6 measured" in _line(lines, "conv2d batch-1")
    assert "(3843 GB/s)" in _line(lines, "chain bandwidth")  # 0.9 * 4270


def test_target_lines_say_by_how_much_a_target_is_missed():
    lines = gb.target_lines(_all_results(conv_ratio=0.5, b1_fast=1, chain_share=0.5, vs_compile=0.45, matmul=0.35,
                                         slow_compile=2.5))
    assert _line(lines, "matmul n=4096").endswith("0.35x, target >= 0.70x: missed by 50% (needs 2.00x faster)")
    assert "missed by" in _line(lines, "conv2d geomean")
    assert _line(lines, "conv2d batch-1").endswith("target >= 2: missed by 1")
    assert _line(lines, "softmax").endswith("0.45x, target >= 0.90x: missed by 50% (needs 2.00x faster)")
    assert _line(lines, "chain bandwidth").endswith("50%, target >= 85%: missed by 41% (needs 1.70x faster)")
    compile_line = _line(lines, "compile")
    assert "max 2.50 s (mlp" in compile_line and "missed by 25% at worst; 1 over: mlp" in compile_line


def test_target_lines_when_workloads_are_missing_or_failed():
    rs = [r for r in _all_results() if r.workload.key != "chain"]
    rs[4] = gb.Result(rs[4].workload, error="check failed: max error 1 exceeds 0.001", compile_s=0.4)
    lines = gb.target_lines(rs)
    assert "not measured: 11 of 12 cases measured (geomean 0.50x over those)" in _line(lines, "conv2d geomean")
    assert "not established (1 of 6 not measured)" in _line(lines, "conv2d batch-1")
    assert _line(lines, "chain vs torch.compile").endswith("not measured")
    assert _line(lines, "chain bandwidth").endswith("not measured")
    assert gb.target_lines([])[0].endswith("not measured")


# -- the table and the record -------------------------------------------------------------------------

def _cells(line: str) -> list[str]:
    assert line.startswith("| ") and line.endswith(" |")
    return [c.strip() for c in line[2:-2].split(" | ")]


def test_markdown_table_is_well_formed():
    rs = _all_results(conv_ratio=0.5, b1_fast=2)
    rs[0] = gb.Result(BY_KEY["matmul-1024"], error="compile failed: CompileError: a | b\nsecond line", compile_s=None)
    rs[-1].notes.append("torch.compile failed: RuntimeError: x")
    text = gb.markdown_table(rs)
    lines = text.splitlines()
    assert lines[0] == gb.HEADER and len(lines) == 2 + len(rs) + 3  # header, rule, rows, geomean all/N1/N8
    assert all(line.count("|") == gb.COLUMNS + 1 for line in lines), text
    failed = _cells(lines[2])
    assert failed[3:5] == ["-", "-"] and failed[6] == "-"
    assert failed[-1] == "compile failed: CompileError: a / b second line"
    mm = _cells(lines[4])  # matmul 4096: 0.7 ms cuBLAS, 1 ms ours
    assert mm[:2] == ["matmul", "4096x4096x4096"] and mm[6] == "0.70x" and mm[8] == "137.4 TFLOP/s"
    assert _cells(lines[-3])[:2] == ["**conv2d geomean**", "all: 12 of 12 cases"]
    assert _cells(lines[-1])[6] == "0.50x"  # batch 8: every case 0.5x
    assert _cells(lines[2 + len(rs) - 1])[-1] == "torch.compile failed: RuntimeError: x"


def test_record_section():
    table = gb.markdown_table(_all_results())
    targets = gb.target_lines(_all_results())
    text = gb.record_section(table, targets, {"Device": "NVIDIA H200 (driver 1)"}, "python benchmarks/gpu.py",
                             "2026-12-01")
    assert text.startswith("\n## 2026-12-01: the GPU pipeline (issue 8)")
    assert "- Device: NVIDIA H200 (driver 1)" in text and "`python benchmarks/gpu.py`" in text
    assert table in text and all(t in text for t in targets)


def test_list_and_cli_without_a_gpu(capsys):
    assert gb.main(["--list", "--only", "conv2d N1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and out[0].split()[-1] == "x58"  # 1.75 MB set, 2 x 50 MB / 1.75 MB -> 58
    with pytest.raises(SystemExit):
        gb.main(["--list", "--only", "no such workload"])


# -- compiling (NVRTC, no GPU needed) -----------------------------------------------------------------

def _nvrtc_usable() -> bool:
    try:
        runtime.nvrtc.include_dirs()
        return True
    except Exception:
        return False


@pytest.mark.skipif(not _nvrtc_usable(), reason="needs NVRTC and the CUDA headers")
@pytest.mark.parametrize("key", [w.key for w in WORKLOADS])
def test_every_benchmark_kernel_compiles_with_nvrtc(key):
    """The optimized kernels the benchmark times, built by the default GPU pipeline and
    compiled by NVRTC here (no GPU needed) with an empty log; contractions and convolutions
    are scheduled by gpu-schedule (convolutions as implicit GEMMs), the rest mapped."""
    w = BY_KEY[key]
    exe = runtime.compile(w.build(), target="cuda", arch="sm_90")
    assert not exe.image.log.strip(), exe.image.log
    scheduled = [d.message for d in exe.trace.decisions if d.pass_name == "gpu-schedule" and d.kind == "applied"]
    if w.group == "conv2d" or w.name in ("matmul", "mlp"):
        assert len(scheduled) == 1, scheduled
        assert "__shared__" in exe.source
    if w.group == "conv2d":
        assert "over (%c, %kh, %kw)" in scheduled[0] or "over (%c)" in scheduled[0], scheduled


def test_compile_ours_runs_nvrtc_every_time(monkeypatch):
    monkeypatch.setenv("AFFINE_IR_CACHE", "/nonexistent-kept")
    w = gb.matmul_workload(32)
    before = runtime.nvrtc.cache_info()["compiles"]
    for _ in range(2):  # the same source twice: both compiled (caches off)
        exe, total, passes = gb.compile_ours(w.build(), arch="sm_90")
        assert 0 < passes < total and "__global__" in exe.source
    assert runtime.nvrtc.cache_info()["compiles"] == before + 2
    assert os.environ["AFFINE_IR_CACHE"] == "/nonexistent-kept"


def test_a_failing_compile_is_a_row_not_a_crash():
    def broken():
        raise ValueError("no module today")

    w = dataclasses.replace(gb.matmul_workload(32), build=broken)
    r = gb.run_workload(None, w, repeat=1, warmup=0, l2_bytes=gb.DEFAULT_L2_BYTES, pipeline=None)
    assert r.error == "compile failed: ValueError: no module today"
    assert r.ours_ms is None and r.anchor_ms is None and r.ratio is None
    assert "compile failed" in gb.table_row(r)


# -- run_workload's control flow, with numpy standing in for torch and the GPU ------------------------

class _Array(np.ndarray):
    def double(self):
        return np.asarray(self, np.float64).view(_Array)

    def abs(self):
        return np.abs(self)


class _Generator:
    def __init__(self, device):
        self.rng = None

    def manual_seed(self, seed):
        self.rng = np.random.default_rng(seed)
        return self


def _fake_torch(compile_fails: bool = False):
    def compile(fn, mode=None):
        if compile_fails:
            raise RuntimeError("no triton here")
        return fn

    return SimpleNamespace(
        Generator=_Generator, matmul=lambda a, b: np.matmul(a, b).view(_Array),
        randn=lambda shape, device, generator: generator.rng.standard_normal(shape).astype(np.float32).view(_Array),
        full=lambda shape, value, device: np.full(shape, value, np.float32).view(_Array),
        cuda=SimpleNamespace(empty_cache=lambda: None), compile=compile, _dynamo=SimpleNamespace(reset=lambda: None))


def _run_fake(monkeypatch, exe, workload, compile_fails=False, repeat=3, warmup=2):
    calls = []

    def time_all_ms(fn, repeat, warmup):
        for _ in range(warmup + repeat):
            fn()
        calls.append(fn.last)
        return [2.0, 1.0, 3.0][:repeat]

    monkeypatch.setattr(runtime.cuda_driver, "time_all_ms", time_all_ms)
    monkeypatch.setattr(gb, "compile_ours", lambda module, pipeline=None, fast_math=None: (exe, 0.3, 0.1))
    r = gb.run_workload(_fake_torch(compile_fails), workload, repeat=repeat, warmup=warmup, l2_bytes=10**5,
                        pipeline=None)
    return r, calls


def _matmul_exe(wrong_after: int | None = None):
    count = [0]

    def exe(a, b, c):
        count[0] += 1
        c[...] = a @ b + (1.0 if wrong_after is not None and count[0] > wrong_after else 0.0)

    return exe


def test_run_workload_checks_then_times_every_side(monkeypatch):
    w = gb.matmul_workload(64)  # 48 KiB a set: 5 copies for a 100 kB L2
    r, calls = _run_fake(monkeypatch, _matmul_exe(), w)
    assert r.error is None and r.copies == 5 and r.max_err == 0.0
    assert (r.ours_ms, r.anchor_ms, r.compiled_ms) == (2.0, 2.0, None)
    assert calls == [4, 4]  # ours, anchor: 5 calls each over the 5 sets
    r, calls = _run_fake(monkeypatch, _matmul_exe(), w, repeat=2, warmup=1)
    assert r.error is None and calls == [2, 2]  # the check after timing reads set 2, not the unwritten set 4


def test_run_workload_refuses_a_wrong_first_result(monkeypatch):
    r, calls = _run_fake(monkeypatch, _matmul_exe(wrong_after=0), gb.matmul_workload(64))
    assert r.error.startswith("check failed") and r.ours_ms is None and calls == []


def test_run_workload_drops_figures_when_a_timed_set_is_wrong(monkeypatch):
    # 3 timed calls over 5 sets: sets 0, 1, 2 written (wrongly after the first call); the last one used is checked
    r, _ = _run_fake(monkeypatch, _matmul_exe(wrong_after=1), gb.matmul_workload(64), repeat=2, warmup=1)
    assert r.error.startswith("input set 2 after timing: check failed")
    assert r.ours_ms is None and r.anchor_ms is None


def test_run_workload_reports_a_failing_call_and_a_failing_torch_compile(monkeypatch):
    def exe(*args):
        raise runtime.LaunchError("needs 260 KiB shared memory, limit 227 KiB")

    r, _ = _run_fake(monkeypatch, exe, gb.matmul_workload(64))
    assert r.error.startswith("run failed: LaunchError: ") and "needs 260 KiB shared memory" in r.error
    assert r.ours_ms is None
    w = dataclasses.replace(gb.matmul_workload(64), compiled=True)
    r, calls = _run_fake(monkeypatch, _matmul_exe(), w, compile_fails=True)
    assert r.error is None and r.ours_ms == 2.0 and r.compiled_ms is None and len(calls) == 2
    assert r.notes == ["torch.compile failed: RuntimeError: no triton here"]
    r, calls = _run_fake(monkeypatch, _matmul_exe(), w)
    assert r.compiled_ms == 2.0 and len(calls) == 3


# -- on the GPU, with torch ---------------------------------------------------------------------------

def _torch_on_gpu():
    torch = pytest.importorskip("torch")
    if not (torch.cuda.is_available() and runtime.gpu_available()):
        pytest.skip("needs an NVIDIA GPU")
    return torch


@pytest.mark.gpu
def test_small_workloads_check_and_time_on_the_gpu():
    torch = _torch_on_gpu()
    for w in (gb.matmul_workload(128), gb.conv2d_workload(2, 8, 16, 8, 3, 1, 1), gb.softmax_workload(64, 256)):
        r = gb.run_workload(torch, w, repeat=3, warmup=1, l2_bytes=gb.DEFAULT_L2_BYTES, pipeline=None)
        assert r.error is None, r.error
        assert r.max_err <= w.rtol and r.ours_ms > 0 and r.anchor_ms > 0 and r.copies > 1
        if w.compiled:
            assert r.compiled_ms is not None or r.notes, r


@pytest.mark.gpu
def test_a_wrong_result_gives_no_figures():
    torch = _torch_on_gpu()
    w = dataclasses.replace(gb.matmul_workload(64), anchor=lambda torch, a, b: torch.matmul(a, b) * 1.01)
    r = gb.run_workload(torch, w, repeat=3, warmup=1, l2_bytes=gb.DEFAULT_L2_BYTES, pipeline=None)
    assert r.error.startswith("check failed") and r.ours_ms is None and r.anchor_ms is None
