"""Static bounds checking with isl (``analysis.check_bounds``), the ``affine-check-bounds`` pass,
``affine-opt -verify-bounds``, and the checks of ``runtime.compile`` (at compile time and at launch).

Every library op and the pipelines' outputs must pass; random in-bounds programs are never
refused; an index shifted out of bounds is found exactly when the interpreter raises on it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
import analysis
import runtime
from affine_ir import AffineMap
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.testing import CPU_CASES, programs_with_inputs
from runtime.bounds_guard import BoundsCompileError, BoundsLaunchError
from runtime.cli import affine_opt_main
from runtime.run_cli import main as affine_run_main
from transforms import PassManager, TransformError
from transforms.pipelines import CPU_PIPELINE
from transforms.verify.check_bounds import BoundsError, verify_bounds

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")

OOB_STORE = """\
func.func @oob(%A: memref<4xf32>, %B: memref<4xf32>) {
  affine.for %i = 0 to 5 {
    %a = affine.load %A[%i] : memref<4xf32>
    affine.store %a, %B[%i] : memref<4xf32>
  }
  return
}
"""

STORE_PAST_END = """\
func.func @oob(%B: memref<4xf32>) {
  %cst = arith.constant 1.0 : f32
  affine.for %i = 0 to 5 {
    affine.store %cst, %B[%i] : memref<4xf32>
  }
  return
}
"""


def _parse(text: str) -> air.ModuleOp:
    return air.parse(text, "t.mlir")


# ----- static violations -------------------------------------------------------------------------
def test_store_past_the_end_is_refused_with_the_witness():
    (v,) = analysis.check_bounds(_parse(STORE_PAST_END))
    assert v.message == ("t.mlir:4:5: error: 'affine.store' %B[%i] with %i = 4 is outside memref<4xf32> "
                         "(dimension 0 has size 4)")
    assert (v.dimension, v.index, v.size, v.witness) == (0, 4, 4, {"%i": 4})
    assert v.op.name == "affine.store" and v.memref.name_hint == "B"


def test_every_violation_is_listed_in_program_order():
    vs = analysis.check_bounds(_parse(OOB_STORE))
    assert [(v.op.name, v.location.line, v.index) for v in vs] == [("affine.load", 3, 4), ("affine.store", 4, 4)]


def test_off_by_one_in_a_2d_access():
    text = """\
func.func @f(%A: memref<8x6xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 6 {
      %a = affine.load %A[%i, %j + 1] : memref<8x6xf32>
    }
  }
  return
}
"""
    (v,) = analysis.check_bounds(_parse(text))
    assert v.dimension == 1 and v.index == 6 and v.witness == {"%i": 0, "%j": 5}
    assert "'affine.load' %A[%i, %j + 1] with %i = 0, %j = 5 is outside memref<8x6xf32> " \
           "(dimension 1 has size 6; the index is 6)" in v.message


def test_negative_index_and_first_offending_iteration():
    text = """\
func.func @f(%A: memref<10xf32>) {
  affine.for %i = 0 to 10 step 2 {
    %a = affine.load %A[%i - 3] : memref<10xf32>
  }
  return
}
"""
    (v,) = analysis.check_bounds(_parse(text))
    assert (v.index, v.witness) == (-3, {"%i": 0})


def test_an_affine_if_guarding_the_access_makes_it_safe():
    guarded = """\
func.func @f(%A: memref<4xf32>, %B: memref<5xf32>) {
  affine.for %i = 0 to 5 {
    affine.if affine_set<(d0) : (3 - d0 >= 0)>(%i) {
      %a = affine.load %A[%i] : memref<4xf32>
      affine.store %a, %B[%i] : memref<5xf32>
    }
  }
  return
}
"""
    assert analysis.check_bounds(_parse(guarded)) == []
    in_else = guarded.replace("affine.store %a", "affine.yield\n    } else {\n      %z = affine.load %A[%i] : "
                              "memref<4xf32>\n      affine.store %z")
    (v,) = analysis.check_bounds(_parse(in_else))
    assert v.op.name == "affine.load" and v.witness == {"%i": 4}


def test_vector_access_whose_last_lane_is_out():
    text = """\
