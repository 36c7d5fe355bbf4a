"""Old home of the value-range analysis: it is :mod:`analysis.ranges` now (re-exported here for
scripts that import this path)."""

from __future__ import annotations

from analysis.ranges import RangeContext, max_opt, min_opt

__all__ = ["RangeContext", "max_opt", "min_opt"]
