"""Bounds checks of :func:`runtime.compile`: refuse at compile time what is definitely out of
bounds, and check at launch what depends on the call's values.

:func:`compile_time_guard` runs :func:`analysis.bounds_check` on every function of the input
(before any pass: that is where affine structure is clearest, and the passes preserve
semantics). A definite violation raises :class:`BoundsCompileError` (a ``CompileError``) with
isl's located witness. The accesses of the entry function whose bounds depend on index
arguments or dynamic sizes become a :class:`LaunchGuard`: the executable calls it with the
arguments before running anything and raises :class:`BoundsLaunchError` (a ``LaunchError``)
with the same message when they would make an access go out of bounds.

The ``check_bounds=True`` CPU debug build (every load and store checks its indices, see
:func:`runtime.cpu.compile`) covers what isl cannot see: ``memref.load/store`` and affine
accesses whose indices are not affine in known values.
"""

from __future__ import annotations

from collections.abc import Sequence

from affine_ir import FuncOp, ModuleOp
from analysis import BoundsCheck, BoundsViolation, bounds_check

from .entry import entry_function
from .errors import CompileError, LaunchError

__all__ = ["BoundsCompileError", "BoundsLaunchError", "LaunchGuard", "compile_time_guard"]


def _summary(violations: Sequence[BoundsViolation]) -> str:
    others = len(violations) - 1
    more = f" (and {others} other out-of-bounds access{'es' if others > 1 else ''})" if others else ""
    return violations[0].reason + more


class BoundsCompileError(CompileError):
    """Affine accesses out of bounds for every argument value; ``violations`` lists them all."""

    def __init__(self, violations: Sequence[BoundsViolation]):
        self.violations = tuple(violations)
        super().__init__(_summary(self.violations), self.violations[0].location)


class BoundsLaunchError(LaunchError):
    """Arguments that would make affine accesses go out of bounds; ``violations`` lists them."""

    def __init__(self, violations: Sequence[BoundsViolation]):
        self.violations = tuple(violations)
        super().__init__(_summary(self.violations), self.violations[0].location)


class LaunchGuard:
    """The launch-time bounds checks of one function (see the module docs); cheap after the first
    call with given index values and shapes (isl's answer is cached per tuple)."""

    def __init__(self, check: BoundsCheck):
        self.check = check

    def __call__(self, args: Sequence) -> None:
        """Raise :class:`BoundsLaunchError` when ``args`` (already checked for count, types and
        ranks) would make an affine access go out of bounds."""
        violations = self.check.violations_at(args)
        if violations:
            raise BoundsLaunchError(violations)


def compile_time_guard(module: ModuleOp | FuncOp, fn: str | None) -> LaunchGuard | None:
    """Raise :class:`BoundsCompileError` when an affine access of a function of ``module`` is
    out of bounds whatever the arguments; return the launch guard of the entry function ``fn``
    (None when it needs none, or when the entry is ambiguous: the backend then says so)."""
    funcs = [module] if isinstance(module, FuncOp) else [f for f in module.functions if not f.is_declaration]
    checks = {f: bounds_check(f) for f in funcs}
    violations = [v for c in checks.values() for v in c.violations]
    if violations:
        raise BoundsCompileError(violations)
    try:
        entry = module if isinstance(module, FuncOp) else entry_function(module, fn)
    except CompileError:
        return None
    check = checks.get(entry)
    return LaunchGuard(check) if check is not None and check.launch_checks else None
