"""Which values may be affine symbols, checks of map operands, and the canonical form of
maps written over SSA values (``%A[%i + 1, symbol(%n)]``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from types import EllipsisType

from ..affine_expr import AffineExpr
from ..affine_map import AffineMap
from ..core import Block, Operation, Region, Value
from ..types import index


def affine_scope(op: Operation) -> Region | None:
    """The closest region enclosing ``op`` that is held by an op with the affine-scope trait
    (``func.func``, ``gpu.launch``, ``builtin.module``); None when ``op`` is in none (unlinked).
    As MLIR's ``getAffineScope``."""
    cur = op
    while (parent := cur.parent_op) is not None:
        if parent.affine_scope:
            return cur.parent.parent
        cur = parent
    return None


def is_top_level_value(v: Value) -> bool:
    """Whether ``v`` is an argument of, or defined directly in, the body of an affine scope."""
    block = v.owner if isinstance(v.owner, Block) else v.owner.parent
    parent = None if block is None else block.parent_op
    return parent is not None and parent.affine_scope


def is_affine_induction_var(v: Value) -> bool:
    """Whether ``v`` is the induction variable of an ``affine.for`` or one of an ``affine.parallel``."""
    from .affine_loops import AffineForOp
    from .affine_parallel import AffineParallelOp

    if not isinstance(v.owner, Block):
        return False
    parent = v.owner.parent_op
    return (isinstance(parent, AffineForOp) and v is parent.induction_var) or \
        (isinstance(parent, AffineParallelOp) and any(v is iv for iv in parent.ivs))


def is_valid_symbol(v: Value, scope: Region | None | EllipsisType = ...) -> bool:
    """MLIR's ``isValidSymbol``: whether ``v`` may be an affine symbol. Valid symbols are index
    values that are constants, arguments of or values defined at the top of an affine scope
    (``scope``), results of pure (and speculatable) ops whose operands are valid symbols,
    ``memref.dim`` of a top-level memref (or of a ``memref.alloc`` whose size is a valid
    symbol), and, where ``scope``'s op is not isolated from above (``gpu.launch``), values
    that are valid symbols where that op stands.

    Without ``scope``: valid at all its uses (top-level values, and values valid in the scope
    of their definition), as MLIR's one-argument form.
    """
    if scope is ...:
        if v.type != index:
            return False
        if is_top_level_value(v):
            return True
        return not isinstance(v.owner, Block) and _valid_symbol(v, affine_scope(v.owner), {})
    return _valid_symbol(v, scope, {})


def is_valid_dim(v: Value, scope: Region | None | EllipsisType = ...) -> bool:
    """MLIR's ``isValidDim``: whether ``v`` may be an affine dimension id where ``scope`` is the
    affine scope of the use: valid symbols, induction variables of affine.for/parallel, and
    results of ``affine.apply`` on valid dims. Without ``scope``: in the scope of its definition."""
    if v.type != index:
        return False
    if scope is ...:
        if isinstance(v.owner, Block):
            return is_affine_induction_var(v) or is_top_level_value(v)
        scope = affine_scope(v.owner)
    return _valid_dim(v, scope, {})


# The rules below are evaluated bottom-up over (value, scope, "dim" | "symbol") nodes with an
# explicit stack, so a long chain of index ops (after full unrolling) cannot exhaust Python's
# recursion limit. Each rule reads the verdicts of its dependencies from ``memo`` (a missing
# one, only possible on a cycle in broken IR, reads as False).
_DIM, _SYMBOL = "dim", "symbol"


def _valid_dim(v: Value, scope: Region | None, memo: dict) -> bool:
    return _solve((v, scope, _DIM), memo)


def _valid_symbol(v: Value, scope: Region | None, memo: dict) -> bool:
    return _solve((v, scope, _SYMBOL), memo)


def _solve(node: tuple, memo: dict) -> bool:
    if node in memo:
        return memo[node]
    quick = _settled(*node)
    if quick is not None:
        return quick
    stack, expanded = [(node, False)], set()
    while stack:
        current, ready = stack.pop()
        if current in memo:
            continue
        if ready:
            memo[current] = (_dim_rule if current[2] == _DIM else _symbol_rule)(current[0], current[1], memo)
        elif current not in expanded:
            expanded.add(current)
            stack.append((current, True))
            stack.extend((d, False) for d in _dependencies(*current) if d not in memo)
    return memo[node]


def _settled(v: Value, scope: Region | None, kind: str) -> bool | None:
    """The verdict of the most frequent cases, which need no other node (None: solve it): a value
    defined at the top of the scope, a constant, an induction variable used as a dim."""
    from .arith import ConstantOp

    if v.type != index:
        return False
    if _is_top_level_in(v, scope) or isinstance(v.owner, ConstantOp):
        return True
    if kind == _DIM and is_affine_induction_var(v):
        return True
    return None


def _dependencies(v: Value, scope: Region | None, kind: str) -> list[tuple]:
    """The nodes whose verdicts the rule for ``(v, scope, kind)`` may read."""
    from .affine_apply import AffineApplyOp
    from .arith import ConstantOp
    from .memref import AllocOp, DimOp

    owner = v.owner
    if v.type != index:
        return []
    if kind == _DIM:
        deps = [(v, scope, _SYMBOL)]
        if isinstance(owner, AffineApplyOp):
            deps += [(o, scope, _DIM) for o in owner.operands]
        return deps
    if _is_top_level_in(v, scope) or isinstance(owner, ConstantOp):
        return []
    deps = []
    if not isinstance(owner, Block):
        if owner.is_speculatable():
            deps += [(o, scope, _SYMBOL) for o in owner.operands]
        if isinstance(owner, DimOp) and isinstance(owner.operands[0].owner, AllocOp):
            deps += [(o, scope, _SYMBOL) for o in owner.operands[0].owner.operands]
    outer = _outer_scope(scope)
    if outer is not None:
        deps.append((v, outer, _SYMBOL))
    return deps


