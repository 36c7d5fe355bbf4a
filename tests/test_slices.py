"""Computation slices (``analysis.slices.compute_slice``) for producer-consumer fusion.

Hand-written producer/consumer pairs pin the printed bounds (shifted and strided reads,
clipping, 2-d producers at depth 1 and 2, reductions, transposes, symbolic sizes) and the
redundancy ratio; every slice is also checked by brute force against the access tracer:
per consumer prefix iteration, the producer iterations that wrote an element the consumer
accesses there lie in the slice's box (and are the box when it is exact). Random programs
check the same on pairs of their loop nests.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing import SYMBOL_RANGE, kernel_function, programs, trace_accesses
from affine_ir.types import IndexType
from analysis.isl_bridge import Scop
from analysis.slices import SliceError, compute_slice

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def nests_of(text: str):
    f = air.parse(text).functions[0]
    return f, [o for o in f.body.ops if isinstance(o, AffineForOp)]


def bounds_text(s) -> list[str]:
    return [f"{lb} / {ub}" for lb, ub in zip(s.lower_bounds, s.upper_bounds)]


def brute_force_check(f, s, symbols: dict | None = None) -> int:
    """The slice covers (equals, when exact) the traced needed producer iterations for every
    traced consumer prefix iteration; returns how many prefixes needed something."""
    symbols = symbols or {}
    trace = trace_accesses(f, symbols)
    nc = len(s.dst_loops) - s.depth
    nsrc = len(s.src_loops)
    src_ops = {id(o) for o in s.src_nest.walk()}
    dst_ops = {id(o) for o in s.dst_nest.walk()}
    inside = {id(o) for o in s.insertion_loop.walk()}
    writers: dict = {}
    for a in trace:
        if a.is_write and id(a.op) in src_ops:
            writers.setdefault((id(a.memref), a.index), set()).add(a.ivs[: nc + nsrc])
    needed: dict = {}
    for a in trace:
        if id(a.op) not in dst_ops:
            continue
        if id(a.op) not in inside:  # outside the slice's loops: must not depend on the producer
            assert (id(a.memref), a.index) not in writers
            continue
        pre = a.ivs[: nc + s.depth]
        need = needed.setdefault(pre, set())
        need |= {w[nc:] for w in writers.get((id(a.memref), a.index), ()) if w[:nc] == pre[:nc]}
    steps = [lp.op.step if isinstance(lp.op, AffineForOp) else lp.op.steps[lp.index] for lp in s.src_loops]
    for pre, need in needed.items():
        bounds = s.bounds_at({**dict(zip(s.dst_ivs, pre)), **symbols})
        box = set(itertools.product(*[range(lo, hi, step) for (lo, hi), step in zip(bounds, steps)]))
        assert need <= box, (str(s), pre, sorted(need - box))
        if s.is_exact:
            assert need == box, (str(s), pre, sorted(box - need))
    return sum(1 for need in needed.values() if need)


STENCIL_1D = """
func.func @k(%A: memref<12xf32>, %B: memref<12xf32>, %C: memref<10xf32>) {
  affine.for %i = 0 to 12 {
    %a = affine.load %A[%i] : memref<12xf32>
    affine.store %a, %B[%i] : memref<12xf32>
  }
  affine.for %j = 1 to 11 {
    %x = affine.load %B[%j - 1] : memref<12xf32>
    %y = affine.load %B[%j] : memref<12xf32>
    %z = affine.load %B[%j + 1] : memref<12xf32>
    %s = arith.addf %x, %y : f32
    %t = arith.addf %s, %z : f32
    affine.store %t, %C[%j - 1] : memref<10xf32>
  }
  return
}
"""


def test_three_neighbours():
    f, (src, dst) = nests_of(STENCIL_1D)
    s = compute_slice(src, dst, 1)
    assert bounds_text(s) == ["(d0) -> (d0 - 1) / (d0) -> (d0 + 2)"]
    assert s.operands == [dst.induction_var] and s.src_ivs == [src.induction_var]
    assert s.is_exact and s.is_valid and not s.is_maximal
    assert s.num_src_iterations == 3
    assert (s.slice_iterations, s.src_iterations, s.dst_iterations) == (30, 12, 10)
    assert s.computation_ratio == pytest.approx(30 / 12 - 1)
    assert str(s) == ("slice of %i in %j at depth 1 (through %B): %i in [%j - 1, %j + 2); 3 iterations per consumer "
                      "iteration, computation ratio 1.50; exact")
    assert brute_force_check(f, s) == 10


def test_three_neighbours_of_equal_sizes_ratio_two():
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<66xf32>, %B: memref<66xf32>, %C: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %a = affine.load %A[%i] : memref<66xf32>
    affine.store %a, %B[%i + 1] : memref<66xf32>
  }
  affine.for %j = 0 to 64 {
    %x = affine.load %B[%j] : memref<66xf32>
    %y = affine.load %B[%j + 1] : memref<66xf32>
    %z = affine.load %B[%j + 2] : memref<66xf32>
    %s = arith.addf %x, %y : f32
    %t = arith.addf %s, %z : f32
    affine.store %t, %C[%j] : memref<64xf32>
  }
  return
}""")
    s = compute_slice(src, dst, 1)
    # Clipped at both ends: B[0] and B[65] are not written by the producer.
    assert bounds_text(s) == ["(d0) -> (0, d0 - 1) / (d0) -> (d0 + 2, 64)"]
    assert str(s).startswith("slice of %i in %j at depth 1 (through %B): %i in [max(0, %j - 1), min(%j + 2, 64)); "
                             "? iterations")
    assert s.num_src_iterations is None and s.is_exact
    assert s.slice_iterations == 3 * 64 - 2 and s.computation_ratio == pytest.approx((3 * 64 - 2) / 64 - 1)
    assert brute_force_check(f, s) == 64


