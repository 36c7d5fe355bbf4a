"""Folding of ``arith``/``math`` scalar ops for canonicalization: constants and identities.

A fold computes exactly what the reference interpreter computes (the same expression
templates, :mod:`affine_ir.interp.ops`, evaluated on the constant operands, then rounded
once to the result type), so folding never changes a program's results:

- integers (and ``index``) wrap as the interpreter wraps them (two's complement); an op
  that traps (division by zero, signed overflow of a division, an oversized shift,
  ``fptosi`` out of range) is left alone;
- floats are folded only for the ops IEEE 754 rounds correctly (``addf subf mulf divf
  remf negf maximumf minimumf``, comparisons, casts, ``math.absf/floor/ceil/sqrt/fma``),
  never for transcendental functions (``exp``, ``tanh``...: their last bit depends on
  the library) and never when the result is a NaN (its payload is not portable);
- vectors are left alone.

Identities keep exact IEEE semantics: ``x * 1.0``, ``x / 1.0``, ``x + (-0.0)``,
``x - 0.0`` and ``negf(negf(x))`` fold to ``x``, but ``x + 0.0`` does not (``-0.0 + 0.0``
is ``+0.0``) and ``x * 0.0`` does not (NaN, infinities, signed zeros).
"""

from __future__ import annotations

import math

from affine_ir import Operation, Value
from affine_ir.attributes import FloatAttr, IntegerAttr
from affine_ir.dialects.arith import COMMUTATIVE, AddiOp, CmpIOp, ConstantOp, MuliOp, SelectOp, SubiOp
from affine_ir.interp import semantics as S
from affine_ir.interp.ops import TEMPLATES, int_literal
from affine_ir.traits import Arithmetic, Commutative, ExactFold, Involution
from affine_ir.types import FloatType, IndexType, IntegerType, VectorType, i1

__all__ = ["COMMUTATIVE", "constant_value", "fold_op", "is_constant", "reassociation", "swap_commutative"]

#: ``(inner, outer)`` op classes of ``(x inner c0) outer c1`` and the constant ``c`` of the
#: equal ``x outer c`` (computed from ``c0, c1``; exact with wrap-around).
REASSOCIATIONS = {
    (AddiOp, AddiOp): lambda c0, c1: c0 + c1,
    (SubiOp, AddiOp): lambda c0, c1: c1 - c0,
    (MuliOp, MuliOp): lambda c0, c1: c0 * c1,
}
#: The op classes whose constants :func:`reassociation` combines (the outer op of a pair).
REASSOCIATED = tuple(dict.fromkeys(outer for _, outer in REASSOCIATIONS))

_ENV = {"_S": S, "_NAN": math.nan, "_INF": math.inf, "math": math, "float": float, "max": max, "min": min,
        "__builtins__": {}}


def _scalar(t) -> bool:
    return isinstance(t, (IntegerType, IndexType, FloatType))


def is_constant(v: Value) -> bool:
    """True when ``v`` is the result of a scalar ``arith.constant``."""
    owner = v.owner
    return isinstance(owner, ConstantOp) and _scalar(v.type)


def constant_value(v: Value):
    """The interpreter's value of a scalar constant (ints signed and wrapped, i1 true = -1), else None."""
    if not is_constant(v):
        return None
    x = v.owner.attributes["value"].value
    info = S.scalar_info(v.type)
    return S.ROUNDERS[info.name](float(x)) if info.is_float else S.wrap(int(x), info.width)


def _literal(x, is_float: bool) -> str:
    if is_float:
        if x != x:
            return "_NAN"
        if x in (math.inf, -math.inf):
            return "_INF" if x > 0 else "(-_INF)"
        return f"({x!r})"
    return f"({int_literal(int(x))})"


def _evaluate(op: Operation, values: list):
    """The interpreter's result of ``op`` on ``values``; None when it traps or cannot be folded."""
    src_t = op.operands[1].type if isinstance(op, SelectOp) else op.operands[0].type
    src, dst = S.scalar_info(src_t), S.scalar_info(op.results[0].type)
    args = [_literal(x, isinstance(v.type, FloatType)) for x, v in zip(values, op.operands)]
    expr, rounds = TEMPLATES[op.name](args, op, src, dst)
    try:
        result = eval(expr, _ENV)  # noqa: S307  (an expression of the interpreter's own templates and literals)
    except (S.Trap, ArithmeticError, ValueError):
        return None
    if dst.is_float:
        result = float(result)
        if rounds:
            result = S.ROUNDERS[dst.name](result)
        if result != result:
            return None
        return result
    return S.wrap(int(result), dst.width)


def _attr_for(value, t):
    if isinstance(t, FloatType):
        return FloatAttr(value, t)
    if t == i1:
        return IntegerAttr(1 if value else 0, i1)
    return IntegerAttr(value, t)


def foldable(op: Operation) -> bool:
    """True when ``op`` is a scalar op this module may fold on constant operands."""
    if len(op.results) != 1 or op.regions or not op.operands:
        return False
    if any(isinstance(v.type, VectorType) for v in (*op.operands, op.results[0])):
        return False
    if not op.has_trait(ExactFold):
        return False
    return not isinstance(op, SelectOp) or _scalar(op.results[0].type)


def fold_constant(op: Operation):
    """The attribute of the constant ``op`` folds to (all operands constant), else None."""
    if not foldable(op):
        return None
    values = [constant_value(v) for v in op.operands]
    if isinstance(op, SelectOp) and values[0] is not None:
        return None  # handled by fold_op (the choices need not be constants)
    if any(x is None for x in values):
        return None
    result = _evaluate(op, values)
    return None if result is None else _attr_for(result, op.results[0].type)


