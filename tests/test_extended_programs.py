"""The generator's reaching constructs through the passes and the CPU runtime, with few examples
each (``python -m affine_ir.testing.fuzz`` runs them for long):

- aliasing arguments (one array for two memref arguments): ``runtime.compile(target="cpu")``
  promises the interpreter's results (here without passes: the default pipeline's passes
  assuming distinct arguments is a known bug, being fixed in the runtime);
- loops near the index limits (bounds and steps near 2**62..2**63 - 1, IV + step past it),
  through the passes but unrolling (which can multiply a step past 2**63 - 1: a finding of
  the fuzzer, for the unroll passes' owner) and not on the CPU (IV + step overflow: known);
- ``max``/``min`` bounds of several terms under loops of one iteration (or none);
- deep nests after full unrolling of small nests, then the other passes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import runtime
from affine_ir.testing import copy_arguments, programs_with_inputs, run
from transforms.testing import assert_preserves_semantics

FAST = {"deadline": None, "suppress_health_check": list(HealthCheck), "database": None, "phases": [Phase.generate]}


@pytest.fixture(autouse=True, scope="module")
def _cache_dir(isolated_cpu_cache):
    """This module compiles into its own cache directory (see conftest)."""


def _assert_cpu_equals_interpreter(module, args, pipeline) -> None:
    want = run(module, args)
    got = copy_arguments(args)  # aliased arrays stay aliased
    runtime.compile(module, target="cpu", pipeline=pipeline)(*got)
    arrays = [a for a in got if isinstance(a, np.ndarray)]
    for k, (w, g) in enumerate(zip(want, arrays)):
        assert np.array_equal(w, g), f"argument #{k} differs (pipeline {pipeline!r}):\n{module}"


@settings(max_examples=10, **FAST)
@given(programs_with_inputs(alias=True, max_nests=2))
def test_aliasing_arguments_on_the_cpu_without_passes(case):
    module, args = case
    _assert_cpu_equals_interpreter(module, args, "")


LIMIT_PASSES = ("canonicalize", "affine-loop-tile{tile-size=2}", "affine-loop-tile{tile-size=2 tile-levels=2}",
                "affine-loop-normalize",
                "affine-scalrep", "affine-loop-invariant-code-motion", "affine-parallelize", "affine-loop-fusion",
                "gpu-map")


@settings(max_examples=40, **FAST)
@given(programs_with_inputs(allow_limits=True, max_nests=2), st.sampled_from(LIMIT_PASSES))
def test_loops_near_the_index_limits_through_the_passes(case, pipeline):
    module, args = case
    assert_preserves_semantics(pipeline, module, args)


WIDE_PIPELINES = ("canonicalize", "affine-loop-normalize{promote-single-iter}", "affine-loop-tile{tile-size=2}",
                  "affine-loop-unroll{unroll-full}", "affine-loop-fusion", "affine-scalrep", "gpu-map",
                  "canonicalize,cse,affine-loop-invariant-code-motion")


@settings(max_examples=40, **FAST)
@given(programs_with_inputs(allow_wide_minmax=True, max_nests=2), st.sampled_from(WIDE_PIPELINES))
def test_wide_minmax_bounds_under_single_iteration_loops(case, pipeline):
    module, args = case
    assert_preserves_semantics(pipeline, module, args)


AFTER_UNROLL = ("canonicalize,affine-scalrep", "affine-loop-fusion,canonicalize",
                "cse,affine-loop-invariant-code-motion", "affine-loop-tile{tile-size=2}", "gpu-map")


@settings(max_examples=20, **FAST)
@given(programs_with_inputs(max_depth=4, max_trip=3, max_iterations=27), st.sampled_from(AFTER_UNROLL))
def test_deep_nests_after_full_unrolling(case, then):
    module, args = case
    assert_preserves_semantics(f"affine-loop-unroll{{unroll-full}},{then}", module, args)
