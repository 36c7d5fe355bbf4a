"""analysis: exact polyhedral analysis of affine IR (islpy), targets and the cost model.

This is the only package that imports islpy (through :mod:`analysis.isl_bridge`).

- Dependences: :func:`dependences` (RAW/WAR/WAW, RAR on request; exact relations, carried
  depth, distance ranges), :class:`DependenceGraph` (top-level nests over memrefs, for
  fusion), :func:`memref_dependence_remarks` (MLIR's ``-test-memref-dependence-check``).
- Loop properties: :func:`is_parallel`, :func:`parallel_decision`, :func:`reduction_kind`,
  :func:`perfect_band`, :func:`permutable_bands`, trip counts (:func:`always_runs`,
  :func:`runs_at_most_once`); :func:`permutation_violation`
  (exact legality of a loop permutation against one dependence); :func:`plan_skew` (the skew and
  wavefront of a band that make its inner loops parallel, with the new bounds).
- Memory: :func:`memref_region` (footprint box of a memref below a loop),
  :func:`compute_slice` (the producer iterations a consumer iteration needs, for fusion),
  :func:`check_fusion` (which dependences fusing at a slice keeps), :func:`reads_covered_within`.
- Value ranges: :class:`RangeContext` (intervals and bounds of index values where they are
  used; what canonicalization and the CUDA printer simplify with).
- Bounds: :func:`check_bounds` (affine accesses definitely outside their memref, with an isl
  witness), :func:`bounds_check` (also the checks left for launch time, :class:`LaunchCheck`).
- Targets: :func:`target`, :func:`gpu_target`, :func:`host_cpu`, ``H200``/``H100``/``A100``.
- Cost model v1: :func:`estimate_cost`, :func:`rank_tile_sizes`,
  :func:`tile_sizes_for_capacity`.
"""

from __future__ import annotations

from .band_box import BandBox, band_box
from .bounds import BoundsCheck, BoundsViolation, LaunchCheck, ParamSource, bounds_check, check_bounds
from .cost_model import (
    CostReport,
    MemoryLevel,
    estimate_cost,
    memory_levels,
    rank_tile_sizes,
    tile_sizes_for_capacity,
    tile_working_set,
)
from .dependence_check import format_remarks, memref_dependence_remarks
from .dependence_graph import DependenceGraph, Edge, Node
from .dependences import Dependence, DependenceAnalysis, format_range
from .dependences import dependences as dependences  # noqa: PLC0414  (the function shadows the module)
from .fusion import FusionCheck, check_fusion, reads_covered_within
from .isl_bridge import Scop, Statement, UnsupportedError
from .loops import (
    ParallelDecision,
    Reduction,
    always_runs,
    constant_trip_count,
    is_parallel,
    is_permutable,
    iter_arg_reduction,
    loop_reductions,
    may_hold_at,
    parallel_decision,
    perfect_band,
    permutable_bands,
    reduction_identity,
    reduction_kind,
    runs_at_most_once,
    trip_count_expr,
)
from .nest_model import DEFAULT_SYMBOL_VALUE
from .permutation import permutation_violation
from .privatization import CopyOutScope, PrivateScope, copy_out_scope, private_scope
from .ranges import RangeContext
from .regions import MemRefRegion, element_size_in_bytes, memref_region
from .skew import SkewPlan, SkewRefusal, find_skew, plan_skew, wavefront_matrix
from .slices import ComputationSlice, SliceError, SliceErrorKind, compute_slice
from .targets import A100, H100, H200, TARGETS, CPUTarget, GPUTarget, Target, gpu_target, host_cpu, target

__all__ = [
    "A100", "BandBox", "band_box",
    "BoundsCheck", "BoundsViolation", "LaunchCheck", "ParamSource", "bounds_check", "check_bounds",
    "ComputationSlice", "FusionCheck", "check_fusion", "reads_covered_within",
    "MemRefRegion", "RangeContext", "SliceError", "SliceErrorKind", "compute_slice", "element_size_in_bytes",
    "memref_region", "DEFAULT_SYMBOL_VALUE", "H100", "H200", "TARGETS", "CPUTarget", "CostReport", "Dependence",
    "DependenceAnalysis", "DependenceGraph", "Edge", "GPUTarget", "MemoryLevel", "Node", "ParallelDecision",
    "Reduction", "Scop", "always_runs", "Statement", "Target", "UnsupportedError", "constant_trip_count", "dependences",
    "estimate_cost", "format_range", "format_remarks", "gpu_target", "host_cpu", "is_parallel", "is_permutable",
    "iter_arg_reduction", "loop_reductions", "memory_levels", "memref_dependence_remarks", "parallel_decision",
    "perfect_band", "CopyOutScope", "copy_out_scope", "PrivateScope", "private_scope",
    "permutable_bands", "permutation_violation", "rank_tile_sizes", "reduction_identity", "reduction_kind", "target",
    "tile_sizes_for_capacity", "tile_working_set", "trip_count_expr",
    "may_hold_at", "runs_at_most_once", "SkewPlan", "SkewRefusal", "find_skew", "plan_skew", "wavefront_matrix",
]
