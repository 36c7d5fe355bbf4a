"""Rescaled sums in ``gpu-map-reductions`` (issue 20): after ``affine-reduce-reduce-fusion`` (online softmax) a row
loop carries the max and the sum taken against the running max; each thread's partial sum is rescaled to the
block's max before the block adds them.

Checked on the interpreter's launch emulation: the same bits in both thread orders (and the interleaved one),
and the float64 reference within f32 rounding (masked -inf prefixes, rows shorter and longer than a block, the
library's attention, causal and not). A loop of the same shape whose ratio is not the factor its terms change by
is refused (left to gpu-map), and layer norm keeps its two-pass block reductions (means=false)."""

from __future__ import annotations

import numpy as np
import pytest
import test_fuse_reductions as fr
from hypothesis import given, settings

import affine_ir as air
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders, run
from transforms import PassManager
from transforms.pipelines import gpu_pipeline

ONLINE = gpu_pipeline(online_reductions=True)


def compiled(module, pipe: str = ONLINE):
    pm = PassManager.parse(pipe)
    out = pm.run(module)
    return out, pm.trace.decisions


def decision(decisions, name: str):
    return [d for d in decisions if d.pass_name == name]


def _softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("rows,cols", [(3, 40), (4, 300), (2, 1000)])
def test_online_softmax_takes_one_block_per_row(rows, cols):
    out, decisions = compiled(air.library.softmax((rows, cols)))
    assert [d.kind for d in decision(decisions, "affine-reduce-reduce-fusion")] == ["applied", "refused"]
    (mapped,) = decision(decisions, "gpu-map-reductions")
    assert mapped.kind == "applied" and "maximumf in loop 1" in mapped.message and \
        "addf (rescaled as" in mapped.message and "changes) in loop 1" in mapped.message, mapped.message
    assert len([op for op in out.walk() if isinstance(op, LaunchOp)]) == 1
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((rows, cols)) * 25).astype(np.float32)
    x[0, : cols // 2] = -np.inf  # a masked prefix: some threads see only -inf
    args = [x, np.zeros_like(x)]
    got = run(out, args)
    assert_same_bits_in_both_thread_orders(got, out, args, f"{rows}x{cols}")
    assert np.allclose(got[1], _softmax64(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("causal", [False, True])
def test_online_attention_statistics_on_the_gpu(causal):
    m = air.library.attention(1, 2, 24, 8, causal=causal)
    out, decisions = compiled(m)
    assert any(d.kind == "applied" for d in decision(decisions, "affine-reduce-reduce-fusion"))
    assert any("rescaled as" in d.message for d in decision(decisions, "gpu-map-reductions"))
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((1, 2, 24, 8)).astype(np.float32) for _ in range(3))
    args = [q, k, v, np.zeros_like(q)]
    got = run(out, args)
    assert_same_bits_in_both_thread_orders(got, out, args, "attention")
    want = air.library.reference.attention(q, k, v, causal=causal)
    assert np.allclose(got[3], want, rtol=1e-5, atol=1e-6)


def test_a_ratio_that_is_not_the_terms_factor_is_refused():
    """The fused loop with the ratio's subtraction reversed (exp(new - old): not what the terms change by) has
    the rescaled sum's shape, but the rows are not mapped to blocks (a thread's partial would not be its sum)."""
    prefix = ONLINE.split("gpu-map-mma")[0].rstrip(",")
    m = PassManager.parse(prefix).run(air.library.softmax((4, 64)))
    exps = [op for op in m.walk() if op.name == "math.exp" and op.operands[0].owner.name == "arith.subf"]
    ratio_sub = next(e.operands[0].owner for e in exps
                     if all(x.owner.name == "arith.select" for x in e.operands[0].owner.operands))
    a, b = ratio_sub.operands
    ratio_sub.set_operand(0, b)
    ratio_sub.set_operand(1, a)
    pm = PassManager.parse("gpu-map-reductions,gpu-map")
    out = pm.run(m)
    (d,) = decision(pm.trace.decisions, "gpu-map-reductions")
    assert d.kind != "applied" and "is not a reduction by a recognized combining op" in d.message, d.message
    x = np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)
    assert np.array_equal(run(out, [x, np.zeros_like(x)])[1], run(m, [x, np.zeros_like(x)])[1])


def test_layer_norm_keeps_its_block_reductions():
    out, decisions = compiled(air.library.layernorm(4, 96))
    fused = decision(decisions, "affine-reduce-reduce-fusion")
    assert not any(d.kind == "applied" for d in fused) and any("means=false" in d.message for d in fused)
    (mapped,) = decision(decisions, "gpu-map-reductions")
    assert mapped.kind == "applied" and "addf in loop 2" in mapped.message


# -- random programs (those of test_fuse_reductions) -----------------------------------------------------------
MAPPED = "canonicalize,affine-reduce-reduce-fusion,affine-scalrep,canonicalize,gpu-map-reductions{block-size=4},gpu-map"


@settings(max_examples=20, deadline=None)
@given(fr.programs())
def test_random_rescaled_sums_map_to_blocks(case):
    """The random max/min/sum producers with one or two rescaled sums: fused, then rows on blocks of 4 threads
    (several elements per thread, threads with none): the unfused sums within reassociation, the same bits in
    both thread orders."""
    kind, sums, n, c, seed = case
    m = air.parse(fr.program(kind, sums, n, c))
    pm = PassManager.parse(MAPPED)
    out = pm.run(m)
    (mapped,) = decision(pm.trace.decisions, "gpu-map-reductions")
    assert mapped.kind == "applied" and mapped.message.count("rescaled as") == len(sums), mapped.message
    x, y = fr._inputs(kind, n, seed)
    args = [x, y, np.zeros(4), *[np.zeros(4) for _ in sums]]
    got, want = run(out, args), run(m, args)
    assert_same_bits_in_both_thread_orders(got, out, args, case)
    assert np.array_equal(got[2], want[2]) if kind != "sum" else fr.same(got[2], want[2], 1e-12)  # sums reassociate
    rows = [r for r in range(4) if not (kind != "sum" and np.isinf(x[r]).all())]
    for a, b in zip(got[3:], want[3:]):
        assert fr.same(a[rows], b[rows], 1e-12 * (n + 4)), (a, b)


def test_the_online_kernels_compile_with_nvrtc():
    """The CUDA C of the mapped online softmax and attention compiles (NVRTC, no GPU needed)."""
    from test_map_wgmma import assert_nvrtc_compiles

    from codegen.cuda import emit

    for m in (air.library.softmax((8, 4096)), air.library.attention(1, 2, 128, 64, dtype="f16", causal=True)):
        out, _ = compiled(m)
        src = emit(out).source
        assert "__syncthreads()" in src and "exp(" in src
        assert_nvrtc_compiles(src, "sm_90")