func.func @f(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 step 4 {
    %v = affine.vector_load %A[%i + 1] : memref<8xf32>, vector<4xf32>
  }
  return
}
"""
    (v,) = analysis.check_bounds(_parse(text))
    assert v.witness == {"%i": 4} and v.index == 8
    assert "(dimension 0 has size 8; the vector<4xf32> access reaches index 8)" in v.message
    assert analysis.check_bounds(_parse(text.replace("%i + 1", "%i"))) == []


def test_dim_of_a_dynamic_memref_as_bound_is_proved_safe():
    text = """\
func.func @f(%A: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %d = memref.dim %A, %c0 : memref<?x4xf32>
  affine.for %i = 0 to %d {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<?x4xf32>
    }
  }
  return
}
"""
    check = analysis.bounds_check(_parse(text).functions[0])
    assert (check.violations, check.launch_checks, check.unchecked) == ([], [], [])
    # Out of bounds for every size but 0 (no iteration then): left to launch, refused there.
    shifted = analysis.bounds_check(_parse(text.replace("%i, %j]", "%i + %d, %j]")).functions[0])
    assert shifted.violations == [] and len(shifted.launch_checks) == 1
    assert shifted.violations_at([np.zeros((0, 4))]) == []
    (v,) = shifted.violations_at([np.zeros((3, 4))])
    assert (v.index, v.size, v.witness) == (3, 3, {"%i": 0, "%d": 3, "%j": 0})


def test_a_symbolic_access_is_left_to_launch_and_checked_with_the_values():
    text = """\
func.func @f(%A: memref<?xf32>, %B: memref<8xf32>, %n: index) {
  affine.for %i = 0 to %n {
    %a = affine.load %A[%i] : memref<?xf32>
    affine.store %a, %B[%i] : memref<8xf32>
  }
  return
}
"""
    check = analysis.bounds_check(_parse(text).functions[0])
    assert check.violations == [] and len(check.launch_checks) == 2
    assert check.violations_at([np.zeros(8), np.zeros(8), 8]) == []
    (v,) = check.violations_at([np.zeros(5), np.zeros(8), 6])
    assert v.message.endswith("'affine.load' %A[%i] with %i = 5 is outside memref<?xf32> (dimension 0 has size 5)")
    assert [x.op.name for x in check.violations_at([np.zeros(20), np.zeros(8), 9])] == ["affine.store"]


def test_non_affine_accesses_are_unchecked_not_refused():
    text = """\
