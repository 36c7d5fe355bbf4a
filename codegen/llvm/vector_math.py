"""Math functions as inline, branch-free LLVM IR that LLVM's loop and SLP vectorizers can
vectorize: ``exp``, ``exp2``, ``log``, ``log2``, ``tanh`` and ``erf``.

``emit_math(b, name, x)`` computes function ``name`` of ``x`` -- a scalar or a vector of any
lane count -- from float arithmetic, integer ops on bit patterns and selects: no branches,
no memory, no calls but intrinsics that backends inline (``llvm.fmuladd``, ``llvm.fabs``,
``llvm.copysign``). The element type of ``x`` picks one of two kinds:

- **double holding an f32 value** (how :mod:`.mathops` computes math of f32/f16/bf16
  lanes): relative error below 2**-50 wherever the argument is not clamped (measured with
  mpmath: at most 2**-51.5, tanh, to 2**-52.8, erf; the clamps -- |x| at 200 for exp/exp2,
  20 for tanh, 4 for erf -- give values that round to the saturated result of every
  16/32-bit format). Rounded once to f32/f16/bf16 that gives the interpreter's result (its
  ``math`` function in double, rounded once) **except when the exact value lies within
  about 2**-50 (relative) of a midpoint between two neighbours of the format**, where the
  two double approximations may round to different neighbours (double rounding). An
  exhaustive sweep of all 2**32 f32 inputs found no such input for any of the six
  functions (against this host's glibc); the tests check 2**20 sampled f32 inputs per
  function and every f16/bf16 input. The argument **must be an f32 value**: the range
  reductions rely on it (its products with a 32-bit part of ln 2, or with itself, are
  exact in double). f64 lanes keep libm.
- **float** (``fast_math`` f32): the same algorithms in f32 arithmetic with shorter
  polynomials (tanh below |x| = 0.55 an odd polynomial). Max errors over all 2**32 f32
  inputs, in ulps of the exact result: exp 1.06, exp2 1.13, log 0.86, log2 1.03, tanh 1.50,
  erf 1.10 -- measured on this host (Zen 4), where ``llvm.fmuladd`` is fused; without an
  FMA unit the polynomials round twice per step and the bounds are not re-measured.

Special values follow C and Python: ``exp(+-inf)`` is inf/0, results beyond the range
overflow to inf or underflow through correctly rounded denormals to 0, NaN gives NaN,
``log(+-0) = -inf``, ``log(x < 0) = NaN``, ``tanh(+-inf) = erf(+-inf) = +-1``; the odd
functions keep the sign of zero; ``exp2``/``log2`` of integers/powers of two are exact.

Coefficients (:data:`FITS`) are Chebyshev interpolants (``mpmath.chebyfit``, 50 digits) of
smooth targets, rounded to double or float; the tests re-derive them.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .types import F64, I32, I64, same_type_intrinsic, splat, with_element


@dataclass(frozen=True)
class Fit:
    """``coefficients`` (ascending powers) of the polynomial interpolating ``target`` at the
    ``len(coefficients)`` Chebyshev nodes of ``interval``, rounded to ``fmt`` (f64 or f32)."""

    target: str
    interval: tuple[float, float]
    fmt: str
    coefficients: tuple[float, ...]


# Targets (mpmath definitions in tests/test_llvm_math.py):
#   exp_tail(r) = (e**r - 1 - r) / r**2            exp2_tail(r) = (2**r - 1 - r ln2) / r**2
#   erf_small(t) = erf(sqrt t) / sqrt t - 1       erfc_scaled(t) = erfc(x) e**(x**2), x = 2 (1+t)/(1-t)
#   log_tail(u) = (2 atanh(s) - 2 s) / s**3, s = sqrt u   tanh_small(t) = (tanh(x) - x) / x**3, x = sqrt t
FITS: dict[tuple[str, str], Fit] = {(f.target, f.fmt): f for f in (
    Fit("exp_tail", (-0.35, 0.35), "f64", (
        0.5, 0.1666666666666667, 0.04166666666666667, 0.008333333333325551, 0.0013888888888883332,
        0.00019841269876840357, 2.480158732699005e-05, 2.755725286336732e-06, 2.755727183153613e-07,
        2.5106262550879078e-08, 2.0915433598076003e-09)),
    Fit("exp2_tail", (-0.5, 0.5), "f64", (
        0.24022650695910072, 0.0555041086648216, 0.009618129107628479, 0.0013333558146416936,
        0.00015403530393375914, 1.525273382983612e-05, 1.3215486802903931e-06, 1.0178062445845774e-07,
        7.054899956372649e-09, 4.4549605981865186e-10, 2.572508057683636e-11)),
    Fit("erf_small", (0.0, 1.0), "f64", (
        0.1283791670955126, -0.3761263890318375, 0.11283791670954879, -0.026866170645076792,
        0.0052239776248180145, -0.000854832698083379, 0.0001205533111164271, -1.4925595266831182e-05,
        1.6461000484121368e-06, -1.6350312701054695e-07, 1.4659775274047436e-08, -1.1372848856791674e-09,
        5.957176147748911e-11)),
    Fit("erfc_scaled", (-1 / 3, 1 / 3), "f64", (
        0.25539567631050575, -0.4271858474139582, 0.24165819424246626, -0.07897858101579691,
        0.0037328924043743177, 0.006997461745516201, -0.0008471432548619811, -0.0009819772985657563,
        4.355575943078143e-05, 0.00017436720005850528, 2.752216293557148e-05, -2.765206343508462e-05,
        -1.3930000651122316e-05, 1.8398662629544983e-06, 3.564734179481062e-06)),
    Fit("log_tail", (0.0, 0.0295), "f64", (
        0.666666666666667, 0.3999999999989819, 0.28571428626570206, 0.2222221103781659,
        0.18182896183483085, 0.15331487235865734, 0.14619343453512615)),
    Fit("exp_tail", (-0.35, 0.35), "f32", (
        0.5, 0.16666573286056519, 0.04166654869914055, 0.008363766595721245, 0.0013926918618381023)),
    Fit("exp2_tail", (-0.5, 0.5), "f32", (
        0.24022650718688965, 0.055503811687231064, 0.009618103504180908, 0.0013381302123889327,
        0.00015444883320014924)),
    Fit("erf_small", (0.0, 1.0), "f32", (
        0.12837916612625122, -0.3761262595653534, 0.11283594369888306, -0.02685421146452427,
        0.005189087241888046, -0.000801686430349946, 7.875874871388078e-05)),
    Fit("erfc_scaled", (-1 / 3, 1 / 3), "f32", (
        0.25539568066596985, -0.4271858334541321, 0.24165821075439453, -0.0789785236120224,
        0.003732141340151429, 0.006994855590164661, -0.0008365899557247758, -0.0009441596339456737)),
    Fit("log_tail", (0.0, 0.0295), "f32", (
        0.6666666865348816, 0.4000012278556824, 0.28550732135772705, 0.23332913219928741)),
    Fit("tanh_small", (0.0, 0.3025), "f32", (
        -0.3333333134651184, 0.13333113491535187, -0.05390942841768265, 0.021309388801455498,
        -0.00661022774875164)),
)}

# ln 2 = LN2_HI + LN2_LO: HI has 32 (f32 kind: 16) significant bits, so k * HI is exact for
# the |k| < 2**9 (2**8) that occur; LO is the rest rounded to the type.
_LN2 = {"f64": (float.fromhex("0x1.62e42feep-1"), float.fromhex("0x1.a39ef35793c76p-33")),
        "f32": (float.fromhex("0x1.62e4p-1"), float.fromhex("0x1.7f7d1cp-20"))}
# log2(e) = LOG2E + LOG2E_LO, each rounded to the type.
_LOG2E = {"f64": float.fromhex("0x1.71547652b82fep+0"), "f32": float.fromhex("0x1.715476p+0")}
_LOG2E_LO = {"f64": float.fromhex("0x1.777d0ffda0d24p-56"), "f32": float.fromhex("0x1.4ae0cp-26")}
_SQRT_HALF_BITS = {"f64": 0x3FE6A09E667F3BCD, "f32": 0x3F3504F3}
_INF = float("inf")

#: Functions :func:`emit_math` builds (for double and float arguments alike).
FUNCTIONS = frozenset({"exp", "exp2", "log", "log2", "tanh", "erf"})


class _Lanes:
    """Builder helpers for values of one float type ``ty`` (scalar or vector, float or double).
    Float ops carry no fast-math flags: the range reductions depend on the exact IEEE order."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type):
        self.b = b
        self.ty = ty
        el = ty.element if isinstance(ty, ir.VectorType) else ty
        self.fmt = "f64" if el == F64 else "f32"
        self.int_ty = with_element(ty, I64 if self.fmt == "f64" else I32)
        self.mantissa_bits = 52 if self.fmt == "f64" else 23
        self.bias = 1023 if self.fmt == "f64" else 127

    # constants and plain ops
    def f(self, v: float) -> ir.Constant:
        return splat(self.ty, v)

    def i(self, v: int) -> ir.Constant:
        return splat(self.int_ty, v)

    def add(self, a, c):
        return self.b.fadd(a, c)

    def sub(self, a, c):
        return self.b.fsub(a, c)

    def mul(self, a, c):
        return self.b.fmul(a, c)

    def div(self, a, c):
        return self.b.fdiv(a, c)

    def fma(self, a, c, d):
        """``a * c + d``, fused where the target has an FMA (``llvm.fmuladd``)."""
        fn = same_type_intrinsic(self.b.module, "llvm.fmuladd", self.ty, 3)
        return self.b.call(fn, [a, c, d])

    def poly(self, t, target: str):
        """The fitted polynomial of ``target`` (this type's precision) at ``t`` (Horner)."""
        cs = FITS[(target, self.fmt)].coefficients
        acc = self.f(cs[-1])
        for c in reversed(cs[:-1]):
            acc = self.fma(acc, t, self.f(c))
        return acc

    # comparisons and selects (ordered: false for NaN)
    def lt(self, a, c):
        return self.b.fcmp_ordered("<", a, c)

    def gt(self, a, c):
        return self.b.fcmp_ordered(">", a, c)

    def eq(self, a, c):
        return self.b.fcmp_ordered("==", a, c)

    def isnan(self, a):
        return self.b.fcmp_unordered("uno", a, a)

    def select(self, cond, a, c):
        return self.b.select(cond, a, c)

    def at_most(self, x, hi: float):
        """``min(x, hi)``, NaN kept."""
        return self.select(self.gt(x, self.f(hi)), self.f(hi), x)

    def at_least(self, x, lo: float):
        """``max(x, lo)``, NaN kept."""
        return self.select(self.lt(x, self.f(lo)), self.f(lo), x)

    def abs(self, x):
        return self.b.call(same_type_intrinsic(self.b.module, "llvm.fabs", self.ty, 1), [x])

    def copysign(self, x, sign):
        return self.b.call(same_type_intrinsic(self.b.module, "llvm.copysign", self.ty, 2), [x, sign])

    # bit patterns
    def bits(self, x):
        return self.b.bitcast(x, self.int_ty)

    def from_bits(self, n):
        return self.b.bitcast(n, self.ty)

    def pow2(self, k):
        """``2**k`` for an integer ``k`` in the normal exponent range."""
        return self.from_bits(self.b.shl(self.b.add(k, self.i(self.bias)), self.i(self.mantissa_bits)))

    def scale(self, p, k):
        """``p * 2**k`` by adding ``k`` to the exponent of ``p`` (the result must be normal)."""
        return self.from_bits(self.b.add(self.bits(p), self.b.shl(k, self.i(self.mantissa_bits))))

    def round_int(self, y):
        """``(k, kf)``: ``y`` rounded to the nearest integer (|y| < 2**22), as an integer and as
        a float, by adding and subtracting 1.5 * 2**mantissa_bits."""
        shifter = 1.5 * 2.0 ** self.mantissa_bits
        t = self.add(y, self.f(shifter))
        return self.b.sub(self.bits(t), self.bits(self.f(shifter))), self.sub(t, self.f(shifter))


