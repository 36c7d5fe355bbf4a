"""The greedy pattern driver: :func:`apply_patterns_greedily` (MLIR's ``GreedyPatternRewriteDriver``).

Semantics (MLIR's, with the differences listed below):

1. Each *iteration* seeds a worklist with every op nested in ``root`` (post-order: the ops of
   a region before the op holding it, ops of a block in order), and ``root`` itself last when
   ``include_root`` is set.
2. It pops an op and, in this order: erases it if it is trivially dead (unused results and no
   effect but reads and allocating its results; ``config.is_trivially_dead``, by default MLIR's
   ``isOpTriviallyDead``: :func:`affine_ir.traits.is_trivially_dead`), then tries its folder
   (:func:`affine_ir.rewrite.folder_of`: the values replacing its results, or attributes
   materialized as constants before it, or its own results after an in-place change), then the
   patterns whose root class it is an instance of, highest ``benefit`` first (ties: in the given
   order), until one applies.
3. Every change reported by the :class:`~affine_ir.rewrite.PatternRewriter` puts ops back on the
   worklist: an inserted or modified op, the users of replaced results, the defining ops of
   an erased op's operands (they may have become dead), the defining ops left unused by any
   rewrite of an op (an in-place change may drop an operand), and the parent op of each of
   those (a loop whose body changed). Erased ops leave the worklist. Only ops in the scope
   (nested in ``root``, or ``root``) are added.
4. An iteration ends when the worklist is empty. If it changed anything, the next iteration
   starts from a fresh seed (``config.on_iteration`` is called before each seed, e.g. to drop
   analysis caches); the driver stops at the first iteration that changes nothing
   (converged), when a rewritten ``root`` was itself erased or replaced (converged), after
   ``config.max_iterations`` iterations (MLIR's default, 10), or after ``config.max_rewrites``
   rewrites. :class:`RewriteResult` says whether it converged.

Differences from MLIR's driver: the worklist is first-in first-out (MLIR pops the last op
pushed), so an iteration visits the seed in program order (defining ops before their users,
bodies before their loops) and the revisits after it; this is the order of the sweeps the
canonicalizer made before the driver existed (their fixpoints are the same up to the order,
and so the names, of the constants hoisted: a constant that a revisit folds in the first
iteration, the sweeps made only in their second, after the first hoisting). The parent op
is revisited after a change in it (MLIR revisits all ancestors up to the scope). There is no
region simplification (no CFG: every region here has one block). Constants are not moved to
the top of the region by the folder: callers that want that (``canonicalize``) hoist them as a
separate step.

The driver lives in ``affine_ir`` next to the patterns because it needs nothing but the IR: any
pass, and ops' own canonicalization patterns, use it without importing ``transforms``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .core import Operation, Value
from .rewrite import PatternRewriter, RewriteListener, RewritePattern, folder_of
from .traits import is_trivially_dead

__all__ = ["GreedyRewriteConfig", "RewriteResult", "apply_patterns_greedily", "is_pure_and_unused"]


def is_pure_and_unused(op: Operation) -> bool:
    """A stricter dead-op test than the default (:func:`affine_ir.traits.is_trivially_dead`): ``op``
    is pure, not a terminator, and no result is used (unused loads, allocations and effect-free
    loops stay)."""
    return op.is_pure and not op.is_terminator and not any(r.uses for r in op.results)


def materialize_arith_constant(attr, type_, location) -> Operation:
    """The default constant materializer: an ``arith.constant`` holding ``attr``."""
    from .dialects.arith import ConstantOp

    return ConstantOp(attr, location=location)


@dataclass(frozen=True)
class GreedyRewriteConfig:
    """Options of :func:`apply_patterns_greedily` (MLIR's ``GreedyRewriteConfig``)."""

    max_iterations: int = 10
    max_rewrites: int | None = None
    fold: bool = True
    is_trivially_dead: Callable[[Operation], bool] = is_trivially_dead
    materialize_constant: Callable[..., Operation | None] = materialize_arith_constant
    on_iteration: Callable[[int], None] | None = None


@dataclass(frozen=True)
class RewriteResult:
    """What a run of the driver did: whether anything changed, whether it reached a fixpoint
    (False when a bound stopped it), the iterations run, the rewrites applied (erasures, folds
    and patterns) and their counts by kind: ``erased`` (dead ops), ``folded_to_constant``,
    ``folded_to_value``, ``folded_in_place``, and each pattern's label."""

    changed: bool
    converged: bool
    iterations: int
    rewrites: int
    counts: Counter = field(default_factory=Counter)


class _Worklist:
    """A first-in first-out queue of ops with set semantics (an op is in it at most once)."""

    def __init__(self):
        self._queue: deque[Operation] = deque()
        self._members: set[Operation] = set()

    def push(self, op: Operation) -> None:
        if op not in self._members:
            self._members.add(op)
            self._queue.append(op)

    def pop(self) -> Operation | None:
        while self._queue:
            op = self._queue.popleft()
            if op in self._members:
                self._members.discard(op)
                return op
        return None

    def remove(self, op: Operation) -> None:
        self._members.discard(op)

    def clear(self) -> None:
        self._queue.clear()
        self._members.clear()


def _post_order(op: Operation, out: list[Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                _post_order(child, out)
                out.append(child)


class _GreedyDriver(RewriteListener):
    def __init__(self, root: Operation, patterns: Sequence[RewritePattern], config: GreedyRewriteConfig,
                 include_root: bool):
        self.root = root
        self.config = config
        self.include_root = include_root
        self.patterns = list(patterns)
        self.worklist = _Worklist()
        self.rewriter = PatternRewriter(self)
        self.rewrites = 0
        self.counts: Counter = Counter()
        self._by_class: dict[type, list[RewritePattern]] = {}
        self._folders: dict[type, Callable | None] = {}

    # -- scope and notifications -------------------------------------------------------
    def _in_scope(self, op: Operation) -> bool:
        if op is self.root:
            return self.include_root and op.parent is not None
        return op.parent is not None and self.root.is_ancestor_of(op)

    def _add(self, op: Operation | None) -> None:
        if op is not None and self._in_scope(op):
            self.worklist.push(op)
            parent = op.parent_op
            if parent is not None and self._in_scope(parent):
                self.worklist.push(parent)

    def notify_op_inserted(self, op: Operation) -> None:
        self._add(op)

    def notify_op_modified(self, op: Operation) -> None:
        self._add(op)

    def notify_op_erased(self, op: Operation) -> None:
        parent = op.parent_op
        for inner in op.walk():
            self.worklist.remove(inner)
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, Operation) and owner is not op and not op.is_ancestor_of(owner):
                    self._add(owner)
        if parent is not None and self._in_scope(parent):
            self.worklist.push(parent)

    # -- one op ----------------------------------------------------------------------
    def _patterns_for(self, cls: type) -> list[RewritePattern]:
        found = self._by_class.get(cls)
        if found is None:
            found = [p for p in self.patterns if p.root is None or issubclass(cls, p.root)]
            found.sort(key=lambda p: -p.benefit)  # stable: ties keep the given order
            self._by_class[cls] = found
        return found

    def _folder(self, cls: type) -> Callable | None:
        if cls not in self._folders:
            self._folders[cls] = folder_of(cls) if self.config.fold else None
        return self._folders[cls]

    def _try_fold(self, op: Operation) -> bool:
        fold = self._folder(type(op))
        folded = fold(op) if fold is not None else None
        if folded is None:
            return False
        folded = list(folded)
        if len(folded) == len(op.results) and all(f is r for f, r in zip(folded, op.results)):
            self.rewriter.notify_op_modified(op)  # folded in place
            self.counts["folded_in_place"] += 1
            return True
        values: list[Value] = []
        for f, r in zip(folded, op.results):
            if isinstance(f, Value):
                values.append(f)
                continue
            const = self.config.materialize_constant(f, r.type, op.location)
            if const is None:
                return False
            values.append(self.rewriter.insert_op_before(op, const).results[0])
        self.rewriter.replace_op(op, values)
        self.counts["folded_to_value" if all(isinstance(f, Value) for f in folded) else "folded_to_constant"] += 1
        return True

    def _process(self, op: Operation) -> bool:
        rw = self.rewriter
        rw.start(op)
        if self.config.is_trivially_dead(op):
            rw.erase_op(op)
            self.counts["erased"] += 1
            return True
        definers = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        if self._try_fold(op) or self._apply_pattern(op):
            self._add_unused(definers)
            return True
        return False

    def _apply_pattern(self, op: Operation) -> bool:
        for p in self._patterns_for(type(op)):
            if p.match_and_rewrite(op, self.rewriter):
                self.counts[p.label] += 1
                return True
        return False

    def _add_unused(self, definers: list[Operation]) -> None:
        """Queue the ops that defined operands of a rewritten op and are now unused: an op modified
        in place may have dropped an operand without any erasure to report it."""
        for d in definers:
            if d.parent is not None and not any(r.uses for r in d.results):
                self._add(d)

    # -- iterations -----------------------------------------------------------------
    def _seed(self) -> None:
        self.worklist.clear()
        ops: list[Operation] = []
        _post_order(self.root, ops)
        if self.include_root:
            ops.append(self.root)
        for op in ops:
            self.worklist.push(op)

    def _root_gone(self) -> bool:
        """Whether the root, rewritten itself, was erased or replaced (nothing is left to do)."""
        return self.include_root and self.root.parent is None

    def _bound_hit(self) -> bool:
        return self.config.max_rewrites is not None and self.rewrites >= self.config.max_rewrites

    def _iterate(self) -> bool:
        changed = False
        while not self._bound_hit():
            op = self.worklist.pop()
            if op is None:
                break
            if op.parent is None and op is not self.root:
                continue  # erased or detached since it was queued
            if self._root_gone():
                break
            if self._process(op):
                self.rewrites += 1
                changed = True
        return changed

    def run(self) -> RewriteResult:
        changed_any = False
        iterations = 0
        converged = False
        while iterations < max(1, self.config.max_iterations):
            if self._root_gone():
                converged = True
                break
            iterations += 1
            if self.config.on_iteration is not None:
                self.config.on_iteration(iterations)
            self._seed()
            changed = self._iterate()
            changed_any |= changed
            if not changed:
                converged = True
                break
            if self._bound_hit():
                break
        return RewriteResult(changed_any, converged, iterations, self.rewrites, self.counts)


def apply_patterns_greedily(root: Operation, patterns: Sequence[RewritePattern],
                            config: GreedyRewriteConfig | None = None, *, include_root: bool = False) -> RewriteResult:
    """Rewrite the ops nested in ``root`` (and ``root`` itself with ``include_root``) with
    ``patterns`` and the ops' folders until nothing applies (see the module doc for the exact
    order). Every rewrite goes through a :class:`~affine_ir.rewrite.PatternRewriter`; the result
    says whether anything changed and whether a fixpoint was reached within the bounds of
    ``config``."""
    return _GreedyDriver(root, patterns, config or GreedyRewriteConfig(), include_root).run()
