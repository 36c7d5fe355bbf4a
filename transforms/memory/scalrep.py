"""Scalar replacement of affine memory accesses: ``affine-scalrep``.

What MLIR's ``affineScalarReplace`` (``mlir/lib/Dialect/Affine/Utils/Utils.cpp``) does, with
exact (isl) dependences deciding every "no intervening access" question, plus a promotion
of memory reductions into ``iter_args``:

- **store-to-load forwarding** (:func:`forward_stores`): an ``affine.load`` reading the
  element that a dominating ``affine.store`` wrote (same subscripts after composing
  ``affine.apply`` and folding constants), with no write to that element in between, takes
  the stored value. "In between" is exact: a write ``W`` intervenes only if some instance of
  it lies after the store's and before the load's on the same element (a RAW dependence
  ``W -> load`` at a depth below the store's loops, ``W`` after the store in the text);
- **redundant load elimination** (:func:`eliminate_redundant_loads`): a load of the element a
  dominating load read, with no write in between, reuses that load's value;
- **dead stores** (:func:`eliminate_dead_stores`, :func:`remove_dead_allocs`): a store
  overwritten by a later store to the same element that always follows it, with no read
  in between; every store to a memref allocated in the function (``memref.alloc/alloca``)
  that nothing reads, then the alloc and its dealloc;
- **reduction promotion** (:func:`promote_reductions_to_iter_args`, beyond MLIR): a loop
  whose body loads and then stores the same loop-invariant element (``C[i, j] = C[i, j] +
  ...`` in ``%k``), that element not otherwise accessed in the loop (no dependence between
  the store and another access of the loop), carries the value in ``iter_args``: one load
  before the loop, one store after it. Applied only when the loop runs at least once every
  time it is reached (:func:`analysis.always_runs`), so no access is added that could fall
  out of bounds.

The pass runs these to a fixpoint. Distinct memref values are taken not to alias (as
everywhere in ``analysis``). Differences from MLIR on ``mlir/test/Dialect/Affine/scalrep.mlir``
(``tests/test_scalrep.py`` runs its cases through ``iree-opt`` and compares): the same
structure on every case we parse, except that reductions are promoted (``@reduction_multi_store``)
and vector loads/stores are not forwarded (they do block forwarding). Dead local memrefs
are removed whether or not a load of them was forwarded (MLIR: only then). Ops we do not
model (``scf``, ``gpu.alloc``, ``memref.cast``, ``test.affine_scope``) cannot be parsed,
so those MLIR cases are not run.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import analysis
from affine_ir import AffineMap, FuncOp, Operation, OpResult, Value
from affine_ir.dialects.affine import AffineForOp, AffineLoadOp, AffineStoreOp

from ..cleanup.dce import write_only_allocations
from ..errors import TransformError
from ..loop_utils import access_subscripts, at_location, enclosing_function, loop_name, value_name
from ..pass_base import Pass, PassContext, option, register_pass

__all__ = [
    "ScalarReplacement", "ScalrepCounts", "eliminate_dead_stores", "eliminate_redundant_loads", "forward_stores",
    "promote_reduction", "promote_reductions_to_iter_args", "remove_dead_allocs", "replace_scalars",
    "same_element",
]

PASS = "affine-scalrep"
Record = Callable[[str, Operation, str], None]


def _no_record(kind: str, op: Operation, msg: str) -> None:
    pass


# -- accesses ------------------------------------------------------------------------------------
def same_element(a: Operation, b: Operation) -> bool:
    """Whether two affine accesses name the same element of the same memref whenever both run
    with the same values of the SSA values they use: the memref is the same value and the
    subscripts are equal as affine functions once ``affine.apply`` ops are composed in and
    index constants folded (MLIR's ``MemRefAccess`` equality). ``A[%t]`` with
    ``%t = affine.apply (d0) -> (d0 + 1)(%i)`` is the same element as ``A[%i + 1]``."""
    if a.memref is not b.memref:
        return False
    leaves: list[Value] = []
    return access_subscripts(a, leaves) == access_subscripts(b, leaves)


def _dominates(a: Operation, b: Operation) -> bool:
    """``a`` runs before ``b`` every time ``b`` runs: ``a``'s block encloses ``b``, ``a`` first."""
    x = b
    while x is not None and x.parent is not a.parent:
        x = x.parent_op
    return x is not None and x is not a and a.parent.is_before(a, x)


def _defined_outside(v: Value, loop: Operation) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op
    return op is not None and op is not loop and not loop.is_ancestor_of(op)


class _Facts:
    """The dependence analysis of a function (made on first use: structural checks come first),
    indexed by op, and the affine accesses grouped by element (memref and composed subscripts)
    in program order; statements and ops erased since are skipped.

    The groups and the per-memref reads and writes in program order let each question look
    only at the accesses that can answer it, so straight-line code (a fully unrolled loop) is
    handled in near-linear time instead of comparing every pair of accesses."""

    def __init__(self, func: FuncOp):
        self.func = func
        self.erased: set[Operation] = set()
        self._leaves: list[Value] = []
        self._subscripts: dict[Operation, tuple] = {}
        self._analysis: analysis.DependenceAnalysis | None = None
        self.statement: dict[Operation, object] = {}
        self.by_memref: dict[Value, list] = {}
        self._writes: dict[Value, tuple[list, list]] = {}  # memref -> (paths, statements), program order
        self._reads: dict[Value, tuple[list, list]] = {}
        self._groups: dict[tuple, list[Operation]] | None = None
        self._group_index: dict[Operation, tuple[list[Operation], int]] = {}

    @property
    def analysis(self) -> analysis.DependenceAnalysis:
        if self._analysis is None:
            self._analysis = analysis.DependenceAnalysis(self.func)
            for s in sorted(self._analysis.statements, key=lambda t: t.path):
                self.by_memref.setdefault(s.memref, []).append(s)
                if not s.opaque:
                    self.statement[s.op] = s
                for table, member in ((self._writes, s.is_write), (self._reads, not s.is_write or s.opaque)):
                    if member:
                        paths, stmts = table.setdefault(s.memref, ([], []))
                        paths.append(s.path)
                        stmts.append(s)
        return self._analysis

    @property
    def scop(self) -> analysis.Scop:
        return self.analysis.scop

    def alive(self, op: Operation) -> bool:
        return op not in self.erased

    def erase(self, op: Operation) -> None:
        self.erased.add(op)
        op.erase()

    def _key(self, op: Operation) -> tuple:
        if op not in self._subscripts:
            self._subscripts[op] = access_subscripts(op, self._leaves)
        return (op.memref, self._subscripts[op])

    def same_element(self, a: Operation, b: Operation) -> bool:
        """:func:`same_element`, with the subscripts of each op computed once."""
        return a.memref is b.memref and self._key(a) == self._key(b)

    def _group(self, op: Operation) -> tuple[list[Operation], int]:
        """The loads and stores of ``op``'s element (``op`` among them) in program order, and
        the position of ``op`` there (an op made since the grouping is alone in its group)."""
        if self._groups is None:
            self._groups = {}
            for x in self.func.walk():
                if type(x) in (AffineLoadOp, AffineStoreOp):
                    group = self._groups.setdefault(self._key(x), [])
                    self._group_index[x] = (group, len(group))
                    group.append(x)
        return self._group_index.get(op, ([op], 0))

    def nearest_before(self, op: Operation, kind: type) -> Operation | None:
        """The live access of type ``kind`` to ``op``'s element that dominates ``op`` and is the
        closest before it (every other dominating one dominates it), or None."""
        group, k = self._group(op)
        for i in range(k - 1, -1, -1):
            c = group[i]
            if type(c) is kind and self.alive(c) and _dominates(c, op):
                return c
        return None

    def later_of_element(self, op: Operation, kind: type) -> list[Operation]:
        """The live accesses of type ``kind`` to ``op``'s element after ``op`` in program order."""
        group, k = self._group(op)
        return [c for c in group[k + 1:] if type(c) is kind and self.alive(c)]

    def modelled(self, op: Operation):
        """The statement of an affine access that isl models exactly, else None."""
        s = self.analysis and self.statement.get(op)
        return s if s is not None and s.is_affine and not s.in_unknown_region else None

    def others(self, s):
        """The live statements on ``s``'s memref other than ``s``."""
        return [t for t in self.by_memref[s.memref] if t is not s and t.op not in self.erased]

    def write_between(self, src, load) -> analysis.Dependence | None:
        """A write that may touch ``load``'s element after ``src`` (which dominates ``load``) and
        before ``load``: a dependence ``W -> load`` with the loops of ``src`` at equal IVs and
        ``W`` after ``src`` in the text; None when there is none.

        Only writes after ``src`` in the text are asked; past ``load``, only those sharing a
        loop with ``load`` inside ``src``'s loops (the contiguous rest of ``load``'s loop): a
        later write outside it reaches ``load`` at no depth below ``src``'s loops."""
        depth = len(src.loops)
        paths, writes = self._writes.get(src.memref, ((), ()))
        for w in writes[bisect_right(paths, src.path):]:
            if w.path > load.path and self.scop.common_depth(w, load) <= depth:
                break
            if w.op in self.erased:
                continue
            dep = self.analysis.pair(w, load)
            if dep is not None and dep.depths[-1] > depth:
                return dep
        return None

    def read_between(self, store, later) -> analysis.Dependence | None:
        """A read (or op of unknown effect) of ``store``'s element after ``store`` and before
        ``later`` (a store that always follows it, at ``later``'s loops' IVs), else None.

        Asked: the reads between the two in the text, and those before ``store`` in its loop
        inside ``later``'s loops (a read outside it depends on ``store`` at no such depth)."""
        depth = len(later.loops)
        paths, reads = self._reads.get(store.memref, ((), ()))
        lo, hi = bisect_left(paths, store.path), bisect_left(paths, later.path)
        before = []
        for r in reversed(reads[:lo]):
            if self.scop.common_depth(r, store) <= depth:
                break
            before.append(r)
        for r in [*before, *reads[lo:hi]]:
            if r is later or r is store or r.op in self.erased:
                continue
            dep = self.analysis.pair(store, r)
            if dep is not None and dep.depths[-1] > depth:
                return dep
        return None


def _accesses(func: FuncOp, cls: type) -> list[Operation]:
    return [op for op in func.walk() if type(op) is cls]


def _nearest(op: Operation, kind: type, facts: _Facts):
    """The access of type ``kind`` to ``op``'s element dominating ``op`` closest before it, and
    the statements of both (modelled exactly), or None."""
    best = facts.nearest_before(op, kind)
    if best is None:
        return None
    sb, so = facts.modelled(best), facts.modelled(op)
    return None if sb is None or so is None else (best, sb, so)


# -- forwarding and redundant loads --------------------------------------------------------------
def forward_stores(func: FuncOp, facts: _Facts | None = None, record: Record = _no_record) -> int:
    """Replace each ``affine.load`` whose element was last written by a dominating
    ``affine.store`` (no write of that element in between, exact) by the stored value;
    returns how many loads were replaced (and erased).

    Before::

        affine.for %i = 0 to 10 {
          affine.store %x, %m[%i] : memref<10xf32>
          %v = affine.load %m[%i] : memref<10xf32>
          %s = arith.addf %v, %v : f32
        }

    After (the store stays; :func:`remove_dead_allocs` may remove it)::

        affine.for %i = 0 to 10 {
          affine.store %x, %m[%i] : memref<10xf32>
          %s = arith.addf %x, %x : f32
        }
    """
    facts = facts or _Facts(func)
    count = 0
    for load in _accesses(func, AffineLoadOp):
        if not facts.alive(load):
            continue
        found = _nearest(load, AffineStoreOp, facts)
        if found is None or facts.write_between(found[1], found[2]) is not None:
            continue
        store = found[0]
        record("applied", load, f"forwarded the value stored to {value_name(load.memref)}{at_location(store)} "
                                "(store-to-load forwarding)")
        load.result.replace_all_uses_with(store.value)
        facts.erase(load)
        count += 1
    return count


def eliminate_redundant_loads(func: FuncOp, facts: _Facts | None = None, record: Record = _no_record) -> int:
    """Replace each ``affine.load`` of the element that a dominating load read, with no write
    of it in between (exact), by that load's value; returns how many loads were erased.

    Before::

        %a = affine.load %A[%i] : memref<10xf32>
        %b = affine.load %A[%i] : memref<10xf32>
        %s = arith.addf %a, %b : f32

    After::

        %a = affine.load %A[%i] : memref<10xf32>
        %s = arith.addf %a, %a : f32
    """
    facts = facts or _Facts(func)
    count = 0
    for load in _accesses(func, AffineLoadOp):
        if not facts.alive(load):
            continue
        found = _nearest(load, AffineLoadOp, facts)
        if found is None or facts.write_between(found[1], found[2]) is not None:
            continue
        first = found[0]
        record("applied", load, f"reused the load of {value_name(load.memref)}{at_location(first)} (redundant load)")
        load.result.replace_all_uses_with(first.result)
        facts.erase(load)
        count += 1
    return count


# -- dead stores ------------------------------------------------------------------------------------
def eliminate_dead_stores(func: FuncOp, facts: _Facts | None = None, record: Record = _no_record) -> int:
    """Erase each ``affine.store`` whose element is always overwritten by a later store to the
    same element (in an enclosing block, after it) with no read of it in between (exact);
    returns how many stores were erased (MLIR's ``findUnusedStore``).

    Before::

        affine.store %one, %out[32 * %i] : memref<512xf32>
        affine.store %two, %out[32 * %i] : memref<512xf32>

    After::

        affine.store %two, %out[32 * %i] : memref<512xf32>
    """
    facts = facts or _Facts(func)
    count = 0
    for store in _accesses(func, AffineStoreOp):
        if not facts.alive(store):
            continue
        for later in facts.later_of_element(store, AffineStoreOp):
            if not _dominates_after(store, later):
                continue
            s1, s2 = facts.modelled(store), facts.modelled(later)
            if s1 is None or s2 is None or facts.read_between(s1, s2) is not None:
                continue
            record("applied", store, f"erased a store to {value_name(store.memref)} overwritten by the later store"
                                     f"{at_location(later)} (dead store)")
            facts.erase(store)
            count += 1
            break
    return count


def _dominates_after(first: Operation, later: Operation) -> bool:
    """``later`` runs after ``first`` every time ``first`` runs: ``later``'s block encloses it, after."""
    x = first
    while x is not None and x.parent is not later.parent:
        x = x.parent_op
    return x is not None and x is not later and later.parent.is_before(x, later)


def remove_dead_allocs(func: FuncOp, record: Record = _no_record, facts: _Facts | None = None) -> int:
    """Erase every memref allocated in ``func`` (``memref.alloc/alloca``) that is only written
    (its users are stores and deallocs), with those stores and deallocs; returns how many
    memrefs were removed.

    Before::

        %m = memref.alloc() : memref<10xf32>
        affine.for %i = 0 to 10 {
          affine.store %x, %m[%i] : memref<10xf32>
        }
        memref.dealloc %m : memref<10xf32>

    After::

        affine.for %i = 0 to 10 {
        }
    """
    count = 0
    for found in write_only_allocations(func):
        users = [*found.stores, *found.deallocs]
        record("applied", found.alloc, f"removed {value_name(found.alloc.result)} (never read) and its "
                                       f"{len(users)} stores/deallocs")
        for u in [*users, found.alloc]:
            if facts is not None:
                facts.erase(u)
            else:
                u.erase()
        count += 1
    return count


# -- reductions into iter_args ------------------------------------------------------------------------
def _composed_access(op: Operation) -> tuple[AffineMap, list[Value]]:
    """The subscripts of ``op`` as a map over the values they use once ``affine.apply`` ops are
    composed in (``%t = affine.apply (d0) -> (d0 + 1)(%i)``, ``A[%t]`` -> ``(d0) -> (d0 + 1)``, ``[%i]``)."""
    leaves: list[Value] = []
    exprs = access_subscripts(op, leaves)
    return AffineMap(len(leaves), 0, exprs), leaves


def _invariant_access(op: Operation, loop: AffineForOp) -> bool:
    """The memref and every value the subscripts use (through affine.apply) come from outside ``loop``."""
    return _defined_outside(op.memref, loop) and all(_defined_outside(v, loop) for v in _composed_access(op)[1])


def _reduction_pairs(loop: AffineForOp) -> list[tuple[AffineLoadOp, AffineStoreOp]]:
    """(load, store) pairs directly in ``loop``'s body: the same element, invariant in the loop
    (through affine.apply), the load first and the only load of that element before the store.
    One pass over the body, loads grouped by element."""
    pairs = []
    leaves: list[Value] = []
    loads: dict[tuple, list[AffineLoadOp]] = {}
    for op in loop.body.ops:
        if type(op) is AffineLoadOp:
            loads.setdefault((op.memref, access_subscripts(op, leaves)), []).append(op)
        elif type(op) is AffineStoreOp and _invariant_access(op, loop):
            before = loads.get((op.memref, access_subscripts(op, leaves)), [])
            if len(before) == 1:
                pairs.append((before[0], op))
    return pairs


def _check_pair(loop: AffineForOp, load: AffineLoadOp, store: AffineStoreOp, facts: _Facts) -> None:
    """Raise TransformError unless the element of ``store`` is accessed in ``loop`` only by
    ``load`` and ``store`` (no dependence between the store and another access of the loop)."""
    ss, ls = facts.modelled(store), facts.modelled(load)
    if ss is None or ls is None:
        raise TransformError(PASS, f"cannot promote the reduction on {value_name(store.memref)} in "
                                   f"({loop_name(loop)}): its accesses are not modelled exactly", loops=[loop])
    depth = next(k for k, lp in enumerate(ss.loops) if lp.op is loop) + 1
    for x in facts.others(ss):
        if x is ls or not loop.is_ancestor_of(x.op):
            continue
        for dep in (facts.analysis.pair(ss, x), facts.analysis.pair(x, ss)):
            if dep is not None and dep.depths[-1] >= depth:
                raise TransformError(PASS, f"cannot promote the reduction on {value_name(store.memref)} in "
                                           f"({loop_name(loop)}): the element is also accessed in the loop: {dep}",
                                     loops=[loop], dependence=dep)
    if store.parent is not loop.body or load.parent is not loop.body:
        raise TransformError(PASS, "the load and the store must be in the loop body", loops=[loop])


def promote_reduction(loop: AffineForOp, store: AffineStoreOp, facts: _Facts | None = None) -> AffineLoadOp:
    """Promote the memory reduction ending in ``store`` into a new ``iter_args`` value of
    ``loop``; returns the load inserted before the loop. Raises TransformError (the IR
    unchanged) when ``store`` is not part of a load/store pair of one loop-invariant element,
    when another access of the loop may touch that element (naming the dependence), or when
    the loop may run zero times. See :func:`promote_reductions_to_iter_args`."""
    facts = facts or _Facts(enclosing_function(loop))
    pair = next(((ld, st) for ld, st in _reduction_pairs(loop) if st is store), None)
    if pair is None:
        raise TransformError(PASS, f"cannot promote in ({loop_name(loop)}): the store to "
                                   f"{value_name(store.memref)} is not a loop-invariant load/store pair of its body",
                             loops=[loop])
    _check_pair(loop, pair[0], store, facts)
    _check_runs(loop, facts)
    return _promote(loop, [pair])[0]


def _check_runs(loop: AffineForOp, facts: _Facts) -> None:
    if not analysis.always_runs(loop, facts.scop):
        raise TransformError(PASS, f"cannot promote in ({loop_name(loop)}): the loop may run zero times, and "
                                   "the load before it could then read out of bounds", loops=[loop])


def promote_reductions_to_iter_args(loop: AffineForOp, facts: _Facts | None = None,
                                    record: Record = _no_record) -> int:
    """Carry every promotable memory reduction of ``loop`` in ``iter_args``; returns how many.

    A pair ``%v = affine.load C[f]`` ... ``affine.store %w, C[f]`` directly in the body, ``f``
    invariant in the loop, the element accessed by nothing else in the loop (exact), becomes
    a load before the loop, an iter_arg, and a store after it. Only for a loop that runs at
    least once each time it is reached. Guarantees: the same values are stored; the IR is
    unchanged where nothing is promotable.

    Before::

        affine.for %k = 0 to 64 {
          %c = affine.load %C[%i, %j] : memref<64x64xf32>
          %s = arith.addf %c, %p : f32
          affine.store %s, %C[%i, %j] : memref<64x64xf32>
        }

    After::

        %c0 = affine.load %C[%i, %j] : memref<64x64xf32>
        %r = affine.for %k = 0 to 64 iter_args(%c = %c0) -> (f32) {
          %s = arith.addf %c, %p : f32
          affine.yield %s : f32
        }
        affine.store %r, %C[%i, %j] : memref<64x64xf32>
    """
    pairs = _reduction_pairs(loop)
    if not pairs:
        return 0
    facts = facts or _Facts(enclosing_function(loop))
    ok = []
    for load, store in pairs:
        try:
            _check_pair(loop, load, store, facts)
            ok.append((load, store))
        except TransformError as e:
            record("refused", loop, e.reason)
    if not ok:
        return 0
    try:
        _check_runs(loop, facts)
    except TransformError as e:
        record("refused", loop, e.reason)
        return 0
    _promote(loop, ok)
    counts: dict[str, int] = {}
    for _, st in ok:
        counts[value_name(st.memref)] = counts.get(value_name(st.memref), 0) + 1
    names = ", ".join(name if n == 1 else f"{name} (x{n})" for name, n in counts.items())
    record("applied", loop, f"promoted {len(ok)} reduction(s) on {names} into iter_args of ({loop_name(loop)})")
    return len(ok)


def _promote(loop: AffineForOp, pairs: list[tuple[AffineLoadOp, AffineStoreOp]]) -> list[AffineLoadOp]:
    block = loop.parent
    inits = []
    for load, _ in pairs:
        m, leaves = _composed_access(load)
        init = AffineLoadOp(load.memref, m, leaves, location=load.location, name_hint=load.result.name_hint)
        block.insert_before(loop, init)
        inits.append(init)
        arg = loop.body.add_argument(load.result.type, load.result.name_hint or "acc")
        load.result.replace_all_uses_with(arg)
        load.erase()
    # read the stored values only now: a store may store another pair's load, replaced above
    values = [store.value for _, store in pairs]
    loop.set_operands([*loop.operands, *(i.result for i in inits)])
    term = loop.body.terminator
    term.set_operands([*term.operands, *values])
    anchor = loop
    for (_, store), init in zip(pairs, inits):
        result = OpResult(init.result.type, loop, len(loop.results), None)
        loop.results.append(result)
        m, leaves = _composed_access(store)
        new = AffineStoreOp(result, store.memref, m, leaves, location=store.location)
        block.insert_after(anchor, new)
        anchor = new
        store.erase()
    return inits


# -- the fixpoint and the pass ---------------------------------------------------------------------------
@dataclass
class ScalrepCounts:
    """What :func:`replace_scalars` did: loads forwarded, redundant loads, dead stores, dead
    memrefs, reductions promoted, rounds to the fixpoint."""

    forwarded: int = 0
    redundant_loads: int = 0
    dead_stores: int = 0
    dead_memrefs: int = 0
    promoted: int = 0
    rounds: int = 0

    @property
    def total(self) -> int:
        return self.forwarded + self.redundant_loads + self.dead_stores + self.dead_memrefs + self.promoted


def replace_scalars(func: FuncOp, promote_reductions: bool = True, record: Record = _no_record,
                    max_rounds: int = 16) -> ScalrepCounts:
    """Run forwarding, redundant-load and dead-store elimination, dead-memref removal and (when
    ``promote_reductions``) reduction promotion on ``func`` until nothing changes; one exact
    dependence analysis per round. ``record(kind, op, message)`` is told each decision
    (``"applied"`` or ``"refused"``). Guarantees: ``func`` computes what it computed. Returns
    the counts.

    Before::

        %m = memref.alloc() : memref<1xf32>
        affine.store %zero, %m[0] : memref<1xf32>
        affine.for %k = 0 to 8 {
          %c = affine.load %m[0] : memref<1xf32>
          %s = arith.addf %c, %x : f32
          affine.store %s, %m[0] : memref<1xf32>
        }
        %r = affine.load %m[0] : memref<1xf32>

    After (promoted, then forwarded twice; the memref is dead)::

        %0 = affine.for %k = 0 to 8 iter_args(%c = %zero) -> (f32) {
          %s = arith.addf %c, %x : f32
          affine.yield %s : f32
        }
        (uses of %r now use %0)
    """
    counts = ScalrepCounts()
    for _ in range(max_rounds):
        counts.rounds += 1
        facts = _Facts(func)
        step = Counter(forwarded=forward_stores(func, facts, record))
        step["redundant_loads"] = eliminate_redundant_loads(func, facts, record)
        step["dead_stores"] = eliminate_dead_stores(func, facts, record)
        step["dead_memrefs"] = remove_dead_allocs(func, record, facts)
        if promote_reductions:  # erasing accesses leaves the other statements' dependences as they were
            step["promoted"] = _promote_all(func, facts, record)
        for k, v in step.items():
            setattr(counts, k, getattr(counts, k) + v)
        if not any(step.values()):
            break
    return counts


def _promote_all(func: FuncOp, facts: _Facts, record: Record) -> int:
    """Promote reductions in the loops of ``func``, innermost first; a loop enclosing one
    promoted in this round waits for the next round (its accesses changed since ``facts``)."""
    done: list[AffineForOp] = []
    count = 0
    for loop in reversed([op for op in func.walk() if isinstance(op, AffineForOp)]):
        if any(loop.is_ancestor_of(d) for d in done):
            continue
        n = promote_reductions_to_iter_args(loop, facts, record)
        if n:
            done.append(loop)
            count += n
    return count


@register_pass
@dataclass(frozen=True)
class ScalarReplacement(Pass):
    """``affine-scalrep``: see the module docstring."""

    name = "affine-scalrep"
    summary = "Replace affine memref accesses by scalars (forwarding, redundant loads, dead stores, reductions)"
    promote_reductions: bool = option(True, "carry loop-invariant memory reductions in iter_args (not in MLIR)")

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        seen: set[tuple[str, Operation, str]] = set()

        def record(kind: str, op: Operation, msg: str) -> None:
            if (kind, op, msg) not in seen:  # refusals recur in each round of the fixpoint
                seen.add((kind, op, msg))
                getattr(ctx, kind)(op, msg)

        c = replace_scalars(func, self.promote_reductions, record)
        if c.total:
            ctx.note(func, f"@{func.sym_name}: {c.forwarded} loads forwarded, {c.redundant_loads} redundant loads, "
                           f"{c.dead_stores} dead stores, {c.dead_memrefs} dead memrefs, {c.promoted} reductions "
                           f"promoted ({c.rounds} rounds)")
