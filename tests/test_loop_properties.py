"""Loop properties (analysis.loops): parallelism, reductions, bands, trip counts.

is_parallel is also checked against brute force on random programs in test_dependences.
"""

from __future__ import annotations

import affine_ir as air
from affine_ir import AffineExpr, AffineMap
from affine_ir.dialects.affine import AffineForOp
from analysis.loops import (
    constant_trip_count,
    is_parallel,
    is_permutable,
    loop_reductions,
    parallel_decision,
    perfect_band,
    permutable_bands,
    reduction_kind,
    trip_count_expr,
)


def _func(text: str):
    return air.parse(text, "t.mlir").body.ops[0]


def _loops(func) -> list[AffineForOp]:
    return [op for op in func.walk() if isinstance(op, AffineForOp)]


MATMUL = """
func.func @f(%A: memref<8x4xf32>, %B: memref<4x6xf32>, %C: memref<8x6xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 6 {
      affine.for %k = 0 to 4 {
        %a = affine.load %A[%i, %k] : memref<8x4xf32>
        %b = affine.load %B[%k, %j] : memref<4x6xf32>
        %c = affine.load %C[%i, %j] : memref<8x6xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<8x6xf32>
      }
    }
  }
  return
}"""


def test_matmul_parallel_loops_and_memory_reduction():
    i, j, k = _loops(_func(MATMUL))
    assert is_parallel(i) and is_parallel(j) and not is_parallel(k)
    ok, reason = parallel_decision(k)
    assert not ok and reason == ("WAR %C: S2 (affine.load at t.mlir:8:9) -> S3 (affine.store at t.mlir:11:9) "
                                 "carried by %k (also loop-independent), distance ([0, 3])")
    decision = parallel_decision(k, allow_reductions=True)
    assert decision.parallel and decision.reason == "only reductions are carried (addf of %C)"
    (red,) = decision.reductions
    assert red.is_memory and red.kind == "addf" and red.load.name == "affine.load" and red.store.name == "affine.store"
    assert reduction_kind(k) == "addf" and loop_reductions(i) == [] and reduction_kind(i) is None
    assert is_parallel(k, allow_reductions=True)


def test_iter_args_reduction_chains():
    func = _func("""
func.func @f(%A: memref<8xf32>, %B: memref<8xi32>, %out: memref<2xf32>) {
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %zi = arith.constant 0 : i32
  %s, %m = affine.for %i = 0 to 8 iter_args(%acc = %z, %mx = %one) -> (f32, f32) {
    %a = affine.load %A[%i] : memref<8xf32>
    %t = arith.addf %acc, %a : f32
    %u = arith.addf %a, %t : f32
    %w = arith.maximumf %mx, %a : f32
    affine.yield %u, %w : f32, f32
  }
  %n = affine.for %i = 0 to 8 iter_args(%acc = %zi) -> (i32) {
    %b = affine.load %B[%i] : memref<8xi32>
    %d = arith.subi %acc, %b : i32
    affine.yield %d : i32
  }
  %q = affine.for %i = 0 to 8 iter_args(%acc = %z) -> (f32) {
    %a = affine.load %A[%i] : memref<8xf32>
    %t = arith.mulf %acc, %a : f32
    affine.store %t, %out[0] : memref<2xf32>
    affine.yield %t : f32
  }
  return
}""")
    chain, sub, escaping = _loops(func)
    reds = loop_reductions(chain)
    assert [(r.kind, r.value.name_hint, len(r.ops)) for r in reds] == [("addf", "acc", 2), ("maximumf", "mx", 1)]
    assert reduction_kind(chain) is None  # two kinds
    assert not is_parallel(chain) and is_parallel(chain, allow_reductions=True)
    assert parallel_decision(chain).reason == "iter_arg %acc carries a value across iterations"
    assert loop_reductions(sub) is None and not is_parallel(sub, allow_reductions=True)
    assert parallel_decision(sub, allow_reductions=True).reason == "iter_arg %acc is not a reduction"
    # The running product is also stored: not a pure reduction.
    assert loop_reductions(escaping) is None


