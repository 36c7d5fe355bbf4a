"""Matrix products: ``matmul`` and ``batch_matmul``.

Accumulation form (chosen once, used by every reduction in the library): the result is
initialised in its own nest, then accumulated in memory by a perfect nest,
``C[i, j] = C[i, j] + A[i, k] * B[k, j]`` over ``(i, j, k)`` -- the form MLIR's affine
tests, tiling and fusion expect. The sum runs in f32: for f32 (and f64) ``C`` itself is the
accumulator; for f16/bf16 an f32 temporary ``%acc`` is, and a last nest rounds it into ``C``::

    func.func @matmul(%A: memref<64x32xf32>, %B: memref<32x16xf32>, %C: memref<64x16xf32>) {
      affine.for %i = 0 to 64 { affine.for %j = 0 to 16 { C[i, j] = 0 } }
      affine.for %i = 0 to 64 { affine.for %j = 0 to 16 { affine.for %k = 0 to 32 {
        C[i, j] = C[i, j] + A[i, k] * B[k, j] } } }
      return
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core import Value
from ..dialects.builtin import ModuleOp
from ._kernel import DTYPES, INT_DTYPES, Kernel, check_size


def emit_contraction(k: Kernel, acc: Value, out_loops: Sequence, red_loops: Sequence,
                     out_index: Callable, terms: Callable, *, init: float | None = None,
                     init_from: Value | None = None, guard: Callable | None = None) -> None:
    """Emit ``acc[out] (=init) ; acc[out] += prod(terms(ivs))`` as two nests.

    ``out_loops``/``red_loops`` are loop specs (``(name, size)``); ``out_index(ivs)`` gives
    the accumulator index from all IVs; ``terms(ivs)`` returns the compute-type factors to
    multiply. The init nest stores the constant ``init``, or copies ``init_from`` (a memref
    indexed like ``acc``), or is skipped when both are None. ``guard(ivs)``, when given,
    returns ``affine.if`` constraints around the accumulation (padding checks).
    """
    b = k.b
    if init is not None:
        k.fill(acc, out_loops, out_index, init)
    elif init_from is not None:
        with k.loops(*out_loops) as ivs:
            k.store(k.load(init_from, out_index(ivs)), acc, out_index(ivs))
    with k.loops(*out_loops, *red_loops) as ivs:
        conds = guard(ivs) if guard is not None else []
        if conds:
            with b.affine_if(*conds):
                _accumulate(k, acc, out_index(ivs), terms(ivs))
        else:
            _accumulate(k, acc, out_index(ivs), terms(ivs))


def _accumulate(k: Kernel, acc: Value, idx, factors: Sequence[Value]) -> None:
    b = k.b
    mul, add = (b.muli, b.addi) if k.integer else (b.mulf, b.addf)
    prod = factors[0]
    for f in factors[1:]:
        prod = mul(prod, f)
    k.update(acc, idx, lambda c: add(c, prod))


def _int_output(dtype: str) -> dict[str, str]:
    """The output's element type where it is not ``dtype``: i32 for i8 operands."""
    return {"C": "i32"} if dtype in INT_DTYPES else {}


def emit_matmul_body(k: Kernel, A: Value, B: Value, C: Value, M, N, K, *, batch=None,
                     transpose_a: bool = False, transpose_b: bool = False, accumulate: bool = False,
                     acc: Value | None = None) -> Value:
    """Emit ``acc = A @ B`` (or ``acc = C + A @ B`` when ``accumulate``) and return ``acc``
    (``C`` itself, a given f32 buffer, or a new ``%acc`` for f16/bf16). The caller rounds
    ``acc`` into ``C`` if they differ. ``batch`` is an optional leading batch size."""
    pre = [("b", batch)] if batch is not None else []
    out_shape = ([batch] if batch is not None else []) + [M, N]
    if acc is None:
        acc = k.accumulator(C, out_shape)
    nb = len(pre)

    def out_index(ivs):
        return [*ivs[:nb], ivs[nb], ivs[nb + 1]]

    def terms(ivs):
        bt, (i, j, kk) = ivs[:nb], ivs[nb:]
        a = k.load(A, [*bt, kk, i] if transpose_a else [*bt, i, kk])
        c = k.load(B, [*bt, j, kk] if transpose_b else [*bt, kk, j])
        return [a, c]

    if not accumulate:
        init, init_from = 0.0, None
    else:
        init, init_from = None, (None if acc is C else C)
    emit_contraction(k, acc, [*pre, ("i", M), ("j", N)], [("k", K)], out_index, terms, init=init,
                     init_from=init_from)
    return acc


