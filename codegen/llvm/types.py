"""IR types as LLVM types, and the exact float roundings the emitted code performs.

Register (SSA) representation: ``index`` is i64, ``iN`` is iN, f32/f64 are float/double,
**f16 and bf16 values are held in a ``float``** that is exactly a value of the 16-bit
type (every op rounds its f32 result back to the 16-bit format, as the interpreter
does), vectors are flat LLVM vectors of ``prod(shape)`` lanes.

Storage (memory) representation: f16/bf16 as their 16-bit patterns (i16), i1 as one byte
(numpy ``bool``), ``index`` as i64, other scalars as themselves; memrefs of vectors hold
LLVM vectors of the storage type.
"""

from __future__ import annotations

import math

from llvmlite import ir

from affine_ir.types import FloatType, IndexType, IntegerType, Type, VectorType

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

SIXTEEN_BIT = ("f16", "bf16")


class UnsupportedType(TypeError):
    """A type the CPU backend has no LLVM representation for (the emitter names the op)."""


def scalar_of(t: Type) -> Type:
    return t.element_type if isinstance(t, VectorType) else t


def lanes(t: Type) -> int | None:
    """Number of lanes of a vector type, None for scalars."""
    return math.prod(t.shape) if isinstance(t, VectorType) else None


def float_format(t: Type) -> str | None:
    """``"f16"/"bf16"/"f32"/"f64"`` for (vectors of) float types, else None."""
    s = scalar_of(t)
    return s.name if isinstance(s, FloatType) else None


def _scalar_reg(t: Type) -> ir.Type:
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, IntegerType):
        return ir.IntType(t.width)
    if isinstance(t, FloatType):
        if t.width == 8:
            raise UnsupportedType(f"type {t}: 8-bit floats are not supported by the CPU backend yet (the "
                                  f"interpreter and the CUDA backend run them)")
        return F64 if t.name == "f64" else F32
    raise UnsupportedType(f"type {t} has no CPU representation")


def _scalar_storage(t: Type) -> ir.Type:
    if isinstance(t, FloatType) and t.name in SIXTEEN_BIT:
        return I16
    if isinstance(t, IntegerType) and t.width == 1:
        return I8
    return _scalar_reg(t)


def reg_type(t: Type) -> ir.Type:
    """The LLVM type of an SSA value of type ``t``."""
    if isinstance(t, VectorType):
        return ir.VectorType(_scalar_reg(t.element_type), lanes(t))
    return _scalar_reg(t)


def storage_type(t: Type) -> ir.Type:
    """The LLVM type of one memref element of type ``t`` in memory."""
    if isinstance(t, VectorType):
        return ir.VectorType(_scalar_storage(t.element_type), lanes(t))
    return _scalar_storage(t)


