"""Loops whose IV after the last iteration would pass INT64_MAX run exactly their iterations on the
CPU (constant and symbolic bounds, ``affine.for`` and ``affine.parallel`` split over threads), and
ordinary loops keep the plain ``iv < ub`` form that LLVM vectorizes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import affine_ir as air
import codegen

PROGRAM = textwrap.dedent("""
    import numpy as np, affine_ir as air, runtime
    m = air.parse('''
    func.func @huge(%S: memref<3xi64>, %T: memref<8xi64>, %N: index) {
      %z = arith.constant 0 : i64
      %one = arith.constant 1 : i64
      %r = affine.for %i = 0 to 9223372036854775807 step 4611686018427387904 iter_args(%c = %z) -> (i64) {
        %c2 = arith.addi %c, %one : i64
        affine.yield %c2 : i64
      }
      affine.store %r, %S[0] : memref<3xi64>
      %r2 = affine.for %i = 0 to %N step 1152921504606846976 iter_args(%c = %z) -> (i64) {
        %c2 = arith.addi %c, %one : i64
        affine.yield %c2 : i64
      }
      affine.store %r2, %S[1] : memref<3xi64>
      %r3 = affine.for %i = -9223372036854775807 to %N step 4611686018427387904 iter_args(%c = %z) -> (i64) {
        %c2 = arith.addi %c, %one : i64
        affine.yield %c2 : i64
      }
      affine.store %r3, %S[2] : memref<3xi64>
      affine.parallel (%i) = (0) to (symbol(%N)) step (1152921504606846976) {
        %q = affine.apply affine_map<(d0) -> (d0 floordiv 1152921504606846976)>(%i)
        affine.store %one, %T[%q] : memref<8xi64>
      }
      return
    }''')
    N = 2**63 - 1
    want = [np.zeros(3, np.int64), np.zeros(8, np.int64), N]
    air.interpret(m, *want)
    for threads in (1, 4):
        got = [np.zeros(3, np.int64), np.zeros(8, np.int64), N]
        runtime.compile(m, target="cpu", pipeline="", threads=threads)(*got)
        assert [list(x) for x in got[:2]] == [list(x) for x in want[:2]], (threads, got, want)
    print("ok", want[0].tolist())
""")


def test_iv_past_int64_max_runs_the_interpreters_iterations():
    try:
        out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the compiled loop did not finish (the IV wrapped around)")
    assert out.returncode == 0, out.stderr
    assert "ok [2, 8, 4]" in out.stdout


SIMPLE = """
func.func @add(%A: memref<?xf32>, %B: memref<?xf32>, %N: index) {
  affine.for %i = 0 to %N {
    %x = affine.load %A[%i] : memref<?xf32>
    affine.store %x, %B[%i] : memref<?xf32>
  }
  affine.for %j = 0 to 100 step 7 {
    %x = affine.load %A[%j] : memref<?xf32>
    affine.store %x, %B[%j] : memref<?xf32>
  }
  return
}
"""


def test_ordinary_loops_keep_the_plain_form():
    text = codegen.llvm.emit(air.parse(SIMPLE)).text
    assert ".count" not in text and "udiv" not in text
