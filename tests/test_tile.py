"""Tests of transforms.loops.tile: ``tile_band`` and the ``affine-loop-tile`` pass.

Golden tests of the printed loops are in tests/filecheck/affine-loop-tile*.mlir (MLIR's own
inputs among them); here: structure, legality, options, the cost model choice, and semantics
on random programs (interpreter before/after).
"""

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
from affine_ir.dialects.affine import AffineForOp, AffineIfOp
from affine_ir.testing import assert_equivalent, kernel_function, programs_with_inputs
from transforms import PassManager, PipelineError, TransformError
from transforms.loop_utils import outermost_bands
from transforms.loops.tile import LoopTile, normalize_tile_sizes, tile_band
from transforms.loops.tile_model import cache_capacities
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, run_pipeline

SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None)


def band_of(module, k: int = 0) -> list[AffineForOp]:
    return outermost_bands(kernel_function(module))[k]


def fors(op) -> list[AffineForOp]:
    return [o for o in op.walk() if isinstance(o, AffineForOp)]


def ints(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).integers(-4, 5, size=shape).astype(dtype)


STENCIL = """
func.func @k(%A: memref<20x20xf32>, %B: memref<20x20xf32>, %N: index) {
  affine.for %i = 1 to 19 {
    affine.for %j = 0 to %N {
      %a = affine.load %B[%i - 1, %j] : memref<20x20xf32>
      %b = affine.load %B[%i + 1, %j] : memref<20x20xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %A[%i, %j] : memref<20x20xf32>
    }
  }
  return
}
"""


# -- structure ----------------------------------------------------------------------------------
def test_two_loops_tile_and_point_loops_with_names_and_bounds():
    m = air.parse(STENCIL)
    res = tile_band(band_of(m), [4, 8])
    air.verify(m)
    text = str(m)
    assert [lp.induction_var.name_hint for lp in res.loops] == ["i_tile", "j_tile", "i_point", "j_point"]
    assert "affine.for %i_tile = 1 to 19 step 4 {" in text
    assert "affine.for %j_tile = 0 to %N step 8 {" in text
    # 18 iterations by 4: the last tile is partial (min with 19); %N needs a min too.
    assert "affine_map<(d0) -> (d0 + 4, 19)>" in text
    assert "affine_map<(d0)[s0] -> (d0 + 8, s0)>" in text
    assert res.point_loops[0].location is not None and res.tile_loops[0][0].location == res.point_loops[0].location
    out = air.parse(text)
    for n in (0, 5, 17):
        assert_equivalent(air.parse(STENCIL), out, [ints((20, 20), 1), ints((20, 20), 2), n])


def test_size_dividing_the_trip_count_needs_no_min_and_larger_size_uses_the_trip_count():
    m = air.parse("""
    func.func @k(%A: memref<64xf32>) {
      affine.for %i = 0 to 64 { %v = affine.load %A[%i] : memref<64xf32>  affine.store %v, %A[%i] : memref<64xf32> }
      affine.for %j = 0 to 21 { %v = affine.load %A[%j] : memref<64xf32>  affine.store %v, %A[%j] : memref<64xf32> }
      return
    }""")
    tile_band(band_of(m, 0), [16])
    tile_band(band_of(m, 1), [32])  # MLIR tiles it too: `0 to 21 step 32`, then `%j_tile + 21`
    text = str(m)
    assert "affine_map<(d0) -> (d0 + 16)>" in text and "min" not in text
    assert "affine.for %j_tile = 0 to 21 step 32" in text and "affine_map<(d0) -> (d0 + 21)>" in text


def test_steps_and_max_min_bounds():
    src = """
    #lb = affine_map<()[s0, s1] -> (s0, s1)>
    #ub = affine_map<()[s0] -> (s0, 30)>
    func.func @k(%A: memref<40xf32>, %L: index, %M: index, %U: index) {
      affine.for %i = max #lb()[%L, %M] to min #ub()[%U] step 3 {
        %v = affine.load %A[%i] : memref<40xf32>
        %w = arith.addf %v, %v : f32
        affine.store %w, %A[%i] : memref<40xf32>
      }
      return
    }"""
    m = air.parse(src)
    tile_band(band_of(m), [4])
    text = str(m)
    assert "step 12 {" in text and "step 3 {" in text
    assert "affine_map<(d0)[s0] -> (d0 + 12, s0, 30)>" in text
    for syms in [(0, 2, 30), (5, 1, 17), (7, 9, 3), (0, 0, 40)]:
        assert_equivalent(air.parse(src), air.parse(text), [ints(40, 3), *syms])


