"""The interpreter's emulation of ``gpu.launch`` (``affine_ir/interp/gpu.py``): every thread of
every block runs the body with its ids; barriers synchronize the threads of a block (phases);
workgroup memory is one buffer per block, ``memref.alloca`` one per thread; bad launches and
divergent barriers are located errors. Expected values are computed with numpy from the
launch geometry, independently of the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import affine_ir as air
from affine_ir import InterpretError
from affine_ir.interp import compile_function, reversed_schedule

WG = "#gpu.address_space<workgroup>"


def launch(grid, block, body: str, args: str, consts=(1,)) -> str:
    """A function whose body is one ``gpu.launch`` with constant (or named) sizes."""
    values = sorted({v for v in (*grid, *block, *consts) if isinstance(v, int)})
    lines = [f"  %c{v} = arith.constant {v} : index" for v in values]
    name = [f"%c{v}" if isinstance(v, int) else v for v in (*grid, *block)]
    return f"""
func.func @k({args}) {{
{chr(10).join(lines)}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = {name[0]}, %gy = {name[1]}, %gz = {name[2]})
             threads(%tx, %ty, %tz) in (%sx = {name[3]}, %sy = {name[4]}, %sz = {name[5]}) {{
{body}
    gpu.terminator
  }}
  return
}}"""


# -- ids and geometry --------------------------------------------------------------------------------------------
def test_1d_grid_with_guard_elementwise():
    body = """
    %i = affine.apply affine_map<(d0, d1) -> (d0 * 8 + d1)>(%bx, %tx)
    affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%N] {
      %v = affine.load %A[%i] : memref<37xf32>
      %w = arith.mulf %v, %v : f32
      %one = arith.constant 1.0 : f32
      %x = arith.addf %w, %one : f32
      affine.store %x, %B[%i] : memref<37xf32>
    }"""
    text = launch(("%g", 1, 1), (8, 1, 1), body, "%A: memref<37xf32>, %B: memref<37xf32>, %N: index").replace(
        "  gpu.launch", "  %g = affine.apply affine_map<()[s0] -> (s0 ceildiv 8)>()[%N]\n  gpu.launch", 1)
    m = air.parse(text)
    A = np.arange(37, dtype=np.float32) - 10
    for n in (37, 30, 1, 0):
        B = np.full(37, -7, np.float32)
        air.interpret(m, A, B, n)
        want = np.where(np.arange(37) < n, A * A + 1, -7).astype(np.float32)
        np.testing.assert_array_equal(B, want)


@pytest.mark.parametrize("grid,block", [((3, 2, 1), (4, 5, 1)), ((2, 2, 2), (2, 3, 4)), ((1, 1, 1), (1, 1, 1))])
def test_every_thread_runs_once_with_its_ids(grid, block):
    """Each thread records its 12 launch values at its global position, and counts itself."""
    gx, gy, gz = grid
    sx, sy, sz = block
    shape = (gz * sz, gy * sy, gx * sx)
    mt = f"memref<{shape[0]}x{shape[1]}x{shape[2]}x12xindex>"
    mc = f"memref<{shape[0]}x{shape[1]}x{shape[2]}xi32>"
    stores = "\n".join(f"    affine.store %{v}, %ids[%z, %y, %x, {k}] : {mt}" for k, v in enumerate(
        ["bx", "by", "bz", "tx", "ty", "tz", "gx", "gy", "gz", "sx", "sy", "sz"]))
    body = f"""
    %x = affine.apply affine_map<(d0, d1) -> (d0 * {sx} + d1)>(%bx, %tx)
    %y = affine.apply affine_map<(d0, d1) -> (d0 * {sy} + d1)>(%by, %ty)
    %z = affine.apply affine_map<(d0, d1) -> (d0 * {sz} + d1)>(%bz, %tz)
{stores}
    %n = affine.load %count[%z, %y, %x] : {mc}
    %one = arith.constant 1 : i32
    %n1 = arith.addi %n, %one : i32
    affine.store %n1, %count[%z, %y, %x] : {mc}"""
    m = air.parse(launch(grid, block, body, f"%ids: {mt}, %count: {mc}"))
    ids = np.full((*shape, 12), -1, np.int64)
    count = np.zeros(shape, np.int32)
    air.interpret(m, ids, count)
    assert (count == 1).all()
    z, y, x = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    want = [x // sx, y // sy, z // sz, x % sx, y % sy, z % sz, gx, gy, gz, sx, sy, sz]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(ids[..., k], np.broadcast_to(w, shape), err_msg=f"value #{k}")


def test_id_ops_give_the_launch_values():
    ops = [f"gpu.{kind} {d}" for kind in ("block_id", "thread_id", "grid_dim", "block_dim") for d in "xyz"]
    args = ["%bx", "%by", "%bz", "%tx", "%ty", "%tz", "%gx", "%gy", "%gz", "%sx", "%sy", "%sz"]
    body = "\n".join(f"    %o{k} = {op}\n    %a{k} = affine.apply affine_map<(d0, d1) -> (d0 - d1)>(%o{k}, {a})\n"
                     f"    %i{k} = arith.index_cast %a{k} : index to i32\n"
                     f"    %s{k} = affine.load %out[0] : memref<1xi32>\n"
                     f"    %p{k} = arith.addi %s{k}, %i{k} : i32\n"
                     f"    affine.store %p{k}, %out[0] : memref<1xi32>\n"
                     f"    %ci{k} = arith.index_cast %o{k} : index to i32\n"
                     f"    %q{k} = affine.load %tot[0] : memref<1xi32>\n"
                     f"    %r{k} = arith.addi %q{k}, %ci{k} : i32\n"
                     f"    affine.store %r{k}, %tot[0] : memref<1xi32>"
                     for k, (op, a) in enumerate(zip(ops, args)))
    m = air.parse(launch((2, 3, 1), (2, 1, 3), body, "%out: memref<1xi32>, %tot: memref<1xi32>"))
    out, tot = np.zeros(1, np.int32), np.zeros(1, np.int32)
    air.interpret(m, out, tot)
    assert out[0] == 0  # every id op equals its block argument
    n = 2 * 3 * 2 * 3  # threads
    # sum over threads of bx+by+bz+tx+ty+tz + the sizes
    want = (n // 2 * (0 + 1) + n // 3 * (0 + 1 + 2)) + (n // 2 * 1 + n // 3 * 3) + n * (2 + 3 + 1 + 2 + 1 + 3)
    assert tot[0] == want


def test_dynamic_sizes_and_grid_of_zero_blocks():
    body = """
    %v = affine.load %A[%bx, %tx] : memref<4x8xi32>
    %one = arith.constant 1 : i32
    %w = arith.addi %v, %one : i32
    affine.store %w, %A[%bx, %tx] : memref<4x8xi32>"""
    m = air.parse(launch(("%G", 1, 1), (8, 1, 1), body, "%A: memref<4x8xi32>, %G: index"))
    for g, rows in ((4, 4), (2, 2), (0, 0), (-3, 0)):
        A = np.zeros((4, 8), np.int32)
        air.interpret(m, A, g)
        assert A.sum() == rows * 8 and (A[:rows] == 1).all()


@pytest.mark.parametrize("grid,block,msg", [
    ((1, 1, 1), (0, 1, 1), r"block size \(0, 1, 1\) has a dimension below 1"),
    ((1, 1, 1), (64, 32, 1), r"block size \(64, 32, 1\) \(2048 threads\) exceeds CUDA's limits"),
    ((1, 1, 1), (1, 1, 65), r"block size \(1, 1, 65\) \(65 threads\) exceeds"),
    ((1, 65536, 1), (1, 1, 1), r"grid size \(1, 65536, 1\) exceeds CUDA's limits"),
])
def test_bad_launch_sizes_are_located_errors(grid, block, msg):
    m = air.parse(launch(grid, block, "", ""))
    with pytest.raises(InterpretError, match=msg) as e:
        air.interpret(m)
    assert e.value.location.line == len([v for v in {*grid, *block, 1}]) + 3  # the gpu.launch line


# -- shared memory and barriers -----------------------------------------------------------------------------------
def tree_sum_body(n: int, barrier_in_loop: bool = False) -> str:
    """Each block sums its ``n`` elements of ``A`` into ``out[bx]`` by a tree in workgroup memory."""
    sh = f"memref<{n}x{'f32'}, {WG}>"
    steps = []
    h = n // 2
    while h:
        steps.append(f"""
    affine.if affine_set<(d0) : ({h - 1} - d0 >= 0)>(%tx) {{
      %a{h} = affine.load %sh[%tx] : {sh}
      %b{h} = affine.load %sh[%tx + {h}] : {sh}
      %s{h} = arith.addf %a{h}, %b{h} : f32
      affine.store %s{h}, %sh[%tx] : {sh}
    }}
    gpu.barrier""")
        h //= 2
    first_barrier = "    affine.for %r = 0 to 2 {\n      gpu.barrier\n    }" if barrier_in_loop else "    gpu.barrier"
    return f"""
    %sh = memref.alloc() : {sh}
    %v = affine.load %A[%bx * {n} + %tx] : memref<{4 * n}xf32>
    affine.store %v, %sh[%tx] : {sh}
{first_barrier}{''.join(steps)}
    affine.if affine_set<(d0) : (d0 == 0)>(%tx) {{
      %r = affine.load %sh[0] : {sh}
      affine.store %r, %out[%bx] : memref<4xf32>
    }}"""


@pytest.mark.parametrize("barrier_in_loop", [False, True])
def test_shared_memory_tree_reduction_with_barriers(barrier_in_loop):
    n = 16
    m = air.parse(launch((4, 1, 1), (n, 1, 1), tree_sum_body(n, barrier_in_loop),
                         f"%A: memref<{4 * n}xf32>, %out: memref<4xf32>"))
    rng = np.random.default_rng(1)
    A = rng.integers(-50, 50, 4 * n).astype(np.float32)
    out = np.zeros(4, np.float32)
    air.interpret(m, A, out)
    np.testing.assert_array_equal(out, A.reshape(4, n).sum(axis=1))
    with reversed_schedule():
        out2 = np.zeros(4, np.float32)
        air.interpret(m, A, out2)
    np.testing.assert_array_equal(out2, out)
    assert "yield" in compile_function(m).source  # the barriers made the body a generator


def test_without_the_barriers_the_reduction_races():
    """The same kernel without barriers reads partial sums in one schedule or the other: the two
    schedules disagree, so differential tests under both schedules can see races."""
    n = 16
    body = tree_sum_body(n).replace("gpu.barrier", "")
    m = air.parse(launch((4, 1, 1), (n, 1, 1), body, f"%A: memref<{4 * n}xf32>, %out: memref<4xf32>"))
    A = np.arange(4 * n, dtype=np.float32)
    fwd, rev = np.zeros(4, np.float32), np.zeros(4, np.float32)
    air.interpret(m, A, fwd)
    with reversed_schedule():
        air.interpret(m, A, rev)
    assert not np.array_equal(fwd, rev)


def test_workgroup_memory_is_one_buffer_per_block():
    """Every thread adds 1 to the same workgroup element: it counts the threads of its block only."""
    body = f"""
    %sh = memref.alloc() : memref<1xi32, {WG}>
    %v = affine.load %sh[0] : memref<1xi32, {WG}>
    %one = arith.constant 1 : i32
    %w = arith.addi %v, %one : i32
    affine.store %w, %sh[0] : memref<1xi32, {WG}>
    gpu.barrier
    %r = affine.load %sh[0] : memref<1xi32, {WG}>
    affine.store %r, %out[%bx, %by, %tx, %ty] : memref<3x2x4x5xi32>"""
    m = air.parse(launch((3, 2, 1), (4, 5, 1), body, "%out: memref<3x2x4x5xi32>"))
    out = np.zeros((3, 2, 4, 5), np.int32)
    air.interpret(m, out)
    assert (out == 20).all()


def test_alloca_is_private_to_each_thread():
    """Each thread fills its private array with its id and sums it back; threads never see each other's."""
    body = """
    %p = memref.alloca() : memref<3xi32>
    %id = arith.index_cast %tx : index to i32
    affine.for %k = 0 to 3 {
      %old = affine.load %p[%k] : memref<3xi32>
      %new = arith.addi %old, %id : i32
      affine.store %new, %p[%k] : memref<3xi32>
    }
    gpu.barrier
    %a = affine.load %p[0] : memref<3xi32>
    %b = affine.load %p[1] : memref<3xi32>
    %c = affine.load %p[2] : memref<3xi32>
    %s = arith.addi %a, %b : i32
    %t = arith.addi %s, %c : i32
    affine.store %t, %out[%bx, %tx] : memref<2x6xi32>"""
    m = air.parse(launch((2, 1, 1), (6, 1, 1), body, "%out: memref<2x6xi32>"))
    out = np.zeros((2, 6), np.int32)
    air.interpret(m, out)
    np.testing.assert_array_equal(out, np.tile(3 * np.arange(6), (2, 1)))


