"""Rewrite patterns and the rewriter through which they change IR (MLIR's ``PatternMatch``).

A :class:`RewritePattern` is a small object: ``match_and_rewrite(op, rewriter) -> bool`` tries
to rewrite ``op`` and says whether it did; ``root`` names the op class(es) it applies to
(None: any op) and ``benefit`` orders patterns that apply to the same op (highest first).

A :class:`PatternRewriter` is the only way a pattern changes IR. Each method keeps use lists
right, gives new ops the location of the op they replace (or stand before) unless they have
one, and tells its :class:`RewriteListener` (the driver, :mod:`affine_ir.rewrite_driver`) what
changed, so the driver can revisit exactly the ops a change may enable:

- :meth:`~PatternRewriter.insert` / :meth:`~PatternRewriter.insert_op_before` /
  :meth:`~PatternRewriter.insert_op_after` (at an insertion point, like a builder);
- :meth:`~PatternRewriter.replace_op`, :meth:`~PatternRewriter.replace_all_uses_with`,
  :meth:`~PatternRewriter.erase_op`;
- :meth:`~PatternRewriter.modify_op_in_place` (a context manager) for attribute or operand
  changes of an op that stays;
- :meth:`~PatternRewriter.inline_block_before`, :meth:`~PatternRewriter.move_op_before`.

Ops declare folders and canonicalization patterns without importing ``transforms``: an op
class may define ``fold(self) -> Sequence[Value | Attribute] | None`` and list
``canonicalization_patterns`` (pattern objects); :func:`register_folder` and
:func:`register_patterns` attach them from outside the class (keyed by op class), which is
how patterns that need analyses are declared next to the op by ``transforms.cleanup``;
:func:`register_trait_folder` gives a folder to every op class with a trait (the arith/math
folder: ``Arithmetic``), so an op added later with the trait is folded too.

These classes live in ``affine_ir`` because they are IR machinery: dialect ops (here) and any
pass (``transforms``, the GPU lowering) use them, and ``affine_ir`` imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar

from .core import Block, Operation, Value

__all__ = [
    "PatternRewriter", "RewriteListener", "RewritePattern", "Rewriter", "folder_of", "patterns_of",
    "register_folder", "register_patterns", "register_trait_folder",
]


class RewritePattern:
    """A rewrite of one op: subclasses set ``root`` (op class or tuple of classes; None for any
    op), ``benefit`` and implement :meth:`match_and_rewrite`."""

    root: ClassVar[type | tuple[type, ...] | None] = None
    benefit: ClassVar[int] = 1

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        """Rewrite ``op`` through ``rewriter`` and return True, or change nothing and return False."""
        raise NotImplementedError

    def applies_to(self, op: Operation) -> bool:
        """Whether ``op`` is an instance of the pattern's root class(es)."""
        return self.root is None or isinstance(op, self.root)

    @property
    def label(self) -> str:
        """The pattern's name in traces: its class name."""
        return type(self).__name__


class RewriteListener:
    """What a rewriter reports; the driver overrides these (the defaults ignore everything)."""

    def notify_op_inserted(self, op: Operation) -> None:
        """``op`` was inserted into a block (new, or moved there)."""

    def notify_op_modified(self, op: Operation) -> None:
        """``op``'s operands or attributes changed in place."""

    def notify_op_replaced(self, op: Operation, values: Sequence[Value]) -> None:
        """``op``'s results are about to be replaced by ``values`` (before its users change)."""

    def notify_op_erased(self, op: Operation) -> None:
        """``op`` (with what it holds) is about to be erased; its operands are still set."""


