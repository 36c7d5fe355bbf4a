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
from collections.abc import Callable

from llvmlite import ir

from affine_ir.core import Operation
from affine_ir.dialects import arith
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


def _int_div(em: FunctionEmitter, rounding: str, a: ir.Value, d: ir.Value, w: int, unsigned: bool) -> ir.Value:
    """``a / d`` (``rounding``: ``"toward_zero"``, ``"floor"``, ``"ceil"``) or ``a % d`` (``"rem"``), in
    the signedness of the op; 0 for a zero divisor."""
    b = em.b
    safe, zero = _safe_divisor(em, a, d, w, not unsigned)
    ty = a.type
    if unsigned:
        out = b.urem(a, safe) if rounding == "rem" else b.udiv(a, safe)
    elif rounding == "rem":
        out = b.srem(a, safe)
    else:
        q, r = b.sdiv(a, safe), b.srem(a, safe)
        if rounding == "toward_zero":
            out = q
        else:
            nonzero = b.icmp_signed("!=", r, splat(ty, 0))
            same_sign = b.icmp_signed("==", b.icmp_signed("<", r, splat(ty, 0)), b.icmp_signed("<", safe, splat(ty, 0)))
            if rounding == "floor":
                out = b.sub(q, b.zext(b.and_(nonzero, b.not_(same_sign)), ty))
            else:
                out = b.add(q, b.zext(b.and_(nonzero, same_sign), ty))
    return b.select(zero, splat(ty, 0), out)


def _shift(em: FunctionEmitter, direction: str, a: ir.Value, n: ir.Value, w: int, unsigned: bool) -> ir.Value:
    b = em.b
    ty = a.type
    ok = b.icmp_unsigned("<", n, splat(ty, w))
    safe = b.select(ok, n, splat(ty, 0))
    if direction == "left":
        return b.select(ok, b.shl(a, safe), splat(ty, 0))
    if unsigned:
        return b.select(ok, b.lshr(a, safe), splat(ty, 0))
    return b.select(ok, b.ashr(a, safe), b.ashr(a, splat(ty, w - 1)))


def _float_binary(instruction: str) -> Callable:
    return lambda em, cls, a, c, t: round_result(em, getattr(em.b, instruction)(a, c, flags=fm(em)), t)


def _float_intrinsic(name: str) -> Callable:
    return lambda em, cls, a, c, t: _intrinsic(em, name, a, c)


def _int_binary(builder_method: str) -> Callable:
    return lambda em, cls, a, c, t: getattr(em.b, builder_method)(a, c)


def _int_shift(direction: str) -> Callable:
    return lambda em, cls, a, c, t: _shift(em, direction, a, c, width(t), cls.unsigned)


def _int_division(rounding: str) -> Callable:
    return lambda em, cls, a, c, t: _int_div(em, rounding, a, c, width(t), cls.unsigned)


def _pick(keeps_second_when: str) -> Callable:
    """max/min: ``select(a <cmp> c, c, a)``; ties keep a, as the interpreter does (same value anyway)."""
    def lower(em, cls, a, c, t):
        b = em.b
        cmp = b.icmp_unsigned(keeps_second_when, a, c) if cls.unsigned else b.icmp_signed(keeps_second_when, a, c)
        return b.select(cmp, c, a)
    return lower


#: The lowering of each binary arith op class: ``lower(em, op_class, a, c, t)`` on register values.
BINARY_LOWERINGS: dict[type[Operation], Callable] = {
    arith.AddfOp: _float_binary("fadd"), arith.SubfOp: _float_binary("fsub"), arith.MulfOp: _float_binary("fmul"),
    arith.DivfOp: _float_binary("fdiv"),
    arith.RemfOp: lambda em, cls, a, c, t: em.b.frem(a, c, flags=fm(em)),  # exact: fmod's result is representable
    arith.MaximumfOp: _float_intrinsic("llvm.maximum"), arith.MinimumfOp: _float_intrinsic("llvm.minimum"),
    arith.AddiOp: _int_binary("add"), arith.SubiOp: _int_binary("sub"), arith.MuliOp: _int_binary("mul"),
    arith.AndiOp: _int_binary("and_"), arith.OriOp: _int_binary("or_"), arith.XoriOp: _int_binary("xor"),
    arith.ShliOp: _int_shift("left"), arith.ShrsiOp: _int_shift("right"), arith.ShruiOp: _int_shift("right"),
    arith.MaxsiOp: _pick("<"), arith.MinsiOp: _pick(">"), arith.MaxuiOp: _pick("<"), arith.MinuiOp: _pick(">"),
    arith.DivsiOp: _int_division("toward_zero"), arith.DivuiOp: _int_division("toward_zero"),
    arith.RemsiOp: _int_division("rem"), arith.RemuiOp: _int_division("rem"),
    arith.FloordivsiOp: _int_division("floor"), arith.CeildivsiOp: _int_division("ceil"),
}


