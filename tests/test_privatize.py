"""Privatization: buffers allocated in a loop body are one per iteration for the dependence
analysis, ``analysis.private_scope`` finds the loop a buffer is private to (exact: every read
covered by a store of the same iteration), and ``affine-privatize`` moves the allocation there,
keeping the program's meaning (examples and random fused programs) and making fused softmax
and attention rows parallel."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
import analysis
from affine_ir import library as L
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.memref import AllocOp
from affine_ir.testing import assert_equivalent, fusion_programs_with_inputs
from affine_ir.testing.strategies import inputs_from_bytes
from transforms import PassManager
from transforms.testing import assert_preserves_semantics, run_pipeline

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")


def inputs(m, seed: int = 0) -> list:
    return inputs_from_bytes(m, bytes([seed, 7, 1, 3] + [seed] * 60))


FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _program(body: str, args: str = "%A: memref<8x4xf32>, %B: memref<8x4xf32>") -> air.ModuleOp:
    return air.parse(f"func.func @f({args}) {{\n{body}\n  return\n}}")


ROW = """
  %t = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<8x4xf32>
      affine.store %a, %t[%j] : memref<4xf32>
    }
    affine.for %j = 0 to 4 {
      %a = affine.load %t[3 - %j] : memref<4xf32>
      affine.store %a, %B[%i, %j] : memref<8x4xf32>
    }
  }
  memref.dealloc %t : memref<4xf32>"""


def _alloc(m) -> AllocOp:
    return next(op for op in m.functions[0].walk() if isinstance(op, AllocOp))


def _outer_loop(m) -> AffineForOp:
    return next(op for op in m.functions[0].body.ops if isinstance(op, AffineForOp))


def test_a_buffer_allocated_in_a_loop_body_carries_no_dependence_across_its_iterations():
    m = run_pipeline("affine-privatize", _program(ROW))
    loop = _outer_loop(m)
    assert _alloc(m).parent is loop.body
    assert analysis.is_parallel(loop)
    deps = [d for d in analysis.dependences(m.functions[0]) if d.memref is _alloc(m).results[0]]
    assert deps and not any(d.carried_at(1) for d in deps)
    # The same accesses on a buffer allocated outside: carried by %i.
    before = _program(ROW)
    decision = analysis.parallel_decision(_outer_loop(before))
    assert not decision.parallel and "%t" in decision.reason and "carried by %i" in decision.reason


def test_private_scope_finds_the_innermost_loop_whose_iterations_write_before_reading():
    m = _program(ROW)
    scope = analysis.private_scope(_alloc(m).results[0])
    assert scope is not None and scope.loop is _outer_loop(m) and scope.depth == 1


@pytest.mark.parametrize("body, why", [
    # the read at j = 3 sees the store of the previous iteration of %i
    (ROW.replace("affine.for %j = 0 to 4 {\n      %a = affine.load %A", "affine.for %j = 0 to 3 {\n      %a = "
                                                                          "affine.load %A", 1), "partly covered"),
    # read before written in each iteration (a value flows from the previous one)
    ("""
  %t = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      %a = affine.load %t[%j] : memref<4xf32>
      affine.store %a, %B[%i, %j] : memref<8x4xf32>
      %b = affine.load %A[%i, %j] : memref<8x4xf32>
      affine.store %b, %t[%j] : memref<4xf32>
    }
  }""", "read first"),
    # the store is conditional: iteration 0 of %i writes nothing
    (ROW.replace("      %a = affine.load %A[%i, %j] : memref<8x4xf32>\n      affine.store %a, %t[%j] : memref<4xf32>",
                 "      affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {\n        %a = affine.load %A[%i, %j] : "
                 "memref<8x4xf32>\n        affine.store %a, %t[%j] : memref<4xf32>\n      }"), "conditional store"),
    # the buffer escapes into a call
    (ROW.replace("  memref.dealloc", "  func.call @g(%t) : (memref<4xf32>) -> ()\n  memref.dealloc"), "call"),
])
def test_private_scope_refuses_buffers_whose_values_cross_iterations(body, why):
    text = f"func.func @f(%A: memref<8x4xf32>, %B: memref<8x4xf32>) {{\n{body}\n  return\n}}"
    if "func.call" in body:
        text += "\nfunc.func private @g(memref<4xf32>)"
    m = air.parse(text)
    assert analysis.private_scope(_alloc(m).results[0]) is None, why
    assert not isinstance(analysis.copy_out_scope(_alloc(m).results[0], analysis.DependenceAnalysis(m.functions[0])),
                          analysis.CopyOutScope), why
    out = run_pipeline("affine-privatize", m)
    assert str(out) == str(m), why
    assert_equivalent(m, out, inputs(m, seed=1)) if "func.call" not in body else None


def test_an_inner_loop_is_chosen_when_it_is_private_there_and_the_outer_stays_shared_otherwise():
    text = """
  %t = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 8 {
    affine.for %k = 0 to 2 {
      affine.for %j = 0 to 4 {
        %a = affine.load %A[%i, %j] : memref<8x4xf32>
        affine.store %a, %t[%j] : memref<4xf32>
      }
      affine.for %j = 0 to 4 {
        %a = affine.load %t[%j] : memref<4xf32>
        %b = affine.load %B[%i, %j] : memref<8x4xf32>
        %c = arith.addf %a, %b : f32
        affine.store %c, %B[%i, %j] : memref<8x4xf32>
      }
    }
  }"""
    m = _program(text)
    scope = analysis.private_scope(_alloc(m).results[0])
    inner = _outer_loop(m).body.ops[0]
    assert scope.loop is inner and scope.depth == 2
    out = assert_preserves_semantics("affine-privatize", m, inputs(m, seed=2))
    assert _alloc(out).parent is _outer_loop(out).body.ops[0].body


def test_the_pass_moves_the_dealloc_and_keeps_the_meaning():
    m = _program(ROW)
    pm = PassManager.parse("affine-privatize")
    out = pm.run(m)
    loop = _outer_loop(out)
    names = [op.name for op in loop.body.ops]
    assert names[0] == "memref.alloc" and names[-2:] == ["memref.dealloc", "affine.yield"]
    assert "memref.dealloc" not in [op.name for op in out.functions[0].body.ops]
    assert any("one buffer per iteration of (%i)" in d.message for d in pm.trace.decisions if d.kind == "applied")
    assert_equivalent(m, out, inputs(m, seed=0))


FUSE = "canonicalize,affine-loop-fusion,affine-privatize,affine-scalrep,canonicalize"


@pytest.mark.parametrize("build, rows", [
    (lambda: L.softmax((9, 20)), 1),
    (lambda: L.attention(1, 2, 8, 4), 2),
    (lambda: L.attention(2, 2, 6, 4, causal=True), 3),
    (lambda: L.layernorm(5, 12), 1),
])
def test_fused_rows_become_parallel(build, rows):
    m = build()
    out = assert_preserves_semantics(FUSE, m, inputs(m, seed=3))
    nests = [op for op in out.functions[0].body.ops if isinstance(op, AffineForOp)]
    assert len(nests) == 1, out
    loop = nests[0]
    for _ in range(rows):
        assert analysis.is_parallel(loop), (loop, out)
        loop = next(op for op in loop.body.ops if isinstance(op, AffineForOp))
    without = run_pipeline(FUSE.replace("affine-privatize,", ""), m)
    outer = next(op for op in without.functions[0].body.ops if isinstance(op, AffineForOp))
    if "_private" in str(without):
        assert not analysis.is_parallel(outer)


def test_random_fused_programs_keep_their_meaning_through_privatization():
    stats: Counter = Counter()

    @settings(max_examples=150, **FAST)
    @given(fusion_programs_with_inputs())
    def check(case):
        module, args = case
        fused = run_pipeline("affine-loop-fusion", module)
        pm = PassManager.parse("affine-privatize")
        out = pm.run(fused)
        assert_equivalent(module, out, args)
        stats["programs"] += 1
        stats["moved"] += any(d.kind == "applied" for d in pm.trace.decisions)

    check()
    assert stats["programs"] == 150
    assert stats["moved"] >= 10, stats
