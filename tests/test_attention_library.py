"""``air.library.attention``'s grouped-query (``num_kv_heads=``) and decode (``kv_len=``) forms (issue 20, item 3):
against an independent float64 loop on the interpreter, and through the GPU pipeline (online reductions) on the
launch emulation."""

from __future__ import annotations

import numpy as np
import pytest

import affine_ir as air
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders, run
from transforms import PassManager
from transforms.pipelines import gpu_pipeline


def per_head(q, k, v, causal: bool) -> np.ndarray:
    """softmax(q k^T / sqrt(D)) v head by head in float64, query head h reading K/V head h // (H / Hkv)."""
    B, H, S, D = q.shape
    group = H // k.shape[1]
    out = np.zeros(q.shape)
    for b in range(B):
        for h in range(H):
            s = q[b, h].astype(np.float64) @ k[b, h // group].T.astype(np.float64) / np.sqrt(D)
            if causal:
                s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            out[b, h] = e / e.sum(axis=-1, keepdims=True) @ v[b, h // group]
    return out


def inputs(B, H, S, D, hkv, skv, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, H, S, D)).astype(np.float32)
    k, v = (rng.standard_normal((B, hkv, skv, D)).astype(np.float32) for _ in range(2))
    return q, k, v


SHAPES = {  # B, H, S, D, num_kv_heads, kv_len, causal
    "grouped, causal": (2, 4, 6, 4, 2, None, True),
    "multi-query": (1, 6, 5, 8, 1, None, False),
    "decode against a longer cache": (2, 4, 1, 8, 4, 37, False),
    "decode, grouped": (1, 8, 1, 4, 2, 19, False),
    "odd lengths": (1, 3, 7, 4, None, 11, False),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_grouped_and_decode_attention(name):
    B, H, S, D, hkv, skv, causal = SHAPES[name]
    m = air.library.attention(B, H, S, D, causal=causal, num_kv_heads=hkv, kv_len=skv)
    q, k, v = inputs(B, H, S, D, hkv or H, skv or S)
    o = np.zeros_like(q)
    air.interpret(m, q, k, v, o)
    want = per_head(q, k, v, causal)
    assert np.allclose(o, want, rtol=1e-5, atol=1e-6)
    assert np.allclose(air.library.reference.attention(q, k, v, causal=causal), want, rtol=1e-6, atol=1e-7)  # (f32 out)


@pytest.mark.parametrize("name", ["grouped, causal", "decode, grouped"])
def test_grouped_and_decode_attention_on_the_gpu(name):
    """Through gpu_pipeline(online_reductions=True): one block per query row, the max and the sum in one
    strided loop over the keys (the decode row's 19 keys split among the block's threads, the partials
    combined), same bits in both thread orders, float64 within f32 rounding."""
    B, H, S, D, hkv, skv, causal = SHAPES[name]
    m = air.library.attention(B, H, S, D, causal=causal, num_kv_heads=hkv, kv_len=skv)
    pm = PassManager.parse(gpu_pipeline(online_reductions=True))
    out = pm.run(m)
    assert any("rescaled as" in d.message for d in pm.trace.decisions if d.pass_name == "gpu-map-reductions")
    q, k, v = inputs(B, H, S, D, hkv, skv or S, seed=1)
    args = [q, k, v, np.zeros_like(q)]
    got = run(out, args)
    assert_same_bits_in_both_thread_orders(got, out, args, name)
    assert np.allclose(got[3], per_head(q, k, v, causal), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs,message", [
    ({"num_kv_heads": 3}, "num_kv_heads=3 does not divide H=4"),
    ({"kv_len": 9, "causal": True}, "causal attention needs kv_len equal to S"),
    ({"num_kv_heads": 0}, "num_kv_heads"),
])
def test_bad_head_groups_and_lengths_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        air.library.attention(1, 4, 6, 4, **kwargs)