func.func @f(%A: memref<4xf32>, %k: index) {
  %a = memref.load %A[%k] : memref<4xf32>
  return
}
"""
    check = analysis.bounds_check(_parse(text).functions[0])
    assert check.violations == [] and [op.name for op in check.unchecked] == ["memref.load"]


# ----- no false refusals ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CPU_CASES))
def test_library_ops_pass(name):
    module = CPU_CASES[name]()
    assert analysis.check_bounds(module) == []
    verify_bounds(module)


@pytest.mark.parametrize("name", ["matmul_tiled", "conv2d", "softmax", "attention_causal", "layernorm_sym"])
def test_cpu_pipeline_outputs_pass(name):
    out = PassManager.parse(CPU_PIPELINE).run(CPU_CASES[name]())
    assert analysis.check_bounds(out) == []


def test_tiled_and_unrolled_outputs_pass():
    m = air.library.matmul(37, 50, 19)
    out = PassManager.parse("affine-loop-tile{tile-size=8},affine-loop-unroll{unroll-factor=3}").run(m)
    assert analysis.check_bounds(out) == []


# ----- the pass and the command lines ------------------------------------------------------------------
def test_pass_refuses_with_all_violations_and_leaves_the_ir_unchanged():
    m = _parse(OOB_STORE)
    before = str(m)
    with pytest.raises(BoundsError) as e:
        PassManager.parse("affine-check-bounds").run(m)
    assert isinstance(e.value, TransformError) and len(e.value.violations) == 2
    assert str(e.value).startswith("t.mlir:3:5: error: affine-check-bounds: 'affine.load' %A[%i] with %i = 4")
    assert str(e.value).endswith("(and 1 other out-of-bounds access)")
    assert str(m) == before
    ok = PassManager.parse("affine-check-bounds").run(air.library.matmul("M", 8, 8))
    assert str(ok) == str(air.library.matmul("M", 8, 8))


def test_affine_opt_verify_bounds_exit_status(tmp_path, capsys):
    bad, good = tmp_path / "bad.mlir", tmp_path / "good.mlir"
    bad.write_text(STORE_PAST_END)
    good.write_text(STORE_PAST_END.replace("0 to 5", "0 to 4"))
    assert affine_opt_main([str(bad), "-verify-bounds"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4:5: error: affine-check-bounds: 'affine.store' %B[%i] with %i = 4 is outside" in err
    assert affine_opt_main([str(bad)]) == 0
    assert affine_opt_main([str(good), "-verify-bounds", "-affine-loop-unroll"]) == 0
    assert affine_opt_main([str(bad), "-affine-check-bounds"]) == 2


def test_affine_run_refuses_the_oob_program(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(STORE_PAST_END)
    assert affine_run_main([str(bad), "--target", "cpu"]) == 2
    assert "'affine.store' %B[%i] with %i = 4 is outside memref<4xf32>" in capsys.readouterr().err


# ----- runtime.compile ---------------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_compile_refuses_a_definite_violation(target):
    with pytest.raises(BoundsCompileError) as e:
        runtime.compile(_parse(STORE_PAST_END), target)
    assert isinstance(e.value, runtime.CompileError)
    assert str(e.value) == ("t.mlir:4:5: error: 'affine.store' %B[%i] with %i = 4 is outside memref<4xf32> "
                            "(dimension 0 has size 4)")


def test_compiled_symbolic_program_is_checked_at_launch():
    text = """\
