"""PolyBench datamining: correlation, covariance."""

from __future__ import annotations

import math

import numpy as np

from . import Kernel, f32, grid, register


# -- covariance: cov = (data - mean)^T (data - mean) / (float_n - 1) ------------------------------------------
def _covariance_exact_data(rng, m: int, n: int) -> np.ndarray:
    """``data = mu + (n - 1) * E``: integer column means ``mu`` in [-2, 2] and ``E`` with entries in {-1, 0, 1},
    as many +1 as -1 in each column (zero column sums). The means are then exactly ``mu``, the centered data
    ``(n - 1) * E`` and ``cov = (n - 1) * E^T E``: the divisions by ``float_n = n`` and ``n - 1`` are exact.
    Each column has at most ``nnz`` nonzeros so that the sums, bounded by ``(n - 1)**2 * nnz``, stay below
    2**24."""
    nnz = min(n, int(2**24 // (n - 1) ** 2)) // 2 * 2
    if nnz < 2:
        raise ValueError(f"covariance: no exact data at N={n}")
    e = np.zeros((n, m))
    for j in range(m):
        k = int(rng.integers(1, nnz // 2 + 1))
        rows = rng.permutation(n)[: 2 * k]
        e[rows[:k], j], e[rows[k:], j] = 1.0, -1.0
    mu = rng.integers(-2, 3, size=m).astype(np.float64)
    return (mu + (n - 1) * e).astype(np.float32)


def _covariance_init(p, rng, exact):
    m, n = p["M"], p["N"]
    data = _covariance_exact_data(rng, m, n) if exact else grid((n, m), lambda i, j: i * j / m)
    return [m, n, f32(n), data, np.zeros((m, m), np.float32), np.zeros(m, np.float32)]


def _covariance_ref(m, n, float_n, data, cov, mean):
    d = data.astype(np.float64)
    mu = d.sum(axis=0) / np.float64(float_n)
    d -= mu
    mean[:] = mu.astype(np.float32)
    data[:] = d.astype(np.float32)
    cov[:] = ((d.T @ d) / (np.float64(float_n) - 1.0)).astype(np.float32)


def _covariance_torch(m, n, float_n, data, cov, mean):
    fn = float(float_n)
    mean.copy_(data.sum(dim=0) / fn)
    data.sub_(mean)
    cov.copy_((data.T @ data) / (fn - 1.0))


register(Kernel(
    "covariance", "datamining", ("M", "N"),
    {"MINI": {"M": 28, "N": 32}, "SMALL": {"M": 80, "N": 100}, "LARGE": {"M": 1200, "N": 1400}},
    _covariance_init, _covariance_ref,
    flops=lambda p: (p["M"] * (p["N"] + 1.0) + p["N"] * p["M"]
                     + p["M"] * (p["M"] + 1) / 2 * (2.0 * p["N"] + 2)),
    bytes=lambda p: 4.0 * (2 * p["N"] * p["M"] + p["M"] + p["M"] ** 2),
    torch=_covariance_torch, exact_ok=True, outputs=("data", "cov", "mean"),
    notes="exact data: integer means plus (N - 1) times zero-sum columns of {-1, 0, 1}, so that the divisions "
          "by float_n = N and float_n - 1 are exact"))


# -- correlation: corr = normalized (data - mean)^T (data - mean) ----------------------------------------------
_EPS = np.float32(0.1)


def _correlation_init(p, rng, exact):
    m, n = p["M"], p["N"]
    return [m, n, f32(n), grid((n, m), lambda i, j: i * j / m + i), np.zeros((m, m), np.float32),
            np.zeros(m, np.float32), np.zeros(m, np.float32)]


def _correlation_ref(m, n, float_n, data, corr, mean, stddev):
    fn = np.float64(float_n)
    d = data.astype(np.float64)
    mu = d.sum(axis=0) / fn
    sd = np.sqrt(((d - mu) ** 2).sum(axis=0) / fn)
    sd = np.where(sd <= np.float64(_EPS), 1.0, sd)
    d = (d - mu) / (np.sqrt(fn) * sd)
    c = d.T @ d
    np.fill_diagonal(c, 1.0)
    mean[:] = mu.astype(np.float32)
    stddev[:] = sd.astype(np.float32)
    data[:] = d.astype(np.float32)
    corr[:] = c.astype(np.float32)


def _correlation_torch(m, n, float_n, data, corr, mean, stddev):
    fn = float(float_n)
    mean.copy_(data.sum(dim=0) / fn)
    stddev.copy_(((data - mean) ** 2).sum(dim=0).div_(fn).sqrt_())
    stddev.masked_fill_(stddev <= float(_EPS), 1.0)
    data.sub_(mean).div_(stddev * math.sqrt(fn))
    corr.copy_(data.T @ data)
    corr.fill_diagonal_(1.0)


register(Kernel(
    "correlation", "datamining", ("M", "N"),
    {"MINI": {"M": 28, "N": 32}, "SMALL": {"M": 80, "N": 100}, "LARGE": {"M": 1200, "N": 1400}},
    _correlation_init, _correlation_ref,
    flops=lambda p: (p["M"] * (p["N"] + 1.0) + p["M"] * (4.0 * p["N"] + 3) + 4.0 * p["N"] * p["M"]
                     + p["M"] * (p["M"] - 1.0) * p["N"]),
    bytes=lambda p: 4.0 * (2 * p["N"] * p["M"] + 2 * p["M"] + p["M"] ** 2),
    torch=_correlation_torch, exact_ok=False, outputs=("data", "corr", "mean", "stddev"),
    notes="divides by sqrt(float_n) * stddev: square roots of non-squares, no integer data keep it exact"))
