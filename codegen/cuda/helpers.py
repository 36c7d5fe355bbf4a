"""The small inline device functions the printed code calls (``air_*``), emitted on demand.

A kernel asks for a helper by key (``need("floordiv")``, ``need("divsi", "int")``); the program
prints each requested helper once, before the kernels, in a fixed order, with the helpers it
depends on. Only requested helpers are printed (an unused ``static`` function is a warning).

Integer helpers have one overload per C type (``signed char``, ``short``, ``int``, ``long long``)
and give defined results where the interpreter raises and C has undefined behaviour, as the CPU
backend does: division or remainder by zero gives 0, ``INT_MIN / -1`` gives ``INT_MIN`` (its
remainder 0), a shift by at least the bit width gives 0 (``shrsi``: the sign fill); add, sub and
mul wrap (computed on unsigned types).
"""

from __future__ import annotations

from .types import INT_TYPES

DEVICE = "static __device__ __forceinline__"

# Arithmetic type of the unsigned computation per signed C type: narrow types are computed in
# ``unsigned int`` (``unsigned short * unsigned short`` would promote to a signed ``int``).
_UARITH = {"signed char": "unsigned int", "short": "unsigned int", "int": "unsigned int",
           "long long": "unsigned long long"}
_USAME = {"signed char": "unsigned char", "short": "unsigned short", "int": "unsigned int",
          "long long": "unsigned long long"}
_WIDTH = {v: k for k, v in INT_TYPES.items() if k > 1}


def _affine() -> dict[str, str]:
    return {
        "floordiv": f"""{DEVICE} long long air_floordiv(long long x, long long c) {{  // c > 0: rounds down
  long long q = x / c;
  return x % c < 0 ? q - 1 : q;
}}""",
        "ceildiv": f"""{DEVICE} long long air_ceildiv(long long x, long long c) {{  // c > 0: rounds up
  long long q = x / c;
  return x % c > 0 ? q + 1 : q;
}}""",
        "mod": f"""{DEVICE} long long air_mod(long long x, long long c) {{  // c > 0: in [0, c)
  long long r = x % c;
  return r < 0 ? r + c : r;
}}""",
        "floordiv32": f"""{DEVICE} long long air_floordiv32(int x, int c) {{  // x fits an int; c > 0: rounds down
  int q = x / c;
  return x % c < 0 ? q - 1 : q;
}}""",
        "ceildiv32": f"""{DEVICE} long long air_ceildiv32(int x, int c) {{  // x fits an int; c > 0: rounds up
  int q = x / c;
  return x % c > 0 ? q + 1 : q;
}}""",
        "mod32": f"""{DEVICE} long long air_mod32(int x, int c) {{  // x fits an int; c > 0: in [0, c)
  int r = x % c;
  return r < 0 ? r + c : r;
}}""",
        "ufloordiv32": f"{DEVICE} long long air_ufloordiv32(unsigned x, unsigned c) {{ return x / c; }}"
                       "  // 0 <= x < 2^31",
        "uceildiv32": f"{DEVICE} long long air_uceildiv32(unsigned x, unsigned c) {{ return (x + c - 1) / c; }}"
                      "  // 0 <= x < 2^31, 0 < c < 2^31",
        "umod32": f"{DEVICE} long long air_umod32(unsigned x, unsigned c) {{ return x % c; }}  // 0 <= x < 2^31",
    }


#: cuda_fp8.h's name of each 8-bit float format.
F8_INTERPRETATIONS = {"f8E4M3FN": "__NV_E4M3", "f8E5M2": "__NV_E5M2"}


def _floats() -> dict[str, str]:
    out = {
        "round_f16": f"{DEVICE} float air_round_f16(float x) {{ return __half2float(__float2half_rn(x)); }}",
        "round_bf16": f"{DEVICE} float air_round_bf16(float x) {{ return __bfloat162float(__float2bfloat16_rn(x)); }}",
        "f64_to_f16": f"{DEVICE} float air_f64_to_f16(double x) {{ return __half2float(__double2half(x)); }}",
        "f64_to_bf16": f"{DEVICE} float air_f64_to_bf16(double x) {{ return __bfloat162float(__double2bfloat16(x)); }}",
    }
    for fmt, interp in F8_INTERPRETATIONS.items():  # 8-bit floats: cuda_fp8.h's conversions (no saturation:
        # what overflows is NaN in f8E4M3FN, infinity in f8E5M2, as the interpreter and MLIR round)
        to_half = "__half2float(__half(__nv_cvt_fp8_to_halfraw({x}, " + interp + ")))"
        out[f"from_{fmt}"] = (f"{DEVICE} float air_from_{fmt}(__nv_fp8_storage_t x) {{ "
                              f"return {to_half.format(x='x')}; }}")
        out[f"to_{fmt}"] = (f"{DEVICE} __nv_fp8_storage_t air_to_{fmt}(float x) {{ "
                            f"return __nv_cvt_float_to_fp8(x, __NV_NOSAT, {interp}); }}")
        out[f"round_{fmt}"] = (f"{DEVICE} float air_round_{fmt}(float x) {{ return "
                               f"{to_half.format(x=f'__nv_cvt_float_to_fp8(x, __NV_NOSAT, {interp})')}; }}")
        out[f"f64_to_{fmt}"] = (f"{DEVICE} float air_f64_to_{fmt}(double x) {{ return "
                                f"{to_half.format(x=f'__nv_cvt_double_to_fp8(x, __NV_NOSAT, {interp})')}; }}")
    for t in ("float", "double"):
        for name, cmp in (("maximumf", ">"), ("minimumf", "<")):
            keep_first_zero = "!signbit(a)" if name == "maximumf" else "signbit(a)"
            out[f"{name}:{t}"] = f"""{DEVICE} {t} air_{name}({t} a, {t} b) {{  // NaN-propagating, -0 < +0
  if (a != a) return a;
  if (b != b) return b;
  if (a {cmp} b) return a;
  if (b {cmp} a) return b;
  return a != 0 || {keep_first_zero} ? a : b;
}}"""
    return out