# ----------------------------------------------------------------------------------------
# exp, expm1, exp2
# ----------------------------------------------------------------------------------------


def _reduce_ln2(m: _Lanes, x):
    """``(k, r)`` with ``x = k ln2 + r``, ``|r| <= 0.35`` (``|x| < 2**8``; ``x - k LN2_HI`` is
    exact for the arguments that occur: f32 values, or squares of them in double)."""
    hi, lo = _LN2[m.fmt]
    k, kf = m.round_int(m.mul(x, m.f(_LOG2E[m.fmt])))
    return k, m.fma(kf, m.f(-lo), m.fma(kf, m.f(-hi), x))


def _expm1_reduced(m: _Lanes, r):
    """``e**r - 1`` for ``|r| <= 0.35``, to a few units of the last place."""
    return m.fma(m.mul(r, r), m.poly(r, "exp_tail"), r)


def _scale_to_float(m: _Lanes, p, k):
    """``p * 2**k`` rounded once for ``p`` in [0.7, 1.5], ``-151 <= k <= 129`` (f32 kind):
    two exact-or-final multiplications by normal powers of two."""
    k1 = m.b.ashr(k, m.i(1))
    return m.mul(m.mul(p, m.pow2(k1)), m.pow2(m.b.sub(k, k1)))


