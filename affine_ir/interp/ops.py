"""Python expression templates for the scalar semantics of arith and math ops.

``TEMPLATES[op_name](args, op, src, dst)`` returns ``(expr, rounds)``: a Python
expression over the operand expressions ``args`` (names or literals) computing the
op on interpreter values (see :mod:`.semantics`), and whether the caller must round the
result to the float type ``dst``. ``src``/``dst`` are the :class:`ScalarInfo` of the
first operand's and of the result's element type. The same template serves scalars
(inlined) and vectors (inside a lambda applied elementwise).
"""

from __future__ import annotations

from .semantics import MATH_UNARY, ScalarInfo


def int_literal(x: int) -> str:
    """``x`` as a Python literal: hexadecimal beyond 64 bits, since Python refuses to write ints
    of more than 4300 decimal digits (``sys.set_int_max_str_digits``) and integer types reach
    2**24 - 1 bits."""
    text = str(x) if abs(x) < 1 << 64 else hex(x)
    return text if x >= 0 else f"({text})"


def wrap_expr(x: str, info: ScalarInfo) -> str:
    """``x`` wrapped to the width of ``info`` (two's complement, read as signed)."""
    h = int_literal(info.half)
    return f"(((({x}) + {h}) & {int_literal(info.mask)}) - {h})"


def _float_binary(sym: str):
    return lambda a, op, s, d: (f"{a[0]} {sym} {a[1]}", True)


def _call(fn: str, rounds: bool, width: bool = False):
    def template(a, op, s, d):
        extra = f", {s.width}" if width else ""
        return f"{fn}({', '.join(a)}{extra})", rounds
    return template


def _wrapping(sym: str):
    return lambda a, op, s, d: (wrap_expr(f"{a[0]} {sym} {a[1]}", s), False)


def _bitwise(sym: str):
    return lambda a, op, s, d: (f"({a[0]} {sym} {a[1]})", False)


def _shift(kind: str):
    def template(a, op, s, d):
        x, n = a
        if kind == "shli":
            value = wrap_expr(f"{x} << {n}", s)
        elif kind == "shrsi":
            value = f"({x} >> {n})"
        else:
            value = wrap_expr(f"({x} & {int_literal(s.mask)}) >> {n}", s)
        return f"({value} if 0 <= {n} < {s.width} else _S.bad_shift({n}, {s.width}))", False
    return template


def _pick(cmp: str, unsigned: bool):
    def template(a, op, s, d):
        x, y = a
        if unsigned:
            return f"({x} if ({x} & {int_literal(s.mask)}) {cmp} ({y} & {int_literal(s.mask)}) else {y})", False
        return f"({x} if {x} {cmp} {y} else {y})", False
    return template


_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}


def _cmpi(a, op, s, d):
    x, y = a
    p = op.attributes["predicate"]
    if p.startswith("u"):
        x, y = f"({x} & {int_literal(s.mask)})", f"({y} & {int_literal(s.mask)})"
    return f"-({x} {_CMPI[p]} {y})", False


_CMPF = {
    "oeq": "{x} == {y}", "ogt": "{x} > {y}", "oge": "{x} >= {y}", "olt": "{x} < {y}", "ole": "{x} <= {y}",
    "one": "({x} < {y} or {x} > {y})", "ord": "({x} == {x} and {y} == {y})",
    "ueq": "not ({x} < {y} or {x} > {y})", "ugt": "not ({x} <= {y})", "uge": "not ({x} < {y})",
    "ult": "not ({x} >= {y})", "ule": "not ({x} > {y})", "une": "{x} != {y}",
    "uno": "({x} != {x} or {y} != {y})",
}


def _cmpf(a, op, s, d):
    p = op.attributes["predicate"]
    if p == "false":
        return "0", False
    if p == "true":
        return "-1", False
    return "-(" + _CMPF[p].format(x=a[0], y=a[1]) + ")", False


def _select(a, op, s, d):
    return f"({a[1]} if {a[0]} else {a[2]})", False


# -- casts ------------------------------------------------------------------------------


