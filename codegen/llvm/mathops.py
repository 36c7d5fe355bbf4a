"""``math`` and ``vector`` ops.

Math functions of f32/f16/bf16 values are computed in double and rounded once to the type,
what the interpreter does: ``exp``, ``exp2``, ``log``, ``log2``, ``tanh`` and ``erf`` as
inline branch-free polynomials (:mod:`.vector_math`: relative error below 2**-50, so the
result equals the interpreter's except when the exact value lies within ~2**-50 of a
rounding midpoint of the type; loops with them vectorize), the others through libm
(``llvm.sin`` etc. where LLVM has an intrinsic, otherwise libm calls resolved when the
code is loaded; Python's ``math`` calls the same libm on the platforms we know). f64 math
stays on libm. With ``fast_math=True`` f32 math is computed in f32: the six functions by
the f32 polynomials of :mod:`.vector_math` (within 2 ulp), the others by the float libm
functions (``sinf`` ...), within an ulp or two. ``sqrt``, ``absf``, ``floor``,
``ceil`` and ``fma`` (f32/f64) are exact in either mode; ``fma`` of f16/bf16 is computed
in double and rounded (a product of 16-bit floats is exact in double).
``vector.reduction`` combines the lanes left to right starting with the first lane, with
the rounding of the element type after each step.
"""

from __future__ import annotations

from llvmlite import ir

from affine_ir.dialects import arith
from affine_ir.types import FloatType

from .arith import binary_op, fm
from .emitter import FunctionEmitter, handler
from .types import F32, F64, I32, float_format, reg_type, round_f64_to, same_type_intrinsic, splat
from .types import with_element as _with
from .vector_math import FUNCTIONS as INLINE
from .vector_math import emit_math

INTRINSIC = {"exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2", "sin": "llvm.sin",
             "cos": "llvm.cos", "sqrt": "llvm.sqrt", "powf": "llvm.pow"}
LIBM = {"erf": "erf", "tanh": "tanh"}
EXACT = {"absf": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil"}


def _lanewise(em: FunctionEmitter, fn: ir.Function, args: list[ir.Value]) -> ir.Value:
    """``fn`` (a scalar function) applied to each lane of vector ``args``."""
    b = em.b
    ty = args[0].type
    out = ir.Constant(ty, ir.Undefined)
    for k in range(ty.count):
        idx = ir.Constant(I32, k)
        out = b.insert_element(out, b.call(fn, [b.extract_element(a, idx) for a in args]), idx)
    return out


def _call_math(em: FunctionEmitter, name: str, args: list[ir.Value], el: ir.Type) -> ir.Value:
    """Math function ``name`` (a math-op name) on values of element type ``el`` (float or double)."""
    b = em.b
    ty = args[0].type
    if name == "rsqrt":
        s = _call_math(em, "sqrt", args, el)
        return b.fdiv(splat(ty, 1.0), s, flags=fm(em))
    if name in INTRINSIC:
        fn = same_type_intrinsic(em.module, INTRINSIC[name], ty, len(args))
        return b.call(fn, args, fastmath=fm(em))
    cname = LIBM[name] + ("f" if el == F32 else "")
    fn = em.ctx.declare(cname, el, [el] * len(args))
    if isinstance(ty, ir.VectorType):
        return _lanewise(em, fn, args)
    return b.call(fn, args)


@handler(*(f"math.{n}" for n in (*INTRINSIC, *LIBM, *EXACT, "rsqrt", "fma")))
def _math(em: FunctionEmitter, op) -> None:
    b = em.b
    name = op.name.split(".")[1]
    t = op.results[0].type
    fmt = float_format(t)
    args = [em.get(v) for v in op.operands]
    if name in EXACT:
        fn = same_type_intrinsic(em.module, EXACT[name], args[0].type, 1)
        em.set(op.results[0], b.call(fn, args))
        return
    if name == "fma" and fmt in ("f32", "f64"):
        fn = same_type_intrinsic(em.module, "llvm.fma", args[0].type, 3)
        em.set(op.results[0], b.call(fn, args))
        return
    if fmt == "f64":
        em.set(op.results[0], _call_math(em, name, args, F64))
        return
    if em.options.fast_math and fmt == "f32" and name != "fma":
        fast = emit_math(b, name, args[0]) if name in INLINE else _call_math(em, name, args, F32)
        em.set(op.results[0], fast)
        return
    wide = [b.fpext(a, _with(a.type, F64)) for a in args]
    if name == "fma":
        fn = same_type_intrinsic(em.module, "llvm.fma", wide[0].type, 3)
        r = b.call(fn, wide)
    elif name in INLINE:  # the argument is an f32 (or 16-bit) value: what the inline kind needs
        r = emit_math(b, name, wide[0])
    else:
        r = _call_math(em, name, wide, F64)
    em.set(op.results[0], round_f64_to(b, r, fmt))


@handler("vector.broadcast")
def _broadcast(em: FunctionEmitter, op) -> None:
    b = em.b
    ty = reg_type(op.results[0].type)
    x = em.get(op.operands[0])
    one = b.insert_element(ir.Constant(ty, ir.Undefined), x, ir.Constant(I32, 0))
    mask = ir.Constant(ir.VectorType(I32, ty.count), [ir.Constant(I32, 0)] * ty.count)
    em.set(op.results[0], b.shuffle_vector(one, ir.Constant(ty, ir.Undefined), mask))


_REDUCTION_OPS = {
    ("add", True): arith.AddfOp, ("mul", True): arith.MulfOp, ("maximumf", True): arith.MaximumfOp,
    ("minimumf", True): arith.MinimumfOp, ("add", False): arith.AddiOp, ("mul", False): arith.MuliOp,
    ("maxsi", False): arith.MaxsiOp, ("minsi", False): arith.MinsiOp, ("and", False): arith.AndiOp,
    ("or", False): arith.OriOp, ("xor", False): arith.XoriOp,
}


@handler("vector.reduction")
def _reduction(em: FunctionEmitter, op) -> None:
    b = em.b
    t = op.results[0].type
    combining = _REDUCTION_OPS.get((op.kind, isinstance(t, FloatType)))
    if combining is None:
        raise em.error(op, f"reduction <{op.kind}> does not apply to {t}")
    v = em.get(op.operands[0])
    acc = b.extract_element(v, ir.Constant(I32, 0))
    for k in range(1, v.type.count):
        acc = binary_op(em, combining, acc, b.extract_element(v, ir.Constant(I32, k)), t)
    em.set(op.results[0], acc)


