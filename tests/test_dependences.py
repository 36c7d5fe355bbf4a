"""Dependences (analysis.dependences) against brute force, by hand, and the MLIR remarks.

The property test runs random programs (affine_ir.testing.programs) with symbols bound to
values from SYMBOL_RANGE and checks, against every access the tracer executes:
- the dependent iteration pairs (src op, src IVs, dst op, dst IVs) isl finds are exactly
  the pairs of accesses to one element, at least one a write, src first in time;
- the depths of each (src, dst) and the distance range of each depth are those of the pairs
  (exact once the symbols are fixed; the symbolic ranges contain them);
- is_parallel (at those symbol values) is true exactly when no two dependent accesses are in
  different iterations of the loop with equal outer IVs (and the loop has no iter_args).
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import affine_ir as air
from affine_ir.core import OP_REGISTRY, Operation
from affine_ir.dialects.affine import AffineForOp, AffineParallelOp
from affine_ir.testing import SYMBOL_RANGE, kernel_function, programs, trace_accesses
from affine_ir.traits import EffectKind, MemoryEffect, Pure
from affine_ir.types import IndexType
from analysis.dependence_check import format_remarks, memref_dependence_remarks
from analysis.dependence_graph import DependenceGraph
from analysis.dependences import Dependence, dependences, format_range
from analysis.loops import is_parallel, is_permutable, parallel_decision, permutable_bands
from runtime.cli import split_input

GOLDEN = Path(__file__).resolve().parent / "filecheck"


# -- brute force ------------------------------------------------------------------------------
def _brute_pairs(func, symbols):
    groups = defaultdict(list)
    for a in trace_accesses(func, symbols):
        groups[(id(a.memref), a.index)].append(a)
    pairs = set()
    for accesses in groups.values():
        for x, a in enumerate(accesses):
            for b in accesses[x + 1 :]:
                if a.is_write or b.is_write:
                    pairs.add((a.op, a.ivs, b.op, b.ivs))
    return pairs


def _loop_depth(loop) -> int:
    """IVs of loops enclosing ``loop`` (its IV's index in the trace's IV tuples)."""
    n = 0
    for a in loop.ancestors():
        if isinstance(a, AffineForOp):
            n += 1
        elif isinstance(a, AffineParallelOp):
            n += len(a.ivs)
    return n


def _check_against_brute_force(func, symbols) -> int:
    deps = dependences(func)
    by_ops = {(id(d.src), id(d.dst)): d for d in deps}
    assert len(by_ops) == len(deps)
    brute = _brute_pairs(func, symbols)
    got = set()
    for d in deps:
        inst = d.instantiate(symbols)
        if inst is not None:
            got |= {(d.src, s, d.dst, t) for s, t in inst.iteration_pairs(symbols)}
    key = lambda p: (id(p[0]), p[1], id(p[2]), p[3])  # noqa: E731
    assert {key(p) for p in got} == {key(p) for p in brute}, "dependent iteration pairs differ"
    # Depths and distance ranges per (src, dst).
    ranges: dict = defaultdict(lambda: defaultdict(list))
    for a_op, s, b_op, t in brute:
        d = by_ops[(id(a_op), id(b_op))]
        c = d.common_depth
        depth = next((k + 1 for k in range(c) if s[k] != t[k]), c + 1)
        ranges[(id(a_op), id(b_op))][depth].append(tuple(t[k] - s[k] for k in range(c)))
    for k, per_depth in ranges.items():
        d = by_ops[k]
        inst = d.instantiate(symbols)
        assert set(inst.depths) == set(per_depth), (str(d), inst.depths, sorted(per_depth))
        for depth, dists in per_depth.items():
            exact = tuple((min(x[j] for x in dists), max(x[j] for x in dists)) for j in range(d.common_depth))
            assert inst.distances_at(depth) == exact, (str(d), depth)
            for (lo, hi), (blo, bhi) in zip(d.distances_at(depth), exact):
                assert (lo is None or lo <= blo) and (hi is None or hi >= bhi)
    # is_parallel at these symbol values.
    for loop in func.walk():
        if not isinstance(loop, AffineForOp):
            continue
        p = _loop_depth(loop)
        inside = {id(o) for o in loop.walk()}
        carried = any(id(a) in inside and id(b) in inside and s[:p] == t[:p] and s[p] != t[p]
                      for a, s, b, t in brute)
        assert is_parallel(loop, symbols=symbols) == (not carried and not loop.iter_args), str(loop)
    return len(brute)


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(max_nests=3, max_statements=3), st.data())
def test_random_programs_agree_with_brute_force(module, data):
    func = kernel_function(module)
    symbols = {a: data.draw(st.integers(*SYMBOL_RANGE)) for a in func.args if isinstance(a.type, IndexType)}
    _check_against_brute_force(func, symbols)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs(max_nests=3, max_statements=3))
def test_graph_remarks_and_bands_agree_with_dependences(module):
    """No internal error anywhere, and the graph's memref edges are the dependences between nests."""
    func = kernel_function(module)
    deps = dependences(func, include_rar=True)
    graph = DependenceGraph(func, include_rar=True)
    node_of = {id(n.op): n.id for n in graph.nodes}
    top = {}
    for op in func.body.ops:
        for inner in op.walk():
            top[id(inner)] = node_of.get(id(op))
    expected = {(top[id(d.src)], top[id(d.dst)], id(d.memref), d.kind) for d in deps
                if top[id(d.src)] != top[id(d.dst)]}
    assert {(e.src, e.dst, id(e.value), e.kind) for e in graph.edges if e.kind != "SSA"} == expected
    remarks = memref_dependence_remarks(func)
    assert sum(not m.endswith("= false") for _, m in remarks) == sum(
        len(d.depths) for d in deps if d.kind != "RAR" and d.src.name in ("affine.load", "affine.store")
        and d.dst.name in ("affine.load", "affine.store"))
    for band in permutable_bands(func):
        assert is_permutable(band)


