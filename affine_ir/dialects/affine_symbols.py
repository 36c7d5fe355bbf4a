"""Which values may be affine symbols, checks of map operands, and the canonical form of
maps written over SSA values (``%A[%i + 1, symbol(%n)]``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from ..affine_expr import AffineExpr
from ..affine_map import AffineMap
from ..core import Block, Operation, Value
from ..types import index

_SCOPE_OPS = ("func.func", "gpu.launch", "builtin.module")


def _is_scope_block(block: Block | None, scope_blocks) -> bool:
    if block is None:
        return False
    if id(block) in scope_blocks:
        return True
    op = block.parent_op
    return op is not None and op.name in _SCOPE_OPS


def is_valid_symbol(v: Value, scope_blocks=()) -> bool:
    """MLIR's rule, simplified: arguments of a function (or gpu.launch) body, values
    defined at the top level of one, constants, ``memref.dim`` of such values, and
    affine.apply/min/max of valid symbols are valid symbols.

    ``scope_blocks`` holds ids of blocks to treat as function bodies (used while parsing,
    before the enclosing op exists).
    """
    owner = v.owner
    if isinstance(owner, Block):
        return _is_scope_block(owner, scope_blocks)
    if owner.name == "arith.constant" or _is_scope_block(owner.parent, scope_blocks):
        return True
    if owner.name in ("affine.apply", "affine.min", "affine.max", "memref.dim"):
        return all(is_valid_symbol(o, scope_blocks) for o in owner.operands)
    return False


def _check_map_operands(op: Operation, m: AffineMap, operands: Sequence[Value], what: str) -> None:
    if len(operands) != m.num_inputs:
        raise op.error(f"{what} map {m} takes {m.num_inputs} operands, got {len(operands)}")
    for v in operands:
        if v.type != index:
            raise op.error(f"{what} operand has type {v.type}, expected index")
    for v in operands[m.num_dims :]:
        if not is_valid_symbol(v):
            raise op.error(f"{what} operand %{v.name_hint or '?'} is used as a symbol but is not a valid symbol")


_PLACEHOLDER = re.compile(r"\x00([ds])(\d+)\x00")


def canonical_ssa_map(m: AffineMap, operands: Sequence[Value]) -> tuple[AffineMap, tuple[Value, ...]]:
    """``m`` and ``operands`` as the text ``%i + 1, symbol(%n)`` (affine.load/store subscripts,
    affine.parallel bounds) can express them: dims, then symbols, numbered in order of first
    appearance in the printed results, a value repeated among the dims (or the symbols)
    merged into one, unused ones dropped. Parsing what the printer writes gives exactly this,
    so ops that print this way keep their maps in this form and print -> parse is exact.

    Example: ``(d0, d1) -> (d1 + d0 floordiv 2)`` over ``(%i, %j)`` prints ``%j + %i floordiv 2``
    and becomes ``(d0, d1) -> (d0 + d1 floordiv 2)`` over ``(%j, %i)``.
    """
    operands = tuple(operands)
    if len(operands) != m.num_inputs:
        return m, operands  # malformed: left for the verifier to report
    # Which operands are the same value (a dim and a symbol never merge).
    same = tuple(next(k for k in range(len(operands)) if operands[k] is v and (k < m.num_dims) == (j < m.num_dims))
                 for j, v in enumerate(operands))
    new, picks = _canonical_form(m, same)
    return new, tuple(operands[k] for k in picks)


@functools.lru_cache(maxsize=4096)
def _canonical_form(m: AffineMap, same: tuple[int, ...]) -> tuple[AffineMap, tuple[int, ...]]:
    """The canonical map for ``m`` whose operand ``j`` is the same value as operand ``same[j]``,
    and the positions of the original operands that the new map takes."""
    picks = tuple(range(len(same)))
    for _ in range(4):  # renumbering can reorder div terms; settle (normally one round)
        nd = m.num_dims
        text = ", ".join(e.to_str([f"\x00d{k}\x00" for k in range(nd)],
                                  [f"\x00s{k}\x00" for k in range(m.num_symbols)]) for e in m.results)
        dims: list[int] = []
        syms: list[int] = []
        dim_repl: list[AffineExpr] = [AffineExpr.constant(0)] * nd
        sym_repl: list[AffineExpr] = [AffineExpr.constant(0)] * m.num_symbols
        for kind, k in _PLACEHOLDER.findall(text):
            k = int(k)
            j = k if kind == "d" else nd + k
            group, repl, make = (dims, dim_repl, AffineExpr.dim) if kind == "d" else \
                (syms, sym_repl, AffineExpr.symbol)
            origin = same[picks[j]]
            if origin not in group:
                group.append(origin)
            repl[k] = make(group.index(origin))
        new = AffineMap(len(dims), len(syms), tuple(e.replace(dim_repl, sym_repl) for e in m.results))
        new_picks = (*dims, *syms)
        if new == m and new_picks == picks:
            break
        m, picks = new, new_picks
    return m, picks
