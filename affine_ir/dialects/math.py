"""The ``math`` dialect: transcendental and other float functions, elementwise."""

from __future__ import annotations

from ..traits import ExactFold
from ._simple import ElementwiseOp

UNARY = ("exp", "exp2", "log", "log2", "tanh", "sqrt", "rsqrt", "erf", "absf", "sin", "cos", "floor", "ceil")
BINARY = ("powf",)
TERNARY = ("fma",)
#: The functions IEEE 754 rounds correctly (or that are exact): they fold to constants.
EXACT = frozenset({"absf", "floor", "ceil", "sqrt", "fma"})

OPS: dict[str, type] = {}
for _names, _arity in ((UNARY, 1), (BINARY, 2), (TERNARY, 3)):
    for _n in _names:
        _cls = type(_n.title() + "Op", (ElementwiseOp,),
                    {"name": f"math.{_n}", "arity": _arity, "operand_kind": "float",
                     "__doc__": f"``%r = math.{_n} {', '.join(['%a', '%b', '%c'][:_arity])} : f32``.",
                     **({"traits": frozenset({ExactFold})} if _n in EXACT else {})})
        _cls.__module__ = __name__
        OPS[_n] = _cls
        globals()[_cls.__name__] = _cls
