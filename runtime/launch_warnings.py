"""Warnings about what a compiled program will do badly: :class:`SequentialLaunchWarning`.

A GPU compiler must not quietly run a parallel program on one thread: when ``gpu-map`` has to
make a 1x1x1 launch of a loop nest, :func:`warn_sequential_launches` (called by
``runtime.compile(target="cuda")``) warns once per such launch with the reason the pass
recorded (:class:`transforms.gpu.SequentialLaunch`: the dependence that forbids mapping it).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterable

from transforms.gpu import SequentialLaunch, sequential_launches

__all__ = ["SequentialLaunchWarning", "warn_sequential_launches"]

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))


class SequentialLaunchWarning(UserWarning):
    """A loop nest compiled to a 1x1x1 GPU launch (one thread runs it all). ``launch``: the
    :class:`transforms.gpu.SequentialLaunch` record (function, location, reason, dependence)."""

    def __init__(self, launch: SequentialLaunch):
        super().__init__(launch.message)
        self.launch = launch


def warn_sequential_launches(decisions: Iterable) -> list[SequentialLaunch]:
    """Warn (:class:`SequentialLaunchWarning`, attributed to the first caller outside the
    runtime package) for each 1x1x1 launch among the pass ``decisions`` that holds a loop nest,
    and return those records. A launch of top-level statements alone (no loop) is no parallel
    program run on one thread: it gets no warning."""
    launches = [s for s in sequential_launches(decisions) if s.holds_loop]
    level = _caller_stacklevel()
    for launch in launches:
        warnings.warn(SequentialLaunchWarning(launch), stacklevel=level)
    return launches


def _caller_stacklevel() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in this module's caller's callee) naming the
    first frame whose code lies outside the runtime package."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _RUNTIME_DIR:
        frame, level = frame.f_back, level + 1
    return level