def _integers() -> dict[str, str]:
    out: dict[str, str] = {}
    for t, ua in _UARITH.items():
        us = _USAME[t]
        w = _WIDTH[t]
        for name, sym in (("addi", "+"), ("subi", "-"), ("muli", "*")):
            out[f"{name}:{t}"] = f"{DEVICE} {t} air_{name}({t} a, {t} b) {{ return ({t})(({ua})a {sym} ({ua})b); }}"
        neg = f"({t})(0u - ({ua})a)"
        out[f"divsi:{t}"] = f"""{DEVICE} {t} air_divsi({t} a, {t} b) {{
  if (b == 0) return 0;
  return b == -1 ? {neg} : ({t})(a / b);
}}"""
        out[f"remsi:{t}"] = f"{DEVICE} {t} air_remsi({t} a, {t} b) {{ return b == 0 || b == -1 ? 0 : ({t})(a % b); }}"
        for name, sym in (("divui", "/"), ("remui", "%")):
            out[f"{name}:{t}"] = (f"{DEVICE} {t} air_{name}({t} a, {t} b) {{ "
                                  f"return b == 0 ? 0 : ({t})(({us})a {sym} ({us})b); }}")
        for name, fix in (("floordivsi", "(r < 0) != (b < 0) ? q - 1 : q"),
                          ("ceildivsi", "(r < 0) == (b < 0) ? q + 1 : q")):
            out[f"{name}:{t}"] = f"""{DEVICE} {t} air_{name}({t} a, {t} b) {{
  if (b == 0) return 0;
  if (b == -1) return {neg};
  {t} q = ({t})(a / b), r = ({t})(a % b);
  return r == 0 ? q : ({t})({fix});
}}"""
        big = f"({us})b >= {w}"  # an amount of at least the width (negative ones included)
        out[f"shli:{t}"] = f"{DEVICE} {t} air_shli({t} a, {t} b) {{ return {big} ? 0 : ({t})(({ua})a << b); }}"
        out[f"shrui:{t}"] = f"{DEVICE} {t} air_shrui({t} a, {t} b) {{ return {big} ? 0 : ({t})(({us})a >> b); }}"
        out[f"shrsi:{t}"] = f"{DEVICE} {t} air_shrsi({t} a, {t} b) {{ return ({t})(a >> ({big} ? {w - 1} : b)); }}"
    return out


HELPERS: dict[str, str] = {**_affine(), **_floats(), **_integers()}
ORDER = {k: n for n, k in enumerate(HELPERS)}
INCLUDES = {"round_f16": "cuda_fp16.h", "f64_to_f16": "cuda_fp16.h", "round_bf16": "cuda_bf16.h",
            "f64_to_bf16": "cuda_bf16.h",
            **{f"{kind}_{fmt}": "cuda_fp8.h" for fmt in F8_INTERPRETATIONS
               for kind in ("from", "to", "round", "f64_to")}}


def helper_key(name: str, ctype: str | None = None) -> str:
    """The key of helper ``name`` (for the C type ``ctype`` where it has overloads)."""
    key = name if ctype is None else f"{name}:{ctype}"
    if key not in HELPERS and not key.startswith("struct "):
        raise KeyError(key)
    return key


def helper_source(keys: set[str]) -> str:
    """The source of the helpers ``keys``, in a fixed order; keys that are struct declarations
    (the vector types of :mod:`.vector`) or whole device functions (the PTX wrappers of :mod:`.mma`)
    are their own source and come first, structs before functions."""
    structs = sorted(k for k in keys if k.startswith("struct "))
    functions = sorted(k for k in keys if k.startswith(DEVICE))
    rest = sorted(set(keys) - set(structs) - set(functions), key=ORDER.__getitem__)
    return "\n".join([*structs, *functions, *(HELPERS[k] for k in rest)])
