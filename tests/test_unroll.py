"""Tests of transforms/loops/unroll.py (affine-loop-unroll): structure, refusals, MLIR parity, semantics."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.dialects.affine import AffineApplyOp, AffineForOp, AffineLoadOp
from affine_ir.testing import assert_equivalent, programs_with_inputs
from transforms import PassManager, TransformError
from transforms.loops.unroll import unroll_by_factor, unroll_full, unroll_up_to_factor
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged


def _loops(m) -> list[AffineForOp]:
    return [op for op in m.walk() if isinstance(op, AffineForOp)]


def _first_loop(m) -> AffineForOp:
    return _loops(m)[0]


COPY = """
func.func @f(%A: memref<64xf32>, %B: memref<64xf32>, %N: index) {
  affine.for %j = %N to 10 {
    %a = affine.load %A[%j] : memref<64xf32>
    affine.store %a, %B[%j] : memref<64xf32>
  }
  return
}
"""


def test_unroll_by_factor_constant_cleanup():
    m = air.parse(COPY.replace("%N to 10", "0 to 10"))
    res = unroll_by_factor(_first_loop(m), 4)
    assert res.loop.step == 4 and res.loop.upper_bound_map.single_constant() == 8
    assert res.cleanup.lower_bound_map.single_constant() == 8
    assert sum(isinstance(op, AffineLoadOp) for op in res.loop.body.ops) == 4
    assert sum(isinstance(op, AffineApplyOp) for op in res.loop.body.ops) == 3
    air.verify(m)


@pytest.mark.parametrize("factor", [2, 3, 4, 5])
def test_symbolic_trip_count_semantics(factor):
    """``%N to 10`` has a negative trip count for N > 10: the cleanup lower bound keeps max(lb, ...)."""
    m = air.parse(COPY)
    for n in (0, 3, 7, 10, 11, 14):
        a = np.arange(64, dtype=np.float32)
        assert_preserves_semantics(f"affine-loop-unroll{{unroll-factor={factor}}}", m, [a, np.zeros(64, np.float32), n])


def test_iter_args_chain_and_iv_yield():
    m = air.parse("""