def storage_bytes(t: Type) -> int:
    """Bytes of one stored element (vectors: all lanes)."""
    s = scalar_of(t)
    if isinstance(s, IndexType):
        n = 8
    elif isinstance(s, IntegerType):
        n = 1 if s.width == 1 else max(1, (s.width + 7) // 8)
    else:
        n = s.width // 8
    return n * (lanes(t) or 1)


def element_align(t: Type) -> int:
    """The natural alignment of one scalar element in memory (what numpy guarantees)."""
    n = storage_bytes(scalar_of(t))
    return n if n in (1, 2, 4, 8) else 1


def splat(ty: ir.Type, value) -> ir.Constant:
    """A constant of ``ty`` (scalar or vector) with every lane ``value``."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def with_element(ty: ir.Type, el: ir.Type) -> ir.Type:
    """``ty`` with its (lane) element type replaced by ``el``."""
    return ir.VectorType(el, ty.count) if isinstance(ty, ir.VectorType) else el


# ----------------------------------------------------------------------------------------
# Exact roundings (all vector-friendly: only casts, integer ops and selects)
# ----------------------------------------------------------------------------------------


def round_f32_to(b: ir.IRBuilder, x: ir.Value, fmt: str) -> ir.Value:
    """The f32 value ``x`` rounded (to nearest, ties to even) to ``fmt``, held as f32 again."""
    if fmt == "f16":
        return b.fpext(b.fptrunc(x, with_element(x.type, F16)), x.type)
    if fmt == "bf16":
        it = with_element(x.type, I32)
        bits = b.bitcast(x, it)
        lsb = b.and_(b.lshr(bits, splat(it, 16)), splat(it, 1))
        rounded = b.and_(b.add(b.add(bits, splat(it, 0x7FFF)), lsb), splat(it, 0xFFFF0000))
        quiet_nan = b.or_(b.and_(bits, splat(it, 0xFFFF0000)), splat(it, 0x00400000))
        isnan = b.fcmp_unordered("uno", x, x)
        return b.bitcast(b.select(isnan, quiet_nan, rounded), x.type)
    return x


def f64_to_f32_odd(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """``x`` (double) rounded to float *to odd*: exact results stay, inexact ones take the
    neighbour with an odd last bit. Rounding that to any format of at most 22 significant
    bits (f16, bf16) to nearest-even equals rounding ``x`` directly (no double rounding)."""
    ft = with_element(x.type, F32)
    it = with_element(x.type, I32)
    r = b.fptrunc(x, ft)
    back = b.fpext(r, x.type)
    bits = b.bitcast(r, it)
    inexact = b.fcmp_ordered("!=", back, x)
    even = b.icmp_unsigned("==", b.and_(bits, splat(it, 1)), splat(it, 0))
    too_big = b.fcmp_ordered(">", b.call(_fabs(b, x.type), [back]), b.call(_fabs(b, x.type), [x]))
    moved = b.select(too_big, b.sub(bits, splat(it, 1)), b.add(bits, splat(it, 1)))
    fix = b.and_(inexact, even)
    return b.bitcast(b.select(fix, moved, bits), ft)


def _fabs(b: ir.IRBuilder, ty: ir.Type) -> ir.Function:
    return same_type_intrinsic(b.module, "llvm.fabs", ty, 1)


def round_f64_to(b: ir.IRBuilder, x: ir.Value, fmt: str) -> ir.Value:
    """The double ``x`` rounded once to ``fmt``; the register representation of the result
    (double for f64, float otherwise)."""
    if fmt == "f64":
        return x
    if fmt == "f32":
        return b.fptrunc(x, with_element(x.type, F32))
    return round_f32_to(b, f64_to_f32_odd(b, x), fmt)


def load_convert(b: ir.IRBuilder, raw: ir.Value, t: Type) -> ir.Value:
    """A value loaded in storage form (``storage_type(t)``) as a register value."""
    fmt = float_format(t)
    rt = reg_type(t)
    if fmt == "f16":
        return b.fpext(b.bitcast(raw, with_element(raw.type, F16)), rt)
    if fmt == "bf16":
        wide = b.zext(raw, with_element(raw.type, I32))
        return b.bitcast(b.shl(wide, splat(wide.type, 16)), rt)
    s = scalar_of(t)
    if isinstance(s, IntegerType) and s.width == 1:
        return b.trunc(raw, rt)
    return raw


def store_convert(b: ir.IRBuilder, value: ir.Value, t: Type) -> ir.Value:
    """A register value in storage form (exact: the value is representable)."""
    fmt = float_format(t)
    st = storage_type(t)
    if fmt == "f16":
        return b.bitcast(b.fptrunc(value, with_element(value.type, F16)), st)
    if fmt == "bf16":
        bits = b.bitcast(value, with_element(value.type, I32))
        return b.trunc(b.lshr(bits, splat(bits.type, 16)), st)
    s = scalar_of(t)
    if isinstance(s, IntegerType) and s.width == 1:
        return b.zext(value, st)
    return value


def type_suffix(ty: ir.Type) -> str:
    """LLVM's overload suffix of a type (``f32``, ``v8f32``, ``i64``, ``p0``)."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{type_suffix(ty.element)}"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.PointerType):
        return "p0"
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(ty)]


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type],
              overloads: list[ir.Type] | None = None) -> ir.Function:
    """The declaration of intrinsic ``name`` overloaded on ``overloads`` (default: ``[ret]``)."""
    full = name + "".join("." + type_suffix(t) for t in (overloads if overloads is not None else [ret]))
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, args), full)
    return fn


def same_type_intrinsic(module: ir.Module, name: str, ty: ir.Type, arity: int) -> ir.Function:
    """An intrinsic ``ty name(ty, ...)`` of ``arity`` operands (``llvm.exp``, ``llvm.fma``, ...)."""
    return intrinsic(module, name, ty, [ty] * arity)
