"""Loop fusion: ``affine-loop-fusion`` (producer-consumer slicing with private buffers, sibling fusion)."""

from __future__ import annotations

from .fuse import FusionCandidate, LoopFusion, extra_computation, fuse_loops, fusion_candidates
from .fuse_common import PASS, FusionResult, between, check_pair, edge_text, nest_name, only_inner_loop, refuse
from .fuse_private import PrivateBuffer, private_candidates, private_candidates_kept, privatize
from .fuse_sibling import fuse_siblings
from .fuse_slice import insert_slice

__all__ = [
    "FusionCandidate", "FusionResult", "LoopFusion", "PASS", "PrivateBuffer", "between", "check_pair", "edge_text",
    "extra_computation", "fuse_loops", "fuse_siblings", "fusion_candidates", "insert_slice", "nest_name",
    "only_inner_loop", "private_candidates", "private_candidates_kept", "privatize", "refuse",
]
