"""``affine-parallelize`` (``transforms.loops.parallelize``): parallel loops become ``affine.parallel``,
reductions with ``parallel-reductions``, decisions with their reasons, random programs."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp, AffineParallelOp
from affine_ir.testing import programs_with_inputs, run
from transforms.loop_utils import all_loops, loop_name
from transforms.loops.parallelize import AffineParallelize, check_parallel, parallelize_loop
from transforms.pass_manager import PassManager
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, run_pipeline

MATMUL = """
func.func @matmul(%A: memref<4x6xf32>, %B: memref<6x5xf32>, %C: memref<4x5xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      affine.for %k = 0 to 6 {
        %a = affine.load %A[%i, %k] : memref<4x6xf32>
        %b = affine.load %B[%k, %j] : memref<6x5xf32>
        %c = affine.load %C[%i, %j] : memref<4x5xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<4x5xf32>
      }
    }
  }
  return
}
"""

REDUCE = """
func.func @rowsum(%A: memref<6x7xi32>, %out: memref<6xi32>, %init: i32) {
  affine.for %i = 0 to 6 {
    %r = affine.for %j = 0 to 7 iter_args(%acc = %init) -> (i32) {
      %a = affine.load %A[%i, %j] : memref<6x7xi32>
      %b = affine.load %A[%i, 6 - %j] : memref<6x7xi32>
      %s = arith.addi %acc, %a : i32
      %t = arith.addi %s, %b : i32
      affine.yield %t : i32
    }
    affine.store %r, %out[%i] : memref<6xi32>
  }
  return
}
"""

# One combining op per iteration: the only reductions MLIR's matchReduction recognizes (ours
# also takes chains of one op kind, as REDUCE's ``(acc + a) + b``, which MLIR leaves sequential).
REDUCE1 = REDUCE.replace("      %t = arith.addi %s, %b : i32\n", "").replace("affine.yield %t", "affine.yield %s")

MAX_REDUCE = REDUCE.replace("arith.addi", "arith.maxsi").replace("@rowsum", "@rowmax")

PREFIX_SUM = """
func.func @prefix(%A: memref<10xf32>) {
  affine.for %i = 1 to 10 {
    %a = affine.load %A[%i - 1] : memref<10xf32>
    %b = affine.load %A[%i] : memref<10xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%i] : memref<10xf32>
  }
  return
}
"""


def args_for(module, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.functions[0].args:
        t = a.type
        if isinstance(t, air.types.MemRefType):
            dtype = np.float32 if str(t.element_type) == "f32" else np.int32
            out.append(rng.integers(-4, 5, size=tuple(t.shape)).astype(dtype))
        else:
            out.append(int(rng.integers(0, 5)))
    return out


def kinds(module) -> list[str]:
    return ["P" if isinstance(op, AffineParallelOp) else "F" for op in module.walk()
            if isinstance(op, (AffineForOp, AffineParallelOp))]


def test_matmul_outer_loops_become_parallel():
    m = air.parse(MATMUL)
    pm = PassManager.parse("affine-parallelize")
    out = pm.run(m)
    assert kinds(out) == ["P", "P", "F"]
    decisions = [(d.kind, d.message) for d in pm.trace.decisions]
    assert decisions[0] == ("applied", "parallelized (%i): no dependence is carried")
    assert decisions[1] == ("applied", "parallelized (%j): no dependence is carried")
    assert decisions[2][0] == "refused"
    assert decisions[2][1] == ("cannot parallelize (%k): WAR %C: S2 (affine.load at <string>:8:9) -> "
                               "S3 (affine.store at <string>:11:9) carried by %k (also loop-independent), "
                               "distance ([0, 5])")
    par = next(op for op in out.walk() if isinstance(op, AffineParallelOp))
    assert par.location == m.functions[0].body.ops[0].location
    assert [iv.name_hint for iv in par.ivs] == ["i"]
    assert_preserves_semantics("affine-parallelize", m, args_for(m))


def test_max_nested():
    m = air.parse(MATMUL)
    pm = PassManager.parse("affine-parallelize{max-nested=1}")
    out = pm.run(m)
    assert kinds(out) == ["P", "F", "F"]
    notes = [d.message for d in pm.trace.decisions if d.kind == "note"]
    assert notes == ["(%j) is parallel (no dependence is carried) but not converted: already 1 nested "
                     "affine.parallel (max-nested=1)"]
    assert str(AffineParallelize(max_nested=1)) == "affine-parallelize{max-nested=1}"
    assert str(AffineParallelize()) == "affine-parallelize"


def test_parallelize_loop_refuses_with_the_dependence():
    m = air.parse(PREFIX_SUM)
    loop = m.functions[0].body.ops[0]
    err = assert_refused_unchanged(lambda: parallelize_loop(loop), m)
    assert err.reason == ("cannot parallelize (%i): RAW %A: S2 (affine.store at <string>:7:5) -> "
                          "S0 (affine.load at <string>:4:5) carried by %i, distance (1)")
    assert err.dependence is not None and err.dependence.kind == "RAW"
    assert err.loops == (loop,)


def test_iter_args_reductions():
    m = air.parse(REDUCE)
    out = assert_preserves_semantics("affine-parallelize", m, args_for(m))
    assert kinds(out) == ["P", "F"]
    out = assert_preserves_semantics("affine-parallelize{parallel-reductions=true}", m, args_for(m))
    assert kinds(out) == ["P", "P"]
    text = str(out)
    # MLIR's form: the body yields its contribution, the init is combined after the loop.
    assert 'affine.parallel (%j) = (0) to (7) reduce ("addi") -> (i32) {' in text
    assert "%t = arith.addi %a, %b : i32" in text      # the chain without the accumulator
    assert "affine.yield %t : i32" in text
    assert "%r = arith.addi %init, %0 : i32" in text
    for seed in range(3):
        assert_preserves_semantics("affine-parallelize{parallel-reductions=true}", m, args_for(m, seed))


def test_integer_max_reduction_takes_mlir_spelling():
    """``arith.maxsi`` chains become ``reduce ("maxs")`` (MLIR's AtomicRMWKind spelling, which
    iree-opt accepts), and the result is the same."""
    m = air.parse(MAX_REDUCE)
    out = assert_preserves_semantics("affine-parallelize{parallel-reductions=true}", m, args_for(m, 0))
    assert 'reduce ("maxs") -> (i32)' in str(out)
    if shutil.which("iree-opt"):
        res = subprocess.run(["iree-opt"], input=str(out), capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    inner = list(all_loops(m.functions[0]))[1]
    err = assert_refused_unchanged(lambda: parallelize_loop(inner), m)
    assert err.reason == "cannot parallelize (%j): iter_arg %acc carries a value across iterations"


def test_memory_reductions_are_not_parallelized():
    m = air.parse(MATMUL)
    k = list(all_loops(m.functions[0]))[2]
    err = assert_refused_unchanged(lambda: parallelize_loop(k, allow_reductions=True), m)
    assert err.reason.startswith("cannot parallelize (%k): the memory reduction (addf) of %C would race: ")
    assert err.dependence is not None and loop_name(err.dependence.carrying_loop) == "%k"
    out = run_pipeline("affine-parallelize{parallel-reductions=true}", m)
    assert kinds(out) == ["P", "P", "F"]


def test_check_parallel_changes_nothing():
    m = air.parse(MATMUL)
    before = str(m)
    decision = check_parallel(next(iter(all_loops(m.functions[0]))))
    assert decision.parallel and str(m) == before


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (MLIR) is not installed")
def test_mlir_accepts_the_output_and_agrees():
    """iree-opt (upstream MLIR) parses our output, and its own -affine-parallelize gives the same structure."""
    for src, pipeline, flag in [(MATMUL, "affine-parallelize", "--affine-parallelize"),
                                (REDUCE1, "affine-parallelize{parallel-reductions=true}",
                                 "--affine-parallelize=parallel-reductions=true")]:
        m = air.parse(src)
        out = run_pipeline(pipeline, m)
        r = subprocess.run(["iree-opt", "--verify-each", "-"], input=str(out), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        r = subprocess.run(["iree-opt", flag, "-"], input=src, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        theirs = [("P" if "affine.parallel" in line else "F") for line in r.stdout.splitlines()
                  if "affine.parallel" in line or "affine.for" in line]
        assert theirs == kinds(out)


# -- random programs ----------------------------------------------------------------------------------
def _property(pipeline: str, stats: Counter, **knobs) -> None:
    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(programs_with_inputs(**knobs))
    def check(case):
        module, args = case
        pm = PassManager.parse(pipeline)
        out = pm.run(module)
        air.verify(out)
        text = str(out)
        assert str(air.parse(text)) == text
        for a, b in zip(run(module, args), run(out, args)):
            np.testing.assert_array_equal(a, b)
        n_loops = sum(1 for _ in all_loops(module))
        decided = [d for d in pm.trace.decisions if d.kind in ("applied", "refused")]
        assert len(decided) + sum(d.kind == "note" for d in pm.trace.decisions) == n_loops
        stats["programs"] += 1
        stats["loops"] += n_loops
        stats["applied"] += sum(d.kind == "applied" for d in decided)
        stats["reductions"] += text.count("reduce (")

    check()


def test_random_programs_parallelize():
    stats = Counter()
    _property("affine-parallelize", stats, max_depth=3, max_nests=3)
    assert stats["programs"] >= 100
    assert stats["applied"] >= 0.25 * stats["loops"], stats


def test_random_programs_parallelize_reductions():
    stats = Counter()
    _property("affine-parallelize{parallel-reductions=true max-nested=2}", stats, max_depth=4, max_nests=2,
              element_types=("i32",))
    assert stats["programs"] >= 100
    assert stats["applied"] >= 0.2 * stats["loops"], stats
    assert stats["reductions"] >= 3, stats
