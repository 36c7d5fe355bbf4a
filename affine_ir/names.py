"""Unique identifiers: what every printer of names (the MLIR printer's value names aside) shares."""

from __future__ import annotations

__all__ = ["unique_name"]


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``... the first not in ``taken``; it is added to ``taken``."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name
