"""The ``affine`` dialect: loops, conditionals and accesses whose indices are affine maps.

The ops live in one module per kind; this module gathers them under one name:

- ``affine_symbols``: MLIR's rules for valid dims and symbols (``is_valid_dim``,
  ``is_valid_symbol``, ``affine_scope``), map operand checks, ``canonical_ssa_map``;
- ``affine_loops``: ``affine.for``, ``affine.if``, ``affine.yield``;
- ``affine_access``: ``affine.load/store/vector_load/vector_store``;
- ``affine_apply``: ``affine.apply/min/max`` (their common base ``AffineMapValueOp``);
- ``affine_parallel``: ``affine.parallel``.
"""

from __future__ import annotations

from .affine_access import (
    AffineLoadOp,
    AffineStoreOp,
    AffineVectorLoadOp,
    AffineVectorStoreOp,
)
from .affine_apply import AffineApplyOp, AffineMapValueOp, AffineMaxOp, AffineMinOp
from .affine_loops import AffineForOp, AffineIfOp, AffineYieldOp, ensure_yield
from .affine_parallel import REDUCTIONS, AffineParallelOp
from .affine_symbols import affine_scope, canonical_ssa_map, is_valid_dim, is_valid_symbol

__all__ = [
    "REDUCTIONS", "AffineApplyOp", "AffineMapValueOp", "AffineForOp", "AffineIfOp", "AffineLoadOp", "AffineMaxOp",
    "AffineMinOp", "AffineParallelOp", "AffineStoreOp", "AffineVectorLoadOp", "AffineVectorStoreOp",
    "AffineYieldOp", "affine_scope", "canonical_ssa_map", "ensure_yield",
    "is_valid_dim", "is_valid_symbol",
]