def binary_op(em: FunctionEmitter, op_class: type[Operation], a: ir.Value, c: ir.Value, t: Type) -> ir.Value:
    """The binary arith op ``op_class`` on register values ``a``, ``c`` of IR type ``t`` (scalar or
    vector), with the interpreter's semantics. KeyError for an op class without a lowering."""
    return BINARY_LOWERINGS[op_class](em, op_class, a, c, t)


@handler(*(cls.name for cls in BINARY_LOWERINGS))
def _binary(em: FunctionEmitter, op) -> None:
    a, c = (em.get(v) for v in op.operands)
    em.set(op.results[0], binary_op(em, type(op), a, c, op.results[0].type))


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


def _resize_int(em: FunctionEmitter, cls, x: ir.Value, src: Type, dst: Type) -> ir.Value:
    """``index_cast``, ``extsi``, ``extui``, ``trunci``: truncate, or extend (zero-extend when unsigned)."""
    ws, wd = width(src), width(dst)
    if ws == wd:
        return x
    rt = reg_type(dst)
    if wd < ws:
        return em.b.trunc(x, rt)
    return em.b.zext(x, rt) if cls.unsigned else em.b.sext(x, rt)


def _truncf(em: FunctionEmitter, cls, x: ir.Value, src: Type, dst: Type) -> ir.Value:
    fs, fd = float_format(src), float_format(dst)
    if fs == "f64":
        return round_f64_to(em.b, x, fd)
    return round_f32_to(em.b, x, fd)


def _extf(em: FunctionEmitter, cls, x: ir.Value, src: Type, dst: Type) -> ir.Value:
    rt = reg_type(dst)
    return x if x.type == rt else em.b.fpext(x, rt)


#: The lowering of each arith cast op class: ``lower(em, op_class, x, src, dst)`` on a register value.
CAST_LOWERINGS: dict[type[Operation], Callable] = {
    arith.IndexCastOp: _resize_int, arith.ExtsiOp: _resize_int, arith.ExtuiOp: _resize_int,
    arith.TrunciOp: _resize_int,
    arith.SitofpOp: lambda em, cls, x, src, dst: _int_to_float(em, x, src, dst, cls.unsigned),
    arith.UitofpOp: lambda em, cls, x, src, dst: _int_to_float(em, x, src, dst, cls.unsigned),
    arith.FptosiOp: lambda em, cls, x, src, dst: _fp_to_int(em, x, dst, cls.unsigned),
    arith.FptouiOp: lambda em, cls, x, src, dst: _fp_to_int(em, x, dst, cls.unsigned),
    arith.ExtfOp: _extf, arith.TruncfOp: _truncf,
    arith.BitcastOp: lambda em, cls, x, src, dst: _from_bits(em, _bits_of(em, x, src), dst),
}


def cast(em: FunctionEmitter, op_class: type[Operation], x: ir.Value, src: Type, dst: Type) -> ir.Value:
    """The arith cast ``op_class`` of register value ``x`` from ``src`` to ``dst``. KeyError for an op
    class without a lowering."""
    return CAST_LOWERINGS[op_class](em, op_class, x, src, dst)


@handler(*(cls.name for cls in CAST_LOWERINGS))
def _cast(em: FunctionEmitter, op) -> None:
    src, dst = op.operands[0].type, op.results[0].type
    for t in (src, dst):
        if isinstance(scalar_of(t), IntegerType) and scalar_of(t).width > 64:
            raise em.error(op, f"integers wider than 64 bits ({t}) are not supported")
    em.set(op.results[0], cast(em, type(op), em.get(op.operands[0]), src, dst))
