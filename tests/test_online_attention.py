"""Attention fused into one loop over the keys per query row (issue 20): ``affine-reduce-reduce-fusion`` on the
library's unfused nests (after ``affine-loop-fusion``) fuses the max and the sum, then merges the probabilities
into the ``P @ V`` sum (split from its outer loop over ``d``) and fuses that too, rescaled by
``exp(m_old - m_new) * l_old / l_new``: FlashAttention's algorithm, found by the passes.

Checked on the interpreter against an independent float64 loop for random sizes (grouped heads, decode lengths,
causal or not, masked rows), and structurally: after scalar replacement no buffer grows with the sequence length."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_attention_library import inputs, per_head

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp
from affine_ir.dialects.memref import AllocOp
from transforms import PassManager
from transforms.fusion.fuse_reductions_nest import merge_problem, split_problem

ONLINE = "canonicalize,affine-loop-fusion,affine-reduce-reduce-fusion"
CLEAN = ONLINE + ",affine-scalrep,canonicalize,dce"


def fused(module, pipeline: str = ONLINE):
    pm = PassManager.parse(pipeline)
    out = pm.run(module)
    return out, [d for d in pm.trace.decisions if d.pass_name == "affine-reduce-reduce-fusion"]


@st.composite
def shapes(draw):
    h_kv = draw(st.sampled_from([1, 2]))
    h = h_kv * draw(st.sampled_from([1, 2]))
    causal = draw(st.booleans())
    s = draw(st.integers(1, 9))
    skv = s if causal or draw(st.booleans()) else draw(st.integers(1, 12))
    return draw(st.integers(1, 2)), h, s, draw(st.sampled_from([1, 3, 4])), h_kv, skv, causal, draw(st.integers(0, 99))


@settings(max_examples=25, deadline=None)
@given(shapes())
def test_attention_rows_become_one_loop_over_the_keys(shape):
    b, h, s, d, h_kv, skv, causal, seed = shape
    m = air.library.attention(b, h, s, d, causal=causal, num_kv_heads=h_kv, kv_len=skv if skv != s else None)
    out, decisions = fused(m, CLEAN)
    applied = [x.message for x in decisions if x.kind == "applied"]
    if skv > 1:  # (a loop of one key canonicalize removes: nothing to fuse)
        assert any("merged" in a for a in applied) and any("m1^-1" in a for a in applied), applied
        sizes = [op.results[0].type.num_elements for op in out.walk() if isinstance(op, AllocOp)]
        assert all(n <= d for n in sizes), sizes  # the row accumulator only: nothing grows with the keys
    q, k, v = inputs(b, h, s, d, h_kv, skv, seed)
    q *= 4  # scores of several units: the max moves
    o = np.zeros_like(q)
    air.interpret(out, q, k, v, o)
    assert np.allclose(o, per_head(q, k, v, causal), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype,tol", [("f16", 2e-3), ("bf16", 2e-2)])
def test_online_attention_in_16_bits(dtype, tol):
    import ml_dtypes

    np_t = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    m = air.library.attention(1, 2, 10, 8, dtype=dtype, causal=True)
    out, decisions = fused(m, CLEAN)
    assert sum(x.kind == "applied" for x in decisions) == 3
    q, k, v = (a.astype(np_t) for a in inputs(1, 2, 10, 8, 2, 10, 5))
    o = np.zeros_like(q)
    air.interpret(out, q, k, v, o)
    want = per_head(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), True)
    assert np.allclose(o.astype(np.float64), want, rtol=tol, atol=tol)


def test_the_gpu_pipeline_keeps_the_sum_over_the_row_apart():
    """gpu_pipeline(online_reductions=True) fuses the max and the sum only (weighted-sums=false):
    gpu-map-reductions maps the rescaled sum to blocks, not yet a sum over d of rescaled rows."""
    from transforms.pipelines import gpu_pipeline

    pm = PassManager.parse(gpu_pipeline(online_reductions=True))
    pm.run(air.library.attention(1, 2, 16, 4))
    fusion = [d for d in pm.trace.decisions if d.pass_name == "affine-reduce-reduce-fusion" and d.kind == "applied"]
    assert len(fusion) == 1 and "merged" not in fusion[0].message


def _loops(text: str) -> list[AffineForOp]:
    f = air.parse(text).functions[0]
    return [op for op in f.body.ops if isinstance(op, AffineForOp)]


ROWS = """func.func @f(%P: memref<8xf32>, %V: memref<8x4xf32>, %O: memref<4xf32>, %m: f32) {{
  %zero = arith.constant 0.0 : f32
  affine.for %j = 0 to 8 {{
    %e = math.exp %m : f32
    affine.store %e, %P[%j] : memref<8xf32>
  }}
  affine.for %d = 0 to 4 {{
    affine.store %zero, %O[%d] : memref<4xf32>
    affine.for %k = 0 to 8 {{
      %p = affine.load %P[{sub}] : memref<8xf32>
      %v = affine.load %V[%k, %d] : memref<8x4xf32>
      %t = arith.mulf %p, %v : f32
      %o = affine.load %O[{out}] : memref<4xf32>
      %o1 = arith.addf %o, %t : f32
      affine.store %o1, %O[{out}] : memref<4xf32>
    }}
  }}
  return
}}"""


def test_split_and_merge_say_why_not():
    q, c = _loops(ROWS.format(sub="%k", out="%d"))
    inner = [x for x in c.body.ops if isinstance(x, AffineForOp)][0]
    assert split_problem(c) is None and merge_problem(q, inner, c) is None
    q, c = _loops(ROWS.format(sub="%k + 0", out="0"))  # every d updates O[0]: %d carries the sum
    assert "carries a dependence" in split_problem(c)
    q, c = _loops(ROWS.format(sub="7 - %k", out="%d"))  # reads another iteration's element
    inner = [x for x in c.body.ops if isinstance(x, AffineForOp)][0]
    assert "other than at the element stored in the same iteration" in merge_problem(q, inner, c)
