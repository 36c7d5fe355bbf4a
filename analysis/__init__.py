"""analysis: exact polyhedral analysis of affine IR with islpy (the only package importing islpy)."""

from __future__ import annotations

from .isl_bridge import Scop, Statement, UnsupportedError, aff_to_expr, expr_to_isl

__all__ = ["Scop", "Statement", "UnsupportedError", "aff_to_expr", "expr_to_isl"]
