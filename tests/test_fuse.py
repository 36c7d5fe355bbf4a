"""``affine-loop-fusion`` (transforms/fusion/fuse.py, fuse_slice.py, fuse_private.py; analysis/fusion.py).

The library composites (MLP, softmax, layer norm, element-wise chains, conv + bias + ReLU,
attention) fuse as far as dependences allow, asserted by counting nests and buffers and run
on the interpreter; refusals name the dependence and leave the IR as it was; every candidate
pair gets a decision; random multi-nest programs keep their meaning exactly.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
from affine_ir.testing import assert_equivalent, fusion_features, fusion_programs_with_inputs, programs_with_inputs
from transforms import PassManager, PipelineError
from transforms.fusion.fuse import fuse_loops, fuse_siblings, fusion_candidates
from transforms.testing import assert_preserves_semantics, assert_refused_unchanged, run_pipeline

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
L = air.library


def top(module) -> tuple[list, list[str]]:
    """The top-level loops and the types of the top-level allocs of the first function."""
    f = module.functions[0]
    nests = [op for op in f.body.ops if op.name == "affine.for"]
    allocs = [str(op.results[0].type) for op in f.body.ops if op.name == "memref.alloc"]
    return nests, allocs


def int_args(module, symbol=5, seed=0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.functions[0].args:
        shape = getattr(a.type, "shape", None)
        if shape is None:
            out.append(symbol)
        else:
            dims = tuple(symbol if s is None or s < 0 else s for s in shape)
            out.append(rng.integers(-3, 4, size=dims).astype(np.float32))
    return out


def parse(text: str):
    m = air.parse(text)
    return m, m.functions[0]


def nests_of(f) -> list:
    return [op for op in f.body.ops if op.name == "affine.for"]


# -- the library composites ------------------------------------------------------------------------
COMPOSITES = {
    # name: (module, private buffers after fusion, private buffers after fusion + scalrep)
    "mlp": (lambda: L.mlp(8, 16, 32), ["memref<1x1xf32>"], []),
    "mlp_symbolic": (lambda: L.mlp("M", 16, "K"), ["memref<1x1xf32>"], None),
    "softmax": (lambda: L.softmax((4, 16)), ["memref<1xf32>", "memref<1xf32>"], []),
    "layernorm": (lambda: L.layernorm(4, 16), ["memref<1xf32>", "memref<1xf32>"], []),
    "chain": (lambda: L.elementwise_chain(["relu", "add", "exp", "mul", "neg"], (4, 6)), ["memref<1x1xf32>"] * 4, []),
    "chain_symbolic": (lambda: L.elementwise_chain(["relu", "add", "neg"], ("M", "N")), ["memref<1x1xf32>"] * 2, []),
    "conv_bias_relu": (lambda: L.conv2d_bias_relu(1, 2, 6, 6, 3, 3, 3), ["memref<1x1x1x1xf32>"], None),
    "attention": (lambda: L.attention(1, 2, 8, 4),
                  ["memref<1x1x1xf32>", "memref<1x1x1x8xf32>", "memref<1x1x1xf32>", "memref<1x1x1x8xf32>"], None),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_fuse_into_one_nest(name):
    build, private, after_scalrep = COMPOSITES[name]
    m = build()
    nests_before, allocs_before = top(m)
    assert len(nests_before) >= 2 and allocs_before
    out = assert_preserves_semantics("affine-loop-fusion", m, int_args(m)) if "exp" not in str(m) else \
        run_pipeline("affine-loop-fusion", m)
    nests, allocs = top(out)
    assert len(nests) == 1, out
    assert sorted(allocs) == sorted(private), out
    for seed in range(2):
        args = int_args(m, seed=seed)
        want, got = air.testing.run(m, args), air.testing.run(out, args)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    if after_scalrep is not None:
        _, allocs = top(run_pipeline("affine-loop-fusion,affine-scalrep,canonicalize", m))
        assert allocs == after_scalrep


def test_ten_nest_chain_is_one_nest_without_temporaries():
    ops = ["relu", "add", "neg", "mul", "abs", "relu", "add", "neg", "mul", "abs"]
    m = L.elementwise_chain(ops, (6, 5))
    assert len(top(m)[0]) == 10
    out = assert_preserves_semantics("affine-loop-fusion,affine-scalrep,canonicalize", m, int_args(m))
    nests, allocs = top(out)
    assert len(nests) == 1 and allocs == []


def test_decisions_name_depth_slice_and_private_buffer():
    pm = PassManager.parse("affine-loop-fusion")
    pm.run(L.softmax((4, 16)))
    applied = [d.message for d in pm.trace.decisions if d.kind == "applied"]
    assert len(applied) == 2
    assert "at depth 1" in applied[0] and "%i in [%i, %i + 1)" in applied[0]
    assert "%max -> private memref<1xf32>" in applied[1] and "%sum -> private memref<1xf32>" in applied[1]


# -- legality ---------------------------------------------------------------------------------------
WAR = """
func.func @war(%A: memref<10xf32>, %B: memref<10xf32>) {
  %t = memref.alloc() : memref<10xf32>
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %t[%i] : memref<10xf32>
  }
  affine.for %j = 0 to 10 {
    %v = affine.load %t[%j] : memref<10xf32>
    affine.store %v, %B[%j] : memref<10xf32>
    %w = arith.addf %v, %v : f32
    affine.store %w, %A[%j] : memref<10xf32>
  }
  return
}
"""


def test_war_with_a_shifted_read_is_refused():
    # The consumer overwrites A[j] after the producer read it; with a shifted read the slice at j
    # would read A[j - 1] after the consumer wrote it.
    m, f = parse(WAR.replace("%A[%i] : memref<10xf32>\n    affine.store %a, %t[%i]",
                             "%A[%i] : memref<10xf32>\n    affine.store %a, %t[%i]")
                 .replace("affine.load %t[%j]", "affine.load %t[9 - %j]"))
    src, dst = nests_of(f)
    err = assert_refused_unchanged(lambda: fuse_loops(src, dst, 1), m)
    assert "WAR on %A" in err.reason


def test_war_in_order_fuses():
    m, f = parse(WAR)
    out = assert_preserves_semantics("affine-loop-fusion", m, int_args(m))
    assert len(top(out)[0]) == 1


def test_intervening_writer_blocks_fusion():
    m, f = parse("""