def test_barrier_inside_a_loop_synchronizes_every_round():
    """A 1-D Jacobi-like ping-pong in workgroup memory: 3 rounds, each reading neighbours the
    previous round wrote (a barrier between read and write, and after the write)."""
    n, rounds = 8, 3
    sh = f"memref<{n + 2}xi32, {WG}>"
    body = f"""
    %sh = memref.alloc() : {sh}
    %v0 = affine.load %A[%tx] : memref<{n}xi32>
    affine.store %v0, %sh[%tx + 1] : {sh}
    gpu.barrier
    affine.for %r = 0 to {rounds} {{
      %l = affine.load %sh[%tx] : {sh}
      %c = affine.load %sh[%tx + 1] : {sh}
      %h = affine.load %sh[%tx + 2] : {sh}
      %s = arith.addi %l, %c : i32
      %t = arith.addi %s, %h : i32
      gpu.barrier
      affine.store %t, %sh[%tx + 1] : {sh}
      gpu.barrier
    }}
    %res = affine.load %sh[%tx + 1] : {sh}
    affine.store %res, %A[%tx] : memref<{n}xi32>"""
    m = air.parse(launch((1, 1, 1), (n, 1, 1), body, f"%A: memref<{n}xi32>"))
    A = np.arange(n, dtype=np.int32) * 3 - 5
    want = A.astype(np.int64)
    for _ in range(rounds):
        p = np.pad(want, 1)
        want = p[:-2] + p[1:-1] + p[2:]
    for schedule in (False, True):
        got = A.copy()
        if schedule:
            with reversed_schedule():
                air.interpret(m, got)
        else:
            air.interpret(m, got)
        np.testing.assert_array_equal(got, want)


