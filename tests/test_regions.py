"""Memory regions (``analysis.regions.memref_region``): exact isl bounding boxes of footprints.

Hand-written cases pin the printed boxes (tiled matmul, stencil, transpose, clipped windows,
symbols, vectors, non-affine accesses); random programs check against the access tracer that
every accessed element lies in the box, and that boxes claimed tight (and exact per-dim
bounds) are the traced bounding boxes.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp, AffineIfOp, AffineParallelOp
from affine_ir.interfaces import AffineAccessInterface
from affine_ir.testing import SYMBOL_RANGE, kernel_function, programs, trace_accesses
from affine_ir.types import IndexType, MemRefType
from analysis.isl_bridge import Scop, enclosing_loops
from analysis.regions import element_size_in_bytes, memref_region

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def func_of(text: str):
    return air.parse(text).functions[0]


def loops_of(op) -> list:
    return [o for o in op.walk() if isinstance(o, AffineForOp)]


def arg(f, name: str):
    return next(a for a in f.args if a.name_hint == name)


TILED_MATMUL = """
#lb = affine_map<(d0) -> (d0 * 32)>
#ub = affine_map<(d0) -> (d0 * 32 + 32)>
func.func @mm(%A: memref<128x64xf32>, %B: memref<64x128xf32>, %C: memref<128x128xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      affine.for %ii = #lb(%i) to #ub(%i) {
        affine.for %jj = #lb(%j) to #ub(%j) {
          affine.for %k = 0 to 64 {
            %a = affine.load %A[%ii, %k] : memref<128x64xf32>
            %b = affine.load %B[%k, %jj] : memref<64x128xf32>
            %c = affine.load %C[%ii, %jj] : memref<128x128xf32>
            %p = arith.mulf %a, %b : f32
            %s = arith.addf %c, %p : f32
            affine.store %s, %C[%ii, %jj] : memref<128x128xf32>
          }
        }
      }
    }
  }
  return
}
"""


def test_tiled_matmul_tiles():
    f = func_of(TILED_MATMUL)
    i, j, ii, jj, k = loops_of(f)
    A, B, C = f.args
    r = memref_region(ii, A, 1)
    assert str(r) == "region of %A under %ii: [%i * 32, +32) x [0, 64) = 2048 elements, 8 KiB, read"
    assert r.shape == (32, 64) and r.num_elements == 2048 and r.size_in_bytes == 8192
    assert r.is_exact and r.is_tight and r.kind == "read"
    assert r.lower_bound_operands == [i.induction_var]
    assert [str(m) for m in r.lower_bounds] == ["(d0) -> (d0 * 32)", "(d0) -> (0)"]
    r = memref_region(ii, B, 2)
    assert str(r) == "region of %B under %ii: [0, 64) x [%j * 32, +32) = 2048 elements, 8 KiB, read"
    r = memref_region(ii, C, 2)
    assert str(r) == "region of %C under %ii: [%i * 32, +32) x [%j * 32, +32) = 1024 elements, 4 KiB, read-write"
    assert r.lower_bound_operands == [i.induction_var, j.induction_var]
    # Deeper: one row of the tile per %ii; the whole matrix at depth 0.
    assert str(memref_region(k, A, 3)) == "region of %A under %k: [%ii, +1) x [0, 64) = 64 elements, 256 B, read"
    assert str(memref_region(f, C, 0)) == "region of %C under @mm: [0, 128) x [0, 128) = 16384 elements, 64 KiB, " \
                                          "read-write"


def test_stencil_halo_and_union_of_nests():
    f = func_of(air.testing.EXAMPLES["stencil"])
    t, i1, j1, i2, j2 = loops_of(f)
    A, B = f.args
    r = memref_region(i1, A, 2)  # one row of the first sweep: rows %i - 1 .. %i + 1, all columns
    assert str(r) == "region of %A under %i: [%i - 1, +3) x [0, 8) = 24 elements, 96 B, read"
    assert r.is_tight
    assert str(memref_region(t, A, 1)) == "region of %A under %t: [0, 8) x [0, 8) = 64 elements, 256 B, read-write"
    assert str(memref_region(t, B, 1)) == "region of %B under %t: [1, 7) x [1, 7) = 36 elements, 144 B, read-write"


def test_transpose():
    f = func_of("""
