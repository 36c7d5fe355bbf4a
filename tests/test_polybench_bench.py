"""The PolyBench benchmark harness (benchmarks/polybench.py) without a GPU: ``--list``, the
tolerance and error arithmetic, the table, summary and RESULTS.md section on synthetic rows, a
failing kernel becoming a row, the cpu side end to end at MINI, and the gpu/torch control flow
(fresh input copies per call, long calls not repeated, 1x1x1 kernels skipped on an estimate)
with numpy standing in for torch and the CPU executable for the GPU's. Tests marked ``gpu``
run it on the device."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import runtime

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "polybench.py"


def _load():
    spec = importlib.util.spec_from_file_location("polybench_bench", _PATH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["polybench_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


pb = _load()
KERNELS = pb.polybench.KERNELS
MINI = pb.Options(dataset="MINI", repeat=3, warmup=1, cpu_repeat=2)


def test_the_registry_is_the_package_not_this_script():
    assert len(KERNELS) == 30 and pb.polybench.__file__.endswith("__init__.py")


def test_list_names_every_kernel_without_compiling(capsys, monkeypatch):
    monkeypatch.setattr(runtime, "compile", None)  # --list must not compile
    assert pb.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(KERNELS)
    gemm = next(line for line in lines if line.startswith("gemm "))
    assert "NI=1000 NJ=1100 NK=1200" in gemm and "3.96e+09 flops" in gemm
    assert pb.main(["--list", "--dataset", "MINI", "--only", "lu,jacobi-1d"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "N=40" in lines[0] and "TSTEPS=20 N=30" in lines[1]
    with pytest.raises(SystemExit):
        pb.main(["--list", "--only", "gemm,nosuch"])


def test_options_from_the_command_line():
    _, o, ks = pb.parse_options(["--only", "gemm, lu", "--no-reference", "lu", "--dataset", "SMALL"])
    assert [k.name for k in ks] == ["gemm", "lu"] and o.dataset == "SMALL" and o.no_reference == {"lu"}
    assert pb.parse_options(["--no-reference"])[1].no_reference is None  # none for any kernel
    assert pb.parse_options([])[1].no_reference == frozenset() and len(pb.parse_options([])[2]) == 30


# -- arithmetic ---------------------------------------------------------------------------------------

def test_tolerance_scales_with_the_largest_size_ratio():
    assert pb.tolerance(KERNELS["gemm"], "MINI") == KERNELS["gemm"].rtol
    assert pb.tolerance(KERNELS["gemm"], "LARGE") == pytest.approx(1e-4 * 1000 / 20)  # NI 20 -> 1000 (NK: 40x)
    assert pb.tolerance(KERNELS["heat-3d"], "LARGE") == pytest.approx(1e-4 * 500 / 20)  # TSTEPS wins over N


def test_max_error_relative_to_the_largest_value_and_non_finite_values():
    w = np.array([[100.0, -200.0], [1.0, 0.0]], np.float32)
    assert pb.max_error([w + np.float32(0.5)], [w]) == pytest.approx(0.5 / 200)
    small = np.array([0.01, 0.02], np.float32)
    assert pb.max_error([small + np.float32(0.001)], [small]) == pytest.approx(0.001, rel=1e-3)  # max(1, |w|)
    nan = np.array([np.nan, 1.0, np.inf])
    assert pb.max_error([nan.copy()], [nan]) == 0.0
    assert pb.max_error([np.array([1.0, 1.0, np.inf])], [nan]) == math.inf
    assert pb.max_error([np.array([np.nan, 1.0, -np.inf])], [nan]) == math.inf
    assert pb.max_error([np.zeros(3)], [np.zeros(4)]) == math.inf


def test_speedup_ratio_rates():
    r = _row("gemm", gpu=2.0, cpu=10.0, torch=3.0)
    assert r.speedup == 5.0 and r.vs_torch == 1.5
    assert r.rate(r.flops) == pytest.approx(r.flops / 2e6) and r.rate(r.bytes) == pytest.approx(r.bytes / 2e6)
    none = _row("lu", gpu=None, cpu=1.0)
    assert none.speedup is None and none.vs_torch is None and none.rate(none.flops) is None
    assert pb.ratio(1.0, 0.0) is None and pb.ratio(None, 1.0) is None


def test_output_positions_follow_the_argument_names():
    assert pb.output_positions(KERNELS["gemm"]) == [5]  # ni, nj, nk, alpha, beta, C
    assert pb.output_positions(KERNELS["gesummv"]) == [5, 7]  # tmp, y


# -- the table, the summary, the record ---------------------------------------------------------------

def _side(ms, err=1e-6, against="cpu", **kw):
    return pb.Side(ms=ms, calls=5 if ms is not None else 0, err=err if ms is not None else None,
                   against=against if ms is not None else "", **kw)


def _row(name, gpu=1.0, cpu=2.0, torch=None, err=1e-6, **kw):
    k = KERNELS[name]
    p = k.sizes["LARGE"]
    return pb.Row(name, k.category, k.flops(p), k.bytes(p), pb.tolerance(k, "LARGE"), gpu=_side(gpu, err),
                  cpu=_side(cpu, against="ref"), torch=_side(torch) if torch else pb.Side(status="n/a"),
                  launches=1, sequential=0, gpu_compile_s=0.5, cpu_compile_s=0.25, **kw)


def _cells(line: str) -> list[str]:
    assert line.startswith("| ") and line.endswith(" |")
    return [c.strip() for c in line[2:-2].split(" | ")]


def _rows():
    skipped = _row("floyd-warshall", gpu=None, cpu=900.0)
    skipped.gpu = pb.Side(status="skipped", note="skipped: a 1x1x1 launch, estimated 190 s a call")
    failed = _row("durbin", gpu=None, cpu=0.5)
    failed.gpu = pb.Side(status="failed", note="compile failed: CompileError: a | b\nmore")
    return [_row("gemm", gpu=0.5, cpu=20.0, torch=0.25), _row("lu", gpu=40.0, cpu=20.0, err=0.5),
            skipped, failed, _row("jacobi-2d", gpu=2.0, cpu=8.0)]


def test_markdown_table_is_well_formed():
    rows = _rows()
    lines = pb.markdown_table(rows).splitlines()
    assert lines[0] == pb.HEADER and len(lines) == 2 + len(rows)
    assert all(line.count("|") == pb.COLUMNS + 1 for line in lines), lines
    gemm = _cells(lines[2])
    assert gemm[:6] == ["gemm", "linear-algebra/blas", "0.500", "20.000", "0.250", "40.00x"]
    assert gemm[6] == "0.50x" and gemm[7] == f"{KERNELS['gemm'].flops(KERNELS['gemm'].sizes['LARGE']) / 5e5:.1f}"
    assert gemm[11] == "0.50 / 0.25" and gemm[12] == "ok 1.0e-06 (tol 5.0e-03)"
    lu = _cells(lines[3])
    assert lu[5] == "0.50x" and lu[12] == "FAIL: gpu vs cpu 5.0e-01 (tol 5.0e-03)"
    fw = _cells(lines[4])
    assert fw[2] == "skipped" and fw[5] == "-" and fw[-1] == "gpu: skipped: a 1x1x1 launch, estimated 190 s a call"
    assert _cells(lines[5])[-1] == "gpu: compile failed: CompileError: a / b more"
    one = _row("seidel-2d", gpu=3.0, cpu=30000.0)
    one.cpu.calls = 1
    assert _cells(pb.table_row(one))[3] == "30000.000 (1 call)"


def test_summary_counts_the_faster_kernels_and_lists_the_others():
    lines = pb.summary_lines(_rows())
    assert lines[0] == "- Faster on the GPU than on the CPU pipeline: 2 of 5 kernels (3 measured on both sides)"
    assert lines[1].startswith("- Speedup (cpu / gpu) over those 3: geometric mean 4.31x, median 4.00x")
    assert lines[2] == ("- Not faster (3): lu (0.50x); floyd-warshall (gpu skipped: a 1x1x1 launch, estimated 190 s "
                        "a call); durbin (gpu compile failed: CompileError: a / b more)")
    assert lines[3] == "- Faster than torch: 0 of 1 kernels with a torch side"
    assert lines[4] == "- Check failures: 1: lu (gpu vs cpu 5.0e-01)"
    assert pb.summary_lines([])[0].startswith("- Faster on the GPU than on the CPU pipeline: 0 of 0")


def test_summary_without_a_gpu():
    rows = _rows()[:2]
    for r in rows:
        r.gpu = pb.Side(status="no GPU")
    assert pb.summary_lines(rows) == ["- No GPU: the cpu side only (2 kernels)", "- Check failures: 0"]


def test_record_section():
    rows = _rows()
    table, summary = pb.markdown_table(rows), pb.summary_lines(rows)
    meta = {"Device": "NVIDIA H200", "Driver": "580 (CUDA 13.0)", "Host CPU": "16 cores"}
    text = pb.record_section(table, summary, meta, "python benchmarks/polybench.py --record", "2026-12-02")
    assert text.startswith("\n## 2026-12-02: PolyBench/C 4.2 on the GPU (issue 17)\n")
    assert "- Device: NVIDIA H200\n- Driver: 580 (CUDA 13.0)\n- Host CPU: 16 cores\n" in text
    assert "- Command: `python benchmarks/polybench.py --record`" in text
    assert table in text and all(s in text for s in summary)


# -- running: the cpu side, failures ------------------------------------------------------------------

def test_cpu_side_end_to_end_at_mini(capsys):
    rows = pb.run_all(None, [KERNELS[n] for n in ("gemm", "jacobi-1d", "lu")], MINI)
    for r in rows:
        assert r.cpu.ms > 0 and r.cpu.calls == 2 and r.cpu.against == "ref" and r.cpu.err <= r.tol, r
        assert r.gpu.status == r.torch.status == "no GPU" and not r.failures
    out = capsys.readouterr().out.splitlines()
    assert out[0] == pb.HEADER and [_cells(x)[0] for x in out[1:]] == ["gemm", "jacobi-1d", "lu"]


def test_main_at_mini_prints_the_method_table_and_summary(capsys):
    assert pb.main(["--dataset", "MINI", "--only", "gemm,jacobi-1d", "--cpu-repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "Method: dataset MINI;" in out and "cpu: wall-clock median of 1 calls" in out
    table = out[out.index("\n" + pb.HEADER + "\n|---"):].splitlines()
    assert [_cells(x)[0] for x in table[3:5]] == ["gemm", "jacobi-1d"]
    assert "- Check failures: 0" in out


def test_a_failing_kernel_is_a_row_and_the_run_goes_on(monkeypatch):
    broken = dataclasses.replace(KERNELS["gemm"], name="no-such-kernel")  # module(): no such file
    rows = pb.run_all(None, [broken, KERNELS["jacobi-1d"]], MINI)
    assert rows[0].note.startswith("inputs failed: FileNotFoundError") and rows[0].cpu.ms is None
    assert rows[1].cpu.ms > 0 and not rows[1].note

    def no_compile(k, target, dataset=None):
        raise runtime.CompileError("LLVM says no")

    monkeypatch.setattr(pb, "compile_timed", no_compile)
    (row,) = pb.run_all(None, [KERNELS["gemm"]], MINI)
    assert row.cpu.status == "failed" and row.cpu.note.startswith("compile failed: CompileError: ")
    assert "cpu: compile failed: CompileError: " in pb.table_row(row) and "LLVM says no" in row.cpu.note
    assert pb.summary_lines([row, *rows[1:]])[-1] == "- Check failures: 0"


def test_a_wrong_cpu_result_fails_the_check_but_keeps_the_time(monkeypatch):
    k = dataclasses.replace(KERNELS["gemm"], reference=lambda *a: a[5].__iadd__(1.0))
    (row,) = pb.run_all(None, [k], MINI)
    assert row.cpu.ms > 0 and row.failures and pb.check_cell(row).startswith("FAIL: cpu vs ref")
    (row,) = pb.run_all(None, [k], dataclasses.replace(MINI, no_reference=None))
    assert row.cpu.err is None and pb.check_cell(row) == "unchecked"


def test_a_slow_reference_is_skipped_on_its_small_estimate(monkeypatch):
    calls = []

    def slow_reference(*args):
        calls.append(args[0])
        time.sleep(0.05)

    k = dataclasses.replace(KERNELS["seidel-2d"], reference=slow_reference)
    monkeypatch.setattr(pb, "run_cpu", lambda *a: (pb.Side(ms=1.0, calls=1), None))  # no LARGE cpu run here
    (row,) = pb.run_all(None, [k], dataclasses.replace(MINI, dataset="LARGE", ref_max_s=60.0))
    assert calls == [KERNELS["seidel-2d"].sizes["SMALL"]["TSTEPS"]] * 2  # the SMALL probe (best of 2) only
    assert row.note.startswith("reference skipped: estimated ") and row.note.endswith(" s from SMALL")
    assert int(row.note.split()[3]) >= 0.05 * 3500  # 50 ms x a flops ratio of 3593
    (row,) = pb.run_all(None, [k], dataclasses.replace(MINI, dataset="LARGE", ref_max_s=1e6))
    assert len(calls) == 5 and calls[-1] == 500 and not row.note  # probe, then the LARGE reference


# -- the gpu and torch sides, with numpy for torch and the CPU executable for the GPU -------------------

class _Tensor(np.ndarray):
    def to(self, device):
        return self.copy()

    def clone(self):
        return self.copy()

    def cpu(self):
        return self

    def numpy(self):
        return np.asarray(self)


FAKE_TORCH = SimpleNamespace(from_numpy=lambda a: a.view(_Tensor), is_tensor=lambda a: isinstance(a, _Tensor),
                             cuda=SimpleNamespace(empty_cache=lambda: None))


class _Bound:
    def __init__(self, launches: int, fn):
        self.launches, self.fn = [None] * launches, fn

    def __call__(self):
        self.fn()

    def close(self):
        pass


class _FakeGPU:
    """The CPU executable standing in for the CUDA one, recording the inputs each call saw (an
    in-place kernel must see pristine inputs every call); ``bind`` as the CUDA one's."""

    def __init__(self, exe, launches=7):
        self.exe, self.launches, self.seen, self.trace = exe, launches, [], exe.trace

    def __call__(self, *args):
        self.seen.append([a.copy() for a in args if isinstance(a, np.ndarray)])
        self.exe(*args)

    def bind(self, *args):
        return _Bound(self.launches, lambda: self(*args))


