"""The Builder: loops, ifs, iter_args, index expressions become the expected affine IR."""

from __future__ import annotations

import pytest

import affine_ir as air
from affine_ir.builder import Builder, Index, to_map
from affine_ir.types import f32, index


def _build_triangular():
    b = Builder()
    with b.function("tri", A=b.memref(16, 16), n=index) as (A, n):
        with b.affine_for(0, n, name="i") as i:
            with b.affine_for([0, i - 2], [i + 1, 16], step=2, name="j") as j:
                b.store(b.load(A, [j, i]), A, [i, (j + n) // 2])
    return b.module


def test_bounds_and_subscripts_print_as_mlir():
    text = str(_build_triangular())
    assert "affine.for %i = 0 to %n {" in text
    assert "affine.for %j = max #map(%i) to min #map1(%i) step 2 {" in text
    assert "#map = affine_map<(d0) -> (0, d0 - 2)>" in text
    assert "#map1 = affine_map<(d0) -> (d0 + 1, 16)>" in text
    assert "affine.store %0, %A[%i, (%j + symbol(%n)) floordiv 2]" in text
    air.verify(_build_triangular())


def test_ivs_are_dims_and_arguments_are_symbols():
    m = _build_triangular()
    inner = m.functions[0].body.ops[0].body.ops[0]
    store = inner.body.ops[1]
    assert store.map.num_dims == 2 and store.map.num_symbols == 1


def test_iter_args_loop_and_results():
    b = Builder()
    with b.function("rowsum", A=b.memref(4, 8), out=b.memref(4)) as (A, out):
        with b.affine_for(0, 4, name="i") as i:
            loop = b.affine_for(0, 8, iter_args=[b.zero()], name="k")
            with loop as (k, acc):
                b.yield_(b.addf(acc, b.load(A, [i, k])))
            b.store(loop.result, out, [i])
    air.verify(b.module)
    text = str(b.module)
    assert "%0 = affine.for %k = 0 to 8 iter_args(%1 = %cst) -> (f32)" in text
    assert "affine.yield %3 : f32" in text


def test_iter_args_loop_without_yield_is_refused():
    b = Builder()
    with pytest.raises(ValueError, match="yield_"):
        with b.function("bad", A=b.memref(4)):
            with b.affine_for(0, 4, iter_args=[b.zero()]):
                pass


def test_if_with_else_and_results():
    b = Builder()
    with b.function("clip", A=b.memref(8)) as (A,):
        with b.affine_for(0, 8, name="i") as i:
            h = b.affine_if(i >= 2, i < 6, result_types=[f32], with_else=True)
            with h.then_():
                b.yield_(b.load(A, [i]))
            with h.else_():
                b.yield_(b.zero())
            b.store(h.results[0], A, [i])
    air.verify(b.module)
    text = str(b.module)
    assert "affine_set<(d0) : (d0 - 2 >= 0, -d0 + 5 >= 0)>" in text
    assert "} else {" in text
    assert str(air.parse(text)) == text


def test_index_expression_algebra():
    b = Builder()
    with b.function("f", n=index, m=index) as (n, m):
        i, j = Index.of(n), Index.of(m)
        e = 2 * i - j + 3
        amap, ops = to_map([e, i // 4, (i + j) % 3, e.ceildiv(2)])
    assert str(amap) == "()[s0, s1] -> (s0 * 2 - s1 + 3, s0 floordiv 4, (s0 + s1) mod 3, s0 + (-s1 + 1) ceildiv 2 + 1)"
    assert ops == [n, m]
    with pytest.raises(air.AffineError, match="non-affine"):
        _ = i * j
    c = i.eq(j)
    assert c.is_eq and str(c.index) == "%n - %m"


def test_builder_locations_and_elementwise_methods():
    b = Builder(location=air.Location("gen.py", 7, 1))
    with b.function("g", x=f32) as (x,):
        y = b.exp(b.mulf(x, x))
        z = b.fma(y, x, x)
        b.store  # noqa: B018  (method exists)
    f = b.module.functions[0]
    assert [op.name for op in f.body.ops] == ["arith.mulf", "math.exp", "math.fma", "func.return"]
    assert all(str(op.location) == "gen.py:7:1" for op in f.body.ops)
    assert z.type == f32
    with pytest.raises(ValueError, match="unknown elementwise"):
        b.op("arith.nope", x)