func.func @t(%A: memref<16x8xf32>, %B: memref<8x16xf32>) {
  affine.for %i = 0 to 16 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<16x8xf32>
      affine.store %a, %B[%j, %i] : memref<8x16xf32>
    }
  }
  return
}""")
    i, j = loops_of(f)
    assert str(memref_region(j, f.args[0], 1)) == "region of %A under %j: [%i, +1) x [0, 8) = 8 elements, 32 B, read"
    assert str(memref_region(j, f.args[1], 1)) == "region of %B under %j: [0, 8) x [%i, +1) = 8 elements, 32 B, write"


def test_clipped_window_gives_constant_box_and_exact_bounds():
    f = func_of(air.testing.EXAMPLES["window_sum"])  # A[k] for k in [max(0, i - 2), min(6, i + 3))
    i, k = loops_of(f)
    r = memref_region(k, f.args[0], 1)
    assert str(r) == "region of %A under %k: [%i - 2, +5) = 5 elements, 20 B, read"
    assert not r.is_tight  # the box sticks out at the boundary; the exact bounds do not
    lo, hi = r.exact_bounds[0]
    assert str(lo) == "(d0) -> (0, d0 - 2)" and str(hi) == "(d0) -> (d0 + 3, 6)"
    assert r.box_at({i.induction_var: 0}) == [(-2, 3)]


def test_symbolic_sizes_and_triangles():
    f = func_of(air.testing.EXAMPLES["triangular"])  # L[i, j] for j < i < N; x[j], x[i]
    i, j = loops_of(f)
    L, x, N = f.args
    r = memref_region(i, L, 0)
    assert str(r) == "region of %L under %i: [1, +(%N - 1)) x [0, +(%N - 1)) = 64 elements, 256 B, read"
    assert r.extents[0] == air.AffineMap(0, 1, (air.symbol(0) - 1,)) and r.shape == (8, 8)
    assert r.lower_bound_operands == [N]
    r = memref_region(j, L, 1)
    assert str(r) == "region of %L under %j: [%i, +1) x [0, +(%i)) = 8 elements, 32 B, read"
    assert r.is_tight and r.box_at({i.induction_var: 5}) == [(5, 6), (0, 5)]
    dyn = func_of("""
func.func @d(%A: memref<?xf32>, %N: index) {
  affine.for %i = 0 to %N {
    %a = affine.load %A[%i + 2] : memref<?xf32>
    affine.store %a, %A[%i] : memref<?xf32>
  }
  return
}""")
    r = memref_region(dyn, dyn.args[0], 0)
    assert str(r) == "region of %A under @d: [0, +(%N + 2)) = ? elements, read-write"
    assert r.shape == (None,) and r.num_elements is None and r.size_in_bytes is None


def test_vectors_parallel_and_strides():
    f = func_of("""
func.func @v(%A: memref<64xf32>, %B: memref<16x16xf16>) {
  affine.for %i = 0 to 8 {
    %v = affine.vector_load %A[%i * 8] : memref<64xf32>, vector<8xf32>
    affine.vector_store %v, %A[%i * 8] : memref<64xf32>, vector<8xf32>
  }
  affine.parallel (%x, %y) = (0, 0) to (16, 8) step (1, 2) {
    %b = affine.load %B[%x, %y * 2] : memref<16x16xf16>
    affine.store %b, %B[%x, %y * 2 + 1] : memref<16x16xf16>
  }
  return
}""")
    loop = loops_of(f)[0]
    par = next(o for o in f.walk() if isinstance(o, AffineParallelOp))
    A, B = f.args
    assert str(memref_region(loop, A, 1)) == "region of %A under %i: [%i * 8, +8) = 8 elements, 32 B, read-write"
    assert str(memref_region(par, B, 1)) == "region of %B under (%x, %y): [%x, +1) x [0, 14) = 14 elements, 28 B, " \
                                            "read-write"
    assert str(memref_region(par, B, 2)) == "region of %B under (%x, %y): [%x, +1) x [%y * 2, +2) = 2 elements, " \
                                            "4 B, read-write"
    assert element_size_in_bytes(B.type) == 2 and element_size_in_bytes(air.types.index) == 8


def test_non_affine_access_is_the_whole_memref():
    f = func_of("""
