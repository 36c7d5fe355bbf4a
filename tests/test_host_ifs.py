"""Issue 17: ``affine.if`` ops of host conditions around parallel nests. ``gpu-sink-ifs`` passes an
if's results through one-element buffers and moves the host index values it computes out of it, so
it can be split and sunk into the loops it holds; an if it cannot sink (a sequential loop with
iter_args around a parallel nest in it) stays on the host: ``gpu-map`` keeps it as host control
flow, its branches mapped like a function body, the CUDA host side evaluates its condition."""

from __future__ import annotations

import numpy as np
import pytest
from test_gpu_map_demote import _mapped_launches, _parallel_loops_on_one_thread

import affine_ir as air
import codegen.cuda as cc
from affine_ir.dialects.affine import AffineIfOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.testing import run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms.gpu.demote_scalars import demote_if_results
from transforms.gpu.sink_ifs import hoist_host_values, sink_ifs
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import map_to_gpu

IF_WITH_RESULT = """func.func @f(%N: index, %A: memref<64xi32>, %B: memref<4xi32>) {
  %c0 = arith.constant 0 : i32
  %r = affine.if affine_set<()[s0] : (s0 - 2 >= 0)>()[%N] -> i32 {
    affine.for %i = 0 to 64 {
      %a = affine.load %A[%i] : memref<64xi32>
      %b = arith.addi %a, %a : i32
      affine.store %b, %A[%i] : memref<64xi32>
    }
    %x = affine.load %B[0] : memref<4xi32>
    affine.yield %x : i32
  } else {
    affine.yield %c0 : i32
  }
  affine.store %r, %B[1] : memref<4xi32>
  return
}"""

IF_WITH_HOST_VALUE = """func.func @f(%N: index, %A: memref<64xi32>) {
  affine.if affine_set<()[s0] : (s0 - 2 >= 0, -s0 + 60 >= 0)>()[%N] {
    %n = affine.max affine_map<()[s0] -> (0, s0 - 3)>()[%N]
    affine.for %i = 0 to affine_map<()[s0] -> (s0 + 2)>()[%n] {
      %a = affine.load %A[%i] : memref<64xi32>
      %b = arith.addi %a, %a : i32
      affine.store %b, %A[%i] : memref<64xi32>
    }
  }
  return
}"""

#: The if holds a loop with iter_args carried around a parallel nest, and values flow between its
#: statements and that loop: no split makes it a lone loop, so it stays on the host.
IF_ON_THE_HOST = """func.func @f(%N: index, %A: memref<8x64xi32>, %S: memref<4xi32>) {
  affine.if affine_set<()[s0] : (s0 - 2 >= 0)>()[%N] {
    %s0 = affine.load %S[0] : memref<4xi32>
    %r = affine.for %t = 0 to 7 iter_args(%acc = %s0) -> (i32) {
      affine.for %i = 0 to 64 {
        %a = affine.load %A[%t, %i] : memref<8x64xi32>
        %b = arith.addi %a, %acc : i32
        affine.store %b, %A[%t + 1, %i] : memref<8x64xi32>
      }
      %x = affine.load %A[%t + 1, 3] : memref<8x64xi32>
      %n = arith.subi %x, %acc : i32
      affine.yield %n : i32
    }
    affine.store %r, %S[1] : memref<4xi32>
  }
  return
}"""


def _ints(*shape):
    return (np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) % 13) - 6


def test_if_results_go_through_buffers():
    m = air.parse(IF_WITH_RESULT)
    (op,) = [x for x in m.functions[0].body.ops if isinstance(x, AffineIfOp)]
    for n in (1, 5):
        want = run(IF_WITH_RESULT, [n, _ints(64), _ints(4)])
        m2 = air.parse(IF_WITH_RESULT)
        (op,) = [x for x in m2.functions[0].body.ops if isinstance(x, AffineIfOp)]
        new = demote_if_results(m2.functions[0], op)
        air.verify(m2)
        assert not new.results and "memref<1xi32>" in str(m2)
        got = run(m2, [n, _ints(64), _ints(4)])
        assert all((w == g).all() for w, g in zip(want, got))