# -- hand-written programs ----------------------------------------------------------------------
def _func(text: str):
    return air.parse(text, "t.mlir").body.ops[0]


def _deps(text: str, **kw) -> list[Dependence]:
    return dependences(_func(text), **kw)


def _summary(deps):
    return sorted((d.kind, d.src_id, d.dst_id, d.depths, d.distances) for d in deps)


SHIFT = """
func.func @f(%A: memref<10xf32>) {
  affine.for %i = 0 to 9 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %A[%i + 1] : memref<10xf32>
  }
  return
}"""


def test_shift_raw_carried_distance_one():
    (d,) = _deps(SHIFT)
    assert (d.kind, d.src_id, d.dst_id, d.carried_depth, d.distances) == ("RAW", 1, 0, 1, ((1, 1),))
    assert d.exact and d.is_loop_carried and d.carrying_loop is d.loops[0]
    assert str(d) == ("RAW %A: S1 (affine.store at t.mlir:5:5) -> S0 (affine.load at t.mlir:4:5) "
                      "carried by %i, distance (1)")
    assert d.iteration_pairs() == {((i,), (i + 1,)) for i in range(8)}
    with pytest.raises(ValueError, match="more than 3"):
        d.iteration_pairs(limit=3)


def test_kinds_and_loop_independent_dependences():
    deps = _deps("""
func.func @f(%A: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %A[%i] : memref<10xf32>
    affine.store %a, %A[%i] : memref<10xf32>
  }
  return
}""", include_rar=True)
    assert _summary(deps) == [("WAR", 0, 1, (2,), ((0, 0),)), ("WAR", 0, 2, (2,), ((0, 0),)),
                              ("WAW", 1, 2, (2,), ((0, 0),))]
    assert all(not d.is_loop_carried and d.carrying_loop is None for d in deps)


