"""Shared pytest setup: hypothesis profiles.

The default profile (CI, and ``python -m pytest``) is derandomized: every property test draws
the same programs on every run, so the tests that assert how often a pass applied (a share of
random programs) assert fixed figures and CI cannot flake. To hunt for bugs with fresh random
programs, run ``HYPOTHESIS_PROFILE=explore python -m pytest -q`` (new seeds each run, the
example database on; a failure prints the seed to reproduce it).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=True)
settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          derandomize=False, print_blob=True)
settings.register_profile("ci", parent=settings.get_profile("default"))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
