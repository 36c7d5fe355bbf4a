"""``affine-loop-invariant-code-motion`` (transforms/loops/licm.py).

Unit tests of what moves and what stays (loads of written memrefs, ops in guards, trapping
divisions, loops that may not run), MLIR parity on the inputs of MLIR's
``affine-loop-invariant-code-motion.mlir`` (through ``iree-opt`` when installed: the same
structure on every case we parse), and property tests on random programs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.core import OP_REGISTRY, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing import assert_equivalent, programs_with_inputs
from affine_ir.traits import EffectKind, MemoryEffect, Pure
from transforms import PassManager
from transforms.loops.licm import hoist_invariants_in, hoist_loop_invariants

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
MLIR_CASES = Path(__file__).parent / "data" / "mlir_licm.mlir"


def parse(text: str):
    m = air.parse(text, allow_unregistered=True)
    return m, m.functions[0]


def loops(f) -> list[AffineForOp]:
    return [op for op in f.walk() if isinstance(op, AffineForOp)]


def body_names(loop) -> list[str]:
    return [op.name for op in loop.body.ops]


def test_pure_ops_and_loads_of_unwritten_memrefs_move():
    m, f = parse("""
    func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %x: f32, %j: index) {
      affine.for %i = 0 to 10 {
        %c = arith.constant 2.0 : f32
        %s = arith.mulf %c, %x : f32
        %v = affine.load %B[%j] : memref<10xf32>
        %t = arith.addf %s, %v : f32
        %w = affine.load %A[%i] : memref<10xf32>
        %u = arith.addf %t, %w : f32
        affine.store %u, %A[%i] : memref<10xf32>
      }
      return
    }""")
    (loop,) = loops(f)
    assert hoist_loop_invariants(loop) == 4
    assert body_names(loop) == ["affine.load", "arith.addf", "affine.store", "affine.yield"]
    air.verify(m)


def test_load_of_a_memref_written_in_the_loop_stays():
    m, f = parse("""
    func.func @f(%A: memref<10xf32>, %x: f32) {
      affine.for %i = 0 to 10 {
        %v = affine.load %A[0] : memref<10xf32>
        affine.store %x, %A[%i] : memref<10xf32>
      }
      return
    }""")
    (loop,) = loops(f)
    assert hoist_loop_invariants(loop) == 0


def test_ops_of_unknown_effect_block_memory_ops():
    m, f = parse("""
    func.func @f(%A: memref<10xf32>, %B: memref<10xf32>) {
      affine.for %i = 0 to 10 {
        %v = affine.load %A[0] : memref<10xf32>
        "test.opaque"() : () -> ()
        affine.store %v, %B[%i] : memref<10xf32>
      }
      return
    }""")
    assert hoist_invariants_in(f) == []


def test_ops_inside_a_variant_guard_stay_and_division_is_not_speculated():
    m, f = parse("""
    func.func @f(%A: memref<10xi32>, %x: i32, %y: i32) {
      %c2 = arith.constant 2 : i32
      affine.for %i = 0 to 10 {
        affine.if affine_set<(d0) : (d0 - 5 >= 0)>(%i) {
          %s = arith.addi %x, %y : i32
          affine.store %s, %A[%i] : memref<10xi32>
        }
        %q = arith.divsi %x, %y : i32
        %h = arith.divsi %x, %c2 : i32
        affine.store %q, %A[%i] : memref<10xi32>
        affine.store %h, %A[%i] : memref<10xi32>
      }
      return
    }""")
    (loop,) = loops(f)
    assert hoist_loop_invariants(loop) == 1  # only the division by the constant 2
    assert body_names(loop) == ["affine.if", "arith.divsi", "affine.store", "affine.store", "affine.yield"]


def test_division_by_minus_one_or_a_variable_stays_even_when_declared_pure():
    # divsi by -1 overflows for INT_MIN (not speculatable); floordivsi is Pure (a valid affine
    # symbol, as in MLIR) but declares that it traps on a zero divisor.
    m, f = parse("""
    func.func @f(%A: memref<10xi32>, %x: i32, %y: i32) {
      %m1 = arith.constant -1 : i32
      %c3 = arith.constant 3 : i32
      affine.for %i = 0 to %i_n {
        %a = arith.divsi %x, %m1 : i32
        %b = arith.floordivsi %x, %y : i32
        %c = arith.floordivsi %x, %c3 : i32
        %d = arith.remsi %x, %m1 : i32
        affine.store %a, %A[%i] : memref<10xi32>
        affine.store %b, %A[%i] : memref<10xi32>
        affine.store %c, %A[%i] : memref<10xi32>
        affine.store %d, %A[%i] : memref<10xi32>
      }
      return
    }""".replace("%i_n", "10"))
    (loop,) = loops(f)
    assert hoist_loop_invariants(loop) == 2  # floordivsi by 3 and remsi by -1 (never traps)
    assert body_names(loop)[:2] == ["arith.divsi", "arith.floordivsi"]


class _GenericOp(Operation):
    """A test op parsed from the generic form ``"test.x"(%a) : (f32) -> f32``."""

    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(operands, result_types, attributes, location=location)


class _TraitsOnlyPureOp(_GenericOp):
    """An op LICM has never heard of, declaring only ``Pure``."""

    name = "test.licm_pure"
    traits = frozenset({Pure})


class _TraitsOnlyLoadOp(_GenericOp):
    """An op LICM has never heard of, declaring only that it reads its memref operand."""

    name = "test.licm_read"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.READ, self.operands[0]),)


class _NoDeclarationsOp(_GenericOp):
    """An op that declares nothing: unknown effects."""

    name = "test.licm_unknown"


NEW_OPS = (_TraitsOnlyPureOp, _TraitsOnlyLoadOp, _NoDeclarationsOp)
for _cls in NEW_OPS:  # registered only while a test that uses them runs (other tests list the registry)
    OP_REGISTRY.pop(_cls.name)


@pytest.fixture
def new_ops():
    OP_REGISTRY.update({cls.name: cls for cls in NEW_OPS})
    yield
    for cls in NEW_OPS:
        OP_REGISTRY.pop(cls.name, None)


NEW_OPS_PROGRAM = """
func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %x: f32) {
  affine.for %i = 0 to 10 {
    %p = "test.licm_pure"(%x) : (f32) -> f32
    %r = "test.licm_read"(%A) : (memref<10xf32>) -> f32
    %v = affine.load %A[0] : memref<10xf32>
    %s = arith.addf %p, %v : f32
    %t = arith.addf %s, %r : f32
    affine.store %t, %B[%i] : memref<10xf32>
  }
  return
}"""


def test_a_new_op_is_hoisted_from_its_traits_alone(new_ops):
    m, f = parse(NEW_OPS_PROGRAM)
    (loop,) = loops(f)
    assert isinstance(loop.body.ops[0], _TraitsOnlyPureOp)
    assert hoist_loop_invariants(loop) == 5  # both new ops, the load and the two additions
    assert body_names(loop) == ["affine.store", "affine.yield"]


def test_a_new_op_of_unknown_effects_stays_and_keeps_loads_in(new_ops):
    text = NEW_OPS_PROGRAM.replace('    affine.store %t', '    "test.licm_unknown"() : () -> ()\n    affine.store %t')
    m, f = parse(text)
    (loop,) = loops(f)
    assert isinstance(loop.body.ops[5], _NoDeclarationsOp) and loop.body.ops[5].memory_effects() is None
    assert hoist_loop_invariants(loop) == 1  # the pure op only: no read moves past the unknown op
    assert body_names(loop) == ["test.licm_read", "affine.load", "arith.addf", "arith.addf", "test.licm_unknown",
                                "affine.store", "affine.yield"]


def test_an_invariant_parallel_nest_moves_as_a_whole():
    # affine.parallel has RecursiveMemoryEffects like affine.for and affine.if: its contents decide.
    text = """
    func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<8xf32>) {
      affine.for %i = 0 to 10 {
        affine.parallel (%k) = (0) to (8) {
          %v = affine.load %A[%k] : memref<10xf32>
          affine.store %v, %C[%k] : memref<8xf32>
        }
        %w = affine.load %A[%i] : memref<10xf32>
        affine.store %w, %B[%i] : memref<10xf32>
      }
      return
    }"""
    m, f = parse(text)
    (loop,) = loops(f)
    assert hoist_loop_invariants(loop) == 1
    assert body_names(loop) == ["affine.load", "affine.store", "affine.yield"]
    args = [np.arange(10, dtype=np.float32), np.zeros(10, np.float32), np.zeros(8, np.float32)]
    assert_equivalent(text, m, args)
    m, f = parse(text.replace("%w, %B[%i]", "%w, %A[%i]"))  # now the nest reads a memref written in the loop
    assert hoist_loop_invariants(loops(f)[0]) == 0


def test_loads_stay_in_loops_that_may_not_run_but_pure_ops_move():
    m, f = parse("""
    func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %N: index, %x: f32) {
      affine.for %i = 0 to %N {
        %v = affine.load %A[0] : memref<10xf32>
        %s = arith.addf %x, %x : f32
        %t = arith.addf %v, %s : f32
        affine.store %t, %B[%i] : memref<10xf32>
      }
      return
    }""")
    (loop,) = loops(f)
    assert hoist_loop_invariants(loop) == 1
    assert body_names(loop)[0] == "affine.load"


def test_loads_leave_tile_loops_that_always_run():
    # %i = %ii to min(%ii + 4, 10) runs at least once for each %ii of 0 to 10 step 4 (isl).
    m, f = parse("""
    func.func @f(%A: memref<10xf32>, %B: memref<10xf32>) {
      affine.for %ii = 0 to 10 step 4 {
        affine.for %i = affine_map<(d0) -> (d0)>(%ii) to min affine_map<(d0) -> (d0 + 4, 10)>(%ii) {
          %v = affine.load %A[%ii] : memref<10xf32>
          affine.store %v, %B[%i] : memref<10xf32>
        }
      }
      return
    }""")
    outer, inner = loops(f)
    assert [(lp, [op.name for op in ops]) for lp, ops in hoist_invariants_in(f)] == [(inner, ["affine.load"])]
    assert body_names(outer)[0] == "affine.load"


def test_always_runs_is_exact():
    import analysis

    m, f = parse("""
    func.func @f(%N: index) {
      affine.for %ii = 0 to 100 step 32 {
        affine.for %i = affine_map<(d0) -> (d0)>(%ii) to min affine_map<(d0) -> (d0 + 32, 100)>(%ii) {
          affine.for %j = 0 to %N {
            affine.for %k = affine_map<(d0) -> (d0)>(%j) to 5 {
            }
          }
          affine.for %l = affine_map<(d0) -> (d0)>(%i) to 100 {
          }
        }
      }
      return
    }""")
    runs = {lp.induction_var.name_hint: analysis.always_runs(lp) for lp in loops(f)}
    assert runs == {"ii": True, "i": True, "j": False, "k": False, "l": True}


def test_ops_climb_out_of_several_loops_and_whole_invariant_loops_move():
    m, f = parse("""
    func.func @f(%m: memref<10xindex>, %o: memref<20x30xindex>) {
      affine.for %a = 0 to 20 {
        affine.for %b = 0 to 30 {
          %c = arith.constant 3 : index
          %r = affine.for %k = 0 to 10 iter_args(%acc = %c) -> index {
            %v = affine.load %m[%k] : memref<10xindex>
            %n = arith.addi %acc, %v : index
            affine.yield %n : index
          }
          affine.store %r, %o[%a, %b] : memref<20x30xindex>
        }
      }
      return
    }""")
    before = m.clone()
    moved = hoist_invariants_in(f)
    assert sum(len(ops) for _, ops in moved) == 4  # %c and the %k loop out of %b, then out of %a
    top = [op.name for op in f.body.ops]
    assert top[:3] == ["arith.constant", "affine.for", "affine.for"]
    import numpy as np
    assert_equivalent(before, m, [np.arange(10, dtype=np.int64), np.zeros((20, 30), np.int64)])


def test_pass_records_what_moved():
    m, f = parse("""
    func.func @f(%A: memref<10xf32>, %x: f32) {
      affine.for %i = 0 to 10 {
        %s = arith.addf %x, %x : f32
        affine.store %s, %A[%i] : memref<10xf32>
      }
      return
    }""")
    pm = PassManager.parse("affine-loop-invariant-code-motion")
    pm.run(m)
    assert [d.message for d in pm.trace.decisions] == ["hoisted 1 loop-invariant op (0 memory accesses) out of (%i)"]


# ----- MLIR parity --------------------------------------------------------------------------------------
def _chunks() -> list[str]:
    return [c for c in MLIR_CASES.read_text().split("// -----") if "func.func" in c]


def _skeleton(text: str) -> list[str]:
    text = re.sub(r"%[\w#]+", "%v", text)
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def _ours(chunk: str) -> str:
    return str(PassManager.parse("affine-loop-invariant-code-motion").run(air.parse(chunk)))


def test_mlir_inputs_reach_a_fixpoint():
    for chunk in _chunks():
        once = _ours(chunk)
        assert _ours(once) == once


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="needs iree-opt (MLIR) on PATH")
def test_mlir_parity():
    chunks = _chunks()
    out = subprocess.run(["iree-opt", "--affine-loop-invariant-code-motion", "--split-input-file", "-"],
                         input="\n// -----\n".join(chunks), capture_output=True, text=True, check=True).stdout
    theirs = out.split("// -----")
    assert len(theirs) == len(chunks) >= 20
    for chunk, their in zip(chunks, theirs):
        name = re.search(r"func\.func @(\w+)", chunk).group(1)
        ours = _ours(chunk)
        assert _skeleton(their) == _skeleton(ours), f"{name}:\n{their}\n{ours}"


# ----- random programs ---------------------------------------------------------------------------------
def _check(case, stats: Counter) -> None:
    m, args = case
    pm = PassManager.parse("affine-loop-invariant-code-motion", capture_ir=False)
    out = pm.run(m)
    text = str(out)
    assert str(air.parse(text)) == text
    assert_equivalent(m, out, args)
    moved = [re.match(r"hoisted (\d+) .*\((\d+) memory", d.message).groups()
             for d in pm.trace.decisions if d.kind == "applied"]
    stats["programs"] += 1
    stats["changed"] += bool(moved)
    stats["hoisted"] += sum(int(n) for n, _ in moved)
    stats["memory"] += sum(int(k) for _, k in moved)


def test_random_programs_preserve_semantics_and_hoist():
    stats: Counter = Counter()

    @settings(max_examples=110, **FAST)
    @given(programs_with_inputs())
    def check(case):
        _check(case, stats)

    check()
    assert stats["changed"] >= 0.5 * stats["programs"], stats
    assert stats["hoisted"] >= 5 * stats["programs"], stats
    assert stats["memory"] >= 0.25 * stats["programs"], stats


def test_random_programs_with_constant_bounds_hoist_memory_ops():
    stats: Counter = Counter()

    @settings(max_examples=100, **FAST)
    @given(programs_with_inputs(allow_symbols=False, max_memrefs=3))
    def check(case):
        _check(case, stats)

    check()
    assert stats["changed"] >= 0.5 * stats["programs"], stats
    assert stats["memory"] >= 0.3 * stats["programs"], stats