def test_read_after_read_only_on_request():
    text = """
func.func @f(%A: memref<10xf32>, %B: memref<10xf32>) {
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    %b = affine.load %A[%i] : memref<10xf32>
  }
  return
}"""
    assert _deps(text) == []
    assert _summary(_deps(text, include_rar=True)) == [("RAR", 0, 1, (2,), ((0, 0),))]


def test_transpose():
    deps = _deps("""
func.func @f(%A: memref<8x8xf32>) {
  affine.for %i = 0 to 8 {
    affine.for %j = 0 to 8 {
      %a = affine.load %A[%j, %i] : memref<8x8xf32>
      affine.store %a, %A[%i, %j] : memref<8x8xf32>
    }
  }
  return
}""")
    war = next(d for d in deps if d.kind == "WAR")
    raw = next(d for d in deps if d.kind == "RAW")
    # load A[j, i] at (i, j) then the store of (j, i): later when j > i; on the diagonal, in
    # the same iteration.
    assert war.depths == (1, 3) and war.distances_at(1) == ((1, 7), (-7, -1))
    assert raw.depths == (1,) and raw.distances_at(1) == ((1, 7), (-7, -1))
    assert war.distances_at(2) is None


def test_triangular_bounds_and_symbolic_distances():
    deps = _deps("""
func.func @f(%A: memref<16x16xf32>, %N: index) {
  affine.for %i = 0 to %N {
    affine.for %j = 0 to affine_map<(d0) -> (d0 + 1)>(%i) {
      %d = affine.load %A[%j, %j] : memref<16x16xf32>
      %a = affine.load %A[%i, %j] : memref<16x16xf32>
      %s = arith.addf %a, %d : f32
      affine.store %s, %A[%i, %j] : memref<16x16xf32>
    }
  }
  return
}""")
    raw = next(d for d in deps if d.kind == "RAW" and d.dst_id == 0)
    assert raw.depths == (1,) and raw.distances == ((1, None), (0, 0))  # i' - i unbounded: %N is
    assert raw.instantiate({_func_arg(raw, "N"): 5}).distances == ((1, 4), (0, 0))
    assert format_range((1, None)) == "[1, +inf]" and format_range((3, 3)) == "3"


def _func_arg(dep: Dependence, name: str):
    return next(v for n, v in dep.params if n == name)


def test_floordiv_and_mod_subscripts():
    deps = _deps("""
func.func @f(%A: memref<8xf32>) {
  %c = arith.constant 1.0 : f32
  affine.for %i = 0 to 16 {
    affine.store %c, %A[%i floordiv 2] : memref<8xf32>
    %v = affine.load %A[%i mod 4] : memref<8xf32>
  }
  return
}""")
    assert _summary(deps) == [("RAW", 0, 1, (1, 2), ((0, 12),)), ("WAR", 1, 0, (1,), ((1, 4),)),
                              ("WAW", 0, 0, (1,), ((1, 1),))]


def test_symbolic_shift_is_bounded_by_the_loop():
    (raw, war) = sorted(_deps("""
func.func @f(%A: memref<32xf32>, %N: index) {
  affine.for %i = 0 to 10 {
    %v = affine.load %A[%i] : memref<32xf32>
    affine.store %v, %A[%i + symbol(%N)] : memref<32xf32>
  }
  return
}"""), key=lambda d: d.kind)
    assert raw.kind == "RAW" and raw.distances == ((1, 9),)  # distance N, for N in [1, 9]
    assert war.depths == (1, 2)  # N < 0 carried, N == 0 loop-independent
    n = _func_arg(raw, "N")
    assert raw.instantiate({n: 3}).distances == ((3, 3),)
    assert raw.instantiate({n: 0}) is None and raw.instantiate({n: 12}) is None