def _exp(m: _Lanes, x):
    if m.fmt == "f64":  # the double result of an f32 argument is normal: the f32 rounding does the rest
        xc = m.at_least(m.at_most(x, 200.0), -200.0)
        k, r = _reduce_ln2(m, xc)
        y = m.scale(m.add(_expm1_reduced(m, r), m.f(1.0)), k)
    else:
        xc = m.at_least(m.at_most(x, 89.0), -104.0)
        k, r = _reduce_ln2(m, xc)
        y = _scale_to_float(m, m.add(_expm1_reduced(m, r), m.f(1.0)), k)
    return m.select(m.isnan(x), x, y)


def _exp2(m: _Lanes, x):
    lo, hi = (-200.0, 200.0) if m.fmt == "f64" else (-151.0, 129.0)
    xc = m.at_least(m.at_most(x, hi), lo)
    k, kf = m.round_int(xc)
    r = m.sub(xc, kf)  # exact, |r| <= 1/2
    p = m.add(m.fma(m.mul(r, r), m.poly(r, "exp2_tail"), m.mul(r, m.f(0.6931471805599453))), m.f(1.0))
    y = m.scale(p, k) if m.fmt == "f64" else _scale_to_float(m, p, k)
    return m.select(m.isnan(x), x, y)


# ----------------------------------------------------------------------------------------
# tanh, erf
# ----------------------------------------------------------------------------------------