def test_multi_level_names_and_bounds():
    m = air.parse(STENCIL)
    res = tile_band(band_of(m), [[8, 8], [4, 2]])
    assert [[lp.induction_var.name_hint for lp in lv] for lv in res.tile_loops] == [["i_l2", "j_l2"], ["i_l1", "j_l1"]]
    assert [lp.induction_var.name_hint for lp in res.point_loops] == ["i_point", "j_point"]
    text = str(m)
    # %i_l1 runs inside its %i_l2 tile and the original range; 4 divides 8 so the point loop
    # stops at %i_l1 + 4 or 19 only (no %i_l2 + 8 term).
    assert "affine.for %i_l1 = #map(%i_l2) to min #map1(%i_l2) step 4 {" in text
    assert "#map1 = affine_map<(d0) -> (d0 + 8, 19)>" in text and "#map3 = affine_map<(d0) -> (d0 + 4, 19)>" in text
    assert "affine.for %i_point = #map(%i_l1) to min #map3(%i_l1) {" in text
    for n in (0, 7, 20):
        assert_equivalent(air.parse(STENCIL), air.parse(text), [ints((20, 20), 1), ints((20, 20), 2), n])


def test_inner_size_not_dividing_the_outer_one_stops_at_the_outer_tile_end():
    src = """
    func.func @k(%A: memref<30xf32>) {
      affine.for %i = 0 to 30 { %v = affine.load %A[%i] : memref<30xf32>
        %w = arith.addf %v, %v : f32  affine.store %w, %A[%i] : memref<30xf32> }
      return
    }"""
    m = air.parse(src)
    res = tile_band(band_of(m), [[7], [3]])
    ub = res.point_loops[0].upper_bound_map
    assert ub.num_results == 3  # %i_l1 + 3, %i_l2 + 7, 30
    assert_equivalent(air.parse(src), m, [ints(30, 5)])


def test_inner_sizes_not_smaller_than_the_outer_ones_leave_the_loop_untiled_at_that_level():
    m = air.parse(STENCIL)
    assert normalize_tile_sizes(band_of(m), [[8, 4], [8, 2], [4, 4]]) == ((8, 4), (0, 2), (4, 0))
    assert normalize_tile_sizes(band_of(m), [0, 3]) == ((0, 3),)
    with pytest.raises(TransformError, match="do not fit"):
        normalize_tile_sizes(band_of(m), [4])
    with pytest.raises(TransformError, match="do not fit"):
        normalize_tile_sizes(band_of(m), [4, -1])


def test_zero_size_leaves_a_loop_untiled_among_the_point_loops():
    m = air.parse(STENCIL)
    res = tile_band(band_of(m), [0, 4])
    assert [lp.induction_var.name_hint for lp in res.loops] == ["j_tile", "i", "j_point"]
    assert_equivalent(air.parse(STENCIL), m, [ints((20, 20), 1), ints((20, 20), 2), 13])
    m2 = air.parse(STENCIL)
    res = tile_band(band_of(m2), [0, 0])
    assert not res.is_tiled and str(m2) == str(air.parse(STENCIL))


def test_separate_full_and_partial_tiles():
    m = air.parse(STENCIL)
    res = tile_band(band_of(m), [4, 8], separate=True)
    assert isinstance(res.full_tile_if, AffineIfOp)
    cond = res.full_tile_if.condition
    assert cond.num_constraints == 2
    full = res.full_point_loops
    assert [lp.constant_trip_count for lp in full] == [None, None]
    assert [analysis.constant_trip_count(lp) for lp in full] == [4, 8]  # constant trip count in full tiles
    assert all(lp.upper_bound_map.num_results == 2 for lp in res.point_loops)
    for n in (0, 3, 8, 20):
        assert_equivalent(air.parse(STENCIL), m, [ints((20, 20), 1), ints((20, 20), 2), n])


def test_separate_does_nothing_when_no_tile_is_partial():
    src = """
    func.func @k(%A: memref<16x16xf32>) {
      affine.for %i = 0 to 16 { affine.for %j = 0 to 16 {
        %v = affine.load %A[%i, %j] : memref<16x16xf32>  affine.store %v, %A[%i, %j] : memref<16x16xf32> } }
      return
    }"""
    m = air.parse(src)
    res = tile_band(band_of(m), [4, 8], separate=True)
    assert res.full_tile_if is None and "affine.if" not in str(m)  # MLIR writes `affine.if (0 == 0)`