def test_non_affine_access_is_conservative():
    deps = _deps("""
func.func @f(%A: memref<10xf32>, %I: memref<10xindex>) {
  affine.for %i = 0 to 10 {
    affine.for %j = 0 to 10 {
      %k = affine.load %I[%j] : memref<10xindex>
      %a = memref.load %A[%k] : memref<10xf32>
      affine.store %a, %A[%i] : memref<10xf32>
    }
  }
  return
}""")
    war = next(d for d in deps if d.kind == "WAR" and d.memref.name_hint == "A")
    assert not war.exact and war.depths == (1, 2, 3)
    assert war.components == (((1, None), (None, None)), ((0, 0), (1, None)), ((0, 0), (0, 0)))
    assert war.distances == ((0, None), (None, None)) and "may-WAR" in str(war)
    assert war.instantiate({}) is war
    with pytest.raises(ValueError):
        war.iteration_pairs()


def test_unexpressible_index_and_opaque_users_are_conservative():
    # An arith.addi of the IV as a subscript does not verify (MLIR: "operand cannot be used as a
    # dimension id"); the analysis still stays conservative on such unverified IR.
    from affine_ir.parser import parse as parse_unverified

    deps = dependences(parse_unverified("""
func.func @f(%A: memref<10xf32>, %x: index) {
  affine.for %i = 0 to 10 {
    %k = arith.addi %i, %x : index
    %a = affine.load %A[%k] : memref<10xf32>
    affine.store %a, %A[%i] : memref<10xf32>
  }
  func.call @g(%A) : (memref<10xf32>) -> ()
  return
}
func.func private @g(memref<10xf32>)""").body.ops[0])
    assert all(not d.exact for d in deps)
    assert {(d.kind, d.src_id, d.dst_id) for d in deps} >= {("WAR", 0, 1), ("RAW", 1, 0), ("WAR", 0, 2),
                                                            ("WAW", 1, 2)}


def test_vector_accesses_cover_their_elements():
    deps = _deps("""
func.func @f(%A: memref<64xf32>) {
  affine.for %i = 0 to 8 {
    %v = affine.vector_load %A[%i * 8] : memref<64xf32>, vector<8xf32>
    affine.vector_store %v, %A[%i * 8 + 4] : memref<64xf32>, vector<8xf32>
  }
  return
}""")
    # The store of iteration i covers [8i + 4, 8i + 11]: half of what the load of i reads
    # ([8i, 8i + 7]) and of what the load of i + 1 reads; stores do not overlap.
    assert _summary(deps) == [("RAW", 1, 0, (1,), ((1, 1),)), ("WAR", 0, 1, (2,), ((0, 0),))]


def test_affine_parallel_ivs_are_depths():
    deps = _deps("""
func.func @f(%A: memref<10x10xf32>) {
  affine.parallel (%i, %j) = (0, 0) to (9, 10) {
    %a = affine.load %A[%i, %j] : memref<10x10xf32>
    affine.store %a, %A[%i + 1, %j] : memref<10x10xf32>
  }
  return
}""")
    (raw,) = deps
    assert raw.common_depth == 2 and raw.depths == (1,) and raw.distances == ((1, 1), (0, 0))


def test_a_loop_as_root_fixes_the_outer_ivs():
    func = _func("""
func.func @f(%A: memref<20xf32>) {
  affine.for %i = 0 to 5 {
    affine.for %j = 0 to 10 {
      %a = affine.load %A[%j + %i + 5] : memref<20xf32>
      affine.store %a, %A[%j] : memref<20xf32>
    }
  }
  return
}""")
    outer = func.body.ops[0]
    inner = outer.body.ops[0]
    # Under %j alone (one %i, 0 <= %i < 5): the store of j' = j + i + 5 overwrites what the
    # load of j read: distance i + 5, in [5, 9] given the bounds of %i.
    (war,) = dependences(inner)
    assert (war.kind, war.ivs, war.depths, war.distances) == ("WAR", (inner.induction_var,), (1,), ((5, 9),))
    assert [v for _, v in war.params] == [outer.induction_var]
    at4 = war.instantiate({outer.induction_var: 4})
    assert at4.distances == ((9, 9),) and at4.iteration_pairs() == {((0,), (9,))}
    assert war.instantiate({outer.induction_var: 7}) is None  # %i never is 7
    # The function sees the same pairs with %i equal (depth 2), and more across %i.
    whole = {d.kind: d for d in dependences(func)}
    assert whole["WAR"].depths == (1, 2) and whole["WAR"].distances_at(2) == ((0, 0), (5, 9))
    assert whole["RAW"].depths == (1,) and whole["WAW"].depths == (1,)
    assert not is_parallel(outer) and not is_parallel(inner)