def test_if_results_of_index_type_are_refused():
    text = """func.func @f(%N: index, %A: memref<4xindex>) {
  %c0 = arith.constant 0 : index
  %r = affine.if affine_set<()[s0] : (s0 >= 0)>()[%N] -> index {
    affine.yield %N : index
  } else {
    affine.yield %c0 : index
  }
  affine.store %r, %A[0] : memref<4xindex>
  return
}"""
    m = air.parse(text)
    before = str(m)
    (op,) = [x for x in m.functions[0].body.ops if isinstance(x, AffineIfOp)]
    with pytest.raises(ValueError, match="cannot be demoted"):
        demote_if_results(m.functions[0], op)
    assert str(m) == before


def test_host_index_values_leave_the_if_and_it_sinks_into_the_loop():
    m = air.parse(IF_WITH_HOST_VALUE)
    f = m.functions[0]
    (op,) = [x for x in f.body.ops if isinstance(x, AffineIfOp)]
    from transforms.gpu.gpu_map_nest import host_value_checker

    assert hoist_host_values(op, host_value_checker(f.body)) == 1
    assert f.body.ops[0].name == "affine.max"
    for n in (1, 4, 40):
        assert (run(m, [n, _ints(64)])[0] == run(IF_WITH_HOST_VALUE, [n, _ints(64)])[0]).all()
    m = air.parse(IF_WITH_HOST_VALUE)
    assert sink_ifs(m.functions[0]) >= 2
    assert [x.name for x in m.functions[0].body.ops][:2] == ["affine.max", "affine.for"]


@pytest.mark.parametrize("text, n", [(IF_WITH_RESULT, 3), (IF_WITH_RESULT, 1), (IF_WITH_HOST_VALUE, 7),
                                     (IF_WITH_HOST_VALUE, 1)])
def test_ifs_around_parallel_loops_are_sunk_by_the_pipeline(text, n):
    m = air.parse(text)
    args = [n] + [_ints(*a.type.shape) for a in m.functions[0].args[1:]]
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    assert not _parallel_loops_on_one_thread(out)
    assert any(d.pass_name == "gpu-sink-ifs" and "moved the affine.if" in d.message for d in decisions)
    assert_same_bits_in_both_thread_orders(run(m, args), out, args, text)
    cc.emit(out)


def test_an_if_that_cannot_be_sunk_stays_on_the_host():
    m = air.parse(IF_ON_THE_HOST)
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    assert any("kept the affine.if on the host" in d.message for d in decisions)
    assert any("kept %t on the host" in d.message for d in decisions)
    assert not _parallel_loops_on_one_thread(out)
    (host_if,) = [x for x in out.functions[0].body.ops if isinstance(x, AffineIfOp)]
    assert cc.host_role(host_if) is cc.HostRole.IF
    assert any(isinstance(x, LaunchOp) for x in host_if.walk()) and _mapped_launches(out)
    for n in (1, 2, 9):
        args = [n, _ints(8, 64), _ints(4)]
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, f"N={n}")
    program = cc.emit(out)
    assert len(program.kernels) >= 3


def test_the_host_evaluates_the_condition():
    m = air.parse(IF_ON_THE_HOST)
    out, _ = map_to_gpu(m, GPU_PIPELINE)
    f = out.functions[0]
    (host_if,) = [x for x in f.body.ops if isinstance(x, AffineIfOp)]
    n = f.args[0]
    assert cc.host_if_branch(host_if, {n: 2}) is host_if.then_block
    assert cc.host_if_branch(host_if, {n: 1}) is None


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2, 9])
def test_a_host_if_on_the_gpu(n):
    import runtime

    if not runtime.gpu_available():
        pytest.skip("no usable GPU")
    m = air.parse(IF_ON_THE_HOST)
    args = [n, _ints(8, 64), _ints(4)]
    want = run(m, args)
    k = runtime.compile(m, target="cuda")
    got = [a.copy() for a in args[1:]]
    k(n, *got)
    for w, g in zip(want, got):
        assert (w == g).all()
