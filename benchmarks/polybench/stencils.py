"""PolyBench stencils: adi, fdtd-2d, heat-3d, jacobi-1d, jacobi-2d, seidel-2d.

The references compute in float32, one operation at a time in PolyBench's order (vectorized over the
points of a sweep that do not depend on each other), so on PolyBench's data they match the interpreter
to the last bit or nearly. The time-step functions of jacobi-2d, fdtd-2d and heat-3d use only slicing
and elementwise arithmetic, which numpy arrays and torch tensors share: the same function is the
numpy reference and the PyTorch equivalent."""

from __future__ import annotations

import numpy as np

from . import Kernel, f32, grid, register, small_ints


def _interior(n):
    """The slices ``1 .. n-2`` (the interior), ``2 .. n-1`` (one up) and ``0 .. n-3`` (one down)."""
    return slice(1, n - 1), slice(2, n), slice(0, n - 2)


# -- adi: alternating-direction implicit solver ---------------------------------------------------------------
def _adi_init(p, rng, exact):
    tsteps, n = p["TSTEPS"], p["N"]
    u = grid((n, n), lambda i, j: (i + n - j) / n)
    return [tsteps, n, u, np.zeros((n, n), np.float32), np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)]


def _adi_ref(tsteps, n, u, v, p, q):
    one, two = f32(1), f32(2)
    DX = one / f32(n)
    DY = one / f32(n)
    DT = one / f32(tsteps)
    B1, B2 = f32(2), f32(1)
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)
    a = -mul1 / two
    b = one + mul1
    c = a
    d = -mul2 / two
    e = one + mul2
    f = d
    I, P, M = _interior(n)
    for _ in range(tsteps):
        # Column sweep: the columns i are independent (p, q row i; v column i), the sweep runs along j.
        v[0, I] = one
        p[I, 0] = 0
        q[I, 0] = v[0, I]
        for j in range(1, n - 1):
            p[I, j] = -c / (a * p[I, j - 1] + b)
            q[I, j] = ((-d * u[j, M] + (one + two * d) * u[j, I] - f * u[j, P] - a * q[I, j - 1])
                       / (a * p[I, j - 1] + b))
        v[n - 1, I] = one
        for j in range(n - 2, 0, -1):
            v[j, I] = p[I, j] * v[j + 1, I] + q[I, j]
        # Row sweep.
        u[I, 0] = one
        p[I, 0] = 0
        q[I, 0] = u[I, 0]
        for j in range(1, n - 1):
            p[I, j] = -f / (d * p[I, j - 1] + e)
            q[I, j] = ((-a * v[M, j] + (one + two * a) * v[I, j] - c * v[P, j] - d * q[I, j - 1])
                       / (d * p[I, j - 1] + e))
        u[I, n - 1] = one
        for j in range(n - 2, 0, -1):
            u[I, j] = p[I, j] * u[I, j + 1] + q[I, j]


register(Kernel(
    "adi", "stencils", ("TSTEPS", "N"),
    {"MINI": {"TSTEPS": 20, "N": 20}, "SMALL": {"TSTEPS": 40, "N": 60}, "LARGE": {"TSTEPS": 500, "N": 1000}},
    _adi_init, _adi_ref,
    # Per sweep point: p (mul, add, div), q (5 mul, 2 sub, add, then a*p+b again and the div), back
    # substitution (mul, add): 15; two sweeps of (N-2)^2 points per step. The scalar set-up is not counted.
    flops=lambda p: 30.0 * p["TSTEPS"] * (p["N"] - 2) ** 2,
    # u read and written; v, p, q written.
    bytes=lambda p: 4.0 * 5 * p["N"] ** 2,
    exact_ok=False, notes="divides (the tridiagonal solves)", outputs=("u", "v", "p", "q")))


# -- fdtd-2d: 2-D finite-difference time domain ---------------------------------------------------------------
def _fdtd_2d_init(p, rng, exact):
    tmax, nx, ny = p["TMAX"], p["NX"], p["NY"]
    return [tmax, nx, ny, grid((nx, ny), lambda i, j: i * (j + 1) / nx), grid((nx, ny), lambda i, j: i * (j + 2) / ny),
            grid((nx, ny), lambda i, j: i * (j + 3) / nx), np.arange(tmax, dtype=np.float32)]


