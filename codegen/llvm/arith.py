"""``arith`` ops with the interpreter's exact semantics.

- Integers wrap (two's complement); ``i1`` true is all ones. ``floordivsi``/``ceildivsi``
  round down/up, ``divsi`` truncates, ``remsi`` takes the dividend's sign.
- **Where the interpreter raises** (division or remainder by zero, ``INT_MIN / -1`` for
  the signed divisions, a shift amount not below the bit width, ``fptosi/fptoui`` of NaN,
  inf or an out-of-range value) LLVM would have undefined behaviour (x86 traps on a
  division by zero and kills the process). The emitted code instead gives a defined
  result and never traps: a division/remainder by zero gives 0, ``INT_MIN / -1`` gives
  ``INT_MIN`` (its remainder 0), an oversized shift gives 0 (``shrsi``: the sign fill),
  ``fptosi/fptoui`` saturate (NaN gives 0). Programs the interpreter accepts compute the
  same values.
- Floats: f32/f64 ops are IEEE (LLVM's defaults: no fast-math unless asked); f16/bf16 are
  computed in f32 and rounded back to the 16-bit format after every op, which equals the
  interpreter's single rounding for +, -, *, / (f32 has at least 2p+2 bits). ``divf`` by
  zero gives ±inf/NaN, ``remf`` is C ``fmod``, ``maximumf/minimumf`` propagate NaN and
  order -0 < +0 (``llvm.maximum/minimum``).
- Casts round once: ``sitofp/uitofp`` to f16/bf16 go through f64 and a round-to-odd step
  (exact for sources of at most 53 bits: i64 values beyond 2**53 into bf16 may differ in
  the last place), ``truncf`` f64 -> f16/bf16 likewise (exact).
"""

from __future__ import annotations

import math

from llvmlite import ir

from affine_ir.types import FloatType, IndexType, IntegerType, Type, VectorType

from .emitter import FunctionEmitter, handler
from .types import (
    F16,
    F64,
    I32,
    SIXTEEN_BIT,
    float_format,
    intrinsic,
    reg_type,
    round_f32_to,
    round_f64_to,
    same_type_intrinsic,
    scalar_of,
    splat,
)
from .types import with_element as _with

FLOAT_OPS = {"arith.addf": "fadd", "arith.subf": "fsub", "arith.mulf": "fmul", "arith.divf": "fdiv"}
FLOAT_FLAGS = ("fast",)


def width(t: Type) -> int:
    s = scalar_of(t)
    return 64 if isinstance(s, IndexType) else s.width


def fm(em: FunctionEmitter) -> tuple:
    return FLOAT_FLAGS if em.options.fast_math else ()


def round_result(em: FunctionEmitter, x: ir.Value, t: Type) -> ir.Value:
    """An f32 op result of (16-bit) type ``t`` rounded to it."""
    fmt = float_format(t)
    return round_f32_to(em.b, x, fmt) if fmt in SIXTEEN_BIT else x


def _intrinsic(em: FunctionEmitter, name: str, *args: ir.Value) -> ir.Value:
    fn = same_type_intrinsic(em.module, name, args[0].type, len(args))
    return em.b.call(fn, list(args))


def _safe_divisor(em: FunctionEmitter, a: ir.Value, d: ir.Value, w: int, signed: bool):
    """(divisor never 0 nor -1 against INT_MIN, result-is-zero flag)."""
    b = em.b
    ty = a.type
    zero = b.icmp_unsigned("==", d, splat(ty, 0))
    bad = zero
    if signed:
        overflow = b.and_(b.icmp_signed("==", a, splat(ty, -(1 << (w - 1)))), b.icmp_signed("==", d, splat(ty, -1)))
        bad = b.or_(zero, overflow)
    return b.select(bad, splat(ty, 1), d), zero


def _int_div(em: FunctionEmitter, name: str, a: ir.Value, d: ir.Value, w: int) -> ir.Value:
    b = em.b
    signed = name in ("arith.divsi", "arith.remsi", "arith.floordivsi", "arith.ceildivsi")
    safe, zero = _safe_divisor(em, a, d, w, signed)
    ty = a.type
    if name == "arith.divui":
        out = b.udiv(a, safe)
    elif name == "arith.remui":
        out = b.urem(a, safe)
    elif name == "arith.remsi":
        out = b.srem(a, safe)
    else:
        q, r = b.sdiv(a, safe), b.srem(a, safe)
        if name == "arith.divsi":
            out = q
        else:
            nonzero = b.icmp_signed("!=", r, splat(ty, 0))
            same_sign = b.icmp_signed("==", b.icmp_signed("<", r, splat(ty, 0)), b.icmp_signed("<", safe, splat(ty, 0)))
            if name == "arith.floordivsi":
                out = b.sub(q, b.zext(b.and_(nonzero, b.not_(same_sign)), ty))
            else:
                out = b.add(q, b.zext(b.and_(nonzero, same_sign), ty))
    return b.select(zero, splat(ty, 0), out)


