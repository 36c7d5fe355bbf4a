"""Whole-IR verification: dominance, terminators and every op's own invariants."""

from __future__ import annotations

import functools

from .core import Operation
from .dialects.affine_symbols import shared_verdicts
from .errors import VerifyError
from .types import ShapedType, Type, shaped_type_size_problem


def verify(root: Operation) -> None:
    """Check ``root`` and everything nested in it; raise :class:`VerifyError` at the first problem.

    Guarantees on success: every operand is defined before its use in the same or an
    enclosing block (and not across an isolated-from-above op such as ``func.func``),
    terminators appear only last in a block, every memref/vector type of a result or a block
    argument has dimensions and a byte size that fit in int64, and each op's ``verify_`` holds
    (types, map arities, index counts, yields vs results, positive steps, ...).
    """
    try:
        with shared_verdicts():  # the IR does not change while it is verified
            _verify_op(root, set())
    except RecursionError:
        raise root.error("is nested too deeply to verify") from None


def _verify_op(op: Operation, visible: set[int]) -> None:
    for i, v in enumerate(op.operands):
        if id(v) not in visible:
            raise op.error(f"operand #{i} (%{v.name_hint or '?'} : {v.type}) does not dominate this use")
    for i, r in enumerate(op.results):
        _check_type_size(op, r.type, f"result #{i}")
    inner = set() if op.isolated_from_above else visible
    for region in op.regions:
        if len(region.blocks) > 1:
            raise op.error(f"has a region with {len(region.blocks)} blocks; only single-block regions are supported")
        for block in region.blocks:
            scope = set(inner)
            scope.update(id(a) for a in block.args)
            for k, a in enumerate(block.args):
                _check_type_size(op, a.type, f"region argument #{k} (%{a.name_hint or '?'})")
            for k, child in enumerate(block.ops):
                if child.parent is not block:
                    raise child.error("has a wrong parent link")
                if child.is_terminator and k != len(block.ops) - 1:
                    raise child.error("is a terminator but is not the last op of its block")
                _verify_op(child, scope)
                scope.update(id(r) for r in child.results)
    try:
        op.verify_()
    except VerifyError:
        raise
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as e:
        raise op.error(f"is malformed ({type(e).__name__}: {e})") from None


def _check_type_size(op: Operation, t: Type, what: str) -> None:
    problem = _size_problem(t) if isinstance(t, ShapedType) else None
    if problem is not None:
        raise op.error(f"{what}: {problem}")


@functools.lru_cache(maxsize=1024)
def _size_problem(t: ShapedType) -> str | None:
    return shaped_type_size_problem(t)
