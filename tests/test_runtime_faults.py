"""Bad arguments never crash the process nor run silently: the CPU executable, the CUDA
executable's checks (which run without a GPU) and both command-line tools answer each with a
clear error naming the argument (LaunchError, or exit status 2 and a message, no traceback)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import affine_ir as air
import runtime
from runtime import LaunchError
from runtime.arg_checks import dynamic_dim_sizes, written_arguments

#: The CUDA-path checks compile with NVRTC: they need the ``cuda`` extra (cuda-python), not a GPU.
needs_cuda_python = pytest.mark.skipif(importlib.util.find_spec("cuda") is None or
                                       importlib.util.find_spec("cuda.bindings") is None,
                                       reason="the cuda extra (cuda-python) is not installed")


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(isolated_cpu_cache):
    """Each module compiles into its own cache directory (see conftest)."""


SHIFT = """
func.func @shift(%A: memref<64xf32>, %B: memref<64xf32>) {
  affine.for %i = 1 to 64 {
    %x = affine.load %A[%i - 1] : memref<64xf32>
    %one = arith.constant 1.0 : f32
    %y = arith.addf %x, %one : f32
    affine.store %y, %B[%i] : memref<64xf32>
  }
  return
}"""

ADD = """
func.func @k(%A: memref<4x8xf32>, %B: memref<4x8xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 8 {
      %x = affine.load %A[%i, %j] : memref<4x8xf32>
      %y = affine.load %B[%i, %j] : memref<4x8xf32>
      %z = arith.addf %x, %y : f32
      affine.store %z, %B[%i, %j] : memref<4x8xf32>
    }
  }
  return
}"""

DYN = """
func.func @dyn(%A: memref<?x8xf32>, %B: memref<?xf32>, %N: index) {
  affine.for %i = 0 to %N {
    %x = affine.load %A[%i, 0] : memref<?x8xf32>
    affine.store %x, %B[%i] : memref<?xf32>
  }
  return
}"""


# -- overlapping arrays (item: aliasing) ------------------------------------------------------------

def test_overlapping_arrays_under_the_default_pipeline_equal_the_interpreter():
    m = air.parse(SHIFT)
    want = np.zeros(64, np.float32)
    air.interpret(m, want, want)
    k = runtime.compile(m, target="cpu")
    got = np.zeros(64, np.float32)
    k(got, got)
    np.testing.assert_array_equal(got, want)
    base = np.zeros(80, np.float32)  # views of one buffer whose byte ranges intersect
    a, b = base[:64], base[8:72]
    wa, wb = a.copy(), b.copy()
    wbase = np.zeros(80, np.float32)
    air.interpret(m, wbase[:64], wbase[8:72])
    k(a, b)
    np.testing.assert_array_equal(base, wbase)
    distinct_a, distinct_b = np.zeros(64, np.float32), np.zeros(64, np.float32)
    k(distinct_a, distinct_b)
    assert distinct_b[1:].tolist() == [1.0] * 63 and not wa.any() and not wb.any()


@needs_cuda_python
def test_cuda_refuses_overlapping_written_arrays_before_touching_the_device():
    k = runtime.compile(air.parse(SHIFT), target="cuda", arch="sm_90")
    x = np.zeros(64, np.float32)
    with pytest.raises(LaunchError, match=r"argument #0 \(%A\) and argument #1 \(%B\) overlap"):
        k(x, x)


# -- read-only arrays ---------------------------------------------------------------------------

def _readonly_arrays():
    flag = np.zeros((4, 8), np.float32)
    flag.setflags(write=False)
    raw = np.frombuffer(bytes(128), np.float32).reshape(4, 8)
    f = tempfile.NamedTemporaryFile(delete=False)
    f.write(bytes(128))
    f.close()
    mapped = np.memmap(f.name, np.float32, mode="r", shape=(4, 8))
    return {"flag": flag, "bytes": raw, "mmap": mapped}


@pytest.mark.parametrize("case", ["flag", "bytes", "mmap"])
def test_read_only_array_is_refused_for_a_written_memref_only(case):
    k = runtime.compile(air.parse(ADD), target="cpu")
    ro = _readonly_arrays()[case]
    with pytest.raises(LaunchError, match=r"argument #1 \(%B\): the function writes this argument but the array "
                                          r"is read-only"):
        k(np.ones((4, 8), np.float32), ro)
    out = np.zeros((4, 8), np.float32)
    k(ro, out)  # %A is only read
    assert not out.any() and not np.asarray(ro).any()


@needs_cuda_python
def test_cuda_refuses_a_read_only_array_for_a_written_memref():
    k = runtime.compile(air.parse(ADD), target="cuda", arch="sm_90")
    ro = _readonly_arrays()["flag"]
    with pytest.raises(LaunchError, match=r"argument #1 \(%B\): the kernel writes this argument"):
        k(np.ones((4, 8), np.float32), ro)


def test_written_arguments_follow_calls_and_unknown_effects():
    m = air.parse("""
    func.func private @ext(memref<4xf32>)
    func.func @callee(%X: memref<4xf32>, %Y: memref<4xf32>) {
      %v = affine.load %X[0] : memref<4xf32>
      affine.store %v, %Y[0] : memref<4xf32>
      return
    }
    func.func @main(%A: memref<4xf32>, %B: memref<4xf32>, %C: memref<4xf32>, %D: memref<?xf32>, %E: memref<4xf32>) {
      func.call @callee(%A, %B) : (memref<4xf32>, memref<4xf32>) -> ()
      func.call @ext(%C) : (memref<4xf32>) -> ()
      %z = arith.constant 0.0 : f32
      %c0 = arith.constant 0 : index
      %n = memref.dim %E, %c0 : memref<4xf32>
      memref.store %z, %D[%n] : memref<?xf32>
      return
    }""")
    main = next(f for f in m.functions if f.sym_name == "main")
    assert written_arguments(main) == {1, 2, 3}


# -- argument checks -------------------------------------------------------------------------------

def _bad_calls():
    a = np.zeros(64, np.float32)
    return [
        ((a,), r"@shift takes 2 arguments"),
        ((a, a, a), r"@shift takes 2 arguments"),
        (([0.0] * 64, a), r"argument #0 \(%A\).*Python list \(pass numpy.asarray\(x, dtype=float32\)\)"),
        ((a, np.zeros(64, np.float64)), r"argument #1 \(%B\): expected dtype float32"),
        ((a, np.zeros(63, np.float32)), r"argument #1 \(%B\): expected shape \(64,\)"),
        ((a, np.zeros((64, 1), np.float32)), r"argument #1 \(%B\): expected shape"),
        ((a, np.zeros(128, np.float32)[::2]), r"argument #1 \(%B\): the array is not C-contiguous"),
        ((a, 3.0), r"argument #1 \(%B\): expected a.* array"),
        ((a, np.frombuffer(bytearray(257), np.float32, 64, 1)), r"argument #1 \(%B\): the array is not aligned"),
    ]


@pytest.mark.parametrize("k", range(9))
def test_cpu_bad_arguments_are_launch_errors(k):
    args, message = _bad_calls()[k]
    exe = runtime.compile(air.parse(SHIFT), target="cpu")
    with pytest.raises(LaunchError, match=message):
        exe(*args)


@needs_cuda_python
@pytest.mark.parametrize("k", range(8))
def test_cuda_bad_arguments_are_launch_errors_without_a_gpu(k):
    args, message = _bad_calls()[k]
    exe = runtime.compile(air.parse(SHIFT), target="cuda", arch="sm_90")
    with pytest.raises(LaunchError, match=message.replace("Python list.*", "").split(".*")[0]):
        exe(*args)


@pytest.mark.parametrize("value, message", [
    (2**63, r"argument #2 \(%N\): 9223372036854775808 does not fit in index"),
    (-(2**63) - 1, r"does not fit in index"),
    (1.5, r"argument #2 \(%N\): expected index, got float"),
    ("8", r"argument #2 \(%N\): expected index, got str"),
])
def test_cpu_index_arguments_out_of_range(value, message):
    exe = runtime.compile(air.parse(DYN), target="cpu", pipeline="")
    with pytest.raises(LaunchError, match=message):
        exe(np.zeros((4, 8), np.float32), np.zeros(4, np.float32), value)


def test_dynamic_dims_are_tied_to_the_index_arguments_that_bound_their_loops():
    assert dynamic_dim_sizes(air.parse(DYN).functions[0]) == {(0, 0): 2, (1, 0): 2}


# -- allocations that fail ---------------------------------------------------------------------

ALLOCS = """
func.func @inner(%n: index) -> f32 {
  %t = memref.alloc(%n) : memref<?xf32>
  %x = affine.load %t[0] : memref<?xf32>
  memref.dealloc %t : memref<?xf32>
  return %x : f32
}
func.func @outer(%S: memref<4xf32>, %n: index) {
  %x = func.call @inner(%n) : (index) -> f32
  affine.store %x, %S[0] : memref<4xf32>
  return
}
func.func @par(%S: memref<4xf32>, %n: index) {
  affine.parallel (%i) = (0) to (4) {
    %t = memref.alloc(%n, %n) : memref<?x?xf32>
    %x = affine.load %t[0, 0] : memref<?x?xf32>
    affine.store %x, %S[%i] : memref<4xf32>
    memref.dealloc %t : memref<?x?xf32>
  }
  return
}
func.func @huge(%S: memref<1xf32>) {
  %t = memref.alloc() : memref<1099511627776xf32>
  %x = affine.load %t[1099511627000] : memref<1099511627776xf32>
  affine.store %x, %S[0] : memref<1xf32>
  return
}
"""


@pytest.mark.parametrize("fn, n, threads", [
    ("huge", None, 1),
    ("outer", 2**62, 1),  # the byte size overflows 64 bits
    ("outer", -5, 1),  # a negative size
    ("outer", 2**40, 1),  # 4 TiB: above the allocation limit (physical memory + swap)
    ("par", 2**31, 4),  # 16 EiB in threads
    ("par", 2**31, 1),
])
def test_failed_allocation_is_a_launch_error_naming_the_alloc(fn, n, threads):
    m = air.parse(ALLOCS, "allocs.mlir")
    exe = runtime.compile(m, target="cpu", pipeline="", fn=fn, threads=threads)
    args = [np.zeros(m.functions[[f.sym_name for f in m.functions].index(fn)].args[0].type.shape, np.float32)]
    args += [] if n is None else [n]
    with pytest.raises(LaunchError, match=r"^allocs.mlir:\d+:\d+: error: out of memory: 'memref.alloc' of memref<"):
        exe(*args)
    if n is not None:  # the flag was cleared: a small size runs
        args[-1] = 3
        exe(*args)
        assert not args[0].any()


SUM = """
func.func @sum(%S: memref<1xf32>, %n: index) {
  %t = memref.alloc(%n) : memref<?xf32>
  affine.for %i = 0 to %n {
    %x = affine.load %t[%i] : memref<?xf32>
    %s = affine.load %S[0] : memref<1xf32>
    %y = arith.addf %s, %x : f32
    affine.store %y, %S[0] : memref<1xf32>
  }
  affine.for %i = 0 to %n {
    %one = arith.constant 1.0 : f32
    affine.store %one, %t[%i] : memref<?xf32>
  }
  memref.dealloc %t : memref<?xf32>
  return
}
"""


@pytest.fixture
def allocation_limit_restored():
    previous = runtime.cpu.allocation_limit()
    yield
    runtime.cpu.set_allocation_limit(previous)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_allocation_above_the_runtime_limit_is_a_launch_error_below_it_zeroed(opt_level, allocation_limit_restored):
    """The limit is set at run time, for code loaded before it is set: 1 MiB admits 2**18 f32s
    (zeroed, also where a freed buffer held ones) and refuses one more."""
    m = air.parse(SUM, "sum.mlir")
    exe = runtime.cpu.compile(m, opt_level=opt_level, threads=1)  # loaded under the default limit
    assert runtime.cpu.set_allocation_limit(2**20) == runtime.cpu.machine_memory_bytes()
    assert runtime.cpu.allocation_limit() == 2**20
    s = np.zeros(1, np.float32)
    with pytest.raises(LaunchError, match=r"^sum.mlir:3:\d+: error: out of memory: 'memref.alloc' of memref<\?xf32>"):
        exe(s, 2**18 + 1)
    for n in (2**18, 2**18, 1000, 0):
        exe(s, n)
        assert s[0] == 0.0
    runtime.cpu.set_allocation_limit(None)
    exe(s, 2**18 + 1)
    assert s[0] == 0.0


UNTOUCHED = '''
import resource, sys
import numpy as np
import affine_ir as air
import runtime
m = air.parse("""
func.func @one(%S: memref<1xf32>, %n: index) {
  %t = memref.alloc(%n) : memref<?xf32>
  %x = affine.load %t[%n - 1] : memref<?xf32>
  affine.store %x, %S[0] : memref<1xf32>
  memref.dealloc %t : memref<?xf32>
  return
}""")
exe = runtime.cpu.compile(m, opt_level=0, threads=1)  # -O0: the buffer is allocated and read as written
s = np.ones(1, np.float32)
exe(s, 1000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
exe(s, int(sys.argv[1]) // 4)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(s[0], (after - before) * 1024)
'''


@pytest.mark.skipif(runtime.cpu.machine_memory_bytes() < 4 * 2**30, reason="needs 4 GiB of memory")
def test_pages_of_a_large_buffer_the_code_does_not_touch_are_not_touched(tmp_path):
    """A 2 GiB buffer of which one element is read grows the peak RSS by far less than 2 GiB
    (a memset of the buffer would touch it all); runs in a fresh process, whose peak is small."""
    proc = _python(["-c", UNTOUCHED, str(2 * 2**30)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    value, growth = proc.stdout.split()
    assert float(value) == 0.0
    assert int(growth) < 64 * 2**20, f"peak RSS grew by {int(growth) / 2**20:.0f} MiB"


LEAK = """
func.func @leak(%S: memref<1xf32>, %n: index, %m: index) {
  %t = memref.alloca(%n) : memref<?xf32>
  affine.for %i = 0 to %n {
    %one = arith.constant 1.0 : f32
    affine.store %one, %t[%i] : memref<?xf32>
  }
  %u = memref.alloc(%m) : memref<?xf32>
  %x = affine.load %t[0] : memref<?xf32>
  affine.store %x, %S[0] : memref<1xf32>
  memref.dealloc %u : memref<?xf32>
  return
}
"""


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_a_failed_allocation_frees_the_heap_allocas_of_the_call():
    """200 calls that fill a 1 MiB heap ``memref.alloca`` and then fail to allocate leave the
    resident size about where it was (the failure path frees the buffer, as a return does)."""
    exe = runtime.cpu.compile(air.parse(LEAK, "leak.mlir"), opt_level=0, threads=1)  # -O0: every store stays
    s = np.zeros(1, np.float32)
    exe(s, 2**18, 4)
    assert s[0] == 1.0
    before = _resident_bytes()
    for _ in range(200):
        with pytest.raises(LaunchError, match=r"^leak.mlir:8:\d+: error: out of memory"):
            exe(s, 2**18, 2**62)
    assert _resident_bytes() - before < 50 * 2**20


# -- bounds-checked builds -----------------------------------------------------------------------

OOB = """
func.func @oob(%A: memref<16xf32>, %B: memref<4x4xf32>, %n: index) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to %n {
    affine.store %c, %A[%i] : memref<16xf32>
  }
  affine.for %i = 0 to 4 {
    %x = affine.load %B[%i, %n - 13] : memref<4x4xf32>
    affine.store %x, %A[%i] : memref<16xf32>
  }
  return
}
"""


@pytest.mark.parametrize("n, line", [(4096, 5), (17, 5), (0, 8), (12, 8)])
def test_bounds_checked_build_names_the_access_out_of_bounds(n, line):
    m = air.parse(OOB, "oob.mlir")
    exe = runtime.cpu.compile(m, check_bounds=True)  # the build alone (runtime.compile's launch check comes first)
    with pytest.raises(LaunchError, match=rf"^oob\.mlir:{line}:\d+: error: 'affine\.(vector_)?(store|load)' of %\w+: "
                                          r"an index is outside memref<"):
        exe(np.zeros(16, np.float32), np.zeros((4, 4), np.float32), n)
    a = np.zeros(16, np.float32)
    exe(a, np.ones((4, 4), np.float32), 14)  # in bounds: runs (and the failure flag was cleared)
    assert a.tolist() == [1.0] * 14 + [0.0] * 2



def test_concurrent_calls_report_only_their_own_failed_allocation():
    """The failure flag is one global of the loaded code: calls from several Python threads at
    once are serialized, so a call that fails raises and one that succeeds never does."""
    import threading

    m = air.parse(ALLOCS, "allocs.mlir")
    exe = runtime.compile(m, target="cpu", pipeline="", fn="outer", threads=1)
    wrong = []

    def call(n: int, fails: bool) -> None:
        for _ in range(1000):
            try:
                exe(np.zeros(4, np.float32), n)
                if fails:
                    wrong.append(f"n={n} did not raise")
            except LaunchError as e:
                if not fails:
                    wrong.append(f"n={n} raised {e}")

    threads = [threading.Thread(target=call, args=(n, n < 0)) for n in (-5, 3, -7, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, wrong[:3]

# -- the command-line tools ----------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def _tool(module: str, args: list[str], tmp_path) -> subprocess.CompletedProcess:
    return _python(["-m", module, *args], tmp_path)


def _python(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               AFFINE_IR_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


RUN_USAGE = [
    (["--op", "matmul:4,4"], r"--op matmul:4,4: matmul\(M, N, K.*does not take these sizes"),
    (["--op", "matmul:4,4,4,4,4,4"], r"does not take these sizes"),
    (["--op", "nosuch:3"], r"--op: unknown op 'nosuch'"),
    (["--op", "matmul:4,4,x-y"], r"a size is an integer or a symbol name, got 'x-y'"),
    (["--op", "matmul:-4,4,4"], r"--op matmul:-4,4,4: M must be >= 1"),
    (["--op", "matmul:M,N,K", "--sym", "N=abc"], r"--sym N=abc: expected NAME=INTEGER"),
    (["--op", "matmul:M,N,K", "--sym", "N"], r"--sym N: expected NAME=INTEGER"),
    (["--op", "matmul:M,N,K", "--sym", "Q=3"], r"@matmul has no index argument %Q \(index arguments: %M, %N, %K\)"),
    (["--op", "matmul:M,N,K", "--sym", "M=-3"], r"dim 0 of %A .* would be -3"),
    (["--op", "matmul:4,4,4", "--repeat", "0", "--bench"], r"argument --repeat: expected a positive integer, got 0"),
    (["--op", "matmul:4,4,4", "--repeat", "x"], r"argument --repeat: expected a positive integer, got 'x'"),
    (["--op", "matmul:4,4,4", "--interpret-limit", "-1"], r"argument --interpret-limit: expected an integer >= 0"),
    (["--op", "matmul:4,4,4", "--target", "tpu"], r"argument --target: invalid choice"),
    ([], r"give an input file or --op"),
    (["missing.mlir"], r"No such file or directory"),
    (["dyn.mlir", "--target", "cpu"], r"cannot tell the size of dim 0 of %A \(memref<\?xf32>\)"),
]


@pytest.mark.parametrize("k", range(len(RUN_USAGE)))
def test_affine_run_refuses_bad_flags_with_exit_2(k, tmp_path):
    args, message = RUN_USAGE[k]
    (tmp_path / "dyn.mlir").write_text("func.func @q(%A: memref<?xf32>) {\n  %c = arith.constant 1.0 : f32\n"
                                       "  affine.store %c, %A[0] : memref<?xf32>\n  return\n}\n")
    out = _tool("runtime.run_cli", args, tmp_path)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    assert re.search(message, out.stderr), out.stderr


def test_affine_run_symbols_size_each_dynamic_dim(tmp_path):
    """Each ``?`` dim gets the symbol of its own loop (it took the first symbol's value: a segfault)."""
    out = _tool("runtime.run_cli", ["--op", "matmul:M,N,K", "--sym", "M=8", "--sym", "N=16", "--sym", "K=300",
                                    "--target", "cpu", "--check"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "(ok," in out.stdout


def test_affine_run_store_past_the_end_is_an_error_not_an_abort(tmp_path):
    (tmp_path / "oob.mlir").write_text("func.func @oob(%A: memref<16xf32>) {\n  %c = arith.constant 1.0 : f32\n"
                                       "  affine.for %i = 0 to 4096 {\n    affine.store %c, %A[%i] : memref<16xf32>\n"
                                       "  }\n  return\n}\n")
    for extra in ([], ["--check"]):
        out = _tool("runtime.run_cli", ["oob.mlir", "--target", "cpu", *extra], tmp_path)
        assert out.returncode == 2, (out.returncode, out.stderr)  # refused by the static check (isl's witness)
        assert "Traceback" not in out.stderr
        assert re.search(r"oob\.mlir:4:5: error: 'affine\.store' %A\[%i\] with %i = 16 is outside memref<16xf32>",
                         out.stderr), out.stderr


OPT_USAGE = [
    (["-affine-loop-tile=tile-size=abc", "in.mlir"], 2),
    (["-no-such-pass", "in.mlir"], 2),
    (["--pass-pipeline=builtin.module(func.func(canonicalize", "in.mlir"], 2),
    (["--pass-pipeline=canonicalize", "-cse", "in.mlir"], 2),
    (["--bogus-flag", "in.mlir"], 2),
    (["missing.mlir"], 1),
    (["bad.mlir"], 1),
]


@pytest.mark.parametrize("k", range(len(OPT_USAGE)))
def test_affine_opt_bad_flags_and_inputs_are_clean_errors(k, tmp_path):
    args, code = OPT_USAGE[k]
    (tmp_path / "in.mlir").write_text(SHIFT)
    (tmp_path / "bad.mlir").write_text("func.func @f() {\n  %x = arith.addi %y, %y : i32\n  return\n}\n")
    out = _tool("runtime.cli", args, tmp_path)
    assert out.returncode == code, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "error" in out.stderr, out.stderr
