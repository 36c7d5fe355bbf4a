"""Op interfaces: isinstance-able base classes the op classes inherit (MLIR's op interfaces).

- :class:`MemRefAccessInterface`: a load or store of one memref element (or vector of them):
  ``affine.load/store/vector_load/vector_store`` and ``memref.load/store``. Its memory effect
  is READ (or WRITE, ``is_write``) of ``memref``.
- :class:`AffineAccessInterface`: an access whose subscript is an affine map applied to
  ``map_operands``; :class:`AffineReadOpInterface` and :class:`AffineWriteOpInterface` (MLIR's
  names) split reads from writes.
- :class:`LoopLikeOpInterface`: ``affine.for`` and ``affine.parallel``: induction variables,
  bounds, steps, loop-carried values and body.

Ask them with ``isinstance(op, AffineReadOpInterface)`` and their properties; see
:mod:`affine_ir.traits` for traits and memory effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from .affine_map import AffineMap
from .core import Operation, Value
from .traits import EffectKind, MemoryEffect
from .types import VectorType

__all__ = ["AffineAccessInterface", "AffineReadOpInterface", "AffineWriteOpInterface", "LoopLikeOpInterface",
           "MemRefAccessInterface"]


class MemRefAccessInterface(Operation):
    """A load or store: the memref is operand ``memref_index`` (1 after a stored value, else 0),
    the index operands follow it."""

    memref_index: ClassVar[int] = 0
    #: Whether the op writes (stores ``value_to_store``) rather than reads.
    is_write: ClassVar[bool] = False

    @property
    def memref(self) -> Value:
        """The memref accessed."""
        return self.operands[self.memref_index]

    @property
    def indices(self) -> tuple[Value, ...]:
        """The index operands (for an affine access: the operands of its map)."""
        return self.operands[self.memref_index + 1 :]

    @property
    def value_to_store(self) -> Value | None:
        """The value a store writes; None for a read."""
        return self.operands[0] if self.is_write else None

    @property
    def vector_type(self) -> VectorType | None:
        """The vector type moved by a vector access; None for a scalar access."""
        return None

    def memory_effects(self) -> tuple[MemoryEffect, ...]:
        """WRITE of ``memref`` for a store, READ of it for a load."""
        return (MemoryEffect(EffectKind.WRITE if self.is_write else EffectKind.READ, self.memref),)


class AffineAccessInterface(MemRefAccessInterface):
    """An access whose subscript is the affine map ``map`` applied to ``map_operands``."""

    @property
    def map(self) -> AffineMap:
        """The access map: one result per memref dimension."""
        return self.attributes["map"]

    @property
    def map_operands(self) -> tuple[Value, ...]:
        """The operands of ``map`` (its dims, then its symbols)."""
        return self.indices

    def set_access(self, m: AffineMap, operands: Sequence[Value]) -> None:
        """Replace the access map and its operands (kept in the form of ``canonical_ssa_map``:
        an operand appears once, dims before symbols); the memref and the stored value stay."""
        from .dialects.affine_symbols import canonical_ssa_map

        m, operands = canonical_ssa_map(m, operands)
        head = self.operands[: self.memref_index + 1]
        self.attributes["map"] = m
        self.set_operands([*head, *operands])


class AffineReadOpInterface(AffineAccessInterface):
    """An affine read: ``affine.load``, ``affine.vector_load`` (MLIR's ``AffineReadOpInterface``)."""


class AffineWriteOpInterface(AffineAccessInterface):
    """An affine write of ``value_to_store``: ``affine.store``, ``affine.vector_store``."""

    memref_index = 1
    is_write = True


class LoopLikeOpInterface(Operation):
    """A loop (MLIR's ``LoopLikeOpInterface``): ``affine.for`` and ``affine.parallel``. The ops
    define every property below; bounds are per induction variable, in the op's own form."""

    @property
    def induction_vars(self) -> tuple[Value, ...]:
        """The induction variables, outermost first."""
        raise NotImplementedError

    @property
    def inits(self) -> tuple[Value, ...]:
        """The initial values of the loop-carried values (``affine.for``'s iter_args)."""
        raise NotImplementedError

    @property
    def region_iter_args(self) -> tuple[Value, ...]:
        """The body arguments carrying a value from one iteration to the next (``()`` for none)."""
        raise NotImplementedError

    @property
    def loop_results(self) -> tuple[Value, ...]:
        """The values the loop returns (its results)."""
        return tuple(self.results)

    @property
    def steps(self) -> tuple[int, ...]:
        """The step of each induction variable."""
        raise NotImplementedError

    @property
    def lower_bounds(self) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        """Per induction variable, the lower bound: the max of the results of a map applied to
        its operands."""
        raise NotImplementedError

    @property
    def upper_bounds(self) -> tuple[tuple[AffineMap, tuple[Value, ...]], ...]:
        """Per induction variable, the (exclusive) upper bound: the min of the results of a map
        applied to its operands."""
        raise NotImplementedError
