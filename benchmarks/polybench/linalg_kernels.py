"""PolyBench linear-algebra/kernels: 2mm, 3mm, atax, bicg, doitgen, mvt."""

from __future__ import annotations

import numpy as np

from . import Kernel, f32, grid, register, small_ints

_CAT = "linear-algebra/kernels"


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


# -- 2mm: D := alpha*A*B*C + beta*D --------------------------------------------------------------------------
def _2mm_init(p, rng, exact):
    ni, nj, nk, nl = p["NI"], p["NJ"], p["NK"], p["NL"]
    tmp = np.zeros((ni, nj), np.float32)
    if exact:
        return [ni, nj, nk, nl, f32(2), f32(-1), tmp, small_ints(rng, (ni, nk)), small_ints(rng, (nk, nj)),
                small_ints(rng, (nj, nl)), small_ints(rng, (ni, nl))]
    return [ni, nj, nk, nl, f32(1.5), f32(1.2), tmp,
            grid((ni, nk), lambda i, j: ((i * j + 1) % ni) / ni),
            grid((nk, nj), lambda i, j: (i * (j + 1) % nj) / nj),
            grid((nj, nl), lambda i, j: ((i * (j + 3) + 1) % nl) / nl),
            grid((ni, nl), lambda i, j: (i * (j + 2) % nk) / nk)]


def _2mm_ref(ni, nj, nk, nl, alpha, beta, tmp, A, B, C, D):
    tmp[:] = (np.float64(alpha) * _f64(A)) @ _f64(B)
    D[:] = np.float64(beta) * _f64(D) + _f64(tmp) @ _f64(C)


def _2mm_torch(ni, nj, nk, nl, alpha, beta, tmp, A, B, C, D):
    tmp.copy_(A @ B).mul_(float(alpha))
    D.mul_(float(beta)).addmm_(tmp, C)


register(Kernel(
    "2mm", _CAT, ("NI", "NJ", "NK", "NL"),
    {"MINI": {"NI": 16, "NJ": 18, "NK": 22, "NL": 24}, "SMALL": {"NI": 40, "NJ": 50, "NK": 70, "NL": 80},
     "LARGE": {"NI": 800, "NJ": 900, "NK": 1100, "NL": 1200}},
    _2mm_init, _2mm_ref,
    flops=lambda p: 3.0 * p["NI"] * p["NJ"] * p["NK"] + p["NI"] * p["NL"] * (1 + 2 * p["NJ"]),
    bytes=lambda p: 4.0 * (p["NI"] * p["NJ"] + p["NI"] * p["NK"] + p["NK"] * p["NJ"] + p["NJ"] * p["NL"]
                           + 2 * p["NI"] * p["NL"]),
    torch=_2mm_torch, outputs=("tmp", "D"),
    notes="exact data: integers in [-2, 2], alpha=2, beta=-1 (|D| < 2**24 up to LARGE)"))


# -- 3mm: G := (A*B)*(C*D) -----------------------------------------------------------------------------------
def _3mm_init(p, rng, exact):
    ni, nj, nk, nl, nm = p["NI"], p["NJ"], p["NK"], p["NL"], p["NM"]
    E, F, G = np.zeros((ni, nj), np.float32), np.zeros((nj, nl), np.float32), np.zeros((ni, nl), np.float32)
    if exact:
        return [ni, nj, nk, nl, nm, E, small_ints(rng, (ni, nk)), small_ints(rng, (nk, nj)), F,
                small_ints(rng, (nj, nm)), small_ints(rng, (nm, nl)), G]
    return [ni, nj, nk, nl, nm, E,
            grid((ni, nk), lambda i, j: ((i * j + 1) % ni) / (5 * ni)),
            grid((nk, nj), lambda i, j: ((i * (j + 1) + 2) % nj) / (5 * nj)), F,
            grid((nj, nm), lambda i, j: (i * (j + 3) % nl) / (5 * nl)),
            grid((nm, nl), lambda i, j: ((i * (j + 2) + 2) % nk) / (5 * nk)), G]


def _3mm_ref(ni, nj, nk, nl, nm, E, A, B, F, C, D, G):
    E[:] = _f64(A) @ _f64(B)
    F[:] = _f64(C) @ _f64(D)
    G[:] = _f64(E) @ _f64(F)


def _3mm_torch(ni, nj, nk, nl, nm, E, A, B, F, C, D, G):
    E.copy_(A @ B)
    F.copy_(C @ D)
    G.copy_(E @ F)


register(Kernel(
    "3mm", _CAT, ("NI", "NJ", "NK", "NL", "NM"),
    {"MINI": {"NI": 16, "NJ": 18, "NK": 20, "NL": 22, "NM": 24},
     "SMALL": {"NI": 40, "NJ": 50, "NK": 60, "NL": 70, "NM": 80},
     "LARGE": {"NI": 800, "NJ": 900, "NK": 1000, "NL": 1100, "NM": 1200}},
    _3mm_init, _3mm_ref,
    flops=lambda p: 2.0 * (p["NI"] * p["NJ"] * p["NK"] + p["NJ"] * p["NL"] * p["NM"] + p["NI"] * p["NL"] * p["NJ"]),
    bytes=lambda p: 4.0 * (p["NI"] * p["NJ"] + p["NI"] * p["NK"] + p["NK"] * p["NJ"] + p["NJ"] * p["NL"]
                           + p["NJ"] * p["NM"] + p["NM"] * p["NL"] + p["NI"] * p["NL"]),
    torch=_3mm_torch, outputs=("E", "F", "G"),
    notes="exact data: integers in [-2, 2] (|G| < 2**24 at MINI and SMALL, not at LARGE)"))


