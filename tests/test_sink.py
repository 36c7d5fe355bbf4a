"""``affine-loop-sink``: ops that LICM put between two parallel loops go back into the inner loop,
so ``gpu-map`` maps the whole band; refused where a move could change a read or the inner loop is
sequential; random programs keep their meaning."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.testing import assert_equivalent, programs_with_inputs, run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms import PassManager
from transforms.loop_utils import top_level_loops
from transforms.loops.sink import sink_into_using_loops
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import map_to_gpu

FAST = {"deadline": None, "suppress_health_check": list(HealthCheck)}

ROW_TERMS = """func.func @f(%n: index, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?xf32>) {
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %a = affine.load %A[%i, %j] : memref<?x?xf32>
      %c = arith.index_cast %i : index to i32
      %f = arith.sitofp %c : i32 to f32
      %g = affine.load %C[%i] : memref<?xf32>
      %s = arith.addf %a, %f : f32
      %t = arith.addf %s, %g : f32
      affine.store %t, %B[%i, %j] : memref<?x?xf32>
    }
  }
  return
}"""


def _args(n):
    rng = np.random.default_rng(n)
    return [n, rng.integers(-9, 9, (n, n)).astype(np.float32), np.zeros((n, n), np.float32),
            rng.integers(-9, 9, n).astype(np.float32)]


def _inner_body_names(m):
    (outer,) = top_level_loops(m.functions[0])
    return [op.name for op in outer.body.ops]


def test_licm_output_sinks_back_and_the_gpu_maps_both_loops():
    m = air.parse(ROW_TERMS)
    hoisted = PassManager.parse("affine-loop-invariant-code-motion").run(m)
    assert _inner_body_names(hoisted)[:3] == ["arith.index_cast", "arith.sitofp", "affine.load"]
    pm = PassManager.parse("affine-loop-sink")
    sunk = pm.run(hoisted)
    assert _inner_body_names(sunk) == ["affine.for", "affine.yield"]
    assert [d.message for d in pm.trace.decisions] == ["sank 3 ops used only in %j into it"]
    for n in (1, 5, 9):
        assert_equivalent(m, sunk, _args(n))
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    assert any(d.message.startswith("mapped (%i, %j) to (y, x)") for d in decisions), [d.message for d in decisions]
    (launch,) = [op for op in out.functions[0].body.ops if isinstance(op, LaunchOp)]
    for n in (1, 7, 40):
        assert_same_bits_in_both_thread_orders(run(m, _args(n)), out, _args(n), f"n={n}")


def test_a_read_of_what_the_inner_loop_writes_stays():
    m = air.parse("""func.func @f(%n: index, %A: memref<?x?xf32>) {
  affine.for %i = 0 to %n {
    %g = affine.load %A[%i, 0] : memref<?x?xf32>
    affine.for %j = 0 to %n {
      %t = arith.addf %g, %g : f32
      affine.store %t, %A[%i, %j] : memref<?x?xf32>
    }
  }
  return
}""")
    text = str(m)
    assert str(PassManager.parse("affine-loop-sink").run(m)) == text


def test_a_sequential_inner_loop_or_a_use_after_it_keeps_the_ops_outside():
    sequential = air.parse("""func.func @f(%n: index, %A: memref<?x?xf32>, %C: memref<?xf32>) {
  affine.for %i = 0 to %n {
    %g = affine.load %C[%i] : memref<?xf32>
    affine.for %j = 1 to %n {
      %p = affine.load %A[%i, %j - 1] : memref<?x?xf32>
      %t = arith.addf %g, %p : f32
      affine.store %t, %A[%i, %j] : memref<?x?xf32>
    }
  }
  return
}""")
    pm = PassManager.parse("affine-loop-sink")
    assert str(pm.run(sequential)) == str(sequential) and not pm.trace.decisions
    used_after = air.parse("""func.func @f(%n: index, %A: memref<?x?xf32>, %C: memref<?xf32>) {
  affine.for %i = 0 to %n {
    %g = affine.load %C[%i] : memref<?xf32>
    affine.for %j = 0 to %n {
      affine.store %g, %A[%i, %j] : memref<?x?xf32>
    }
    affine.store %g, %C[%i] : memref<?xf32>
  }
  return
}""")
    assert str(PassManager.parse("affine-loop-sink").run(used_after)) == str(used_after)


def test_random_programs_keep_their_meaning_after_licm_and_sinking():
    """The pass on LICM's output, and the move itself into any loop (legal without the parallelism
    check, which only decides where it pays) in every block."""
    stats: Counter = Counter()

    @settings(max_examples=150, **FAST)
    @given(programs_with_inputs())
    def check(case):
        module, args = case
        pm = PassManager.parse("affine-loop-invariant-code-motion,affine-loop-sink")
        out = pm.run(module)
        assert_equivalent(module, out, args)
        assert str(air.parse(str(out))) == str(out)
        stats["pass"] += any(d.pass_name == "affine-loop-sink" for d in pm.trace.decisions)
        blocks = [out.functions[0].body] + [op.body for op in out.walk() if isinstance(op, AffineForOp)]
        moved = sum(len(sink_into_using_loops(block)) for block in blocks)
        if moved:
            stats["moved"] += 1
            assert_equivalent(module, out, args)
            assert str(air.parse(str(out))) == str(out)
        stats["programs"] += 1

    check()
    assert stats["programs"] == 150
    assert stats["moved"] >= 10 and stats["pass"] >= 1, stats


TIME_LOOP = """func.func @f(%T: index, %n: index, %fict: memref<?xf32>, %A: memref<?x?xf32>) {
  affine.for %t = 0 to %T {
    %f = affine.load %fict[%t] : memref<?xf32>
    %g = arith.addf %f, %f : f32
    affine.for %j = 0 to %n {
      affine.store %g, %A[0, %j] : memref<?x?xf32>
    }
    affine.for %i = 1 to %n {
      affine.for %j = 0 to %n {
        %a = affine.load %A[%i - 1, %j] : memref<?x?xf32>
        %b = arith.addf %a, %f : f32
        affine.store %b, %A[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}"""


def test_a_load_used_by_one_parallel_loop_of_a_time_step_moves_into_it():
    """%g is used only by the first sweep: it and its chain (the load is also used by the second
    sweep, so the load stays) move; the time loop's body then holds device values only where a
    second user needs them."""
    m = air.parse(TIME_LOOP)
    pm = PassManager.parse("affine-loop-sink")
    out = pm.run(m)
    (t,) = top_level_loops(out.functions[0])
    names = [op.name for op in t.body.ops]
    assert names == ["affine.load", "affine.for", "affine.for", "affine.yield"], names
    first = [op for op in t.body.ops if isinstance(op, AffineForOp)][0]
    assert [op.name for op in first.body.ops][:1] == ["arith.addf"]
    assert any(d.message == "sank 1 op used only in %j into it" for d in pm.trace.decisions)
    args = [3, 4, np.arange(3, dtype=np.float32), np.zeros((4, 4), np.float32)]
    assert_equivalent(m, out, args)
    # A read of what an op between writes stays: %A[0, 0] is written by the first sweep.
    stays = air.parse(TIME_LOOP.replace("%f = affine.load %fict[%t] : memref<?xf32>",
                                        "%f = affine.load %A[0, 0] : memref<?x?xf32>"))
    assert str(PassManager.parse("affine-loop-sink").run(stays)).count("affine.load %A[0, 0]") == 1
    (t2,) = top_level_loops(stays.functions[0])
    assert [op.name for op in t2.body.ops][0] == "affine.load"