# -- iter_args ----------------------------------------------------------------------------------
REDUCE = """
func.func @k(%A: memref<50xf32>, %N: index) -> f32 {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to %N iter_args(%acc = %z) -> f32 {
    %v = affine.load %A[%i] : memref<50xf32>
    %s = arith.addf %acc, %v : f32
    affine.yield %s : f32
  }
  return %r : f32
}
"""


@pytest.mark.parametrize("sizes,separate", [([8], False), ([8], True), ([[16], [4]], True), ([[9], [4]], False)])
def test_one_loop_band_with_iter_args_carries_the_values_through_the_tile_loops(sizes, separate):
    m = air.parse(REDUCE)
    res = tile_band(band_of(m), sizes, separate=separate)
    air.verify(m)
    assert all(lp.results for lp in res.loops)
    for n in (0, 1, 8, 37, 50):
        assert_equivalent(air.parse(REDUCE), air.parse(str(m)), [ints(50, 4), n])


ROWSUM = """
func.func @k(%A: memref<8x8xf32>, %B: memref<8x8xf32>) {
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %r = affine.for %k = 0 to 8 iter_args(%acc = %z) -> f32 {
        %v = affine.load %A[%i, %k] : memref<8x8xf32>
        %s = arith.addf %acc, %v : f32
        affine.store %s, %B[%i, %k] : memref<8x8xf32>
        affine.yield %s : f32
      }
    }
  }
  return
}
"""


def test_innermost_iter_args_loop_of_a_deeper_band_is_refused_then_left_untiled_by_the_pass():
    m = air.parse(ROWSUM)
    err = assert_refused_unchanged(lambda: tile_band(band_of(m), [2, 2, 2]), m)
    assert "iter_args" in err.reason and "%k" in err.reason
    res = tile_band(band_of(m), [2, 2, 0])
    assert res.is_tiled
    assert_equivalent(air.parse(ROWSUM), m, [ints((8, 8), 1), ints((8, 8), 2)])
    pm = PassManager.parse("affine-loop-tile{tile-size=4}")
    out = pm.run(air.parse(ROWSUM))
    assert "%k carries iter_args: left untiled" in str(pm.trace)
    assert_equivalent(air.parse(ROWSUM), out, [ints((8, 8), 1), ints((8, 8), 2)])


def test_outer_loop_with_iter_args_is_refused():
    src = """
    func.func @k(%A: memref<8x8xf32>) -> f32 {
      %z = arith.constant 0.0 : f32
      %r = affine.for %i = 0 to 8 iter_args(%a = %z) -> f32 {
        %q = affine.for %j = 0 to 8 iter_args(%b = %a) -> f32 {
          %v = affine.load %A[%i, %j] : memref<8x8xf32>
          %s = arith.addf %b, %v : f32
          affine.yield %s : f32
        }
        affine.yield %q : f32
      }
      return %r : f32
    }"""
    m = air.parse(src)
    err = assert_refused_unchanged(lambda: tile_band(band_of(m), [2, 2]), m)
    assert "%i has iter_args" in err.reason


# -- unsupported requests -------------------------------------------------------------------------
TRIANGLE = """
func.func @k(%A: memref<16x16xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %v = affine.load %A[%i, %j] : memref<16x16xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %A[%i, %j] : memref<16x16xf32>
    }
  }
  return
}
"""


def test_non_hyper_rectangular_band_is_refused_unless_the_dependent_loop_stays_untiled():
    m = air.parse(TRIANGLE)
    err = assert_refused_unchanged(lambda: tile_band(band_of(m), [4, 4]), m)
    assert "(%i, %j)" in err.reason and "depends on %i" in err.reason and "hyper-rectangular" in err.reason
    tile_band(band_of(m), [4, 0])  # MLIR refuses the whole band; tiling %i alone keeps %j's bound valid
    assert_equivalent(air.parse(TRIANGLE), m, [ints((16, 16), 7)])


def test_not_perfectly_nested_and_wrong_requests_are_refused():
    m = air.parse(STENCIL)
    band = band_of(m)
    assert_refused_unchanged(lambda: tile_band([band[1], band[0]], [2, 2]), m)
    assert_refused_unchanged(lambda: tile_band(band, [2, 2, 2]), m)
    assert_refused_unchanged(lambda: tile_band([], [2]), m)
    src = """
    func.func @k(%A: memref<8x8xf32>) {
      affine.for %i = 0 to 8 {
        %c = arith.constant 1.0 : f32
        affine.for %j = 0 to 8 { affine.store %c, %A[%i, %j] : memref<8x8xf32> }
      }
      return
    }"""
    m2 = air.parse(src)
    outer = fors(m2)[0]
    err = assert_refused_unchanged(lambda: tile_band([outer, fors(m2)[1]], [2, 2]), m2)
    assert "not perfectly nested" in err.reason