def _tanh(m: _Lanes, x):
    """``E / (E + 2)`` with ``E = expm1(2|x|)``, the sign of ``x``; in the f32 kind
    ``|x| + |x|**3 tanh_small(x**2)`` below |x| = 0.55 (where ``E + 2`` would cost half an ulp)."""
    big = 20.0 if m.fmt == "f64" else 10.0  # tanh rounds to 1 well before
    ax = m.abs(x)
    z = m.mul(m.at_most(ax, big), m.f(2.0))
    k, r = _reduce_ln2(m, z)
    two_k = m.pow2(k)
    e = m.fma(two_k, _expm1_reduced(m, r), m.sub(two_k, m.f(1.0)))
    y = m.div(e, m.add(e, m.f(2.0)))
    if m.fmt == "f32":
        t = m.mul(ax, ax)
        small = m.fma(m.mul(ax, t), m.poly(t, "tanh_small"), ax)
        y = m.select(m.lt(ax, m.f(0.55)), small, y)
    return m.copysign(y, x)


def _erf(m: _Lanes, x):
    """|x| < 1: ``x (1 + erf_small(x**2))``; else ``1 - e**(-x**2) erfc_scaled((|x|-2)/(|x|+2))``
    with |x| clamped to 4 (erf(4) rounds to 1 in f32)."""
    ax = m.abs(x)
    small = m.fma(ax, m.poly(m.mul(ax, ax), "erf_small"), ax)
    xc = m.at_most(ax, 4.0)
    t = m.div(m.sub(xc, m.f(2.0)), m.add(xc, m.f(2.0)))
    k, r = _reduce_ln2(m, m.mul(xc, m.sub(m.f(0.0), xc)))  # -x**2: exact in double
    e = m.mul(m.add(_expm1_reduced(m, r), m.f(1.0)), m.pow2(k))  # e**(-x**2), 2**k >= 2**-24
    large = m.sub(m.f(1.0), m.mul(e, m.poly(t, "erfc_scaled")))
    return m.copysign(m.select(m.lt(ax, m.f(1.0)), small, large), x)


