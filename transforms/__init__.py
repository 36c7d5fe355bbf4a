"""transforms: the pass manager and the loop transformations (stage S3).

    import transforms
    pm = transforms.PassManager.parse("canonicalize,affine-loop-tile{tile-size=32}")
    out = pm.run(module)        # a new module; pm.trace: IR, time and decisions per pass

Passes take MLIR's names and options (``transforms.all_passes()`` lists them). Each
transform module has a utility that raises :class:`TransformError` on an illegal request
(the IR unchanged) and a pass that records the refusal and goes on.

The package root holds the infrastructure (pass base and registry, pass manager, pipeline
text, the default pipelines, errors, testing helpers, shared loop utilities); the passes
live in one folder per stage:

- ``transforms.cleanup``: canonicalize, cse, dce
- ``transforms.loops``: tile, permute, skew, unroll, unroll-jam, normalize, LICM, parallelize
- ``transforms.fusion``: affine-loop-fusion
- ``transforms.memory``: scalar replacement, copy generation
- ``transforms.cpu``: cpu-schedule, vectorize
- ``transforms.gpu``: gpu-schedule, gpu-map-reductions, gpu-map
- ``transforms.verify``: affine-check-bounds

Every public name of a stage folder is also an attribute of this package
(``transforms.tile_band``), imported on first use.
"""

from __future__ import annotations

import importlib

from . import moved
from .errors import PipelineError, RefusalKind, TransformError
from .pass_base import Decision, Pass, PassContext, PassOption, all_passes, get_pass, option, register_pass
from .pass_manager import PassManager, PassTrace, PipelineTrace
from .pipeline import parse_pipeline

__all__ = [
    "Decision", "Pass", "PassContext", "PassManager", "PassOption", "PassTrace", "PipelineError", "PipelineTrace",
    "RefusalKind", "TransformError", "all_passes", "get_pass", "option", "parse_pipeline", "register_pass",
]

#: The stage folders, in pipeline order.
STAGES = ("cleanup", "loops", "fusion", "memory", "cpu", "gpu", "verify")

moved.install()


def __getattr__(name: str):
    """A public name of a stage folder (``transforms.tile_band`` is ``transforms.loops.tile_band``)."""
    if not name.startswith("_"):
        for stage in STAGES:
            module = importlib.import_module(f"{__name__}.{stage}")
            if name in module.__all__:
                return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