def test_pointwise_consumer_ratio_zero_and_shifted_read():
    f, (src, dst) = nests_of(air.testing.EXAMPLES["producer_consumer"])  # reads B[i] and B[i + 2]
    s = compute_slice(src, dst, 1)
    assert bounds_text(s) == ["(d0) -> (d0) / (d0) -> (d0 + 3)"]
    assert not s.is_exact  # B[i + 1]'s producer iteration is in the box but not needed
    assert s.computation_ratio == pytest.approx(3 * 8 / 10 - 1)
    brute_force_check(f, s)
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<16xf32>, %B: memref<16xf32>, %C: memref<16xf32>) {
  affine.for %i = 0 to 16 {
    %a = affine.load %A[%i] : memref<16xf32>
    affine.store %a, %B[%i] : memref<16xf32>
  }
  affine.for %j = 0 to 16 {
    %b = affine.load %B[%j] : memref<16xf32>
    affine.store %b, %C[%j] : memref<16xf32>
  }
  return
}""")
    s = compute_slice(src, dst, 1)
    assert bounds_text(s) == ["(d0) -> (d0) / (d0) -> (d0 + 1)"]
    assert s.num_src_iterations == 1 and s.computation_ratio == 0.0 and s.is_exact
    assert brute_force_check(f, s) == 16


TWO_D = """
func.func @k(%A: memref<8x6xf32>, %B: memref<8x6xf32>, %C: memref<8x6xf32>, %D: memref<6x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 6 {
      %a = affine.load %A[%i, %j] : memref<8x6xf32>
      affine.store %a, %B[%i, %j] : memref<8x6xf32>
    }
  }
  affine.for %x = 0 to 8 {
    affine.for %y = 0 to 6 {
      %b = affine.load %B[%x, %y] : memref<8x6xf32>
      affine.store %b, %C[%x, %y] : memref<8x6xf32>
    }
  }
  affine.for %u = 0 to 6 {
    affine.for %v = 0 to 8 {
      %b = affine.load %B[%v, %u] : memref<8x6xf32>
      affine.store %b, %D[%u, %v] : memref<6x8xf32>
    }
  }
  return
}
"""


def test_two_d_producer_at_depth_one_and_two():
    f, (src, dst, tr) = nests_of(TWO_D)
    s1 = compute_slice(src, dst, 1)
    assert bounds_text(s1) == ["(d0) -> (d0) / (d0) -> (d0 + 1)", "(d0) -> (0) / (d0) -> (6)"]
    assert s1.num_src_iterations == 6 and s1.computation_ratio == 0.0 and s1.is_exact
    s2 = compute_slice(src, dst, 2)
    assert bounds_text(s2) == ["(d0, d1) -> (d0) / (d0, d1) -> (d0 + 1)", "(d0, d1) -> (d1) / (d0, d1) -> (d1 + 1)"]
    assert s2.num_src_iterations == 1 and s2.dst_iterations == 48 and s2.is_exact
    assert s2.insertion_loop is dst.body.ops[0]
    assert brute_force_check(f, s1) == 8 and brute_force_check(f, s2) == 48
    with pytest.raises(SliceError, match="depth 3 exceeds the 2 consumer loops"):
        compute_slice(src, dst, 3)


def test_transposed_consumption():
    f, (src, _, tr) = nests_of(TWO_D)
    s = compute_slice(src, tr, 1)  # D[u, v] = B[v, u]: one column of B per %u
    assert str(s) == ("slice of %i in %u at depth 1 (through %B): %i in [0, 8), %j in [%u, %u + 1); 8 iterations "
                      "per consumer iteration, computation ratio 0.00; exact")
    assert brute_force_check(f, s) == 6
    s = compute_slice(src, tr, 2)
    assert bounds_text(s) == ["(d0, d1) -> (d1) / (d0, d1) -> (d1 + 1)", "(d0, d1) -> (d0) / (d0, d1) -> (d0 + 1)"]
    assert brute_force_check(f, s) == 48


def test_reduction_in_the_producer_brings_the_whole_reduction_loop():
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<8x6xf32>, %S: memref<8xf32>, %C: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %k = 0 to 6 {
      %a = affine.load %A[%i, %k] : memref<8x6xf32>
      %s = affine.load %S[%i] : memref<8xf32>
      %t = arith.addf %a, %s : f32
      affine.store %t, %S[%i] : memref<8xf32>
    }
  }
  affine.for %x = 0 to 8 {
    %b = affine.load %S[%x] : memref<8xf32>
    affine.store %b, %C[%x] : memref<8xf32>
  }
  return
}""")
    s = compute_slice(src, dst, 1)
    assert [str(lp.iv.name_hint) for lp in s.src_loops] == ["i", "k"]
    assert bounds_text(s) == ["(d0) -> (d0) / (d0) -> (d0 + 1)", "(d0) -> (0) / (d0) -> (6)"]
    assert s.num_src_iterations == 6 and s.computation_ratio == 0.0 and s.is_exact
    assert brute_force_check(f, s) == 8


