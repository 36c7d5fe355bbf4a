"""Properties of the random program generator (``affine_ir.testing``) and of its checker.

Generated programs must verify, round-trip through text, run in bounds and
deterministically on generated inputs, and cover the constructs later transforms need;
``assert_equivalent`` must accept equal programs and reject different ones.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.builder import Builder
from affine_ir.dialects.affine import AffineStoreOp
from affine_ir.testing import (
    ELEMENT_BOUND,
    EXAMPLES,
    SYMBOL_RANGE,
    VALUE_RANGE,
    assert_equivalent,
    inputs,
    program_features,
    programs,
    programs_with_inputs,
    run,
)
from affine_ir.types import FloatType, MemRefType, index

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")

FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


# ----- validity ----------------------------------------------------------------------------------
@settings(max_examples=500, **FAST)
@given(programs())
def test_generated_programs_verify_and_round_trip(m):
    air.verify(m)
    text = str(m)
    again = air.parse(text)
    assert air.structurally_equal(m, again), text
    assert str(again) == text


@settings(max_examples=300, **FAST)
@given(programs_with_inputs())
def test_generated_programs_run_in_bounds_exactly_and_deterministically(case):
    m, args = case
    kept = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    first = run(m, args)
    second = run(m, args)
    for a, b in zip(args, kept):  # run works on copies
        assert np.array_equal(a, b)
    assert len(first) == len(second) == sum(isinstance(a, np.ndarray) for a in args)
    for x, y in zip(first, second):
        assert x.dtype == y.dtype and np.array_equal(x, y)
        # The exactness invariant: memory holds integers within ELEMENT_BOUND.
        assert np.all(np.abs(x) <= ELEMENT_BOUND), str(m)
        assert np.array_equal(x, np.round(x)), str(m)


RESTRICTED = programs(max_depth=2, max_nests=1, element_types=("i32",), allow_symbols=False, allow_if=False,
                      allow_iter_args=False, allow_minmax=False, allow_divmod=False, max_step=1)


@settings(max_examples=60, **FAST)
@given(RESTRICTED)
def test_restricted_programs_respect_their_options(m):
    f = program_features(m)
    assert not f & {"if", "iter_args", "symbols", "f32", "max_bound", "min_bound", "floordiv", "mod", "step",
                    "depth3", "depth4"}, str(m)
    func = m.functions[0]
    assert func.sym_name == "kernel"
    assert all(isinstance(a.type, MemRefType) for a in func.args)


@settings(max_examples=40, **FAST)
@given(st.data())
def test_inputs_match_the_signature(data):
    m = data.draw(programs(max_nests=1))
    args = data.draw(inputs(m))
    func = m.functions[0]
    assert len(args) == len(func.args)
    seen_index = False
    for a, v in zip(func.args, args):
        if isinstance(a.type, MemRefType):
            assert not seen_index, "memrefs come before symbols"
            assert v.shape == a.type.shape
            assert v.dtype == (np.float32 if isinstance(a.type.element_type, FloatType) else np.int32)
            assert VALUE_RANGE[0] <= v.min() and v.max() <= VALUE_RANGE[1]
        else:
            assert a.type == index and SYMBOL_RANGE[0] <= v <= SYMBOL_RANGE[1]
            seen_index = True


# ----- the checker -------------------------------------------------------------------------------
@settings(max_examples=100, **FAST)
@given(programs_with_inputs())
def test_assert_equivalent_accepts_the_same_program(case):
    m, args = case
    assert_equivalent(m, air.parse(str(m)), args)
    assert_equivalent(m, m.clone(), args)
    assert_equivalent(str(m), m, args)


def _bump_store(m, k: int):
    """A clone of ``m`` whose ``k``-th store (mod their count) stores its value plus one."""
    m = m.clone()
    stores = [op for op in m.walk() if isinstance(op, AffineStoreOp)]
    store = stores[k % len(stores)]
    value = store.operands[0]
    b = Builder(m)
    with b.before(store):
        one = b.constant(1, value.type)
        bumped = b.addf(value, one) if isinstance(value.type, FloatType) else b.addi(value, one)
    store.set_operand(0, bumped)
    air.verify(m)
    return m


@settings(max_examples=150, **FAST)
@given(programs_with_inputs(), st.integers(0, 100))
def test_assert_equivalent_rejects_exactly_the_programs_that_differ(case, k):
    m, args = case
    changed = _bump_store(m, k)
    differs = any(not np.array_equal(x, y) for x, y in zip(run(m, args), run(changed, args)))
    if differs:
        with pytest.raises(AssertionError, match="elements differ; first at"):
            assert_equivalent(m, changed, args)
    else:  # the bumped store never runs or is overwritten
        assert_equivalent(m, changed, args)


@settings(max_examples=60, **FAST)
@given(st.sampled_from(sorted(EXAMPLES)), st.data())
def test_examples_verify_round_trip_and_run_in_bounds(name, data):
    m = air.parse(EXAMPLES[name])
    assert str(air.parse(str(m))) == str(m)
    assert_equivalent(m, m.clone(), data.draw(inputs(m)))


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_run_and_a_bumped_store_is_caught(name):
    m = air.parse(EXAMPLES[name])
    args = [np.arange(a.type.num_elements, dtype=np.float32 if isinstance(a.type.element_type, FloatType)
                      else np.int32).reshape(a.type.shape) % 5 - 2
            if isinstance(a.type, MemRefType) else 4 for a in m.functions[0].args]
    assert_equivalent(m, EXAMPLES[name], args)
    with pytest.raises(AssertionError) as info:
        assert_equivalent(m, _bump_store(m, 0), args)
    message = str(info.value)
    assert "argument #" in message and "first at [" in message
    assert "--- before ---" in message and "--- after ---" in message and "@kernel" in message


def test_assert_equivalent_names_the_differing_argument_and_index():
    before = EXAMPLES["producer_consumer"]
    after = before.replace("%B[%i + 2]", "%B[%i + 1]")
    args = [np.arange(10, dtype=np.float32), np.zeros(10, np.float32), np.zeros(8, np.float32)]
    with pytest.raises(AssertionError, match=r"argument #2 \(%C\): 8 of 8 elements differ; first at \[0\]: "
                                             r"before 4\.0, after 1\.0"):
        assert_equivalent(before, after, args)


def test_assert_equivalent_reports_a_failing_second_program():
    before = EXAMPLES["producer_consumer"]
    after = before.replace("%B[%i + 2]", "%B[%i + 3]")  # reads B[10]: out of bounds
    args = [np.ones(10, np.float32), np.zeros(10, np.float32), np.zeros(8, np.float32)]
    with pytest.raises(AssertionError, match="the second program fails"):
        assert_equivalent(before, after, args)


# ----- coverage ----------------------------------------------------------------------------------
REQUIRED_FEATURES = {
    "depth4", "imperfect", "max_bound", "min_bound", "symbol_bound", "triangular", "step", "symbols", "if",
    "if_else", "if_result", "iter_args", "floordiv", "mod", "multi_iv_subscript", "stride", "negative_stride",
    "shared_memref", "update", "select", "cast", "apply", "f32", "i32",
}


def test_generator_covers_every_feature():
    seen: Counter = Counter()

    @settings(max_examples=200, derandomize=True, database=None, phases=[Phase.generate], **FAST)
    @given(programs())
    def collect(m):
        seen.update(program_features(m))

    collect()
    missing = REQUIRED_FEATURES - set(seen)
    assert not missing, f"never generated: {sorted(missing)}; counts: {dict(seen)}"


# ----- the constructs behind options (aliasing, index limits, wide max/min bounds) ----------------------
def _collect(strategy, examples: int = 60) -> list:
    seen: list = []

    @settings(max_examples=examples, derandomize=True, database=None, phases=[Phase.generate], **FAST)
    @given(strategy)
    def collect(x):
        seen.append(x)

    collect()
    return seen


def test_limit_loops_run_near_the_index_limits_in_bounds():
    """``allow_limits``: bounds and steps near 2**62..2**63 - 1 and -2**63, some loops whose
    last IV + step passes 2**63 - 1, every access in bounds and every value small."""
    from affine_ir.dialects.affine import AffineForOp

    near, overflowing = 0, 0
    for m, args in _collect(programs_with_inputs(allow_limits=True), 80):
        for out in run(m, args):
            assert np.all(np.abs(out) <= ELEMENT_BOUND), str(m)
        for op in m.walk():
            if isinstance(op, AffineForOp) and op.constant_bounds and max(map(abs, op.constant_bounds)) >= 1 << 62:
                near += 1
                lb, ub = op.constant_bounds
                trips = op.constant_trip_count
                overflowing += trips > 0 and lb + trips * op.step > (1 << 63) - 1
    assert near >= 30 and overflowing >= 5, (near, overflowing)


def test_wide_minmax_bounds_have_several_terms_under_single_iteration_loops():
    from affine_ir.dialects.affine import AffineForOp

    wide, single_around_wide, empty = 0, 0, 0
    for m in _collect(programs(allow_wide_minmax=True), 80):
        for op in m.walk():
            if not isinstance(op, AffineForOp):
                continue
            terms = op.lower_bound_map.num_results + op.upper_bound_map.num_results
            if terms >= 4:
                wide += 1
                single_around_wide += any(isinstance(a, AffineForOp) and a.constant_trip_count == 1
                                          for a in op.ancestors())
            empty += op.constant_trip_count == 0
    assert wide >= 40 and single_around_wide >= 5 and empty >= 5, (wide, single_around_wide, empty)


def test_aliasing_programs_give_two_memrefs_one_type_and_inputs_alias():
    from affine_ir.testing import aliased_pairs

    cases = _collect(programs_with_inputs(alias=True), 60)
    aliased = [(m, args) for m, args in cases if any(args[a] is args[b] for a, b in aliased_pairs(m))]
    assert len(aliased) >= 30, len(aliased)
    for m, args in aliased:
        first, second = run(m, args), run(m, args)  # deterministic, in bounds, exact with aliasing
        assert all(np.array_equal(x, y) for x, y in zip(first, second))
    plain = _collect(programs_with_inputs(), 20)
    assert not any(args[a] is args[b] for m, args in plain for a, b in aliased_pairs(m))