def _shift(em: FunctionEmitter, name: str, a: ir.Value, n: ir.Value, w: int) -> ir.Value:
    b = em.b
    ty = a.type
    ok = b.icmp_unsigned("<", n, splat(ty, w))
    safe = b.select(ok, n, splat(ty, 0))
    if name == "arith.shli":
        return b.select(ok, b.shl(a, safe), splat(ty, 0))
    if name == "arith.shrui":
        return b.select(ok, b.lshr(a, safe), splat(ty, 0))
    return b.select(ok, b.ashr(a, safe), b.ashr(a, splat(ty, w - 1)))


_PICK = {"arith.maxsi": ("<", True), "arith.minsi": (">", True), "arith.maxui": ("<", False),
         "arith.minui": (">", False)}


def binary_op(em: FunctionEmitter, name: str, a: ir.Value, c: ir.Value, t: Type) -> ir.Value:
    """The arith op ``name`` on register values ``a``, ``c`` of IR type ``t`` (scalar or vector)."""
    b = em.b
    if name in FLOAT_OPS:
        return round_result(em, getattr(b, FLOAT_OPS[name])(a, c, flags=fm(em)), t)
    if name == "arith.remf":
        return b.frem(a, c, flags=fm(em))  # exact: fmod's result is representable
    if name in ("arith.maximumf", "arith.minimumf"):
        return _intrinsic(em, "llvm.maximum" if name == "arith.maximumf" else "llvm.minimum", a, c)
    w = width(t)
    if name in ("arith.addi", "arith.subi", "arith.muli"):
        return {"arith.addi": b.add, "arith.subi": b.sub, "arith.muli": b.mul}[name](a, c)
    if name in ("arith.andi", "arith.ori", "arith.xori"):
        return {"arith.andi": b.and_, "arith.ori": b.or_, "arith.xori": b.xor}[name](a, c)
    if name in ("arith.shli", "arith.shrsi", "arith.shrui"):
        return _shift(em, name, a, c, w)
    if name in _PICK:
        op, signed = _PICK[name]
        cmp = b.icmp_signed(op, a, c) if signed else b.icmp_unsigned(op, a, c)
        return b.select(cmp, c, a)  # ties keep a, as the interpreter does (same value anyway)
    if name in ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi"):
        return _int_div(em, name, a, c, w)
    raise KeyError(name)


BINARY = tuple(FLOAT_OPS) + ("arith.remf", "arith.maximumf", "arith.minimumf", "arith.addi", "arith.subi",
                             "arith.muli", "arith.andi", "arith.ori", "arith.xori", "arith.shli", "arith.shrsi",
                             "arith.shrui", *_PICK, "arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
                             "arith.floordivsi", "arith.ceildivsi")


@handler(*BINARY)
def _binary(em: FunctionEmitter, op) -> None:
    a, c = (em.get(v) for v in op.operands)
    em.set(op.results[0], binary_op(em, op.name, a, c, op.results[0].type))


@handler("arith.negf")
def _negf(em: FunctionEmitter, op) -> None:
    em.set(op.results[0], em.b.fneg(em.get(op.operands[0])))


def reduction_identity(kind: str, t: Type) -> ir.Value:
    """The identity of an ``affine.parallel`` reduction (MLIR's ``getIdentityValueAttr``)."""
    ty = reg_type(t)
    w = width(t) if not isinstance(scalar_of(t), FloatType) else 0
    value = {
        "addf": 0.0, "mulf": 1.0, "maximumf": -math.inf, "minimumf": math.inf, "addi": 0, "muli": 1,
        "maxs": -(1 << (w - 1)) if w else 0, "mins": (1 << (w - 1)) - 1 if w else 0, "maxu": 0, "minu": -1,
        "andi": -1, "ori": 0, "xori": 0,
    }[kind]
    return splat(ty, value)


# -- constants, comparisons, select ---------------------------------------------------------


@handler("arith.constant")
def _constant(em: FunctionEmitter, op) -> None:
    t = op.results[0].type
    ty = reg_type(t)
    v = op.value
    if isinstance(t, VectorType):
        vals = list(v) * (ty.count if len(v) == 1 else 1)
        em.set(op.results[0], ir.Constant(ty, [ir.Constant(ty.element, x) for x in vals]))
    else:
        em.set(op.results[0], ir.Constant(ty, v))


_CMPI = {"eq": ("==", True), "ne": ("!=", True), "slt": ("<", True), "sle": ("<=", True), "sgt": (">", True),
         "sge": (">=", True), "ult": ("<", False), "ule": ("<=", False), "ugt": (">", False), "uge": (">=", False)}
_CMPF = {"eq": "==", "gt": ">", "ge": ">=", "lt": "<", "le": "<=", "ne": "!=", "rd": "ord", "no": "uno"}


