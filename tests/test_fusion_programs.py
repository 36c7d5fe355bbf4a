"""Properties of the fusion program generator (``affine_ir.testing.fusion_programs``).

Drawn programs must verify, round-trip through text, run in bounds at every symbol value
tried, compute exactly (the same results in f64 as in f32), never read an element of a
temporary before writing it, and contain the mix of features its docstring claims.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import affine_ir as air
from affine_ir.dialects.affine import AffineForOp
from affine_ir.testing import (
    ACC_BOUND,
    SYMBOL_RANGE,
    VALUE_RANGE,
    fusion_features,
    fusion_programs,
    fusion_programs_with_inputs,
    kernel_function,
    run,
    trace_accesses,
)
from affine_ir.types import MemRefType, index

FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
COLLECT = {"derandomize": True, "database": None, "phases": [Phase.generate], **FAST}


def _structure(m) -> tuple[list, list]:
    """Check the body is allocs, nests, deallocs of those allocs, return; the allocs and the nests."""
    f = kernel_function(m)
    assert f.sym_name == "kernel"
    ops = list(f.body.ops)
    allocs = [op for op in ops if op.name == "memref.alloc"]
    nests = [op for op in ops if isinstance(op, AffineForOp)]
    deallocs = [op for op in ops if op.name == "memref.dealloc"]
    assert [op.name for op in ops] == ["memref.alloc"] * len(allocs) + ["affine.for"] * len(nests) + \
        ["memref.dealloc"] * len(deallocs) + ["func.return"], str(m)
    assert [d.operands[0] for d in deallocs] == [a.results[0] for a in allocs]
    assert 2 <= len(nests) <= 6
    kinds = [isinstance(a.type, MemRefType) for a in f.args]
    assert kinds == sorted(kinds, reverse=True), "memrefs come before the index arguments"
    return allocs, nests


def _symbol_settings(args) -> list[list]:
    """``args``, and the same arrays with every index argument at 0, at the middle and at the maximum."""
    if not any(isinstance(a, int) for a in args):
        return [args]
    lo, hi = SYMBOL_RANGE
    return [args] + [[v if isinstance(v, np.ndarray) else s for v in args] for s in (lo, (lo + hi) // 2, hi)]


def _check_temporaries_written_before_read(m, allocs, args) -> None:
    f = kernel_function(m)
    symbols = {a: v for a, v in zip(f.args, args) if a.type == index}
    temps = {id(a.results[0]) for a in allocs}
    written: set = set()
    for acc in trace_accesses(f, symbols):
        shape = acc.memref.type.shape
        assert all(0 <= i < n for i, n in zip(acc.index, shape)), (acc, str(m))
        key = (id(acc.memref), acc.index)
        if acc.is_write:
            written.add(key)
        elif id(acc.memref) in temps:
            assert key in written, f"reads {acc.index} of a temporary before writing it\n{m}"


@settings(max_examples=200, **FAST)
@given(fusion_programs_with_inputs())
def test_fusion_programs_verify_round_trip_and_run_exactly(case):
    m, args = case
    air.verify(m)
    text = str(m)
    again = air.parse(text)
    assert air.structurally_equal(m, again), text
    assert str(again) == text
    allocs, _ = _structure(m)
    f = kernel_function(m)
    assert len(args) == len(f.args)
    for a, v in zip(f.args, args):
        if isinstance(a.type, MemRefType):
            assert v.shape == a.type.shape and VALUE_RANGE[0] <= v.min() and v.max() <= VALUE_RANGE[1]
        else:
            assert isinstance(v, int) and SYMBOL_RANGE[0] <= v <= SYMBOL_RANGE[1]
    m64 = air.parse(text.replace("f32", "f64")) if "f32" in text else None
    for setting in _symbol_settings(args):
        _check_temporaries_written_before_read(m, allocs, setting)
        outs = run(m, setting)  # raises InterpretError on an out-of-bounds access
        for x in outs:
            assert np.array_equal(x, np.round(x)) and np.all(np.abs(x) <= ACC_BOUND), str(m)
        if m64 is not None:
            # Exactness: f64 arithmetic gives the same numbers, so no f32 operation rounded.
            wide = run(m64, [a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype == np.float32 else a
                             for a in setting])
            for x, y in zip(outs, wide):
                assert np.array_equal(x.astype(np.float64), y), str(m)


def test_feature_mix_matches_the_docstring():
    seen: Counter = Counter()

    @settings(max_examples=200, **COLLECT)
    @given(fusion_programs())
    def collect(m):
        seen.update(fusion_features(m))

    collect()
    total = 200
    # Shares (of 200 derandomized programs) each feature must reach: the bulk are fusion
    # candidates through a temporary; the hazards and shapes fusion must respect are common.
    floors = {"temp_flow": 0.6, "alloc": 0.6, "offset_read": 0.25, "reduction": 0.2, "symbols": 0.15,
              "war": 0.15, "waw": 0.15, "inplace": 0.2, "escaping": 0.15, "chain": 0.2, "fanout": 0.2,
              "diamond": 0.05, "siblings": 0.1, "independent": 0.02, "stencil": 0.15, "transposed": 0.1,
              "row_read": 0.05, "reduction_init": 0.1, "consumer_reduction": 0.05, "intervening": 0.2,
              "loop_order": 0.05, "step": 0.1, "i32": 0.2, "depth1": 0.2, "depth2": 0.2, "depth3": 0.05,
              "nests2": 0.1, "nests3": 0.1, "nests4": 0.05, "nests5": 0.05, "nests6": 0.02}
    low = {k: f"{seen[k]}/{total}" for k, share in floors.items() if seen[k] < share * total}
    assert not low, f"features drawn too rarely: {low}; all counts: {dict(seen)}"


@pytest.mark.parametrize("kw, absent", [
    ({"allow_symbols": False}, {"symbols"}),
    ({"element_types": ("i32",)}, {"f32"}),
    ({"max_depth": 1}, {"depth2", "depth3", "transposed", "reduction"}),
    ({"allow_steps": False}, {"step"}),
    ({"allow_hazards": False}, {"war"}),
    ({"max_nests": 2}, {"nests3", "nests4", "nests5", "nests6"}),
])
def test_options_are_respected(kw, absent):
    seen: Counter = Counter()

    @settings(max_examples=40, **COLLECT)
    @given(fusion_programs(**kw))
    def collect(m):
        air.verify(m)
        seen.update(fusion_features(m))

    collect()
    assert not absent & set(seen), dict(seen)
    assert seen["temp_flow"] >= 10, dict(seen)


def test_with_inputs_draws_many_distinct_programs():
    texts: Counter = Counter()

    @settings(max_examples=100, **COLLECT)
    @given(fusion_programs_with_inputs())
    def collect(case):
        texts[str(case[0])] += 1

    collect()
    assert len(texts) >= 90, texts.most_common(3)


def test_bad_options_are_refused():
    for kw in ({"max_nests": 1}, {"max_depth": 4}, {"element_types": ("f16",)}, {"max_extent": 2}):
        with pytest.raises(ValueError):
            fusion_programs(**kw)


PROGRAM = """\
func.func @kernel(%A: memref<6x4xf32>, %Y: memref<6xf32>, %Z: memref<4x6xf32>) {
  %t = memref.alloc() : memref<6x4xf32>
  %s = memref.alloc() : memref<6xf32>
  affine.for %i = 0 to 6 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<6x4xf32>
      affine.store %a, %t[%i, %j] : memref<6x4xf32>
    }
  }
  affine.for %i = 0 to 6 {
    %z = arith.constant 0.0 : f32
    affine.store %z, %s[%i] : memref<6xf32>
    affine.for %j = 0 to 4 {
      %v = affine.load %t[%i, %j] : memref<6x4xf32>
      %acc = affine.load %s[%i] : memref<6xf32>
      %n = arith.addf %acc, %v : f32
      affine.store %n, %s[%i] : memref<6xf32>
    }
  }
  affine.for %i = 0 to 5 {
    %a = affine.load %s[%i] : memref<6xf32>
    %b = affine.load %s[%i + 1] : memref<6xf32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %Y[%i] : memref<6xf32>
  }
  affine.for %j = 0 to 4 {
    affine.for %i = 0 to 6 {
      %v = affine.load %t[%i, %j] : memref<6x4xf32>
      affine.store %v, %Z[%j, %i] : memref<4x6xf32>
    }
  }
  memref.dealloc %t : memref<6x4xf32>
  memref.dealloc %s : memref<6xf32>
  return
}
"""


WRITTEN = """\
func.func @kernel(%A: memref<4xf32>, %B: memref<4x6xf32>, %C: memref<4xi32>, %D: memref<4xi32>,
                  %Y1: memref<4xf32>, %Y2: memref<4x6xf32>, %Y3: memref<4xf32>, %N: index) {
  affine.for %i = 0 to 4 step 2 {
    %a = affine.load %A[%i] : memref<4xf32>
    affine.store %a, %Y1[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to %N {
      %y = affine.load %Y1[%i] : memref<4xf32>
      affine.store %y, %Y2[%i, %j] : memref<4x6xf32>
    }
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %A[%i] : memref<4xf32>
    affine.store %a, %Y3[%i] : memref<4xf32>
  }
  affine.for %j = 0 to 6 {
    affine.for %i = 0 to 4 {
      %b = affine.load %B[%i, %j] : memref<4x6xf32>
      affine.store %b, %Y2[%i, %j] : memref<4x6xf32>
    }
  }
  affine.for %i = 0 to 4 {
    %z = arith.constant 1.0 : f32
    affine.store %z, %A[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    %d = affine.load %D[%i] : memref<4xi32>
    affine.store %d, %C[%i] : memref<4xi32>
  }
  return
}
"""

DIAMOND = """\
func.func @kernel(%A: memref<4xf32>, %Y: memref<4xf32>) {
  %t0 = memref.alloc() : memref<4xf32>
  %t1 = memref.alloc() : memref<4xf32>
  %t2 = memref.alloc() : memref<4xf32>
  affine.for %i = 0 to 4 {
    %a = affine.load %A[%i] : memref<4xf32>
    affine.store %a, %t0[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %t0[%i] : memref<4xf32>
    affine.store %a, %t1[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %t0[%i] : memref<4xf32>
    affine.store %a, %t2[%i] : memref<4xf32>
  }
  affine.for %i = 0 to 4 {
    %a = affine.load %t1[%i] : memref<4xf32>
    %b = affine.load %t2[%i] : memref<4xf32>
    %c = arith.addf %a, %b : f32
    affine.store %c, %Y[%i] : memref<4xf32>
  }
  memref.dealloc %t0 : memref<4xf32>
  memref.dealloc %t1 : memref<4xf32>
  memref.dealloc %t2 : memref<4xf32>
  return
}
"""


@pytest.mark.parametrize("text, expected", [
    (PROGRAM, {"nests4", "f32", "alloc", "temp_flow", "chain", "fanout", "intervening", "offset_read", "stencil",
               "transposed", "reduction", "reduction_init", "consumer_reduction", "inplace", "depth1", "depth2"}),
    (WRITTEN, {"nests6", "f32", "i32", "symbols", "escaping", "war", "waw", "siblings", "independent", "row_read",
               "loop_order", "step", "depth1", "depth2"}),
    (DIAMOND, {"nests4", "f32", "alloc", "temp_flow", "chain", "fanout", "diamond", "intervening", "depth1"}),
])
def test_fusion_features_of_written_programs(text, expected):
    assert fusion_features(air.parse(text)) == expected