def _fdtd_2d_steps(tmax, nx, ny, ex, ey, hz, _fict_):
    """numpy arrays or torch tensors alike."""
    for t in range(tmax):
        ey[0, :] = _fict_[t]
        ey[1:nx, :] = ey[1:nx, :] - 0.5 * (hz[1:nx, :] - hz[0:nx - 1, :])
        ex[:, 1:ny] = ex[:, 1:ny] - 0.5 * (hz[:, 1:ny] - hz[:, 0:ny - 1])
        hz[0:nx - 1, 0:ny - 1] = hz[0:nx - 1, 0:ny - 1] - 0.7 * (
            ex[0:nx - 1, 1:ny] - ex[0:nx - 1, 0:ny - 1] + ey[1:nx, 0:ny - 1] - ey[0:nx - 1, 0:ny - 1])


register(Kernel(
    "fdtd-2d", "stencils", ("TMAX", "NX", "NY"),
    {"MINI": {"TMAX": 20, "NX": 20, "NY": 30}, "SMALL": {"TMAX": 40, "NX": 60, "NY": 80},
     "LARGE": {"TMAX": 500, "NX": 1000, "NY": 1200}},
    _fdtd_2d_init, _fdtd_2d_steps,
    # ey and ex: sub, mul, sub per point; hz: sub, add, sub, mul, sub.
    flops=lambda p: p["TMAX"] * (3.0 * (p["NX"] - 1) * p["NY"] + 3.0 * p["NX"] * (p["NY"] - 1)
                                 + 5.0 * (p["NX"] - 1) * (p["NY"] - 1)),
    bytes=lambda p: 4.0 * (6 * p["NX"] * p["NY"] + p["TMAX"]),
    torch=_fdtd_2d_steps, exact_ok=False, notes="hz's coefficient 0.7 is not a power of two",
    outputs=("ex", "ey", "hz")))


# -- heat-3d: 3-D heat equation -------------------------------------------------------------------------------
_HEAT_3D_EXACT_TSTEPS = 3


def _heat_3d_init(p, rng, exact):
    tsteps, n = p["TSTEPS"], p["N"]
    if exact:
        # Each half step averages with weights 1/4 (the centre) and 1/8 (the six neighbours): values stay
        # within the data's range [-2, 2] and gain 3 fraction bits. Three steps (6 half steps) keep every
        # value a multiple of 2**-18 below 4 in magnitude: exact in f32's 24 bits. More would round.
        A = small_ints(rng, (n, n, n))
        return [min(tsteps, _HEAT_3D_EXACT_TSTEPS), n, A, A.copy()]
    A = grid((n, n, n), lambda i, j, k: (i + j + (n - k)) * 10 / n)
    return [tsteps, n, A, A.copy()]


def _heat_3d_steps(tsteps, n, A, B):
    """numpy arrays or torch tensors alike."""
    I, P, M = _interior(n)
    for _ in range(tsteps):
        B[I, I, I] = (0.125 * (A[P, I, I] - 2.0 * A[I, I, I] + A[M, I, I])
                      + 0.125 * (A[I, P, I] - 2.0 * A[I, I, I] + A[I, M, I])
                      + 0.125 * (A[I, I, P] - 2.0 * A[I, I, I] + A[I, I, M])
                      + A[I, I, I])
        A[I, I, I] = (0.125 * (B[P, I, I] - 2.0 * B[I, I, I] + B[M, I, I])
                      + 0.125 * (B[I, P, I] - 2.0 * B[I, I, I] + B[I, M, I])
                      + 0.125 * (B[I, I, P] - 2.0 * B[I, I, I] + B[I, I, M])
                      + B[I, I, I])


register(Kernel(
    "heat-3d", "stencils", ("TSTEPS", "N"),
    {"MINI": {"TSTEPS": 20, "N": 10}, "SMALL": {"TSTEPS": 40, "N": 20}, "LARGE": {"TSTEPS": 500, "N": 120}},
    _heat_3d_init, _heat_3d_steps,
    # Per point: three (mul, sub, add, mul by 0.125) terms, three adds: 15; B then A each step.
    flops=lambda p: 30.0 * p["TSTEPS"] * (p["N"] - 2) ** 3,
    bytes=lambda p: 4.0 * 4 * p["N"] ** 3,
    torch=_heat_3d_steps,
    notes=f"exact data (integers in [-2, 2]) runs {_HEAT_3D_EXACT_TSTEPS} time steps, not TSTEPS: each half step "
          "adds 3 fraction bits (the coefficient 0.125), so more steps would round",
    outputs=("A", "B")))


