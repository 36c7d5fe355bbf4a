"""The warps' fragment loads of ``gpu-map-mma``: each k slice's A and B fragments read from a stage
of the operands' shared rings.

- **ldmatrix** (16-bit operands, and 32-bit ones whose shared rows run along k): A as
  ``ldmatrix.x4`` (16 x 16: rows 0-7/8-15 by k 0-7/8-15), B two fragments at a time with
  ``ldmatrix.x4`` split by ``vector.extract_strided_slice`` (:meth:`Fragments.b_pairs`; ``ldmatrix.x2``
  each for an odd count) -- ``transpose`` where the shared rows run along the rows/columns.
- **per element** (:attr:`~.map_mma_plan.MmaOperand.element_reads`: 32-bit operands whose shared
  rows run along the rows/columns, which ``ldmatrix`` cannot transpose): each element of the lane's
  fragment is a ``memref.load`` at the position PTX gives it (A ``[r][e]`` at row ``g + 8 (r mod
  2)``, k ``Pt + e + 4P (r floordiv 2)``; B ``[r][e]`` at k ``Pt + e + 4Pr``, column ``g``; ``g`` =
  lane / 4, ``t`` = lane mod 4, ``P`` elements per register), put in place by ``vector.insert``.
  The ring's swizzle (:func:`~.map_mma_staging.swizzle` with spread 2) makes the 4 rows x 8 columns of
  one load hit 32 distinct banks.

Guarantee: the fragments of k slice ``ks`` hold, lane by lane, exactly the elements of the stage's
tile that ``mma.sync`` m16n8k``K`` expects there (the interpreter checks the layouts lane by lane).
The addresses depend only on the thread id: they are computed once, at the launch body's start.
"""

from __future__ import annotations

from affine_ir import AffineExpr, Location, Value
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.memref import LoadOp
from affine_ir.dialects.nvgpu import LdMatrixOp, fragment_position, fragment_shapes
from affine_ir.dialects.vector import ExtractStridedSliceOp, InsertOp
from affine_ir.types import vector

from .emitter import Emitter as _At
from .map_mma_plan import MmaPlan, MmaTiles
from .map_mma_staging import SharedRing

__all__ = ["Fragments"]


