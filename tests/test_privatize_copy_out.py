"""Privatization with a last-value copy-out (``affine-privatize`` on buffers used after their
loop: function arguments such as PolyBench doitgen's ``sum``, buffers read afterwards):
``analysis.copy_out_scope`` accepts exactly when each iteration writes what it reads and the
last iteration writes every element the others write; the loops become parallel and the
buffer ends with the contents it had (checked on the interpreter, on random programs too)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
import analysis
from affine_ir.dialects.affine import AffineForOp, AffineIfOp
from affine_ir.testing import assert_equivalent, fusion_programs_with_inputs, run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from affine_ir.testing.strategies import inputs_from_bytes
from transforms import PassManager
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import map_to_gpu, run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import polybench  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}

ARGS = "%A: memref<8x4xf32>, %B: memref<8x4xf32>, %t: memref<6xf32>"
REUSED = """
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<8x4xf32>
      affine.store %a, %t[%j] : memref<6xf32>
    }
    affine.for %j = 0 to 4 {
      %a = affine.load %t[3 - %j] : memref<6xf32>
      affine.store %a, %B[%i, %j] : memref<8x4xf32>
    }
  }"""


def _program(body: str, args: str = ARGS) -> air.ModuleOp:
    return air.parse(f"func.func @f({args}) {{\n{body}\n  return\n}}")


def _inputs(m, seed: int = 0) -> list:
    return inputs_from_bytes(m, bytes([seed, 7, 1, 3] + [seed] * 60))


def _outer(m) -> AffineForOp:
    return next(op for op in m.functions[0].body.ops if isinstance(op, AffineForOp))


def _scope(m, k: int = 2):
    f = m.functions[0]
    return analysis.copy_out_scope(f.args[k], analysis.DependenceAnalysis(f))


def test_an_argument_reused_by_every_iteration_is_privatized_and_ends_with_the_last_values():
    m = _program(REUSED)
    assert not analysis.is_parallel(_outer(m))
    scope = _scope(m)
    assert isinstance(scope, analysis.CopyOutScope) and scope.loop is _outer(m) and scope.depth == 1
    pm = PassManager.parse("affine-privatize")
    out = pm.run(m)
    loop = _outer(out)
    assert analysis.is_parallel(loop)
    guard = next(op for op in loop.body.ops if isinstance(op, AffineIfOp))
    assert "memref.alloc() : memref<6xf32>" in str(guard.else_block.ops[0])  # one buffer per iteration
    assert "%t[" in str(guard.then_block.ops[0]) or any("%t[" in str(op) for op in guard.then_block.ops)
    assert any("one buffer (%t_private) per iteration of (%i) but the last" in d.message
               for d in pm.trace.decisions if d.kind == "applied")
    for seed in range(3):  # %t's final contents included (assert_equivalent compares every memref argument)
        assert_equivalent(m, out, _inputs(m, seed))


def test_a_local_buffer_read_after_the_loop_is_privatized_with_the_copy_out():
    body = ("  %t = memref.alloc() : memref<6xf32>\n" + REUSED +
            "\n  %z = affine.load %t[0] : memref<6xf32>\n  affine.store %z, %B[0, 0] : memref<8x4xf32>")
    m = _program(body, "%A: memref<8x4xf32>, %B: memref<8x4xf32>")
    out = run_pipeline("affine-privatize", m)
    assert analysis.is_parallel(_outer(out))
    assert_equivalent(m, out, _inputs(m, 1))


@pytest.mark.parametrize("change, why", [
    # iteration 0 alone writes t[4]: the last iteration does not write every element the others write
    (("      affine.store %a, %t[%j] : memref<6xf32>\n",
      "      affine.store %a, %t[%j] : memref<6xf32>\n      affine.if affine_set<(d0) : (-d0 >= 0)>(%i) {\n"
      "        affine.store %a, %t[4] : memref<6xf32>\n      }\n"), "does not write every element"),
    # the reads run past what the iteration wrote (t[4] from before the loop)
    (("%t[3 - %j]", "%t[4 - %j]"), "did not write first"),
])
def test_the_copy_out_is_refused_with_the_reason_and_the_program_is_unchanged(change, why):
    m = _program(REUSED.replace(*change))
    reason = _scope(m)
    assert isinstance(reason, str) and why in reason, reason
    pm = PassManager.parse("affine-privatize")
    out = pm.run(m)
    assert str(out) == str(m)
    assert any(why in d.message for d in pm.trace.decisions if d.kind == "note")


def test_a_buffer_no_loop_carries_a_dependence_on_is_left_alone():
    m = _program("""
  affine.for %i = 0 to 6 {
    %a = affine.load %A[%i, 0] : memref<8x4xf32>
    affine.store %a, %t[%i] : memref<6xf32>
  }""")
    assert _scope(m) is None
    assert str(run_pipeline("affine-privatize", m)) == str(m)


def test_doitgen_sum_is_privatized_so_r_and_q_are_parallel_and_it_keeps_its_final_contents():
    k = polybench.KERNELS["doitgen"]
    m = k.module()
    r = _outer(m)
    assert not analysis.is_parallel(r)
    out = run_pipeline("affine-privatize{dynamic-shapes=false}", m)
    r = _outer(out)
    q = r.body.ops[0]
    assert analysis.is_parallel(r) and analysis.is_parallel(q)
    assert "%sum_private = memref.alloc(" in str(out)  # dynamic: one buffer expanded by (r, q)
    args = k.arguments("MINI", exact=True)
    want, got = run(m, args), run(out, args)
    for w, g in zip(want, got):  # A and sum (and the inputs) exactly
        assert np.array_equal(w, g)
    # Through the GPU pipeline: one launch, no loop of launches on the host, both thread orders exact.
    gpu, _ = map_to_gpu(m, GPU_PIPELINE)
    host_loops = [op for op in gpu.functions[0].body.ops if isinstance(op, AffineForOp)]
    assert str(gpu).count("gpu.launch") == 1 and not host_loops
    assert_same_bits_in_both_thread_orders(want, gpu, args, "doitgen")


@st.composite
def reused_buffer_programs(draw):
    """Loops over %i (and %k) whose body stores a window of %t (an argument), maybe only in some
    iterations, then reads a window of it: accepted or refused depending on the windows."""
    w0, w1 = draw(st.integers(0, 2)), draw(st.integers(1, 4))
    r0, r1 = draw(st.integers(w0, w0 + 2)), draw(st.integers(1, 3))
    shift = draw(st.sampled_from(["", "", "", " + 1", " * 2"]))
    cond = draw(st.sampled_from(["", "", "affine_set<(d0) : (d0 - 1 >= 0)>", "affine_set<(d0) : (-d0 + 5 >= 0)>"]))
    two = draw(st.booleans())
    store = f"affine.store %a, %t[%j{shift}] : memref<12xf32>"
    if cond:
        store = f"affine.if {cond}(%i) {{\n        {store}\n      }}"
    inner = f"""
    affine.for %j = {w0} to {w0 + w1} {{
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      {store}
    }}
    affine.for %j = {r0} to {r0 + r1} {{
      %b = affine.load %t[%j] : memref<12xf32>
      %c = affine.load %B[%i, %j] : memref<8x8xf32>
      %d = arith.addf %b, %c : f32
      affine.store %d, %B[%i, %j] : memref<8x8xf32>
    }}"""
    if two:
        inner = f"\n    affine.for %k = 0 to 3 {{{inner}\n    }}"
    body = f"  affine.for %i = 0 to 7 {{{inner}\n  }}"
    return _program(body, "%A: memref<8x8xf32>, %B: memref<8x8xf32>, %t: memref<12xf32>")


def test_random_reused_buffers_keep_their_meaning_and_the_accepted_ones_become_parallel():
    stats: Counter = Counter()

    @settings(max_examples=120, **FAST)
    @given(reused_buffer_programs(), st.integers(0, 255))
    def check(m, seed):
        pm = PassManager.parse("affine-privatize")
        out = pm.run(m)
        applied = any(d.kind == "applied" for d in pm.trace.decisions)
        if applied:
            assert analysis.is_parallel(_outer(out)), out
        else:
            assert str(out) == str(m)
        assert_equivalent(m, out, _inputs(m, seed))
        stats["programs"] += 1
        stats["applied"] += applied

    check()
    assert stats["programs"] == 120 and 10 <= stats["applied"] <= 110, stats


def test_random_fused_programs_keep_their_meaning_and_buffers_through_the_copy_out():
    stats: Counter = Counter()

    @settings(max_examples=100, **FAST)
    @given(fusion_programs_with_inputs())
    def check(case):
        module, args = case
        fused = run_pipeline("affine-loop-fusion", module)
        pm = PassManager.parse("affine-privatize{dynamic-shapes=false}")
        out = pm.run(fused)
        assert_equivalent(module, out, args)
        stats["programs"] += 1
        stats["copy-out"] += any(d.kind == "applied" and "but the last" in d.message for d in pm.trace.decisions)

    check()
    assert stats["programs"] == 100, stats