def test_memory_reduction_must_be_alone():
    func = _func("""
func.func @f(%A: memref<8xf32>, %s: memref<1xf32>, %t: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    %c = affine.load %s[0] : memref<1xf32>
    %r = arith.maximumf %c, %a : f32
    affine.store %r, %s[0] : memref<1xf32>
  }
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    %c = affine.load %s[0] : memref<1xf32>
    %r = arith.addf %c, %a : f32
    affine.store %r, %s[0] : memref<1xf32>
    %u = affine.load %s[0] : memref<1xf32>
    affine.store %u, %t[%i] : memref<8xf32>
  }
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    %c = affine.load %s[0] : memref<1xf32>
    %r = arith.subf %c, %a : f32
    affine.store %r, %s[0] : memref<1xf32>
  }
  return
}""")
    good, read_back, sub = _loops(func)
    assert reduction_kind(good) == "maximumf" and is_parallel(good, allow_reductions=True)
    assert loop_reductions(read_back) is None  # the partial sum is read by another load
    decision = parallel_decision(read_back, allow_reductions=True)
    assert not decision.parallel and decision.dependence is not None
    assert loop_reductions(sub) is None


def test_parallel_decision_with_symbols_and_outer_context():
    func = _func("""
func.func @f(%A: memref<32xf32>, %N: index) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<32xf32>
    affine.store %v, %A[%i + symbol(%N)] : memref<32xf32>
  }
  return
}""")
    (loop,) = _loops(func)
    n = func.args[1]
    assert not is_parallel(loop)  # some %N (1..9, or negative) makes it carry a dependence
    assert is_parallel(loop, symbols={n: 0}) and is_parallel(loop, symbols={n: 10})
    assert not is_parallel(loop, symbols={n: 3})


def test_parallel_affine_parallel_and_triangular():
    func = _func("""
func.func @f(%A: memref<10x10xf32>) {
  affine.parallel (%i, %j) = (0, 0) to (9, 10) {
    %a = affine.load %A[%i, %j] : memref<10x10xf32>
    affine.store %a, %A[%i + 1, %j] : memref<10x10xf32>
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to %i {
      %a = affine.load %A[%j, %i] : memref<10x10xf32>
      affine.store %a, %A[%i, %j] : memref<10x10xf32>
    }
  }
  return
}""")
    par = func.body.ops[0]
    assert not is_parallel(par)
    i, j = _loops(func)
    # A[i, j] (j < i) is written from A[j, i] (upper triangle, never written): no dependence.
    assert is_parallel(i) and is_parallel(j)


def test_perfect_and_permutable_bands():
    func = _func("""
func.func @f(%cst: f32, %A: memref<10x10xf32>, %B: memref<10xf32>) {
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 9 {
      %n = affine.load %B[%i - 1] : memref<10xf32>
      %s = affine.load %B[%i + 1] : memref<10xf32>
      %v = arith.addf %n, %s : f32
      affine.store %v, %B[%i] : memref<10xf32>
    }
  }
  affine.for %i = 1 to 10 {
    affine.for %j = 0 to 9 {
      %a = affine.load %A[%i - 1, %j + 1] : memref<10x10xf32>
      affine.store %a, %A[%i, %j] : memref<10x10xf32>
    }
  }
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      affine.for %k = 1 to 10 {
        %a = affine.load %A[%j, %k - 1] : memref<10x10xf32>
        affine.store %a, %A[%j, %k] : memref<10x10xf32>
      }
    }
    affine.store %cst, %B[%i] : memref<10xf32>
  }
  return
}""")
    t, i1, i2, j2, i3, j3, k3 = _loops(func)
    # Gauss-Seidel in time: distances (0, 1), (1, -1), (1, 1): (t, i) is not permutable.
    assert perfect_band(t) == [t, i1] and not is_permutable([t, i1])
    # (1, -1) on (i, j): not permutable either.
    assert perfect_band(i2) == [i2, j2] and not is_permutable([i2, j2])
    # %i repeats the same (j, k) nest: distances (>= 1, 0, -1, ...) across %i, (0, 1) within
    # one %i; %i's body is imperfect, (j, k) is a permutable band.
    assert perfect_band(i3) == [i3] and is_permutable([j3, k3]) and is_permutable([i3, j3])
    assert not is_permutable([i3, k3])  # not directly nested
    assert [[lp.induction_var.name_hint for lp in b] for b in permutable_bands(func)] == \
        [["t"], ["i"], ["i"], ["j"], ["i"], ["j", "k"]]
    assert [[lp.induction_var.name_hint for lp in b] for b in permutable_bands(i3)] == [["i"], ["j", "k"]]