class Fragments:
    """The fragment loads, a mixin of the kernel builder of :mod:`.map_mma`: it reads the builder's
    ``plan``, ``tiles``, ``top``, ``tid``, ``loc``, ``rings``, ``addresses``, ``lane`` and ``warp_offset``."""

    plan: MmaPlan
    tiles: MmaTiles
    top: _At
    tid: Value
    loc: Location
    rings: list[SharedRing]
    addresses: list[dict]
    lane: AffineExpr

    def b_pairs(self) -> bool:
        """Whether B's fragments are loaded two at a time (``ldmatrix.x4``: half the instructions)."""
        return self.tiles.frags_n % 2 == 0 and not self.plan.b.element_reads

    def fragment_addresses(self) -> list[dict]:
        """Per ring, the lane's addresses of every fragment load (:meth:`_ldmatrix_addresses` or
        :meth:`_element_addresses`), and the zero fragments the element reads start from, all built
        at the launch body's start."""
        self._memo: dict[tuple, Value] = {}
        kind = self.plan.kind
        self._zeros = {side: self.top.add(ConstantOp.of(0.0, vector(shape, kind.input), location=self.loc)).results[0]
                       for ring, side, shape in zip(self.rings, "AB", fragment_shapes(kind.k, kind.input))
                       if ring.operand.element_reads}
        return [self._element_addresses(r) if r.operand.element_reads else self._ldmatrix_addresses(r)
                for r in self.rings]

    def _apply(self, expr: AffineExpr, name: str) -> Value:
        """``expr`` of the thread id, one ``affine.apply`` per distinct expression."""
        key = (name, str(expr))
        if key not in self._memo:
            self._memo[key] = self.top.apply(expr, [self.tid], name)
        return self._memo[key]

    def _loads(self, side: str) -> int:
        t = self.tiles
        return t.frags_m if side == "A" else (t.frags_n // 2 if self.b_pairs() else t.frags_n)

    def _ldmatrix_addresses(self, ring: SharedRing) -> dict[tuple[int, int], tuple[Value, Value]]:
        """(row, column) of the lane's ``ldmatrix`` row for load ``f`` at k slice ``ks``: A as four
        8 x 8 matrices (rows 0-7/8-15 by k 0-7, then k 8-15), B as two (k 0-7, k 8-15) -- or, for a
        pair of B fragments (:meth:`b_pairs`), four: the first fragment's two, then the second's."""
        op, t, kind = ring.operand, self.tiles, self.plan.kind
        q, r = self.lane.floordiv(8), self.lane % 8
        pairs = op.side == "B" and self.b_pairs()
        height = 16 if op.side == "A" or pairs else 8
        if op.side == "A":
            p_block, k_block = q % 2, q.floordiv(2)
        else:
            p_block, k_block = (q.floordiv(2) if pairs else AffineExpr.constant(0)), q % 2
        out = {}
        for f in range(self._loads(op.side)):
            p0 = self.warp_offset(op.side) + f * height  # elements, a multiple of 8
            for ks in range(t.BK // kind.k):
                k0 = ks * kind.k
                if op.k_fast:
                    row, chunk = p0 + p_block * 8 + r, k_block + k0 // ring.chunk
                else:
                    row, chunk = k0 + k_block * 8 + r, p0.floordiv(ring.chunk) + p_block
                out[(f, ks)] = (self._apply(row, "lrow"), self._swizzled(ring, row, chunk * ring.chunk))
        return out

    def _element_addresses(self, ring: SharedRing) -> dict[tuple[int, int, int, int], tuple[Value, Value]]:
        """(row, column) in ``ring`` of element ``[r][e]`` of the lane's fragment ``f`` at k slice
        ``ks`` (PTX's layout, see the module docstring); the ring's rows run along k."""
        op, t, kind = ring.operand, self.tiles, self.plan.kind
        a_shape, b_shape, _ = fragment_shapes(kind.k, kind.input)
        registers, p = a_shape if op.side == "A" else b_shape
        g, lt = self.lane.floordiv(4), self.lane % 4
        out = {}
        for f in range(self._loads(op.side)):
            p0 = self.warp_offset(op.side) + f * (16 if op.side == "A" else 8)
            for ks in range(t.BK // kind.k):
                for r in range(registers):
                    for e in range(p):
                        pos = fragment_position(op.side, g, lt, r, e, p)  # (row, k) for A, (k, column) for B
                        side, k = pos if op.side == "A" else pos[::-1]
                        row = k + ks * kind.k
                        out[(f, ks, r, e)] = (self._apply(row, "erow"), self._swizzled(ring, row, p0 + side))
        return out

    def _swizzled(self, ring: SharedRing, row: AffineExpr, col: AffineExpr) -> Value:
        """Column ``col`` (elements) of shared row ``row`` after the ring's chunk swizzle
        (:meth:`SharedRing.swizzled`), one value per distinct (column, swizzle)."""
        swz = ring.swizzle(row)
        if swz is None:
            return self._apply(col, "col")
        key = ("xor", str(col), str(swz))
        if key not in self._memo:
            self._memo[key] = ring.swizzled(self.top, row, self._apply(col, "chunk"), [self.tid], "col",
                                            mask=self._apply(swz * ring.chunk, "swizzle"))
        return self._memo[key]

    def fragments(self, at: _At, stage: Value, ks: int) -> list[Value]:
        """The warp's A fragments, then its B fragments, for k slice ``ks`` of ``stage`` (at the
        addresses of :meth:`fragment_addresses`, kept in ``addresses``)."""
        out = []
        for ring, addr in zip(self.rings, self.addresses):
            read = self._by_element if ring.operand.element_reads else self._by_ldmatrix
            out += read(at, ring, addr, stage, ks)
        return out

    def _by_ldmatrix(self, at: _At, ring: SharedRing, addresses: dict, stage: Value, ks: int) -> list[Value]:
        """``ldmatrix`` loads (B pairs split with ``vector.extract_strided_slice``)."""
        kind, side = self.plan.kind, ring.operand.side
        a_shape, b_shape, _ = fragment_shapes(kind.k, kind.input)
        pairs = side == "B" and self.b_pairs()
        shape = a_shape if side == "A" else ((2 * b_shape[0], b_shape[1]) if pairs else b_shape)
        out = []
        for f in range(self._loads(side)):
            x = at.add(LdMatrixOp(ring.buffer, [stage, *addresses[(f, ks)]], shape[0], ring.operand.transpose,
                                  vector(shape, kind.input), location=self.loc, name_hint=side.lower())).results[0]
            if not pairs:
                out.append(x)
                continue
            out += [at.add(ExtractStridedSliceOp(x, (h * b_shape[0], 0), b_shape, location=self.loc,
                                                 name_hint="b")).results[0] for h in range(2)]
        return out

    def _by_element(self, at: _At, ring: SharedRing, addresses: dict, stage: Value, ks: int) -> list[Value]:
        """Fragments built element by element: ``memref.load`` from the ring, ``vector.insert``."""
        kind, side = self.plan.kind, ring.operand.side
        a_shape, b_shape, _ = fragment_shapes(kind.k, kind.input)
        shape = a_shape if side == "A" else b_shape
        out = []
        for f in range(self._loads(side)):
            x = self._zeros[side]
            for r in range(shape[0]):
                for e in range(shape[1]):
                    row, col = addresses[(f, ks, r, e)]
                    v = at.add(LoadOp(ring.buffer, [stage, row, col], location=self.loc, name_hint=side.lower()))
                    x = at.add(InsertOp(v.results[0], x, (r, e), location=self.loc, name_hint=side.lower())).results[0]
            out.append(x)
        return out
