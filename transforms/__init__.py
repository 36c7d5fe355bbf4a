"""transforms: the pass manager and the loop transformations (stage S3).

    import transforms
    pm = transforms.PassManager.parse("canonicalize,affine-loop-tile{tile-size=32}")
    out = pm.run(module)        # a new module; pm.trace: IR, time and decisions per pass

Passes take MLIR's names and options (``transforms.all_passes()`` lists them). Each
transform module has a utility that raises :class:`TransformError` on an illegal request
(the IR unchanged) and a pass that records the refusal and goes on.
"""

from __future__ import annotations

from .errors import PipelineError, TransformError
from .pass_base import Decision, Pass, PassContext, PassOption, all_passes, get_pass, option, register_pass
from .pass_manager import PassManager, PassTrace, PipelineTrace
from .pipeline import parse_pipeline

__all__ = [
    "Decision", "Pass", "PassContext", "PassManager", "PassOption", "PassTrace", "PipelineError", "PipelineTrace",
    "TransformError", "all_passes", "get_pass", "option", "parse_pipeline", "register_pass",
]