func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %B[%i] : memref<10xf32>
  }
  affine.for %k = 0 to 10 {
    %b = affine.load %B[%k] : memref<10xf32>
    affine.store %b, %C[%k] : memref<10xf32>
  }
  affine.for %j = 0 to 10 {
    %v = affine.load %B[%j] : memref<10xf32>
    %c = affine.load %C[9 - %j] : memref<10xf32>
    %s = arith.addf %v, %c : f32
    affine.store %s, %A[%j] : memref<10xf32>
  }
  return
}
""")
    first, _, last = nests_of(f)
    err = assert_refused_unchanged(lambda: fuse_loops(first, last), m)
    assert "between them" in err.reason and "RAW on %B" in err.reason


def test_reduction_producer_recomputed_is_refused():
    # The consumer reads s[i] at every j: a slice at depth 2 would re-run the whole reduction
    # per j (refused as too costly); at depth 1 it runs once.
    m, f = parse("""
func.func @f(%X: memref<4x8xf32>, %Y: memref<4x8xf32>) {
  %s = memref.alloc() : memref<4xf32>
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 4 {
    affine.store %z, %s[%i] : memref<4xf32>
    affine.for %k = 0 to 8 {
      %x = affine.load %X[%i, %k] : memref<4x8xf32>
      %a = affine.load %s[%i] : memref<4xf32>
      %b = arith.addf %a, %x : f32
      affine.store %b, %s[%i] : memref<4xf32>
    }
  }
  affine.for %i2 = 0 to 4 {
    affine.for %j = 0 to 8 {
      %v = affine.load %s[%i2] : memref<4xf32>
      %x = affine.load %X[%i2, %j] : memref<4x8xf32>
      %d = arith.subf %x, %v : f32
      affine.store %d, %Y[%i2, %j] : memref<4x8xf32>
    }
  }
  return
}
""")
    src, dst = nests_of(f)
    legal, reasons = fusion_candidates(src, dst)
    assert [c.depth for c in legal] == [1, 2]
    # MLIR's measure: the work after fusion over both nests' work (producer 4 + 32 * 4 ops,
    # consumer 32 * 4), minus one; at depth 2 each of the 32 (i2, j) re-runs a producer iteration.
    assert (legal[1].slice.src_work, legal[1].slice.dst_work) == (132, 128)
    assert legal[0].redundancy == 0 and legal[1].redundancy == pytest.approx((32 * 132 / 4 + 128) / (132 + 128) - 1)
    out = assert_preserves_semantics("affine-loop-fusion", m, int_args(m))
    assert len(top(out)[0]) == 1 and top(out)[1] == ["memref<1xf32>"]


def test_accumulator_init_fuses_above_the_reduction_loop_only():
    m = L.matmul(4, 5, 6)
    f = m.functions[0]
    init, acc = nests_of(f)
    legal, reasons = fusion_candidates(init, acc)
    assert [c.depth for c in legal] == [1, 2]
    assert "consumer writes %C" in reasons[3]
    out = assert_preserves_semantics("affine-loop-fusion", m, int_args(m))
    assert len(top(out)[0]) == 1


def test_stencil_recomputation_needs_tolerance():
    m, f = parse("""
