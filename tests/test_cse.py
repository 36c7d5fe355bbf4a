"""cse: unit tests, MLIR parity (iree-opt, optional) and properties on random programs."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.testing import assert_equivalent, kernel_function, programs_with_inputs
from transforms.cleanup.cse import eliminate_common_subexpressions, equivalence_key
from transforms.testing import assert_preserves_semantics, run_pipeline

IREE = shutil.which("iree-opt")


def cse_text(text: str, **kw) -> tuple[int, str]:
    m = air.parse(text, **kw)
    n = eliminate_common_subexpressions(m)
    air.verify(m)
    return n, str(m)


def test_duplicates_in_one_block_and_commutative_operands():
    n, text = cse_text("""
func.func @f(%a: f32, %b: f32, %i: index) -> (f32, f32, index, index) {
  %x = arith.addf %a, %b : f32
  %y = arith.addf %b, %a : f32
  %p = affine.apply affine_map<(d0) -> (d0 * 2)>(%i)
  %q = affine.apply affine_map<(d0) -> (d0 + d0)>(%i)
  return %x, %y, %p, %q : f32, f32, index, index
}""")
    assert n == 2
    assert "return %x, %x, %p, %p" in text


def test_not_merged_when_they_differ():
    n, text = cse_text("""
func.func @f(%a: index, %b: index) -> (f32, f32, i32, index, index, index, i1, i1) {
  %z = arith.constant 0.0 : f32
  %nz = arith.constant -0.0 : f32
  %c0 = arith.constant 0 : i32
  %c0i = arith.constant 0 : index
  %s = arith.subi %a, %b : index
  %t = arith.subi %b, %a : index
  %l = arith.cmpi slt, %a, %b : index
  %g = arith.cmpi sgt, %a, %b : index
  return %z, %nz, %c0, %c0i, %s, %t, %l, %g : f32, f32, i32, index, index, index, i1, i1
}""")
    assert n == 0


def test_loads_and_ops_with_effects_are_not_merged():
    n, text = cse_text("""
func.func @f(%A: memref<8xf32>) -> (f32, f32, memref<8xf32>, memref<8xf32>) {
  %u = affine.load %A[0] : memref<8xf32>
  %v = affine.load %A[0] : memref<8xf32>
  %m = memref.alloc() : memref<8xf32>
  %k = memref.alloc() : memref<8xf32>
  return %u, %v, %m, %k : f32, f32, memref<8xf32>, memref<8xf32>
}""")
    assert n == 0


def test_scopes_follow_dominance():
    n, text = cse_text("""
func.func @f(%A: memref<8xindex>, %n: index) {
  %c1 = arith.constant 1 : index
  affine.for %i = 0 to 4 {
    %c1_in = arith.constant 1 : index
    %s = arith.addi %n, %c1_in : index
    affine.store %s, %A[%i] : memref<8xindex>
    affine.if affine_set<(d0) : (d0 - 2 >= 0)>(%i) {
      %t = arith.addi %n, %c1 : index
      affine.store %t, %A[%i + 4] : memref<8xindex>
    } else {
      %t = arith.addi %c1, %n : index
      affine.store %t, %A[%i + 4] : memref<8xindex>
    }
  }
  %late = arith.addi %n, %c1 : index
  affine.store %late, %A[0] : memref<8xindex>
  return
}""")
    # The inner constant goes to the outer one; both branches' additions to %s (in the loop body,
    # which dominates them); %late is not dominated by %s and stays.
    assert n == 3
    assert text.count("arith.constant") == 1
    assert text.count("arith.addi") == 2
    assert text.count("affine.store %s") == 3


def test_sibling_regions_do_not_share():
    n, _ = cse_text("""
