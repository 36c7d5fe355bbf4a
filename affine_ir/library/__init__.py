"""Named tensor ops lowered to affine loop nests over memrefs (stages S1/S2).

Each function returns a verified ``ModuleOp`` holding one ``func.func`` named after the op
(``@matmul``, ``@conv2d``, ...) whose arguments are the input memrefs, then the output
memref(s) (written in place; no results), then one ``index`` argument per distinct
symbolic size. Conventions shared by every op:

- **Sizes** are ints or strs naming symbolic sizes (``matmul("M", 64, "K")``): a symbolic
  size makes the memref dims it sizes ``?`` and adds a trailing ``index`` argument of that
  name (in order of first appearance among the op's size parameters), used as a symbol in
  loop bounds and ``affine.if`` conditions.
- **dtype** ``"f32" | "f16" | "bf16" | "f64"``: storage in ``dtype``; arithmetic in f32
  (f64 for f64): loads are ``arith.extf``'d, results ``arith.truncf``'d when stored, so
  element-wise ops round once per element, and reductions accumulate in f32.
- **Accumulation form**: the accumulator is initialised in its own nest, then a perfect
  nest accumulates in memory (``C[i, j] += A[i, k] * B[k, j]`` over ``(i, j, k)``). For
  f32 the output is the accumulator; for f16/bf16 an f32 temporary ``%acc`` is, and a last
  nest rounds it into the output. Row reductions inside composites (softmax, layer norm)
  keep the init inside the row loop: ``for i { max[i] = -inf; for j { ... } }``.
- **Temporaries** are ``memref.alloc``'d at the top of the function (f32) and
  ``memref.dealloc``'d at its end; constants are hoisted there too.
- Loop IVs and buffers carry readable names: ``%i, %j, %k``, ``%n, %c, %h, %w, %kh, %kw``,
  ``%A, %B, %C``, ``%input, %filter, %output``, ``%tmp, %max, %sum, %acc``, ``%t0, %t1, ...``.

``OPS`` maps op names to these functions; :mod:`.reference` holds numpy references with
the same argument order. Programs made of several ops (the PyTorch frontend's) build one function
with :class:`Kernel` and the ``emit_*`` emitters.
"""

from __future__ import annotations

from . import reference
from ._kernel import DIM_NAMES, Kernel
from .conv import conv2d, depthwise_conv2d
from .elementwise import (
    BINARY_OPS,
    UNARY_OPS,
    bias_add,
    binary,
    broadcast_shape,
    elementwise_chain,
    emit_binary,
    emit_unary,
    gelu,
    relu,
    unary,
)
from .linalg import batch_matmul, emit_contraction, matmul, scaled_matmul
from .nn import attention, conv2d_bias_relu, mlp
from .norm import emit_softmax, layernorm, softmax
from .pool import avg_pool2d, max_pool2d
from .reduce import REDUCE_KINDS, reduce

OPS = {
    "matmul": matmul,
    "scaled_matmul": scaled_matmul,
    "batch_matmul": batch_matmul,
    "conv2d": conv2d,
    "depthwise_conv2d": depthwise_conv2d,
    "max_pool2d": max_pool2d,
    "avg_pool2d": avg_pool2d,
    "unary": unary,
    "binary": binary,
    "bias_add": bias_add,
    "relu": relu,
    "gelu": gelu,
    "reduce": reduce,
    "softmax": softmax,
    "layernorm": layernorm,
    "attention": attention,
    "mlp": mlp,
    "elementwise_chain": elementwise_chain,
    "conv2d_bias_relu": conv2d_bias_relu,
}

__all__ = [
    "BINARY_OPS", "DIM_NAMES", "OPS", "REDUCE_KINDS", "UNARY_OPS", "Kernel", "attention", "avg_pool2d",
    "batch_matmul", "bias_add", "binary", "broadcast_shape", "conv2d", "conv2d_bias_relu", "depthwise_conv2d",
    "elementwise_chain", "emit_binary", "emit_contraction", "emit_softmax", "emit_unary", "gelu", "layernorm", "matmul",
    "scaled_matmul",
    "max_pool2d", "mlp", "reduce", "reference", "relu", "softmax", "unary",
]
