"""PolyBench linear-algebra/blas: gemm, gemver, gesummv, symm, syr2k, syrk, trmm."""

from __future__ import annotations

from . import Kernel, f32, grid, register, small_ints


# -- gemm: C := alpha*A*B + beta*C ---------------------------------------------------------------------------
def _gemm_init(p, rng, exact):
    ni, nj, nk = p["NI"], p["NJ"], p["NK"]
    if exact:
        return [ni, nj, nk, f32(2), f32(-1), small_ints(rng, (ni, nj)), small_ints(rng, (ni, nk)),
                small_ints(rng, (nk, nj))]
    return [ni, nj, nk, f32(1.5), f32(1.2), grid((ni, nj), lambda i, j: ((i * j + 1) % ni) / ni),
            grid((ni, nk), lambda i, k: (i * (k + 1) % nk) / nk), grid((nk, nj), lambda k, j: (k * (j + 2) % nj) / nj)]


def _gemm_ref(ni, nj, nk, alpha, beta, C, A, B):
    C[:] = alpha * (A @ B) + beta * C


def _gemm_torch(ni, nj, nk, alpha, beta, C, A, B):
    C.mul_(beta).addmm_(A, B, alpha=alpha)


register(Kernel(
    "gemm", "linear-algebra/blas", ("NI", "NJ", "NK"),
    {"MINI": {"NI": 20, "NJ": 25, "NK": 30}, "SMALL": {"NI": 60, "NJ": 70, "NK": 80},
     "LARGE": {"NI": 1000, "NJ": 1100, "NK": 1200}},
    _gemm_init, _gemm_ref,
    flops=lambda p: 2.0 * p["NI"] * p["NJ"] * p["NK"] + p["NI"] * p["NJ"] * (1 + p["NK"]),
    bytes=lambda p: 4.0 * (2 * p["NI"] * p["NJ"] + p["NI"] * p["NK"] + p["NK"] * p["NJ"]),
    torch=_gemm_torch, outputs=("C",)))
