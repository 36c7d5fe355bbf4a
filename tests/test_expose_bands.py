"""``gpu-expose-parallelism`` on parallel imperfect nests (issue 17): PolyBench's gemm, syrk,
syr2k, covariance, correlation, 2mm and 3mm are distributed and their reduction loops sunk
below the parallel ones, so each matmul part is a perfect band ``(i, j)`` around ``k`` (a 2-d
grid for gpu-map, the shape gpu-schedule tiles); nests that would gain no such band are left as
they were; the meaning is kept exactly (the interpreter, the launch emulation in both thread
orders, random programs through GPU_PIPELINE)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
import analysis
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing import assert_equivalent, programs_with_inputs, run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms import PassManager
from transforms.gpu.expose_parallelism import is_contraction_shaped
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import map_to_gpu, run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import polybench  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
EXPOSE = "canonicalize,affine-loop-fusion,affine-privatize{dynamic-shapes=false},gpu-expose-parallelism"


def _nests(m) -> list[AffineForOp]:
    return [op for op in m.functions[0].body.ops if isinstance(op, AffineForOp)]


#: kernel -> how many of its nests become (parallel i, parallel j) around a reduction.
#: (covariance's nest is a 2-d parallel band (i, j) already: left as it is)
MATMUL_PARTS = {"gemm": 1, "syrk": 1, "syr2k": 1, "correlation": 1, "2mm": 2, "3mm": 2}


@pytest.mark.parametrize("name", sorted(MATMUL_PARTS))
def test_the_matmul_parts_become_a_parallel_ij_band_around_k(name):
    k = polybench.KERNELS[name]
    m = k.module()
    assert sum(is_contraction_shaped(x) for x in _nests(run_pipeline("canonicalize,affine-loop-fusion", m))) \
        < MATMUL_PARTS[name]
    pm = PassManager.parse(EXPOSE)
    out = pm.run(m)
    shaped = [x for x in _nests(out) if is_contraction_shaped(x)]
    assert len(shaped) == MATMUL_PARTS[name], out
    for nest in shaped:
        i, j, kk = analysis.perfect_band(nest)[:3]
        assert analysis.is_parallel(i) and analysis.is_parallel(j) and not analysis.is_parallel(kk)
    assert any(d.pass_name == "gpu-expose-parallelism" and d.kind == "applied" and "distributed" in d.message
               for d in pm.trace.decisions)
    args = k.arguments("MINI", exact=True)
    assert_equivalent(m, out, args)


def test_gemm_through_the_gpu_pipeline_keeps_its_meaning_in_both_thread_orders():
    # (the scaling and the contraction are two launches; gpu-schedule does not tile the
    # contraction yet: its sizes are symbols, it tiles constant sizes only)
    k = polybench.KERNELS["gemm"]
    m = k.module()
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    assert str(out).count("gpu.launch") == 2
    assert any(d.pass_name == "gpu-expose-parallelism" and d.kind == "applied" for d in decisions)
    args = k.arguments("MINI", exact=True)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args, "gemm")


def test_a_parallel_nest_whose_parts_gain_no_band_stays_as_it_was():
    # row i: a sum over j into s[i], then a scaled copy; distributing gives (i, j) bands with
    # nothing carried inside (no reduction below a 2-d parallel band): kept fused.
    m = air.parse("""
func.func @f(%A: memref<8x4xf32>, %B: memref<8x4xf32>, %s: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<8x4xf32>
      %t = affine.load %s[%i] : memref<8xf32>
      %u = arith.addf %t, %a : f32
      affine.store %u, %s[%i] : memref<8xf32>
    }
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<8x4xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %B[%i, %j] : memref<8x4xf32>
    }
  }
  return
}""")
    out = run_pipeline("gpu-expose-parallelism", m)
    assert str(out) == str(m)


def test_random_programs_keep_their_meaning_through_the_gpu_pipeline():
    stats: Counter = Counter()

    @settings(max_examples=60, **FAST)
    @given(programs_with_inputs(max_nests=2))
    def check(case):
        module, args = case
        pm = PassManager.parse("gpu-expose-parallelism")
        out = pm.run(module)
        assert_equivalent(module, out, args)
        stats["distributed"] += any("2-d parallel band" in d.message for d in pm.trace.decisions)
        gpu, _ = map_to_gpu(module, GPU_PIPELINE)
        assert_same_bits_in_both_thread_orders(run(module, args), gpu, args, "random")
        stats["programs"] += 1

    check()
    assert stats["programs"] == 60, stats
