"""Random pipelines: every pass composed with the others, on random programs, keeps the result.

Each example draws a program and a pipeline of 2-5 passes with random options from
:data:`PASS_CHOICES`; the pipeline's output must verify after every pass, print/parse to a
fixpoint and compute exactly what the program computes (interpreter). This catches passes
that are fine alone but leave IR the next pass mishandles.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from affine_ir.testing import programs_with_inputs
from transforms.testing import assert_preserves_semantics

#: Pass texts a random pipeline is drawn from (options chosen to transform small programs).
PASS_CHOICES = (
    "canonicalize", "cse", "dce", "affine-loop-normalize", "affine-loop-normalize{promote-single-iter}",
    "affine-loop-tile{tile-size=2}", "affine-loop-tile{tile-sizes=3,2 separate}",
    "affine-loop-tile{tile-levels=2 tile-sizes=4,4,2,2}", "affine-loop-tile{tile-size=2 permutable-prefix}",
    "affine-loop-permute{permutation=1,0}", "affine-loop-permute{auto}", "affine-loop-unroll{unroll-factor=2}",
    "affine-loop-unroll{unroll-factor=3}",
    "affine-loop-unroll{unroll-full unroll-full-threshold=4}", "affine-loop-unroll-jam{unroll-jam-factor=2}",
    "affine-loop-unroll-jam{unroll-jam-factor=2 loop-depth=1}", "affine-scalrep",
    "affine-scalrep{promote-reductions=false}", "affine-loop-invariant-code-motion",
    "affine-data-copy-generate{fast-mem-space=workgroup}", "affine-data-copy-generate{fast-mem-capacity=1 padding=1}",
    "affine-parallelize", "affine-parallelize{parallel-reductions}",
)

pipelines = st.lists(st.sampled_from(PASS_CHOICES), min_size=2, max_size=5).map(",".join)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs_with_inputs(max_nests=2), pipelines)
def test_random_pipelines_preserve_semantics(case, pipeline):
    module, args = case
    assert_preserves_semantics(pipeline, module, args)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs_with_inputs(max_nests=3, max_memrefs=2, allow_symbols=False), pipelines)
def test_random_pipelines_on_shared_memrefs(case, pipeline):
    module, args = case
    assert_preserves_semantics(pipeline, module, args)
