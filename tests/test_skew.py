"""Loop skewing and wavefronts (``affine-loop-skew``, ``transforms.loops.skew``; the analysis in
``analysis.skew``): seidel-2d and other in-place stencils keep their results exactly, the loops
the analysis calls parallel are parallel, refusals leave the IR unchanged and name the
dependence, and gpu-map runs the wavefront as a host loop of launches."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import affine_ir as air
import analysis
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders, run
from transforms import TransformError
from transforms.errors import RefusalKind
from transforms.loop_utils import loop_name, outermost_bands
from transforms.loops.skew import check_skew, has_parallel_loop, skew_band
from transforms.pass_manager import PassManager
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, map_to_gpu

NEIGHBOURS_2D = [(di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1)]


def seidel(tsteps: int | None = None, n: int | None = None, dtype: str = "i32") -> str:
    """seidel-2d (PolyBench) with an exact update: the 9 neighbours summed (integers wrap exactly),
    symbolic sizes where ``tsteps``/``n`` are None."""
    shape = "?x?" if n is None else f"{n}x{n}"
    args = (["%tsteps: index"] if tsteps is None else []) + (["%n: index"] if n is None else [])
    t_ub = "%tsteps" if tsteps is None else str(tsteps)
    i_ub = "affine_map<()[s0] -> (s0 - 1)>()[%n]" if n is None else str(n - 1)
    add = "arith.addi" if dtype == "i32" else "arith.addf"
    lines = []
    prev = None
    for k, (di, dj) in enumerate(NEIGHBOURS_2D):
        lines.append(f"        %a{k} = affine.load %A[%i + {di}, %j + {dj}] : memref<{shape}x{dtype}>")
        if prev is not None:
            lines.append(f"        %s{k} = {add} %{prev}, %a{k} : {dtype}")
            prev = f"s{k}"
        else:
            prev = f"a{k}"
    body = "\n".join(lines)
    return f"""