# -- legality: dependences ----------------------------------------------------------------------
def negative_distance_programs(with_legal: bool = False):
    """Small programs whose band has a dependence with a negative distance component: stencils
    ``A[i][j] = A[i-p][j-q]`` (RAW or WAR), two stores (WAW), 3-d variants and MLIR's inputs;
    ``with_legal``: also the 2-d stencils whose distances are all non-negative (or all not positive)."""
    out = []
    for p, q in itertools.product(range(-2, 3), repeat=2):
        if p * q < 0 or with_legal:
            out.append((f"raw_war_{p}_{q}", f"""
            func.func @k(%A: memref<12x12xf32>) {{
              affine.for %i = 2 to 10 {{
                affine.for %j = 2 to 10 {{
                  %v = affine.load %A[%i - {p}, %j - {q}] : memref<12x12xf32>
                  %w = arith.addf %v, %v : f32
                  affine.store %w, %A[%i, %j] : memref<12x12xf32>
                }}
              }}
              return
            }}""", [(12, 12)]))
            out.append((f"waw_{p}_{q}", f"""
            func.func @k(%A: memref<12x12xf32>, %B: memref<12x12xf32>) {{
              affine.for %i = 2 to 10 {{
                affine.for %j = 2 to 10 {{
                  %v = affine.load %B[%i, %j] : memref<12x12xf32>
                  affine.store %v, %A[%i, %j] : memref<12x12xf32>
                  %w = arith.addf %v, %v : f32
                  affine.store %w, %A[%i - {p}, %j - {q}] : memref<12x12xf32>
                }}
              }}
              return
            }}""", [(12, 12), (12, 12)]))
    out.append(("mlir_diag", """
    func.func @k(%A: memref<64x64xf32>) {
      affine.for %i = 0 to 64 {
        affine.for %j = 1 to 64 {
          %0 = affine.load %A[%j, %i] : memref<64x64xf32>
          %1 = affine.load %A[%i, %j - 1] : memref<64x64xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %A[%i, %j] : memref<64x64xf32>
        }
      }
      return
    }""", [(64, 64)]))
    for name, sub in (("mlir_flow", "%i - 1, %j + 1"), ("mlir_anti", "%i + 1, %j - 1")):
        out.append((name, f"""
        func.func @k(%arr: memref<34x34xi32>) {{
          affine.for %i = 1 to 33 {{
            affine.for %j = 1 to 33 {{
              %val = affine.load %arr[{sub}] : memref<34x34xi32>
              affine.store %val, %arr[%i, %j] : memref<34x34xi32>
            }}
          }}
          return
        }}""", [(34, 34)]))
    for d in itertools.product((-1, 0, 1), repeat=3):
        if min(d) < 0 < max(d):
            p, q, r = d
            out.append((f"raw3_{p}_{q}_{r}", f"""
            func.func @k(%A: memref<8x8x8xf32>) {{
              affine.for %i = 1 to 7 {{
                affine.for %j = 1 to 7 {{
                  affine.for %k = 1 to 7 {{
                    %v = affine.load %A[%i - {p}, %j - {q}, %k - {r}] : memref<8x8x8xf32>
                    %w = arith.addf %v, %v : f32
                    affine.store %w, %A[%i, %j, %k] : memref<8x8x8xf32>
                  }}
                }}
              }}
              return
            }}""", [(8, 8, 8)]))
    return out


def check_band_request(module, k: int, sizes, args, stats: Counter) -> None:
    """Tile band ``k`` of ``module`` by ``sizes``: refused (IR unchanged, the reason naming the
    dependence) when analysis says the band is not permutable, else semantics preserved."""
    band = band_of(module, k)
    if len(band) < 2:
        return
    if not analysis.is_permutable(band):
        err = assert_refused_unchanged(lambda: tile_band(band, sizes), module)
        assert err.loops and "cannot tile" in err.reason
        if err.dependence is None:
            assert "iter_args" in err.reason, err.reason
            stats["refused_iter_args"] += 1
            return
        dep = err.dependence
        assert dep.kind in ("RAW", "WAR", "WAW") and f"{dep.kind} %" in err.reason, err.reason
        assert f"%{dep.memref.name_hint}" in err.reason and "distance" in err.reason, err.reason
        stats["refused"] += 1
        stats[dep.kind] += 1
        return
    tiled = module.clone()
    try:
        tile_band(band_of(tiled, k), sizes)
    except TransformError as e:
        assert "hyper-rectangular" in e.reason or "iter_args" in e.reason, e.reason
        stats["unsupported"] += 1
        return
    air.verify(tiled)
    assert_equivalent(module, tiled, args)
    stats["legal"] += 1


