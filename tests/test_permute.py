"""Loop permutation (``affine-loop-permute``, ``transforms.loops.permute``): MLIR's meaning of the
permutation, exact legality, refusals that leave the IR unchanged, random programs."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
import analysis
from affine_ir import AffineExpr
from affine_ir.testing import inputs, programs, programs_with_inputs, run
from affine_ir.types import MemRefType
from transforms import PipelineError, TransformError
from transforms.loop_utils import loop_name, outermost_bands, value_name
from transforms.loops.permute import (
    LoopPermute,
    _apply_permutation,
    interchange_loops,
    permute_loops,
    permuted_order,
)
from transforms.pass_manager import PassManager
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, run_pipeline

NEST3 = """
func.func @nest(%A: memref<4x5x6xf32>, %B: memref<4x5xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 5 {
      affine.for %k = 0 to 6 {
        %v = affine.load %B[%i, %j] : memref<4x5xf32>
        %w = affine.load %A[%i, %j, %k] : memref<4x5x6xf32>
        %s = arith.addf %v, %w : f32
        affine.store %s, %A[%i, %j, %k] : memref<4x5x6xf32>
      }
    }
  }
  return
}
"""

# A[i][j] = A[i - 1][j + 1]: distance (1, -1); interchange reverses it.
SKEWED = """
func.func @skewed(%A: memref<10x10xf32>) {
  affine.for %i = 1 to 10 {
    affine.for %j = 0 to 9 {
      %v = affine.load %A[%i - 1, %j + 1] : memref<10x10xf32>
      affine.store %v, %A[%i, %j] : memref<10x10xf32>
    }
  }
  return
}
"""

# Distances {(1, -t, t) : 0 <= t < 6} in one dependence: the ranges (1, [-5, 0], [0, 5]) allow
# the reversed (k, j, i) order to start (0, -1, ...) but no real pair does: only the exact
# check accepts the permutation (2, 1, 0).
DIAGONAL = """
#set = affine_set<(d0) : (d0 == 0)>
func.func @diagonal(%A: memref<8x16xf32>) {
  affine.for %i = 1 to 8 {
    affine.for %j = 0 to 6 {
      affine.for %k = 0 to 6 {
        %v = affine.load %A[%i - 1, %j + %k] : memref<8x16xf32>
        %c = arith.constant 1.0 : f32
        %w = arith.addf %v, %c : f32
        affine.if #set(%k) {
          affine.store %w, %A[%i, %j + %k] : memref<8x16xf32>
        }
      }
    }
  }
  return
}
"""

TRIANGULAR = """
func.func @tri(%A: memref<8x8x4xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      affine.for %k = 0 to 4 {
        %v = affine.load %A[%i, %j, %k] : memref<8x8x4xf32>
        %s = arith.addf %v, %v : f32
        affine.store %s, %A[%i, %j, %k] : memref<8x8x4xf32>
      }
    }
  }
  return
}
"""

# MLIR's loop-permute.mlir @check_validity_with_iter_args, as ours reads it.
ITER_ARGS = """
func.func @check_validity_with_iter_args(%U0 : index, %U1 : index, %U2 : index) {
  %buf = memref.alloc() : memref<100x100xf32>
  %cst = arith.constant 1.0 : f32
  affine.for %arg0 = 0 to %U0 {
    affine.for %arg1 = 0 to %U1 {
      %res = affine.for %arg2 = 0 to %U2 iter_args(%iter1 = %cst) -> (f32) {
        %val = affine.load %buf[%arg0 + 10, %arg1 + 20] : memref<100x100xf32>
        %newVal = arith.addf %val, %cst : f32
        affine.store %newVal, %buf[%arg0 + 10, %arg1 + 20] : memref<100x100xf32>
        %newVal2 = arith.addf %newVal, %iter1 : f32
        affine.yield %iter1 : f32
      }
    }
  }
  return
}
"""

# Hand-written stencils for the illegal-request test: in-place updates with carried dependences.
STENCILS = [
    # Gauss-Seidel 2-D: distances (1, 0), (0, 1), (1, -1)
    """
