"""affine-loop-normalize: unit tests, MLIR parity (iree-opt, optional) and properties on random programs."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp, AffineParallelOp
from affine_ir.testing import programs_with_inputs
from transforms import PassManager
from transforms.loops.normalize import LoopNormalize, is_normalized, normalize_loop, promote_if_single_iteration
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, run_pipeline

IREE = shutil.which("iree-opt")


def loops(m):
    return [op for op in m.walk() if isinstance(op, (AffineForOp, AffineParallelOp))]


def first_loop(m):
    return loops(m)[0]


# ----- affine.for ---------------------------------------------------------------------------------
def test_steps_and_lower_bounds_are_normalized_and_composed_into_affine_users():
    m = air.parse("""
func.func @f(%A: memref<40xf32>, %N: index) {
  affine.for %i = 2 to %N step 3 {
    %v = affine.load %A[%i + 1] : memref<40xf32>
    %w = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
    affine.store %v, %A[%w floordiv 2] : memref<40xf32>
  }
  return
}""")
    loop = first_loop(m)
    assert normalize_loop(loop) is True
    air.verify(m)
    text = str(m)
    assert "affine.for %i = 0 to #map()[%N] {" in text
    assert "affine_map<()[s0] -> ((s0 - 2) ceildiv 3)>" in text
    assert "affine.load %A[%i * 3 + 3]" in text
    assert "affine_map<(d0) -> (d0 * 6 + 4)>" in text        # the apply composed: (3i + 2) * 2
    assert "_orig" not in text                                # every user was affine: no extra apply
    assert is_normalized(loop)
    assert normalize_loop(loop) is False                      # already normalized


def test_non_affine_users_read_one_apply_and_iter_args_stay():
    m = air.parse("""
func.func @f(%A: memref<100xindex>) -> index {
  %c0 = arith.constant 0 : index
  %r = affine.for %i = 3 to 64 step 4 iter_args(%a = %c0) -> index {
    affine.store %i, %A[%i + 1] : memref<100xindex>
    %c = arith.index_cast %i : index to i32
    affine.yield %i : index
  }
  return %r : index
}""")
    normalize_loop(first_loop(m))
    air.verify(m)
    text = str(m)
    assert text.count("affine.apply") == 1
    assert "%i_orig = affine.apply #map(%i)" in text
    assert "affine.store %i_orig, %A[%i * 4 + 4]" in text     # value through the apply, subscript composed
    assert "arith.index_cast %i_orig" in text and "affine.yield %i_orig" in text
    assert "affine.for %i = 0 to 16 iter_args(%a = %c0) -> (index)" in text


def test_users_in_nested_bounds_ifs_and_parallel_ops_are_rewritten():
    m = air.parse("""
func.func @f(%B: memref<40x40xf32>, %N: index) {
  affine.for %i = 1 to 9 step 2 {
    affine.if affine_set<(d0)[s0] : (d0 - s0 >= 0)>(%i)[%N] {
      affine.for %j = %i to affine_map<(d0) -> (d0 + 3)>(%i) {
        %v = affine.load %B[%i, %j] : memref<40x40xf32>
        affine.store %v, %B[%j, %i] : memref<40x40xf32>
      }
    }
    affine.parallel (%p) = (%i) to (%i + 4) {
      %v = affine.load %B[%p, 0] : memref<40x40xf32>
      affine.store %v, %B[0, %p] : memref<40x40xf32>
    }
  }
  return
}""")
    outer = first_loop(m)
    normalize_loop(outer)
    air.verify(m)
    text = str(m)
    assert "affine_set<(d0)[s0] : (d0 * 2 - s0 + 1 >= 0)>" in text
    assert "affine.for %j = #map(%i) to #map1(%i)" in text    # inner bounds now over the new %i
    assert "affine.parallel (%p) = (%i * 2 + 1) to (%i * 2 + 5)" in text


def test_multi_result_upper_bound_gives_one_bound_per_result():
    m = air.parse("""