func.func @f(%A: memref<12xf32>, %B: memref<10xf32>) {
  %t = memref.alloc() : memref<12xf32>
  affine.for %i = 0 to 12 {
    %a = affine.load %A[%i] : memref<12xf32>
    %b = arith.mulf %a, %a : f32
    affine.store %b, %t[%i] : memref<12xf32>
  }
  affine.for %j = 0 to 10 {
    %x = affine.load %t[%j] : memref<12xf32>
    %y = affine.load %t[%j + 1] : memref<12xf32>
    %z = affine.load %t[%j + 2] : memref<12xf32>
    %s = arith.addf %x, %y : f32
    %r = arith.addf %s, %z : f32
    affine.store %r, %B[%j] : memref<10xf32>
  }
  return
}
""")
    pm = PassManager.parse("affine-loop-fusion")
    out = pm.run(m)
    assert len(top(out)[0]) == 2
    (refusal,) = pm.trace.decisions
    # 30 slice iterations of 3 ops inside the 60-op consumer, against 36 + 60 ops: 56% extra.
    assert refusal.kind == "refused" and "redundant computation 56% > 30% (producer 36 ops, consumer 60 ops)" \
        in refusal.message
    out = assert_preserves_semantics("affine-loop-fusion{compute-tolerance=2.0}", m, int_args(m))
    nests, allocs = top(out)
    assert len(nests) == 1 and allocs == ["memref<3xf32>"]


def test_producer_kept_when_its_output_escapes_partially():
    # The consumer needs only half of B; B is an argument (live out): the producer must stay,
    # and running those 5 of its 10 iterations (2 ops each) again costs a third of both nests'
    # work (20 + 10 ops) -> not fused at the default tolerance.
    m, f = parse("""
func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<5xf32>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %B[%i] : memref<10xf32>
  }
  affine.for %j = 0 to 5 {
    %v = affine.load %B[%j * 2] : memref<10xf32>
    affine.store %v, %C[%j] : memref<5xf32>
  }
  return
}
""")
    src, dst = nests_of(f)
    (c,) = fusion_candidates(src, dst)[0]
    assert not c.remove_producer and c.redundancy == pytest.approx((5 * 2 + 10 + 20) / (20 + 10) - 1)
    assert_refused_unchanged(lambda: fuse_loops(src, dst), m)
    out = assert_preserves_semantics("affine-loop-fusion{maximal=true}", m, int_args(m))
    assert len(top(out)[0]) == 2  # the producer stays, the slice runs inside the consumer too


KEPT_PRODUCER_CONSUMER_STORES = """
func.func @k(%B: memref<3xf32>, %C: memref<3xf32>) {
  affine.for %i = 0 to 2 {
    %x = affine.load %C[1] : memref<3xf32>
    affine.store %x, %B[%i + 1] : memref<3xf32>
  }
  affine.for %j = 0 to 1 {
    %y = affine.load %B[%j + 1] : memref<3xf32>
    affine.store %y, %B[%j] : memref<3xf32>
  }
  return
}
"""


@pytest.mark.parametrize("pipeline", ["affine-loop-fusion{maximal}", "affine-loop-fusion{compute-tolerance=10.0}"])
def test_kept_producer_no_private_buffer_for_what_the_consumer_stores(pipeline):
    # The producer stays (B[2] is live out); B is an argument and the consumer stores B[0]
    # itself: a private B inside the fused nest would swallow that store.
    m = air.parse(KEPT_PRODUCER_CONSUMER_STORES)
    out = assert_preserves_semantics(pipeline, m, int_args(m))
    assert top(out)[1] == []


def test_kept_producer_private_buffer_only_for_dead_local_stores():
    # The same through a local buffer read by a later nest: the consumer's store to %t[0] is
    # observable after the fused nest, so %t keeps its size; without the later reader it is dead.
    text = """