def test_empty_and_no_access_programs():
    assert _deps("func.func @f() {\n  return\n}") == []
    assert dependences(_func("""
func.func @f(%A: memref<10xf32>) {
  affine.for %i = 0 to 0 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %A[%i + 1] : memref<10xf32>
  }
  return
}""")) == []


def test_symbol_names_that_are_isl_keywords():
    deps = _deps("""
func.func @f(%A: memref<64xf32>, %and: index, %mod: index, %i0: index) {
  affine.for %i = 0 to %and {
    %v = affine.load %A[%i + symbol(%mod)] : memref<64xf32>
    affine.store %v, %A[%i + symbol(%i0)] : memref<64xf32>
  }
  return
}""")
    assert {d.kind for d in deps} == {"RAW", "WAR"}


def test_rejects_other_roots():
    func = _func(SHIFT)
    with pytest.raises(TypeError):
        dependences(func.body.ops[0].body.ops[0])


# -- dependence graph -------------------------------------------------------------------------
GRAPH = """
func.func @f(%A: memref<10xf32>, %B: memref<10xf32>, %C: memref<10xf32>) {
  %t = memref.alloc() : memref<10xf32>
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 10 {
    %a = affine.load %A[%i] : memref<10xf32>
    affine.store %a, %t[%i] : memref<10xf32>
  }
  affine.for %i = 0 to 5 {
    %a = affine.load %t[%i] : memref<10xf32>
    affine.store %a, %B[%i] : memref<10xf32>
  }
  affine.for %i = 5 to 10 {
    affine.store %z, %B[%i] : memref<10xf32>
  }
  %s = affine.for %i = 0 to 10 iter_args(%acc = %z) -> (f32) {
    %a = affine.load %A[%i] : memref<10xf32>
    %r = arith.addf %acc, %a : f32
    affine.yield %r : f32
  }
  %u = arith.addf %s, %s : f32
  affine.for %i = 0 to 10 {
    affine.store %u, %C[%i] : memref<10xf32>
    affine.store %u, %A[%i] : memref<10xf32>
  }
  memref.dealloc %t : memref<10xf32>
  return
}"""


