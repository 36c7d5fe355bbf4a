"""dce: unit tests, MLIR parity (iree-opt canonicalize, optional) and properties on random programs."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.dialects import memref as memref_d
from affine_ir.dialects.affine import AffineStoreOp
from affine_ir.testing import assert_equivalent, kernel_function, programs_with_inputs
from affine_ir.types import MemRefType
from transforms import PassManager
from transforms.cleanup.dce import eliminate_dead_code, is_trivially_dead, write_only_allocations
from transforms.testing import assert_preserves_semantics, run_pipeline

IREE = shutil.which("iree-opt")


def dce_text(text: str, **kw) -> tuple[int, str]:
    m = air.parse(text, **kw)
    n = eliminate_dead_code(m)
    air.verify(m)
    return n, str(m)


def test_dead_chains_loads_and_allocations_go():
    n, text = dce_text("""
func.func @f(%A: memref<8xf32>, %n: index) -> index {
  %c1 = arith.constant 1 : index
  %a = arith.addi %n, %c1 : index
  %b = arith.muli %a, %a : index
  %v = affine.load %A[%n] : memref<8xf32>
  %m = memref.alloc() : memref<8xf32>
  return %n : index
}""")
    assert n == 5
    assert text.count("\n") == 5  # module, func, return and two closing braces
    assert "return %n" in text


def test_effect_free_loops_and_ifs_with_unused_results_go():
    n, text = dce_text("""
func.func @f(%A: memref<8xf32>, %B: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = affine.for %i = 0 to 8 iter_args(%acc = %zero) -> (f32) {
    %v = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  affine.parallel (%i) = (0) to (8) {
    %r = affine.if affine_set<(d0) : (d0 - 4 >= 0)>(%i) -> f32 {
      affine.yield %zero : f32
    } else {
      %v = affine.load %A[%i] : memref<8xf32>
      affine.yield %v : f32
    }
  }
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %B[%i] : memref<8xf32>
  }
  return
}""")
    assert text.count("affine.for") == 1 and "affine.parallel" not in text and "arith.constant" not in text
    assert "affine.store %v, %B[%i]" in text


def test_write_only_memrefs_go_with_their_stores():
    m = air.parse("""
func.func @f(%A: memref<8xf32>) {
  %t = memref.alloc() : memref<8xf32>
  %s = memref.alloca() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    affine.store %v, %t[%i] : memref<8xf32>
    memref.store %v, %s[%i] : memref<8xf32>
  }
  memref.dealloc %t : memref<8xf32>
  return
}""")
    found = write_only_allocations(m)
    assert [(len(f.stores), len(f.deallocs)) for f in found] == [(1, 1), (1, 0)]
    pm = PassManager.parse("dce")
    out = pm.run(m)
    assert str(out).count("\n") == 5
    kinds = [d.kind for d in pm.trace[0].decisions]
    assert kinds.count("note") == 2 and kinds.count("applied") == 1


@pytest.mark.parametrize("use", [
    "%v = affine.load %t[0] : memref<8xf32>\n  affine.store %v, %A[0] : memref<8xf32>",
    "func.call @sink(%t) : (memref<8xf32>) -> ()",
    "%d = memref.dim %t, %c0 : memref<8xf32>\n  affine.store %x, %A[%d] : memref<8xf32>",
    "\"test.use\"(%t) : (memref<8xf32>) -> ()",
    "%w = affine.vector_load %t[0] : memref<8xf32>, vector<4xf32>\n"
    "  affine.vector_store %w, %A[0] : memref<8xf32>, vector<4xf32>",
])
def test_memrefs_that_are_read_or_escape_stay(use):
    text = f"""
func.func private @sink(memref<8xf32>)
func.func @f(%A: memref<8xf32>, %x: f32) {{
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<8xf32>
  affine.store %x, %t[1] : memref<8xf32>
  {use}
  return
}}"""
    n, out = dce_text(text, allow_unregistered=True)
    assert "memref.alloc" in out and "affine.store %x, %t[1]" in out


def test_returned_memref_and_stores_into_arguments_stay():
    n, out = dce_text("""
func.func @f(%A: memref<8xf32>, %x: f32) -> memref<8xf32> {
  %t = memref.alloc() : memref<8xf32>
  affine.store %x, %t[1] : memref<8xf32>
  affine.store %x, %A[1] : memref<8xf32>
  return %t : memref<8xf32>
}""")
    assert n == 0


def test_a_memref_whose_only_read_is_dead_goes_too():
    n, out = dce_text("""