func.func @seidel_2d({", ".join(args + [f"%A: memref<{shape}x{dtype}>"])}) {{
  affine.for %t = 0 to {t_ub} {{
    affine.for %i = 1 to {i_ub} {{
      affine.for %j = 1 to {i_ub} {{
{body}
        affine.store %{prev}, %A[%i, %j] : memref<{shape}x{dtype}>
      }}
    }}
  }}
  return
}}
"""


def band_of(module, k: int = 0) -> list[AffineForOp]:
    return outermost_bands(module.functions[0])[k]


def ints(shape, seed: int = 0, dtype=np.int32) -> np.ndarray:
    return np.random.default_rng(seed).integers(-5, 6, size=shape).astype(dtype)


# -- the analysis --------------------------------------------------------------------------------------------------
def test_seidel_gets_plutos_skew_and_a_wavefront():
    m = air.parse(seidel())
    plan = analysis.plan_skew(band_of(m))
    assert isinstance(plan, analysis.SkewPlan)
    assert plan.skew == ((1, 0, 0), (1, 1, 0), (2, 1, 1))
    assert plan.rows_text(plan.skew) == "(t, t + i, 2t + i + j)"
    assert plan.rows_text() == "(4t + 2i + j, t + i, 2t + i + j)"
    assert plan.parallel == (False, True, True)
    inv = np.array(plan.inverse) @ np.array(plan.transform)
    assert (inv == np.eye(3, dtype=int)).all()
    skew_only = analysis.plan_skew(band_of(m), wavefront=False)
    assert skew_only.transform == skew_only.skew and skew_only.parallel == (False, False, False)


def test_every_transformed_distance_is_non_negative_on_the_exact_pairs():
    """With constant sizes the dependent pairs can be listed: T d >= 0 for each, and the wavefront
    component is >= 1 (the analysis works on the relations; this checks it pair by pair)."""
    m = air.parse(seidel(3, 6))
    band = band_of(m)
    plan = analysis.plan_skew(band)
    T = np.array(plan.skew)
    seen = 0
    for dep in analysis.dependences(band[0]):
        if not dep.is_loop_carried:
            continue
        for src, dst in dep.iteration_pairs():
            d = np.array(dst[:3]) - np.array(src[:3])
            if not d.any():  # a pair of one iteration (loop-independent): its order is the text's
                continue
            z = T @ d
            assert (z >= 0).all() and z.sum() >= 1, (dep, d)
            seen += 1
    assert seen > 100


def test_the_bounds_scan_exactly_the_image_of_the_domain():
    """The new nest, analysed as any nest, has the iteration domain the plan says (isl): each
    iteration of the image once, nothing else."""
    from analysis.isl_bridge import op_domain

    m = air.parse(seidel())
    plan = analysis.plan_skew(band_of(m))
    new = skew_band(band_of(m)).loops
    got = op_domain(analysis.Scop(new[0]), new[-1], "L").reset_tuple_id()
    assert got.is_equal(plan.image.align_params(got.get_space()))


# -- seidel-2d through the pass ------------------------------------------------------------------------------------
@pytest.mark.parametrize("tsteps, n", [(3, 7), (1, 3), (2, 4), (0, 6), (4, 2), (2, 9)])
def test_seidel_symbolic_sizes_keeps_results(tsteps, n):
    m = air.parse(seidel())
    assert_preserves_semantics("affine-loop-skew", m, [tsteps, n, ints((max(n, 1), max(n, 1)), tsteps + n)])


@pytest.mark.parametrize("tsteps, n", [(3, 7), (1, 3), (5, 5), (2, 8)])
@pytest.mark.parametrize("wavefront", [True, False])
def test_seidel_constant_sizes_keeps_results(tsteps, n, wavefront):
    m = air.parse(seidel(tsteps, n))
    out = assert_preserves_semantics(f"affine-loop-skew{{wavefront={str(wavefront).lower()}}}", m,
                                     [ints((n, n), n)])
    assert len(band_of(out)) == 3


def test_seidel_float_as_in_polybench_keeps_bits():
    text = open("benchmarks/polybench/seidel-2d.mlir").read()
    m = air.parse(text)
    A = np.random.default_rng(3).random((8, 8)).astype(np.float32)
    assert_preserves_semantics("affine-loop-skew", m, [4, 8, A])


def test_seidel_loop_structure_and_parallel_loops():
    m = air.parse(seidel())
    band = band_of(m)
    result = skew_band(band)
    assert [loop_name(lp) for lp in result.loops] == ["%wave", "%i_skew", "%j_skew"]
    assert result.parallel == (False, True, True)
    for lp, par in zip(result.loops, result.parallel):
        assert analysis.is_parallel(lp) == par
    assert analysis.perfect_band(result.loops[0]) == result.loops
    text = str(m)
    assert "%i = affine.apply" in text and "%j = affine.apply" in text
    assert "%t = affine.apply" not in text  # the body does not use %t: no apply for it
    assert "affine.for %wave = max" in text and "affine.for %i_skew = max" in text
    air.verify(m)


def test_skew_only_gives_a_fully_permutable_band():
    m = air.parse(seidel(4, 10))
    assert not analysis.is_permutable(band_of(m))
    ref = air.parse(seidel(4, 10))
    result = skew_band(band_of(m), wavefront=False)
    assert analysis.is_permutable(result.loops)
    assert [loop_name(lp) for lp in result.loops] == ["%t", "%i_skew", "%j_skew"]
    A = ints((10, 10), 5)
    assert np.array_equal(run(m, [A])[0], run(ref, [A])[0])


TRIANGLE = """
func.func @triangle(%n: index, %A: memref<?x?xi32>) {
  affine.for %i = 1 to %n {
    affine.for %j = 1 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %a = affine.load %A[%i - 1, %j] : memref<?x?xi32>
      %b = affine.load %A[%i, %j - 1] : memref<?x?xi32>
      %c = affine.load %A[%i - 1, %j - 1] : memref<?x?xi32>
      %s0 = arith.addi %a, %b : i32
      %s = arith.addi %s0, %c : i32
      affine.store %s, %A[%i, %j] : memref<?x?xi32>
    }
  }
  return
}
"""


@pytest.mark.parametrize("n", [1, 2, 5, 8])
@pytest.mark.parametrize("wavefront", [True, False])
def test_triangular_band(n, wavefront):
    m = air.parse(TRIANGLE)
    out = assert_preserves_semantics(f"affine-loop-skew{{wavefront={str(wavefront).lower()}}}", m,
                                     [n, ints((n + 1, n + 1), n)])
    assert ("%wave" in str(out)) == wavefront


def test_pass_records_decision():
    pm = PassManager.parse("affine-loop-skew")
    pm.run(air.parse(seidel()))
    (d,) = pm.trace.decisions
    assert d.kind == "applied"
    assert "(t, t + i, 2t + i + j)" in d.message and "parallel: %i_skew, %j_skew" in d.message


def test_pass_leaves_nests_with_a_parallel_loop_unless_asked():
    jacobi = """
