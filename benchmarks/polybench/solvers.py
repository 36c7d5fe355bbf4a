"""PolyBench linear-algebra/solvers: cholesky, durbin, gramschmidt, lu, ludcmp, trisolv.

PolyBench builds the matrices of cholesky, lu and ludcmp as ``A = B*B^T`` from a unit lower
triangular ``B`` (positive definite, so Cholesky and LU without pivoting are stable); its
non-exact data are used as PolyBench writes them. Exact data are products of small integer
triangular factors: every division and square root the kernels take then has an integer
result, so the interpreter and numpy agree bit for bit, in any summation order.

The references of cholesky, lu, ludcmp and trisolv compute in float64 (blocked forms of the
same recurrences, or substitutions vectorized per row) and round to float32 at the end; those
of durbin and gramschmidt compute in float32 in PolyBench's own order (sequential sums), since
their results amplify rounding (see their notes).
"""

from __future__ import annotations

import numpy as np

from . import Kernel, register, small_ints

_F32_EXACT = 2.0 ** 24
_BLOCK = 64  # the block size of the references' factorizations


def _check_exact(bound: float, what: str) -> None:
    """Exact data must keep every intermediate (bounded by ``bound``) an integer below 2**24."""
    if bound >= _F32_EXACT:
        raise ValueError(f"{what}: exact data would reach {bound:.0f} >= 2**24; no exact run at these sizes")


def _polybench_spd(n: int) -> np.ndarray:
    """PolyBench's cholesky/lu/ludcmp matrix: ``B[i][j] = (-j % n) / n + 1`` (C's ``%``: ``-j``) for
    ``j < i``, 1 on the diagonal, 0 above; ``A = B*B^T`` (float64)."""
    i, j = np.indices((n, n), dtype=np.float64)
    b = np.where(j < i, 1.0 - j / n, 0.0) + np.eye(n)
    return b @ b.T


def _unit_lower(rng, n: int) -> np.ndarray:
    """A unit lower triangular matrix with entries in {-1, 0, 1} below the diagonal (float64)."""
    return np.tril(rng.integers(-1, 2, size=(n, n)), -1).astype(np.float64) + np.eye(n)


def _upper(rng, n: int) -> np.ndarray:
    """An upper triangular matrix, entries in [-1, 1] above the diagonal, diagonal in {-2, -1, 1, 2} (float64)."""
    u = np.triu(rng.integers(-1, 2, size=(n, n)), 1).astype(np.float64)
    return u + np.diag(rng.choice([-2.0, -1.0, 1.0, 2.0], size=n))


# -- cholesky: A = L*L^T -------------------------------------------------------------------------------------
def _cholesky_init(p, rng, exact):
    n = p["N"]
    if exact:
        # L lower triangular, entries in [-1, 1], diagonal in {1, 2}: the kernel divides by and takes square
        # roots of L's diagonal (squared) only, and every partial sum is an integer below sum_k |L_ik L_jk|.
        lo = np.tril(rng.integers(-1, 2, size=(n, n)), -1).astype(np.float64) + np.diag(rng.choice([1.0, 2.0], n))
        _check_exact(float((np.abs(lo) @ np.abs(lo).T).max()), "cholesky")
        return [n, (lo @ lo.T).astype(np.float32)]
    return [n, _polybench_spd(n).astype(np.float32)]


def _cholesky_ref(n, A):
    a = A.astype(np.float64)
    for k0 in range(0, n, _BLOCK):  # blocked Cholesky: PolyBench's L, its sums in another order
        k1 = min(k0 + _BLOCK, n)
        for j in range(k0, k1):  # the diagonal block, then the panel below it, column by column
            a[j, j] = np.sqrt(a[j, j] - a[j, k0:j] @ a[j, k0:j])
            a[j + 1:, j] = (a[j + 1:, j] - a[j + 1:, k0:j] @ a[j, k0:j]) / a[j, j]
        a[k1:, k1:] -= a[k1:, k0:k1] @ a[k1:, k0:k1].T
    A[np.tril_indices(n)] = a[np.tril_indices(n)].astype(np.float32)  # only the lower triangle is written


register(Kernel(
    "cholesky", "linear-algebra/solvers", ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _cholesky_init, _cholesky_ref,
    flops=lambda p: p["N"] * (p["N"] + 1) * (2 * p["N"] + 1) / 6.0,
    bytes=lambda p: 4.0 * p["N"] * (p["N"] + 1),
    exact_ok=True, outputs=("A",),
    notes="exact data: A = L*L^T with integer L, diagonal in {1, 2}: the square roots and divisions are exact"))


# -- durbin: Levinson-Durbin recursion -----------------------------------------------------------------------
def _durbin_init(p, rng, exact):
    n = p["N"]
    return [n, (n + 1 - np.arange(n, dtype=np.float64)).astype(np.float32), np.zeros(n, np.float32)]