def test_illegal_requests_are_refused_and_legal_ones_preserve_semantics():
    stats = Counter()
    for _name, src, shapes in negative_distance_programs(with_legal=True):
        m = air.parse(src)
        args = [ints(s, seed, np.int32 if "i32" in src else np.float32) for seed, s in enumerate(shapes)]
        n = len(band_of(m))
        check_band_request(m, 0, [2] * n, args, stats)
        assert stats["refused"] == stats["RAW"] + stats["WAR"] + stats["WAW"]
    hand = stats["refused"]
    assert hand >= 30 and stats["WAW"] and stats["WAR"] and stats["RAW"], stats
    assert stats["legal"] >= 15, stats  # the permutable stencils are tiled, semantics kept

    @settings(max_examples=100, derandomize=True, **SETTINGS)  # the same programs each run: stable counts
    @given(programs_with_inputs(max_memrefs=2), st.integers(1, 3))
    def random_programs(case, size):
        module, args = case
        for k, band in enumerate(outermost_bands(kernel_function(module))):
            check_band_request(module, k, [size] * len(band), args, stats)

    random_programs()
    assert stats["refused"] - hand >= 5, stats  # random programs contribute refusals too
    assert stats["legal"] >= 25, stats


def test_one_loop_band_is_always_legal_strip_mining():
    src = """
    func.func @k(%A: memref<20xf32>) {
      affine.for %i = 1 to 19 {
        %a = affine.load %A[%i - 1] : memref<20xf32>
        %b = affine.load %A[%i + 1] : memref<20xf32>
        %s = arith.addf %a, %b : f32
        affine.store %s, %A[%i] : memref<20xf32>
      }
      return
    }"""
    m = air.parse(src)
    tile_band(band_of(m), [[6], [4]], separate=True)
    assert_equivalent(air.parse(src), m, [ints(20, 9)])


# -- the pass ---------------------------------------------------------------------------------------
def test_pass_records_refusals_and_tiles_the_other_bands():
    src = """
    func.func @k(%A: memref<16x16xf32>, %B: memref<16xf32>) {
      affine.for %i = 1 to 16 {
        affine.for %j = 0 to 15 {
          %v = affine.load %A[%i - 1, %j + 1] : memref<16x16xf32>
          affine.store %v, %A[%i, %j] : memref<16x16xf32>
        }
      }
      affine.for %k = 0 to 16 {
        %v = affine.load %B[%k] : memref<16xf32>
        affine.store %v, %A[%k, %k] : memref<16x16xf32>
      }
      return
    }"""
    m = air.parse(src)
    pm = PassManager.parse("affine-loop-tile{tile-size=4}")
    out = pm.run(m)
    (trace,) = pm.trace
    refused = trace.refusals
    assert len(refused) == 1 and "RAW %A" in refused[0].message and "(%i, %j)" in refused[0].message
    assert refused[0].location.line == 3
    assert [d.message for d in trace.decisions if d.kind == "applied"] == ["tiled (%k) by 4"]
    assert "affine.for %i = 1 to 16 {" in str(out) and "%k_tile" in str(out)


def test_pass_options_follow_mlir_and_levels():
    band = band_of(air.parse(STENCIL))
    ctx = None

    def sizes(text):
        (entry,) = PassManager.parse(text).passes
        return entry.band_sizes(band, ctx)

    assert sizes("affine-loop-tile{tile-size=5}") == [(5, 5)]
    assert sizes("affine-loop-tile{tile-sizes=7}") == [(7, 4)]  # padded with MLIR's default 4
    assert sizes("affine-loop-tile{tile-sizes=7,6,5}") == [(7, 6)]  # cut to the band
    assert sizes("affine-loop-tile{tile-size=3 tile-levels=2}") == [(9, 9), (3, 3)]
    assert sizes("affine-loop-tile{tile-sizes=8,6,2,3 tile-levels=2}") == [(8, 6), (2, 3)]
    assert sizes("affine-loop-tile{tile-sizes=8,2 tile-levels=2}") == [(8, 4), (2, 4)]
    with pytest.raises(PipelineError, match="multiple of tile-levels"):
        PassManager.parse("affine-loop-tile{tile-sizes=1,2,3 tile-levels=2}")
    with pytest.raises(PipelineError):
        PassManager.parse("affine-loop-tile{tile-levels=0}")
    assert str(LoopTile(tile_sizes=(4, 2), separate=True)) == "affine-loop-tile{separate=true tile-sizes=4,2}"