# ----------------------------------------------------------------------------------------
# log, log2
# ----------------------------------------------------------------------------------------


def _log_parts(m: _Lanes, x):
    """``(e, f, c)`` with ``x = 2**e z``, ``z`` in [sqrt(1/2), sqrt 2), ``log z = f - c`` (``f = z - 1``
    exact, ``c`` small: ``f**2/2 - s (f**2/2 + s**2 log_tail(s**2))``, ``s = f / (2 + f)``), for
    finite ``x > 0``; ``e`` as a float."""
    b = m.b
    e_adjust = None
    if m.fmt == "f32":  # denormal floats: scale by 2**23 first
        tiny = m.lt(x, m.f(2.0 ** -126))
        x = m.select(tiny, m.mul(x, m.f(2.0 ** 23)), x)
        e_adjust = b.select(tiny, m.i(-23), m.i(0))
    off = m.bits(x)
    e = b.ashr(b.sub(off, m.i(_SQRT_HALF_BITS[m.fmt])), m.i(m.mantissa_bits))
    z = m.from_bits(b.sub(off, b.shl(e, m.i(m.mantissa_bits))))
    if e_adjust is not None:
        e = b.add(e, e_adjust)
    f = m.sub(z, m.f(1.0))  # exact
    s = m.div(f, m.add(f, m.f(2.0)))  # log z = 2 atanh(s)
    s2 = m.mul(s, s)
    half_f2 = m.mul(m.mul(f, f), m.f(0.5))
    c = m.fma(b.fneg(s), m.add(m.mul(s2, m.poly(s2, "log_tail")), half_f2), half_f2)
    return b.sitofp(e, m.ty), f, c


def _log_specials(m: _Lanes, x, y):
    """``y`` where ``x`` is finite and positive; -inf at +-0, NaN below 0, inf at inf, NaN at NaN."""
    y = m.select(m.eq(x, m.f(_INF)), x, y)
    y = m.select(m.eq(x, m.f(0.0)), m.f(-_INF), y)
    return m.select(m.b.fcmp_unordered("ult", x, m.f(0.0)), m.f(float("nan")), y)


def _log(m: _Lanes, x):
    """``e LN2_HI + (f - (c - e LN2_LO))``."""
    hi, lo = _LN2[m.fmt]
    ef, f, c = _log_parts(m, x)
    y = m.fma(ef, m.f(hi), m.sub(f, m.fma(ef, m.f(-lo), c)))
    return _log_specials(m, x, y)


def _log2(m: _Lanes, x):
    """``e + (f LOG2E + (f LOG2E_LO - c log2(e)))``."""
    ef, f, c = _log_parts(m, x)
    small = m.fma(f, m.f(_LOG2E_LO[m.fmt]), m.mul(c, m.f(-_LOG2E[m.fmt])))
    y = m.add(ef, m.fma(f, m.f(_LOG2E[m.fmt]), small))
    return _log_specials(m, x, y)


_KERNELS = {"exp": _exp, "exp2": _exp2, "log": _log, "log2": _log2, "tanh": _tanh, "erf": _erf}


def emit_math(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """Function ``name`` (one of :data:`FUNCTIONS`) of ``x`` (float or double, scalar or
    vector) at ``b``'s position; see the module docstring for the accuracy of each kind.
    A double ``x`` must hold f32 values."""
    return _KERNELS[name](_Lanes(b, x.type), x)