func.func @f(%A: memref<?xf32>, %B: memref<8xf32>, %n: index) {
  affine.for %i = 0 to %n {
    %a = affine.load %A[%i] : memref<?xf32>
    affine.store %a, %B[%i] : memref<8xf32>
  }
  return
}
"""
    k = runtime.compile(_parse(text), "cpu", pipeline="")
    A, B = np.arange(16, dtype=np.float32), np.zeros(8, np.float32)
    k(A, B, 8)
    assert list(B) == list(range(8))
    B[:] = -1
    with pytest.raises(BoundsLaunchError) as e:
        k(A, B, 9)
    assert isinstance(e.value, runtime.LaunchError)
    assert "'affine.store' %B[%i] with %i = 8 is outside memref<8xf32> (dimension 0 has size 8)" in str(e.value)
    assert (B == -1).all()  # refused before anything ran
    with pytest.raises(BoundsLaunchError, match=r"%A\[%i\] with %i = 4 is outside memref<\?xf32>"):
        k(A[:4].copy(), B, 8)


def test_library_symbolic_matmul_runs_and_refuses_a_too_small_array():
    k = runtime.compile(air.library.matmul("M", 8, "K"), "cpu")
    M, K = 5, 3
    A, B, C = np.ones((M, K), np.float32), np.ones((K, 8), np.float32), np.zeros((M, 8), np.float32)
    k(A, B, C, M, K)
    assert (C == K).all()
    with pytest.raises(BoundsLaunchError, match="dimension 0 has size 5"):
        k(A, B, C, M + 1, K)


# ----- properties ----------------------------------------------------------------------------------------
PROPS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _all_violations(module: air.ModuleOp, args) -> list:
    check = analysis.bounds_check(module.functions[0])
    return check.violations + check.violations_at(args)


@settings(max_examples=150, **PROPS)
@given(programs_with_inputs())
def test_random_in_bounds_programs_are_never_refused(case):
    module, args = case
    check = analysis.bounds_check(module.functions[0])
    assert check.violations == [] and check.unchecked == []
    assert check.violations_at(args) == []


@settings(max_examples=150, **PROPS)
@given(programs_with_inputs(), st.data())
def test_an_index_shifted_out_of_bounds_is_caught_when_the_interpreter_fails(case, data):
    module, args = case
    accesses = [op for op in module.functions[0].walk()
                if isinstance(op, AffineAccessInterface) and op.memref.type.rank]
    if not accesses:
        return
    op = data.draw(st.sampled_from(accesses))
    d = data.draw(st.integers(0, op.memref.type.rank - 1))
    shift = data.draw(st.sampled_from([-1, 1])) * op.memref.type.shape[d]
    m = op.map
    results = [e + shift if k == d else e for k, e in enumerate(m.results)]
    op.set_access(AffineMap(m.num_dims, m.num_symbols, tuple(results)), list(op.indices))
    found = _all_violations(module, args)
    try:
        air.interpret(module, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        interpreter_raised = False
    except air.InterpretError as e:
        assert "out of bounds" in str(e)
        interpreter_raised = True
    assert bool(found) == interpreter_raised
    assert all(v.op is op for v in found)


# ----- the check_bounds debug build (guarded memref.load/store) -------------------------------------
GATHER = """\
func.func @f(%A: memref<4xf32>, %B: memref<4xf32>, %k: index) {
  affine.for %i = 0 to 4 {
    %j = arith.addi %i, %k : index
    %a = memref.load %A[%j] : memref<4xf32>
    memref.store %a, %B[%i] : memref<4xf32>
  }
  return
}
"""


@pytest.mark.parametrize("threads", [1, None])
def test_check_bounds_build_names_the_memref_load_and_abandons_the_call(threads):
    k = runtime.compile(_parse(GATHER), "cpu", check_bounds=True, threads=threads)
    A, B = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    k(A, B, 0)
    assert list(B) == [0, 1, 2, 3]
    for shift in (1, -(1 << 40)):
        with pytest.raises(runtime.LaunchError) as e:
            k(A, B, shift)
        assert str(e.value).startswith("t.mlir:4:5: error: 'memref.load' of %A: an index is outside memref<4xf32>")
    k(A, B, 0)  # the error is reset
    assert list(B) == [0, 1, 2, 3]


def test_only_check_bounds_builds_carry_guards():
    from codegen.llvm import FAILURE_SYMBOL, emit

    m = _parse(GATHER)
    assert FAILURE_SYMBOL in emit(m, check_bounds=True).text
    assert FAILURE_SYMBOL not in emit(m).text


def test_check_bounds_is_refused_for_cuda():
    with pytest.raises(runtime.CompileError, match="check_bounds=True .* is a CPU build option"):
        runtime.compile(_parse(GATHER), "cuda", check_bounds=True)


@pytest.mark.skipif(not runtime.gpu_available(), reason="no usable GPU")
def test_cuda_launch_refuses_arguments_that_go_out_of_bounds():
    text = """\
func.func @f(%A: memref<?xf32>, %B: memref<8xf32>, %n: index) {
  affine.for %i = 0 to %n {
    %a = affine.load %A[%i] : memref<?xf32>
    affine.store %a, %B[%i] : memref<8xf32>
  }
  return
}
"""
    k = runtime.compile(_parse(text), "cuda")
    A, B = np.arange(16, dtype=np.float32), np.zeros(8, np.float32)
    k(A, B, 8)
    assert list(B) == list(range(8))
    B[:] = -1
    with pytest.raises(BoundsLaunchError, match=r"'affine.store' %B\[%i\] with %i = 8 is outside memref<8xf32>"):
        k(A, B, 9)
    assert (B == -1).all()
    with pytest.raises(BoundsLaunchError):
        k.bind(A, B, 9)