def _is_int_const(v: Value, x: int) -> bool:
    return _scalar(v.type) and not isinstance(v.type, FloatType) and constant_value(v) == x


def fold_op(op: Operation, reassociate: bool = True) -> Value | object | None:
    """What ``op`` folds to: an existing value, an attribute for a new constant, ``op``'s own result
    when it was rewritten in place (``(x + c0) + c1 -> x + c``, only with ``reassociate``), or
    None (also, without ``reassociate``, when only the reassociation would apply: see
    :func:`reassociation`).

    Only scalar :class:`~affine_ir.traits.Arithmetic` ops (the ``arith``/``math`` computations) are
    considered; constants only of :class:`~affine_ir.traits.ExactFold` ones (see the module doc for
    what is folded and why it is exact).
    """
    if len(op.results) != 1 or not op.has_trait(Arithmetic):
        return None
    attr = fold_constant(op)
    if attr is not None:
        return attr
    return _identity(op, reassociate)


def _identity(op: Operation, reassociate: bool = True):
    ops = op.operands
    if isinstance(op, SelectOp):
        c = constant_value(ops[0]) if _scalar(ops[0].type) else None
        if c is not None:
            return ops[1] if c else ops[2]
        return ops[1] if ops[1] is ops[2] else None
    if isinstance(op.results[0].type, VectorType):
        return None
    if op.has_trait(Involution) and len(ops) == 1:
        inner = ops[0].owner
        return inner.operands[0] if isinstance(inner, Operation) and type(inner) is type(op) else None
    if len(ops) != 2:
        return None
    a, b = ops
    if not isinstance(a.type, FloatType):
        if reassociate and _reassociate(op):
            return op.results[0]
        if not reassociate and reassociation(op) is not None:
            return None  # left to the reassociation rewrite
    return _binary_identity(op, a, b)


def _is_exact_const(v: Value, x: int | float) -> bool:
    """Whether ``v`` is the constant ``x`` (a float one of the same sign, ``-0.0`` is not ``0.0``)."""
    if isinstance(x, float):
        c = constant_value(v) if isinstance(v.type, FloatType) else None
        return c is not None and c == x and math.copysign(1.0, c) == math.copysign(1.0, x)
    return _is_int_const(v, x)


def _binary_identity(op: Operation, a: Value, b: Value):
    """The algebraic identities the op class declares (see ``ElementwiseOp``): ``x op e -> x``,
    ``x op z -> 0``, ``x op x -> x`` or ``0``; ``cmpi`` of equal operands -> its predicate's answer."""
    cls, t = type(op), op.results[0].type
    identity = getattr(cls, "right_identity", None)
    if identity is not None and _is_exact_const(b, identity):
        return a
    zero_rhs = getattr(cls, "zero_when_rhs_is", None)
    if zero_rhs is not None and _is_int_const(b, zero_rhs):
        return _attr_for(0, t)
    if a is b:
        if getattr(cls, "idempotent", False):
            return a
        if getattr(cls, "cancels_itself", False):
            return _attr_for(0, t)
        if isinstance(op, CmpIOp):
            return _attr_for(op.attributes["predicate"] in ("eq", "sle", "sge", "ule", "uge"), i1)
    return None


def reassociation(op: Operation) -> tuple[Value, object] | None:
    """``(x, c)`` when ``op`` is ``(x + c0) + c1``, ``(x - c0) + c1`` or ``(x * c0) * c1`` (``x`` not
    a constant): ``op`` equals ``x + c`` (``x * c``) with the constant attribute ``c`` (exact
    with wrap-around); else None. Nothing changes."""
    if not isinstance(op, REASSOCIATED) or len(op.operands) != 2:
        return None
    a, b = op.operands
    c1 = constant_value(b)
    inner = a.owner
    combine = REASSOCIATIONS.get((type(inner), type(op))) if isinstance(inner, Operation) else None
    if c1 is None or combine is None:
        return None
    x, cb = inner.operands
    c0 = constant_value(cb)
    if c0 is None or is_constant(x):
        return None
    c = combine(c0, c1)
    info = S.scalar_info(op.results[0].type)
    return x, _attr_for(S.wrap(c, info.width), op.results[0].type)


def _reassociate(op: Operation) -> bool:
    """``(x + c0) + c1 -> x + (c0 + c1)`` (also with ``-`` and ``*``), in place."""
    found = reassociation(op)
    if found is None:
        return False
    x, attr = found
    const = ConstantOp(attr, location=op.location)
    op.parent.insert_before(op, const)
    op.set_operands([x, const.results[0]])
    return True


_SWAPPED_PREDICATE = {"eq": "eq", "ne": "ne", "slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle",
                      "ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule"}


def swap_commutative(op: Operation) -> bool:
    """Move a constant left operand of a commutative op (or of ``arith.cmpi``, swapping the
    predicate) to the right, MLIR's canonical order."""
    if (op.has_trait(Commutative) or isinstance(op, CmpIOp)) and len(op.operands) == 2:
        a, b = op.operands
        if is_constant(a) and not is_constant(b):
            if isinstance(op, CmpIOp):
                op.attributes["predicate"] = _SWAPPED_PREDICATE[op.attributes["predicate"]]
            op.set_operands([b, a])
            return True
    return False


def make_constant(attr, location, name_hint: str | None = None) -> ConstantOp:
    """A new ``arith.constant`` holding ``attr``."""
    return ConstantOp(attr, location=location, name_hint=name_hint)
