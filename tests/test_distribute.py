"""Loop distribution (``affine-loop-distribute``) and ``gpu-expose-parallelism``: groups follow the
dependence cycles and SSA uses, every split keeps the program's meaning (written cases and random
programs), and column reductions (atax, bicg) get a parallel outermost loop."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
import analysis
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing import assert_equivalent, programs_with_inputs
from affine_ir.testing.strategies import inputs_from_bytes
from transforms import PassManager
from transforms.loops.distribute import distribution_groups
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import polybench  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _args(m, seed=0):
    return inputs_from_bytes(m, bytes([seed, 3, 5, 7] + [seed] * 60))


def _nests(m):
    return [op for op in m.functions[0].body.ops if isinstance(op, AffineForOp)]


def test_atax_splits_into_a_row_loop_and_a_column_loop_that_interchange_makes_parallel():
    m = polybench.KERNELS["atax"].module()
    out = assert_preserves_semantics("gpu-expose-parallelism", m, polybench.KERNELS["atax"].arguments("MINI", True))
    nests = _nests(out)
    assert len(nests) == 4 and all(analysis.is_parallel(n) for n in nests), out
    assert nests[-1].induction_var.name_hint == "j"  # the y += A^T tmp nest runs j outermost
    assert not any(analysis.is_parallel(n) for n in _nests(m)[1:])


def test_bicg_splits_its_inner_loop_by_the_two_sums():
    k = polybench.KERNELS["bicg"]
    out = assert_preserves_semantics("gpu-expose-parallelism", k.module(), k.arguments("MINI", True))
    assert len(_nests(out)) == 4 and all(analysis.is_parallel(n) for n in _nests(out)), out


CYCLE = """func.func @f(%A: memref<10xf32>, %B: memref<10xf32>) {
  affine.for %i = 1 to 10 {
    %a = affine.load %B[%i - 1] : memref<10xf32>
    affine.store %a, %A[%i] : memref<10xf32>
    %b = affine.load %A[%i - 1] : memref<10xf32>
    affine.store %b, %B[%i] : memref<10xf32>
  }
  return
}"""


def test_a_dependence_cycle_stays_in_one_loop():
    m = air.parse(CYCLE)
    assert distribution_groups(_nests(m)[0]) == [[0, 1, 2, 3]]
    assert str(run_pipeline("affine-loop-distribute", m)) == str(m)


def test_backward_dependences_order_the_loops_and_values_used_later_stay_together():
    text = """func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>) {
  affine.for %i = 1 to 10 {
    %a = affine.load %A[%i - 1] : memref<10xf32>
    affine.store %a, %B[%i] : memref<10xf32>
    %c = affine.load %C[%i] : memref<10xf32>
    %s = arith.addf %c, %c : f32
    affine.store %s, %A[%i] : memref<10xf32>
  }
  return
}"""
    m = air.parse(text)
    # A[i] is stored by the later statements and read one iteration later by the first: the
    # store of A must run (for every i) before the load of A[i - 1]: its group comes first.
    assert distribution_groups(_nests(m)[0]) == [[2, 3, 4], [0, 1]]
    out = assert_preserves_semantics("affine-loop-distribute", m, _args(m))
    assert len(_nests(out)) == 2


def test_iter_args_and_unknown_effects_are_refused_unchanged():
    m = air.parse("""func.func @f(%A: memref<10xf32>) -> f32 {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 10 iter_args(%acc = %z) -> (f32) {
    %a = affine.load %A[%i] : memref<10xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s : f32
  }
  return %r : f32
}""")
    from transforms.loops.distribute import distribute_loop

    e = assert_refused_unchanged(lambda: distribute_loop(_nests(m)[0]), m)
    assert "iter_args" in e.reason


def test_random_programs_keep_their_meaning():
    stats: Counter = Counter()

    @settings(max_examples=200, **FAST)
    @given(programs_with_inputs())
    def check(case):
        module, args = case
        for pipeline in ("affine-loop-distribute", "gpu-expose-parallelism"):
            pm = PassManager.parse(pipeline)
            out = pm.run(module)
            assert_equivalent(module, out, args)
            stats[pipeline] += any(d.kind == "applied" for d in pm.trace.decisions)
        stats["programs"] += 1

    check()
    assert stats["programs"] == 200
    assert stats["affine-loop-distribute"] >= 20 and stats["gpu-expose-parallelism"] >= 5, stats
