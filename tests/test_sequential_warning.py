"""No silent sequential GPU kernels: gpu-map records why a loop nest gets a 1x1x1 launch
(:class:`transforms.gpu.SequentialLaunch`), ``runtime.compile(target="cuda")`` warns with it
and ``affine-run`` prints it (NVRTC compiles without a GPU)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import affine_ir as air
import runtime
from transforms import PassManager
from transforms.gpu import SequentialLaunch, sequential_launches

CARRIED = """\
func.func @carried(%A: memref<10xf32>) {
  affine.for %i = 1 to 10 {
    %a = affine.load %A[%i - 1] : memref<10xf32>
    affine.store %a, %A[%i] : memref<10xf32>
  }
  return
}
"""

PARALLEL = """\
func.func @copy(%A: memref<10xf32>, %B: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %B[%i] : memref<10xf32>
  }
  return
}
"""

STATEMENTS = """\
func.func @poke(%A: memref<10xf32>) {
  %c = arith.constant 1.0 : f32
  affine.store %c, %A[3] : memref<10xf32>
  return
}
"""


def _compile_catching(text: str, name: str) -> list[warnings.WarningMessage]:
    module = air.parse(text, name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime.compile(module, target="cuda", arch="sm_90")
    return [w for w in caught if issubclass(w.category, runtime.SequentialLaunchWarning)]


def test_gpu_map_records_the_dependence_that_forces_a_1x1x1_launch():
    pm = PassManager.parse("gpu-map")
    pm.run(air.parse(CARRIED, "carried.mlir"))
    (launch,) = sequential_launches(pm.trace.decisions)
    assert isinstance(launch, SequentialLaunch) and launch.function == "carried" and launch.holds_loop
    assert str(launch.location) == "carried.mlir:2:3"
    dep = launch.dependence
    assert dep.kind == "RAW" and dep.memref.name_hint == "A"
    assert dep.ivs[dep.carried_depth - 1].name_hint == "i"
    note = next(d for d in pm.trace.decisions if d.detail is launch)
    assert note.kind == "note" and note.message == f"1x1x1 launch running it sequentially: {launch.reason}"
    assert launch.reason.startswith("no parallel loop to map (%i is not parallel: RAW %A: ")


def test_a_mapped_nest_has_no_record():
    pm = PassManager.parse("gpu-map")
    pm.run(air.parse(PARALLEL, "copy.mlir"))
    assert sequential_launches(pm.trace.decisions) == []
    assert all(d.detail is None for d in pm.trace.decisions)


def test_compile_warns_naming_the_function_the_nest_and_the_dependence():
    (w,) = _compile_catching(CARRIED, "carried.mlir")
    text = str(w.message)
    assert text.startswith("@carried: the loop nest at carried.mlir:2:3 runs on one GPU thread (a 1x1x1 launch): ")
    assert "%i is not parallel: RAW %A: " in text and "carried by %i" in text
    assert w.message.launch.dependence.kind == "RAW"
    assert Path(w.filename).resolve() == Path(__file__).resolve()  # attributed to the caller, not the runtime


def test_compile_of_a_parallel_nest_does_not_warn():
    assert _compile_catching(PARALLEL, "copy.mlir") == []


def test_statements_without_a_loop_are_recorded_but_not_warned_about():
    pm = PassManager.parse("gpu-map")
    pm.run(air.parse(STATEMENTS, "poke.mlir"))
    (launch,) = sequential_launches(pm.trace.decisions)
    assert not launch.holds_loop and launch.dependence is None
    assert _compile_catching(STATEMENTS, "poke.mlir") == []


def test_affine_run_prints_the_warning_with_the_nest_location(tmp_path):
    f = tmp_path / "carried.mlir"
    f.write_text(CARRIED)
    r = subprocess.run([sys.executable, "-m", "runtime.run_cli", str(f), "--target", "cuda"], capture_output=True,
                       text=True, cwd=Path(__file__).parent.parent)
    lines = [line for line in r.stderr.splitlines() if ": warning: " in line]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"{f}:2:3: warning: @carried: the loop nest runs on one GPU thread (a 1x1x1 launch)")
    assert "RAW %A" in lines[0] and "carried by %i" in lines[0]
    g = tmp_path / "copy.mlir"
    g.write_text(PARALLEL)
    r = subprocess.run([sys.executable, "-m", "runtime.run_cli", str(g), "--target", "cuda"], capture_output=True,
                       text=True, cwd=Path(__file__).parent.parent)
    assert "warning" not in r.stderr, r.stderr
