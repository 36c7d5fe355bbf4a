"""An op class added later, with only its traits and effects declared, is treated right by the
passes and analyses that never heard of it: DCE, CSE, LICM, dependence analysis, canonicalize's
folders (issue 16).

The ops are defined here (not in any dialect) and written in the generic form.
"""

from __future__ import annotations

import pytest

import affine_ir as air
import analysis
from affine_ir.core import OP_REGISTRY, Operation
from affine_ir.dialects.affine import AffineForOp
from affine_ir.traits import Arithmetic, Commutative, EffectKind, MemoryEffect, Pure
from transforms import PassManager


def _generic(cls, operands, result_types, attributes, location):
    return cls(list(operands), list(result_types), location=location)  # the parser adds the attributes


class PureMaxOp(Operation):
    """Pure and commutative: erased when unused, merged with its twin, hoisted out of loops."""

    name = "test.pure_max"
    traits = frozenset({Pure, Commutative})
    from_generic = classmethod(_generic)


class PeekOp(Operation):
    """Reads its memref operand and does nothing else."""

    name = "test.peek"
    from_generic = classmethod(_generic)

    def memory_effects(self):
        return (MemoryEffect(EffectKind.READ, self.operands[0]),)


class ArithMaxOp(Operation):
    """An arithmetic computation (pure, commutative) that declares no exact fold."""

    name = "test.arith_max"
    traits = frozenset({Pure, Commutative, Arithmetic})
    from_generic = classmethod(_generic)


class MysteryOp(Operation):
    """Declares nothing: its effects are unknown."""

    name = "test.mystery"
    from_generic = classmethod(_generic)


NEW_OPS = (PureMaxOp, PeekOp, MysteryOp, ArithMaxOp)


@pytest.fixture(autouse=True)
def _registered_only_here():
    """The ops are known to the parser during each test only."""
    for cls in NEW_OPS:
        OP_REGISTRY[cls.name] = cls
    yield
    for cls in NEW_OPS:
        OP_REGISTRY.pop(cls.name, None)


def run(pipeline: str, text: str) -> str:
    return str(PassManager.parse(pipeline).run(air.parse(text)))


def test_dce_erases_unused_pure_and_read_only_ops_and_keeps_unknown_ones():
    out = run("dce", """
func.func @f(%a: f32, %b: f32, %A: memref<8xf32>) {
  %0 = "test.pure_max"(%a, %b) : (f32, f32) -> f32
  %1 = "test.peek"(%A) : (memref<8xf32>) -> f32
  %2 = "test.mystery"(%A) : (memref<8xf32>) -> f32
  return
}""")
    assert "test.pure_max" not in out and "test.peek" not in out and "test.mystery" in out


def test_cse_merges_commutative_twins_but_not_reads_or_unknown_ops():
    out = run("cse", """
func.func @f(%a: f32, %b: f32, %A: memref<8xf32>) -> (f32, f32, f32, f32, f32, f32) {
  %0 = "test.pure_max"(%a, %b) : (f32, f32) -> f32
  %1 = "test.pure_max"(%b, %a) : (f32, f32) -> f32
  %2 = "test.mystery"(%A) : (memref<8xf32>) -> f32
  %3 = "test.mystery"(%A) : (memref<8xf32>) -> f32
  %4 = "test.peek"(%A) : (memref<8xf32>) -> f32
  %5 = "test.peek"(%A) : (memref<8xf32>) -> f32
  return %0, %1, %2, %3, %4, %5 : f32, f32, f32, f32, f32, f32
}""")
    assert out.count("test.pure_max") == 1 and out.count("test.mystery") == 2 and out.count("test.peek") == 2


LOOP = """
func.func @f(%a: f32, %b: f32, %A: memref<8xf32>, %B: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %m = "test.pure_max"(%a, %b) : (f32, f32) -> f32
    %x = affine.load %A[%i] : memref<8xf32>
    %s = arith.addf %x, %m : f32
    BODY
    affine.store %s, %B[%i] : memref<8xf32>
  }
  return
}"""


def _top_level_names(text: str) -> list[str]:
    func = air.parse(text).body.ops[0]
    return [op.name for op in func.body.ops]


def test_licm_hoists_a_pure_op_and_nothing_past_an_unknown_one():
    hoisted = run("affine-loop-invariant-code-motion", LOOP.replace("BODY", ""))
    assert _top_level_names(hoisted)[0] == "test.pure_max"
    text = LOOP.replace("BODY", '"test.mystery"(%B) : (memref<8xf32>) -> ()').replace("%A[%i]", "%A[0]")
    kept = run("affine-loop-invariant-code-motion", text)
    loop = next(op for op in air.parse(kept).walk() if isinstance(op, AffineForOp))
    inside = [op.name for op in loop.body.ops]
    assert "test.mystery" in inside and "affine.load" in inside  # the load of %A[0] is not hoisted past it


def test_dependence_analysis_sees_unknown_effects_and_declared_reads():
    pure = air.parse(LOOP.replace("BODY", ""))
    unknown = air.parse(LOOP.replace("BODY", '"test.mystery"(%B) : (memref<8xf32>) -> ()'))
    peek = air.parse(LOOP.replace("BODY", '%p = "test.peek"(%B) : (memref<8xf32>) -> f32'))
    loops = [next(op for op in m.walk() if isinstance(op, AffineForOp)) for m in (pure, unknown, peek)]
    assert analysis.is_parallel(loops[0])
    assert not analysis.is_parallel(loops[1])  # an op of unknown effect may carry anything
    assert not analysis.is_parallel(loops[2])  # it reads all of %B, which every iteration writes


def test_canonicalize_folds_a_new_arithmetic_op_by_its_traits_only():
    """The arith/math folder is registered for the Arithmetic trait: the new commutative op gets its
    constant operand moved to the right; it declares no ExactFold, so it is not folded to a constant."""
    out = run("canonicalize", """
func.func @f(%a: f32) -> (f32, f32) {
  %c = arith.constant 2.0 : f32
  %d = arith.constant 3.0 : f32
  %0 = "test.arith_max"(%c, %a) : (f32, f32) -> f32
  %1 = "test.arith_max"(%c, %d) : (f32, f32) -> f32
  return %0, %1 : f32, f32
}""")
    assert '%0 = "test.arith_max"(%a, %c)' in out  # was (%c, %a)
    assert '%1 = "test.arith_max"(%c, %d)' in out  # both constant: left as it is