def test_divergent_barrier_is_an_error_naming_it():
    body = tree_sum_body(16).replace("""    affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
      %r""", """    affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
      gpu.barrier
      %r""")
    text = launch((4, 1, 1), (16, 1, 1), body, "%A: memref<64xf32>, %out: memref<4xf32>")
    m = air.parse(text)
    line = next(k for k, t in enumerate(text.splitlines(), 1) if t == "      gpu.barrier")
    with pytest.raises(InterpretError, match=r"threads of block \(0, 0, 0\) diverge at a barrier: thread \(0, 0, 0\) "
                                             rf"waits at 'gpu.barrier' at <string>:{line}:7 but thread \(1, 0, 0\) "
                                             "reached the end of the body"):
        air.interpret(m, np.zeros(64, np.float32), np.zeros(4, np.float32))


def test_errors_inside_a_kernel_name_the_op():
    for barrier in ("", "\n    gpu.barrier"):
        body = f"""{barrier}
    %v = affine.load %A[%tx + 1] : memref<8xf32>
    affine.store %v, %A[%tx] : memref<8xf32>"""
        m = air.parse(launch((1, 1, 1), (8, 1, 1), body, "%A: memref<8xf32>"))
        with pytest.raises(InterpretError, match=r"'affine.load' of %A\[%tx \+ 1\]: index \(8,\) is out of bounds"):
            air.interpret(m, np.zeros(8, np.float32))


