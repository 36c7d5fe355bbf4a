"""Cost model v1: hand-computed counts and traffic, properties, ranking and capacity tiling."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing import programs
from analysis.cost_model import (
    DEFAULT_SYMBOL_VALUE,
    estimate_cost,
    memory_levels,
    rank_tile_sizes,
    tile_sizes_for_capacity,
    tile_working_set,
)
from analysis.targets import H200, CPUTarget, host_cpu

KiB = 1024
# A small CPU with round numbers: no L3, so DRAM traffic is governed by a 32 KiB L2.
SMALL = CPUTarget(name="small", cores=1, threads=1, clock_hz=1e9, l1d_bytes=4 * KiB, l2_bytes=32 * KiB,
                  l3_bytes=0, vector_bits=256)


def nests(module) -> list[AffineForOp]:
    return [op for op in module.functions[0].body.ops if isinstance(op, AffineForOp)]


def matmul_nest(n: int = 256, m: int | None = None, k: int | None = None) -> AffineForOp:
    """The accumulation nest ``C[i, j] += A[i, k] * B[k, j]`` over (i, j, k)."""
    return nests(air.library.matmul(n, m or n, k or n))[1]


MM = matmul_nest()
N = 256


@pytest.mark.parametrize("sizes", [None, [32, 32, 32], [64, 64, 64], [1, 1, 1], {"k": 8}])
def test_matmul_op_counts_are_exact(sizes):
    r = estimate_cost(MM, H200, sizes)
    assert r.flops == 2 * N**3
    assert r.fma_pairs == N**3
    assert r.ops_by_kind == {"arith.addf": N**3, "arith.mulf": N**3}
    assert r.ops == 2 * N**3
    assert r.trip_counts == {"i": N, "j": N, "k": N}


def test_matmul_dram_bytes_when_everything_fits_l2():
    # 768 KiB of A, B, C fit H200's L2: A and B read once, C read and written once.
    for sizes in (None, [32] * 3, [64] * 3, [1] * 3):
        r = estimate_cost(MM, H200, sizes)
        assert r.bytes_by_level["dram"] == r.compulsory_bytes["dram"] == 4 * N * N * (1 + 1 + 2)
        assert r.intensity == pytest.approx(2 * N**3 / (16 * N * N))


def test_matmul_dram_bytes_by_hand_on_a_small_cache():
    # Tiles of 32: a tile (3 x 32x32 floats = 12 KiB) fits the 32 KiB L2, a (ti, tj) block
    # (A and B panels of 32 KiB each) does not. A is indexed by the k tile loop, so it is
    # fetched once per (ti, tj, tk): (N/32)^3 x 4 KiB; B likewise; C once per (ti, tj),
    # read and written: (N/32)^2 x 4 KiB x 2.
    r = estimate_cost(MM, SMALL, [32, 32, 32])
    assert r.reuse_blocks["dram"] == "%i per (%i_tile, %j_tile, %k_tile)"
    assert r.bytes_by_level["dram"] == 2 * (N // 32) ** 3 * 4 * KiB + (N // 32) ** 2 * 4 * KiB * 2 == 4718592
    # Tiles of 64 (48 KiB) do not fit; with the i point fixed: an A row of 64 floats, a 64x64
    # B tile, a C row. A and C follow i: N x (4 x 4) rows of 256 B; B follows tk: 4^3 tiles.
    r = estimate_cost(MM, SMALL, [64, 64, 64])
    assert r.reuse_blocks["dram"] == "%i per (%i_tile, %j_tile, %k_tile, %i)"
    a = b = N * 4 * 4 * 256
    b = 4**3 * 64 * 64 * 4
    c = N * 4 * 4 * 256 * 2
    assert r.bytes_by_level["dram"] == a + b + c == 4194304
    # Untiled: with i and j fixed, an A row (1 KiB), a B column (256 rows x one 64 B line)
    # and one C line fit; A follows i, B and C follow j.
    r = estimate_cost(MM, SMALL)
    assert r.bytes_by_level["dram"] == N * 1024 + N * N * (256 * 64) + N * N * 64 * 2


def test_footprints_and_fits_per_level():
    r = estimate_cost(MM, H200, [64, 64, 64])
    assert r.tile_footprints == {"A": 16 * KiB, "B": 16 * KiB, "C": 16 * KiB}
    assert r.working_set == 48 * KiB
    assert r.fits == {"registers": False, "shared": True, "l2": True}
    assert r.capacities["shared"] == 227 * KiB
    assert r.footprints["l2"] == {"A": 64 * 256 * 4, "B": 64 * 256 * 4, "C": 16 * KiB}  # per (ti, tj) block
    untiled = estimate_cost(MM, H200)
    assert untiled.working_set == 768 * KiB and untiled.fits == {"registers": False, "shared": False, "l2": True}
    assert set(estimate_cost(MM, host_cpu()).fits) >= {"registers", "l1", "l2"}


def test_elementwise_moves_read_plus_write_per_element():
    add = nests(air.library.binary("add", (96, 64), (96, 64)))[0]
    total = 3 * 96 * 64 * 4  # read A and B, write C: 4 bytes each per element
    for sizes in (None, [16, 16], [8, 32], [32, 64]):
        for tgt in (H200, SMALL, host_cpu()):
            r = estimate_cost(add, tgt, sizes)
            assert r.bytes_by_level["dram"] == total
            assert r.flops == 96 * 64 and r.fma_pairs == 0
    # Rows of 8 floats (32 B) cost whole 64 B lines when a block of 8 full rows (3 x 64 KiB)
    # does not stay in the 32 KiB cache.
    wide = nests(air.library.binary("add", (64, 2048), (64, 2048)))[0]
    r = estimate_cost(wide, SMALL, [8, 8])
    assert r.reuse_blocks["dram"] == "%i per (%i_tile, %j_tile)"
    assert r.bytes_by_level["dram"] == 2 * r.compulsory_bytes["dram"] == 2 * 3 * 64 * 2048 * 4


CHAIN = """
func.func @chain(%X: memref<128x128xf32>, %Y: memref<128x128xf32>) {
  %T = memref.alloc() : memref<128x128xf32>
  %two = arith.constant 2.0 : f32
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 128 {
      %x = affine.load %X[%i, %j] : memref<128x128xf32>
      %t = arith.mulf %x, %two : f32
      affine.store %t, %T[%i, %j] : memref<128x128xf32>
    }
  }
  affine.for %i = 0 to 128 {
    affine.for %j = 0 to 128 {
      %t = affine.load %T[%i, %j] : memref<128x128xf32>
      %e = math.exp %t : f32
      affine.store %e, %Y[%i, %j] : memref<128x128xf32>
    }
  }
  memref.dealloc %T : memref<128x128xf32>
  return
}
"""


def test_elementwise_chain_function():
    f = air.parse(CHAIN).functions[0]
    elems = 128 * 128
    # Everything fits H200's L2: X read, T written and read back, Y written.
    r = estimate_cost(f, H200)
    assert r.bytes_by_level["dram"] == 4 * elems * 4
    assert r.flops == 2 * elems and r.ops_by_kind == {"arith.mulf": elems, "math.exp": elems}
    # On the small CPU nothing fits: each nest streams its own memrefs (no reuse across nests).
    s = estimate_cost(f, SMALL)
    assert s.bytes_by_level["dram"] == 4 * elems * 4
    assert s.reuse_blocks["dram"] == "%i per (%i); %i_0 per (%i_0)"


def test_softmax_counts_and_bytes():
    f = air.library.softmax((64, 128)).functions[0]
    r = estimate_cost(f, H200)
    rows, cols = 64, 128
    # max, sub, exp, add (row sums), sub, exp, div per element.
    assert r.flops == 7 * rows * cols
    assert r.ops_by_kind["math.exp"] == 2 * rows * cols
    # X read and Y written once; the row max and sum vectors read and written.
    assert r.bytes_by_level["dram"] == 2 * rows * cols * 4 + 2 * 2 * rows * 4
    assert r.bound == "memory:dram"
    row_nest = nests(air.library.softmax((64, 128)))[1]
    t = estimate_cost(row_nest, H200, {"i": 8})
    assert t.tile_sizes == {"i": 8} and t.parallel_tiles == 64 // 8


def test_symbols_default_and_given():
    m = air.library.matmul("M", 64, "K")
    r = estimate_cost(m, H200)
    assert r.flops == 2 * DEFAULT_SYMBOL_VALUE * 64 * DEFAULT_SYMBOL_VALUE
    assert any("symbol %M = 1024 (default" in a for a in r.assumptions)
    assert "assumption: symbol %K = 1024" in r.explain()
    given_ = estimate_cost(m, H200, symbol_values={"M": 128, "%K": 32})
    assert given_.flops == 2 * 128 * 64 * 32 and given_.assumptions == []
    f = m.functions[0]
    by_value = estimate_cost(f, H200, symbol_values={f.args[-2]: 128, f.args[-1]: 32})
    assert by_value.flops == given_.flops and by_value.bytes_by_level == given_.bytes_by_level


def test_vector_accesses_cover_their_lanes():
    text = """
    func.func @copy(%A: memref<1024xf32>, %B: memref<1024xf32>) {
      affine.for %i = 0 to 1024 step 8 {
        %v = affine.vector_load %A[%i] : memref<1024xf32>, vector<8xf32>
        %w = arith.addf %v, %v : vector<8xf32>
        affine.vector_store %w, %B[%i] : memref<1024xf32>, vector<8xf32>
      }
      return
    }"""
    r = estimate_cost(air.parse(text).functions[0], SMALL)
    assert r.trip_counts == {"i": 128}
    assert r.flops == 1024  # 128 iterations x 8 lanes
    assert r.bytes_by_level["dram"] == 2 * 1024 * 4
    assert r.tile_footprints == {"A": 4096, "B": 4096}


def test_non_affine_access_is_whole_memref():
    text = """
    func.func @gather(%A: memref<64xf32>, %I: memref<16xindex>, %B: memref<16xf32>) {
      affine.for %i = 0 to 16 {
        %k = affine.load %I[%i] : memref<16xindex>
        %a = memref.load %A[%k] : memref<64xf32>
        affine.store %a, %B[%i] : memref<16xf32>
      }
      return
    }"""
    r = estimate_cost(air.parse(text).functions[0], SMALL)
    assert r.tile_footprints["A"] == 64 * 4
    assert any("memref.load of %A: non-affine" in a for a in r.assumptions)


def test_pre_tiled_ir_agrees_with_hypothetical_tiling():
    text = """
    #lb = affine_map<(d0) -> (d0)>
    #ub = affine_map<(d0) -> (d0 + 32)>
    func.func @mm(%A: memref<256x256xf32>, %B: memref<256x256xf32>, %C: memref<256x256xf32>) {
      affine.for %ii = 0 to 256 step 32 {
        affine.for %jj = 0 to 256 step 32 {
          affine.for %kk = 0 to 256 step 32 {
            affine.for %i = #lb(%ii) to #ub(%ii) {
              affine.for %j = #lb(%jj) to #ub(%jj) {
                affine.for %k = #lb(%kk) to #ub(%kk) {
                  %a = affine.load %A[%i, %k] : memref<256x256xf32>
                  %b = affine.load %B[%k, %j] : memref<256x256xf32>
                  %c = affine.load %C[%i, %j] : memref<256x256xf32>
                  %p = arith.mulf %a, %b : f32
                  %s = arith.addf %c, %p : f32
                  affine.store %s, %C[%i, %j] : memref<256x256xf32>
                }
              }
            }
          }
        }
      }
      return
    }"""
    tiled = estimate_cost(air.parse(text).functions[0].body.ops[0], H200)
    model = estimate_cost(MM, H200, [32, 32, 32])
    assert tiled.bytes_by_level == model.bytes_by_level
    assert tiled.flops == model.flops and tiled.parallel_tiles == model.parallel_tiles == 64
    assert tiled.assumptions == []  # i in [ii, ii + 32): a constant trip count


def test_triangular_trip_counts_are_estimated_and_said():
    text = """
    func.func @tri(%A: memref<100x100xf32>, %y: memref<100xf32>) {
      affine.for %i = 0 to 100 {
        affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
          %a = affine.load %A[%i, %j] : memref<100x100xf32>
          affine.store %a, %y[%j] : memref<100xf32>
        }
      }
      return
    }"""
    r = estimate_cost(air.parse(text).functions[0], SMALL)
    assert r.trip_counts == {"i": 100, "j": 50}
    assert any("loop %j: bounds depend on outer loops" in a for a in r.assumptions)


def test_tile_size_arguments():
    loops = [MM, MM.body.ops[0], MM.body.ops[0].body.ops[0]]
    by_op = estimate_cost(MM, H200, {loops[0]: 32, loops[1]: 32, loops[2]: 32})
    by_iv = estimate_cost(MM, H200, {lp.induction_var: 32 for lp in loops})
    by_name = estimate_cost(MM, H200, {"%i": 32, "j": 32, "k": 32})
    by_seq = estimate_cost(MM, "h200", [32, 32, 32])
    assert by_op == by_iv == by_name == by_seq
    assert estimate_cost(MM, H200, [256, 512, 1000]) == estimate_cost(MM, H200)  # sizes >= trip: untiled
    with pytest.raises(ValueError, match="not a loop of the outermost perfect band"):
        estimate_cost(MM, H200, {"q": 4})
    with pytest.raises(ValueError, match="4 tile sizes for a band of 3 loops"):
        estimate_cost(MM, H200, [4, 4, 4, 4])
    with pytest.raises(ValueError, match="positive integer"):
        estimate_cost(MM, H200, [0, 4, 4])
    with pytest.raises(ValueError, match="band: none"):
        estimate_cost(air.library.matmul(8, 8, 8), H200, {"i": 4})
    with pytest.raises(ValueError, match="unknown target"):
        estimate_cost(MM, "tpu", None)


def test_explain_names_every_number():
    r = estimate_cost(MM, H200, [32, 32, 32])
    text = r.explain()
    for piece in ("tile sizes: i=32, j=32, k=32", "flops 33,554,432", "64 parallel tiles", "dram:", "l2:",
                  "shared:", "compulsory 1.0 MiB", "tile working set 12.0 KiB", f"bound: {r.bound}"):
        assert piece in text, piece
    assert r.bound in {"compute"} | {f"memory:{lvl.name}" for lvl in memory_levels(H200)}
    assert r.estimated_seconds == max(r.compute_seconds, *r.seconds_by_level.values())


def test_peak_and_parallelism_choices():
    base = estimate_cost(MM, H200, [32, 32, 32])
    assert base.peak_flops == H200.peak_flops("f32") and base.parallel_tiles == 64  # (i, j) tiles; k reduces
    assert base.utilization == pytest.approx(64 / 132)
    assert base.compute_seconds == pytest.approx(2 * N**3 / (H200.peak_flops("f32") * 64 / 132))
    tc = estimate_cost(MM, H200, [32, 32, 32], tensor_cores=True)
    assert tc.peak_flops == H200.peak_flops("tf32", tensor_cores=True)
    bf = estimate_cost(MM, H200, [32, 32, 32], compute_dtype="bf16", tensor_cores=True)
    assert bf.peak_flops == pytest.approx(989.4e12) and bf.compute_seconds < tc.compute_seconds
    assert estimate_cost(MM, H200, [32, 32, 32], parallel_loops=[]).parallel_tiles == 1
    assert estimate_cost(MM, H200, [32, 32, 32], parallel_loops=["i", "j", "k"]).parallel_tiles == 512
    assert estimate_cost(MM, host_cpu(), [32, 32, 32]).utilization == min(1, 64 / host_cpu().cores)


@pytest.mark.parametrize("tgt", [H200, host_cpu()], ids=["h200", "cpu"])
def test_rank_prefers_real_tiles_over_ones(tgt):
    cands = [[1, 1, 1], [32, 32, 32], [64, 64, 64], None]
    ranked = rank_tile_sizes(MM, cands, tgt)
    order = [c for c, _ in ranked]
    assert order.index([32, 32, 32]) < order.index([1, 1, 1])
    assert order.index([64, 64, 64]) < order.index([1, 1, 1])
    times = [rep.estimated_seconds for _, rep in ranked]
    assert times == sorted(times)
    assert [c for c, _ in rank_tile_sizes(MM, cands, tgt)] == order  # deterministic
    with pytest.raises(TypeError, match="unknown options: cache"):
        rank_tile_sizes(MM, cands, tgt, cache=1)


def test_tile_sizes_for_capacity():
    assert tile_sizes_for_capacity(MM, 32 * KiB) == (32, 64, 64)
    assert tile_working_set(MM, (32, 64, 64)) == 4 * (32 * 64 + 64 * 64 + 32 * 64) == 32 * KiB
    assert tile_sizes_for_capacity(MM, 1 << 20) == (256, 256, 256)  # fits untiled: left so
    odd = matmul_nest(100, 60, 30)
    sizes = tile_sizes_for_capacity(odd, 4 * KiB)
    assert all(t % s == 0 for t, s in zip((100, 60, 30), sizes))  # divisors: no max/min bounds
    assert tile_working_set(odd, sizes) <= 4 * KiB
    row_max = nests(air.library.softmax((64, 128)))[0]  # for i { max[i] = -inf; for j { ... } }: band (i)
    assert tile_sizes_for_capacity(row_max, 4 * KiB) == (4,)  # 4 rows of X (2 KiB) + 4 maxima; 8 rows do not fit
    assert tile_sizes_for_capacity(row_max, 256) == (1,)  # not even one row fits: the smallest tile


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 96), st.integers(1, 96), st.integers(1, 96),
       st.tuples(st.integers(1, 128), st.integers(1, 128), st.integers(1, 128)))
def test_matmul_traffic_never_below_compulsory(m, n, k, sizes):
    nest = matmul_nest(m, n, k)
    for tgt in (H200, SMALL):
        r = estimate_cost(nest, tgt, sizes)
        assert r.flops == 2 * m * n * k
        for lvl, b in r.bytes_by_level.items():
            assert b >= r.compulsory_bytes[lvl] >= 4 * (m * k + k * n + 2 * m * n), lvl
        assert r == estimate_cost(nest, tgt, sizes)  # deterministic


@settings(max_examples=40, deadline=None)
@given(st.tuples(st.integers(1, 70), st.integers(1, 70), st.integers(1, 70)),
       st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40)))
def test_working_set_and_fits_monotone_in_tile_size(small, grow):
    big = tuple(s + g for s, g in zip(small, grow))
    a, b = estimate_cost(MM, SMALL, small), estimate_cost(MM, SMALL, big)
    assert a.working_set <= b.working_set
    assert all(a.fits[name] for name, fit in b.fits.items() if fit)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 64), st.integers(1, 64), st.tuples(st.integers(1, 80), st.integers(1, 80)))
def test_elementwise_dram_at_least_compulsory(rows, cols, sizes):
    add = nests(air.library.binary("add", (rows, cols), (rows, cols)))[0]
    r = estimate_cost(add, SMALL, sizes)
    assert r.bytes_by_level["dram"] >= r.compulsory_bytes["dram"] >= 3 * rows * cols * 4


_STENCIL_BODY = """
              %a = affine.load %A[%i, %k] : memref<256x257xf32>
              %a1 = affine.load %A[%i, %k + 1] : memref<256x257xf32>
              %b = affine.load %B[%k, %j] : memref<256x256xf32>
              %c = affine.load %C[%i, %j] : memref<256x256xf32>
              %p = arith.mulf %a, %b : f32
              %q = arith.mulf %a1, %p : f32
              %s = arith.addf %c, %q : f32
              affine.store %s, %C[%i, %j] : memref<256x256xf32>