func.func @k(%C: memref<3xf32>, %D: memref<3xf32>) {
  %t = memref.alloc() : memref<3xf32>
  affine.for %i = 0 to 2 {
    %x = affine.load %C[%i] : memref<3xf32>
    affine.store %x, %t[%i + 1] : memref<3xf32>
  }
  affine.for %j = 0 to 1 {
    %y = affine.load %t[%j + 1] : memref<3xf32>
    affine.store %y, %t[%j] : memref<3xf32>
  }
  affine.for %k = 0 to 3 {
    %z = affine.load %t[%k] : memref<3xf32>
    affine.store %z, %D[%k] : memref<3xf32>
  }
  memref.dealloc %t : memref<3xf32>
  return
}
"""
    m = air.parse(text)
    args = int_args(m)
    out = assert_preserves_semantics("affine-loop-fusion{maximal mode=producer}", m, args)
    assert top(out)[1] == ["memref<3xf32>"]


PAIR_READERS = """
func.func @pairs(%A: memref<65xf32>, %B: memref<64xf32>) {
  %T = memref.alloc() : memref<65xf32>
  affine.for %i = 0 to 65 {
    %a = affine.load %A[%i] : memref<65xf32>
    %s = arith.mulf %a, %a : f32
    affine.store %s, %T[%i] : memref<65xf32>
  }
  affine.for %j = 0 to 64 {
    %x = affine.load %T[%j] : memref<65xf32>
    %y = affine.load %T[%j + 1] : memref<65xf32>
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %x : f32
    %n = arith.subf %m, %y : f32
    %p = arith.addf %n, %s : f32
    %q = arith.mulf %p, %p : f32
    %r = arith.subf %q, %m : f32
    %t = arith.addf %r, %n : f32
    affine.store %t, %B[%j] : memref<64xf32>
  }
  memref.dealloc %T : memref<65xf32>
  return
}
"""


def test_cheap_producer_under_a_long_consumer_fuses_at_the_default_tolerance():
    # MLIR's profitability: 128 slice iterations of 3 ops inside the 640-op consumer, against
    # 195 + 640 ops before: 23% extra, within 30% (the producer's own iterations alone would say 97%).
    m = air.parse(PAIR_READERS)
    pm = PassManager.parse("affine-loop-fusion")
    out = pm.run(m)
    assert_equivalent(m, out, int_args(m))
    nests, allocs = top(out)
    assert len(nests) == 1 and allocs == ["memref<2xf32>"]
    (d,) = pm.trace.decisions
    assert d.kind == "applied" and "23% redundant computation (producer 195 ops, consumer 640 ops, tolerance 30%)" \
        in d.message


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (upstream MLIR) is not installed")
def test_cheap_producer_fuses_as_mlir_does():
    res = subprocess.run(["iree-opt", "--affine-loop-fusion"], input=PAIR_READERS, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    ours = run_pipeline("affine-loop-fusion", air.parse(PAIR_READERS))
    assert len(top(air.parse(res.stdout))[0]) == len(top(ours)[0]) == 1


def test_symbolic_sizes_fuse():
    m = L.elementwise_chain(["relu", "neg"], ("N",))
    out = assert_preserves_semantics("affine-loop-fusion", m, int_args(m, symbol=7))
    assert top(out) [1] == ["memref<1xf32>"] and len(top(out)[0]) == 1


def test_sibling_fusion_shares_the_input():
    m, f = parse("""
