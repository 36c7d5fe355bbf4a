"""CPU stage: ``cpu-schedule`` (cache and register tiles ranked by the cost model) and
``affine-super-vectorize``."""

from __future__ import annotations

from .schedule_cpu import CPUSchedule, RegisterTile, plan_register_tile, schedule_nest, vector_lanes
from .vectorize import SuperVectorize, VectorizeResult, vectorize_check, vectorize_loop
from .vectorize_plan import VECTOR_REDUCTION_KINDS, VectorizePlan, plan_vectorization

__all__ = [
    "CPUSchedule", "RegisterTile", "SuperVectorize", "VECTOR_REDUCTION_KINDS", "VectorizePlan", "VectorizeResult",
    "plan_register_tile", "plan_vectorization", "schedule_nest", "vector_lanes", "vectorize_check",
    "vectorize_loop",
]
