"""``gpu-map`` (``transforms.gpu.gpu_map``): nests become ``gpu.launch`` ops of a host function.

Every output must verify, print/parse to a fixpoint, be a host function, and compute exactly
what the input computes on the interpreter's emulation of the launches -- under both thread
schedules (increasing and decreasing order), so a wrongly parallel mapping shows as a race.
Structure checks (grid, block, guards, sequential loops) are derived from the shapes by hand.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
import analysis
from affine_ir import library as lib
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.interp import reversed_schedule
from affine_ir.testing import assert_equivalent, fusion_programs_with_inputs, programs_with_inputs
from affine_ir.types import MemRefType
from transforms import PipelineError, TransformError
from transforms.gpu.gpu_map import GpuMap, check_host_function, map_function, map_nest, parallel_band
from transforms.loop_utils import all_loops
from transforms.pass_manager import PassManager
from transforms.testing import assert_refused_unchanged, map_to_gpu, run_pipeline

NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f64": np.float64, "i32": np.int32}


def mapped(module, pipeline: str = "gpu-map"):
    """``module`` through ``pipeline``, checked (:func:`transforms.testing.map_to_gpu`); returns the
    output and the decisions."""
    return map_to_gpu(module, pipeline)


def assert_same_results(before, after, args) -> None:
    """Exact equality with the input, in both thread schedules."""
    assert_equivalent(before, after, args)
    with reversed_schedule():
        assert_equivalent(before, after, args)


def launches(module) -> list[LaunchOp]:
    return [op for op in module.walk() if isinstance(op, LaunchOp)]


def sizes(launch: LaunchOp) -> tuple[tuple, tuple]:
    """(grid, block) with constants as ints and other host values as their names."""
    def show(v):
        owner = v.owner
        if getattr(owner, "name", "") == "arith.constant":
            return owner.value
        return f"%{v.name_hint}"
    return tuple(map(show, launch.grid_size)), tuple(map(show, launch.block_size))


# -- structure ---------------------------------------------------------------------------------------------------
def test_matmul_is_a_2d_grid_with_a_sequential_k_loop():
    m = lib.matmul(64, 96, 16)
    out, decisions = mapped(m)
    init, mm = launches(out)
    # j (96, innermost) -> x with 32 threads: 3 blocks; i (64) -> y with 8 threads: 8 blocks; no guard.
    assert sizes(mm) == ((3, 8, 1), (32, 8, 1))
    assert sizes(init) == ((3, 8, 1), (32, 8, 1))
    text = str(out)
    assert "affine.if" not in text
    assert "%j = affine.apply #map(%bx, %tx)" in text and "%i = affine.apply #map1(%by, %ty)" in text
    assert "#map = affine_map<(d0, d1) -> (d0 * 32 + d1)>" in text
    assert "#map1 = affine_map<(d0, d1) -> (d0 * 8 + d1)>" in text
    (k,) = [op for op in mm.walk() if isinstance(op, AffineForOp)]
    assert k.induction_var.name_hint == "k" and k.parent is mm.body
    assert [d.message for d in decisions] == [
        "mapped (%i, %j) to (y, x): grid (3, 8, 1), block (32, 8, 1)",
        "mapped (%i, %j) to (y, x): grid (3, 8, 1), block (32, 8, 1); sequential per thread: (%k)"]
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((64, 16)).astype(np.float32), rng.standard_normal((16, 96)).astype(np.float32),
            np.zeros((64, 96), np.float32)]
    assert_same_results(m, out, args)


def test_symbolic_matmul_grid_is_computed_on_the_host_and_guarded():
    m = lib.matmul("M", "N", "K")
    out, _ = mapped(m)
    text = str(out)
    assert sizes(launches(out)[1]) == (("%j_grid", "%i_grid", 1), (32, 8, 1))
    assert "%j_grid = affine.apply #map()[%N]" in text and "#map = affine_map<()[s0] -> (s0 ceildiv 32)>" in text
    assert "%i_grid = affine.apply #map1()[%M]" in text and "#map1 = affine_map<()[s0] -> (s0 ceildiv 8)>" in text
    assert "affine.if #set(%j_0, %i_0)[%N, %M] {" in text
    assert "#set = affine_set<(d0, d1)[s0, s1] : (-d0 + s0 - 1 >= 0, -d1 + s1 - 1 >= 0)>" in text
    rng = np.random.default_rng(1)
    for M, N, K in ((5, 3, 4), (9, 33, 2), (0, 4, 3), (3, 0, 2), (2, 3, 0)):
        args = [rng.integers(-4, 5, (M, K)).astype(np.float32), rng.integers(-4, 5, (K, N)).astype(np.float32),
                np.full((M, N), 7, np.float32), M, N, K]
        assert_same_results(m, out, args)


def test_three_parallel_loops_and_a_fourth_sequential():
    text = """
