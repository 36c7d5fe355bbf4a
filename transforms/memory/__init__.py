"""Memory passes: ``affine-privatize`` (one buffer per loop iteration), ``affine-scalrep`` (scalar
replacement), ``affine-data-copy-generate`` (on-chip copies)."""

from __future__ import annotations

from .copy_generation import AffineDataCopyGenerate, CopyBuffer, CopyResult, generate_copies, parse_memory_space
from .copy_generation_nests import (
    ACCESS_OPS,
    CopyBounds,
    build_copy_nest,
    compact_map,
    copy_bounds,
    iv_ranges,
    rewrite_access,
)
from .privatize import Privatize, privatize_buffers, sink_allocation
from .scalrep import (
    ScalarReplacement,
    ScalrepCounts,
    eliminate_dead_stores,
    eliminate_redundant_loads,
    forward_stores,
    promote_reduction,
    promote_reductions_to_iter_args,
    remove_dead_allocs,
    replace_scalars,
    same_element,
)

__all__ = [
    "ACCESS_OPS", "AffineDataCopyGenerate", "CopyBounds", "CopyBuffer", "CopyResult", "ScalarReplacement",
    "ScalrepCounts", "Privatize", "privatize_buffers", "sink_allocation",
    "build_copy_nest", "compact_map", "copy_bounds", "eliminate_dead_stores",
    "eliminate_redundant_loads", "forward_stores", "generate_copies", "iv_ranges", "parse_memory_space",
    "promote_reduction", "promote_reductions_to_iter_args", "remove_dead_allocs", "replace_scalars",
    "rewrite_access", "same_element",
]