def _is_top_level_in(v: Value, scope: Region | None) -> bool:
    """Whether ``v`` is an argument of, or defined directly in, the region ``scope``."""
    block = v.owner if isinstance(v.owner, Block) else v.owner.parent
    return scope is not None and block is not None and block.parent is scope


def _outer_scope(scope: Region | None) -> Region | None:
    """Where the op holding ``scope`` stands, when that op is not isolated from above
    (``gpu.launch``): values valid as symbols there are valid inside too."""
    scope_op = None if scope is None else scope.parent
    if scope_op is not None and not scope_op.isolated_from_above and scope_op.parent is not None:
        return scope_op.parent.parent
    return None


def _dim_rule(v: Value, scope: Region | None, memo: dict) -> bool:
    from .affine_apply import AffineApplyOp
    from .memref import DimOp

    if v.type != index:
        return False
    if memo.get((v, scope, _SYMBOL), False):
        return True
    owner = v.owner
    if isinstance(owner, Block):
        return is_affine_induction_var(v)
    if isinstance(owner, AffineApplyOp):
        return all(memo.get((o, scope, _DIM), False) for o in owner.operands)
    if isinstance(owner, DimOp):
        return is_top_level_value(owner.operands[0])
    return False


def _symbol_rule(v: Value, scope: Region | None, memo: dict) -> bool:
    from .arith import ConstantOp
    from .memref import DimOp

    if v.type != index:
        return False
    owner = v.owner
    if _is_top_level_in(v, scope):
        return True
    if not isinstance(owner, Block):
        if isinstance(owner, ConstantOp):
            return True
        if owner.is_speculatable() and all(memo.get((o, scope, _SYMBOL), False) for o in owner.operands):
            return True
        if isinstance(owner, DimOp):
            return _is_dim_op_valid_symbol(owner, scope, memo)
    outer = _outer_scope(scope)
    return outer is not None and memo.get((v, outer, _SYMBOL), False)


def _is_dim_op_valid_symbol(dim: Operation, scope: Region | None, memo: dict) -> bool:
    """``memref.dim``: of a top-level memref, or a constant dim of a ``memref.alloc`` whose size
    there is static or a valid symbol (MLIR's ``isDimOpValidSymbol``)."""
    from .memref import AllocOp

    memref, position = dim.operands[0], constant_index_value(dim.operands[1])
    if is_top_level_value(memref):
        return True
    if isinstance(memref.owner, Block) or position is None or not isinstance(memref.owner, AllocOp):
        return False
    shape = memref.type.shape
    if not 0 <= position < len(shape):
        return False
    if shape[position] is not None:
        return True
    dynamic = sum(d is None for d in shape[:position])
    return memo.get((memref.owner.operands[dynamic], scope, _SYMBOL), False)


def constant_index_value(v: Value) -> int | None:
    """The integer of ``v`` when an ``arith.constant`` of an integer or index type defines it."""
    from .arith import ConstantOp

    if isinstance(v.owner, ConstantOp):
        value = getattr(v.owner.attributes.get("value"), "value", None)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


_shared_memo: ContextVar[dict | None] = ContextVar("affine_dim_symbol_verdicts", default=None)


@contextmanager
def shared_verdicts() -> Iterator[None]:
    """Within this context the dim/symbol verdicts of :func:`check_dim_and_symbol_operands` are
    kept and reused (for one walk of an IR that does not change meanwhile, e.g. a verifier run)."""
    token = _shared_memo.set({})
    try:
        yield
    finally:
        _shared_memo.reset(token)


def check_dim_and_symbol_operands(op: Operation, num_dims: int, num_inputs: int, operands: Sequence[Value],
                                  what: str) -> None:
    """VerifyError unless ``operands`` are ``num_inputs`` index values, the first ``num_dims``
    valid dims and the rest valid symbols at ``op`` (MLIR's ``verifyDimAndSymbolIdentifiers``,
    with its messages; ``what`` names the map in the message)."""
    if len(operands) != num_inputs:
        raise op.error(f"{what} map takes {num_inputs} operands, got {len(operands)}")
    for v in operands:
        if v.type != index:
            raise op.error(f"{what} operand has type {v.type}, expected index")
    scope, memo = affine_scope(op), _shared_memo.get()
    memo = {} if memo is None else memo
    for k, v in enumerate(operands):
        if k < num_dims and not _valid_dim(v, scope, memo):
            raise op.error(f"operand cannot be used as a dimension id ({what} operand #{k}: "
                           f"%{v.name_hint or '?'})")
        if k >= num_dims and not _valid_symbol(v, scope, memo):
            raise op.error(f"operand cannot be used as a symbol ({what} operand #{k}: %{v.name_hint or '?'})")


def check_map_operands(op: Operation, m: AffineMap, operands: Sequence[Value], what: str) -> None:
    if len(operands) != m.num_inputs:
        raise op.error(f"{what} map {m} takes {m.num_inputs} operands, got {len(operands)}")
    check_dim_and_symbol_operands(op, m.num_dims, m.num_inputs, operands, what)


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