class PatternRewriter:
    """Changes IR on behalf of patterns, keeping uses and locations right and notifying its listener.

    ``current_op`` is the op the driver is rewriting (new ops without a location take its
    location); the insertion point is where :meth:`insert` puts new ops (before ``current_op``
    by default).
    """

    def __init__(self, listener: RewriteListener | None = None):
        self.listener = listener or RewriteListener()
        self.current_op: Operation | None = None
        self._block: Block | None = None
        self._before: Operation | None = None  # insert before this op (None: at the end of _block)

    # -- insertion point --------------------------------------------------------------
    def set_insertion_point_before(self, op: Operation) -> None:
        """New ops go right before ``op``."""
        self._block, self._before = op.parent, op

    def set_insertion_point_after(self, op: Operation) -> None:
        """New ops go right after ``op`` (in order: each next one after the previous)."""
        self._block, self._before = op.parent, op.next_op

    def set_insertion_point_to_start(self, block: Block) -> None:
        """New ops go at the top of ``block``."""
        self._block, self._before = block, (block.ops[0] if block.ops else None)

    def set_insertion_point_to_end(self, block: Block) -> None:
        """New ops go at the end of ``block``."""
        self._block, self._before = block, None

    def start(self, op: Operation) -> None:
        """Begin rewriting ``op``: it is ``current_op`` and new ops go before it (the driver calls this)."""
        self.current_op = op
        self.set_insertion_point_before(op)

    # -- creation and insertion ---------------------------------------------------------
    def _locate(self, op: Operation, anchor: Operation | None) -> None:
        if op.location is None:
            source = anchor if anchor is not None and anchor.location is not None else self.current_op
            op.location = source.location if source is not None else None

    def insert(self, op: Operation) -> Operation:
        """Insert the new ``op`` at the insertion point; returns it."""
        if self._block is None:
            raise ValueError("PatternRewriter.insert: no insertion point")
        self._locate(op, self._before)
        if self._before is None:
            self._block.append(op)
        else:
            self._block.insert_before(self._before, op)
        self.listener.notify_op_inserted(op)
        return op

    def insert_op_before(self, anchor: Operation, op: Operation) -> Operation:
        """Insert the new ``op`` right before ``anchor`` (taking its location unless it has one)."""
        self._locate(op, anchor)
        anchor.parent.insert_before(anchor, op)
        self.listener.notify_op_inserted(op)
        return op

    def insert_op_after(self, anchor: Operation, op: Operation) -> Operation:
        """Insert the new ``op`` right after ``anchor`` (taking its location unless it has one)."""
        self._locate(op, anchor)
        anchor.parent.insert_after(anchor, op)
        self.listener.notify_op_inserted(op)
        return op

    def move_op_before(self, op: Operation, anchor: Operation) -> None:
        """Move ``op`` (uses kept) right before ``anchor``."""
        op.detach()
        anchor.parent.insert_before(anchor, op)
        self.listener.notify_op_inserted(op)

    # -- replacement and erasure -------------------------------------------------------
    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        """Make every user of ``old`` use ``new``; each user is reported modified."""
        if old is new:
            return
        users = old.users()
        old.replace_all_uses_with(new)
        for user in users:
            self.listener.notify_op_modified(user)

    def replace_op(self, op: Operation, values: Value | Operation | Sequence[Value]) -> None:
        """Replace the results of ``op`` by ``values`` (one value, a list, or an op's results) and
        erase ``op``; ``op``'s users are reported modified."""
        if isinstance(values, Operation):
            values = values.results
        elif isinstance(values, Value):
            values = [values]
        values = list(values)
        if len(values) != len(op.results):
            raise ValueError(f"replace_op: {op.name} has {len(op.results)} results, got {len(values)} values")
        self.listener.notify_op_replaced(op, values)
        for r, v in zip(op.results, values):
            self.replace_all_uses_with(r, v)
        self.erase_op(op)

    def replace_op_with_new(self, op: Operation, new: Operation) -> Operation:
        """Insert ``new`` before ``op`` (with ``op``'s location unless it has one) and replace ``op`` by it."""
        self.insert_op_before(op, new)
        self.replace_op(op, new.results)
        return new

    def erase_op(self, op: Operation) -> None:
        """Erase ``op`` and what it holds; its results must be unused outside it."""
        self.listener.notify_op_erased(op)
        op.erase()

    # -- in-place changes --------------------------------------------------------------
    @contextmanager
    def modify_op_in_place(self, op: Operation) -> Iterator[Operation]:
        """``with rewriter.modify_op_in_place(op): op.set_operands(...)``: report ``op`` modified
        after the block (whatever it changed of ``op``'s operands and attributes)."""
        yield op
        self.listener.notify_op_modified(op)

    def notify_op_modified(self, op: Operation) -> None:
        """Report an in-place change of ``op`` made without :meth:`modify_op_in_place`."""
        self.listener.notify_op_modified(op)

    def notify_op_inserted(self, op: Operation) -> None:
        """Report ``op``, put into the IR by a helper that takes no rewriter (its location is set
        from the op being rewritten when it has none)."""
        self._locate(op, op.next_op)
        self.listener.notify_op_inserted(op)

    def inline_block_before(self, block: Block, anchor: Operation, arg_values: Sequence[Value]) -> list[Value]:
        """Move the ops of ``block`` (but its terminator) before ``anchor``, its arguments replaced
        by ``arg_values``; returns the values the terminator yields. Each moved op is reported
        inserted, each user of a replaced argument modified."""
        for a, v in zip(block.args, arg_values):
            self.replace_all_uses_with(a, v)
        term = block.terminator
        yielded = list(term.operands) if term is not None else []
        for op in list(block.ops):
            if op is not term:
                self.move_op_before(op, anchor)
        return yielded