func.func @f(%arg1: index) {
  affine.for %i1 = 2 to min affine_map<(d0)[] -> (d0, 512)>(%arg1) {
  }
  return
}""")
    normalize_loop(first_loop(m))
    # As MLIR: the operand %arg1, a valid symbol, becomes a symbol of the new bound map.
    assert "affine.for %i1 = 0 to min #map()[%arg1]" in str(m)
    assert "affine_map<()[s0] -> (s0 - 2, 510)>" in str(m)


def test_max_lower_bound_at_top_level_is_computed_once_by_affine_max():
    m = air.parse("""
func.func @f(%A: memref<100xf32>, %N: index) {
  affine.for %i = max affine_map<()[s0] -> (2, s0)>()[%N] to 64 step 3 {
    %v = affine.load %A[%i] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  return
}""")
    assert normalize_loop(first_loop(m))
    air.verify(m)
    text = str(m)
    assert "%i_lb = affine.max" in text
    assert "affine.for %i = 0 to #map1()[%i_lb]" in text
    assert "affine.load %A[%i * 3 + symbol(%i_lb)]" in text


def test_max_lower_bound_over_an_outer_iv_is_refused_unchanged():
    m = air.parse("""
func.func @f(%A: memref<100xf32>, %N: index) {
  affine.for %j = 0 to 4 {
    affine.for %i = max affine_map<(d0)[s0] -> (d0, s0)>(%j)[%N] to 30 step 2 {
      %v = affine.load %A[%i + %j] : memref<100xf32>
      affine.store %v, %A[%i] : memref<100xf32>
    }
  }
  return
}""")
    inner = loops(m)[1]
    err = assert_refused_unchanged(lambda: normalize_loop(inner), m)
    assert err.pass_name == "affine-loop-normalize"
    assert "%i" in err.reason and "max of 2 expressions over %j" in err.reason
    assert err.location == inner.location
    # The pass records the refusal and goes on.
    pm = PassManager([LoopNormalize()])
    out = pm.run(m)
    assert [d.kind for d in pm.trace[0].decisions] == ["refused"]
    assert "max affine_map" not in str(m) and "max #map" in str(out)


def test_zero_trip_loop_stays_empty():
    m = air.parse("""
func.func @f(%A: memref<100xf32>) {
  affine.for %k = 5 to 3 step 2 {
    %v = affine.load %A[%k] : memref<100xf32>
    affine.store %v, %A[%k] : memref<100xf32>
  }
  return
}""")
    normalize_loop(first_loop(m))
    assert "affine.for %k = 0 to -1" in str(m)                # MLIR prints the same bound


# ----- affine.parallel -------------------------------------------------------------------------------
def test_parallel_is_normalized_per_dimension():
    m = air.parse("""
func.func @f(%A: memref<100xf32>, %N: index) {
  affine.parallel (%i, %j, %k) = (2, max(0, %N - 4), 0) to (min(60, %N + 20), 5, 8) step (3, 1, 2) {
    %v = affine.load %A[%i + %j + %k] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  return
}""")
    op = first_loop(m)
    assert normalize_loop(op)
    air.verify(m)
    # %i and %k are normalized; %j keeps its max lower bound (MLIR would leave the whole op alone).
    assert "affine.parallel (%i, %j, %k) = (0, max(0, %N - 4), 0) to (min(20, %N ceildiv 3 + 6), 5, 4) {" in str(m)
    assert "affine.load %A[%k * 2 + %i * 3 + %j + 2]" in str(m)
    assert not is_normalized(op)


def test_parallel_with_only_max_lower_bounds_is_refused():
    m = air.parse("""
func.func @f(%A: memref<100xf32>, %N: index) {
  affine.parallel (%i) = (max(2, %N)) to (60) step (3) {
    %v = affine.load %A[%i] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  return
}""")
    err = assert_refused_unchanged(lambda: normalize_loop(first_loop(m)), m)
    assert "%i" in err.reason


# ----- promote-single-iter ------------------------------------------------------------------------------
def test_promote_single_iteration_with_iter_args():
    m = air.parse("""
func.func @f(%A: memref<100xf32>, %N: index) -> f32 {
  %c = arith.constant 0.0 : f32
  %r = affine.for %i = %N to affine_map<()[s0] -> (s0 + 1)>()[%N] iter_args(%a = %c) -> f32 {
    %v = affine.load %A[%i] : memref<100xf32>
    %s = arith.addf %a, %v : f32
    affine.yield %s : f32
  }
  return %r : f32
}""")
    assert promote_if_single_iteration(first_loop(m))
    air.verify(m)
    text = str(m)
    assert "affine.for" not in text
    assert "%s = arith.addf %c, %v : f32" in text and "return %s : f32" in text


def test_promote_leaves_other_loops():
    m = air.parse("""
func.func @f(%A: memref<100xf32>, %N: index) {
  affine.for %i = 0 to 2 {
  }
  affine.for %i = 0 to %N {
  }
  return
}""")
    assert not any(promote_if_single_iteration(x) for x in loops(m))


def test_promote_option_default_is_false_as_in_mlir_opt():
    (opt,) = LoopNormalize.options()
    assert (opt.name, opt.default) == ("promote-single-iter", False)
    m = air.parse("func.func @f(%A: memref<1xf32>) {\n affine.for %i = 0 to 1 {\n"
                  " %v = affine.load %A[%i] : memref<1xf32>\n affine.store %v, %A[%i] : memref<1xf32>\n }\n return\n}")
    assert "affine.for" in str(run_pipeline("affine-loop-normalize", m))
    assert "affine.for" not in str(run_pipeline("affine-loop-normalize{promote-single-iter=true}", m))


# ----- MLIR parity (optional: needs iree-opt) ----------------------------------------------------------------
#: The inputs of mlir/test/Dialect/Affine/affine-loop-normalize.mlir.
MLIR_CASES = """
func.func @normalize_parallel() {
  %cst = arith.constant 1.0 : f32
  %0 = memref.alloc() : memref<2x4xf32>
  affine.parallel (%i, %j) = (0, 1) to (10, 5) step (3, 2) {
    affine.parallel (%k) = (%i) to (%j) {
      affine.store %cst, %0[%i, %k] : memref<2x4xf32>
    }
  }
  return
}
// -----
func.func @relative_bounds(%arg: index) {
  affine.for %i = affine_map<(d0) -> (d0)>(%arg) to affine_map<(d0) -> (d0 + 4)>(%arg) {
  }
  return
}
// -----
func.func @single_iteration_loop(%in: memref<1xf32>, %out: memref<1xf32>) {
  affine.for %i = 0 to 1 {
    %1 = affine.load %in[%i] : memref<1xf32>
    affine.store %1, %out[%i] : memref<1xf32>
  }
  return
}
// -----
func.func @simple_loop_nest(){
  affine.for %i0 = 2 to 32 step 2 {
    affine.for %i1 =  0 to 32 step 3 {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}
// -----
func.func @loop_with_unknown_upper_bound(%arg0: memref<?x?xf32>, %arg1: index) {
  %c0 = arith.constant 0 : index
  %0 = memref.dim %arg0, %c0 : memref<?x?xf32>
  affine.for %i0 = 2 to %0 step 32 {
    affine.for %i1 = 0 to %arg1 step 2 {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}
// -----
func.func @loop_with_multiple_upper_bounds(%arg0: memref<?x?xf32>, %arg1 : index) {
  %c0 = arith.constant 0 : index
  %0 = memref.dim %arg0, %c0 : memref<?x?xf32>
  affine.for %i0 = 2 to %0 step 32{
    affine.for %i1 = 2 to min affine_map<(d0)[] -> (d0, 512)>(%arg1) {
      "test.foo"(%i0, %i1) : (index, index) -> ()
    }
  }
  return
}
// -----
func.func @tiled_matmul(%0: memref<1024x1024xf32>, %1: memref<1024x1024xf32>, %2: memref<1024x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %3 = memref.dim %0, %c0 : memref<1024x1024xf32>
  %4 = memref.dim %1, %c1 : memref<1024x1024xf32>
  %5 = memref.dim %0, %c1 : memref<1024x1024xf32>
  affine.for %arg0 = 0 to %3 step 32 {
    affine.for %arg1 = 0 to %4 step 32 {
      affine.for %arg2 = 0 to %5 step 32 {
        affine.for %arg3 = affine_map<(d0) -> (d0)>(%arg0) to min affine_map<(d0)[s0] -> (d0 + 32, s0)>(%arg0)[%3] {
          affine.for %arg4 = affine_map<(d0) -> (d0)>(%arg1) to min affine_map<(d0)[s0] -> (d0 + 32, s0)>(%arg1)[%4] {
            affine.for %arg5 = affine_map<(d0) -> (d0)>(%arg2) to min affine_map<(d0)[s0] -> (d0 + 32, s0)>(%arg2)[%5] {
              %6 = affine.load %0[%arg3, %arg5] : memref<1024x1024xf32>
              %7 = affine.load %1[%arg5, %arg4] : memref<1024x1024xf32>
              %8 = affine.load %2[%arg3, %arg4] : memref<1024x1024xf32>
              %9 = arith.mulf %6, %7 : f32
              %10 = arith.addf %8, %9 : f32
              affine.store %10, %2[%arg3, %arg4] : memref<1024x1024xf32>
            }
          }
        }
      }
    }
  }
  return
}
"""


def _iree(text: str, *flags: str) -> str:
    proc = subprocess.run([IREE, "-", "-split-input-file", "-allow-unregistered-dialect", *flags], input=text,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _structure(text: str) -> list[list[tuple]]:
    """Per chunk: every loop header (bounds as maps with operand positions, steps) and the op names."""
    out = []
    for chunk in text.split("// -----"):
        m = air.parse(chunk, allow_unregistered=True)
        ops = []
        for op in m.walk():
            if isinstance(op, AffineForOp):
                ops.append(("for", op.lower_bound_map, op.upper_bound_map, op.step))
            elif isinstance(op, AffineParallelOp):
                a = op.attributes
                ops.append(("parallel", a["lower_bounds"], a["upper_bounds"], a["steps"]))
            else:
                ops.append((op.name,))
        out.append(ops)
    return out


@pytest.mark.skipif(IREE is None, reason="needs iree-opt (MLIR) on PATH")
@pytest.mark.parametrize("promote", [False, True])
def test_same_structure_as_mlir_on_its_test_input(promote):
    """Ours, then MLIR's canonicalize, has exactly the loops and ops that MLIR's pass then its
    canonicalize give (canonicalize composes MLIR's affine.apply ops into their users, as ours does
    already). Loads are compared by op name only (their subscripts print with terms in another order)."""
    option = "=promote-single-iter=true" if promote else ""
    pieces = []
    for chunk in MLIR_CASES.split("// -----"):
        m = air.parse(chunk, allow_unregistered=True)
        pieces.append(str(run_pipeline(LoopNormalize(promote_single_iter=promote), m)))
    ours_canon = _iree("\n// -----\n".join(pieces), "-canonicalize")
    mlir_canon = _iree(MLIR_CASES, f"-affine-loop-normalize{option}", "-canonicalize")
    assert _structure(ours_canon) == _structure(mlir_canon)


@pytest.mark.skipif(IREE is None, reason="needs iree-opt (MLIR) on PATH")
def test_output_is_accepted_by_mlir():
    text = str(run_pipeline("affine-loop-normalize{promote-single-iter=true}",
                            air.parse(MLIR_CASES.split("// -----")[-1])))
    _iree(text)


# ----- properties on random programs --------------------------------------------------------------------
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
PROGRAMS = programs_with_inputs(max_step=3, max_nests=2, allow_minmax=True)


def _check_all_normalized(out) -> None:
    for loop in loops(out):
        # Only loops with a max lower bound over values of the nest may be left (refused).
        assert is_normalized(loop) or loop.lower_bound_map.num_results > 1, str(loop)


def test_random_programs_keep_their_semantics():
    counts = {"programs": 0, "changed": 0, "stepped": 0}

    @SETTINGS
    @given(PROGRAMS)
    def check(case):
        module, args = case
        out = assert_preserves_semantics("affine-loop-normalize", module, args)
        _check_all_normalized(out)
        assert str(run_pipeline("affine-loop-normalize", out)) == str(out)     # idempotent
        counts["programs"] += 1
        counts["changed"] += str(out) != str(module)
        counts["stepped"] += any(x.step > 1 for x in loops(module) if isinstance(x, AffineForOp))

    check()
    assert counts["programs"] >= 100
    # Most random programs have a loop with a step > 1 or a non-zero lower bound.
    assert counts["stepped"] >= counts["programs"] * 0.35, counts    # measured: ~60%
    assert counts["changed"] >= counts["programs"] * 0.6, counts     # measured: ~80%


def test_random_programs_with_single_iteration_promotion():
    counts = {"programs": 0, "promoted": 0}

    @SETTINGS
    @given(PROGRAMS)
    def check(case):
        module, args = case
        pm = PassManager.parse("affine-loop-normalize{promote-single-iter=true}")
        assert_preserves_semantics(pm.passes, module, args)
        out = pm.run(module)
        _check_all_normalized(out)
        # A loop that ran once when the walk reached it is gone (one left may run once only since an
        # enclosing loop was promoted after it: MLIR's post-order walk leaves it too).
        assert len(loops(out)) == len(loops(module)) - sum("promoted" in d.message for d in pm.trace[0].decisions)
        counts["programs"] += 1
        counts["promoted"] += any("promoted" in d.message for d in pm.trace[0].decisions)

    check()
    assert counts["programs"] >= 100
    assert counts["promoted"] >= counts["programs"] * 0.35, counts   # measured: ~65%


def test_output_with_a_value_both_dim_and_symbol_is_a_print_fixpoint():
    """Normalizing %j composes ``%j + symbol(%N)`` into a subscript that reads %N as a dim too
    (fuzzing: affine-loop-unroll{unroll-full},affine-loop-normalize): the text prints back to itself."""
    m = air.parse("""
func.func @f(%B: memref<9x99xi32>, %N: index) {
  affine.for %i = 0 to 4 {
    affine.for %j = %N to affine_map<()[s0] -> (s0 + 4)>()[%N] {
      %a = affine.load %B[(-%j + 1) floordiv 4 + 2, %i + %N * 2] : memref<9x99xi32>
    }
  }
  return
}""")
    text = str(run_pipeline("affine-loop-normalize", m))
    assert str(air.parse(text)) == text


@pytest.mark.parametrize("loop", [
    "affine.for %i = 0 to %N step 4611686018427387905",
    "affine.parallel (%i) = (0) to (%N) step (4611686018427387905)",
])
def test_normalizing_that_needs_integers_past_64_bits_is_refused_unchanged(loop):
    """``lb + %i * step`` composed into ``%i * 3 + 1`` needs the coefficient 3 * step > 2**63 - 1
    (fuzzing found it after tiling: the text did not parse back); the loop stays as it is."""
    text = f"""
func.func @k(%A: memref<4xi64>, %N: index) {{
  {loop} {{
    %t = affine.apply affine_map<(d0) -> (d0 * 3 + 1)>(%i)
    %v = arith.index_cast %t : index to i64
    affine.store %v, %A[0] : memref<4xi64>
  }}
  return
}}"""
    m = air.parse(text)
    op = next(o for o in m.walk() if isinstance(o, (AffineForOp, AffineParallelOp)))
    err = assert_refused_unchanged(lambda: normalize_loop(op), m)
    assert "past 64 bits" in str(err)
    out = assert_preserves_semantics("affine-loop-normalize", air.parse(text), [np.zeros(4, np.int64), 2**63 - 1])
    assert str(air.parse(str(out))) == str(out)


def test_the_two_promotions_have_names_that_say_how_the_iv_is_replaced():
    from transforms.loops import normalize as normalize_module
    from transforms.loops import (
        promote_single_iteration_composing_bound,
        promote_single_iteration_materializing_bound,
        unroll,
    )

    assert normalize_module.promote_if_single_iteration is promote_single_iteration_composing_bound
    assert unroll.promote_if_single_iteration is promote_single_iteration_materializing_bound
    text = """
func.func @f(%A: memref<100xf32>) {
  affine.for %i = 3 to 4 {
    %v = affine.load %A[%i + 1] : memref<100xf32>
    affine.store %v, %A[%i] : memref<100xf32>
  }
  return
}"""
    composed, materialized = air.parse(text), air.parse(text)
    assert promote_single_iteration_composing_bound(first_loop(composed))
    assert promote_single_iteration_materializing_bound(first_loop(materialized))
    assert "affine.load %A[4]" in str(composed) and "arith.constant" not in str(composed)
    assert "%c3 = arith.constant 3 : index" in str(materialized) and "affine.load %A[%c3 + 1]" in str(materialized)