func.func @gauss_seidel(%A: memref<10x10xf32>) {
  affine.for %i = 1 to 9 {
    affine.for %j = 1 to 9 {
      %n = affine.load %A[%i - 1, %j] : memref<10x10xf32>
      %w = affine.load %A[%i, %j - 1] : memref<10x10xf32>
      %ne = affine.load %A[%i - 1, %j + 1] : memref<10x10xf32>
      %s0 = arith.addf %n, %w : f32
      %s1 = arith.addf %s0, %ne : f32
      affine.store %s1, %A[%i, %j] : memref<10x10xf32>
    }
  }
  return
}
""",
    # a 3-D wavefront with a (0, 1, -1) and a (1, -1, 0) dependence
    """
func.func @wave3(%A: memref<6x6x6xf32>) {
  affine.for %i = 1 to 6 {
    affine.for %j = 1 to 5 {
      affine.for %k = 1 to 5 {
        %a = affine.load %A[%i, %j - 1, %k + 1] : memref<6x6x6xf32>
        %b = affine.load %A[%i - 1, %j + 1, %k] : memref<6x6x6xf32>
        %s = arith.addf %a, %b : f32
        affine.store %s, %A[%i, %j, %k] : memref<6x6x6xf32>
      }
    }
  }
  return
}
""",
    # reversed-order accumulation: an anti dependence (WAR) with distance (1, -1)
    """
