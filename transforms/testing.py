"""Checks for transform tests: semantics preserved, refusals leave the IR unchanged.

    from transforms.testing import assert_preserves_semantics, assert_refused_unchanged
    assert_preserves_semantics("affine-loop-tile{tile-size=4}", module, args)
    err = assert_refused_unchanged(lambda: permute_loops(band, (1, 0)), module)
    assert "RAW" in err.reason
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from affine_ir import ModuleOp, verify
from affine_ir.testing import assert_equivalent

from .errors import TransformError
from .pass_base import Pass
from .pass_manager import PassManager

__all__ = ["assert_preserves_semantics", "assert_refused_unchanged", "map_to_gpu", "run_pipeline"]


def run_pipeline(pipeline: str | Pass | Sequence[Pass], module: ModuleOp) -> ModuleOp:
    """``module`` through ``pipeline`` (text, a pass or passes), verified after each pass; the input is untouched."""
    if isinstance(pipeline, str):
        pm = PassManager.parse(pipeline)
    else:
        pm = PassManager([pipeline] if isinstance(pipeline, Pass) else list(pipeline))
    before = str(module)
    out = pm.run(module)
    if str(module) != before:
        raise AssertionError(f"the pass manager changed its input module ({pipeline})")
    return out


def map_to_gpu(module: ModuleOp, pipeline: str = "gpu-map") -> tuple[ModuleOp, list]:
    """``module`` through a pipeline ending in the GPU mapping, checked: the result verifies, its
    text is a print/parse fixpoint and every function with a body is a host function. Returns the
    result and the pipeline's decisions."""
    import affine_ir as air

    from .gpu.gpu_map import check_host_function

    pm = PassManager.parse(pipeline)
    out = pm.run(module)
    verify(out)
    text = str(out)
    assert str(air.parse(text)) == text
    for f in out.functions:
        if not f.is_declaration:
            check_host_function(f)
    return out, pm.trace.decisions


def assert_preserves_semantics(pipeline: str | Pass | Sequence[Pass], module: ModuleOp, args: Sequence,
                               fn: str | None = None) -> ModuleOp:
    """Run ``pipeline`` on ``module``; assert the result verifies, re-parses to the same text, and
    computes exactly what ``module`` computes on ``args`` (interpreter). Returns the result."""
    import affine_ir as air

    out = run_pipeline(pipeline, module)
    verify(out)
    text = str(out)
    if str(air.parse(text)) != text:
        raise AssertionError(f"the output of {pipeline} does not print back to itself:\n{text}")
    assert_equivalent(module, out, args, fn)
    return out


def assert_refused_unchanged(request: Callable[[], object], module: ModuleOp) -> TransformError:
    """Call ``request`` (a transform utility on ops of ``module``); assert it raises TransformError
    and leaves the printed module exactly as it was. Returns the error."""
    before = str(module)
    try:
        request()
    except TransformError as e:
        after = str(module)
        if after != before:
            raise AssertionError(f"refused ({e}) but the IR changed:\n--- before ---\n{before}\n--- after ---\n"
                                 f"{after}") from e
        return e
    raise AssertionError(f"the request was not refused; IR now:\n{module}")