def test_symbolic_sizes_give_maps_with_symbols():
    f, (src, dst) = nests_of("""
#lb = affine_map<(d0) -> (0, d0 - 1)>
#ub = affine_map<(d0)[s0] -> (s0, d0 + 2)>
func.func @k(%A: memref<?xf32>, %B: memref<?xf32>, %C: memref<?xf32>, %N: index) {
  affine.for %i = 0 to %N {
    %a = affine.load %A[%i] : memref<?xf32>
    affine.store %a, %B[%i] : memref<?xf32>
  }
  affine.for %j = 0 to %N {
    affine.for %k = max #lb(%j) to min #ub(%j)[%N] {
      %x = affine.load %B[%k] : memref<?xf32>
      affine.store %x, %C[%j] : memref<?xf32>
    }
  }
  return
}""")
    N = f.args[3]
    s = compute_slice(src, dst, 1, symbol_values={N: 6})
    assert bounds_text(s) == ["(d0)[s0] -> (0, d0 - 1) / (d0)[s0] -> (s0, d0 + 2)"]
    assert s.operands == [dst.induction_var, N] and s.is_exact and s.is_valid
    assert (s.slice_iterations, s.src_iterations, s.dst_iterations) == (16, 6, 6)
    assert brute_force_check(f, s, {N: 6}) == 6
    s = compute_slice(src, dst, 1)  # counted at the default symbol value, and says so
    assert s.src_iterations == 1024 and s.computation_ratio == pytest.approx((3 * 1024 - 2) / 1024 - 1)
    assert any("%N = 1024" in n for n in s.notes)