func.func @anti(%A: memref<9x9xi32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 1 to 9 {
      %v = affine.load %A[%i + 1, %j - 1] : memref<9x9xi32>
      %c = arith.constant 3 : i32
      %s = arith.addi %v, %c : i32
      affine.store %s, %A[%i, %j] : memref<9x9xi32>
    }
  }
  return
}
""",
    SKEWED,
    DIAGONAL,
]


def band_of(module, k: int = 0):
    return outermost_bands(module.functions[0])[k]


def names(loops) -> list[str]:
    return [loop_name(x) for x in loops]


def random_args(module, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for a in module.functions[0].args:
        t = a.type
        if isinstance(t, MemRefType):
            dtype = np.float32 if str(t.element_type) == "f32" else np.int32
            args.append(rng.integers(-4, 5, size=tuple(t.shape)).astype(dtype))
        else:
            args.append(int(rng.integers(0, 7)))
    return args


# -- MLIR's meaning of the permutation ---------------------------------------------------------------
@pytest.mark.parametrize("perm, order", [
    ((0, 1, 2), ["%i", "%j", "%k"]),
    ((1, 2, 0), ["%k", "%i", "%j"]),   # MLIR CHECK-120: "foo"(%i, %j) -> (%arg4, %arg5), "bar"(%k) -> %arg3
    ((1, 0, 2), ["%j", "%i", "%k"]),   # CHECK-102
    ((0, 2, 1), ["%i", "%k", "%j"]),   # CHECK-021
    ((2, 0, 1), ["%j", "%k", "%i"]),   # CHECK-201: permutation[k] is the new position of loop k
    ((2, 1, 0), ["%k", "%j", "%i"]),   # CHECK-210
])
def test_permutation_has_mlirs_meaning(perm, order):
    m = air.parse(NEST3)
    new = permute_loops(band_of(m), perm)
    assert names(new) == order
    assert names(band_of(m)) == order
    assert permuted_order(["%i", "%j", "%k"], perm) == order
    air.verify(m)


def test_permute_keeps_ops_and_locations():
    m = air.parse(NEST3)
    band = band_of(m)
    locs = [x.location for x in band]
    new = permute_loops(band, (2, 0, 1))
    assert {id(x) for x in new} == {id(x) for x in band}
    assert [x.location for x in permuted_order(band, (2, 0, 1))] == [locs[1], locs[2], locs[0]]
    text = str(m)
    assert str(air.parse(text)) == text


def test_interchange_loops():
    m = air.parse(NEST3)
    band = band_of(m)
    assert names(interchange_loops(band[0], band[1])) == ["%j", "%i"]
    assert names(band_of(m)) == ["%j", "%i", "%k"]
    assert_preserves_semantics("affine-loop-permute{permutation=1,0}", air.parse(NEST3), random_args(m))


def test_pass_permutes_every_band_with_enough_loops():
    src = NEST3.replace("return", """affine.for %x = 0 to 4 {
    affine.for %y = 0 to 5 {
      %v = affine.load %B[%x, %y] : memref<4x5xf32>
      affine.store %v, %B[%x, %y] : memref<4x5xf32>
    }
  }
  affine.for %z = 0 to 4 {
    %v = affine.load %B[%z, 0] : memref<4x5xf32>
    affine.store %v, %B[%z, 1] : memref<4x5xf32>
  }
  return""")
    m = air.parse(src)
    pm = PassManager.parse("affine-loop-permute{permutation=1,0}")
    out = pm.run(m)
    bands = outermost_bands(out.functions[0])
    assert [names(b) for b in bands] == [["%j", "%i", "%k"], ["%y", "%x"], ["%z"]]
    kinds = [(d.kind, d.message) for d in pm.trace.decisions]
    assert ("applied", "permuted (%i, %j) to (%j, %i)") in kinds
    assert ("applied", "permuted (%x, %y) to (%y, %x)") in kinds
    assert any(k == "note" and "fewer than the permutation's 2" in msg for k, msg in kinds)
    assert_preserves_semantics("affine-loop-permute{permutation=1,0}", m, random_args(m))


def test_option_must_be_a_permutation():
    with pytest.raises(PipelineError, match="not a permutation"):
        PassManager.parse("affine-loop-permute{permutation=0,0}")
    assert str(LoopPermute(permutation=(1, 0))) == "affine-loop-permute{permutation=1,0}"
    m = air.parse(NEST3)
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (0, 1)), m)
    assert "not a permutation of the 3 loops (%i, %j, %k)" in err.reason


# -- legality -----------------------------------------------------------------------------------------
def test_refuses_reversing_a_dependence():
    m = air.parse(SKEWED)
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (1, 0)), m)
    assert err.reason.startswith("cannot permute (%i, %j) to (%j, %i): RAW %A: ")
    assert "carried by %i, distance (1, -1)" in err.reason
    assert "at distance (1, -1) would run in reverse order, at distance (-1, 1)" in err.reason
    assert err.dependence is not None and err.dependence.kind == "RAW"
    assert str(err).startswith("<string>:3:3: error: affine-loop-permute: cannot permute")
    pm = PassManager.parse("affine-loop-permute{permutation=1,0}")
    out = pm.run(m)
    assert str(out) == str(m)
    assert [d.kind for d in pm.trace.decisions] == ["refused"]


def test_exact_check_accepts_what_ranges_cannot_decide():
    m = air.parse(DIAGONAL)
    band = band_of(m)
    deps = [d for d in analysis.dependences(band[0]) if d.kind == "RAW"]
    assert deps and deps[0].distances == ((1, 1), (-5, 0), (0, 5))   # the box holds (1, -1, 0) -> (0, -1, 1)
    args = random_args(m)
    out = assert_preserves_semantics("affine-loop-permute{permutation=2,1,0}", m, args)
    assert names(band_of(out)) == ["%k", "%j", "%i"]
    # ... while (1, 0, 2) -> (%j, %i, %k) really reverses pairs at distance (1, -t, t), t > 0.
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (1, 0, 2)), m)
    assert "RAW %A" in err.reason and "would run in reverse order" in err.reason


def test_non_rectangular_bands_get_new_bounds():
    m = air.parse(TRIANGULAR)
    out = assert_preserves_semantics("affine-loop-permute{permutation=1,0,2}", m, random_args(m))
    band = band_of(out)
    assert names(band) == ["%j", "%i", "%k"]
    # j in [0, i + 1), i in [0, 8)  ->  j in [0, 8), i in [max(0, j), 8)
    assert (band[0].lower_bound_map.results, band[0].upper_bound_map.results) == ((AffineExpr.constant(0),),
                                                                                 (AffineExpr.constant(8),))
    assert set(band[1].lower_bound_map.results) == {AffineExpr.constant(0), AffineExpr.dim(0)}
    assert band[1].lower_bound_operands == (band[0].induction_var,)
    for perm in itertools.permutations(range(3)):
        assert_preserves_semantics(f"affine-loop-permute{{permutation={','.join(map(str, perm))}}}", m,
                                   random_args(m))


def test_non_rectangular_with_steps_and_coefficients():
    src = """