def matmul(M, N, K, dtype: str = "f32", *, transpose_a: bool = False, transpose_b: bool = False,
           accumulate: bool = False) -> ModuleOp:
    """``@matmul(%A, %B, %C)``: ``C[M, N] = A @ B`` (``C += A @ B`` when ``accumulate``).

    ``A`` is ``[M, K]`` (stored ``[K, M]`` when ``transpose_a``), ``B`` is ``[K, N]``
    (stored ``[N, K]`` when ``transpose_b``), ``C`` is ``[M, N]``; all in ``dtype``. Nests:
    zero-init of the accumulator over ``(%i, %j)`` (skipped for ``accumulate`` in f32; for
    f16/bf16 it copies ``C`` into ``%acc``), then ``acc[i, j] += A[i, k] * B[k, j]`` over
    ``(%i, %j, %k)`` in f32, then for f16/bf16 ``C = truncf(acc)``. Sizes may be symbolic.
    ``dtype="i8"``: ``A`` and ``B`` in i8, ``C`` in i32, ``C += extsi(A) * extsi(B)`` in i32 (exact up
    to i32 wraparound, as ``torch._int_mm``).
    """
    M, N, K = check_size(M, "M"), check_size(N, "N"), check_size(K, "K")
    k = Kernel("matmul", dtype, (M, N, K), DTYPES + INT_DTYPES)
    a_shape = (K, M) if transpose_a else (M, K)
    b_shape = (N, K) if transpose_b else (K, N)
    with k.function(_int_output(dtype), A=a_shape, B=b_shape, C=(M, N)) as (A, B, C):
        acc = emit_matmul_body(k, A, B, C, M, N, K, transpose_a=transpose_a, transpose_b=transpose_b,
                               accumulate=accumulate)
        k.copy_out(acc, C, [("i", M), ("j", N)], lambda ivs: ivs)
    return k.module


def batch_matmul(B, M, N, K, dtype: str = "f32", *, transpose_a: bool = False, transpose_b: bool = False,
                 accumulate: bool = False) -> ModuleOp:
    """``@batch_matmul(%A, %B, %C)``: ``C[b] = A[b] @ B[b]`` for each of ``B`` batches.

    ``A`` is ``[B, M, K]`` (``[B, K, M]`` when ``transpose_a``), ``B`` is ``[B, K, N]``
    (``[B, N, K]`` when ``transpose_b``), ``C`` is ``[B, M, N]``. Same nests as
    :func:`matmul` with an outer batch loop ``%b``.
    """
    B, M, N, K = check_size(B, "B"), check_size(M, "M"), check_size(N, "N"), check_size(K, "K")
    k = Kernel("batch_matmul", dtype, (B, M, N, K), DTYPES + INT_DTYPES)
    a_shape = (B, K, M) if transpose_a else (B, M, K)
    b_shape = (B, N, K) if transpose_b else (B, K, N)
    with k.function(_int_output(dtype), A=a_shape, B=b_shape, C=(B, M, N)) as (A, Bm, C):
        acc = emit_matmul_body(k, A, Bm, C, M, N, K, batch=B, transpose_a=transpose_a, transpose_b=transpose_b,
                               accumulate=accumulate)
        k.copy_out(acc, C, [("b", B), ("i", M), ("j", N)], lambda ivs: ivs)
    return k.module


#: The 8-bit float operand types of :func:`scaled_matmul`, and its output types.
FP8_DTYPES = ("f8E4M3FN", "f8E5M2")
SCALED_OUT_DTYPES = ("bf16", "f16", "f32")


def scaled_matmul(M, N, K, dtype: str = "f8E4M3FN", out_dtype: str = "bf16") -> ModuleOp:
    """``@scaled_matmul(%A, %B, %scale_a, %scale_b, %C)``: ``C = (A @ B^T) * (scale_a[0] * scale_b[0])``, the
    8-bit float GEMM of ``torch._scaled_mm`` with per-tensor scales.

    ``A`` is ``[M, K]`` and ``B`` ``[N, K]`` (both K-major, as ``torch._scaled_mm(a, b.t(), ...)`` takes
    them: an ``x @ W^T`` layer) in ``dtype`` (``f8E4M3FN`` or ``f8E5M2``), the scales ``[1]`` in f32, ``C``
    ``[M, N]`` in ``out_dtype`` (bf16, f16 or f32). Nests as :func:`matmul`'s: the products of the operands
    extended to f32 summed in an f32 ``%acc``, then ``C = truncf(acc * (scale_a * scale_b))``."""
    if out_dtype not in SCALED_OUT_DTYPES:
        raise ValueError(f"out_dtype must be one of {', '.join(SCALED_OUT_DTYPES)}, got {out_dtype!r}")
    M, N, K = check_size(M, "M"), check_size(N, "N"), check_size(K, "K")
    k = Kernel("scaled_matmul", dtype, (M, N, K), FP8_DTYPES)
    types = {"scale_a": "f32", "scale_b": "f32", "C": out_dtype}
    with k.function(types, A=(M, K), B=(N, K), scale_a=(1,), scale_b=(1,), C=(M, N)) as (A, B, SA, SB, C):
        acc = k.temp("acc", (M, N))
        emit_matmul_body(k, A, B, C, M, N, K, transpose_b=True, acc=acc)

        def scaled(v: Value) -> Value:
            return k.b.mulf(v, k.b.mulf(k.load(SA, [0]), k.load(SB, [0])))

        k.copy_out(acc, C, [("i", M), ("j", N)], lambda ivs: ivs, scaled)
    return k.module