#: The short name of MLIR's base class, for patterns that need no driver (xDSL's ``Rewriter``).
Rewriter = PatternRewriter

_FOLDERS: dict[type, Callable[[Operation], Sequence | None]] = {}
_PATTERNS: dict[type, list[RewritePattern]] = {}
_TRAIT_FOLDERS: dict[type, Callable[[Operation], Sequence | None]] = {}


def register_folder(op_class: type, fold: Callable[[Operation], Sequence | None]) -> None:
    """Make ``fold`` the folder of ``op_class`` (and of its subclasses without their own): it
    returns the values (or attributes, materialized as constants) replacing the op's results,
    the op's own results after an in-place change, or None."""
    _FOLDERS[op_class] = fold


def register_trait_folder(trait: type, fold: Callable[[Operation], Sequence | None]) -> None:
    """Make ``fold`` the folder of every op class with ``trait`` that has no folder of its own
    (registered or a ``fold`` method); traits registered earlier win."""
    _TRAIT_FOLDERS[trait] = fold


def register_patterns(op_class: type, *patterns: RewritePattern) -> None:
    """Add ``patterns`` to the canonicalization patterns of ``op_class``."""
    _PATTERNS.setdefault(op_class, []).extend(patterns)


def folder_of(op_class: type) -> Callable[[Operation], Sequence | None] | None:
    """The folder of ``op_class``: a registered one, else its own ``fold`` method, along the MRO;
    else the folder of the first trait of :func:`register_trait_folder` that the class has."""
    for cls in op_class.__mro__:
        if cls in _FOLDERS:
            return _FOLDERS[cls]
        fold = cls.__dict__.get("fold")
        if fold is not None:
            return fold
    has_trait = getattr(op_class, "has_trait", None)
    for trait, fold in _TRAIT_FOLDERS.items():
        if has_trait is not None and has_trait(trait):
            return fold
    return None


def patterns_of(op_classes: Sequence[type]) -> list[RewritePattern]:
    """The canonicalization patterns of ``op_classes``: each class's ``canonicalization_patterns``
    and the registered ones, each pattern object once."""
    out: list[RewritePattern] = []
    for cls in op_classes:
        for p in (*cls.__dict__.get("canonicalization_patterns", ()), *_PATTERNS.get(cls, ())):
            if not any(p is q for q in out):
                out.append(p)
    return out
