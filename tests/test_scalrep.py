"""``affine-scalrep`` (transforms/memory/scalrep.py): forwarding, redundant loads, dead stores, reductions.

Unit tests on small programs, MLIR parity on the inputs of MLIR's ``scalrep.mlir``
(through ``iree-opt`` when it is installed), refusals of :func:`promote_reduction`, the
library matmul with its reduction in ``iter_args``, and property tests on random programs
(semantics preserved exactly, and the pass must actually apply on a good share of them).

Where ours differs from MLIR (checked in ``test_mlir_parity``): ``@reduction_multi_store``
gets its reduction promoted into ``iter_args`` (MLIR only forwards the store to the later
load), and the initial store then forwards into the promoted load and dies.
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
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp
from affine_ir.testing import assert_equivalent, programs_with_inputs
from transforms import PassManager, get_pass
from transforms.memory.scalrep import (
    eliminate_dead_stores,
    eliminate_redundant_loads,
    forward_stores,
    promote_reduction,
    promote_reductions_to_iter_args,
    remove_dead_allocs,
    replace_scalars,
    same_element,
)
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
MLIR_CASES = Path(__file__).parent / "data" / "mlir_scalrep.mlir"


def func_of(text: str):
    m = air.parse(text, allow_unregistered=True)
    return m, m.functions[0]


def ops(f, cls):
    return [op for op in f.walk() if type(op) is cls]


# ----- forwarding ----------------------------------------------------------------------------------
def test_forward_store_to_load_in_loop():
    m, f = func_of("""
    func.func @f(%A: memref<10xf32>, %x: f32) {
      affine.for %i = 0 to 10 {
        affine.store %x, %A[%i] : memref<10xf32>
        %v = affine.load %A[%i] : memref<10xf32>
        %s = arith.addf %v, %v : f32
        affine.store %s, %A[%i] : memref<10xf32>
      }
      return
    }""")
    assert forward_stores(f) == 1
    assert not ops(f, AffineLoadOp)
    assert "arith.addf %x, %x" in str(m)


def test_forward_through_affine_apply_and_into_nested_loop():
    m, f = func_of("""
    func.func @f(%A: memref<12xf32>, %x: f32, %N: index) {
      affine.for %i = 0 to 10 {
        %t = affine.apply affine_map<(d0) -> (d0 + 2)>(%i)
        affine.store %x, %A[%t] : memref<12xf32>
        affine.for %j = 0 to %N {
          %v = affine.load %A[%i + 2] : memref<12xf32>
          "use"(%v) : (f32) -> ()
        }
      }
      return
    }""")
    assert forward_stores(f) == 1
    assert '"use"(%x)' in str(m)


def test_no_forwarding_past_a_write_that_may_hit_the_element():
    # The inner store writes %A[%j] for j < %N: it may overwrite %A[%i] (MLIR's
    # @multi_store_load_nested_no_fwd); the one at %A[%j + 10] never can.
    m, f = func_of("""
    func.func @f(%A: memref<30xf32>, %x: f32, %y: f32, %N: index) {
      affine.for %i = 0 to 10 {
        affine.store %x, %A[%i] : memref<30xf32>
        affine.for %j = 0 to min affine_map<()[s0] -> (s0, 10)>()[%N] {
          affine.store %y, %A[%j + 10] : memref<30xf32>
        }
        %v = affine.load %A[%i] : memref<30xf32>
        affine.for %j = 0 to %N {
          affine.store %y, %A[%j] : memref<30xf32>
        }
        %w = affine.load %A[%i] : memref<30xf32>
        "use"(%v, %w) : (f32, f32) -> ()
      }
      return
    }""")
    assert forward_stores(f) == 1
    assert '"use"(%x, %w)' in str(m)


def test_no_forwarding_past_an_op_of_unknown_effect():
    m, f = func_of("""
    func.func @f(%A: memref<10xf32>, %x: f32) {
      affine.for %i = 0 to 10 {
        affine.store %x, %A[%i] : memref<10xf32>
        "memop"(%A) : (memref<10xf32>) -> ()
        %v = affine.load %A[%i] : memref<10xf32>
        "use"(%v) : (f32) -> ()
      }
      return
    }""")
    before = str(m)
    assert replace_scalars(f).total == 0
    assert str(m) == before


def test_no_forwarding_from_a_store_that_does_not_dominate():
    m, f = func_of("""
    func.func @f(%A: memref<10xf32>, %x: f32) {
      affine.for %i = 0 to 10 {
        affine.if affine_set<(d0) : (d0 - 5 >= 0)>(%i) {
          affine.store %x, %A[%i] : memref<10xf32>
        }
        %v = affine.load %A[%i] : memref<10xf32>
        "use"(%v) : (f32) -> ()
      }
      return
    }""")
    assert forward_stores(f) == 0


def test_same_element_composes_applies_and_constants():
    m, f = func_of("""
    func.func @f(%A: memref<10x10xf32>, %i: index) {
      %c1 = arith.constant 1 : index
      %t = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)
      %a = affine.load %A[%t, 1] : memref<10x10xf32>
      %b = affine.load %A[%i + 1, %c1] : memref<10x10xf32>
      %c = affine.load %A[%i, %c1] : memref<10x10xf32>
      return
    }""")
    a, b, c = ops(f, AffineLoadOp)
    assert same_element(a, b) and not same_element(a, c)


# ----- redundant loads and dead stores ---------------------------------------------------------------
@pytest.mark.parametrize("other, reused", [("8 - %i", 1), ("9 - %i", 2)])
def test_redundant_loads_reuse_the_first_but_not_across_a_store(other, reused):
    # A[8 - i] is A[i] at i = 4: %c must load again; A[9 - i] never is (exact).
    m, f = func_of("""
    func.func @f(%A: memref<10xf32>, %x: f32) {
      affine.for %i = 0 to 10 {
        %a = affine.load %A[%i] : memref<10xf32>
        %b = affine.load %A[%i] : memref<10xf32>
        affine.store %x, %A[OTHER] : memref<10xf32>
        %c = affine.load %A[%i] : memref<10xf32>
        "use"(%a, %b, %c) : (f32, f32, f32) -> ()
      }
      return
    }""".replace("OTHER", other))
    assert eliminate_redundant_loads(f) == reused
    assert ('"use"(%a, %a, %c)' if reused == 1 else '"use"(%a, %a, %a)') in str(m)


def test_dead_store_overwritten_and_kept_when_read_between():
    m, f = func_of("""
    func.func @f(%A: memref<512xf32>, %B: memref<512xf32>, %x: f32, %y: f32) {
      affine.for %i = 0 to 16 {
        affine.store %x, %A[32 * %i] : memref<512xf32>
        affine.store %y, %A[32 * %i] : memref<512xf32>
        affine.store %x, %B[%i] : memref<512xf32>
        affine.for %j = 0 to 4 {
          %v = affine.load %B[%j] : memref<512xf32>
          "use"(%v) : (f32) -> ()
        }
        affine.store %y, %B[%i] : memref<512xf32>
      }
      return
    }""")
    assert eliminate_dead_stores(f) == 1
    stores = ops(f, AffineStoreOp)
    assert [str(s.value.name_hint) for s in stores] == ["y", "x", "y"]


def test_dead_local_memref_is_removed_with_its_stores():
    m, f = func_of("""
    func.func @f(%x: f32) -> f32 {
      %m = memref.alloc() : memref<10xf32>
      affine.for %i = 0 to 10 {
        affine.store %x, %m[%i] : memref<10xf32>
        %v = affine.load %m[%i] : memref<10xf32>
        %s = arith.addf %v, %x : f32
        affine.store %s, %m[%i] : memref<10xf32>
      }
      memref.dealloc %m : memref<10xf32>
      return %x : f32
    }""")
    assert remove_dead_allocs(f) == 0  # still read
    counts = replace_scalars(f)
    assert (counts.forwarded, counts.dead_memrefs) == (1, 1)
    assert "memref" not in str(m).split("func.func")[1].split("\n", 1)[1]


# ----- reductions into iter_args ------------------------------------------------------------------------
REDUCTION = """
func.func @f(%A: memref<8x8xf32>, %C: memref<8xf32>, %N: index) {
  affine.for %i = 0 to 8 {
    affine.for %k = 0 to {ub} {
      %a = affine.load %A[%i, %k] : memref<8x8xf32>
      %c = affine.load %C[%i] : memref<8xf32>
      %s = arith.addf %c, %a : f32
      affine.store %s, %C[%i] : memref<8xf32>
      {extra}
    }
  }
  return
}"""


def reduction(ub: str = "8", extra: str = ""):
    m, f = func_of(REDUCTION.replace("{ub}", ub).replace("{extra}", extra))
    k = [op for op in f.walk() if isinstance(op, AffineForOp)][1]
    return m, f, k


def test_promote_reduction_into_iter_args():
    m, f, k = reduction()
    args = [np.arange(64, dtype=np.float32).reshape(8, 8) % 5, np.ones(8, np.float32), 3]
    before = m.clone()
    assert promote_reductions_to_iter_args(k) == 1
    air.verify(m)
    assert k.iter_args and len(k.results) == 1
    assert not any(o.memref.name_hint == "C" for o in k.walk() if isinstance(o, (AffineLoadOp, AffineStoreOp)))
    assert_equivalent(before, m, args)


def test_promotion_refused_when_the_element_is_accessed_otherwise():
    m, f, k = reduction(extra="%d = affine.load %C[%k] : memref<8xf32>\n      \"use\"(%d) : (f32) -> ()")
    store = [op for op in k.body.ops if isinstance(op, AffineStoreOp)][0]
    err = assert_refused_unchanged(lambda: promote_reduction(k, store), m)
    assert "RAW %C" in err.reason or "WAR %C" in err.reason
    assert "(%k)" in err.reason


def test_promotion_refused_when_the_loop_may_not_run():
    m, f, k = reduction(ub="%N")
    store = [op for op in k.body.ops if isinstance(op, AffineStoreOp)][0]
    err = assert_refused_unchanged(lambda: promote_reduction(k, store), m)
    assert "zero times" in err.reason


def test_promoted_pairs_yield_the_values_after_every_load_is_replaced():
    """Two reductions of one loop where one's stored value is the other's load: the yield must
    name the iter_arg that replaced that load, not the erased load (it did not dominate)."""
    m, f = func_of("""
    func.func @kernel(%A: memref<4xi32>) {
      affine.for %m = 0 to 2 {
        %a = affine.load %A[2] : memref<4xi32>
        affine.store %a, %A[3] : memref<4xi32>
        %b = affine.load %A[0] : memref<4xi32>
        affine.store %b, %A[2] : memref<4xi32>
        affine.store %b, %A[0] : memref<4xi32>
      }
      return
    }""")
    loop = ops(f, AffineForOp)[0]
    before = m.clone()
    assert promote_reductions_to_iter_args(loop) == 2
    air.verify(m)
    assert_equivalent(before, m, [np.array([5, 6, 7, 8], np.int32)])
    assert_preserves_semantics("affine-scalrep", air.parse(SCALREP_DOMINANCE), [np.array([5, 6, 7, 8], np.int32)])


SCALREP_DOMINANCE = """
func.func @kernel(%A: memref<4xi32>) {
  affine.for %m = 0 to 2 {
    %a = affine.load %A[2] : memref<4xi32>
    affine.store %a, %A[3] : memref<4xi32>
    %b = affine.load %A[0] : memref<4xi32>
    affine.store %b, %A[2] : memref<4xi32>
    %c = affine.load %A[0] : memref<4xi32>
    affine.store %c, %A[0] : memref<4xi32>
  }
  return
}"""


def test_fixpoint_promotes_then_forwards_and_removes_the_memref():
    m, f = func_of("""
    func.func @f(%zero: f32, %x: f32) -> f32 {
      %m = memref.alloc() : memref<1xf32>
      affine.store %zero, %m[0] : memref<1xf32>
      affine.for %k = 0 to 8 {
        %c = affine.load %m[0] : memref<1xf32>
        %s = arith.addf %c, %x : f32
        affine.store %s, %m[0] : memref<1xf32>
      }
      %r = affine.load %m[0] : memref<1xf32>
      return %r : f32
    }""")
    counts = replace_scalars(f)
    assert (counts.promoted, counts.forwarded, counts.dead_memrefs) == (1, 2, 1)
    assert "memref" not in str(m).split("-> f32 {", 1)[1]
    assert "iter_args(%c = %zero)" in str(m) and "return %0 : f32" in str(m)


def test_pass_records_decisions():
    m, f, k = reduction(ub="%N")
    pm = PassManager.parse("affine-scalrep")
    pm.run(m)
    kinds = Counter(d.kind for d in pm.trace.decisions)
    assert kinds["refused"] == 1 and kinds["applied"] == 0
    m, f, k = reduction()
    pm.run(m)
    assert any("promoted 1 reduction" in d.message for d in pm.trace.decisions)


def test_promote_reductions_option_off():
    m, f, k = reduction()
    out = PassManager.parse("affine-scalrep{promote-reductions=false}").run(m)
    assert "iter_args" not in str(out)


def _matmul_args(M, N, K, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(-4, 5, size=s).astype(np.float32) for s in [(M, K), (K, N), (M, N)]]


def test_library_matmul_reduction_in_iter_args():
    m = air.library.matmul(8, 6, 5)
    out = assert_preserves_semantics("affine-scalrep", m, _matmul_args(8, 6, 5))
    k = [op for op in out.walk() if isinstance(op, AffineForOp) and op.induction_var.name_hint == "k"][0]
    assert len(k.iter_args) == 1
    inner = [o for o in k.walk() if isinstance(o, (AffineLoadOp, AffineStoreOp))]
    assert {o.memref.name_hint for o in inner} == {"A", "B"}  # C only before and after the loop


UNROLL_JAMMED = """
func.func @mm(%A: memref<4x6xf32>, %B: memref<6x4xf32>, %C: memref<4x4xf32>) {
  affine.for %i = 0 to 4 step 2 {
    affine.for %j = 0 to 4 step 2 {
      affine.for %k = 0 to 6 {
        %a0 = affine.load %A[%i, %k] : memref<4x6xf32>
        %a1 = affine.load %A[%i + 1, %k] : memref<4x6xf32>
        %b0 = affine.load %B[%k, %j] : memref<6x4xf32>
        %b1 = affine.load %B[%k, %j + 1] : memref<6x4xf32>
        %c00 = affine.load %C[%i, %j] : memref<4x4xf32>
        %p00 = arith.mulf %a0, %b0 : f32
        %s00 = arith.addf %c00, %p00 : f32
        affine.store %s00, %C[%i, %j] : memref<4x4xf32>
        %c01 = affine.load %C[%i, %j + 1] : memref<4x4xf32>
        %p01 = arith.mulf %a0, %b1 : f32
        %s01 = arith.addf %c01, %p01 : f32
        affine.store %s01, %C[%i, %j + 1] : memref<4x4xf32>
        %c10 = affine.load %C[%i + 1, %j] : memref<4x4xf32>
        %p10 = arith.mulf %a1, %b0 : f32
        %s10 = arith.addf %c10, %p10 : f32
        affine.store %s10, %C[%i + 1, %j] : memref<4x4xf32>
        %c11 = affine.load %C[%i + 1, %j + 1] : memref<4x4xf32>
        %p11 = arith.mulf %a1, %b1 : f32
        %s11 = arith.addf %c11, %p11 : f32
        affine.store %s11, %C[%i + 1, %j + 1] : memref<4x4xf32>
      }
    }
  }
  return
}"""


def test_unroll_jammed_matmul_carries_its_four_accumulators():
    m = air.parse(UNROLL_JAMMED)
    out = assert_preserves_semantics("affine-scalrep", m, _matmul_args(4, 4, 6, seed=1))
    k = [op for op in out.walk() if isinstance(op, AffineForOp)][2]
    assert len(k.iter_args) == 4
    assert not [o for o in k.walk() if isinstance(o, AffineStoreOp)]


@pytest.mark.skipif(get_pass("affine-loop-unroll-jam") is None, reason="needs the unroll-jam pass")
def test_matmul_unroll_jammed_by_the_pass_keeps_both_accumulators():
    # Unroll-jam leaves `affine.apply (d0) -> (d0 + 1)(%i)` inside %k: the element C[%i + 1, %j]
    # is still invariant in %k (through the apply), and the promoted load/store use the composed map.
    m = air.library.matmul(8, 8, 8)
    out = assert_preserves_semantics("affine-loop-unroll-jam{unroll-jam-factor=2},affine-scalrep", m,
                                     _matmul_args(8, 8, 8, seed=2))
    k = [op for op in out.walk() if isinstance(op, AffineForOp) and op.induction_var.name_hint == "k"][0]
    assert len(k.iter_args) == 2
    assert "%C[%i_0 + 1, %j_0]" in str(out)


# ----- MLIR parity --------------------------------------------------------------------------------------
def _chunks() -> list[str]:
    return [c for c in MLIR_CASES.read_text().split("// -----") if "func.func" in c]


def _skeleton(text: str) -> list[str]:
    """The printed IR without value names and alias definitions."""
    text = re.sub(r"%[\w#]+", "%v", text)
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def _ours(chunk: str) -> str:
    return str(PassManager.parse("affine-scalrep").run(air.parse(chunk, allow_unregistered=True)))


def test_mlir_inputs_reach_a_fixpoint():
    for chunk in _chunks():
        once = _ours(chunk)
        assert _ours(once) == once


DIFFERENT_FROM_MLIR = {"reduction_multi_store"}  # reductions promoted (beyond MLIR)


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="needs iree-opt (MLIR) on PATH")
def test_mlir_parity():
    chunks = _chunks()
    out = subprocess.run(["iree-opt", "--allow-unregistered-dialect", "--affine-scalrep", "--split-input-file",
                          "-"], input="\n// -----\n".join(chunks), capture_output=True, text=True, check=True).stdout
    theirs = out.split("// -----")
    assert len(theirs) == len(chunks) >= 25
    for chunk, their in zip(chunks, theirs):
        name = re.search(r"func\.func @(\w+)", chunk).group(1)
        ours = _ours(chunk)
        equal = _skeleton(their) == _skeleton(ours)
        assert equal == (name not in DIFFERENT_FROM_MLIR), f"{name}:\n{their}\n{ours}"


# ----- random programs ---------------------------------------------------------------------------------
def _check(pipeline: str, case, stats: Counter) -> None:
    m, args = case
    pm = PassManager.parse(pipeline, capture_ir=False)
    out = pm.run(m)
    text = str(out)
    assert str(air.parse(text)) == text
    assert_equivalent(m, out, args)
    applied = [d.message for d in pm.trace.decisions if d.kind == "applied"]
    stats["programs"] += 1
    stats["changed"] += bool(applied)
    stats["forwarded"] += sum("forwarding" in a for a in applied)
    stats["redundant"] += sum("redundant load" in a for a in applied)
    stats["promoted"] += sum("promoted" in a for a in applied)
    stats["dead"] += sum("dead store" in a for a in applied)


def test_random_programs_preserve_semantics_and_forward():
    stats: Counter = Counter()

    @settings(max_examples=110, **FAST)
    @given(programs_with_inputs(max_memrefs=2))
    def check(case):
        _check("affine-scalrep", case, stats)

    check()
    n = stats["programs"]
    assert stats["changed"] >= 0.25 * n, stats
    assert stats["forwarded"] + stats["redundant"] >= 0.08 * n, stats  # seen: 0.15 to 0.5 per program
    assert stats["promoted"] >= 0.2 * n, stats  # seen: 0.45 to 0.7


def test_random_programs_without_promotion():
    stats: Counter = Counter()

    @settings(max_examples=100, derandomize=True, **FAST)  # fixed draw: the counts below are then fixed figures
    @given(programs_with_inputs(max_memrefs=1, max_nests=2, allow_iter_args=False))
    def check(case):
        _check("affine-scalrep{promote-reductions=false}", case, stats)

    check()
    assert stats["promoted"] == 0
    assert stats["changed"] >= 0.1 * stats["programs"], stats
    assert stats["forwarded"] + stats["redundant"] >= 0.2 * stats["programs"], stats  # seen: 0.45 to 0.8
    assert stats["dead"] >= 2, stats  # seen: 11 to 20


# ----- scaling ---------------------------------------------------------------------------------------
def _unrolled_chain(trips: int) -> air.ModuleOp:
    n = trips + 2
    text = f"""
    func.func @k(%A: memref<{n}xf32>, %B: memref<{n}xf32>) {{
      affine.for %i = 0 to {trips} {{
        %x = affine.load %A[%i] : memref<{n}xf32>
        affine.store %x, %A[%i + 1] : memref<{n}xf32>
        %y = affine.load %A[%i] : memref<{n}xf32>
        %s = arith.addf %x, %y : f32
        affine.store %s, %B[%i] : memref<{n}xf32>
        %z = affine.load %B[%i] : memref<{n}xf32>
        affine.store %z, %B[%i + 1] : memref<{n}xf32>
      }}
      return
    }}"""
    return PassManager.parse("affine-loop-unroll{unroll-full}").run(air.parse(text))


def test_straight_line_code_needs_linearly_many_queries(monkeypatch):
    """After full unrolling, the dominance checks and dependence queries grow linearly with the
    number of accesses (they grew quadratically, with a linear search per dominance check:
    cubic time): each question looks only at the accesses of its element / between the two."""
    import analysis
    import transforms.memory.scalrep as scalrep

    calls = Counter()
    real_pair, real_dominates = analysis.DependenceAnalysis.pair, scalrep._dominates
    monkeypatch.setattr(analysis.DependenceAnalysis, "pair",
                        lambda self, s, t: calls.update(["pair"]) or real_pair(self, s, t))
    monkeypatch.setattr(scalrep, "_dominates", lambda a, b: calls.update(["dominates"]) or real_dominates(a, b))
    per_size = []
    for trips in (16, 64):
        m = _unrolled_chain(trips)
        calls.clear()
        counts = replace_scalars(m.functions[0])
        assert counts.forwarded + counts.redundant_loads >= 2 * trips - 1
        per_size.append(dict(calls))
    small, large = per_size
    for kind in ("pair", "dominates"):
        assert 0 < large[kind] <= 5 * small[kind], per_size


def test_straight_line_scalrep_preserves_semantics():
    m = _unrolled_chain(8)
    args = [np.arange(10, dtype=np.float32), np.zeros(10, np.float32)]
    out = assert_preserves_semantics("affine-scalrep", m, args)
    assert sum(1 for op in out.walk() if isinstance(op, AffineLoadOp)) < 4