func.func @jacobi(%A: memref<10x10xi32>, %B: memref<10x10xi32>) {
  affine.for %t = 0 to 3 {
    affine.for %i = 1 to 9 {
      affine.for %j = 1 to 9 {
        %a = affine.load %A[%i - 1, %j] : memref<10x10xi32>
        %b = affine.load %A[%i + 1, %j] : memref<10x10xi32>
        %s = arith.addi %a, %b : i32
        affine.store %s, %B[%i, %j] : memref<10x10xi32>
      }
    }
  }
  return
}
"""
    m = air.parse(jacobi)
    assert has_parallel_loop(band_of(m)[0])
    pm = PassManager.parse("affine-loop-skew")
    out = pm.run(m)
    assert "%wave" not in str(out)
    assert [d.kind for d in pm.trace.decisions] == ["note"]
    args = [ints((10, 10), 1), ints((10, 10), 2)]
    out = assert_preserves_semantics("affine-loop-skew{all-nests}", m, args)
    assert "%wave" in str(out)


STRIDED = """
func.func @f(%A: memref<20x20xi32>) {
  affine.for %t = 1 to 9 step 2 {
    affine.for %i = 5 to 15 step 3 {
      %a = affine.load %A[%t - 1, %i + 3] : memref<20x20xi32>
      %b = affine.load %A[%t - 1, %i - 3] : memref<20x20xi32>
      %c = affine.load %A[%t + 1, %i] : memref<20x20xi32>
      %s = arith.addi %a, %b : i32
      %u = arith.addi %s, %c : i32
      affine.store %u, %A[%t + 1, %i] : memref<20x20xi32>
      affine.store %u, %A[%t - 1, %i] : memref<20x20xi32>
    }
  }
  return
}
"""


def test_a_band_with_steps_is_skewed_on_a_normalized_copy():
    """Steps 2 and 3: no loop is parallel; the pass normalizes a copy, skews it into a wavefront
    and replaces the nest (same results); a band the copy cannot skew either leaves the IR as it
    was with the refusal of the original band."""
    m = air.parse(STRIDED)
    assert not has_parallel_loop(band_of(m)[0])
    out = assert_preserves_semantics("affine-loop-skew", m, [ints((20, 20), 3)])
    assert "%wave" in str(out) and has_parallel_loop(band_of(out)[0])
    text = str(m)
    pm = PassManager.parse("affine-loop-skew{max-skew=0}")
    kept = pm.run(m)
    assert str(kept) == text
    (d,) = pm.trace.decisions
    assert d.kind == "refused" and "(%t, %i)" in d.message and "step" not in d.message, d.message


# -- refusals ------------------------------------------------------------------------------------------------------
IMPERFECT = """
func.func @imperfect(%A: memref<10xi32>) {
  %c1 = arith.constant 1 : i32
  affine.for %t = 0 to 4 {
    affine.store %c1, %A[0] : memref<10xi32>
    affine.for %i = 1 to 9 {
      %a = affine.load %A[%i - 1] : memref<10xi32>
      affine.store %a, %A[%i] : memref<10xi32>
    }
  }
  return
}
"""

NOT_EXACT = """
func.func @gather(%A: memref<10x10xi32>, %idx: memref<10xindex>) {
  affine.for %t = 0 to 4 {
    affine.for %i = 1 to 9 {
      %k = affine.load %idx[%i] : memref<10xindex>
      %a = memref.load %A[%t, %k] : memref<10x10xi32>
      affine.store %a, %A[%t, %i] : memref<10x10xi32>
    }
  }
  return
}
"""

# A[i][j] = A[i - 1][j + 3] + A[i][j - 1]: the distance (1, -3) needs the skew j + 3i.
FAR = """
func.func @far(%A: memref<10x16xi32>) {
  affine.for %i = 1 to 10 {
    affine.for %j = 1 to 12 {
      %a = affine.load %A[%i - 1, %j + 3] : memref<10x16xi32>
      %b = affine.load %A[%i, %j - 1] : memref<10x16xi32>
      %s = arith.addi %a, %b : i32
      affine.store %s, %A[%i, %j] : memref<10x16xi32>
    }
  }
  return
}
"""

# A[i][j] = A[i - 1][n - 1 - j] + A[i][j - 1]: row i reads row i - 1 reversed; distances
# (1, n - 1 - 2j) reach -(n - 2) for every n: no constant skew makes them non-negative.
REVERSED = """
func.func @reversed(%n: index, %A: memref<?x?xi32>) {
  affine.for %i = 1 to %n {
    affine.for %j = 1 to %n {
      %a = affine.load %A[%i - 1, -%j + %n - 1] : memref<?x?xi32>
      %b = affine.load %A[%i, %j - 1] : memref<?x?xi32>
      %s = arith.addi %a, %b : i32
      affine.store %s, %A[%i, %j] : memref<?x?xi32>
    }
  }
  return
}
"""

ITER_ARGS = """
func.func @carried(%A: memref<10x10xi32>, %z: i32) {
  affine.for %i = 1 to 10 {
    %r = affine.for %j = 0 to 10 iter_args(%acc = %z) -> (i32) {
      %a = affine.load %A[%i - 1, %j] : memref<10x10xi32>
      %s = arith.addi %acc, %a : i32
      affine.store %s, %A[%i, %j] : memref<10x10xi32>
      affine.yield %s : i32
    }
  }
  return
}
"""

STEP2 = """
func.func @step(%A: memref<10x10xi32>) {
  affine.for %i = 1 to 10 {
    affine.for %j = 0 to 9 step 2 {
      %a = affine.load %A[%i - 1, %j + 1] : memref<10x10xi32>
      affine.store %a, %A[%i, %j] : memref<10x10xi32>
    }
  }
  return
}
"""


def test_refuses_an_imperfect_band():
    m = air.parse(IMPERFECT)
    band = [band_of(m)[0], band_of(m)[0].body.ops[1]]
    err = assert_refused_unchanged(lambda: skew_band(band), m)
    assert "not perfectly nested" in err.reason and err.kind is RefusalKind.UNSUPPORTED


def test_refuses_a_dependence_that_is_not_exact():
    m = air.parse(NOT_EXACT)
    err = assert_refused_unchanged(lambda: skew_band(band_of(m)), m)
    assert "not exact" in err.reason and err.dependence is not None and not err.dependence.exact
    assert "%A" in err.reason


def test_refuses_a_distance_beyond_the_largest_factor_and_names_it():
    m = air.parse(FAR)
    err = assert_refused_unchanged(lambda: skew_band(band_of(m)), m)
    assert err.kind is RefusalKind.DEPENDENCE and err.dependence is not None
    assert "no skew of %j by %i with factors in 0..2" in err.reason
    assert "%A" in err.reason and "(1, -3)" in err.reason, err.reason
    args = [ints((10, 16), 4)]
    out = assert_preserves_semantics("affine-loop-skew{max-skew=3}", m, args)
    assert "%wave" in str(out)


def test_refuses_a_reversal_no_skew_fixes():
    m = air.parse(REVERSED)
    err = assert_refused_unchanged(lambda: skew_band(band_of(m), max_skew=5), m)
    assert err.kind is RefusalKind.DEPENDENCE and err.dependence is not None
    assert "%A" in err.reason and "< 0 even with the largest factors" in err.reason
    pm = PassManager.parse("affine-loop-skew")
    out = pm.run(m)
    assert "%wave" not in str(out)
    assert [d.kind for d in pm.trace.decisions] == ["refused"]


@pytest.mark.parametrize("text, words", [(ITER_ARGS, "iter_args"), (STEP2, "step 2")])
def test_refuses_iter_args_and_steps(text, words):
    m = air.parse(text)
    err = assert_refused_unchanged(lambda: skew_band(band_of(m)), m)
    assert words in err.reason


def test_refuses_a_single_loop():
    m = air.parse(IMPERFECT)
    err = assert_refused_unchanged(lambda: check_skew(band_of(m)), m)
    assert err.kind is RefusalKind.INVALID_REQUEST


def test_pass_skews_the_longest_prefix_that_can_be():
    """(i, j, k) where k carries a reversal: (i, j) is skewed, k stays inside, in its order."""
    text = """