def test_strided_producer_and_consumer():
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<20xf32>, %B: memref<20xf32>, %C: memref<10xf32>) {
  affine.for %i = 0 to 20 step 2 {
    %a = affine.load %A[%i] : memref<20xf32>
    affine.store %a, %B[%i] : memref<20xf32>
    affine.store %a, %B[%i + 1] : memref<20xf32>
  }
  affine.for %x = 0 to 10 {
    %b = affine.load %B[%x * 2 + 1] : memref<20xf32>
    affine.store %b, %C[%x] : memref<10xf32>
  }
  return
}""")
    s = compute_slice(src, dst, 1)
    assert bounds_text(s) == ["(d0) -> (d0 * 2) / (d0) -> (d0 * 2 + 1)"]
    assert s.num_src_iterations == 1 and s.computation_ratio == 0.0
    assert brute_force_check(f, s) == 10


def test_triangular_producer_is_not_a_valid_box():
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %a, %B[%i, %j] : memref<8x8xf32>
    }
  }
  affine.for %x = 0 to 8 {
    %b = affine.load %B[%x, 0] : memref<8x8xf32>
    %c = affine.load %B[7, 7] : memref<8x8xf32>
    %d = arith.addf %b, %c : f32
    affine.store %d, %C[%x] : memref<8xf32>
  }
  return
}""")
    s = compute_slice(src, dst, 1)
    assert bounds_text(s) == ["(d0) -> (d0) / (d0) -> (8)", "(d0) -> (0) / (d0) -> (8)"]
    assert not s.is_exact and not s.is_valid  # the box holds (i, j) with j > i: not producer iterations
    assert "INVALID" in str(s)
    brute_force_check(f, s)


def test_no_dependence_and_bad_requests():
    f, (src, dst, tr) = nests_of(TWO_D)
    with pytest.raises(SliceError, match="no dependence: %x writes no memref that %u accesses"):
        compute_slice(dst, tr, 1)
    with pytest.raises(SliceError, match="does not precede"):
        compute_slice(dst, src, 1)
    with pytest.raises(SliceError, match="at least 1"):
        compute_slice(src, dst, 0)
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<8xf32>, %B: memref<16xf32>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    affine.store %a, %B[%i] : memref<16xf32>
  }
  affine.for %j = 8 to 16 {
    %b = affine.load %B[%j] : memref<16xf32>
    affine.store %b, %A[%j - 8] : memref<8xf32>
  }
  return
}""")
    with pytest.raises(SliceError, match="elements of %B that %i writes are not accessed by %j"):
        compute_slice(src, dst, 1)


def test_non_affine_consumer_is_refused():
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<8xf32>, %B: memref<8xf32>, %I: memref<8xindex>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    affine.store %a, %B[%i] : memref<8xf32>
  }
  affine.for %j = 0 to 8 {
    %k = affine.load %I[%j] : memref<8xindex>
    %b = memref.load %B[%k] : memref<8xf32>
    affine.store %b, %A[%j] : memref<8xf32>
  }
  return
}""")
    with pytest.raises(SliceError, match="'memref.load' on %B is not an affine access"):
        compute_slice(src, dst, 1)


def test_nests_inside_a_common_loop():
    f = air.parse("""
func.func @k(%A: memref<4x10xf32>, %B: memref<4x10xf32>, %C: memref<4x10xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %i = 0 to 10 {
      %a = affine.load %A[%t, %i] : memref<4x10xf32>
      affine.store %a, %B[%t, %i] : memref<4x10xf32>
    }
    affine.for %j = 0 to 9 {
      %b = affine.load %B[%t, %j + 1] : memref<4x10xf32>
      affine.store %b, %C[%t, %j] : memref<4x10xf32>
    }
  }
  return
}""").functions[0]
    t = f.body.ops[0]
    src, dst = t.body.ops[0], t.body.ops[1]
    s = compute_slice(src, dst, 1)
    assert s.operands == [t.induction_var, dst.induction_var]
    assert bounds_text(s) == ["(d0, d1) -> (d1 + 1) / (d0, d1) -> (d1 + 2)"]
    assert s.is_exact and (s.slice_iterations, s.src_iterations) == (36, 40)
    assert brute_force_check(f, s) == 36


