"""Loop transformations: ``affine-loop-tile``, ``-permute``, ``-unroll``, ``-unroll-jam``, ``-normalize``,
``-skew``, ``-sink``, ``affine-loop-invariant-code-motion``, ``affine-parallelize``."""

from __future__ import annotations

from .licm import LoopInvariantCodeMotion, hoist_invariants_in, hoist_loop_invariants
from .normalize import (
    LoopNormalize,
    is_normalized,
    normalize_loop,
    promote_single_iteration_composing_bound,
    substitute_value,
)
from .parallelize import PARALLEL_REDUCTION_KINDS, AffineParallelize, check_parallel, parallelize_loop
from .permute import LoopPermute, check_permutation, interchange_loops, permute_loops, permuted_order
from .permute_bounds import BoundsError, permuted_bounds
from .permute_choice import choose_permutation, innermost_score
from .sink import LoopSink, sink_into_using_loops
from .skew import LoopSkew, SkewResult, check_skew, has_parallel_loop, skew_band
from .tile import LoopTile, TileResult, check_tiling, normalize_tile_sizes, tile_band
from .tile_bounds import Extent, extent, separate_full_tiles, trip_divisor
from .tile_model import cache_capacities, model_tile_sizes
from .unroll import (
    CleanupBounds,
    LoopUnroll,
    UnrollResult,
    check_unrolled_step,
    cleanup_bounds,
    promote_single_iteration_materializing_bound,
    split_cleanup_loop,
    unroll_by_factor,
    unroll_full,
    unroll_up_to_factor,
)
from .unroll_jam import LoopUnrollAndJam, UnrollJamResult, jam_structure, unroll_jam_by_factor

# Two ways to promote a single-iteration loop, both exported under names that say which; their
# modules' old name promote_if_single_iteration is not exported here (it means a different function
# in each, and canonicalize's in transforms.cleanup is a third).

__all__ = [
    "AffineParallelize", "BoundsError", "CleanupBounds", "Extent", "LoopInvariantCodeMotion", "LoopNormalize",
    "LoopPermute", "LoopSink", "LoopSkew", "LoopTile", "LoopUnroll", "LoopUnrollAndJam", "PARALLEL_REDUCTION_KINDS",
    "SkewResult", "TileResult", "UnrollJamResult", "UnrollResult", "cache_capacities", "check_parallel",
    "check_permutation", "check_skew", "check_tiling", "check_unrolled_step", "choose_permutation", "cleanup_bounds",
    "extent", "has_parallel_loop", "hoist_invariants_in", "hoist_loop_invariants", "innermost_score",
    "interchange_loops", "is_normalized", "jam_structure", "model_tile_sizes", "normalize_loop",
    "normalize_tile_sizes", "parallelize_loop", "permute_loops", "permuted_bounds", "permuted_order",
    "promote_single_iteration_composing_bound", "promote_single_iteration_materializing_bound",
    "separate_full_tiles", "sink_into_using_loops", "skew_band", "split_cleanup_loop",
    "substitute_value", "tile_band", "trip_divisor", "unroll_by_factor", "unroll_full", "unroll_jam_by_factor",
    "unroll_up_to_factor",
]