func.func @four(%A: memref<2x3x64x64xf32>) {
  affine.for %a = 0 to 2 {
    affine.for %b = 0 to 3 {
      affine.for %c = 0 to 64 {
        affine.for %d = 0 to 64 {
          %v = affine.load %A[%a, %b, %c, %d] : memref<2x3x64x64xf32>
          %w = arith.addf %v, %v : f32
          affine.store %w, %A[%a, %b, %c, %d] : memref<2x3x64x64xf32>
        }
      }
    }
  }
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    (launch,) = launches(out)
    # d -> x (32 threads, 2 blocks), c -> y (4, 16 blocks), b -> z (2 threads for 3 iterations: 2 blocks, guarded).
    assert sizes(launch) == ((2, 16, 2), (32, 4, 2))
    assert decisions[0].message == ("mapped (%b, %c, %d) to (z, y, x): grid (2, 16, 2), block (32, 4, 2), guarded; "
                                    "sequential per thread: (%a)")
    assert "affine.if #set(%b)" in str(out) and "affine_set<(d0) : (-d0 + 2 >= 0)>" in str(out)
    assert_same_results(m, out, [np.arange(2 * 3 * 64 * 64, dtype=np.float32).reshape(2, 3, 64, 64)])


def test_steps_offsets_max_and_min_bounds():
    text = """
func.func @bounds(%A: memref<64x64xf32>, %a: index, %N: index) {
  affine.for %i = max affine_map<()[s0] -> (s0, 2)>()[%a] to min affine_map<()[s0] -> (s0, 50)>()[%N] step 3 {
    affine.for %j = 1 to 63 {
      %v = affine.load %A[%i, %j - 1] : memref<64x64xf32>
      affine.store %v, %A[%i, %j + 1] : memref<64x64xf32>
    }
  }
  affine.for %k = 3 to 64 step 3 {
    %v = affine.load %A[%k, %k] : memref<64x64xf32>
    affine.store %v, %A[%k, 0] : memref<64x64xf32>
  }
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    text = str(out)
    assert "%i_lb = affine.max #map()[%a]" in text  # a max lower bound is computed once on the host
    assert "%i_grid = affine.min #map1()[%N, %i_lb]" in text
    assert "#map1 = affine_map<()[s0, s1] -> ((s0 - s1) ceildiv 768, (-s1 + 50) ceildiv 768)>" in text
    # %k: 21 iterations -> one block of 21 threads, IV 3 + 3 * tid, no guard
    assert sizes(launches(out)[1]) == ((1, 1, 1), (21, 1, 1))
    assert "affine_map<(d0, d1) -> (d0 * 63 + d1 * 3 + 3)>" in text
    assert decisions[0].message.endswith("guarded; sequential per thread: (%j)")
    A = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    for a, n in ((0, 64), (5, 40), (-3, 7), (9, 9), (30, 2)):
        assert_same_results(m, out, [A, a, n])


def test_a_max_lower_bound_of_a_host_loop_iv_gives_a_grid_of_every_pair():
    """Inside a host loop an affine.max of its IV is no valid dim or symbol of another map (MLIR's
    rules), so the grid is min over (upper, lower) pairs of ceildiv(upper - lower, block), not a map
    of the host max (which did not verify)."""
    text = """
func.func @host_max(%A: memref<8x40xi32>, %N: index) {
  affine.for %t = 1 to 8 {
    affine.for %i = max affine_map<(d0) -> (d0 * 2, 3)>(%t) to min affine_map<(d0)[s0] -> (d0 + 30, s0)>(%t)[%N] {
      %v = affine.load %A[%t - 1, %i] : memref<8x40xi32>
      affine.store %v, %A[%t, %i] : memref<8x40xi32>
    }
  }
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    text = str(out)
    assert "kept %t on the host" in decisions[0].message
    assert "%i_lb = affine.max" in text and "%i_grid = affine.min #map1(%t)[%N]" in text, text
    A = np.arange(8 * 40, dtype=np.int32).reshape(8, 40)
    for n in (40, 17, 2):
        assert_same_results(m, out, [A, n])


def test_affine_parallel_bands_and_reductions():
    text = """
func.func @par(%A: memref<40x30xf32>, %out: memref<1xf32>, %N: index) {
  affine.parallel (%i, %j) = (0, 1) to (symbol(%N), 30) step (2, 1) {
    %v = affine.load %A[%i, %j] : memref<40x30xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %A[%i, %j] : memref<40x30xf32>
  }
  %r = affine.parallel (%k) = (0) to (40) reduce ("addf") -> (f32) {
    %v = affine.load %A[%k, 0] : memref<40x30xf32>
    affine.yield %v : f32
  }
  affine.store %r, %out[0] : memref<1xf32>
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    par, red = launches(out)
    assert sizes(par) == ((1, "%i_grid", 1), (29, 8, 1))
    assert "#map = affine_map<()[s0] -> (s0 ceildiv 16)>" in str(out)  # step 2 x 8 threads
    assert sizes(red) == ((1, 1, 1), (1, 1, 1))
    assert decisions[1].kind == "note" and decisions[1].message == (
        "1x1x1 launch running it sequentially: merged: %r computed by 'affine.parallel' is used by a later "
        "'affine.store'")
    A = np.arange(40 * 30, dtype=np.float32).reshape(40, 30)
    for n in (40, 13, 0):
        assert_same_results(m, out, [A, np.zeros(1, np.float32), n])


def test_triangular_and_non_parallel_loops_stay_sequential_per_thread():
    text = """
func.func @tri(%A: memref<16x16xf32>, %N: index) {
  affine.for %i = 0 to %N {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %v = affine.load %A[%i, %j] : memref<16x16xf32>
      %w = arith.addf %v, %v : f32
      affine.store %w, %A[%i, %j] : memref<16x16xf32>
    }
  }
  affine.for %k = 1 to 16 {
    %a = affine.load %A[%k - 1, 0] : memref<16x16xf32>
    %b = affine.load %A[%k, 0] : memref<16x16xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%k, 0] : memref<16x16xf32>
  }
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    tri, prefix = launches(out)
    assert sizes(tri) == (("%i_grid", 1, 1), (256, 1, 1))
    assert "affine.for %j = 0 to #map2(%i) {" in str(out)  # the bound uses the recovered IV
    assert sizes(prefix) == ((1, 1, 1), (1, 1, 1))
    assert decisions[1].kind == "note"
    assert decisions[1].message.startswith("1x1x1 launch running it sequentially: no parallel loop to map (%k is not "
                                           "parallel: RAW %A: ")
    A = np.arange(256, dtype=np.float32).reshape(16, 16)
    for n in (16, 5, 0):
        assert_same_results(m, out, [A, n])


def test_statements_merges_rematerialization_and_host_ops():
    text = """
func.func @mixed(%A: memref<10xf32>, %B: memref<?xf32>, %N: index, %f: f32) {
  %c = arith.constant 2.0 : f32
  %v = affine.load %A[0] : memref<10xf32>
  affine.store %v, %A[9] : memref<10xf32>
  %n = arith.index_cast %N : index to i32
  %x = arith.sitofp %n : i32 to f32
  %y = arith.mulf %x, %f : f32
  affine.for %i = 0 to %N {
    affine.store %y, %B[%i] : memref<?xf32>
  }
  %t = memref.alloc() : memref<10xf32>
  %u = affine.load %A[1] : memref<10xf32>
  affine.for %i = 0 to 10 {
    affine.store %u, %t[%i] : memref<10xf32>
  }
  %z = arith.constant 0.0 : f32
  %s = affine.for %i = 0 to 10 iter_args(%acc = %z) -> (f32) {
    %w = affine.load %t[%i] : memref<10xf32>
    %p = arith.addf %acc, %w : f32
    affine.yield %p : f32
  }
  memref.dealloc %t : memref<10xf32>
  affine.store %s, %A[2] : memref<10xf32>
  affine.store %c, %A[3] : memref<10xf32>
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    msgs = [(d.kind, d.message) for d in decisions]
    # %u would merge the parallel store loop into a 1x1x1 launch: it goes through a buffer (issue 17);
    # %s merges only its loop and the store using it
    assert msgs == [
        ("applied", "demoted %u to the one-element buffer %u_mem: it is used by later launches, and passing it "
                    "as a value would merge a parallel nest into a 1x1x1 launch"),
        ("note", "1x1x1 launch running it sequentially: top-level statements outside loops"),
        ("applied", "mapped (%i) to (x): grid (%i_grid, 1, 1), block (256, 1, 1), guarded"),
        ("note", "1x1x1 launch running it sequentially: top-level statements outside loops"),
        ("applied", "mapped (%i) to (x): grid (1, 1, 1), block (10, 1, 1)"),
        ("note", "1x1x1 launch running it sequentially: merged: %s computed by 'affine.for' is used by a later "
                 "'affine.store'"),
    ]
    text = str(out)
    # index_cast/sitofp/mulf of host values are recomputed in the launch that uses them, and leave the host
    body = launches(out)[1].body.ops
    assert [op.name for op in body[:3]] == ["arith.index_cast", "arith.sitofp", "arith.mulf"]
    top = [op.name for op in out.functions[0].body.ops]
    assert top.count("arith.index_cast") == 0 and top.count("gpu.launch") == 5
    assert top.index("memref.alloc") < top.index("memref.dealloc") and top[-2:] == ["memref.dealloc", "func.return"]
    assert text.count("gpu.launch") == 5
    A = np.arange(10, dtype=np.float32)
    for n in (7, 0, 300):
        assert_same_results(m, out, [A, np.zeros(max(n, 1), np.float32), n, 1.5])


def test_loop_allocs_become_thread_private():
    """A buffer allocated per iteration of a parallel loop is per thread after mapping (memref.alloca);
    a workgroup buffer would be shared by the threads of a block."""
    text = """
func.func @private(%A: memref<8x4xf32>) {
  affine.parallel (%i) = (0) to (8) {
    %buf = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
    affine.for %j = 0 to 4 {
      %old = affine.load %buf[%j] : memref<4xf32, #gpu.address_space<workgroup>>
      %v = affine.load %A[%i, %j] : memref<8x4xf32>
      %s = arith.addf %old, %v : f32
      affine.store %s, %buf[%j] : memref<4xf32, #gpu.address_space<workgroup>>
      affine.store %s, %A[%i, %j] : memref<8x4xf32>
    }
    memref.dealloc %buf : memref<4xf32, #gpu.address_space<workgroup>>
  }
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    assert "%buf = memref.alloca() : memref<4xf32>" in str(out) and "memref.dealloc" not in str(out)
    assert decisions[0].message.endswith("thread-private (memref.alloca): %buf")
    A = np.arange(32, dtype=np.float32).reshape(8, 4) + 1
    assert_same_results(m, out, [A])
    # the same launch with the workgroup buffer kept computes something else: the check can fail
    shared = air.parse(str(out).replace("memref.alloca() : memref<4xf32>",
                                        "memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>")
                       .replace("memref<4xf32>", "memref<4xf32, #gpu.address_space<workgroup>>"))
    with pytest.raises(AssertionError, match="elements differ"):
        assert_equivalent(m, shared, [A])


def test_zero_trip_nests_are_removed():
    text = """
func.func @empty(%A: memref<10xf32>, %N: index) {
  %cst = arith.constant 1.0 : f32
  affine.for %i = 5 to 5 {
    affine.store %cst, %A[%i] : memref<10xf32>
  }
  affine.for %i = %N to 10 {
    affine.store %cst, %A[%i] : memref<10xf32>
  }
  return
}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    assert len(launches(out)) == 1
    assert decisions[0].message == "removed: the nest runs no iteration (%i has none)"
    for n in (0, 4, 10, 12, 300):  # 300: a negative grid size, no block runs
        assert_same_results(m, out, [np.zeros(10, np.float32), n])



@pytest.mark.parametrize("step", [2**60, 2**58 + 1])
def test_steps_whose_thread_offsets_pass_64_bits_stay_sequential(step):
    """A thread's IV is (block id * b + thread id) * step: with step * b past INT64_MAX its
    coefficient has no 64-bit form (the text did not parse back, the C literal overflowed), so
    the nest runs sequentially in one thread instead."""
    text = f"""
func.func @k(%A: memref<8xi64>, %N: index) {{
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  affine.parallel (%t) = (0) to (8) {{
    %r = affine.for %i = 0 to %N step {step} iter_args(%c = %z) -> (i64) {{
      %c2 = arith.addi %c, %one : i64
      affine.yield %c2 : i64
    }}
    affine.store %r, %A[%t] : memref<8xi64>
  }}
  affine.parallel (%i) = (0) to (%N) step ({step}) {{
    %q = affine.apply affine_map<(d0) -> (d0 floordiv {step})>(%i)
    affine.store %one, %A[%q] : memref<8xi64>
  }}
  return
}}"""
    m = air.parse(text)
    out, decisions = mapped(m)
    assert "passes 64 bits" in decisions[-1].message, [d.message for d in decisions]
    for n in (0, 1, 3 * step, min(8 * step, 2**63 - 1)):  # %q stays inside %A
        assert_same_results(m, out, [np.zeros(8, np.int64), n])

def test_block_sizes_option():
    m = lib.matmul(64, 64, 8)
    out, decisions = mapped(m, "gpu-map{block-sizes=16,4}")
    assert sizes(launches(out)[1]) == ((4, 16, 1), (16, 4, 1))
    out, _ = mapped(m, "gpu-map{block-sizes=64}")  # y gets 1
    assert sizes(launches(out)[1]) == ((1, 64, 1), (64, 1, 1))
    assert str(GpuMap(block_sizes=(16, 4))) == "gpu-map{block-sizes=16,4}" and str(GpuMap()) == "gpu-map"
    for bad, what in (("2048", r"\(2048 threads\) exceed CUDA's limits"), ("0", "one to three sizes >= 1"),
                      ("32,32,2", r"\(2048 threads\)"), ("1,1,128", "z <= 64"), ("1,2,3,4", "one to three sizes")):
        with pytest.raises(PipelineError, match=what):
            PassManager.parse(f"gpu-map{{block-sizes={bad}}}")


def test_grid_limits_refuse_the_nest_with_the_figures():
    text = """
func.func @big(%A: memref<?x?xf32>, %B: memref<?xf32>) {
  affine.for %i = 0 to 1000000 {
    affine.for %j = 0 to 64 {
      %v = affine.load %A[%i, %j] : memref<?x?xf32>
      affine.store %v, %A[%i, %j] : memref<?x?xf32>
    }
  }
  affine.for %k = 0 to 1099511627776 {
    %v = affine.load %B[%k] : memref<?xf32>
    affine.store %v, %B[%k] : memref<?xf32>
  }
  affine.for %l = 0 to 100 {
    %v = affine.load %B[%l] : memref<?xf32>
    affine.store %v, %B[%l] : memref<?xf32>
  }
  return
}"""
    m = air.parse(text)
    f = m.functions[0]
    err = assert_refused_unchanged(lambda: map_nest(f.body.ops[0]), m)
    assert err.reason == ("cannot map %i to y: grid size 125000 (trip count 1000000 / block 8) exceeds CUDA's limit "
                          "65535 for y")
    err = assert_refused_unchanged(lambda: map_nest(f.body.ops[1]), m)
    assert err.reason == ("cannot map %k to x: grid size 4294967296 (trip count 1099511627776 / block 256) exceeds "
                          "CUDA's limit 2147483647 for x")
    err = assert_refused_unchanged(lambda: map_function(f), m)  # without a context: all or nothing
    assert err.reason.startswith("cannot map %i to y")
    pm = PassManager.parse("gpu-map")
    out = pm.run(m)
    air.verify(out)
    assert [d.kind for d in pm.trace.decisions] == ["refused", "refused", "applied"]
    assert [op.name for op in out.functions[0].body.ops if op.name in ("affine.for", "gpu.launch")] == [
        "affine.for", "affine.for", "gpu.launch"]
    with pytest.raises(TransformError, match="is not a host function: 'affine.for' at <string>:3:3"):
        check_host_function(out.functions[0])
    # a larger block along y brings the grid under the limit
    out, _ = mapped(air.parse(text.split("  affine.for %k")[0] + "  return\n}"), "gpu-map{block-sizes=32,16}")
    assert sizes(launches(out)[0]) == ((2, 62500, 1), (32, 16, 1))


def test_functions_that_cannot_be_host_functions_are_refused_unchanged():
    cases = {
        "returns": ("""
func.func @f(%A: memref<4xf32>) -> f32 {
  %v = affine.load %A[0] : memref<4xf32>
  return %v : f32
}""", "cannot map @f: it returns values (a host function returns nothing; pass results through memrefs)"),
        "call": ("""
func.func private @g(memref<4xf32>)
func.func @f(%A: memref<4xf32>) {
  affine.for %i = 0 to 4 {
    func.call @g(%A) : (memref<4xf32>) -> ()
  }
  return
}""", "cannot map @f: 'func.call' at <string>:5:5 cannot run in a kernel"),
        "nested launch": ("""
func.func @f(%A: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %cst = arith.constant 1.0 : f32
  affine.for %i = 0 to 4 {
    affine.if affine_set<(d0) : (d0 - 1 >= 0)>(%i) {
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
        gpu.terminator
      }
    }
    affine.store %cst, %A[%i] : memref<4xf32>
  }
  return
}""", "cannot map @f: the 'gpu.launch' at <string>:7:7 is not at the top level (a launch cannot run in a kernel)"),
        "alloc": ("""
func.func @f(%A: memref<4xindex>) {
  %n = affine.load %A[0] : memref<4xindex>
  %t = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %t : memref<?xf32>
  return
}""", "cannot map @f: the size %n of 'memref.alloc' at <string>:4:3 is not a host value"),
    }
    for name, (text, reason) in cases.items():
        m = air.parse(text)
        pm = PassManager.parse("gpu-map")
        out = pm.run(m)
        assert str(out) == str(m), name
        refused = [d for d in pm.trace.decisions if d.kind == "refused"]
        assert [d.message for d in refused] == [reason], name


def test_idempotent_and_other_passes_accept_mapped_ir():
    m = lib.softmax(("M", 6), -1)
    out, _ = mapped(m)
    again, decisions = mapped(out)
    assert str(again) == str(out) and decisions == []
    for p in ("canonicalize", "cse", "dce", "affine-loop-invariant-code-motion", "affine-scalrep"):
        assert_same_results(m, run_pipeline(f"gpu-map,{p}", m), [np.ones((3, 6), np.float32),
                                                                 np.zeros((3, 6), np.float32), 3])


def test_analysis_handles_launch_bodies():
    """Analyses see one thread (launch ids are symbols); they must not fail on mapped IR."""
    out, _ = mapped(lib.matmul("M", 8, "K"))
    f = out.functions[0]
    deps = analysis.dependences(f)
    assert all(d.memref.name_hint == "C" for d in deps)
    (k,) = [lp for lp in all_loops(f)]
    assert not analysis.is_parallel(k)  # the per-thread k loop still carries the reduction
    graph = analysis.DependenceGraph(f)
    assert len(graph.nodes) == 2


def test_parallel_band_stops_with_a_reason():
    m = air.parse("""
func.func @f(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    %z = arith.constant 0.0 : f32
    %r = affine.for %j = 0 to 8 iter_args(%a = %z) -> (f32) {
      %v = affine.load %A[%i, %j] : memref<8x8xf32>
      %s = arith.addf %a, %v : f32
      affine.yield %s : f32
    }
    affine.store %r, %A[%i, 0] : memref<8x8xf32>
  }
  return
}""")
    band, why = parallel_band(m.functions[0].body.ops[0])
    assert [d.name for d in band] == ["%i"] and why == "the band ends (imperfect nest or innermost loop)"
    inner = list(all_loops(m.functions[0]))[1]
    band, why = parallel_band(inner, lambda v: True)
    assert band == [] and why == "%j has iter_args"


# -- library ops ---------------------------------------------------------------------------------------------------
LIBRARY = [
    ("matmul", lambda: lib.matmul(5, 7, 3), [(5, 3), (3, 7), (5, 7)], []),
    ("matmul_sym", lambda: lib.matmul("M", 5, "K", transpose_b=True), [(3, 4), (5, 4), (3, 5)], [3, 4]),
    ("matmul_f16", lambda: lib.matmul(4, 6, 5, dtype="f16"), [(4, 5), (5, 6), (4, 6)], []),
    ("batch_matmul", lambda: lib.batch_matmul(2, 3, "N", 4), [(2, 3, 4), (2, 4, 5), (2, 3, 5)], [5]),
    ("conv2d", lambda: lib.conv2d(1, 2, 5, 5, 3, 3, 3, padding=1), [(1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 5, 5)], []),
    ("conv2d_sym", lambda: lib.conv2d("N", 2, 6, 5, 3, 3, 2, stride=2),
     [(2, 2, 6, 5), (3, 2, 3, 2), (2, 3, 2, 2)], [2]),
    ("conv2d_bf16", lambda: lib.conv2d(1, 2, 4, 4, 2, 3, 3, dtype="bf16"), [(1, 2, 4, 4), (2, 2, 3, 3), (1, 2, 2, 2)],
     []),
    ("depthwise", lambda: lib.depthwise_conv2d(1, 2, 5, 5, 3, 3), [(1, 2, 5, 5), (2, 3, 3), (1, 2, 3, 3)], []),
    ("max_pool", lambda: lib.max_pool2d(1, 2, 6, 6, 2, stride=2), [(1, 2, 6, 6), (1, 2, 3, 3)], []),
    ("avg_pool", lambda: lib.avg_pool2d(1, 1, 5, 5, 3, padding=1), [(1, 1, 5, 5), (1, 1, 2, 2)], []),
    ("softmax", lambda: lib.softmax(("M", 5), -1), [(3, 5), (3, 5)], [3]),
    ("softmax_axis0", lambda: lib.softmax((4, 3), 0), [(4, 3), (4, 3)], []),
    ("layernorm", lambda: lib.layernorm("M", "N"), [(3, 7), (7,), (7,), (3, 7)], [3, 7]),
    ("attention", lambda: lib.attention("B", 1, "S", "D"), [(2, 1, 3, 2)] * 4, [2, 3, 2]),
    ("attention_causal", lambda: lib.attention(1, 2, 4, 3, causal=True), [(1, 2, 4, 3)] * 4, []),
    ("mlp", lambda: lib.mlp("M", 3, "K"), [(2, 3), (3, 3), (3,), (2, 3)], [2, 3]),
    ("mlp_relu", lambda: lib.mlp(3, 4, 2, activation="relu"), [(3, 2), (2, 4), (4,), (3, 4)], []),
    ("gelu", lambda: lib.gelu((3, 4)), [(3, 4), (3, 4)], []),
    ("exp", lambda: lib.unary("exp", (5,)), [(5,), (5,)], []),
    ("add_broadcast", lambda: lib.binary("add", (3, 4), (4,)), [(3, 4), (4,), (3, 4)], []),
    ("bias_add", lambda: lib.bias_add((2, 3, 4), axis=1), [(2, 3, 4), (3,), (2, 3, 4)], []),
    ("chain", lambda: lib.elementwise_chain(["relu", "neg"], ("N", 3)), [(4, 3), (4, 3)], [4]),
    ("reduce_sum", lambda: lib.reduce("sum", (3, 4), 1), [(3, 4), (3,)], []),
    ("reduce_max_all", lambda: lib.reduce("max", (3, 4), None), [(3, 4), ()], []),
    ("conv_bias_relu", lambda: lib.conv2d_bias_relu(1, 2, 4, 4, 3, 3, 3),
     [(1, 2, 4, 4), (3, 2, 3, 3), (3,), (1, 3, 2, 2)], []),
]


def library_args(module, shapes, symbols, seed=0) -> list:
    f = module.functions[0]
    rng = np.random.default_rng(seed)
    memrefs = [a for a in f.args if isinstance(a.type, MemRefType)]
    assert len(memrefs) == len(shapes)
    args = []
    for a, shape in zip(memrefs, shapes):
        dtype = NP[str(a.type.element_type)]
        args.append(np.asarray(rng.standard_normal(shape) * 2).astype(dtype))
    return args + list(symbols)


@pytest.mark.parametrize("name,build,shapes,symbols", LIBRARY, ids=[c[0] for c in LIBRARY])
def test_library_ops(name, build, shapes, symbols):
    m = build()
    out, decisions = mapped(m)
    assert len(launches(out)) >= 1
    if name != "reduce_max_all":  # a reduction to a scalar: nothing parallel (see test_library_grids)
        assert any(d.kind == "applied" for d in decisions), [str(d) for d in decisions]
    for seed in range(2):
        assert_same_results(m, out, library_args(m, shapes, symbols, seed))


def test_library_grids():
    """The mapping the issue asks for, op by op: 2-D grids for matmul, 3-D for conv2d, 1-D rows
    for softmax's reductions and 2-D for its normalization."""
    dims = {}
    for name, build, *_ in LIBRARY:
        out, _ = mapped(build())
        dims[name] = [sum(1 for v in ln.block_size if v.owner.value > 1) for ln in launches(out)]
    assert dims["matmul"] == [2, 2]
    assert dims["conv2d"] == [3, 3]                   # (f, h, w); n runs per thread
    assert dims["softmax"] == [1, 1, 2]               # max and sum per row (j sequential), then (i, j)
    assert dims["reduce_max_all"] == [0, 0]           # a scalar: init and reduction run in one thread


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (MLIR) is not installed")
def test_mlir_accepts_the_mapped_ir():
    for _, build, *_ in LIBRARY[:6] + LIBRARY[10:16]:
        out, _ = mapped(build())
        r = subprocess.run(["iree-opt", "--verify-each", "-"], input=str(out), capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr + str(out)


# -- random programs -------------------------------------------------------------------------------------------------
def _check_random(case, stats: Counter, pipeline: str = "gpu-map") -> None:
    module, args = case
    out, decisions = mapped(module, pipeline)
    assert_same_results(module, out, args)
    stats["programs"] += 1
    stats["launches"] += len(launches(out))
    stats["mapped"] += sum(d.kind == "applied" for d in decisions)
    stats["refused"] += sum(d.kind == "refused" for d in decisions)


def test_random_programs():
    stats: Counter = Counter()

    @settings(max_examples=220, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(programs_with_inputs())
    def check(case):
        _check_random(case, stats)

    check()
    assert stats["programs"] >= 200 and stats["refused"] == 0
    assert stats["mapped"] >= 0.25 * stats["launches"], stats


def test_random_fusion_programs():
    stats: Counter = Counter()

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(fusion_programs_with_inputs())
    def check(case):
        _check_random(case, stats)

    check()
    assert stats["programs"] >= 200 and stats["refused"] == 0
    assert stats["mapped"] >= 0.8 * stats["launches"], stats


PRE_PASSES = ("canonicalize", "affine-loop-tile{tile-size=2}", "affine-loop-tile{tile-sizes=3,2 separate}",
              "affine-loop-permute{auto}", "affine-loop-unroll{unroll-factor=2}",
              "affine-loop-unroll-jam{unroll-jam-factor=2}", "affine-scalrep", "affine-loop-invariant-code-motion",
              "affine-data-copy-generate{fast-mem-space=workgroup}",
              "affine-data-copy-generate{fast-mem-capacity=1 padding=1}", "affine-parallelize",
              "affine-parallelize{parallel-reductions}", "affine-loop-fusion", "affine-loop-normalize")


def test_random_pipelines_then_gpu_map():
    stats: Counter = Counter()

    @settings(max_examples=100, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(programs_with_inputs(max_nests=2), st.lists(st.sampled_from(PRE_PASSES), min_size=1, max_size=3))
    def check(case, passes):
        _check_random(case, stats, ",".join([*passes, "gpu-map"]))

    check()
    assert stats["programs"] >= 100 and stats["mapped"] > 0, stats


# -- ops gpu-map has never heard of: their traits decide -------------------------------------------------------
@pytest.fixture
def new_ops():
    """Two ops declared only by their traits and effects: ``test.twice`` (Pure, interpreted as
    ``x + x``) and ``test.opaque`` (nothing declared: unknown effects). Unregistered afterwards."""
    from affine_ir.core import OP_REGISTRY, Operation
    from affine_ir.interp.ops import TEMPLATES
    from affine_ir.traits import Pure
    from affine_ir.types import FunctionType

    class _GenericSyntax(Operation):
        def print_(self, p) -> None:
            ft = FunctionType(tuple(v.type for v in self.operands), tuple(r.type for r in self.results))
            p.write(f'"{self.name}"({p.values(self.operands)}){p.attr_dict(self)} : {ft}')

        @classmethod
        def from_generic(cls, operands, result_types, attributes, location):
            return cls(list(operands), list(result_types), attributes, location=location)

    class TwiceOp(_GenericSyntax):
        name = "test.twice"
        traits = frozenset({Pure})

    class OpaqueOp(_GenericSyntax):
        name = "test.opaque"

    TEMPLATES["test.twice"] = lambda a, op, src, dst: (f"({a[0]} + {a[0]})", True)
    yield TwiceOp, OpaqueOp
    TEMPLATES.pop("test.twice")
    for name in ("test.twice", "test.opaque"):
        OP_REGISTRY.pop(name, None)


NEW_OP_NEST = """func.func @f(%A: memref<64x32xf32>, %B: memref<64x32xf32>, %n: index) {
  %n2 = "test.twice"(%n) : (index) -> index
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 32 {
      %v = affine.load %A[%i, %j] : memref<64x32xf32>
      %w = "test.twice"(%v) : (f32) -> f32
      %k = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%j)[%n2]
      %c = arith.index_cast %k : index to i32
      %f = arith.sitofp %c : i32 to f32
      %s = arith.addf %w, %f : f32
      affine.store %s, %B[%i, %j] : memref<64x32xf32>
    }
  }
  return
}"""


def test_a_new_pure_op_is_mapped_and_rematerialized_by_its_traits(new_ops):
    """A Pure op unknown to gpu-map: in the nest it runs in each thread of the parallel mapping;
    at the top level (not a host op: no ConstantLike/AffineMapValue) it is re-materialized in the
    launch, so the host function keeps only host ops; the launch computes what the nest did."""
    m = air.parse(NEW_OP_NEST)
    out, decisions = mapped(m)
    assert [d.kind for d in decisions] == ["applied"]
    assert decisions[0].message == "mapped (%i, %j) to (y, x): grid (1, 8, 1), block (32, 8, 1)"
    (launch,) = launches(out)
    f = out.functions[0]
    assert [op.name for op in f.body.ops if op.name.startswith("test.")] == []
    assert [op.name for op in launch.walk() if op.name.startswith("test.")] == ["test.twice", "test.twice"]
    A = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    assert_same_results(m, out, [A, np.zeros_like(A), 3])


def test_an_op_of_unknown_effects_is_refused_unchanged(new_ops):
    """An op that declares nothing may do anything (like a call): gpu-map refuses the function and
    leaves it as it is; gpu-map-reductions leaves it to gpu-map; as a top-level op it is not a host op."""
    text = NEW_OP_NEST.replace('"test.twice"(%v) : (f32) -> f32', '"test.opaque"(%v) : (f32) -> f32')
    m = air.parse(text)
    for pipeline in ("gpu-map", "gpu-map-reductions"):
        pm = PassManager.parse(pipeline)
        out = pm.run(m)
        assert str(out) == str(m), pipeline
        (decision,) = pm.trace.decisions
        assert decision.message.endswith("cannot map @f: 'test.opaque' at <string>:6:7 cannot run in a kernel"), \
            pipeline
    err = assert_refused_unchanged(lambda: map_function(m.functions[0]), m)
    assert err.reason == "cannot map @f: 'test.opaque' at <string>:6:7 cannot run in a kernel"
    top = air.parse(text.replace('%n2 = "test.twice"(%n) : (index) -> index',
                                 '%n2 = "test.opaque"(%n) : (index) -> index'))
    with pytest.raises(TransformError, match="'test.opaque' at <string>:2:3 is not a host op"):
        check_host_function(top.functions[0])