def test_dependence_graph_nodes_and_edges():
    func = _func(GRAPH)
    g = DependenceGraph(func)
    ops = func.body.ops
    assert [n.op for n in g.nodes] == [ops[0], ops[2], ops[3], ops[4], ops[5], ops[7], ops[8]]
    edges = {(e.src, e.dst, e.kind, e.value.name_hint) for e in g.edges}
    assert edges == {(0, 1, "SSA", "t"), (0, 2, "SSA", "t"), (0, 6, "SSA", "t"), (1, 2, "RAW", "t"),
                     (1, 5, "WAR", "A"), (4, 5, "WAR", "A"), (4, 5, "SSA", "s"), (1, 6, "WAW", "t"),
                     (2, 6, "WAR", "t")}
    # Nodes 2 and 3 store disjoint halves of %B: no edge (exact), so no path.
    assert g.edges_between(2, 3) == [] and not g.has_path(2, 3)
    assert g.has_path(0, 5) and g.has_path(1, 1) and not g.has_path(5, 1)
    assert [n.id for n in g.successors(1)] == [2, 5, 6] and [n.id for n in g.predecessors(5)] == [1, 4]
    assert [n.id for n in g.nodes_accessing(func.args[1])] == [2, 3]
    n1 = g.node(ops[2].body.ops[0])  # any op inside a node finds it
    assert n1.id == 1 and n1.loads == [ops[2].body.ops[0]] and n1.store_op_count(ops[0].result) == 1
    assert n1.load_and_store_memrefs() == [] and g.store_count(func.args[1]) == 2
    assert g.incoming_memref_accesses(2, ops[0].result) == 1 and g.out_edge_count(1) == 3
    assert g.out_edge_count(1, func.args[0]) == 1 and g.memref_edge_count(ops[0].result) == 3
    assert not g.writes_to_live_in_or_escaping_memrefs(1) and g.writes_to_live_in_or_escaping_memrefs(2)
    (dep,) = g.dependences_between(1, 2)
    assert dep.kind == "RAW" and dep.depths == (1,)
    assert not g.edges_between(1, 6)[0].exact  # the dealloc: an opaque user
    rar = DependenceGraph(func, include_rar=True)
    assert (1, 4, "RAR") in {(e.src, e.dst, e.kind) for e in rar.edges}
    assert "node 1: affine.for" in str(g)


# -- MLIR's -test-memref-dependence-check -----------------------------------------------------
def test_remarks_on_a_small_function():
    func = _func(SHIFT)
    remarks = memref_dependence_remarks(func)
    assert [m for _, m in remarks] == [
        "dependence from 0 to 0 at depth 1 = false", "dependence from 0 to 0 at depth 2 = false",
        "dependence from 0 to 1 at depth 1 = false", "dependence from 0 to 1 at depth 2 = false",
        "dependence from 1 to 0 at depth 1 = [1, 1]", "dependence from 1 to 0 at depth 2 = false",
        "dependence from 1 to 1 at depth 1 = false", "dependence from 1 to 1 at depth 2 = false"]
    assert format_remarks(func).splitlines()[4] == "t.mlir:5:5: remark: dependence from 1 to 0 at depth 1 = [1, 1]"
    assert format_remarks(func, "x.mlir").startswith("x.mlir:4:5: remark:")


def _golden_files():
    return sorted(GOLDEN.glob("dependence-check-*.mlir"))


def test_at_least_15_golden_programs():
    files = _golden_files()
    funcs = sum(len(re.findall(r"^func\.func @", p.read_text(), re.M)) for p in files)
    assert len(files) >= 15 and funcs >= 40


@pytest.mark.parametrize("path", _golden_files(), ids=lambda p: p.name)
def test_golden_remarks(path):
    """The CHECK lines of the golden files, checked without the CLI: every remark, in order."""
    text = path.read_text()
    expected = [m.group(2) for m in re.finditer(r"// (CHECK|CHECK-NEXT): *(.*)", text)]
    got = []
    for chunk, offset in split_input(text):
        module = air.parse(chunk, str(path), line_offset=offset)
        got += [line[line.index(".mlir:"):] for line in format_remarks(module).splitlines()]
    assert got == expected


# -- ops the analysis has never heard of: their declared traits and effects decide ------------------------------------

class _ScaleOp(Operation):
    """A pure op on values (declared Pure, nothing else)."""

    name = "test.dep_scale"
    traits = frozenset({Pure})


class _PeekOp(Operation):
    """Reads some element of its memref operand (a declared READ effect, no access interface)."""

    name = "test.dep_peek"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.READ, self.operands[0]),)


class _PokeOp(Operation):
    """Writes some element of its memref operand (a declared WRITE effect)."""

    name = "test.dep_poke"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.WRITE, self.operands[0]),)


class _MysteryOp(Operation):
    """Declares nothing: its effects are unknown."""

    name = "test.dep_mystery"