func.func @prefix(%n: index, %A: memref<8x8x?xi32>) {
  affine.for %i = 1 to 8 {
    affine.for %j = 1 to 7 {
      affine.for %k = 1 to %n {
        %a = affine.load %A[%i - 1, %j + 1, %k] : memref<8x8x?xi32>
        %b = affine.load %A[%i, %j - 1, -%k + %n] : memref<8x8x?xi32>
        %c = affine.load %A[%i, %j, %k - 1] : memref<8x8x?xi32>
        %s0 = arith.addi %a, %b : i32
        %s = arith.addi %s0, %c : i32
        affine.store %s, %A[%i, %j, %k] : memref<8x8x?xi32>
      }
    }
  }
  return
}
"""
    m = air.parse(text)
    pm = PassManager.parse("affine-loop-skew")
    pm.run(m)
    kinds = [d.kind for d in pm.trace.decisions]
    assert kinds == ["refused", "applied"], pm.trace.decisions
    for n in (1, 3, 4):
        assert_preserves_semantics("affine-loop-skew", m, [n, ints((8, 8, n + 1), n)])


# -- random in-place stencils ------------------------------------------------------------------------------------
@st.composite
def stencils(draw):
    """An in-place stencil: a time loop around 1-D or 2-D space loops, or 2-D/3-D space loops
    alone; the update sums 1-4 neighbours at offsets in {-1, 0, 1} (plus the point itself)."""
    timed = draw(st.booleans())
    space = draw(st.integers(1, 2)) if timed else draw(st.integers(2, 3))
    symbolic = draw(st.booleans())
    sizes = [draw(st.integers(3, 6)) for _ in range(space)]
    tsteps = draw(st.integers(1, 3))
    offsets = draw(st.lists(st.tuples(*[st.integers(-1, 1)] * space), min_size=1, max_size=4, unique=True))
    lows = [draw(st.integers(1, 2 if s > 3 else 1)) for s in sizes]  # >= 1 (offsets stay inside), not empty
    shape = "x".join("?" if symbolic else str(s) for s in sizes)
    mem = f"memref<{shape}xi32>"
    params = ([f"%n{k}: index" for k in range(space)] if symbolic else []) + (["%T: index"] if timed and symbolic
                                                                              else [])
    ivs = [f"%x{k}" for k in range(space)]
    lines, indent = [], "  "
    if timed:
        lines.append(f"{indent}affine.for %t = 0 to {'%T' if symbolic else tsteps} {{")
        indent += "  "
    for k in range(space):
        ub = f"affine_map<()[s0] -> (s0 - 1)>()[%n{k}]" if symbolic else str(sizes[k] - 1)
        lines.append(f"{indent}affine.for {ivs[k]} = {lows[k]} to {ub} {{")
        indent += "  "
    acc = "%self"
    lines.append(f"{indent}%self = affine.load %A[{', '.join(ivs)}] : {mem}")
    for q, off in enumerate(offsets):
        idx = ", ".join(f"{iv} + {o}" for iv, o in zip(ivs, off))
        lines.append(f"{indent}%v{q} = affine.load %A[{idx}] : {mem}")
        lines.append(f"{indent}%s{q} = arith.addi {acc}, %v{q} : i32")
        acc = f"%s{q}"
    lines.append(f"{indent}affine.store {acc}, %A[{', '.join(ivs)}] : {mem}")
    for _ in range(space + timed):
        indent = indent[:-2]
        lines.append(f"{indent}}}")
    text = f"func.func @stencil({', '.join(params + ['%A: ' + mem])}) {{\n" + "\n".join(lines) + "\n  return\n}\n"
    args = ([*sizes] if symbolic else []) + ([tsteps] if timed and symbolic else [])
    seed = draw(st.integers(0, 1000))
    return text, args + [ints(tuple(sizes), seed)]


STATS: Counter = Counter()


@settings(max_examples=200)
@given(stencils(), st.booleans())
def test_random_stencils_keep_results_and_claimed_loops_are_parallel(case, wavefront):
    text, args = case
    m = air.parse(text)
    ref = air.parse(text)
    want = run(ref, args)
    band = band_of(m)
    try:
        result = skew_band(band, wavefront=wavefront)
    except TransformError as e:
        assert str(m) == str(ref)
        assert e.kind in (RefusalKind.DEPENDENCE, RefusalKind.UNSUPPORTED)
        if e.kind is RefusalKind.DEPENDENCE:
            assert e.dependence is not None and str(e.dependence.memref.name_hint) in e.reason
        STATS["refused"] += 1
        return
    STATS["applied"] += 1
    air.verify(m)
    assert str(air.parse(str(m))) == str(m)
    got = run(m, args)
    for w, g in zip(want, got):
        assert np.array_equal(w, g), text
    for lp, par in zip(result.loops, result.parallel):
        if par:
            assert analysis.is_parallel(lp), (text, loop_name(lp))
    if wavefront:
        assert all(result.parallel[1:]), text


def test_random_stencils_are_mostly_skewed():
    """(Runs after the property test in file order: the share of programs transformed.)"""
    if not STATS:
        pytest.skip("the property test did not run")
    assert STATS["applied"] >= 0.8 * (STATS["applied"] + STATS["refused"]), STATS


# -- the GPU mapping -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tsteps, n", [(3, 7), (2, 10), (1, 4)])
def test_gpu_map_runs_the_wavefront_on_the_host_and_the_inner_loops_in_threads(tsteps, n):
    m = air.parse(seidel())
    A = ints((n, n), n)
    want = run(m, [tsteps, n, A])
    plain, plain_decisions = map_to_gpu(m, "gpu-map")
    assert any("1x1x1" in d.message for d in plain_decisions)
    out, decisions = map_to_gpu(m, "affine-loop-skew,gpu-map")
    text = [d.message for d in decisions if d.pass_name == "gpu-map"]
    assert any("kept %wave on the host" in t for t in text), text
    assert any("mapped (%i_skew)" in t for t in text), text
    assert not any("1x1x1" in t for t in text)
    assert_same_bits_in_both_thread_orders(want, out, [tsteps, n, A], "seidel wavefront")


def test_gpu_map_float_seidel_in_both_thread_orders():
    m = air.parse(open("benchmarks/polybench/seidel-2d.mlir").read())
    A = np.random.default_rng(7).random((9, 9)).astype(np.float32)
    want = run(m, [3, 9, A])
    out, _ = map_to_gpu(m, "affine-loop-skew,gpu-map")
    assert_same_bits_in_both_thread_orders(want, out, [3, 9, A], "seidel-2d f32")


def _polybench():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import polybench

    return polybench


@pytest.mark.parametrize("name", ["seidel-2d", "nussinov"])
def test_gpu_pipeline_with_the_skew_before_the_mapping(name):
    """The pass in GPU_PIPELINE (before the mapping), on the two PolyBench kernels it changes (MINI
    sizes, exact data): no 1x1x1 launch is left (there is one without the pass) and the bits are
    those of the program in both thread orders."""
    from transforms.pipelines import GPU_PIPELINE

    without = GPU_PIPELINE.replace("affine-loop-skew,", "", 1)
    assert without != GPU_PIPELINE
    k = _polybench().KERNELS[name]
    m = k.module()
    args = k.arguments("MINI", exact=True)
    want = run(m, args)
    _, before = map_to_gpu(m, without)
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    assert any("1x1x1" in d.message for d in before if d.pass_name == "gpu-map")
    assert not any("1x1x1" in d.message for d in decisions if d.pass_name == "gpu-map")
    assert [d.kind for d in decisions if d.pass_name == "affine-loop-skew"] == ["applied"]
    assert_same_bits_in_both_thread_orders(want, out, args, name)


def test_random_programs_through_the_pass():
    """General random programs (imperfect nests, ifs, iter_args, several memrefs): the pass never
    fails, and what it transforms keeps its results exactly."""
    from hypothesis import HealthCheck

    from affine_ir.testing import programs_with_inputs

    stats: Counter = Counter()

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(programs_with_inputs(max_depth=4, max_nests=2, max_statements=2), st.booleans(), st.booleans())
    def check(case, all_nests, wavefront):
        module, args = case
        pm = PassManager.parse(f"affine-loop-skew{{all-nests={str(all_nests).lower()} "
                               f"wavefront={str(wavefront).lower()}}}")
        out = pm.run(module)
        air.verify(out)
        text = str(out)
        assert str(air.parse(text)) == text
        for a, b in zip(run(module, args), run(out, args)):
            np.testing.assert_array_equal(a, b)
        stats["programs"] += 1
        stats["applied"] += any(d.kind == "applied" for d in pm.trace.decisions)
        stats["refused"] += any(d.kind == "refused" for d in pm.trace.decisions)

    check()
    assert stats["programs"] >= 100
    assert stats["applied"] >= 10, stats


def test_floyd_warshall_gets_a_wavefront_inside_its_k_loop():
    """PolyBench floyd-warshall: no skew of the whole band (k, i, j) exists (a pair at k distance 1
    has i distance -(n - 1)), but (i, j) for each k can be: %k stays outside, in its order (a loop
    the host runs), around the wavefront of (i, j); no 1x1x1 launch, the same bits in both orders."""
    from transforms.pipelines import GPU_PIPELINE

    k = _polybench().KERNELS["floyd-warshall"]
    m = k.module()
    args = k.arguments("MINI", exact=True)
    want = run(m, args)
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    skew = [d for d in decisions if d.pass_name == "affine-loop-skew"]
    assert [d.kind for d in skew] == ["refused", "applied"], skew
    assert "cannot skew (%k, %i, %j)" in skew[0].message and "skewed (%i, %j)" in skew[1].message
    text = [d.message for d in decisions if d.pass_name == "gpu-map"]
    assert any("kept %k on the host" in t for t in text) and any("kept %wave on the host" in t for t in text), text
    assert not any("1x1x1" in t for t in text), text
    assert_same_bits_in_both_thread_orders(want, out, args, "floyd-warshall")
