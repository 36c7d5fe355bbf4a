"""Shared pytest setup: a private cache directory and hypothesis profiles.

Tests marked ``slow`` are the ones :data:`SLOW_TESTS` lists (each took 5 s or more on the shared
2-core development machine, measured with ``--durations``: together about half the suite's
time); ``python -m pytest -q -m "not slow"`` leaves them out.

The whole suite compiles into a temporary cache directory (``$AFFINE_IR_CACHE`` set for the
session, inherited by the subprocesses tests start), never into the user's cache.

The default profile (CI, and ``python -m pytest``) is derandomized: every property test draws
the same programs on every run, so the tests that assert how often a pass applied (a share of
random programs) assert fixed figures and CI cannot flake. To hunt for bugs with fresh random
programs, run ``HYPOTHESIS_PROFILE=explore python -m pytest -q`` (new seeds each run, the
example database on; a failure prints the seed to reproduce it).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=True)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=False, print_blob=True)
settings.register_profile("ci", parent=settings.get_profile("default"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


#: Test ids (``file::function``, every parametrization) marked ``slow``: random-program property
#: tests and end-to-end pipelines, measured at 5 s or more each on 2 cores. A test moved or renamed
#: must be renamed here too (tests/test_readme.py checks that every entry names a test).
SLOW_TESTS = frozenset({
    "test_random_programs.py::test_generated_programs_verify_and_round_trip",
    "test_random_programs.py::test_assert_equivalent_accepts_the_same_program",
    "test_random_programs.py::test_generated_programs_run_in_bounds_exactly_and_deterministically",
    "test_random_programs.py::test_assert_equivalent_rejects_exactly_the_programs_that_differ",
    "test_fusion_programs.py::test_fusion_programs_verify_round_trip_and_run_exactly",
    "test_cpu_pipeline.py::test_random_fusion_programs_through_the_exact_pipeline",
    "test_cpu_pipeline.py::test_random_programs_through_the_exact_pipeline",
    "test_cpu_pipeline.py::test_random_programs_through_the_default_pipeline",
    "test_fuse.py::test_random_fusion_programs_keep_their_meaning",
    "test_fuse.py::test_random_programs_keep_their_meaning",
    "test_fuse.py::test_where_mlir_miscompiles_we_refuse",
    "test_vectorize.py::test_random_programs_every_loop_reductions",
    "test_vectorize.py::test_random_programs_every_loop_utility",
    "test_vectorize.py::test_random_programs_pass_preserves_semantics_exactly",
    "test_regions.py::test_random_regions_contain_every_access_and_tight_boxes_are_exact",
    "test_licm.py::test_random_programs_with_constant_bounds_hoist_memory_ops",
    "test_licm.py::test_random_programs_preserve_semantics_and_hoist",
    "test_canonicalize.py::test_random_programs_default",
    "test_canonicalize.py::test_random_programs_integer_shallow",
    "test_canonicalize.py::test_changes_most_random_programs",
    "test_scalrep.py::test_random_programs_preserve_semantics_and_forward",
    "test_scalrep.py::test_random_programs_without_promotion",
    "test_slices.py::test_random_slices_cover_what_the_consumer_needs",
    "test_gpu_map_demote.py::test_random_programs_keep_semantics_through_the_gpu_pipeline",
    "test_map_mma_random.py::test_random_contractions_on_the_matrix_units_keep_their_bits",
    "test_map_wgmma_random.py::test_random_contractions_on_warpgroup_mma_keep_their_bits",
})


def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_TESTS` ``slow``."""
    for item in items:
        if f"{item.path.name}::{item.originalname}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True, scope="session")
def _suite_cache(tmp_path_factory):
    """The session's cache directory (``$AFFINE_IR_CACHE``), under pytest's temporary directory:
    the suite never writes into the user's cache (``~/.cache/affine-ir``); restored afterwards."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AFFINE_IR_CACHE", str(tmp_path_factory.mktemp("affine-ir-cache")))
        yield


@pytest.fixture(scope="module")
def isolated_cpu_cache(tmp_path_factory):
    """Point the CPU backend's disk cache (``$AFFINE_IR_CACHE``) at a fresh directory for one
    test module, so compiles and cache hits are the module's own; restored afterwards."""
    old = os.environ.get("AFFINE_IR_CACHE")
    os.environ["AFFINE_IR_CACHE"] = str(tmp_path_factory.mktemp("cpu-cache"))
    yield
    if old is None:
        os.environ.pop("AFFINE_IR_CACHE", None)
    else:
        os.environ["AFFINE_IR_CACHE"] = old