def test_band_with_iter_args_only_innermost():
    func = _func("""
func.func @f(%A: memref<8x8xf32>, %o: memref<8xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    %s = affine.for %j = 0 to 8 iter_args(%acc = %z) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      %r = arith.addf %acc, %a : f32
      affine.yield %r : f32
    }
    affine.store %s, %o[%i] : memref<8xf32>
  }
  %t = affine.for %i = 0 to 8 iter_args(%acc = %z) -> (f32) {
    %u = affine.for %j = 0 to 8 iter_args(%acc2 = %acc) -> (f32) {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      %r = arith.addf %acc2, %a : f32
      affine.yield %r : f32
    }
    affine.yield %u : f32
  }
  return
}""")
    i, j, i2, j2 = _loops(func)
    assert is_permutable([i, j]) and perfect_band(i) == [i]  # directly nested, not perfectly
    assert perfect_band(i2) == [i2, j2] and not is_permutable([i2, j2])  # iter_args on the outer loop
    assert [len(b) for b in permutable_bands(func)] == [1, 1, 1, 1]


def test_trip_counts():
    func = _func("""
func.func @f(%A: memref<64xf32>, %N: index) {
  %c10 = arith.constant 10 : index
  affine.for %a = 0 to 10 step 3 {
  }
  affine.for %b = 5 to 2 {
  }
  affine.for %c = 0 to %c10 {
  }
  affine.for %d = 0 to %N step 2 {
    affine.for %e = %d to affine_map<(d0) -> (d0 + 4)>(%d) {
    }
    affine.for %f = max affine_map<(d0) -> (d0, 2)>(%d) to min affine_map<(d0) -> (d0 + 8, 6)>(%d) {
    }
    affine.for %g = affine_map<(d0) -> (d0)>(%d) to min affine_map<(d0)[s0] -> (d0 + 8, s0)>(%d)[%N] {
    }
  }
  affine.for %h = max affine_map<() -> (1, 3)>() to min affine_map<() -> (9, 7)>() {
  }
  return
}""")
    a, b, c, d, e, f, g, h = _loops(func)
    assert [constant_trip_count(x) for x in (a, b, c, d, e, f, g, h)] == [4, 0, 10, None, 4, None, None, 4]
    m, operands = trip_count_expr(d)
    assert m == AffineMap(0, 1, (AffineExpr.symbol(0).ceildiv(2),)) and operands == (func.args[1],)
    m, operands = trip_count_expr(e)
    assert m.results[0] == AffineExpr.constant(4) and operands == ()
    assert trip_count_expr(f) is None and trip_count_expr(g) is None
    m, operands = trip_count_expr(b)
    assert m.results[0] == AffineExpr.constant(-3)  # negative: the loop does not run


def test_unknown_side_effects_block_parallelism():
    # MLIR's affine-parallelize test `unknown_op_conservative`: an op with unknown effects,
    # even one that uses no memref, keeps the loop sequential.
    m = air.parse(
        """
func.func @f(%A: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    "unknown"() : () -> ()
  }
  affine.for %j = 0 to 10 {
    %v = affine.load %A[%j] : memref<10xf32>
  }
  return
}""",
        allow_unregistered=True,
    )
    first, second = [op for op in m.functions[0].body.ops if op.name == "affine.for"]
    decision = parallel_decision(first)
    assert not decision.parallel and "'unknown'" in decision.reason and "unknown side effects" in decision.reason
    assert is_parallel(second)