MATMUL = """
func.func @mm(%A: memref<256x256xf32>, %B: memref<256x256xf32>, %C: memref<256x256xf32>) {
  affine.for %i = 0 to 256 {
    affine.for %j = 0 to 256 {
      affine.for %k = 0 to 256 {
        %a = affine.load %A[%i, %k] : memref<256x256xf32>
        %b = affine.load %B[%k, %j] : memref<256x256xf32>
        %c = affine.load %C[%i, %j] : memref<256x256xf32>
        %m = arith.mulf %a, %b : f32
        %s = arith.addf %c, %m : f32
        affine.store %s, %C[%i, %j] : memref<256x256xf32>
      }
    }
  }
  return
}
"""


def test_cache_size_model_picks_sizes_whose_working_set_fits_and_records_them():
    m = air.parse(MATMUL)
    pm = PassManager.parse("affine-loop-tile{cache-size=64}")
    out = pm.run(m)
    notes = [d.message for d in pm.trace[0].decisions if d.kind == "note"]
    assert len(notes) == 1 and "cost model" in notes[0] and "fits 64.0 KiB" in notes[0], notes
    steps = [lp.step for lp in fors(out)[:3]]
    assert all(256 % s == 0 for s in steps)  # divisors of the trip counts: no min bounds
    assert analysis.tile_working_set(band_of(m)[0], steps) <= 64 * 1024
    assert "min" not in str(out)
    # The whole band fits: not tiled, with a note (MLIR would tile by 1).
    pm = PassManager.parse("affine-loop-tile{cache-size=4096}")
    out = pm.run(m)
    assert str(out) == str(m) and "not tiled" in pm.trace[0].decisions[0].message


def test_two_level_model_takes_cache_size_then_the_smaller_host_caches():
    assert cache_capacities(512 * 1024, 1) == [512 * 1024]
    assert cache_capacities(512 * 1024, 2, host=(32 << 20, 1 << 20, 48 << 10)) == [512 << 10, 48 << 10]
    assert cache_capacities(4 << 20, 3, host=(32 << 20, 1 << 20, 32 << 10)) == [4 << 20, 1 << 20, 32 << 10]
    assert cache_capacities(16 << 10, 2, host=(32 << 10,)) == [16 << 10, 2 << 10]
    m = air.parse(MATMUL)
    pm = PassManager.parse("affine-loop-tile{tile-levels=2 cache-size=256}")
    out = pm.run(m)
    names = [lp.induction_var.name_hint for lp in fors(out)]
    assert names == ["i_l2", "j_l2", "k_l2", "i_l1", "j_l1", "k_l1", "i_point", "j_point", "k_point"][:len(names)]
    assert len([d for d in pm.trace[0].decisions if d.kind == "note"]) == 2
    outer = {lp.induction_var.name_hint[0]: lp.step for lp in fors(out) if lp.induction_var.name_hint.endswith("l2")}
    inner = {lp.induction_var.name_hint[0]: lp.step for lp in fors(out) if lp.induction_var.name_hint.endswith("l1")}
    assert inner and all(outer.get(k, 256) % s == 0 and s < outer.get(k, 256) for k, s in inner.items())


def test_matmul_two_level_tiling_preserves_semantics_and_is_fast():
    src = MATMUL.replace("256", "24")
    m = air.parse(src)
    args = [ints((24, 24), 1), ints((24, 24), 2), ints((24, 24), 3)]
    import time

    t0 = time.perf_counter()
    out = run_pipeline("affine-loop-tile{tile-sizes=16,8,12,6,4,5 tile-levels=2 separate=true}", m)
    assert time.perf_counter() - t0 < 0.5
    assert_equivalent(m, out, args)
    assert len(fors(out)) == 12 and "affine.if" in str(out)  # 3 + 3 tile loops, 2 x 3 point loops


# -- property tests ---------------------------------------------------------------------------------
def test_tile_size_preserves_semantics_on_random_programs():
    stats = Counter()

    @settings(max_examples=100, **SETTINGS)
    @given(programs_with_inputs(), st.integers(1, 5), st.booleans())
    def check(case, size, separate):
        module, args = case
        pipeline = f"affine-loop-tile{{tile-size={size} separate={str(separate).lower()}}}"
        out = str(assert_preserves_semantics(pipeline, module, args))
        stats["runs"] += 1
        stats["applied"] += "_tile = " in out
        stats["separated"] += out.count("affine.if") > str(module).count("affine.if")

    check()
    assert stats["applied"] >= 0.6 * stats["runs"], stats
    assert stats["separated"] >= 3, stats  # full/partial tiles separated in some programs


