"""Loops kept on the host by ``gpu-map`` (a loop of launches): chosen for an outer loop carrying a
dependence around parallel nests, printed as a host loop whose IV the kernels take as a
parameter, run on the interpreter's launch emulation exactly as the original in both thread
orders; the IV is a dim in host maps (MLIR's symbol rules)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import affine_ir as air
import codegen.cuda as cc
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.testing import run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms.gpu.gpu_map import check_host_function
from transforms.gpu.sequential_launch import sequential_launches
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import map_to_gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import polybench  # noqa: E402

TRIANGLE = """func.func @f(%n: index, %A: memref<?x?xf32>) {
  affine.for %k = 1 to %n {
    affine.for %i = %k to %n {
      %a = affine.load %A[%k - 1, %i] : memref<?x?xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %A[%k, %i] : memref<?x?xf32>
    }
  }
  return
}"""


def _host_loops(m):
    return [op for op in m.functions[0].body.ops if isinstance(op, AffineForOp)]


def test_a_triangular_sweep_becomes_a_host_loop_of_launches():
    m = air.parse(TRIANGLE)
    out, decisions = map_to_gpu(m, "gpu-map")
    (loop,) = _host_loops(out)
    launches = [op for op in loop.body.ops if isinstance(op, LaunchOp)]
    assert len(launches) == 1
    assert any("kept %k on the host, a loop of launches (%k is not parallel: RAW %A" in d.message for d in decisions)
    assert not sequential_launches(decisions)
    # the grid uses %k as a dim on the host; inside the launch %k is a valid symbol
    text = str(out)
    assert "affine.apply #map(%k)[%n]" in text and "[%k]" in text
    for n in (1, 2, 7, 300):
        args = [n, np.arange(n * n, dtype=np.float32).reshape(n, n) % 7]
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, f"n={n}")


def test_the_cuda_printer_takes_the_host_iv_as_a_kernel_parameter():
    out, _ = map_to_gpu(air.parse(TRIANGLE), "gpu-map")
    program = cc.emit(out)
    (spec,) = program.kernels
    assert [p.name for p in spec.params if p.kind == "scalar"] == ["n", "k"]
    assert cc.host_role(_host_loops(out)[0]) is cc.HostRole.LOOP
    assert list(cc.host_loop_range(_host_loops(out)[0], {out.functions[0].args[0]: 5})) == [1, 2, 3, 4]


@pytest.mark.parametrize("name", ["jacobi-1d", "jacobi-2d", "heat-3d", "fdtd-2d", "adi"])
def test_time_stepped_stencils_launch_their_sweeps_in_a_host_loop(name):
    k = polybench.KERNELS[name]
    out, decisions = map_to_gpu(k.module(), GPU_PIPELINE)
    assert not [s for s in sequential_launches(decisions) if s.holds_loop], name
    (loop,) = [x for x in _host_loops(out) if x.induction_var.name_hint == "t"]
    assert all(isinstance(x, (LaunchOp, AffineForOp)) or x.name in ("affine.apply", "affine.max", "affine.min",
                                                                       "affine.yield") for x in loop.body.ops)
    check_host_function(out.functions[0])
    cc.emit(out)  # prints: every kernel's parameters are host values


def test_a_loop_holding_a_launch_and_device_work_is_no_host_loop():
    text = """func.func @f(%A: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 1.0 : f32
  affine.for %i = 0 to 4 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      gpu.terminator
    }
    affine.store %cst, %A[%i] : memref<4xf32>
  }
  return
}"""
    m = air.parse(text)
    assert cc.host_role(_host_loops(m)[0]) is None
    with pytest.raises(cc.EmitError, match="'affine.store' at the top level of a host function is not mapped"):
        cc.emit(m)


@pytest.mark.gpu
def test_a_host_loop_runs_on_the_gpu():
    import runtime

    if not runtime.gpu_available():
        pytest.skip("needs an NVIDIA GPU")
    m = air.parse(TRIANGLE)
    exe = runtime.compile(m, target="cuda", pipeline="gpu-map")
    for n in (1, 5, 300):
        a = (np.arange(n * n, dtype=np.float32).reshape(n, n) % 7)
        want = run(m, [n, a])[0]
        got = a.copy()
        exe(n, got)
        assert np.array_equal(got, want)
        with exe.bind(n, a.copy()) as call:  # the recorded launches of every host iteration
            assert len(call.launches) == max(0, n - 1)


def test_a_max_lower_bound_in_a_host_loop_gives_a_grid_without_the_max_as_an_operand():
    """The grid of a loop from max(%k, 2) is a min over the bound pairs: an affine.max result in a
    host loop's body is neither a valid dim nor a valid symbol of another affine op there."""
    text = TRIANGLE.replace("affine.for %i = %k to %n", "affine.for %i = max affine_map<(d0) -> (d0, 2)>(%k) to %n")
    m = air.parse(text)
    out, _ = map_to_gpu(m, "gpu-map")
    for n in (1, 3, 9):
        args = [n, np.arange(n * n, dtype=np.float32).reshape(n, n) % 5]
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, f"n={n}")
