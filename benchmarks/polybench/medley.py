"""PolyBench medley: deriche, floyd-warshall, nussinov.

floyd-warshall and nussinov are integer kernels in PolyBench (DATA_TYPE int); here their data is f32
holding integers, so every result is exact."""

from __future__ import annotations

import numpy as np

from . import Kernel, f32, grid, register, small_ints


# -- deriche: recursive edge-detection filter -----------------------------------------------------------------
def _deriche_init(p, rng, exact):
    w, h = p["W"], p["H"]
    img = grid((w, h), lambda i, j: ((313 * i + 991 * j) % 65536) / 65535.0)
    return [w, h, f32(0.25), img, np.zeros((w, h), np.float32), np.zeros((w, h), np.float32),
            np.zeros((w, h), np.float32)]


def _recursion(x, c0, c1, b1, b2, causal):
    """One causal (``y[t] = c0*x[t] + c1*x[t-1] + b1*y[t-1] + b2*y[t-2]``) or anticausal
    (``y[t] = c0*x[t+1] + c1*x[t+2] + b1*y[t+1] + b2*y[t+2]``) pass along axis 1 of ``x``, all rows at once,
    in f32 and in PolyBench's order of operations."""
    m, length = x.shape
    y = np.empty_like(x)
    zero = np.zeros(m, np.float32)
    x1, x2, y1, y2 = zero, zero, zero, zero
    for t in (range(length) if causal else range(length - 1, -1, -1)):
        if causal:
            y[:, t] = c0 * x[:, t] + c1 * x1 + b1 * y1 + b2 * y2
            x1 = x[:, t]
        else:
            y[:, t] = c0 * x1 + c1 * x2 + b1 * y1 + b2 * y2
            x2, x1 = x1, x[:, t]
        y2, y1 = y1, y[:, t]
    return y


def _deriche_ref(w, h, alpha, imgIn, imgOut, y1, y2):
    one, two = f32(1), f32(2)
    ena = np.exp(-alpha)
    k = (one - ena) * (one - ena) / (one + two * alpha * ena - np.exp(two * alpha))
    a1 = a5 = k
    a2 = a6 = k * ena * (alpha - one)
    a3 = a7 = k * ena * (alpha + one)
    a4 = a8 = -k * np.exp(f32(-2) * alpha)
    b1 = np.power(two, -alpha)
    b2 = -np.exp(f32(-2) * alpha)
    c1 = c2 = one
    y1[:] = _recursion(imgIn, a1, a2, b1, b2, causal=True)
    y2[:] = _recursion(imgIn, a3, a4, b1, b2, causal=False)
    imgOut[:] = c1 * (y1 + y2)
    y1[:] = _recursion(imgOut.T, a5, a6, b1, b2, causal=True).T
    y2[:] = _recursion(imgOut.T, a7, a8, b1, b2, causal=False).T
    imgOut[:] = c2 * (y1 + y2)


register(Kernel(
    "deriche", "medley", ("W", "H"),
    {"MINI": {"W": 64, "H": 64}, "SMALL": {"W": 192, "H": 128}, "LARGE": {"W": 4096, "H": 2160}},
    _deriche_init, _deriche_ref,
    # Four recursive passes of 4 mul + 3 add per pixel, two sums (add, mul by c = 1); the scalar set-up
    # (exp, powf) is not counted.
    flops=lambda p: 32.0 * p["W"] * p["H"],
    # imgIn read; imgOut, y1, y2 written.
    bytes=lambda p: 4.0 * 4 * p["W"] * p["H"],
    exact_ok=False, notes="exp and powf in the filter's coefficients", outputs=("imgOut", "y1", "y2")))


# -- floyd-warshall: all-pairs shortest paths -----------------------------------------------------------------
def _floyd_warshall_init(p, rng, exact):
    n = p["N"]
    if exact:
        # Positive edge lengths, about a third of the pairs without an edge (999, as PolyBench marks them).
        path = rng.integers(1, 10, size=(n, n)).astype(np.float32)
        path[rng.random((n, n)) < 0.3] = 999
        return [n, path]
    path = grid((n, n), lambda i, j: np.where(((i + j) % 13 == 0) | ((i + j) % 7 == 0) | ((i + j) % 11 == 0), 999,
                                              (i * j) % 7 + 1))
    return [n, path]


def _floyd_warshall_ref(n, path):
    for k in range(n):
        # With non-negative lengths row k and column k do not change during step k, so the step is one
        # elementwise update: the same values as PolyBench's sequential (i, j) order.
        s = path[:, k:k + 1] + path[k:k + 1, :]
        path[:] = np.where(path < s, path, s)


register(Kernel(
    "floyd-warshall", "medley", ("N",),
    {"MINI": {"N": 60}, "SMALL": {"N": 180}, "LARGE": {"N": 2800}},
    _floyd_warshall_init, _floyd_warshall_ref,
    flops=lambda p: 2.0 * p["N"] ** 3,  # an add and a compare per (k, i, j)
    bytes=lambda p: 4.0 * 2 * p["N"] ** 2,
    notes="PolyBench's DATA_TYPE is int; f32 holding integers here", outputs=("path",)))


# -- nussinov: RNA folding by dynamic programming -------------------------------------------------------------
def _nussinov_init(p, rng, exact):
    n = p["N"]
    if exact:
        return [n, rng.integers(0, 4, size=n).astype(np.float32), small_ints(rng, (n, n))]
    return [n, ((np.arange(n) + 1) % 4).astype(np.float32), np.zeros((n, n), np.float32)]


def _nussinov_ref(n, seq, table):
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            t = table[i, j]
            if j - 1 >= 0:
                t = max(t, table[i, j - 1])
            if i + 1 < n:
                t = max(t, table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                if i < j - 1:
                    t = max(t, table[i + 1, j - 1] + (f32(1) if seq[i] + seq[j] == 3 else f32(0)))
                else:
                    t = max(t, table[i + 1, j - 1])
            if i + 1 < j:  # k = i+1 .. j-1: a max, exact in any order
                t = max(t, (table[i, i + 1:j] + table[i + 2:j + 1, j]).max())
            table[i, j] = t


def _nussinov_flops(p):
    n = p["N"]
    pairs = n * (n - 1) // 2
    # Each (i, j): two maxes and a third (plus, where i < j - 1, the match's add and compare and an add);
    # each (i, k, j), i < k < j: an add and a max.
    return 3.0 * pairs + 3.0 * (pairs - (n - 1)) + 2.0 * n * (n - 1) * (n - 2) / 6


register(Kernel(
    "nussinov", "medley", ("N",),
    {"MINI": {"N": 60}, "SMALL": {"N": 180}, "LARGE": {"N": 2500}},
    _nussinov_init, _nussinov_ref,
    flops=_nussinov_flops,
    bytes=lambda p: 4.0 * (p["N"] + 2 * p["N"] ** 2),
    notes="PolyBench's DATA_TYPE is int and seq is char; both f32 holding integers here (seq in 0..3); "
          "max_score is arith.maximumf",
    outputs=("table",)))
