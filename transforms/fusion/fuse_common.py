"""What producer-consumer (:mod:`.fuse`) and sibling (:mod:`.fuse_sibling`) fusion share:
the result record, the refusal records, the pair checks, names of nests and edges for messages."""

from __future__ import annotations

from dataclasses import dataclass, field

from affine_ir import FuncOp, Operation
from affine_ir.dialects.affine import AffineForOp
from analysis import DependenceGraph

from ..errors import RefusalKind, TransformError
from ..loop_utils import at_location, enclosing_function, loop_name, value_name
from .fuse_private import PrivateBuffer

__all__ = ["PASS", "DepthRefusal", "FusionResult", "between", "check_pair", "edge_text", "nest_name", "only_inner_loop",
           "refuse"]

PASS = "affine-loop-fusion"


@dataclass
class FusionResult:
    """What :func:`fuse_loops` did."""

    producer: str
    consumer: str
    depth: int
    slice_text: str
    removed_producer: bool
    moved_consumer: bool
    redundancy: float | None
    private: list[PrivateBuffer] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cost: str = ""  # the work figures and tolerance behind ``redundancy``

    def __str__(self) -> str:
        what = "" if self.removed_producer else " (producer kept)"
        return f"fused {self.producer} into {self.consumer} at depth {self.depth}{what}"


@dataclass(frozen=True)
class DepthRefusal:
    """Why fusion is illegal at one depth: ``kind`` (what decisions test: e.g. DEPTH_EXCEEDS
    ends the search over depths) and ``reason`` (the message, for people)."""

    kind: RefusalKind
    reason: str

    def __str__(self) -> str:
        return self.reason


def nest_name(op: Operation) -> str:
    """``the nest %i at f.mlir:3:3`` or, without a location, ``nest 2 (%i)`` (its rank among
    the top-level loops)."""
    if op.location:
        return f"{loop_name(op)}{at_location(op)}"
    block = op.parent
    rank = sum(isinstance(o, AffineForOp) for o in block.ops[: block.index_of(op)]) + 1 if block else 0
    return f"nest {rank} ({loop_name(op)})"


def refuse(src: Operation, dst: Operation, reason: str, kind: RefusalKind = RefusalKind.OTHER) -> TransformError:
    """The refusal to fuse ``src`` into ``dst``: ``cannot fuse <src> into <dst>: <reason>``, of ``kind``."""
    return TransformError(PASS, f"cannot fuse {nest_name(src)} into {nest_name(dst)}: {reason}", loops=(dst, src),
                          kind=kind)


# -- checks ----------------------------------------------------------------------------------------
def check_pair(src: Operation, dst: Operation) -> FuncOp:
    for op, role in ((src, "producer"), (dst, "consumer")):
        if not isinstance(op, AffineForOp):
            raise TransformError(PASS, f"the {role} '{op.name}'{at_location(op)} is not an affine.for",
                                 kind=RefusalKind.INVALID_REQUEST)
        if op.results:
            raise refuse(src, dst, f"the {role} {loop_name(op)} has results (iter_args at the top level)",
                         RefusalKind.UNSUPPORTED)
    func = enclosing_function(src)
    if func is None or src.parent is not func.body or dst.parent is not func.body:
        raise refuse(src, dst, "both nests must be top-level loops of one function", RefusalKind.INVALID_REQUEST)
    if func.body.index_of(src) >= func.body.index_of(dst):
        raise refuse(src, dst, "the producer does not precede the consumer", RefusalKind.INVALID_REQUEST)
    return func


def between(graph: DependenceGraph, a: Operation, b: Operation) -> list:
    na, nb = graph.node(a).id, graph.node(b).id
    return graph.nodes[na + 1 : nb]


def edge_text(graph: DependenceGraph, e) -> str:
    src, dst = graph.nodes[e.src].op, graph.nodes[e.dst].op
    return f"{e.kind} on {value_name(e.value)} from '{src.name}'{at_location(src)} to '{dst.name}'{at_location(dst)}"




def only_inner_loop(loop: AffineForOp) -> AffineForOp | None:
    """The loop that is the only op of ``loop``'s body (besides the yield), or None."""
    ops = [op for op in loop.body.ops if not op.is_terminator]
    return ops[0] if len(ops) == 1 and isinstance(ops[0], AffineForOp) else None