func.func @f(%A: memref<8xindex>, %n: index) {
  affine.for %i = 0 to 4 {
    %s = arith.addi %n, %n : index
    affine.store %s, %A[%i] : memref<8xindex>
  }
  affine.for %i = 0 to 4 {
    %s = arith.addi %n, %n : index
    affine.store %s, %A[%i] : memref<8xindex>
  }
  return
}""")
    assert n == 0


def test_kernel_keeps_its_own_constants():
    n, text = cse_text("""
func.func @k(%A: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %one = arith.constant 1 : index
    %t0 = gpu.thread_id x
    %t1 = gpu.thread_id x
    %p = arith.addi %t0, %one : index
    %q = arith.addi %t1, %one : index
    %v = memref.load %A[%p] : memref<64xf32>
    memref.store %v, %A[%q] : memref<64xf32>
    gpu.terminator
  }
  return
}""")
    assert n == 2                                              # thread_id and addi inside the kernel
    assert "%one = arith.constant 1 : index" in text


def test_dead_ops_go_and_the_survivor_keeps_a_name():
    n, text = cse_text("""
func.func @f(%n: index) -> index {
  %0 = arith.addi %n, %n : index
  %named = arith.addi %n, %n : index
  %dead = arith.muli %named, %named : index
  return %named : index
}""")
    assert n == 2
    assert "%named = arith.addi %n, %n" in text


def test_equivalence_key_tells_bool_from_int_and_signed_zeros():
    m = air.parse("func.func @f() -> (f32, f32) {\n %a = arith.constant 0.0 : f32\n"
                  " %b = arith.constant -0.0 : f32\n return %a, %b : f32, f32\n}")
    a, b = kernel_function(m).body.ops[:2]
    assert equivalence_key(a) != equivalence_key(b)


# ----- MLIR parity: inputs of mlir/test/Transforms/cse.mlir (arguments named) ------------------------------
MLIR_CASES = """
func.func @simple_constant() -> (i32, i32) {
  %0 = arith.constant 1 : i32
  %1 = arith.constant 1 : i32
  return %0, %1 : i32, i32
}
// -----
func.func @basic() -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 0 : index
  %0 = affine.apply affine_map<(d0) -> (d0 mod 2)>(%c0)
  %1 = affine.apply affine_map<(d0) -> (d0 mod 2)>(%c1)
  return %0, %1 : index, index
}
// -----
func.func @many(%a: f32, %b: f32) -> (f32) {
  %c = arith.addf %a, %b : f32
  %d = arith.addf %a, %b : f32
  %e = arith.addf %a, %b : f32
  %f = arith.addf %a, %b : f32
  %g = arith.addf %c, %d : f32
  %h = arith.addf %e, %f : f32
  %i = arith.addf %c, %e : f32
  %j = arith.addf %g, %h : f32
  %k = arith.addf %h, %i : f32
  %l = arith.addf %j, %k : f32
  return %l : f32
}
// -----
func.func @different_ops() -> (i32, i32) {
  %0 = arith.constant 0 : i32
  %1 = arith.constant 1 : i32
  return %0, %1 : i32, i32
}
// -----
func.func @different_attributes(%a: index, %b: index) -> (i1, i1, i1) {
  %0 = arith.cmpi slt, %a, %b : index
  %1 = arith.cmpi ne, %a, %b : index
  %2 = arith.cmpi ne, %a, %b : index
  return %0, %1, %2 : i1, i1, i1
}
// -----
func.func @side_effect() -> (memref<2x1xf32>, memref<2x1xf32>) {
  %0 = memref.alloc() : memref<2x1xf32>
  %1 = memref.alloc() : memref<2x1xf32>
  return %0, %1 : memref<2x1xf32>, memref<2x1xf32>
}
// -----
func.func @down_propagate_for() {
  %0 = arith.constant 1 : i32
  affine.for %i = 0 to 4 {
    %1 = arith.constant 1 : i32
    "foo"(%0, %1) : (i32, i32) -> ()
  }
  return
}
// -----
func.func @up_propagate_for() -> i32 {
  affine.for %i = 0 to 4 {
    %0 = arith.constant 1 : i32
    "foo"(%0) : (i32) -> ()
  }
  %1 = arith.constant 1 : i32
  return %1 : i32
}
// -----
func.func @commutative(%a: i32, %b: i32) -> (i32, i32) {
  %0 = arith.addi %a, %b : i32
  %1 = arith.addi %b, %a : i32
  return %0, %1 : i32, i32
}
"""


@pytest.mark.skipif(IREE is None, reason="needs iree-opt (MLIR) on PATH")
def test_same_result_as_mlir_cse_on_its_test_input():
    proc = subprocess.run([IREE, "-", "-split-input-file", "-allow-unregistered-dialect", "-cse"], input=MLIR_CASES,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    chunks = MLIR_CASES.split("// -----")
    outputs = proc.stdout.split("// -----")
    assert len(outputs) == len(chunks)
    for chunk, output in zip(chunks, outputs):
        ours = run_pipeline("cse", air.parse(chunk, allow_unregistered=True))
        theirs = air.parse(output, allow_unregistered=True)
        assert air.structurally_equal(ours, theirs), f"{ours}\n--- MLIR ---\n{theirs}"


# ----- properties on random programs --------------------------------------------------------------------------
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
PROGRAMS = programs_with_inputs(max_nests=2)


def with_duplicates(module):
    """A copy of ``module`` where each pure op is followed by a clone that takes every other use."""
    m = module.clone()
    count = 0
    for op in list(kernel_function(m).walk()):
        if op.is_pure and not op.regions and op.results:
            twin = op.clone()
            op.parent.insert_after(op, twin)
            for use in list(op.results[0].uses)[1::2]:
                use.op.set_operand(use.index, twin.results[0])
            count += 1
    return m, count


def test_random_programs_keep_their_semantics():
    counts = {"programs": 0, "changed": 0}

    @SETTINGS
    @given(PROGRAMS)
    def check(case):
        module, args = case
        out = assert_preserves_semantics("cse", module, args)
        assert eliminate_common_subexpressions(out) == 0                  # a fixpoint in one run
        counts["programs"] += 1
        counts["changed"] += str(out) != str(module)

    check()
    assert counts["programs"] >= 100
    # Random programs rarely repeat an op (mostly constants): measured ~30%; the next test duplicates ops.
    assert counts["changed"] >= counts["programs"] * 0.15, counts


def test_random_programs_with_duplicated_pure_ops_come_back():
    counts = {"programs": 0, "duplicated": 0}

    @SETTINGS
    @given(PROGRAMS)
    def check(case):
        module, args = case
        doubled, n = with_duplicates(module)
        air.verify(doubled)
        out = assert_preserves_semantics("cse", doubled, args)
        assert_equivalent(module, out, args)
        # Every clone is merged back: the result is what CSE makes of the original program.
        assert str(out) == str(run_pipeline("cse", module))
        assert eliminate_common_subexpressions(doubled.clone()) >= n
        counts["programs"] += 1
        counts["duplicated"] += n > 0

    check()
    assert counts["programs"] >= 100
    assert counts["duplicated"] >= counts["programs"] * 0.6, counts       # measured: ~80% have a pure op


def test_merged_operands_still_print_to_a_fixpoint():
    """CSE can leave one value bound to two operands of an access map (``d0 + d1`` on
    ``(%a, %a)``); the printer writes it once (``%a * 2``) so the text re-parses to itself.
    Found by the random-pipeline fuzzer (affine-loop-unroll{unroll-full}, then cse)."""
    m = air.parse("""
func.func @f(%A: memref<4xf32>) {
  %a = arith.constant 1 : index
  %b = arith.constant 1 : index
  %v = affine.load %A[%a + %b] : memref<4xf32>
  affine.store %v, %A[0] : memref<4xf32>
  return
}""")
    out = run_pipeline("cse", m)
    text = str(out)
    assert "affine.load %A[%a * 2]" in text and str(air.parse(text)) == text
