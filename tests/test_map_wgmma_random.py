"""Issue 19: random contractions through ``gpu-map-mma{wgmma=true}`` on the interpreter's launch emulation.

30 programs per run (the suite's profile draws the same ones every run; ``HYPOTHESIS_PROFILE=explore``
draws fresh ones): matmuls of f16 or bf16 operands (f32 sums) with A given ``M x K`` or ``K x M`` and B
``N x K`` or ``K x N``,
accumulating or not, batched or not, and scaled 8-bit float GEMMs (``f8E4M3FN``/``f8E5M2``, B ``N x K``, a
bf16/f16/f32 output), at small odd and aligned sizes (K a multiple of 8: TMA's 16-byte strides), on
tiles from the model or forced (one or two consumer warpgroups), 2 to 4 stages, k split or not, one tile
per block or persistent blocks (1 to 3 of them, looping over the tiles; the consumers together on each tile or
taking turns on whole tiles), the output tile stored by TMA or element by element.
Each is mapped to warpgroup MMA (the decision says so) and gives exactly the bits of the original
program in both thread orders, with TMA copies landing late and early, and with the threads taking turns at
every shared access: the inputs are small
multiples of 1/4, so every product and sum is exact in f32 whatever the order of the sums.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.dialects.nvgpu_warpgroup import WarpgroupMmaOp
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from transforms import PassManager

L = air.library
PREPARE = ("canonicalize,affine-loop-fusion,affine-privatize{dynamic-shapes=false},gpu-expose-parallelism,"
           "affine-scalrep,canonicalize")


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(["f16", "bf16", "f8E4M3FN", "f8E5M2"]))
    if dtype.startswith("f8"):  # scaled 8-bit GEMM: B N x K only, K a multiple of 16 (16-byte strides)
        module = L.scaled_matmul(draw(st.integers(2, 140)), draw(st.integers(2, 72)), draw(st.integers(1, 24)) * 16,
                                 dtype, draw(st.sampled_from(["bf16", "f16", "f32"])))
        return module, _options(draw), draw(st.integers(0, 2**16))
    b_k_by_n = draw(st.booleans())  # B given K x N (MN-major): its rows a multiple of 8 elements too
    a_k_by_m = draw(st.booleans())  # A given K x M (MN-major) likewise
    m = draw(st.integers(1, 17)) * 8 if a_k_by_m else draw(st.integers(2, 140))
    n = draw(st.integers(1, 12)) * 8 if b_k_by_n else draw(st.integers(2, 72))
    k = draw(st.integers(1, 40)) * 8
    batch = draw(st.sampled_from([0, 0, 2, 3]))
    if batch:
        module = L.batch_matmul(batch, m, n, k, dtype=dtype, transpose_a=a_k_by_m, transpose_b=not b_k_by_n)
    else:
        module = L.matmul(m, n, k, dtype=dtype, transpose_a=a_k_by_m, transpose_b=not b_k_by_n,
                          accumulate=draw(st.booleans()))
    return module, _options(draw), draw(st.integers(0, 2**16))


def _options(draw) -> str:
    options = [f"stages={draw(st.integers(2, 4))}"]
    tiles = draw(st.sampled_from([None, "64,64,1", "128,64,2", "64,128,1"]))
    if tiles:
        options.append(f"wgmma-tiles={tiles}")
    options.append(f"split-k={draw(st.sampled_from([0, 1, 2, 3]))}")
    if draw(st.booleans()):
        options.append("tma-store=true")
    schedule = draw(st.sampled_from(["blocks", "blocks", "persistent", "pingpong"]))
    options.append(f"wgmma-schedule={schedule}")
    if schedule != "blocks":  # few blocks: each loops over several tiles
        options.append(f"persistent-blocks={draw(st.integers(1, 3))}")
    else:  # clusters sharing B by multicast (where the tile rows make whole clusters; else refused with the reason)
        options.append(f"wgmma-cluster={draw(st.sampled_from([1, 2, 2, 4]))}")
    return " ".join(options)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(cases())
def test_random_contractions_on_warpgroup_mma_keep_their_bits(case):
    module, options, seed = case
    before = PassManager.parse(PREPARE).run(module)
    pm = PassManager.parse("gpu-map-mma{wgmma=true " + options + "}")
    out = pm.run(before)
    (decision,) = [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]
    assert decision.kind == "applied" and "warpgroup MMA" in decision.message, str(decision)
    assert any(isinstance(op, WarpgroupMmaOp) for op in out.walk())
    args = library_inputs(module, seed)
    assert_same_bits_in_both_thread_orders(run(module, args), out, args, context=f"{decision}\n{options}")
