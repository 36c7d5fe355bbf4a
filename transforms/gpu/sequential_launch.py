"""The record of a loop nest that ``gpu-map`` had to run on one GPU thread (a 1x1x1 launch).

``gpu-map`` attaches a :class:`SequentialLaunch` to its note (``Decision.detail``) for every
1x1x1 launch it makes, so a program reads why without parsing the message::

    for launch in sequential_launches(pm.trace.decisions):
        launch.function, launch.location, launch.reason, launch.dependence  # RAW %A ... carried by %i

``runtime.compile(target="cuda")`` warns with it (:class:`runtime.SequentialLaunchWarning`)
and ``affine-run`` prints it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from affine_ir import Location

__all__ = ["SequentialLaunch", "sequential_launches"]


@dataclass(frozen=True)
class SequentialLaunch:
    """A 1x1x1 launch of function ``function`` (its name, no ``@``) made from the ops at
    ``location`` (the nest, or the first op of a run), and why: ``reason`` is the note's text
    after ``1x1x1 launch running it sequentially: ``; ``dependence`` the
    :class:`analysis.Dependence` carried by the nest's outermost loop that forbids mapping it
    (None when something else does: an iter_arg, host bounds, merged units, no loop);
    ``holds_loop`` whether the launch holds a loop nest (False: only top-level statements,
    which are no parallel program run on one thread)."""

    function: str
    location: Location | None
    reason: str
    dependence: object = field(default=None, compare=False)
    holds_loop: bool = True

    @property
    def message(self) -> str:
        """``@f: the loop nest at LOC runs on one GPU thread (a 1x1x1 launch): REASON``."""
        return self.describe(located=True)

    def describe(self, located: bool = True) -> str:
        """:attr:`message`, without `` at LOC`` when not ``located`` (a diagnostic prefixed by it)."""
        what = "loop nest" if self.holds_loop else "statements"
        where = f" at {self.location}" if located and self.location else ""
        return f"@{self.function}: the {what}{where} runs on one GPU thread (a 1x1x1 launch): {self.reason}"

    @property
    def diagnostic(self) -> str:
        """``LOC: warning: @f: the loop nest runs on one GPU thread ...``, as compilers print warnings."""
        where = f"{self.location}: " if self.location else ""
        return f"{where}warning: {self.describe(located=False)}"


def sequential_launches(decisions: Iterable) -> list[SequentialLaunch]:
    """The :class:`SequentialLaunch` records of ``decisions`` (pass decisions, e.g. a pipeline
    trace's ``decisions``), in order."""
    return [d.detail for d in decisions if isinstance(getattr(d, "detail", None), SequentialLaunch)]