def test_unsupported_uses_of_gpu_ops():
    outside = "func.func @f(%A: memref<8xf32>) {\n  %t = gpu.thread_id x\n  return\n}"
    with pytest.raises(InterpretError, match=r"cannot interpret 'gpu.thread_id' \(outside a gpu.launch\)"):
        air.interpret(air.parse(outside), np.zeros(8, np.float32))
    barrier = "func.func @f() {\n  gpu.barrier\n  return\n}"
    with pytest.raises(InterpretError, match=r"cannot interpret 'gpu.barrier' \(outside a gpu.launch\)"):
        air.interpret(air.parse(barrier))
    dyn = launch((1, 1, 1), (2, 1, 1), f"    %sh = memref.alloc(%n) : memref<?xf32, {WG}>", "%n: index")
    with pytest.raises(InterpretError, match=r"cannot interpret 'gpu.launch' \(workgroup memory of dynamic size\)"):
        air.interpret(air.parse(dyn), 4)
    nested = launch((1, 1, 1), (1, 1, 1), """
    gpu.launch blocks(%bx2, %by2, %bz2) in (%gx2 = %c1, %gy2 = %c1, %gz2 = %c1)
               threads(%tx2, %ty2, %tz2) in (%sx2 = %c1, %sy2 = %c1, %sz2 = %c1) {
      gpu.terminator
    }""", "")
    with pytest.raises(InterpretError, match=r"a gpu.launch inside a gpu.launch"):
        air.interpret(air.parse(nested))
    shuffle = launch((1, 1, 1), (1, 1, 1), """
    %one = arith.constant 1 : i32
    %w = arith.constant 32 : i32
    %z = arith.constant 0.0 : f32
    %s, %ok = gpu.shuffle xor %z, %one, %w : f32""", "")
    with pytest.raises(InterpretError, match=r"cannot interpret 'gpu.shuffle' \(this GPU op is not emulated\)"):
        air.interpret(air.parse(shuffle))


