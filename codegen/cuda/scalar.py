"""``arith`` and ``math`` ops as C expressions, with the interpreter's semantics.

- Integers wrap (add/sub/mul through unsigned types, ``index`` too: a signed overflow in C is
  undefined, and NVRTC does exploit it); ``i1`` is a ``bool`` whose true is the interpreter's
  ``-1`` where signedness matters (``maxsi``, ``slt``, ``extsi``, ``sitofp``). Where the
  interpreter raises, the code gives the CPU backend's defined values (see :mod:`.helpers`);
  ``fptosi``/``fptoui`` saturate (NaN gives 0), as ``cvt.rzi`` does.
- f32/f64 ops are IEEE in their own precision: ``a + b``, ``a / b``, and ``__fmul_rn(a, b)``
  (``__dmul_rn``) for products, which NVRTC never contracts into an FMA with a following add --
  unless the kernel is printed with ``contract=True`` (or ``fast_math=True``). This relies on
  NVRTC's defaults ``-prec-div=true -prec-sqrt=true -ftz=false`` (no ``-use_fast_math``).
- f16/bf16 values are computed in f32 and rounded back after every op (``air_round_f16``), which
  equals the interpreter's single rounding for +, -, *, /, sqrt (f32 has at least 2p+2 bits).
- Math functions of f32/f16/bf16 are computed in double (``exp((double)x)``) and rounded once,
  as the interpreter does (CUDA's double functions are within 1-2 ulp of double, so the rounded
  result is the interpreter's except in rare near-halfway cases); ``fast_math=True`` calls the
  f32 functions (``expf``, ``erff``, ``tanhf``, ``rsqrtf``...: a few ulp). ``sqrt``, ``absf``,
  ``floor``, ``ceil`` and ``fma`` (f32/f64) are exact either way.
- ``maximumf``/``minimumf`` propagate NaN and order -0 < +0 (``air_maximumf``; ``fmaxf`` does not).
"""

from __future__ import annotations

import re

from affine_ir.core import Operation
from affine_ir.dialects.arith import ExtfOp
from affine_ir.types import FloatType, IndexType

from .types import EIGHT_BIT, float_literal, float_name, int_width, reg_type, unsigned_type

_PLAIN = {"addi": "+", "subi": "-", "muli": "*", "andi": "&", "ori": "|", "xori": "^"}
_BOOL = {"addi": "{a} != {b}", "subi": "{a} != {b}", "xori": "{a} != {b}", "muli": "{a} && {b}",
         "andi": "{a} && {b}", "ori": "{a} || {b}", "maxsi": "{a} && {b}", "minsi": "{a} || {b}",
         "maxui": "{a} || {b}", "minui": "{a} && {b}", "divsi": "{a} && {b}", "divui": "{a} && {b}",
         "floordivsi": "{a} && {b}", "ceildivsi": "{a} && {b}", "remsi": "false", "remui": "false",
         "shli": "{a} && !{b}", "shrui": "{a} && !{b}", "shrsi": "{a}"}
_HELPER_INT = ("divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "shli", "shrsi", "shrui")
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "ult": "<", "ule": "<=",
         "ugt": ">", "uge": ">="}
_CMPF = {"false": "false", "true": "true", "oeq": "{a} == {b}", "ogt": "{a} > {b}", "oge": "{a} >= {b}",
         "olt": "{a} < {b}", "ole": "{a} <= {b}", "one": "({a} < {b} || {a} > {b})",
         "ord": "!isnan({a}) && !isnan({b})", "ueq": "!({a} < {b} || {a} > {b})", "ugt": "!({a} <= {b})",
         "uge": "!({a} < {b})", "ult": "!({a} >= {b})", "ule": "!({a} > {b})", "une": "{a} != {b}",
         "uno": "isnan({a}) || isnan({b})"}
_MATH = {"exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "tanh": "tanh", "erf": "erf", "sin": "sin",
         "cos": "cos", "powf": "pow"}
_EXACT = {"absf": "fabs", "floor": "floor", "ceil": "ceil", "sqrt": "sqrt"}
_INT_TO_16 = {("f16", 32): "__int2half_rn", ("f16", 64): "__ll2half_rn", ("bf16", 32): "__int2bfloat16_rn",
              ("bf16", 64): "__ll2bfloat16_rn"}
_UINT_TO_16 = {("f16", 32): "__uint2half_rn", ("f16", 64): "__ull2half_rn", ("bf16", 32): "__uint2bfloat16_rn",
               ("bf16", 64): "__ull2bfloat16_rn"}