# -- jacobi-1d ------------------------------------------------------------------------------------------------
def _jacobi_1d_init(p, rng, exact):
    tsteps, n = p["TSTEPS"], p["N"]
    return [tsteps, n, grid((n,), lambda i: (i + 2) / n), grid((n,), lambda i: (i + 3) / n)]


def _jacobi_1d_ref(tsteps, n, A, B):
    c = f32(0.33333)
    I, P, M = _interior(n)
    for _ in range(tsteps):
        B[I] = c * (A[M] + A[I] + A[P])
        A[I] = c * (B[M] + B[I] + B[P])


register(Kernel(
    "jacobi-1d", "stencils", ("TSTEPS", "N"),
    {"MINI": {"TSTEPS": 20, "N": 30}, "SMALL": {"TSTEPS": 40, "N": 120}, "LARGE": {"TSTEPS": 500, "N": 2000}},
    _jacobi_1d_init, _jacobi_1d_ref,
    flops=lambda p: 6.0 * p["TSTEPS"] * (p["N"] - 2),
    bytes=lambda p: 4.0 * 4 * p["N"],
    exact_ok=False,
    notes="the coefficient 0.33333 is not a power of two (PolyBench's double literal; f32 here)",
    outputs=("A", "B")))


# -- jacobi-2d ------------------------------------------------------------------------------------------------
def _jacobi_2d_init(p, rng, exact):
    tsteps, n = p["TSTEPS"], p["N"]
    return [tsteps, n, grid((n, n), lambda i, j: (i * (j + 2) + 2) / n),
            grid((n, n), lambda i, j: (i * (j + 3) + 3) / n)]


def _jacobi_2d_steps(tsteps, n, A, B):
    """numpy arrays or torch tensors alike."""
    I, P, M = _interior(n)
    for _ in range(tsteps):
        B[I, I] = 0.2 * (A[I, I] + A[I, M] + A[I, P] + A[P, I] + A[M, I])
        A[I, I] = 0.2 * (B[I, I] + B[I, M] + B[I, P] + B[P, I] + B[M, I])


register(Kernel(
    "jacobi-2d", "stencils", ("TSTEPS", "N"),
    {"MINI": {"TSTEPS": 20, "N": 30}, "SMALL": {"TSTEPS": 40, "N": 90}, "LARGE": {"TSTEPS": 500, "N": 1300}},
    _jacobi_2d_init, _jacobi_2d_steps,
    flops=lambda p: 10.0 * p["TSTEPS"] * (p["N"] - 2) ** 2,
    bytes=lambda p: 4.0 * 4 * p["N"] ** 2,
    torch=_jacobi_2d_steps, exact_ok=False, notes="the coefficient 0.2 is not a power of two",
    outputs=("A", "B")))


# -- seidel-2d ------------------------------------------------------------------------------------------------
def _seidel_2d_init(p, rng, exact):
    tsteps, n = p["TSTEPS"], p["N"]
    return [tsteps, n, grid((n, n), lambda i, j: (i * (j + 2) + 2) / n)]


def _seidel_2d_ref(tsteps, n, A):
    nine = f32(9)
    for _ in range(tsteps):
        for i in range(1, n - 1):
            # Row i - 1 is final for this sweep: its three terms come first in the sum, vectorized.
            top = A[i - 1, 0:n - 2] + A[i - 1, 1:n - 1] + A[i - 1, 2:n]
            row, below = A[i], A[i + 1]
            for j in range(1, n - 1):
                s = top[j - 1] + row[j - 1] + row[j] + row[j + 1] + below[j - 1] + below[j] + below[j + 1]
                row[j] = s / nine


register(Kernel(
    "seidel-2d", "stencils", ("TSTEPS", "N"),
    {"MINI": {"TSTEPS": 20, "N": 40}, "SMALL": {"TSTEPS": 40, "N": 120}, "LARGE": {"TSTEPS": 500, "N": 2000}},
    _seidel_2d_init, _seidel_2d_ref,
    flops=lambda p: 9.0 * p["TSTEPS"] * (p["N"] - 2) ** 2,
    bytes=lambda p: 4.0 * 2 * p["N"] ** 2,
    exact_ok=False, notes="divides by 9", outputs=("A",)))