def test_launch_inside_a_host_loop_sees_the_current_iteration():
    body = """
    %v = affine.load %A[%r, %tx] : memref<3x4xi32>
    %c = arith.index_cast %r : index to i32
    %w = arith.addi %v, %c : i32
    gpu.barrier
    affine.store %w, %A[%r, %tx] : memref<3x4xi32>"""
    text = launch((1, 1, 1), (4, 1, 1), body, "%A: memref<3x4xi32>")
    text = text.replace("  gpu.launch", "  affine.for %r = 0 to 3 {\n  gpu.launch", 1).replace(
        "  return", "  }\n  return")
    A = np.ones((3, 4), np.int32)
    air.interpret(air.parse(text), A)
    np.testing.assert_array_equal(A, 1 + np.arange(3)[:, None] + np.zeros((1, 4), np.int32))


def test_interleaved_threads_meet_at_a_collective_after_different_numbers_of_shared_accesses():
    """Under ``interleaved_schedule`` a thread yields at each shared load and store; lanes of a warp that made
    different numbers of them (a guarded access) still meet at the next warp-collective op (``ldmatrix``): a
    lane parked at a shared access is on its way, not diverging."""
    from affine_ir.interp.gpu import interleaved_schedule

    text = """
func.func @k(%A: memref<32xf16>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %sA = memref.alloc() : memref<16x16xf16, 3>
    affine.if affine_set<(d0) : (15 - d0 >= 0)>(%tx) {
      %v = affine.load %sA[%tx, 0] : memref<16x16xf16, 3>
      affine.store %v, %A[%tx] : memref<32xf16>
    }
    %lr = affine.apply affine_map<(d0) -> (d0 mod 16)>(%tx)
    %lc = affine.apply affine_map<(d0) -> ((d0 floordiv 16) * 8)>(%tx)
    %a = nvgpu.ldmatrix %sA[%lr, %lc] numTiles = 4 transpose = false : memref<16x16xf16, 3> -> vector<4x2xf16>
    gpu.terminator
  }
  return
}
"""
    m = air.parse(text)
    a = np.ones(32, np.float16)
    air.interpret(m, a)
    with interleaved_schedule():
        b = np.ones(32, np.float16)
        air.interpret(m, b)
    assert np.array_equal(a, b) and not a[:16].any() and a[16:].all()