def test_multi_level_and_tile_sizes_preserve_semantics_on_random_programs():
    stats = Counter()
    outer, inner = st.sampled_from([4, 3, 6, 5, 2, 0]), st.sampled_from([2, 3, 1, 0])  # 0: untiled
    two_groups = st.integers(1, 3).flatmap(lambda n: st.tuples(
        st.lists(outer, min_size=n, max_size=n), st.lists(inner, min_size=n, max_size=n)))
    options = st.one_of(
        two_groups.map(lambda g: f"tile-sizes={','.join(map(str, g[0] + g[1]))} tile-levels=2"),
        st.lists(outer, min_size=1, max_size=4).map(lambda s: f"tile-sizes={','.join(map(str, s))}"),
        st.sampled_from(["cache-size=1 tile-levels=2", "cache-size=0", "tile-size=2 tile-levels=2"]),
    )

    @settings(max_examples=100, **SETTINGS)
    @given(programs_with_inputs(max_memrefs=3), options, st.booleans())
    def check(case, opts, separate):
        module, args = case
        pipeline = f"affine-loop-tile{{{opts} separate={str(separate).lower()}}}"
        out = str(assert_preserves_semantics(pipeline, module, args))
        stats["runs"] += 1
        stats["applied"] += out != str(module)
        stats["two_levels"] += "_l2 = " in out and "_l1 = " in out

    check()
    assert stats["applied"] >= 0.5 * stats["runs"], stats
    assert stats["two_levels"] >= 0.2 * stats["runs"], stats


