"""GPU stage: ``gpu-schedule`` (tiled contraction kernels), ``gpu-map-reductions`` (row reductions) and
``gpu-map`` (parallel loops to blocks x threads)."""

from __future__ import annotations

from .gpu_map import (
    DEFAULT_BLOCK_SIZES,
    MAX_GRID,
    FunctionPlan,
    GpuMap,
    check_host_function,
    map_function,
    plan_function,
)
from .gpu_map_nest import (
    BandDim,
    HostPlan,
    MappedNest,
    NestPlan,
    check_block_sizes,
    map_nest,
    map_sequentially,
    new_launch,
    parallel_band,
    plan_nest,
    privatize_allocs,
)
from .gpu_reduce import GpuMapReductions, MappedRows, map_row_reductions, map_rows
from .gpu_reduce_loops import check_row_loop
from .gpu_reduce_plan import (
    COMBINING_KINDS,
    DEFAULT_BLOCK_SIZE,
    RowPlan,
    RowReduction,
    block_size_for,
    plan_row_reductions,
    thread_per_row_reason,
)
from .schedule_gpu import (
    Contraction,
    GpuSchedule,
    TileConfig,
    choose_schedule,
    estimate_seconds,
    partial_tile_reason,
    plan_contraction,
    schedule_contraction,
    split_reason,
)
from .sequential_launch import SequentialLaunch, sequential_launches

__all__ = [
    "BandDim", "COMBINING_KINDS", "Contraction", "DEFAULT_BLOCK_SIZE", "DEFAULT_BLOCK_SIZES", "FunctionPlan",
    "GpuMap", "GpuMapReductions", "GpuSchedule", "HostPlan", "MAX_GRID", "MappedNest", "MappedRows", "NestPlan",
    "RowPlan", "RowReduction", "SequentialLaunch", "TileConfig", "block_size_for", "check_block_sizes",
    "check_host_function", "check_row_loop", "choose_schedule", "estimate_seconds", "map_function", "map_nest",
    "map_row_reductions", "map_rows", "map_sequentially", "new_launch", "parallel_band", "partial_tile_reason",
    "plan_contraction", "plan_function", "plan_nest", "plan_row_reductions", "privatize_allocs",
    "schedule_contraction", "sequential_launches", "split_reason", "thread_per_row_reason",
]