# -- atax: y := A^T * (A * x) --------------------------------------------------------------------------------
def _atax_init(p, rng, exact):
    m, n = p["M"], p["N"]
    y, tmp = np.zeros(n, np.float32), np.zeros(m, np.float32)
    if exact:
        return [m, n, small_ints(rng, (m, n)), small_ints(rng, n), y, tmp]
    return [m, n, grid((m, n), lambda i, j: ((i + j) % n) / (5 * m)), grid((n,), lambda i: 1 + i / n), y, tmp]


def _atax_ref(m, n, A, x, y, tmp):
    tmp[:] = _f64(A) @ _f64(x)
    y[:] = _f64(A).T @ _f64(tmp)


def _atax_torch(m, n, A, x, y, tmp):
    tmp.copy_(A @ x)
    y.copy_(A.t() @ tmp)


register(Kernel(
    "atax", _CAT, ("M", "N"),
    {"MINI": {"M": 38, "N": 42}, "SMALL": {"M": 116, "N": 124}, "LARGE": {"M": 1900, "N": 2100}},
    _atax_init, _atax_ref,
    flops=lambda p: 4.0 * p["M"] * p["N"],
    bytes=lambda p: 4.0 * (p["M"] * p["N"] + 2 * p["N"] + p["M"]),
    torch=_atax_torch, outputs=("y", "tmp")))


# -- bicg: s := A^T * r, q := A * p --------------------------------------------------------------------------
def _bicg_init(p, rng, exact):
    m, n = p["M"], p["N"]
    s, q = np.zeros(m, np.float32), np.zeros(n, np.float32)
    if exact:
        return [m, n, small_ints(rng, (n, m)), s, q, small_ints(rng, m), small_ints(rng, n)]
    return [m, n, grid((n, m), lambda i, j: (i * (j + 1) % n) / n), s, q, grid((m,), lambda i: (i % m) / m),
            grid((n,), lambda i: (i % n) / n)]


def _bicg_ref(m, n, A, s, q, p, r):
    s[:] = _f64(A).T @ _f64(r)
    q[:] = _f64(A) @ _f64(p)


def _bicg_torch(m, n, A, s, q, p, r):
    s.copy_(A.t() @ r)
    q.copy_(A @ p)


register(Kernel(
    "bicg", _CAT, ("M", "N"),
    {"MINI": {"M": 38, "N": 42}, "SMALL": {"M": 116, "N": 124}, "LARGE": {"M": 1900, "N": 2100}},
    _bicg_init, _bicg_ref,
    flops=lambda p: 4.0 * p["M"] * p["N"],
    bytes=lambda p: 4.0 * (p["M"] * p["N"] + 2 * p["M"] + 2 * p["N"]),
    torch=_bicg_torch, outputs=("s", "q")))


# -- doitgen: A[r, q, :] := A[r, q, :] @ C4 ------------------------------------------------------------------
def _doitgen_init(p, rng, exact):
    nr, nq, np_ = p["NR"], p["NQ"], p["NP"]
    s = np.zeros(np_, np.float32)
    if exact:
        return [nr, nq, np_, small_ints(rng, (nr, nq, np_)), small_ints(rng, (np_, np_)), s]
    return [nr, nq, np_, grid((nr, nq, np_), lambda i, j, k: ((i * j + k) % np_) / np_),
            grid((np_, np_), lambda i, j: (i * j % np_) / np_), s]


def _doitgen_ref(nr, nq, np_, A, C4, s):
    A[:] = _f64(A) @ _f64(C4)
    s[:] = A[nr - 1, nq - 1]          # sum holds the last (r, q) row


def _doitgen_torch(nr, nq, np_, A, C4, s):
    A.copy_(A @ C4)
    s.copy_(A[nr - 1, nq - 1])


register(Kernel(
    "doitgen", _CAT, ("NR", "NQ", "NP"),
    {"MINI": {"NR": 10, "NQ": 8, "NP": 12}, "SMALL": {"NR": 25, "NQ": 20, "NP": 30},
     "LARGE": {"NR": 150, "NQ": 140, "NP": 160}},
    _doitgen_init, _doitgen_ref,
    flops=lambda p: 2.0 * p["NR"] * p["NQ"] * p["NP"] * p["NP"],
    bytes=lambda p: 4.0 * (2 * p["NR"] * p["NQ"] * p["NP"] + p["NP"] * p["NP"] + p["NP"]),
    torch=_doitgen_torch, outputs=("A", "sum")))


# -- mvt: x1 := x1 + A * y_1, x2 := x2 + A^T * y_2 ---------------------------------------------------------
def _mvt_init(p, rng, exact):
    n = p["N"]
    if exact:
        return [n, small_ints(rng, n), small_ints(rng, n), small_ints(rng, n), small_ints(rng, n),
                small_ints(rng, (n, n))]
    return [n, grid((n,), lambda i: (i % n) / n), grid((n,), lambda i: ((i + 1) % n) / n),
            grid((n,), lambda i: ((i + 3) % n) / n), grid((n,), lambda i: ((i + 4) % n) / n),
            grid((n, n), lambda i, j: (i * j % n) / n)]


def _mvt_ref(n, x1, x2, y_1, y_2, A):
    x1[:] = _f64(x1) + _f64(A) @ _f64(y_1)
    x2[:] = _f64(x2) + _f64(A).T @ _f64(y_2)


def _mvt_torch(n, x1, x2, y_1, y_2, A):
    x1.addmv_(A, y_1)
    x2.addmv_(A.t(), y_2)


register(Kernel(
    "mvt", _CAT, ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _mvt_init, _mvt_ref,
    flops=lambda p: 4.0 * p["N"] * p["N"],
    bytes=lambda p: 4.0 * (p["N"] * p["N"] + 6 * p["N"]),
    torch=_mvt_torch, outputs=("x1", "x2")))