@handler("arith.cmpi")
def _cmpi(em: FunctionEmitter, op) -> None:
    a, c = (em.get(v) for v in op.operands)
    sym, signed = _CMPI[op.predicate]
    em.set(op.results[0], em.b.icmp_signed(sym, a, c) if signed else em.b.icmp_unsigned(sym, a, c))


@handler("arith.cmpf")
def _cmpf(em: FunctionEmitter, op) -> None:
    a, c = (em.get(v) for v in op.operands)
    p = op.predicate
    rt = reg_type(op.results[0].type)
    if p in ("false", "true"):
        em.set(op.results[0], splat(rt, int(p == "true")))
        return
    if p in ("ord", "uno"):
        fn = em.b.fcmp_ordered if p == "ord" else em.b.fcmp_unordered
        em.set(op.results[0], fn(p, a, c))
        return
    fn = em.b.fcmp_ordered if p[0] == "o" else em.b.fcmp_unordered
    em.set(op.results[0], fn(_CMPF[p[1:]], a, c))


@handler("arith.select")
def _select(em: FunctionEmitter, op) -> None:
    c, a, d = (em.get(v) for v in op.operands)
    em.set(op.results[0], em.b.select(c, a, d))


# -- casts ----------------------------------------------------------------------------------


def _int_to_float(em: FunctionEmitter, x: ir.Value, src: Type, dst: Type, unsigned: bool) -> ir.Value:
    b = em.b
    fmt = float_format(dst)
    conv = b.uitofp if unsigned else b.sitofp
    if fmt in ("f32", "f64"):
        return conv(x, reg_type(dst))
    return round_f64_to(b, conv(x, _with(x.type, F64)), fmt)


def _fp_to_int(em: FunctionEmitter, x: ir.Value, dst: Type, unsigned: bool) -> ir.Value:
    rt = reg_type(dst)
    name = "llvm.fptoui.sat" if unsigned else "llvm.fptosi.sat"
    fn = intrinsic(em.module, name, rt, [x.type], [rt, x.type])
    return em.b.call(fn, [x])


def _bits_of(em: FunctionEmitter, x: ir.Value, src: Type) -> ir.Value:
    b = em.b
    fmt = float_format(src)
    if fmt == "f16":
        return b.bitcast(b.fptrunc(x, _with(x.type, F16)), _with(x.type, ir.IntType(16)))
    if fmt == "bf16":
        bits = b.bitcast(x, _with(x.type, I32))
        return b.trunc(b.lshr(bits, splat(bits.type, 16)), _with(x.type, ir.IntType(16)))
    if fmt is not None:
        return b.bitcast(x, _with(x.type, ir.IntType(width(src))))
    return x


def _from_bits(em: FunctionEmitter, bits: ir.Value, dst: Type) -> ir.Value:
    b = em.b
    fmt = float_format(dst)
    rt = reg_type(dst)
    if fmt == "f16":
        return b.fpext(b.bitcast(bits, _with(bits.type, F16)), rt)
    if fmt == "bf16":
        wide = b.zext(bits, _with(bits.type, I32))
        return b.bitcast(b.shl(wide, splat(wide.type, 16)), rt)
    return b.bitcast(bits, rt) if fmt is not None else bits


def cast(em: FunctionEmitter, name: str, x: ir.Value, src: Type, dst: Type) -> ir.Value:
    """The arith cast ``name`` of register value ``x`` from ``src`` to ``dst``."""
    b = em.b
    rt = reg_type(dst)
    ws, wd = (width(src) if not isinstance(scalar_of(src), FloatType) else 0), \
        (width(dst) if not isinstance(scalar_of(dst), FloatType) else 0)
    if name in ("arith.index_cast", "arith.extsi", "arith.trunci", "arith.extui"):
        if ws == wd:
            return x
        if wd < ws:
            return b.trunc(x, rt)
        return b.zext(x, rt) if name == "arith.extui" else b.sext(x, rt)
    if name in ("arith.sitofp", "arith.uitofp"):
        return _int_to_float(em, x, src, dst, name == "arith.uitofp")
    if name in ("arith.fptosi", "arith.fptoui"):
        return _fp_to_int(em, x, dst, name == "arith.fptoui")
    if name == "arith.extf":
        return x if x.type == rt else b.fpext(x, rt)
    if name == "arith.truncf":
        fs, fd = float_format(src), float_format(dst)
        if fs == "f64":
            return round_f64_to(b, x, fd)
        return round_f32_to(b, x, fd)
    if name == "arith.bitcast":
        return _from_bits(em, _bits_of(em, x, src), dst)
    raise KeyError(name)


CASTS = ("arith.index_cast", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.extf",
         "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast")


@handler(*CASTS)
def _cast(em: FunctionEmitter, op) -> None:
    src, dst = op.operands[0].type, op.results[0].type
    for t in (src, dst):
        if isinstance(scalar_of(t), IntegerType) and scalar_of(t).width > 64:
            raise em.error(op, f"integers wider than 64 bits ({t}) are not supported")
    em.set(op.results[0], cast(em, op.name, em.get(op.operands[0]), src, dst))
