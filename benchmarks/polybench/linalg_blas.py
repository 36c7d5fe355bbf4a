"""PolyBench linear-algebra/blas: gemm, gemver, gesummv, symm, syr2k, syrk, trmm."""

from __future__ import annotations

import numpy as np

from . import Kernel, f32, grid, register, small_ints


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


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


# -- gemver: A := A + u1*v1^T + u2*v2^T; x := x + beta*A^T*y + z; w := w + alpha*A*x --------------------------
def _gemver_init(p, rng, exact):
    n = p["N"]
    if exact:
        return [n, f32(2), f32(-1), small_ints(rng, (n, n))] + [small_ints(rng, n) for _ in range(8)]
    fn = float(n)
    v = lambda d: grid((n,), lambda i: ((i + 1) / fn) / d)  # noqa: E731
    zero = np.zeros(n, np.float32)
    # argument order: A, u1, v1, u2, v2, w, x, y, z
    return [n, f32(1.5), f32(1.2), grid((n, n), lambda i, j: (i * j % n) / n), grid((n,), lambda i: i), v(4.0),
            v(2.0), v(6.0), zero.copy(), zero.copy(), v(8.0), v(9.0)]


def _gemver_ref(n, alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A[:] = _f64(A) + np.outer(_f64(u1), _f64(v1)) + np.outer(_f64(u2), _f64(v2))
    x[:] = _f64(x) + np.float64(beta) * (_f64(A).T @ _f64(y))
    x[:] = _f64(x) + _f64(z)
    w[:] = _f64(w) + np.float64(alpha) * (_f64(A) @ _f64(x))


def _gemver_torch(n, alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A.addr_(u1, v1).addr_(u2, v2)
    x.addmv_(A.t(), y, alpha=float(beta)).add_(z)
    w.addmv_(A, x, alpha=float(alpha))


register(Kernel(
    "gemver", "linear-algebra/blas", ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _gemver_init, _gemver_ref,
    flops=lambda p: 10.0 * p["N"] * p["N"] + p["N"],
    bytes=lambda p: 4.0 * (2 * p["N"] * p["N"] + 10 * p["N"]),
    torch=_gemver_torch, outputs=("A", "w", "x"),
    notes="exact data: integers in [-2, 2] everywhere, alpha=2, beta=-1 (|w| < 2**24 at MINI and SMALL)"))


# -- gesummv: y := alpha*A*x + beta*B*x ------------------------------------------------------------------------
def _gesummv_init(p, rng, exact):
    n = p["N"]
    tmp, y = np.zeros(n, np.float32), np.zeros(n, np.float32)
    if exact:
        return [n, f32(2), f32(-1), small_ints(rng, (n, n)), small_ints(rng, (n, n)), tmp, small_ints(rng, n), y]
    return [n, f32(1.5), f32(1.2), grid((n, n), lambda i, j: ((i * j + 1) % n) / n),
            grid((n, n), lambda i, j: ((i * j + 2) % n) / n), tmp, grid((n,), lambda i: (i % n) / n), y]


def _gesummv_ref(n, alpha, beta, A, B, tmp, x, y):
    tmp[:] = _f64(A) @ _f64(x)
    y[:] = np.float64(alpha) * _f64(tmp) + np.float64(beta) * (_f64(B) @ _f64(x)).astype(np.float32)


def _gesummv_torch(n, alpha, beta, A, B, tmp, x, y):
    tmp.copy_(A @ x)
    y.copy_(B @ x).mul_(float(beta)).add_(tmp, alpha=float(alpha))


register(Kernel(
    "gesummv", "linear-algebra/blas", ("N",),
    {"MINI": {"N": 30}, "SMALL": {"N": 90}, "LARGE": {"N": 1300}},
    _gesummv_init, _gesummv_ref,
    flops=lambda p: p["N"] * (4.0 * p["N"] + 3),
    bytes=lambda p: 4.0 * (2 * p["N"] * p["N"] + 3 * p["N"]),
    torch=_gesummv_torch, outputs=("tmp", "y")))


# -- symm: C := alpha*A*B + beta*C, A symmetric (its lower triangle) -------------------------------------------
def _symm_init(p, rng, exact):
    m, n = p["M"], p["N"]
    if exact:
        A = small_ints(rng, (m, m))
    else:
        A = grid((m, m), lambda i, j: ((i + j) % 100) / m)
    A[~np.tri(m, dtype=bool)] = -999  # the upper triangle is never read (PolyBench's marker)
    if exact:
        return [m, n, f32(2), f32(-1), small_ints(rng, (m, n)), A, small_ints(rng, (m, n))]
    return [m, n, f32(1.5), f32(1.2), grid((m, n), lambda i, j: ((i + j) % 100) / m), A,
            grid((m, n), lambda i, j: ((n + i - j) % 100) / m)]


def _symm_ref(m, n, alpha, beta, C, A, B):
    L = np.tril(_f64(A))
    S = L + np.tril(L, -1).T
    C[:] = np.float64(beta) * _f64(C) + np.float64(alpha) * (S @ _f64(B))


register(Kernel(
    "symm", "linear-algebra/blas", ("M", "N"),
    {"MINI": {"M": 20, "N": 30}, "SMALL": {"M": 60, "N": 80}, "LARGE": {"M": 1000, "N": 1200}},
    _symm_init, _symm_ref,
    flops=lambda p: p["N"] * (5.0 * p["M"] * (p["M"] - 1) / 2 + 6.0 * p["M"]),
    bytes=lambda p: 4.0 * (2 * p["M"] * p["N"] + p["M"] * (p["M"] + 1) / 2 + p["M"] * p["N"]),
    outputs=("C",),
    notes="A's strict upper triangle holds -999 (never read), as PolyBench's init writes"))


# -- syr2k: C := alpha*A*B^T + alpha*B*A^T + beta*C, lower triangle ---------------------------------------------
def _syr2k_init(p, rng, exact):
    n, m = p["N"], p["M"]
    if exact:
        return [n, m, f32(2), f32(-1), small_ints(rng, (n, n)), small_ints(rng, (n, m)), small_ints(rng, (n, m))]
    return [n, m, f32(1.5), f32(1.2), grid((n, n), lambda i, j: ((i * j + 3) % n) / m),
            grid((n, m), lambda i, j: ((i * j + 1) % n) / n), grid((n, m), lambda i, j: ((i * j + 2) % m) / m)]


def _syr2k_ref(n, m, alpha, beta, C, A, B):
    a, b = _f64(A), _f64(B)
    new = np.float64(beta) * _f64(C) + np.float64(alpha) * (a @ b.T + b @ a.T)
    low = np.tri(n, dtype=bool)
    C[low] = new[low]


def _syr2k_torch(n, m, alpha, beta, C, A, B):
    import torch

    low = torch.ones(n, n, dtype=torch.bool, device=C.device).tril()
    new = (A @ B.t() + B @ A.t()).mul_(float(alpha)).add_(C, alpha=float(beta))
    C.copy_(torch.where(low, new, C))


register(Kernel(
    "syr2k", "linear-algebra/blas", ("N", "M"),
    {"MINI": {"N": 30, "M": 20}, "SMALL": {"N": 80, "M": 60}, "LARGE": {"N": 1200, "M": 1000}},
    _syr2k_init, _syr2k_ref,
    flops=lambda p: p["N"] * (p["N"] + 1) / 2 * (1.0 + 6.0 * p["M"]),
    bytes=lambda p: 4.0 * (p["N"] * (p["N"] + 1) + 2 * p["N"] * p["M"]),
    torch=_syr2k_torch, outputs=("C",),
    notes="PolyBench 4.2's triangular loops: only C's lower triangle (diagonal included) changes"))


# -- syrk: C := alpha*A*A^T + beta*C, lower triangle -------------------------------------------------------------
def _syrk_init(p, rng, exact):
    n, m = p["N"], p["M"]
    if exact:
        return [n, m, f32(2), f32(-1), small_ints(rng, (n, n)), small_ints(rng, (n, m))]
    return [n, m, f32(1.5), f32(1.2), grid((n, n), lambda i, j: ((i * j + 2) % m) / m),
            grid((n, m), lambda i, j: ((i * j + 1) % n) / n)]


def _syrk_ref(n, m, alpha, beta, C, A):
    a = _f64(A)
    new = np.float64(beta) * _f64(C) + np.float64(alpha) * (a @ a.T)
    low = np.tri(n, dtype=bool)
    C[low] = new[low]


def _syrk_torch(n, m, alpha, beta, C, A):
    import torch

    low = torch.ones(n, n, dtype=torch.bool, device=C.device).tril()
    new = (A @ A.t()).mul_(float(alpha)).add_(C, alpha=float(beta))
    C.copy_(torch.where(low, new, C))


register(Kernel(
    "syrk", "linear-algebra/blas", ("N", "M"),
    {"MINI": {"N": 30, "M": 20}, "SMALL": {"N": 80, "M": 60}, "LARGE": {"N": 1200, "M": 1000}},
    _syrk_init, _syrk_ref,
    flops=lambda p: p["N"] * (p["N"] + 1) / 2 * (1.0 + 3.0 * p["M"]),
    bytes=lambda p: 4.0 * (p["N"] * (p["N"] + 1) + p["N"] * p["M"]),
    torch=_syrk_torch, outputs=("C",),
    notes="PolyBench 4.2's triangular loops: only C's lower triangle (diagonal included) changes"))


# -- trmm: B := alpha*A^T*B, A unit lower triangular ---------------------------------------------------------
def _trmm_init(p, rng, exact):
    m, n = p["M"], p["N"]
    if exact:
        A, B, alpha = small_ints(rng, (m, m)), small_ints(rng, (m, n)), f32(2)
    else:
        A = grid((m, m), lambda i, j: ((i + j) % m) / m)
        B, alpha = grid((m, n), lambda i, j: ((n + (i - j)) % n) / n), f32(1.5)
    A[np.diag_indices(m)] = 1
    A[~np.tri(m, dtype=bool)] = -999  # never read (PolyBench leaves it uninitialized)
    return [m, n, alpha, A, B]


def _trmm_ref(m, n, alpha, A, B):
    U = np.eye(m) + np.tril(_f64(A), -1).T
    B[:] = np.float64(alpha) * (U @ _f64(B))


register(Kernel(
    "trmm", "linear-algebra/blas", ("M", "N"),
    {"MINI": {"M": 20, "N": 30}, "SMALL": {"M": 60, "N": 80}, "LARGE": {"M": 1000, "N": 1200}},
    _trmm_init, _trmm_ref,
    flops=lambda p: 1.0 * p["N"] * p["M"] * p["M"],
    bytes=lambda p: 4.0 * (p["M"] * (p["M"] - 1) / 2 + 2 * p["M"] * p["N"]),
    outputs=("B",),
    notes="A's diagonal (unit, 1) and upper triangle (-999) are never read"))
