"""Two-phase reductions (``gpu-map-reductions``): per-block partial results, then a fixed-order combine."""

from __future__ import annotations

from affine_ir import Operation
from analysis.targets import DEFAULT_GPU, GPUTarget

from .gpu_map_nest import HostPlan
from .gpu_reduce_plan import DEFAULT_BLOCK_SIZE
from .gpu_reduce_units import MappedUnit, map_one_block, plan_unit

__all__ = ["map_unit"]


def map_unit(ops: list[Operation], span: list[Operation], host: HostPlan, block_size: int = DEFAULT_BLOCK_SIZE,
             gpu: GPUTarget = DEFAULT_GPU, atomic: bool = False) -> MappedUnit:
    """Map the unit ``ops`` (``span``: its top-level ops from the first to the last) to one block or a
    two-phase reduction; TransformError (IR unchanged) when it is not a one-row reduction."""
    plan = plan_unit(ops, span, host, block_size, gpu)
    return map_one_block(plan, host, gpu)