"""
_HEAD = "func.func @mm(%A: memref<256x257xf32>, %B: memref<256x256xf32>, %C: memref<256x256xf32>) {"


def _stencil_mm(tile: int | None):
    """C += A[i, k] * A[i, k + 1] * B[k, j], plain or hand-tiled by ``tile``."""
    if tile is None:
        loops = ["affine.for %i = 0 to 256 {", "affine.for %j = 0 to 256 {", "affine.for %k = 0 to 256 {"]
    else:
        loops = [f"affine.for %{v}{v} = 0 to 256 step {tile} {{" for v in "ijk"]
        loops += [f"affine.for %{v} = affine_map<(d0) -> (d0)>(%{v}{v}) to affine_map<(d0) -> (d0 + {tile})>"
                  f"(%{v}{v}) {{" for v in "ijk"]
    text = "\n".join([_HEAD, *loops, _STENCIL_BODY, "}" * len(loops), "return", "}"])
    return air.parse(text).functions[0]


@pytest.mark.parametrize("tile", [32, 64])
def test_cheap_footprint_equals_exact_region(tile):
    regions = pytest.importorskip("analysis.regions")
    cheap = estimate_cost(_stencil_mm(None).body.ops[0], H200, [tile] * 3).tile_footprints
    assert cheap == {"A": tile * (tile + 1) * 4, "B": tile * tile * 4, "C": tile * tile * 4}
    tiled = _stencil_mm(tile)
    point = tiled.body.ops[0].body.ops[0].body.ops[0].body.ops[0]  # %i, under ii, jj, kk
    for mem in tiled.args:
        region = regions.memref_region(point, mem, 3)
        assert region.is_tight and region.size_in_bytes == cheap[mem.name_hint]


@settings(max_examples=60, deadline=None)
@given(programs(), st.lists(st.integers(1, 6), max_size=4), st.sampled_from([H200, SMALL]))
def test_random_programs_never_raise(module, sizes, tgt):
    from affine_ir.testing import kernel_function

    f = kernel_function(module)
    reports = [estimate_cost(f, tgt)]
    for op in f.body.ops:
        if isinstance(op, AffineForOp):
            reports.append(estimate_cost(op, tgt, sizes[: _band_depth(op)]))
    for r in reports:
        assert r.flops >= 0 and r.ops >= r.flops // 2
        assert all(b >= 0 for b in r.bytes_by_level.values())
        assert 0 < r.utilization <= 1 and r.estimated_seconds >= 0
        assert r.explain()


def _band_depth(loop: AffineForOp) -> int:
    depth = 1
    while True:
        body = [o for o in loop.body.ops if not o.is_terminator]
        if len(body) != 1 or not isinstance(body[0], AffineForOp):
            return depth
        loop, depth = body[0], depth + 1