_BITS = {**{fmt: (f"(signed char)air_to_{fmt}({{x}})", f"air_from_{fmt}((__nv_fp8_storage_t){{x}})")
            for fmt in EIGHT_BIT},
         "f16": ("__half_as_short(__float2half_rn({x}))", "__half2float(__short_as_half({x}))"),
         "bf16": ("__bfloat16_as_short(__float2bfloat16_rn({x}))", "__bfloat162float(__short_as_bfloat16({x}))"),
         "f32": ("__float_as_int({x})", "__int_as_float({x})"),
         "f64": ("__double_as_longlong({x})", "__longlong_as_double({x})")}


def is_primary(text: str) -> bool:
    """True for a name or a call ``f(...)`` (binds tighter than a cast)."""
    m = re.match(r"[A-Za-z_]\w*", text)
    if m is None:
        return False
    rest = text[m.end():]
    if not rest:
        return True
    if not rest.startswith("("):
        return False
    depth = 0
    for k, ch in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return k == len(rest) - 1
    return False


class ScalarOps:
    """The ``arith``/``math`` printer methods of :class:`~.kernel.KernelPrinter` (a mixin)."""

    def scalar_method(self, op: Operation):
        dialect, _, name = op.name.partition(".")
        if dialect == "math" and (name in _MATH or name in _EXACT or name in ("rsqrt", "fma")):
            return self.print_math
        if dialect != "arith":
            return None
        if name in ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf", "negf"):
            return self.print_float_op
        if name in _BOOL:
            return self.print_int_op
        return {"constant": self.print_constant, "cmpi": self.print_cmpi, "cmpf": self.print_cmpf,
                "select": self.print_select, "index_cast": self.print_int_cast, "extsi": self.print_int_cast,
                "extui": self.print_int_cast, "trunci": self.print_int_cast, "sitofp": self.print_int_to_float,
                "uitofp": self.print_int_to_float, "fptosi": self.print_float_to_int,
                "fptoui": self.print_float_to_int, "extf": self.print_float_cast, "truncf": self.print_float_cast,
                "bitcast": self.print_bitcast}.get(name)

    # -- helpers -------------------------------------------------------------------------------
    def round16(self, text: str, fmt: str | None) -> str:
        """``text`` (an f32 value) rounded to the 16-bit format ``fmt``; unchanged otherwise."""
        if fmt in ("f16", "bf16", *EIGHT_BIT):
            self.need(f"round_{fmt}")
            self.use_type(fmt)
            return f"air_round_{fmt}({text})"
        return text

    def from_double(self, text: str, fmt: str) -> str:
        """The double ``text`` rounded once to float format ``fmt`` (register representation)."""
        if fmt == "f64":
            return text
        if fmt == "f32":
            return f"(float){text}" if is_primary(text) else f"(float)({text})"
        self.need(f"f64_to_{fmt}")
        self.use_type(fmt)
        return f"air_f64_to_{fmt}({text})"

    def fmt(self, template: str, **operands) -> str:
        """``template`` with ``{a}``, ``{b}``... replaced by the C expressions of the IR values
        ``operands``; only the values the template names are read (a value read is kept alive)."""
        used = set(re.findall(r"\{(\w+)\}", template))
        return template.format(**{k: self.val(v) if k in used else "" for k, v in operands.items()})

    def _check_scalar(self, op: Operation) -> None:
        for v in (*op.operands, *op.results):
            reg_type(v.type)  # raises UnsupportedType for vectors, i7, ...

    # -- constants, floats -------------------------------------------------------------------
    def print_constant(self, op: Operation) -> None:
        self._check_scalar(op)
        r = op.results[0]
        if isinstance(r.type, FloatType):
            self.literals[r] = float_literal(float(op.value), r.type.name)
        else:
            self.set_int(r, int(op.value))

    def print_float_op(self, op: Operation) -> None:
        self._check_scalar(op)
        name = op.name.split(".")[1]
        fmt = float_name(op.results[0].type)
        a = self.val(op.operands[0])
        if name == "negf":
            self.define(op.results[0], f"-{a}")
            return
        b = self.val(op.operands[1])
        if name in ("maximumf", "minimumf"):
            ct = "double" if fmt == "f64" else "float"
            self.need(name, ct)
            expr = f"air_{name}({a}, {b})"
        elif name == "remf":
            expr = f"{'fmod' if fmt == 'f64' else 'fmodf'}({a}, {b})"  # exact: no rounding
        elif name == "mulf" and fmt in ("f32", "f64") and not (self.options.contract or self.options.fast_math):
            expr = f"{'__dmul_rn' if fmt == 'f64' else '__fmul_rn'}({a}, {b})"
        elif name == "divf" and self.literals.get(op.operands[1]) in ("0.0f", "-0.0f", "0.0", "-0.0"):
            # by a zero literal: through the IEEE division function (NVRTC warns about "x / 0.0f")
            expr = self.round16(f"{'__ddiv_rn' if fmt == 'f64' else '__fdiv_rn'}({a}, {b})", fmt)
        else:
            sym = {"addf": "+", "subf": "-", "mulf": "*", "divf": "/"}[name]
            expr = self.round16(f"{a} {sym} {b}", fmt)
        self.define(op.results[0], expr)

    # -- integers ---------------------------------------------------------------------------------
    def print_int_op(self, op: Operation) -> None:
        self._check_scalar(op)
        name = op.name.split(".")[1]
        t = op.results[0].type
        x, y = op.operands
        if int_width(t) == 1:
            self.define(op.results[0], self.fmt(_BOOL[name], a=x, b=y))
            return
        ct = reg_type(t)
        if isinstance(t, IndexType) and name in _PLAIN and x in self.ints and y in self.ints:
            # folded: NVRTC warns about a constant expression that overflows
            a, b = self.ints[x], self.ints[y]
            r = {"addi": a + b, "subi": a - b, "muli": a * b, "andi": a & b, "ori": a | b, "xori": a ^ b}[name]
            self.set_int(op.results[0], ((r + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63))
            return
        if name in ("andi", "ori", "xori"):
            expr = f"{self.val(x)} {_PLAIN[name]} {self.val(y)}"
        elif name in ("addi", "subi", "muli") or name in _HELPER_INT:
            self.need(name, ct)
            expr = f"air_{name}({self.arg(x)}, {self.arg(y)})"
        elif name.endswith("ui") and 0 in (self.ints.get(x), self.ints.get(y)):
            # against 0 (the unsigned minimum; NVRTC warns about the pointless comparison)
            other = y if self.ints.get(x) == 0 else x
            expr = self.val(other) if name == "maxui" else self.val(x if other is y else y)
        else:  # max/min
            a, b = self.val(x), self.val(y)
            cmp = ">=" if name.startswith("max") else "<="
            if name.endswith("ui"):
                u = unsigned_type(t)
                expr = f"({u}){a} {cmp} ({u}){b} ? {a} : {b}"
            else:
                expr = f"{a} {cmp} {b} ? {a} : {b}"
        self.define(op.results[0], expr)

    def print_cmpi(self, op: Operation) -> None:
        self._check_scalar(op)
        p = op.predicate
        x, y = op.operands
        sym = _CMPI[p]
        if int_width(x.type) == 1:
            # bool as an int is the unsigned reading; the signed one (true = -1) reverses the order
            template = f"{{b}} {sym} {{a}}" if p[0] == "s" else f"{{a}} {sym} {{b}}"
        elif p[0] == "u" and 0 in (self.ints.get(x), self.ints.get(y)):
            # against 0, the unsigned minimum (NVRTC warns about a pointless comparison)
            if self.ints.get(y) == 0:
                template = {"ult": "false", "uge": "true", "ule": "{a} == 0", "ugt": "{a} != 0"}[p]
            else:
                template = {"ugt": "false", "ule": "true", "uge": "{b} == 0", "ult": "{b} != 0"}[p]
        elif p[0] == "u":
            u = unsigned_type(x.type)
            template = f"({u}){{a}} {sym} ({u}){{b}}"
        else:
            template = f"{{a}} {sym} {{b}}"
        self.define(op.results[0], self.fmt(template, a=x, b=y))

    def print_cmpf(self, op: Operation) -> None:
        self._check_scalar(op)
        x, y = op.operands
        self.define(op.results[0], self.fmt(_CMPF[op.predicate], a=x, b=y))

    def print_select(self, op: Operation) -> None:
        self._check_scalar(op)
        c, a, b = (self.val(v) for v in op.operands)
        self.define(op.results[0], f"{c} ? {a} : {b}")

    # -- casts -----------------------------------------------------------------------------------
    def print_int_cast(self, op: Operation) -> None:
        """``index_cast`` (sign-extends), ``extsi``, ``extui``, ``trunci``."""
        self._check_scalar(op)
        x, r = op.operands[0], op.results[0]
        ws, wd = int_width(x.type), int_width(r.type)
        if wd == ws:
            self.alias(r, x)
            return
        a = self.val(x)
        ct = reg_type(r.type)
        if wd == 1:
            expr = f"({a} & 1) != 0"
        elif ws == 1:
            expr = f"({ct}){a}" if op.unsigned else f"({ct})({a} ? -1 : 0)"
        elif wd < ws:
            expr = f"({ct}){a}"
        elif op.unsigned:
            expr = f"({ct})({unsigned_type(x.type)}){a}"
        else:
            expr = f"({ct}){a}"
        self.define(r, expr)

    def print_int_to_float(self, op: Operation) -> None:
        """``sitofp``/``uitofp``: one rounding to the result type."""
        self._check_scalar(op)
        x, r = op.operands[0], op.results[0]
        w, fmt = int_width(x.type), float_name(r.type)
        unsigned = op.unsigned
        a = self.val(x)
        ft = reg_type(r.type)
        if w == 1:
            one = float_literal(1.0 if unsigned else -1.0, fmt)
            self.define(r, f"{a} ? {one} : {float_literal(0.0, fmt)}")
            return
        src = f"({unsigned_type(x.type)}){a}" if unsigned else a
        if fmt in EIGHT_BIT:  # through double: exact below 2**53, and what lies beyond overflows both formats
            self.define(r, self.from_double(f"(double){src}", fmt))
            return
        if fmt in ("f32", "f64") or w <= 16:  # exact in float below 2**24: one rounding after
            expr = self.round16(f"({ft}){src}", fmt)
        else:
            fn = (_UINT_TO_16 if unsigned else _INT_TO_16)[(fmt, w)]
            self.use_type(fmt)
            back = "__half2float" if fmt == "f16" else "__bfloat162float"
            expr = f"{back}({fn}({src}))"
        self.define(r, expr)

    def print_float_to_int(self, op: Operation) -> None:
        """``fptosi``/``fptoui``: toward zero, saturating (NaN gives 0)."""
        self._check_scalar(op)
        x, r = op.operands[0], op.results[0]
        w, fmt = int_width(r.type), float_name(x.type)
        unsigned = op.unsigned
        a = self.val(x)
        ct = reg_type(r.type)
        src = "double" if fmt == "f64" else "float"
        if w == 1:
            expr = f"{a} >= 1.0" if unsigned else f"{a} <= -1.0"
        else:
            suffix = ("ull" if w == 64 else "uint") if unsigned else ("ll" if w == 64 else "int")
            conv = f"__{src}2{suffix}_rz({a})"
            if w < 32:
                lo, hi = (0, (1 << w) - 1) if unsigned else (-(1 << (w - 1)), (1 << (w - 1)) - 1)
                conv = f"min(max({conv}, {lo}), {hi})" if not unsigned else f"min({conv}, {hi}u)"
            expr = conv if (w, unsigned) in ((32, False), (64, False)) else f"({ct}){conv}"
        self.define(r, expr)

    def print_float_cast(self, op: Operation) -> None:
        """``extf`` (exact) and ``truncf`` (one rounding)."""
        self._check_scalar(op)
        x, r = op.operands[0], op.results[0]
        fs, fd = float_name(x.type), float_name(r.type)
        widens = isinstance(op, ExtfOp)
        if widens and fd != "f64":
            self.alias(r, x)  # a 16-bit value is already held in a float
            return
        a = self.val(x)
        if widens:
            expr = f"(double){a}"
        elif fs == "f64":
            expr = self.from_double(a, fd)
        else:
            expr = self.round16(a, fd)
        self.define(r, expr)

    def print_bitcast(self, op: Operation) -> None:
        self._check_scalar(op)
        x, r = op.operands[0], op.results[0]
        a = self.val(x)
        fs, fd = float_name(x.type), float_name(r.type)
        for fmt in (fs, fd):
            self.use_type(fmt)
        if fs in EIGHT_BIT:
            self.need(f"to_{fs}")
        if fd in EIGHT_BIT:
            self.need(f"from_{fd}")
        bits = _BITS[fs][0].format(x=a) if fs else a
        if fd:
            expr = _BITS[fd][1].format(x=bits)
        else:
            expr = f"({reg_type(r.type)}){bits}" if fs else bits
        self.define(r, expr)

    # -- math ------------------------------------------------------------------------------------
    def print_math(self, op: Operation) -> None:
        self._check_scalar(op)
        name = op.name.split(".")[1]
        fmt = float_name(op.results[0].type)
        args = [self.val(v) for v in op.operands]
        fast = self.options.fast_math
        if name in _EXACT or (name == "fma" and fmt in ("f32", "f64")) or (name == "rsqrt" and fmt == "f64"
                                                                           and not fast):
            fn = {"fma": "fma", "rsqrt": "rsqrt"}.get(name, _EXACT.get(name))
            if name == "rsqrt":
                expr = f"1.0 / sqrt({args[0]})"  # the interpreter's: two correctly rounded steps
            else:
                expr = f"{fn}{'' if fmt == 'f64' else 'f'}({', '.join(args)})"
                if name == "sqrt":
                    expr = self.round16(expr, fmt)
            self.define(op.results[0], expr)
            return
        fn = _MATH.get(name, name)
        if fmt == "f64":
            expr = f"{fn}({', '.join(args)})"
        elif fast:
            expr = self.round16(f"{fn}f({', '.join(args)})", fmt)
        else:
            wide = ", ".join(f"(double){a}" for a in args)
            call = f"1.0 / sqrt({wide})" if name == "rsqrt" else f"{fn}({wide})"
            expr = self.from_double(call, fmt)
        self.define(op.results[0], expr)