func.func @f(%A: memref<40x40xi32>, %N: index) {
  affine.for %i = 1 to min affine_map<()[s0] -> (s0 + 5, 13)>()[%N] step 3 {
    affine.for %j = affine_map<(d0) -> (d0 * 2)>(%i) to affine_map<(d0) -> (d0 * 3 + 2)>(%i) {
      %v = affine.load %A[%i, %j] : memref<40x40xi32>
      %c = arith.constant 1 : i32
      %s = arith.addi %v, %c : i32
      affine.store %s, %A[%i, %j] : memref<40x40xi32>
    }
  }
  return
}
"""
    m = air.parse(src)
    for n in range(7):
        out = assert_preserves_semantics("affine-loop-permute{permutation=1,0}", m, [random_args(m)[0], n])
    assert names(band_of(out)) == ["%j", "%i"]
    # i = 1 + 3t, 2i <= j < 3i + 2: i from max(1 + ((j - 1 - 1) ceildiv 3) * 3, ...) keeps the lattice of %i
    assert band_of(out)[1].step == 3


def test_refuses_bounds_it_cannot_rewrite():
    src = """
func.func @f(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = affine_map<(d0) -> (d0)>(%i) to 8 step 2 {
      %v = affine.load %A[%i, %j] : memref<8x8xf32>
      affine.store %v, %A[%j, %i] : memref<8x8xf32>
    }
  }
  return
}
"""
    m = air.parse(src)
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (1, 0)), m)
    assert "cannot rewrite the bounds of the non-rectangular nest: %j has step 2 and its lower bound uses a loop " \
           "moved inside it" in err.reason
    m = air.parse(src.replace("affine_map<(d0) -> (d0)>(%i) to 8 step 2",
                              "affine_map<(d0) -> (d0 floordiv 2)>(%i) to 8"))
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (1, 0)), m)
    assert "inside floordiv/mod" in err.reason


def test_iter_args_only_innermost_and_staying_there():
    m = air.parse(ITER_ARGS)
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (2, 1, 0)), m)
    assert "%arg2 has iter_args and would not stay innermost" in err.reason
    out = assert_preserves_semantics("affine-loop-permute{permutation=1,0,2}", m, [3, 4, 2])
    assert names(band_of(out)) == ["%arg1", "%arg0", "%arg2"]
    # a band whose outer loop has iter_args
    src = """
func.func @f(%A: memref<8x8xf32>) -> f32 {
  %c = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to 8 iter_args(%acc = %c) -> (f32) {
    %s = affine.for %j = 0 to 8 iter_args(%a = %acc) -> (f32) {
      %v = affine.load %A[%i, %j] : memref<8x8xf32>
      %t = arith.addf %a, %v : f32
      affine.yield %t : f32
    }
    affine.yield %s : f32
  }
  return %r : f32
}
"""
    m3 = air.parse(src)
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m3), (1, 0)), m3)
    assert "%i has iter_args and is not the innermost loop" in err.reason


def test_refuses_imperfect_nest_and_unknown_ops():
    m = air.parse(SKEWED.replace("affine.for %j = 0 to 9 {", "%z = affine.load %A[0, 0] : memref<10x10xf32>\n"
                                 "    affine.for %j = 0 to 9 {"))
    outer = band_of(m)[0]
    inner = next(o for o in outer.body.ops if o.name == "affine.for")
    err = assert_refused_unchanged(lambda: permute_loops([outer, inner], (1, 0)), m)
    assert "not perfectly nested (%i holds more than %j)" in err.reason
    src = """