#: Defining a named op class registers it; these stay out of the registry (other tests enumerate it).
_NEW_OPS = (_ScaleOp, _PeekOp, _PokeOp, _MysteryOp)
for _cls in _NEW_OPS:
    OP_REGISTRY.pop(_cls.name, None)

COPY_LOOP = """
func.func @f(%A: memref<64xf32>, %B: memref<64xf32>, %C: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %v = affine.load %A[%i] : memref<64xf32>
    affine.store %v, %B[%i] : memref<64xf32>
  }
  return
}"""


@pytest.fixture
def copy_loop():
    """The loop of COPY_LOOP and a function inserting a new op before its store."""
    func = air.parse(COPY_LOOP).body.ops[0]
    loop = next(o for o in func.walk() if isinstance(o, AffineForOp))
    store = loop.body.ops[1]

    def insert(cls, operands, result_types=()):
        return store.parent.insert_before(store, cls(operands, list(result_types)))

    return func, loop, insert


def test_a_new_pure_op_adds_no_dependence(copy_loop):
    func, loop, insert = copy_loop
    before = len(dependences(func))
    v = loop.body.ops[0].result
    insert(_ScaleOp, [v], [v.type])
    assert len(dependences(func)) == before == 0 and is_parallel(loop)


def test_a_new_op_reading_its_memref_depends_only_on_writes_of_it(copy_loop):
    func, loop, insert = copy_loop
    A, B, C = func.body.args
    insert(_PeekOp, [C], [air.types.f32])
    assert dependences(func) == [] and is_parallel(loop)  # nothing writes C; a read adds no dependence
    insert(_PeekOp, [B], [air.types.f32])  # B is stored by the loop: the peek may read any element of it
    deps = [d for d in dependences(func) if d.memref is B]
    assert {d.kind for d in deps} == {"RAW", "WAR"} and all(not d.exact for d in deps)
    assert not is_parallel(loop) and "B" in parallel_decision(loop).reason


def test_a_new_op_writing_its_memref_is_a_write_of_any_element(copy_loop):
    func, loop, insert = copy_loop
    A, B, C = func.body.args
    insert(_PokeOp, [C])
    waw = [d for d in dependences(func) if d.memref is C]
    assert [d.kind for d in waw] == ["WAW"] and waw[0].depths == (1,) and not waw[0].exact
    assert not is_parallel(loop)


def test_a_new_op_with_unknown_effects_blocks_parallelism_and_orders_its_memrefs(copy_loop):
    func, loop, insert = copy_loop
    A, B, C = func.body.args
    mystery = insert(_MysteryOp, [])
    decision = parallel_decision(loop)
    assert not decision.parallel and "'test.dep_mystery'" in decision.reason and "unknown" in decision.reason
    mystery.set_operands([A])  # given a memref, it may write any element of it
    load = loop.body.ops[0]
    deps = [d for d in dependences(func) if d.memref is A]
    assert {(d.kind, d.src, d.dst) for d in deps} == {("WAR", load, mystery), ("RAW", mystery, load),
                                                      ("WAW", mystery, mystery)}
    assert all(not d.exact and d.depths[0] == 1 for d in deps)  # carried by %i: no iteration moves past it
    graph = DependenceGraph(func)
    assert graph.node(loop).opaque == [mystery]


def test_a_barrier_in_a_loop_keeps_it_sequential():
    """gpu.barrier declares no effects (unknown): its loop is not parallel, as for a call (before the
    traits only calls and unregistered ops were looked for)."""
    func = air.parse("""
func.func @f(%A: memref<64xf32>) {
  affine.for %i = 0 to 64 {
    %v = affine.load %A[%i] : memref<64xf32>
    gpu.barrier
    affine.store %v, %A[%i] : memref<64xf32>
  }
  return
}""").body.ops[0]
    loop = func.body.ops[0]
    assert all(d.depths[0] > 1 for d in dependences(loop))  # the accesses alone carry nothing
    decision = parallel_decision(loop)
    assert not decision.parallel and "'gpu.barrier'" in decision.reason