func.func @f(%A: memref<64xf32>) -> (f32, index) {
  %cst = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %r:2 = affine.for %k = 0 to 7 iter_args(%acc = %cst, %last = %c0) -> (f32, index) {
    %a = affine.load %A[%k] : memref<64xf32>
    %s = arith.addf %acc, %a : f32
    affine.yield %s, %k : f32, index
  }
  return %r#0, %r#1 : f32, index
}
""")
    a = np.arange(64, dtype=np.float32)
    for f in (2, 3, 4):
        assert_preserves_semantics(f"affine-loop-unroll{{unroll-factor={f}}}", m, [a])


def test_unroll_full_and_up_to():
    m = air.parse(COPY.replace("%N to 10", "0 to 3"))
    res = unroll_full(_first_loop(m))
    assert res.loop is None and not _loops(m)
    assert sum(isinstance(op, AffineLoadOp) for op in m.walk()) == 3
    m = air.parse(COPY.replace("%N to 10", "0 to 3"))
    res = unroll_up_to_factor(_first_loop(m), 8)
    assert res.factor == 3 and not _loops(m)


def test_refusals_leave_ir_unchanged():
    m = air.parse(COPY)
    err = assert_refused_unchanged(lambda: unroll_full(_first_loop(m)), m)
    assert "not constant" in err.reason and "%j" in err.reason
    m = air.parse(COPY.replace("%N to 10", "0 to 3"))
    err = assert_refused_unchanged(lambda: unroll_by_factor(_first_loop(m), 4), m)
    assert "trip count is 3" in err.reason
    m = air.parse(COPY.replace("%N to 10", "max affine_map<()[s0] -> (s0, 2)>()[%N] to 10"))
    err = assert_refused_unchanged(lambda: unroll_by_factor(_first_loop(m), 4), m)
    assert "max of 2 results" in err.reason
    with pytest.raises(TransformError):
        unroll_by_factor(_first_loop(m), 0)


def test_multi_result_bounds_without_cleanup_or_constant():
    """A min bound whose trip counts are all multiples of the factor unrolls without cleanup (MLIR's
    @loop_nest_non_trivial_multiple_upper_bound_alt); all-constant max/min bounds are folded (better)."""
    m = air.parse(COPY.replace("%N to 10", "0 to min affine_map<()[s0] -> (s0 * 4, 16)>()[%N]"))
    res = unroll_by_factor(_first_loop(m), 4)
    assert res.cleanup is None and res.loop.step == 4
    m = air.parse(COPY.replace("%N to 10", "max affine_map<() -> (0, 1)>() to min affine_map<() -> (10, 12)>()"))
    res = unroll_by_factor(_first_loop(m), 4)
    # 1 to 10: main loop 1 to 9 step 4, the one-iteration cleanup is promoted.
    assert res.loop.lower_bound_map.single_constant() == 1 and res.loop.upper_bound_map.single_constant() == 9
    assert res.cleanup is None and len(_loops(m)) == 1


def test_pass_options_and_decisions():
    m = air.parse(COPY.replace("%N to 10", "0 to 10"))
    pm = PassManager.parse("affine-loop-unroll{unroll-factor=3 cleanup-unroll=true}")
    out = pm.run(m)
    assert len(_loops(out)) == 1  # the one-iteration cleanup is promoted (10 = 3 * 3 + 1)
    assert [d.kind for d in pm.trace.decisions] == ["applied"]
    pm = PassManager.parse("affine-loop-unroll{unroll-factor=-1}")
    assert not _loops(pm.run(m))


# -- MLIR parity (iree-opt) ------------------------------------------------------------------------
PARITY_INPUTS = [
    # MLIR unroll.mlir: @unroll_unit_stride_cleanup, @unroll_non_unit_stride_cleanup, @loop_nest_operand3,
    # @loop_nest_symbolic_bound, @loop_nest_symbolic_bound_with_step, @multi_upper_bound, @multi_lower_bound,
    # @loop_nest_non_trivial_multiple_upper_bound_alt (with memory ops in place of "addi32"/"foo").
    ("0 to 10", ""), ("2 to 48 step 5", ""), ("#id(%i) to #p9(%i)", ""), ("0 to %N", ""), ("0 to %N step 3", ""),
    ("0 to min affine_map<()[s0] -> (8 * s0, 12 * s0)>()[%N]", ""),
    ("max affine_map<()[s0] -> (8 * s0, 12 * s0)>()[%N] to 100", ""),
    ("0 to min affine_map<()[s0] -> (4 * s0, 1024)>()[%N]", ""), ("0 to 5", ""), ("%N to 10", ""),
]
PARITY_TEMPLATE = """
func.func @fNAME(%A: memref<128x128xf32>, %N: index) {
  affine.for %i = 0 to 100 step 2 {
    affine.for %j = BOUNDS {
      %a = affine.load %A[%i, %j] : memref<128x128xf32>
      affine.store %a, %A[%j, %i] : memref<128x128xf32>
    }
  }
  return
}
"""
PARITY_MAPS = """
#id = affine_map<(d0) -> (d0)>
#p9 = affine_map<(d0) -> (d0 + 9)>
"""


def _signature(m) -> list[tuple]:
    """Loops (step, sorted bound results) and memory ops, in order: the structure, not the names."""
    out = []
    for op in m.walk():
        if isinstance(op, AffineForOp):
            out.append(("for", op.step, sorted(map(str, op.lower_bound_map.results)),
                        sorted(map(str, op.upper_bound_map.results))))
        elif op.name in ("affine.load", "affine.store"):
            out.append((op.name,))
    return out


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt not available")
@pytest.mark.parametrize("options", ["unroll-factor=4", "unroll-factor=3", "unroll-full=true",
                                     "unroll-full=true unroll-full-threshold=2",
                                     "unroll-factor=6 unroll-up-to-factor=true"])
def test_mlir_parity(options):
    """Same loops (steps, bounds) and the same number of copies as MLIR's affine-loop-unroll. (MLIR of
    LLVM 24 spells ``unroll-full=true`` as ``unroll-factor=-1``; both are accepted here.)"""
    text = PARITY_MAPS + "".join(PARITY_TEMPLATE.replace("BOUNDS", b).replace("NAME", str(k))
                                 for k, (b, _) in enumerate(PARITY_INPUTS))
    ours = PassManager.parse(f"affine-loop-unroll{{{options}}}").run(air.parse(text))
    theirs = options.replace("unroll-full=true", "unroll-factor=-1")
    mlir = subprocess.run(["iree-opt", f"--pass-pipeline=builtin.module(func.func(affine-loop-unroll{{{theirs}}}))"],
                          input=text, capture_output=True, text=True, check=True).stdout
    assert _signature(ours) == _signature(air.parse(mlir))
    assert subprocess.run(["iree-opt"], input=str(ours), capture_output=True, text=True).returncode == 0


# -- properties -------------------------------------------------------------------------------------
def _check_random(case, pipeline: str, stats: dict) -> None:
    module, args = case
    pm = PassManager.parse(pipeline)
    out = pm.run(module)
    text = str(out)
    assert str(air.parse(text)) == text
    assert_equivalent(module, out, args)
    stats["total"] += 1
    stats["applied"] += any(d.kind == "applied" for d in pm.trace.decisions)


_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("options", ["unroll-factor=2", "unroll-factor=3 unroll-num-reps=2",
                                     "unroll-factor=5 cleanup-unroll=true", "unroll-full=true"])
def test_random_programs_preserve_semantics(options):
    """4 x 60 random programs: the output verifies, prints back to itself and computes the same."""
    stats = {"total": 0, "applied": 0}

    @_SETTINGS
    @given(programs_with_inputs(max_nests=2))
    def run(case):
        _check_random(case, f"affine-loop-unroll{{{options}}}", stats)

    run()
    assert stats["total"] >= 50
    assert stats["applied"] >= 0.3 * stats["total"], stats


def _long_loop(trips: int) -> air.ModuleOp:
    return air.parse(f"""func.func @f(%A: memref<{trips}xf32>) {{
      affine.for %i = 0 to {trips} {{
        %x = affine.load %A[%i] : memref<{trips}xf32>
        %y = arith.addf %x, %x : f32
        affine.store %y, %A[%i] : memref<{trips}xf32>
      }}
      return
    }}""")


def test_full_unroll_lists_the_block_a_constant_number_of_times(monkeypatch):
    """Full unrolling inserts each copy in O(1): the number of times a block's op list is rebuilt
    does not grow with the trip count (each insertion once searched the block)."""
    real = air.Block._array
    rebuilds: list[int] = []

    def counting(block):
        rebuilds.append(block._cached is None)
        return real(block)

    monkeypatch.setattr(air.Block, "_array", counting)
    counts = []
    for trips in (50, 2000):
        m = _long_loop(trips)
        rebuilds.clear()
        unroll_full(next(op for op in m.walk() if isinstance(op, AffineForOp)))
        counts.append(sum(rebuilds))
        assert sum(1 for op in m.walk() if isinstance(op, AffineLoadOp)) == trips
    assert counts[0] == counts[1] <= 4, counts


def test_full_unroll_of_ten_thousand_iterations_is_fast():
    """10k iterations (87 s when insertion and use replacement were quadratic) in well under 60 s."""
    import time

    m = _long_loop(10000)
    t0 = time.process_time()
    out = PassManager.parse("affine-loop-unroll{unroll-full}").run(m)
    assert time.process_time() - t0 < 60
    assert sum(1 for op in out.walk() if isinstance(op, AffineLoadOp)) == 10000


# -- constants past 64 bits ------------------------------------------------------------------------
HUGE_STEP = """
#lb = affine_map<()[s0] -> (s0 - 4611686018427387905)>
#ub = affine_map<()[s0] -> (s0 + 9223372036854775804)>
func.func @f(%A: memref<3xi32>, %N: index) {
  affine.for %j = BOUNDS step 4611686018427387904 {
    %v = affine.apply affine_map<(d0) -> (d0 mod 3)>(%j)
    %x = arith.index_cast %v : index to i32
    affine.store %x, %A[%v] : memref<3xi32>
  }
  return
}
"""


@pytest.mark.parametrize("bounds", ["-4611686018427387905 to 9223372036854775804", "#lb()[%N] to #ub()[%N]"])
def test_full_unroll_of_a_huge_step_writes_constants_that_fit(bounds):
    """Three iterations of step 2**62: copy 2's offset 2 * 2**62 passes 64 bits (the IVs fit), so
    its IV is copy 1's plus the step; the output parses back and computes the same."""
    m = air.parse(HUGE_STEP.replace("BOUNDS", bounds))
    out = assert_preserves_semantics("affine-loop-unroll{unroll-full}", m, [np.zeros(3, np.int32), 5])
    assert not _loops(out)
    offsets = [op.map.results[0].constant_term for op in out.walk() if isinstance(op, AffineApplyOp)
               and op.map.results[0].is_pure_linear and op.map.num_dims == 1]
    assert offsets and all(air.affine_expr.fits_index(c) for c in offsets)