# -- upstream MLIR accepts what we print ------------------------------------------------------------
@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (upstream MLIR) not installed")
def test_output_parses_in_upstream_mlir():
    texts = []
    for src, pipeline in [(STENCIL, "affine-loop-tile{tile-sizes=4,8 separate}"),
                          (REDUCE, "affine-loop-tile{tile-size=8 separate}"),
                          (MATMUL, "affine-loop-tile{tile-size=4 tile-levels=2 separate}"),
                          (ROWSUM, "affine-loop-tile{tile-size=4}")]:
        texts.append(str(run_pipeline(pipeline, air.parse(src))))
    proc = subprocess.run(["iree-opt", "-split-input-file", "-"], input="\n// -----\n".join(texts),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (upstream MLIR) not installed")
def test_same_loops_and_bounds_as_mlir_on_its_inputs():
    """MLIR's loop-tiling.mlir inputs (tests/filecheck/affine-loop-tile.mlir) through upstream
    `-affine-loop-tile="tile-size=32"` and ours: the same loops with the same steps and bound
    maps, except @yield_values, which MLIR leaves untiled (ours carries the iter_args)."""
    from pathlib import Path

    text = (Path(__file__).parent / "filecheck" / "affine-loop-tile.mlir").read_text()
    chunks = [c for c in text.split("// -----") if "func.func" in c and "@yield_values" not in c]
    assert len(chunks) >= 9

    def loops(module):
        return [(lp.step, lp.lower_bound_map, lp.upper_bound_map, len(lp.operands)) for lp in fors(module)]

    for chunk in chunks:
        proc = subprocess.run(["iree-opt", "--allow-unregistered-dialect", "-affine-loop-tile=tile-size=32", "-"],
                              input=chunk, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        theirs = air.parse(proc.stdout, allow_unregistered=True)
        ours = run_pipeline("affine-loop-tile{tile-size=32}", air.parse(chunk, allow_unregistered=True))
        assert loops(ours) == loops(theirs), chunk


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (upstream MLIR) not installed")
def test_same_full_tile_separation_as_mlir_on_its_inputs():
    """MLIR's two `separate` inputs (the first chunks of affine-loop-tile-separate.mlir): the same
    loops, bounds and `affine.if` condition sets as upstream `-affine-loop-tile="tile-size=32 separate"`."""
    from pathlib import Path

    text = (Path(__file__).parent / "filecheck" / "affine-loop-tile-separate.mlir").read_text()
    chunks = [c for c in text.split("// -----") if "@separate_full_tile" in c]
    assert len(chunks) == 2

    def shape(module):
        return [(op.step, op.lower_bound_map, op.upper_bound_map) if isinstance(op, AffineForOp) else op.condition
                for op in module.walk() if isinstance(op, (AffineForOp, AffineIfOp))]

    for chunk in chunks:
        proc = subprocess.run(["iree-opt", "--allow-unregistered-dialect", "-affine-loop-tile=tile-size=32 separate",
                               "-"], input=chunk, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        theirs = air.parse(proc.stdout, allow_unregistered=True)
        ours = run_pipeline("affine-loop-tile{tile-size=32 separate}", air.parse(chunk, allow_unregistered=True))
        assert shape(ours) == shape(theirs), chunk


def test_permutable_prefix_tiles_what_is_legal_of_a_conv_band():
    """conv2d's (n, f, h, w, c, kh, kw) band is not fully permutable (the accumulation carried by
    %c has distances -2..2 along %kh and %kw); by default the pass leaves it, with
    ``permutable-prefix`` it tiles (n, f, h, w, c) and records both decisions."""
    import numpy as np

    from affine_ir.testing import assert_equivalent

    m = air.library.conv2d(1, 4, 10, 10, 8, 3, 3)
    plain = PassManager.parse("affine-loop-tile{tile-sizes=1,4,4,4}")
    out_plain = plain.run(m)
    assert [d.kind for d in plain.trace.decisions] == ["applied", "refused"]
    assert "%kh" in str(out_plain) and "%c_tile" not in str(out_plain)
    pm = PassManager.parse("affine-loop-tile{tile-sizes=1,4,4,4 permutable-prefix}")
    out = pm.run(m)
    kinds = [d.kind for d in pm.trace.decisions]
    assert kinds == ["applied", "refused", "applied"], pm.trace
    assert pm.trace.decisions[2].message.startswith("tiled (%n, %f, %h, %w, %c) by 1x4x4x4x4x-x-")
    assert "affine.for %c_tile" in str(out) and "affine.for %kh = 0 to 3" in str(out)
    rng = np.random.default_rng(0)
    x = rng.integers(-3, 4, (1, 4, 10, 10)).astype(np.float32)
    w = rng.integers(-3, 4, (8, 4, 3, 3)).astype(np.float32)
    assert_equivalent(m, out, [x, w, np.zeros((1, 8, 8, 8), np.float32)])


NEAR_INDEX_MAX = """
func.func @k(%S: memref<1xi32>) {
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r = affine.for %j = 4611686018427387902 to 9223372036854775806 step 2305843009213693952 iter_args(%c = %z) -> (i32) {
    %c2 = arith.addi %c, %one : i32
    affine.yield %c2 : i32
  }
  affine.store %r, %S[0] : memref<1xi32>
  return
}
"""


def test_tiles_whose_indices_pass_64_bits_are_refused():
    """Tiling a loop of step 2**61 by 2 on two levels made a step of 2**63 (found by the fuzzer:
    the printed IR did not parse back); the tile must be refused, the IR unchanged."""
    m = air.parse(NEAR_INDEX_MAX)
    loop = next(op for op in m.walk() if isinstance(op, AffineForOp))
    err = assert_refused_unchanged(lambda: tile_band([loop], [[4], [2]]), m)
    assert "past 2**63 - 1" in err.reason and "%j" in err.reason
    assert_refused_unchanged(lambda: tile_band([loop], [2]), m)  # %j + 2 * 2**61 passes 2**63 - 1 too
    out = assert_preserves_semantics("affine-loop-tile{tile-size=2 tile-levels=2}", m, [np.zeros(1, np.int32)])
    assert str(out) == str(air.parse(NEAR_INDEX_MAX))  # the pass records the refusal and goes on


def test_tiles_of_symbolic_bounds_near_the_index_limit_are_refused():
    """An upper bound ``%N + (2**63 - 5)`` and tiles of 6: the full tiles' guard and bounds would
    hold constants past 2**63 - 1 (the fuzzer found ``tile{separate}`` printing 2**63 + 5)."""
    m = air.parse("""
    func.func @k(%S: memref<3xf32>, %N: index) {
      affine.for %j = 9223372036854775790 to affine_map<()[s0] -> (s0 + 9223372036854775802)>()[%N] step 3 {
        %c = arith.constant 1.0 : f32
        affine.store %c, %S[%j mod 3] : memref<3xf32>
      }
      return
    }""")
    loop = next(op for op in m.walk() if isinstance(op, AffineForOp))
    err = assert_refused_unchanged(lambda: tile_band([loop], [2], separate=True), m)
    assert "past 2**63 - 1" in err.reason