# ----- random programs ---------------------------------------------------------------------------
@settings(max_examples=150, **FAST)
@given(programs(max_nests=3, max_memrefs=2), st.data())
def test_random_slices_cover_what_the_consumer_needs(m, data):
    f = kernel_function(m)
    nests = [o for o in f.body.ops if isinstance(o, AffineForOp)]
    if len(nests) < 2:
        return
    symbols = {a: data.draw(st.integers(*SYMBOL_RANGE)) for a in f.args if isinstance(a.type, IndexType)}
    scop = Scop(f)
    for _ in range(2):
        i = data.draw(st.integers(0, len(nests) - 2))
        j = data.draw(st.integers(i + 1, len(nests) - 1))
        depth = data.draw(st.integers(1, 3))
        try:
            s = compute_slice(nests[i], nests[j], depth, scop=scop, symbol_values=symbols)
        except SliceError as e:
            if e.reason.startswith("no dependence"):
                trace = trace_accesses(f, symbols)
                src = {id(o) for o in nests[i].walk()}
                dst = {id(o) for o in nests[j].walk()}
                written = {(id(a.memref), a.index) for a in trace if a.is_write and id(a.op) in src}
                assert not any((id(a.memref), a.index) in written for a in trace if id(a.op) in dst), str(m)
            continue
        brute_force_check(f, s, symbols)
        assert s.computation_ratio is None or s.computation_ratio >= -1


def test_triangular_consumer_gives_an_affine_iteration_count():
    f, (src, dst) = nests_of("""
func.func @k(%A: memref<8x8xf32>, %B: memref<8x8xf32>, %C: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %a, %B[%i, %j] : memref<8x8xf32>
    }
  }
  affine.for %x = 0 to 8 {
    affine.for %y = 0 to affine_map<(d0) -> (d0 + 1)>(%x) {
      %b = affine.load %B[%x, %y] : memref<8x8xf32>
      affine.store %b, %C[%x] : memref<8xf32>
    }
  }
  return
}""")
    s = compute_slice(src, dst, 1)
    assert str(s.num_src_iterations) == "(d0) -> (d0 + 1)" and s.is_exact and s.is_valid
    # Fused, only the lower triangle of B is ever computed: less work than the producer.
    assert (s.slice_iterations, s.src_iterations) == (36, 64) and s.computation_ratio < 0
    assert brute_force_check(f, s) == 8


# -- point counts (analysis.isl_results.count_points) -----------------------------------------------
CAUSAL = "{ L[b, i, j] : 0 <= b <= 31 and 0 <= i <= 4095 and 0 <= j <= i }"


def test_counts_of_large_causal_domains_are_exact_within_the_slice_budget():
    # Heads x a 4096-long triangle: enumerating 131072 outer points took most of the slice
    # budget, so the second count ran out and isl handed back a partial count (a TypeError).
    import islpy as isl

    from analysis.isl_results import count_points, isl_budget
    from analysis.slices import SLICE_BUDGET

    s = isl.Set(CAUSAL)
    with isl_budget(SLICE_BUDGET):
        counts = [count_points(s) for _ in range(3)]
    assert counts == [32 * 4096 * 4097 // 2] * 3
    assert count_points(isl.Set("{ [i, j] : 0 <= i < 5 and i <= j < 2i + 3 }")) == sum(i + 3 for i in range(5))


def test_count_that_runs_out_of_budget_raises_budget_exceeded():
    import islpy as isl

    from analysis.isl_results import BudgetExceeded, count_points, isl_budget

    with pytest.raises(BudgetExceeded), isl_budget(10_000):  # enough to start, not to finish
        count_points(isl.Set("{ [i, j] : 0 <= i <= 4095 and 0 <= j <= i }"))