def _fake_gpu(monkeypatch, ms=(1.0, 2.0, 3.0, 4.0), sequential=()):
    """compile_timed(k, "cuda") gives a _FakeGPU; time_all_ms calls and returns ``ms``."""
    fakes, counts = [], []
    real = pb.compile_timed

    def compile_timed(k, target, dataset=None):
        exe, seconds = real(k, "cpu", dataset)
        if target == "cuda":
            fakes.append(_FakeGPU(exe))
            return fakes[-1], seconds
        return exe, seconds

    def time_all_ms(fn, repeat, warmup):
        for _ in range(warmup + repeat):
            fn()
        counts.append(warmup + repeat)
        return list(ms[:repeat]) if repeat > 1 else [ms[-1]]

    import transforms.gpu

    monkeypatch.setattr(pb, "compile_timed", compile_timed)
    monkeypatch.setattr(runtime.cuda_driver, "time_all_ms", time_all_ms)
    monkeypatch.setattr(transforms.gpu, "sequential_launches", lambda decisions: list(sequential))
    return fakes, counts


def test_gpu_and_torch_sides_check_then_time_on_fresh_copies(monkeypatch):
    fakes, counts = _fake_gpu(monkeypatch)
    (row,) = pb.run_all(FAKE_TORCH, [KERNELS["jacobi-2d"]], MINI)  # in place: A and B updated every call
    assert row.gpu.ms == 2.0 and row.gpu.calls == 3 and row.launches == 7 and row.sequential == 0
    assert row.gpu.against == "cpu" and row.gpu.err == 0.0 and row.torch.against == "cpu" and row.torch.err == 0.0
    assert row.torch.ms == 2.0 and counts == [1, 4, 1, 4]  # gpu check, gpu timing, torch check, torch timing
    pristine = [a for a in KERNELS["jacobi-2d"].arguments("MINI") if isinstance(a, np.ndarray)]
    seen = fakes[0].seen
    assert len(seen) == 5 and all(all(np.array_equal(x, p) for x, p in zip(s, pristine)) for s in seen)
    assert not row.gpu.note and row.speedup == row.cpu.ms / 2.0


