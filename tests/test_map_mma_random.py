"""Issue 18: random contraction programs through ``gpu-map-mma`` on the interpreter's launch emulation.

200 programs per run (the suite's profile draws the same ones every run; ``HYPOTHESIS_PROFILE=explore``
draws fresh ones): matmuls (either operand transposed, batched, accumulating, the MLP's bias and
activation) and convolutions (NHWC and NCHW, stride, padding, dilation) at small odd and aligned sizes,
in f16, bf16 (f32 sums), f32 through TF32 (``allow-tf32``) and int8 (i32 sums), on tiles small enough
for the interpreter, partial tiles included. Each is mapped to the matrix units (the decision says
so) and gives exactly the bits of the original program in both thread orders: the float inputs are
small multiples of 1/4 (exact in f16, bf16 and TF32, every sum exact in f32 whatever its order), the
int8 inputs span the whole range (i32 sums are exact).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.dialects.nvgpu import MmaSyncOp
from affine_ir.testing import assert_same_bits_in_both_thread_orders, library_inputs, run
from transforms import PassManager

L = air.library
PREPARE = ("canonicalize,affine-loop-fusion,affine-privatize{dynamic-shapes=false},gpu-expose-parallelism,"
           "affine-scalrep,canonicalize")
#: dtype -> (the pass options, the instruction the decision names)
OPTIONS = {
    "f16": ("tile-sizes=32,32,16,2,2", "m16n8k16 f16 -> f32"),
    "bf16": ("tile-sizes=32,32,16,2,2", "m16n8k16 bf16 -> f32"),
    "f32": ("tile-sizes=32,32,16,2,2 allow-tf32=true", "m16n8k8 f32 as tf32 -> f32"),
    "i8": ("tile-sizes=32,32,32,2,2", "m16n8k32 i8 -> i32"),
}


@st.composite
def matmuls(draw, dtype: str):
    m, n, k = (draw(st.integers(2, 48)) for _ in range(3))  # (a size 1 loop folds away: no contraction)
    ta, tb = draw(st.booleans()), draw(st.booleans())
    kind = draw(st.sampled_from(["matmul", "batch", "accumulate", "mlp"] if dtype != "i8" else
                                ["matmul", "batch", "accumulate"]))
    if kind == "batch":
        return L.batch_matmul(draw(st.integers(1, 3)), m, n, k, dtype=dtype, transpose_a=ta, transpose_b=tb)
    if kind == "mlp":
        return L.mlp(m, n, k, dtype=dtype, activation=draw(st.sampled_from(["relu", "gelu"])))
    return L.matmul(m, n, k, dtype=dtype, transpose_a=ta, transpose_b=tb, accumulate=kind == "accumulate")


@st.composite
def convolutions(draw, dtype: str):
    kh = draw(st.sampled_from([1, 2, 3]))
    stride, dilation = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    padding = draw(st.integers(0, kh - 1)) if kh > 1 else 0
    span = dilation * (kh - 1) + 1
    # outputs of 2 or more, inputs of 1 or more (a 3x3 window padded by 2 fits a 1-pixel input)
    h, w = (draw(st.integers(max(1, span - 2 * padding + stride), 8)) for _ in range(2))
    return L.conv2d(draw(st.integers(1, 2)), draw(st.sampled_from([3, 4, 8, 16])), h, w,
                    draw(st.sampled_from([8, 12, 16, 24])), kh, kh, stride=stride, padding=padding,
                    dilation=dilation, layout=draw(st.sampled_from(["NHWC", "NCHW"])), dtype=dtype)


@st.composite
def contractions(draw):
    dtype = draw(st.sampled_from(list(OPTIONS)))
    make = convolutions if dtype != "i8" and draw(st.integers(0, 3)) == 0 else matmuls
    return dtype, draw(make(dtype)), draw(st.integers(0, 2 ** 16))


def _inputs(module, dtype: str, seed: int) -> list:
    if dtype != "i8":
        return library_inputs(module, seed)
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, a.type.shape).astype(np.int8 if a.type.element_type.width == 8 else np.int32)
            for a in module.functions[0].args]


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(contractions())
def test_random_contractions_on_the_matrix_units_keep_their_bits(case):
    dtype, module, seed = case
    options, instruction = OPTIONS[dtype]
    before = PassManager.parse(PREPARE).run(module)
    pm = PassManager.parse("gpu-map-mma{" + options + "}")
    out = pm.run(before)
    (decision,) = [d for d in pm.trace.decisions if d.pass_name == "gpu-map-mma"]
    assert decision.kind == "applied" and instruction in decision.message, str(decision)
    assert any(isinstance(op, MmaSyncOp) for op in out.walk())
    args = _inputs(module, dtype, seed)
    assert_same_bits_in_both_thread_orders(run(module, args), out, args, context=f"{decision}\n{module}")