func.func @permute(%U0 : index, %U1 : index) {
  affine.for %arg0 = 0 to %U0 {
    affine.for %arg1 = 0 to %U1 {
      "foo"(%arg0, %arg1) : (index, index) -> ()
    }
  }
  return
}
"""
    m = air.parse(src, allow_unregistered=True)
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (1, 0)), m)
    assert "'foo' at <string>:5:7 has unknown side effects" in err.reason
    # Any op declaring no effects is unknown (the effects are asked, not the name): a barrier too.
    m = air.parse(src.replace('"foo"(%arg0, %arg1) : (index, index) -> ()', "gpu.barrier"))
    assert m.functions[0].body.ops[0].body.ops[0].body.ops[0].memory_effects() is None
    err = assert_refused_unchanged(lambda: permute_loops(band_of(m), (1, 0)), m)
    assert "'gpu.barrier' at <string>:5:7 has unknown side effects" in err.reason


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (MLIR) is not installed")
def test_mlir_accepts_the_output():
    for src, perm in [(DIAGONAL, "2,1,0"), (TRIANGULAR, "2,1,0"), (TRIANGULAR, "1,0,2")]:
        out = run_pipeline(f"affine-loop-permute{{permutation={perm}}}", air.parse(src))
        assert "affine.for %k" in str(out)
        r = subprocess.run(["iree-opt", "--verify-each", "-"], input=str(out), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr


# -- random programs ----------------------------------------------------------------------------------
def _property(perms, stats, **knobs):
    @settings(max_examples=100, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(programs_with_inputs(**knobs), st.sampled_from(perms))
    def check(case, perm):
        module, args = case
        pm = PassManager([LoopPermute(permutation=perm)])
        out = pm.run(module)
        air.verify(out)
        text = str(out)
        assert str(air.parse(text)) == text
        for a, b in zip(run(module, args), run(out, args)):
            np.testing.assert_array_equal(a, b)
        stats["programs"] += 1
        stats["eligible"] += any(len(b) >= len(perm) for b in outermost_bands(module.functions[0]))
        stats["applied"] += any(d.kind == "applied" for d in pm.trace.decisions)
        stats["refused"] += any(d.kind == "refused" for d in pm.trace.decisions)

    check()


def test_random_programs_interchange():
    stats = Counter()
    _property([(1, 0)], stats, max_depth=4, max_nests=2, max_statements=2)
    assert stats["programs"] >= 100
    assert stats["applied"] >= max(8, 0.25 * stats["eligible"]), stats


def test_random_programs_three_loop_permutations():
    stats = Counter()
    perms = [p for p in itertools.permutations(range(3)) if p != (0, 1, 2)]
    # one statement per nest and no iter_args loops: deeper perfect bands
    _property(perms, stats, max_depth=4, max_nests=3, max_statements=1, allow_if=False, allow_iter_args=False)
    assert stats["programs"] >= 100
    assert stats["applied"] >= max(8, 0.25 * stats["eligible"]), stats


def _try_every_permutation(module, args, stats) -> None:
    """Every non-identity permutation of every outermost band of depth 2-3 of ``module``:
    refused with the IR unchanged and a dependence named, or equivalent."""
    reference = run(module, args)
    for position, band in enumerate(outermost_bands(module.functions[0])):
        n = min(len(band), 3)
        if n < 2:
            continue
        for perm in itertools.permutations(range(n)):
            if perm == tuple(range(n)):
                continue
            work = module.clone()
            sub = outermost_bands(work.functions[0])[position][:n]
            try:
                permute_loops(sub, perm)
            except TransformError:
                err = assert_refused_unchanged(lambda: permute_loops(sub, perm), work)  # noqa: B023
                if err.dependence is None:
                    stats["refused_structure"] += 1
                    continue
                dep = err.dependence
                assert f"{dep.kind_name} {value_name(dep.memref)}: " in err.reason
                stats["refused"] += 1
                # sanity: without the check the permutation changes the result of some programs
                _apply_permutation(sub, perm)
                differs = any(not np.array_equal(x, y) for x, y in zip(reference, run(work, args)))
                stats["refused_and_differs"] += differs
                continue
            stats["legal"] += 1
            air.verify(work)
            for x, y in zip(reference, run(work, args)):
                np.testing.assert_array_equal(x, y)


def test_generated_illegal_requests_are_refused_or_equivalent():
    stats = Counter()
    for k, text in enumerate(STENCILS):
        m = air.parse(text)
        mine = Counter()
        _try_every_permutation(m, random_args(m, k), mine)
        stats.update(mine)
        assert mine["refused"] >= 1, (text, mine)
        if text is not DIAGONAL:  # DIAGONAL's reversed pairs feed loads whose values are never stored
            assert mine["refused_and_differs"] == mine["refused"], (text, mine)
    assert stats["refused"] >= 10, stats

    # deep nests updating one memref in place: many carried dependences
    @settings(max_examples=120, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(programs(max_depth=4, max_nests=3, max_statements=2, max_memrefs=1, allow_if=False,
                    allow_iter_args=False, element_types=("i32",)).flatmap(lambda m: inputs(m).map(lambda a: (m, a))))
    def check(case):
        module, args = case
        _try_every_permutation(module, args, stats)

    check()
    assert stats["refused"] >= 50, stats
    assert stats["legal"] >= 30, stats
    # Without the check, refused permutations really change what programs compute (not all:
    # a reversed pair may move equal values, or feed a load whose value is not stored).
    assert stats["refused_and_differs"] >= 10, stats


# -- automatic choice (affine-loop-permute{auto}) -------------------------------------------------
def test_auto_moves_the_unit_stride_parallel_loop_innermost():
    """matmul (i, j, k) -> (i, k, j): B[k, j] and C[i, j] contiguous along j, A[i, k] invariant,
    j parallel; conv2d moves %w innermost. Both stay equivalent on the interpreter."""
    from affine_ir.dialects.affine import AffineForOp
    from affine_ir.testing import assert_equivalent
    from transforms.loops.permute_choice import innermost_score

    mm = air.library.matmul(6, 5, 4)
    band = outermost_bands(mm.functions[0])[1]
    assert [innermost_score(band, p) for p in range(3)] == [-8, 7, -4]
    pm = PassManager.parse("affine-loop-permute{auto}")
    out = pm.run(mm)
    applied = [d.message for d in pm.trace.decisions if d.kind == "applied"]
    assert applied == ["permuted (%i, %j, %k) to (%i, %k, %j): innermost score 7 for %j against -4 for %k "
                       "(unit-stride or invariant accesses, no carried dependence)"]
    rng = np.random.default_rng(0)
    assert_equivalent(mm, out, [rng.integers(-3, 4, s).astype(np.float32) for s in ((6, 4), (4, 5), (6, 5))])
    conv = air.library.conv2d(1, 2, 6, 6, 3, 3, 3)
    out = PassManager.parse("affine-loop-permute{auto}").run(conv)
    inner = [op for op in out.walk() if isinstance(op, AffineForOp) and not any(
        isinstance(x, AffineForOp) for x in op.body.ops)]
    assert inner[-1].induction_var.name_hint == "w"
    assert_equivalent(conv, out, [rng.integers(-3, 4, s).astype(np.float32) for s in ((1, 2, 6, 6), (3, 2, 3, 3))]
                      + [np.zeros((1, 3, 4, 4), np.float32)])


def test_auto_never_picks_an_illegal_order():
    """A stencil whose only better innermost loop would reverse a dependence is kept."""
    m = air.parse("""
func.func @f(%A: memref<8x8xf32>) {
  affine.for %j = 0 to 7 {
    affine.for %i = 1 to 8 {
      %a = affine.load %A[%i - 1, %j + 1] : memref<8x8xf32>
      affine.store %a, %A[%i, %j] : memref<8x8xf32>
    }
  }
  return
}""")
    pm = PassManager.parse("affine-loop-permute{auto}")
    out = pm.run(m)
    assert str(out) == str(m) and [d.kind for d in pm.trace.decisions] == ["note"]


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs_with_inputs(max_memrefs=3))
def test_auto_preserves_semantics_on_random_programs(case):
    module, args = case
    assert_preserves_semantics("affine-loop-permute{auto}", module, args)
