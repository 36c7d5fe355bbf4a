"""Loop fusion: ``affine-loop-fusion`` (producer-consumer slicing with private buffers, sibling fusion) and
``affine-reduce-reduce-fusion`` (a reduction with the later sums that read it, rebased: online softmax)."""

from __future__ import annotations

from .fuse import FusionCandidate, LoopFusion, extra_computation, fuse_loops, fusion_candidates, fusion_refusals
from .fuse_common import (
    PASS,
    DepthRefusal,
    FusionResult,
    between,
    check_pair,
    edge_text,
    nest_name,
    only_inner_loop,
    refuse,
)
from .fuse_private import PrivateBuffer, private_candidates, private_candidates_kept, privatize
from .fuse_reductions import ReduceReduceFusion, fuse_reductions, plan_reduce_reduce, reduce_reduce_candidates
from .fuse_sibling import fuse_siblings
from .fuse_slice import insert_slice

__all__ = [
    "DepthRefusal", "FusionCandidate", "ReduceReduceFusion", "fuse_reductions", "plan_reduce_reduce",
    "reduce_reduce_candidates", "FusionResult", "LoopFusion", "PASS", "PrivateBuffer", "between", "check_pair",
    "edge_text", "extra_computation", "fuse_loops", "fuse_siblings", "fusion_candidates", "fusion_refusals",
    "insert_slice", "nest_name", "only_inner_loop", "private_candidates", "private_candidates_kept", "privatize",
    "refuse",
]
