"""``affine-check-bounds``: refuse a program whose affine accesses go outside their memrefs.

:func:`verify_bounds` runs :func:`analysis.check_bounds` (isl proves every affine access of
every function inside its memref, or finds a witness) and raises :class:`BoundsError` listing
every definite violation: the first one located, the count of the others::

    file.mlir:4:5: error: affine-check-bounds: 'affine.store' %B[%i] with %i = 4 is outside
    memref<4xf32> (dimension 0 has size 4)

The pass changes nothing. Accesses whose bounds depend on symbol values or dynamic sizes are
noted in the trace (``runtime.compile`` checks them at launch); non-affine ones too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from affine_ir import FuncOp, ModuleOp
from analysis import BoundsViolation, bounds_check

from ..errors import TransformError
from ..pass_base import Pass, PassContext, register_pass

__all__ = ["BoundsError", "CheckBounds", "verify_bounds"]

PASS_NAME = "affine-check-bounds"


class BoundsError(TransformError):
    """Affine accesses that are out of bounds; ``violations`` lists every one, in program order."""

    def __init__(self, violations: Sequence[BoundsViolation]):
        self.violations = tuple(violations)
        first = self.violations[0]
        others = len(self.violations) - 1
        more = f" (and {others} other out-of-bounds access{'es' if others > 1 else ''})" if others else ""
        super().__init__(PASS_NAME, first.reason + more, location=first.location)


def verify_bounds(module_or_func: ModuleOp | FuncOp) -> None:
    """Raise :class:`BoundsError` when an affine access of ``module_or_func`` is out of bounds for
    every symbol value and dynamic size (isl's witness in the message); return otherwise. The IR
    is never changed."""
    funcs = [module_or_func] if isinstance(module_or_func, FuncOp) else \
        [f for f in module_or_func.functions if not f.is_declaration]
    violations = [v for f in funcs for v in bounds_check(f).violations]
    if violations:
        raise BoundsError(violations)


@register_pass
@dataclass(frozen=True)
class CheckBounds(Pass):
    """``affine-check-bounds``: :func:`verify_bounds` on the module; notes what is left to launch time."""

    name = PASS_NAME
    summary = "Prove with isl that every affine access lies inside its memref"

    def run_on_module(self, module: ModuleOp, ctx: PassContext) -> None:
        violations = []
        for func in module.functions:
            if func.is_declaration:
                continue
            check = bounds_check(func)
            violations += check.violations
            if check.launch_checks:
                ctx.note(func, f"@{func.sym_name}: {len(check.launch_checks)} access(es) depend on symbols or "
                               f"dynamic sizes: checked at launch")
            if check.unchecked:
                ctx.note(func, f"@{func.sym_name}: {len(check.unchecked)} access(es) not affine or not decidable "
                               f"statically: not checked")
        if violations:
            raise BoundsError(violations)
