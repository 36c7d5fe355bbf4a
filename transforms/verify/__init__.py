"""Checking passes: ``affine-check-bounds`` (every access inside its memref, proved with isl)."""

from __future__ import annotations

from .check_bounds import BoundsError, CheckBounds, verify_bounds

__all__ = [
    "BoundsError", "CheckBounds", "verify_bounds",
]