func.func @f(%A: memref<8x8xf32>, %x: memref<8xf32>, %y: memref<8xf32>, %u: memref<8xf32>, %v: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%i, %j] : memref<8x8xf32>
      %b = affine.load %x[%j] : memref<8xf32>
      %c = affine.load %u[%i] : memref<8xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      affine.store %s, %u[%i] : memref<8xf32>
    }
  }
  affine.for %k = 0 to 8 {
    affine.for %l = 0 to 8 {
      %a = affine.load %A[%k, %l] : memref<8x8xf32>
      %b = affine.load %y[%l] : memref<8xf32>
      %c = affine.load %v[%k] : memref<8xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      affine.store %s, %v[%k] : memref<8xf32>
    }
  }
  return
}
""")
    out = assert_preserves_semantics("affine-loop-fusion{mode=sibling}", m, int_args(m))
    (nest,) = top(out)[0]
    assert sum(op.name == "affine.load" and "%A" in str(op) for op in nest.walk()) == 2
    assert len(top(run_pipeline("affine-loop-fusion{mode=producer}", m))[0]) == 2
    a, b = nests_of(f)
    r = fuse_siblings(a, b)
    assert r.depth == 2


def test_siblings_with_a_dependence_are_refused():
    m, f = parse("""
func.func @f(%A: memref<8xf32>, %B: memref<8xf32>) {
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    affine.store %a, %B[%i] : memref<8xf32>
  }
  affine.for %k = 0 to 8 {
    %a = affine.load %A[%k] : memref<8xf32>
    %b = affine.load %B[7 - %k] : memref<8xf32>
    %s = arith.addf %a, %b : f32
    affine.store %s, %A[%k] : memref<8xf32>
  }
  return
}
""")
    a, b = nests_of(f)
    err = assert_refused_unchanged(lambda: fuse_siblings(a, b), m)
    assert "not siblings" in err.reason


def test_every_candidate_pair_gets_a_decision():
    m = L.elementwise_chain(["relu", "neg", "abs"], (4, 4))
    pm = PassManager.parse("affine-loop-fusion{compute-tolerance=0.0}")
    pm.run(m)
    assert [d.kind for d in pm.trace.decisions] == ["applied", "applied"]
    m, _ = parse(WAR.replace("affine.load %t[%j]", "affine.load %t[9 - %j]"))
    pm = PassManager.parse("affine-loop-fusion")
    pm.run(m)
    kinds = Counter(d.kind for d in pm.trace.decisions)
    assert kinds == {"refused": 1}, pm.trace.decisions


def test_fast_memory_space_for_small_private_buffers():
    m = L.softmax((4, 16))
    out = run_pipeline("affine-loop-fusion{fast-mem-space=workgroup local-buf-threshold=1}", m)
    assert top(out)[1] == ["memref<1xf32, #gpu.address_space<workgroup>>"] * 2
    out = run_pipeline("affine-loop-fusion{fast-mem-space=2 local-buf-threshold=0}", m)
    assert top(out)[1] == ["memref<1xf32>"] * 2


def test_bad_options():
    with pytest.raises(PipelineError, match="mode must be one of"):
        PassManager.parse("affine-loop-fusion{mode=fast}")
    with pytest.raises(PipelineError, match="compute-tolerance"):
        PassManager.parse("affine-loop-fusion{compute-tolerance=-1.0}")


def test_not_a_producer_consumer_pair():
    m, f = parse(WAR)
    a, b = nests_of(f)
    err = assert_refused_unchanged(lambda: fuse_loops(b, a), m)
    assert "does not precede" in err.reason


# -- random programs --------------------------------------------------------------------------------
PIPELINES = ("affine-loop-fusion", "affine-loop-fusion{maximal=true}", "affine-loop-fusion{mode=sibling}",
             "affine-loop-fusion{compute-tolerance=5.0}", "affine-loop-fusion{separate-reductions=true}")


def test_random_programs_keep_their_meaning():
    stats: Counter = Counter()

    @settings(max_examples=200, **FAST)
    @given(programs_with_inputs(max_nests=5, max_memrefs=3))
    def check(case):
        module, args = case
        for pipeline in PIPELINES[:2]:
            pm = PassManager.parse(pipeline)
            out = pm.run(module)
            assert_equivalent(module, out, args)
            stats["runs"] += 1
            stats["fused"] += any(d.kind == "applied" for d in pm.trace.decisions)

    check()
    assert stats["runs"] == 400
    # General programs rarely hold a fusable pair (their memrefs are arguments, written in
    # part, read in another order): 39 of the 400 runs fuse with CI's seed, 27-34 with fresh
    # seeds since slices no longer cut loops whose carried values reach a store or a used result
    # (fusion_programs below: most).
    assert stats["fused"] >= 25, stats


def test_random_fusion_programs_keep_their_meaning():
    """Chains, diamonds, fan-outs, siblings, shifted/transposed reads, reductions, WAR/WAW
    hazards, escaping buffers, symbolic bounds (``affine_ir.testing.fusion_programs``)."""
    stats: Counter = Counter()

    @settings(max_examples=200, **FAST)
    @given(fusion_programs_with_inputs())
    def check(case):
        module, args = case
        feats = fusion_features(module)
        for pipeline in PIPELINES:
            pm = PassManager.parse(pipeline)
            out = pm.run(module)
            assert_equivalent(module, out, args)
            fused = any(d.kind == "applied" for d in pm.trace.decisions)
            stats[pipeline, fused] += 1
            if pipeline == PIPELINES[0]:
                stats["programs"] += 1
                stats["fewer nests"] += len(top(out)[0]) < len(top(module)[0])
                stats["hazard fused"] += fused and bool(feats & {"war", "waw", "intervening"})
                stats["symbolic fused"] += fused and "symbols" in str(feats) or (fused and "index" in str(module))

    check()
    assert stats["programs"] == 200
    assert stats[PIPELINES[0], True] >= 120, stats
    assert stats["fewer nests"] >= 120, stats
    assert stats["hazard fused"] >= 30, stats
    assert stats[PIPELINES[2], True] >= 20, stats  # sibling mode


def _golden_chunks():
    from pathlib import Path

    for path in sorted((Path(__file__).parent / "filecheck").glob("affine-loop-fusion*.mlir")):
        for k, chunk in enumerate(path.read_text().split("// -----")):
            if "func.func" in chunk:
                yield pytest.param(chunk, id=f"{path.stem}-{k}")


@pytest.mark.parametrize("text", list(_golden_chunks()))
def test_golden_inputs_keep_their_meaning(text):
    """Every input of the golden files, through the pass at the options they use, on the interpreter."""
    m = air.parse(text)
    if any(getattr(a.type, "shape", None) and not a.type.has_static_shape for a in m.functions[0].args):
        args_list = [int_args(m, symbol=s, seed=s) for s in (0, 3, 7)]
    else:
        args_list = [int_args(m, seed=s) for s in range(3)]
    for pipeline in PIPELINES + ("affine-loop-fusion{fast-mem-space=1 local-buf-threshold=1}",):
        out = run_pipeline(pipeline, m)
        for args in args_list:
            assert_equivalent(m, out, args)


@pytest.mark.skipif(shutil.which("iree-opt") is None, reason="iree-opt (upstream MLIR) is not installed")
def test_where_mlir_miscompiles_we_refuse():
    """The golden inputs on which MLIR's -affine-loop-fusion (iree-opt) changes what the program
    computes (WAR/WAW hazards, a prefix sum read in reverse, a call between the nests): ours
    refuses them and the program keeps its meaning; MLIR's output, run on our interpreter,
    differs from the original on the same inputs."""
    wrong = 0
    for param in _golden_chunks():
        (text,) = param.values
        m = air.parse(text, allow_unregistered=True)
        res = subprocess.run(["iree-opt", "--affine-loop-fusion"], input=text, capture_output=True, text=True)
        if res.returncode != 0:
            continue
        theirs = air.parse(res.stdout, allow_unregistered=True)
        ours = run_pipeline("affine-loop-fusion", m)
        for seed in range(3):
            args = int_args(m, symbol=5, seed=seed)
            assert_equivalent(m, ours, args)
            try:
                assert_equivalent(m, theirs, args)
            except AssertionError:
                wrong += 1
                assert not any(d for d in _applied(m)), "we fused where MLIR miscompiles"
                break
    assert wrong >= 3


def _applied(m) -> list:
    pm = PassManager.parse("affine-loop-fusion")
    pm.run(m)
    return [d for d in pm.trace.decisions if d.kind == "applied"]


def test_large_causal_attention_counts_its_slices():
    # The slice counts of a 32-head, 4096-long causal attention ran out of isl's budget and
    # ended in an internal TypeError; now they are exact and the softmax chain fuses.
    m = L.attention(1, 32, 4096, 128, dtype="bf16", causal=True)
    pm = PassManager.parse("affine-loop-fusion")
    out = pm.run(m)
    assert len(top(out)[0]) < len(top(m)[0])
    assert all("computation ratio" in d.message for d in pm.trace.decisions if d.kind == "applied")


TILED_SYMBOLIC = """
#map = affine_map<()[s0] -> (((s0 - 2) floordiv 64) * 64 + 1)>
#map1 = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0)[s0] -> (d0 + 256, ((s0 - 2) floordiv 64) * 64 + 1)>
#map3 = affine_map<(d0, d1)[s0] -> (d0 + 192, d1 + 256, ((s0 - 2) floordiv 64) * 64 + 1)>
func.func @kernel(%Y: memref<6xi32>, %Z: memref<6xi32>, %N: index) {
  %t1 = memref.alloc() : memref<6xi32>
  affine.for %a = 1 to #map()[%N] step 256 {
    affine.for %b = #map1(%a) to min #map2(%a)[%N] step 192 {
      affine.for %c = #map1(%b) to min #map3(%b, %a)[%N] step 64 {
        %0 = affine.load %Y[%c] : memref<6xi32>
        affine.store %0, %t1[%c] : memref<6xi32>
      }
    }
  }
  affine.for %a = 1 to #map()[%N] step 256 {
    affine.for %b = #map1(%a) to min #map2(%a)[%N] step 192 {
      affine.for %c = #map1(%b) to min #map3(%b, %a)[%N] step 64 {
        %1 = affine.load %t1[%c] : memref<6xi32>
        affine.store %1, %Z[%c] : memref<6xi32>
      }
    }
  }
  memref.dealloc %t1 : memref<6xi32>
  return
}
"""


def test_tiled_nests_with_symbolic_min_bounds_finish(tmp_path):
    # The slice analysis computed the producer loops' own range over their domain eagerly, an
    # isl parametric maximum over tile strides and floordiv bounds that takes minutes; it is a
    # fallback, now computed only when the slice's own bound is not a max/min of affine functions.
    import sys

    path = tmp_path / "tiled.mlir"
    path.write_text(TILED_SYMBOLIC)
    script = ("import sys, affine_ir as air; from transforms import PassManager; "
              "pm = PassManager.parse('affine-loop-fusion'); pm.run(air.parse(open(sys.argv[1]).read())); "
              "print([d.kind for d in pm.trace.decisions])")
    res = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() in ("['refused']", "['applied']")
    m = air.parse(TILED_SYMBOLIC)
    out = run_pipeline("affine-loop-fusion", m)
    for n in (0, 3, 7, 70):
        assert_equivalent(m, out, [np.arange(6, dtype=np.int32), np.zeros(6, np.int32), n])


PREFIX_SUM = """
func.func @f(%n: index, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  affine.for %i = 0 to %n {
    %r = affine.for %j = 0 to %n iter_args(%acc = %zero) -> (f32) {
      %x = affine.load %A[%i, %j] : memref<?x?xf32>
      %s = arith.addf %acc, %x : f32
      affine.store %s, %B[%i, %j] : memref<?x?xf32>
      affine.yield %s : f32
    }
  }
  affine.for %i = 0 to %n {
    affine.for %j = 0 to %n {
      %b = affine.load %B[%i, %j] : memref<?x?xf32>
      affine.store %b, %C[%i, %j] : memref<?x?xf32>
    }
  }
  return
}"""


def test_a_slice_never_cuts_a_loop_that_carries_values_in_iter_args():
    """A prefix sum carried in iter_args: a slice of one %j iteration would start from the initial
    value (found in PolyBench's deriche, which fusion used to miscompute); depth 1 keeps %j whole."""
    import analysis
    from analysis.slices import SliceErrorKind

    m = air.parse(PREFIX_SUM)
    src, dst = [op for op in m.functions[0].body.ops if op.name == "affine.for"]
    with pytest.raises(analysis.SliceError) as e:
        analysis.compute_slice(src, dst, 2)
    assert e.value.kind is SliceErrorKind.CUTS_CARRIED_LOOP and "%j" in e.value.reason
    assert analysis.compute_slice(src, dst, 1).is_valid
    pm = PassManager.parse("affine-loop-fusion")
    out = pm.run(m)
    assert "at depth 1:" in [d.message for d in pm.trace.decisions if d.kind == "applied"][0]
    assert "iter_args" in str(out)
    args = int_args(m, symbol=6)
    assert_equivalent(m, out, args)


def test_a_slice_may_cut_a_loop_whose_carried_value_reaches_nothing_it_keeps():
    """The sum carried in iter_args only feeds the loop's unused result: the stores do not depend
    on it, so a one-iteration slice of %j is exact (depth 2 stays legal)."""
    import analysis

    text = PREFIX_SUM.replace("affine.store %s, %B[%i, %j]", "affine.store %x, %B[%i, %j]")
    m = air.parse(text)
    src, dst = [op for op in m.functions[0].body.ops if op.name == "affine.for"]
    assert analysis.compute_slice(src, dst, 2).is_valid
    out = run_pipeline("affine-loop-fusion", m)
    assert_equivalent(m, out, int_args(m, symbol=5))


CHAINED_MATMULS = """func.func @f(%A: memref<8x16xf32>, %B: memref<16x8xf32>, %D: memref<8x4xf32>,
                 %E: memref<8x4xf32>) {
  %C = memref.alloc() : memref<8x8xf32>
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      affine.store %z, %C[%i, %j] : memref<8x8xf32>
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      affine.for %k = 0 to 16 {
        %a = affine.load %A[%i, %k] : memref<8x16xf32>
        %b = affine.load %B[%k, %j] : memref<16x8xf32>
        %p = arith.mulf %a, %b : f32
        %c = affine.load %C[%i, %j] : memref<8x8xf32>
        %s = arith.addf %c, %p : f32
        affine.store %s, %C[%i, %j] : memref<8x8xf32>
      }
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      affine.store %z, %E[%i, %j] : memref<8x4xf32>
    }
  }
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 4 {
      affine.for %k = 0 to 8 {
        %c = affine.load %C[%i, %k] : memref<8x8xf32>
        %d = affine.load %D[%k, %j] : memref<8x4xf32>
        %p = arith.mulf %c, %d : f32
        %e = affine.load %E[%i, %j] : memref<8x4xf32>
        %s = arith.addf %e, %p : f32
        affine.store %s, %E[%i, %j] : memref<8x4xf32>
      }
    }
  }
  memref.dealloc %C : memref<8x8xf32>
  return
}"""


def test_separate_reductions_fuses_inits_but_keeps_contractions_apart():
    """Two chained matmuls: by default the first (with its init) is fused into the second at depth 1 (one
    nest, no contraction left for the matrix units); with ``separate-reductions`` each init goes into its
    contraction and the two contractions stay two nests, the refusal naming both reductions."""
    m = air.parse(CHAINED_MATMULS)
    rng = np.random.default_rng(0)
    args = [rng.integers(-3, 4, s).astype(np.float32) for s in ((8, 16), (16, 8), (8, 4), (8, 4))]
    for options, nests in (("", 1), ("{separate-reductions=true}", 2)):
        out = assert_preserves_semantics("affine-loop-fusion" + options, m, args)
        assert len([op for op in out.functions[0].body.ops if op.name == "affine.for"]) == nests, str(out)
    pm = PassManager.parse("affine-loop-fusion{separate-reductions=true}")
    pm.run(m)
    refusals = [d.message for d in pm.trace.decisions if d.kind == "refused"]
    assert any("both nests hold a reduction (%k and %k)" in r and "separate-reductions" in r for r in refusals), \
        refusals