func.func @f(%A: memref<4xf32>, %x: f32) {
  %t = memref.alloca() : memref<4xf32>
  affine.for %i = 0 to 4 {
    affine.store %x, %t[%i] : memref<4xf32>
    %dead = affine.load %t[%i] : memref<4xf32>
    affine.store %x, %A[%i] : memref<4xf32>
  }
  return
}""")
    assert n == 3 and "%t" not in out


def test_ops_of_unknown_effects_stay():
    n, out = dce_text("""
func.func @f(%n: index) {
  %c = arith.addi %n, %n : index
  "test.use"(%c) : (index) -> ()
  affine.for %i = 0 to 4 {
    gpu.barrier
  }
  "test.opaque"() : () -> ()
  return
}""", allow_unregistered=True)
    assert n == 0
    func = air.parse("func.func @g() {\n return\n}")
    assert not is_trivially_dead(kernel_function(func).body.ops[-1])  # a terminator never is


@pytest.mark.skipif(IREE is None, reason="needs iree-opt (MLIR) on PATH")
def test_same_result_as_mlir_canonicalize_on_dead_code():
    """On code where MLIR's canonicalize only erases (no folding to do), it erases what dce erases."""
    text = """
func.func @f(%A: memref<8xf32>, %B: memref<8xf32>, %n: index, %x: f32) -> index {
  %c1 = arith.constant 1 : index
  %a = arith.addi %n, %c1 : index
  %b = arith.muli %a, %a : index
  %t = memref.alloc() : memref<8xf32>
  memref.store %x, %t[%n] : memref<8xf32>
  memref.dealloc %t : memref<8xf32>
  %sum = affine.for %i = 0 to 8 iter_args(%acc = %x) -> (f32) {
    %v = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  affine.for %i = 0 to 8 {
    %v = affine.load %A[%i] : memref<8xf32>
    %w = arith.mulf %v, %v : f32
    affine.store %w, %B[%i] : memref<8xf32>
  }
  return %n : index
}"""
    proc = subprocess.run([IREE, "-", "-canonicalize"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    ours = run_pipeline("dce", air.parse(text))
    assert air.structurally_equal(ours, air.parse(proc.stdout))


# ----- properties on random programs ---------------------------------------------------------------------
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
PROGRAMS = programs_with_inputs(max_nests=2)


def with_dead_code(module):
    """A copy of ``module`` followed by a second copy of its body whose stores into arguments go to
    fresh ``memref.alloc`` buffers (read by nothing), and a dead index computation."""
    m = module.clone()
    f = kernel_function(m)
    ret = f.body.ops[-1]
    scratch = {}
    for arg in f.args:
        if isinstance(arg.type, MemRefType):
            alloc = memref_d.AllocOp(arg.type, name_hint="scratch")
            f.body.insert(0, alloc)
            scratch[arg] = alloc.result
    mapping: dict = {}
    injected = 0
    for op in [op for op in f.body.ops if op is not ret and op.name != "memref.alloc"]:
        copy = op.clone(mapping)
        f.body.insert_before(ret, copy)
        for inner in copy.walk():
            injected += 1
            if isinstance(inner, AffineStoreOp) and inner.memref in scratch:
                inner.set_operand(inner.memref_index, scratch[inner.memref])
    return m, injected + len(scratch)


def test_random_programs_keep_their_semantics():
    counts = {"programs": 0}

    @SETTINGS
    @given(PROGRAMS)
    def check(case):
        module, args = case
        out = assert_preserves_semantics("dce", module, args)
        assert eliminate_dead_code(out) == 0
        counts["programs"] += 1

    check()
    assert counts["programs"] >= 100


def test_random_programs_with_injected_dead_code_come_back():
    counts = {"programs": 0, "injected": 0}

    @SETTINGS
    @given(PROGRAMS)
    def check(case):
        module, args = case
        padded, injected = with_dead_code(module)
        air.verify(padded)
        out = assert_preserves_semantics("dce", padded, args)
        assert_equivalent(module, out, args)
        # All the injected code goes, and nothing else: the result is dce of the original.
        assert str(out) == str(run_pipeline("dce", module))
        assert eliminate_dead_code(padded.clone()) >= injected
        counts["programs"] += 1
        counts["injected"] += injected > 0

    check()
    assert counts["programs"] >= 100
    assert counts["injected"] >= counts["programs"] * 0.9, counts
