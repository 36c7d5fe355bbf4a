"""Facts about loop bounds shared by the printers: when ``iv += step`` after a loop's last
iteration may pass INT64_MAX (then the loop must count its iterations instead)."""

from __future__ import annotations

from affine_ir.affine_map import AffineMap
from affine_ir.types import INT64_MAX

__all__ = ["INT64_MAX", "constant_upper_limit", "may_step_past_int64"]


def constant_upper_limit(m: AffineMap) -> int | None:
    """The least constant result of the upper-bound map ``m`` (the loop's bound is the min of the
    results, so it is at most that), or None when no result is constant."""
    consts = [e.constant_term for e in m.results if e.is_constant]
    return min(consts) if consts else None


def may_step_past_int64(lb: int | None, ub: int | None, step: int, ub_limit: int | None = None) -> bool:
    """Whether ``iv += step`` after the last iteration of ``for iv = lb; iv < ub`` can pass
    INT64_MAX (``lb``/``ub``: their values when constant, else None): never for step 1
    (``iv < ub <= INT64_MAX``), nor when the upper bound is at most ``ub_limit`` with
    ``ub_limit - 1 + step`` in range, nor for constant bounds whose last IV plus the step fits;
    possibly otherwise."""
    if step == 1 or (ub_limit is not None and ub_limit - 1 + step <= INT64_MAX):
        return False
    if lb is not None and ub is not None:
        return ub > lb and lb + ((ub - lb - 1) // step + 1) * step > INT64_MAX
    return True