def test_few_copies_are_reused_and_said_so(monkeypatch):
    fakes, _ = _fake_gpu(monkeypatch)
    k = KERNELS["jacobi-1d"]
    set_bytes = sum(a.nbytes for a in k.arguments("MINI") if isinstance(a, np.ndarray))
    (row,) = pb.run_all(FAKE_TORCH, [k], dataclasses.replace(MINI, gpu_mem_bytes=2 * set_bytes))
    assert row.gpu.note == "2 input copies for 4 calls: re-used, updated in place"
    assert not all(np.array_equal(a, b) for a, b in zip(fakes[0].seen[1], fakes[0].seen[3]))  # copy 0, twice


def test_a_long_gpu_call_is_not_repeated(monkeypatch):
    _, counts = _fake_gpu(monkeypatch, ms=(5000.0,))
    (row,) = pb.run_all(FAKE_TORCH, [KERNELS["jacobi-2d"]], MINI)
    assert row.torch.ms == 5000.0 and row.torch.calls == 1
    assert row.gpu.ms == 5000.0 and row.gpu.calls == 1 and row.launches == 7 and counts == [1, 1]
    assert "5000.000 (1 call)" in pb.table_row(row)


def test_a_1x1x1_kernel_is_skipped_on_its_small_estimate(monkeypatch):
    launch = SimpleNamespace(holds_loop=True)
    _, counts = _fake_gpu(monkeypatch, ms=(40.0,), sequential=[launch, SimpleNamespace(holds_loop=False)])
    k = KERNELS["floyd-warshall"]
    o = dataclasses.replace(MINI, dataset="LARGE", gpu_skip_s=60.0, cpu_repeat=0, no_reference=None)
    monkeypatch.setattr(pb, "run_cpu", lambda *a: (pb.Side(ms=1.0, calls=1), None))  # no LARGE cpu run here
    (row,) = pb.run_all(FAKE_TORCH, [k], o)
    scale = k.flops(k.sizes["LARGE"]) / k.flops(k.sizes["SMALL"])
    assert row.sequential == 1 and row.gpu.status == "skipped" and counts == [2]  # warm-up + the timed SMALL call
    assert row.gpu.note == (f"skipped: a 1x1x1 launch, estimated {40 * scale / 1e3:.0f} s a call "
                            f"(SMALL 40.00 ms x {scale:.0f} flops), over --gpu-skip-s")
    (line,) = [x for x in pb.summary_lines([row]) if x.startswith("- Not faster")]
    assert line.startswith("- Not faster (1): floyd-warshall (gpu skipped: a 1x1x1 launch")


# -- on the GPU ---------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_small_kernels_on_the_gpu():
    torch, why = pb._gpu_torch()
    if torch is None:
        pytest.skip(f"needs an NVIDIA GPU and torch: {why}")
    rows = pb.run_all(torch, [KERNELS[n] for n in ("gemm", "jacobi-2d", "trisolv")], MINI)
    for r in rows:
        assert r.gpu.ms > 0 and r.launches >= 1 and not r.failures, pb.table_row(r)
    assert rows[0].torch.ms > 0 and rows[0].speedup is not None and rows[2].sequential >= 1
