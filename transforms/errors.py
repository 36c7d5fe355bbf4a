"""Errors of the transforms layer.

:class:`TransformError` is an illegal or impossible transformation request: its message
names the pass, the loops and the dependence or resource that forbids it, and the IR is
left as it was; its :class:`RefusalKind` says what kind of reason it is, so that a caller
decides on the kind, never on the wording of the message. :class:`PipelineError` is a bad
pass-pipeline text or option value.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from affine_ir import IRError, Location, Operation


class RefusalKind(enum.Enum):
    """What kind of reason refuses a transformation (:attr:`TransformError.kind`).

    Set where the refusal is made; a caller that decides what to try next (fusion stops at the
    first depth past the consumer's loops, and after a depth without dependence) tests the kind.
    The message text is for people and may change without changing any decision.
    """

    OTHER = "other"  #: not classified further
    INVALID_REQUEST = "invalid-request"  #: the ops or arguments cannot be transformed as asked
    NO_DEPENDENCE = "no-dependence"  #: nothing flows between the ops concerned (fusion: so at every depth)
    DEPTH_EXCEEDS = "depth-exceeds"  #: a depth beyond the loops there are (fusion: every deeper one too)
    DEPENDENCE = "dependence"  #: a dependence would be violated
    UNSUPPORTED = "unsupported"  #: a construct the transformation cannot handle (non-affine, structure)
    UNPROFITABLE = "unprofitable"  #: legal, but the cost model rejects it


class TransformError(IRError):
    """A refused transformation request; the IR is unchanged.

    ``pass_name``: the pass (MLIR name) whose utility refused; ``reason``: why, naming the
    loops and the dependence or resource; ``loops``: the loops concerned; ``dependence``:
    the violated :class:`analysis.Dependence`, when one is the reason; ``kind``: the
    :class:`RefusalKind` of the reason (``OTHER`` unless the refusing code says). The message reads
    ``affine-loop-tile: cannot tile (%i, %j): RAW %A: S0 (...) -> S1 (...) carried by %i, distance (1, -1)``.
    """

    def __init__(self, pass_name: str, reason: str, *, loops: Sequence[Operation] = (), dependence=None,
                 location: Location | None = None, kind: RefusalKind = RefusalKind.OTHER):
        self.pass_name = pass_name
        self.reason = reason
        self.kind = kind
        self.loops = tuple(loops)
        self.dependence = dependence
        if location is None and self.loops:
            location = self.loops[0].location
        super().__init__(f"{pass_name}: {reason}", location)


class PipelineError(IRError):
    """A pass-pipeline text that cannot be parsed, an unknown pass or option, a bad option value.

    ``column`` (1-based) points into the pipeline text when known.
    """

    def __init__(self, message: str, text: str = "", column: int | None = None):
        self.text = text
        self.column = column
        if column is not None and text:
            message = f"{message}\n  {text}\n  {' ' * (column - 1)}^"
        super().__init__(message)