func.func @n(%A: memref<10x4xf32>, %I: memref<10xi32>) {
  affine.for %i = 0 to 10 {
    %t = affine.load %I[%i] : memref<10xi32>
    %j = arith.index_cast %t : i32 to index
    %a = memref.load %A[%j, %i] : memref<10x4xf32>
    affine.store %a, %A[%i, 0] : memref<10x4xf32>
  }
  return
}""")
    loop = loops_of(f)[0]
    r = memref_region(loop, f.args[0], 1)
    assert not r.is_exact and not r.is_tight
    assert r.shape == (10, 4) and r.num_elements == 40
    assert str(r) == "region of %A under %i: [0, 10) x [0, 4) = 40 elements, 160 B, read-write " \
                     "(non-affine access: whole memref)"
    assert memref_region(loop, f.args[1], 1).is_exact  # the index memref itself is read affinely


def test_nothing_accessed_bad_depth_and_empty_loops():
    f = func_of(TILED_MATMUL)
    i, j, ii, jj, k = loops_of(f)
    out = func_of("""
func.func @e(%A: memref<4xf32>, %B: memref<4xf32>) {
  affine.for %i = 0 to 0 {
    %a = affine.load %A[%i] : memref<4xf32>
    affine.store %a, %A[%i] : memref<4xf32>
  }
  return
}""")
    assert memref_region(out, out.args[1], 0) is None
    r = memref_region(out, out.args[0], 0)
    assert r.num_elements == 0 and r.shape == (0,)
    with pytest.raises(ValueError, match="depth 5 out of range"):
        memref_region(jj, f.args[0], 5)
    with pytest.raises(ValueError):
        memref_region(i, f.args[0], -1)


# ----- random programs against the tracer ------------------------------------------------------
def _query(data, f, scop):
    ops = [f] + [o for o in f.walk() if isinstance(o, (AffineForOp, AffineParallelOp, AffineAccessInterface))]
    op = data.draw(st.sampled_from(ops))
    under = {id(o) for o in op.walk()}
    mems = [a for a in f.args if isinstance(a.type, MemRefType)]
    used = [m for m in mems if any(s.memref is m and id(s.op) in under for s in scop.statements)]
    mem = data.draw(st.sampled_from(used or mems))
    depth = data.draw(st.integers(0, len(enclosing_loops(op, f)[0])))
    return op, under, mem, depth


def _groups(trace, under, mem, depth) -> dict:
    groups: dict = {}
    for a in trace:
        if a.memref is mem and id(a.op) in under:
            groups.setdefault(a.ivs[:depth], []).append(a.index)
    return groups


@settings(max_examples=200, **FAST)
@given(programs(), st.data())
def test_random_regions_contain_every_access_and_tight_boxes_are_exact(m, data):
    f = kernel_function(m)
    syms = {a: data.draw(st.integers(*SYMBOL_RANGE)) for a in f.args if isinstance(a.type, IndexType)}
    trace = trace_accesses(f, syms)
    scop = Scop(f)
    for _ in range(3):
        op, under, mem, depth = _query(data, f, scop)
        r = memref_region(op, mem, depth, scop=scop)
        groups = _groups(trace, under, mem, depth)
        if r is None:
            assert not groups
            continue
        assert r.is_exact and r.rank == mem.type.rank
        n = _product(r.shape)
        assert r.num_elements == n and r.size_in_bytes == (None if n is None else 4 * n)
        for key, idxs in groups.items():
            values = {**dict(zip(r.outer_ivs, key)), **syms}
            box = r.box_at(values)
            args = [values[v] for v in r.lower_bound_operands]
            for k, (lo, hi) in enumerate(box):
                seen = [x[k] for x in idxs]
                assert lo <= min(seen) and (hi is None or max(seen) < hi), (str(m), str(r), key, k)
                assert r.shape[k] is None or max(seen) < lo + r.shape[k], (str(m), str(r), key, k)
                if r.is_tight:
                    assert (lo, hi) == (min(seen), max(seen) + 1), (str(m), str(r), key, k)
                if r.exact_bounds[k] is not None:
                    lbm, ubm = r.exact_bounds[k]
                    n = lbm.num_dims
                    exact = (max(lbm.evaluate(args[:n], args[n:])), min(ubm.evaluate(args[:n], args[n:])))
                    assert exact == (min(seen), max(seen) + 1), (str(m), str(r), key, k)


SIMPLE = programs(max_nests=2, allow_if=False, allow_minmax=False, allow_divmod=False, max_step=1,
                  allow_symbols=False)


@settings(max_examples=60, **FAST)
@given(SIMPLE, st.data())
def test_random_rectangular_single_accesses_are_tight(m, data):
    """An access whose subscripts are each one IV with coefficient +-1 (or a constant), in
    loops with constant bounds: its region at any depth is tight."""
    f = kernel_function(m)
    trace = trace_accesses(f, {})
    scop = Scop(f)
    for s in scop.statements:
        loops, guards = enclosing_loops(s.op, f)
        if guards or not all(_rectangular(lp.op) for lp in loops) or not _simple_subscripts(s.op):
            continue
        depth = data.draw(st.integers(0, len(loops)))
        r = memref_region(s.op, s.memref, depth, scop=scop)
        assert r.is_tight, (str(m), str(s.op), depth, str(r))
        for key, idxs in _groups(trace, {id(s.op)}, s.memref, depth).items():
            box = r.box_at(dict(zip(r.outer_ivs, key)))
            assert box == [(min(x[k] for x in idxs), max(x[k] for x in idxs) + 1) for k in range(len(box))]


def _rectangular(op) -> bool:
    return isinstance(op, AffineForOp) and op.constant_bounds is not None and op.step == 1 and not isinstance(
        op.parent_op, AffineIfOp)


def _simple_subscripts(op) -> bool:
    if not isinstance(op, AffineAccessInterface):
        return False
    for e in op.map.results:
        dims = [k for k in e.used_dims() if e.coefficient_of_dim(k)]
        if not e.is_pure_linear or e.used_symbols() or len(dims) > 1 or \
                any(abs(e.coefficient_of_dim(k)) != 1 for k in dims):
            return False
    return True


def _product(shape) -> int | None:
    n = 1
    for s in shape:
        if s is None:
            return None
        n *= s
    return n


def test_isl_functions_with_divs_past_64_bits_convert_back():
    """A div of denominator 2**64 (loops of steps near 2**63 give them; the fuzzer found copy
    generation failing with an internal TypeError from ``Val.int_from_si``) converts to a floordiv."""
    import islpy as isl

    from affine_ir.affine_expr import dim
    from analysis.isl_results import aff_to_expr, int_val

    aff = isl.PwAff("{ [i] -> [(floor(i / 18446744073709551616) + 1)] }").get_pieces()[0][1]
    assert aff_to_expr(aff, {0: dim(0)}, {}) == dim(0).floordiv(1 << 64) + 1
    ctx = aff.get_ctx()
    assert [int_val(ctx, v).to_python() for v in (-(1 << 70), -5, 1 << 63)] == [-(1 << 70), -5, 1 << 63]