def test_unroll_by_factor_refuses_a_step_past_64_bits():
    """step 2**61 x factor 4 = 2**63 cannot be the unrolled loop's step: refused, IR unchanged; the
    pass records the refusal and goes on."""
    text = HUGE_STEP.replace("BOUNDS", "#lb()[%N] to #ub()[%N]").replace("4611686018427387904", "2305843009213693952")
    m = air.parse(text)
    err = assert_refused_unchanged(lambda: unroll_by_factor(_first_loop(m), 4), m)
    assert "%j" in err.reason and "passes 64 bits" in err.reason
    pm = PassManager.parse("affine-loop-unroll")
    out = pm.run(m)
    assert str(air.parse(str(out))) == str(out) == str(m)
    assert [d.kind for d in pm.trace.decisions] == ["refused"]


def test_cleanup_bound_with_a_constant_past_64_bits_is_refused():
    """The cleanup bound of ``2**61 - 6 to 3 * %N + 2**63 - 1 step 3`` by 2 is
    ``(%N floordiv 2) * 6 + 2**63``: refused, IR unchanged."""
    m = air.parse(COPY.replace("%N to 10", "2305843009213693946 to affine_map<()[s0] -> "
                                           "(s0 * 3 + 9223372036854775807)>()[%N] step 3"))
    err = assert_refused_unchanged(lambda: unroll_by_factor(_first_loop(m), 2), m)
    assert "%j" in err.reason and "past 64 bits" in err.reason
