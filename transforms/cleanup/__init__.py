"""Clean-up passes: ``canonicalize`` (folding, map and loop simplification), ``cse``, ``dce``."""

from __future__ import annotations

from analysis.ranges import RangeContext, max_opt, min_opt

from .canonicalize import (
    Canonicalize,
    canonicalize,
    fold_constant_operands,
    has_side_effects,
    hoist_constants,
    simplify_loop_bounds,
    summary_text,
)
from .canonicalize_fold import COMMUTATIVE, constant_value, fold_op, is_constant
from .canonicalize_loops import (
    erase_unused_iter_args,
    fold_empty_loop,
    fold_if,
    inline_block_before,
    promote_if_single_iteration,
    remove_if_zero_trip,
    trip_count_range,
)
from .canonicalize_maps import MapKind, canonical_map, canonical_set
from .canonicalize_patterns import CanonicalizeState, canonicalization_patterns, fold_arith
from .cse import CommonSubexpressionElimination, eliminate_common_subexpressions, equivalence_key
from .dce import (
    DeadCodeElimination,
    eliminate_dead_code,
    erase_trivially_dead_ops,
    erase_write_only_allocations,
    has_only_read_effects,
    is_trivially_dead,
    write_only_allocations,
)

__all__ = [
    "COMMUTATIVE", "Canonicalize", "CanonicalizeState", "CommonSubexpressionElimination", "DeadCodeElimination",
    "MapKind", "RangeContext", "canonical_map", "canonical_set", "canonicalization_patterns", "canonicalize",
    "constant_value", "eliminate_common_subexpressions", "eliminate_dead_code", "equivalence_key",
    "erase_trivially_dead_ops", "erase_unused_iter_args", "erase_write_only_allocations", "fold_constant_operands",
    "fold_empty_loop", "fold_arith", "fold_if", "fold_op", "has_only_read_effects", "has_side_effects",
    "hoist_constants", "inline_block_before", "is_constant", "is_trivially_dead", "max_opt", "min_opt",
    "promote_if_single_iteration", "remove_if_zero_trip", "simplify_loop_bounds", "summary_text", "trip_count_range",
    "write_only_allocations",
]