def _durbin_ref(n, r, y):
    f = np.float32
    y[0] = -r[0]
    beta, alpha = f(1.0), f(-r[0])
    z = np.empty(n, np.float32)
    for k in range(1, n):
        beta = f((f(1.0) - alpha * alpha) * beta)
        s = np.cumsum(r[k - 1::-1] * y[:k], dtype=np.float32)[-1]  # sequential: PolyBench's order
        alpha = f(-(r[k] + s) / beta)
        z[:k] = y[:k] + alpha * y[k - 1::-1]
        y[:k] = z[:k]
        y[k] = alpha


register(Kernel(
    "durbin", "linear-algebra/solvers", ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _durbin_init, _durbin_ref,
    flops=lambda p: 2.0 + 6.0 * (p["N"] - 1) + 2.0 * p["N"] * (p["N"] - 1),
    bytes=lambda p: 4.0 * 2 * p["N"],
    exact_ok=False, outputs=("y",),
    notes="divides by beta = prod(1 - alpha_k^2): no integer data keep it exact. PolyBench's r is no "
          "autocorrelation and the recursion amplifies rounding: float32 sums taken pairwise instead of in order "
          "move y by 7e-5 (relative to max |y|) at MINI, 5e-3 at SMALL, 0.13 at LARGE, so the reference runs "
          "in float32 in PolyBench's order; rtol holds at MINI only for programs that keep that order"))


# -- gramschmidt: QR by modified Gram-Schmidt ----------------------------------------------------------------
def _gramschmidt_init(p, rng, exact):
    m, n = p["M"], p["N"]
    i, j = np.indices((m, n), dtype=np.float64)
    a = (((i * j) % m) / m) * 100 + 10
    return [m, n, a.astype(np.float32), np.zeros((n, n), np.float32), np.zeros((m, n), np.float32)]


def _gramschmidt_ref(m, n, A, R, Q):
    # float32, PolyBench's order: each sum over i is sequential (cumsum), the j loop's columns are independent.
    for k in range(n):
        nrm = np.cumsum(A[:, k] * A[:, k], dtype=np.float32)[-1]
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        if k + 1 < n:
            R[k, k + 1:] = np.cumsum(Q[:, k:k + 1] * A[:, k + 1:], axis=0, dtype=np.float32)[-1]
            A[:, k + 1:] = A[:, k + 1:] - Q[:, k:k + 1] * R[k:k + 1, k + 1:]


register(Kernel(
    "gramschmidt", "linear-algebra/solvers", ("M", "N"),
    {"MINI": {"M": 20, "N": 30}, "SMALL": {"M": 60, "N": 80}, "LARGE": {"M": 1000, "N": 1200}},
    _gramschmidt_init, _gramschmidt_ref,
    flops=lambda p: p["N"] * (3.0 * p["M"] + 1) + 2.0 * p["M"] * p["N"] * (p["N"] - 1),
    bytes=lambda p: 4.0 * (p["M"] * p["N"] + p["M"] * (p["N"] - 1) + p["N"] * (p["N"] + 1) / 2 + p["M"] * p["N"]),
    exact_ok=False, outputs=("A", "R", "Q"),
    notes="square roots and divisions by column norms: no integer data keep it exact. PolyBench's sizes have "
          "N > M (and its A has rank 15 at MINI), so the columns past the rank are orthogonalized rounding "
          "noise: the results are reproducible only in PolyBench's order of operations, which the float32 "
          "reference follows; a compiler that reorders the sums over i (or contracts a*b+c into an fma) "
          "changes those columns, at every size"))


# -- lu: A = L*U without pivoting ----------------------------------------------------------------------------
def _lu_exact_factors(rng, n, what):
    lo, up = _unit_lower(rng, n), _upper(rng, n)
    _check_exact(float((np.abs(lo) @ np.abs(up)).max()), what)
    return lo, up


def _lu_init(p, rng, exact):
    n = p["N"]
    if exact:
        # L unit lower, U upper with diagonal in {-2, -1, 1, 2}: the divisions by U's diagonal are exact.
        lo, up = _lu_exact_factors(rng, n, "lu")
        return [n, (lo @ up).astype(np.float32)]
    return [n, _polybench_spd(n).astype(np.float32)]


def _lu_factor(a):
    """Blocked Gaussian elimination without pivoting, in place (float64): PolyBench's L and U, its sums in
    another order."""
    n = a.shape[0]
    for k0 in range(0, n, _BLOCK):
        k1 = min(k0 + _BLOCK, n)
        for k in range(k0, k1):  # the panel (columns k0:k1), right-looking
            a[k + 1:, k] /= a[k, k]
            a[k + 1:, k + 1:k1] -= np.outer(a[k + 1:, k], a[k, k + 1:k1])
        for k in range(k0, k1):  # U's rows k0:k1 right of the panel: L11^-1 * A12
            a[k + 1:k1, k1:] -= np.outer(a[k + 1:k1, k], a[k, k1:])
        a[k1:, k1:] -= a[k1:, k0:k1] @ a[k0:k1, k1:]