def _index_cast(a, op, s, d):
    return (wrap_expr(a[0], d) if d.width < s.width else a[0]), False


def _int_to_float(unsigned: bool):
    def template(a, op, s, d):
        x = f"({a[0]} & {int_literal(s.mask)})" if unsigned else a[0]
        if s.width + unsigned <= 53:
            return f"float({x})", True  # exact, so one rounding
        return f"_S.int_to_float({x}, {d.name!r})", False
    return template


def _fp_to_int(fn: str):
    return lambda a, op, s, d: (f"_S.{fn}({a[0]}, {d.width})", False)


def _bitcast(a, op, s, d):
    return f"_S.bitcast({a[0]}, {s.name!r}, {d.name!r}, {d.width})", False


TEMPLATES = {
    "arith.addf": _float_binary("+"),
    "arith.subf": _float_binary("-"),
    "arith.mulf": _float_binary("*"),
    "arith.divf": lambda a, op, s, d: (f"({a[0]} / {a[1]} if {a[1]} else _S.fdiv0({a[0]}, {a[1]}))", True),
    "arith.remf": _call("_S.remf", False),
    "arith.maximumf": _call("_S.maximumf", False),
    "arith.minimumf": _call("_S.minimumf", False),
    "arith.negf": lambda a, op, s, d: (f"(-{a[0]})", False),
    "arith.addi": _wrapping("+"),
    "arith.subi": _wrapping("-"),
    "arith.muli": _wrapping("*"),
    "arith.andi": _bitwise("&"),
    "arith.ori": _bitwise("|"),
    "arith.xori": _bitwise("^"),
    "arith.shli": _shift("shli"),
    "arith.shrsi": _shift("shrsi"),
    "arith.shrui": _shift("shrui"),
    "arith.divsi": _call("_S.divsi", False, width=True),
    "arith.divui": _call("_S.divui", False, width=True),
    "arith.remsi": _call("_S.remsi", False, width=True),
    "arith.remui": _call("_S.remui", False, width=True),
    "arith.floordivsi": _call("_S.floordivsi", False, width=True),
    "arith.ceildivsi": _call("_S.ceildivsi", False, width=True),
    "arith.maxsi": _pick(">=", False),
    "arith.minsi": _pick("<=", False),
    "arith.maxui": _pick(">=", True),
    "arith.minui": _pick("<=", True),
    "arith.cmpi": _cmpi,
    "arith.cmpf": _cmpf,
    "arith.select": _select,
    "arith.index_cast": _index_cast,
    "arith.sitofp": _int_to_float(False),
    "arith.uitofp": _int_to_float(True),
    "arith.fptosi": _fp_to_int("fptosi"),
    "arith.fptoui": _fp_to_int("fptoui"),
    "arith.extf": lambda a, op, s, d: (a[0], False),
    "arith.truncf": lambda a, op, s, d: (a[0], True),
    "arith.extsi": lambda a, op, s, d: (a[0], False),
    "arith.extui": lambda a, op, s, d: (f"({a[0]} & {int_literal(s.mask)})", False),
    "arith.trunci": lambda a, op, s, d: (wrap_expr(a[0], d), False),
    "arith.bitcast": _bitcast,
    "math.powf": _call("_S.m_powf", True),
    "math.fma": lambda a, op, s, d: (f"_S.m_fma({a[0]}, {a[1]}, {a[2]}, {d.name!r})", False),
}
for _name, _fn in MATH_UNARY.items():
    TEMPLATES[f"math.{_name}"] = _call(_fn if _fn.startswith("math.") else f"_S.{_fn}", True)

# Identity of each affine.parallel reduction (MLIR's arith::getIdentityValueAttr) and the
# arith op that combines.
def reduction_identity(kind: str, info: ScalarInfo) -> str:
    return {
        "addf": "0.0", "mulf": "1.0", "maximumf": "(-_INF)", "minimumf": "_INF",
        "addi": "0", "muli": "1", "maxs": int_literal(info.min_signed), "mins": int_literal(info.max_signed),
        "maxu": "0", "minu": "(-1)", "andi": "(-1)", "ori": "0", "xori": "0",
    }[kind]