def _lu_ref(n, A):
    a = A.astype(np.float64)
    _lu_factor(a)
    A[:] = a.astype(np.float32)


register(Kernel(
    "lu", "linear-algebra/solvers", ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _lu_init, _lu_ref,
    flops=lambda p: p["N"] ** 2 * (p["N"] - 1.0) - p["N"] * (p["N"] - 1.0) * (2 * p["N"] - 1) / 6,
    bytes=lambda p: 4.0 * 2 * p["N"] ** 2,
    exact_ok=True, outputs=("A",),
    notes="exact data: A = L*U with integer unit lower L and integer upper U, diagonal in {-2, -1, 1, 2}: "
          "the divisions are exact"))


# -- ludcmp: LU, then L*y = b and U*x = y ----------------------------------------------------------------------
def _ludcmp_init(p, rng, exact):
    n = p["N"]
    if exact:
        # b = L*U*x0 for integer x0: y = U*x0 and x = x0, every division exact.
        lo, up = _lu_exact_factors(rng, n, "ludcmp")
        x0 = small_ints(rng, n, -1, 1).astype(np.float64)
        _check_exact(float((np.abs(lo) @ (np.abs(up) @ np.abs(x0))).max()), "ludcmp")
        return [n, (lo @ up).astype(np.float32), (lo @ (up @ x0)).astype(np.float32), np.zeros(n, np.float32),
                np.zeros(n, np.float32)]
    fn = np.float64(n)
    b = (np.arange(n) + 1) / fn / 2.0 + 4
    return [n, _polybench_spd(n).astype(np.float32), b.astype(np.float32), np.zeros(n, np.float32),
            np.zeros(n, np.float32)]


def _ludcmp_ref(n, A, b, x, y):
    a = A.astype(np.float64)
    _lu_factor(a)
    yy = b.astype(np.float64)
    for i in range(n):
        yy[i] -= a[i, :i] @ yy[:i]
    xx = yy.copy()
    for i in range(n - 1, -1, -1):
        xx[i] = (xx[i] - a[i, i + 1:] @ xx[i + 1:]) / a[i, i]
    A[:] = a.astype(np.float32)
    y[:] = yy.astype(np.float32)
    x[:] = xx.astype(np.float32)


register(Kernel(
    "ludcmp", "linear-algebra/solvers", ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _ludcmp_init, _ludcmp_ref,
    flops=lambda p: (p["N"] ** 2 * (p["N"] - 1.0) - p["N"] * (p["N"] - 1.0) * (2 * p["N"] - 1) / 6
                     + 2.0 * p["N"] * (p["N"] - 1) + p["N"]),
    bytes=lambda p: 4.0 * (2 * p["N"] ** 2 + 3 * p["N"]),
    exact_ok=True, outputs=("A", "x", "y"),
    notes="exact data: A = L*U as for lu, b = A*x0 for integer x0: the substitutions divide exactly"))


# -- trisolv: L*x = b by forward substitution ----------------------------------------------------------------
def _trisolv_init(p, rng, exact):
    n = p["N"]
    if exact:
        # b = L*x0 for integer x0, L's diagonal in {-2, -1, 1, 2}: x = x0, every division exact.
        lo = np.tril(rng.integers(-2, 3, size=(n, n)), -1).astype(np.float64)
        lo += np.diag(rng.choice([-2.0, -1.0, 1.0, 2.0], size=n))
        x0 = small_ints(rng, n).astype(np.float64)
        _check_exact(float((np.abs(lo) @ np.abs(x0)).max()), "trisolv")
        return [n, lo.astype(np.float32), np.full(n, -999, np.float32), (lo @ x0).astype(np.float32)]
    i, j = np.indices((n, n), dtype=np.float64)
    lo = np.where(j <= i, (i + n - j + 1) * 2 / n, 0.0)
    return [n, lo.astype(np.float32), np.full(n, -999, np.float32), np.arange(n).astype(np.float32)]


def _trisolv_ref(n, L, x, b):
    lo, xx = L.astype(np.float64), b.astype(np.float64)
    for i in range(n):
        xx[i] = (xx[i] - lo[i, :i] @ xx[:i]) / lo[i, i]
    x[:] = xx.astype(np.float32)


register(Kernel(
    "trisolv", "linear-algebra/solvers", ("N",),
    {"MINI": {"N": 40}, "SMALL": {"N": 120}, "LARGE": {"N": 2000}},
    _trisolv_init, _trisolv_ref,
    flops=lambda p: float(p["N"] ** 2),
    bytes=lambda p: 4.0 * (p["N"] * (p["N"] + 1) / 2 + 2 * p["N"]),
    exact_ok=True, outputs=("x",),
    notes="exact data: b = L*x0 for integer L (diagonal in {-2, -1, 1, 2}) and x0: the divisions are exact"))
