"""C identifiers for IR values: the names the MLIR printer gives them (``%A``, ``%i``, ``%cst_0``,
``%2#1``), made valid, unreserved and unique C identifiers (``A``, ``i``, ``cst_0``, ``v2_1``)."""

from __future__ import annotations

import re

from affine_ir.core import Value
from affine_ir.dialects.func import FuncOp
from affine_ir.names import unique_name
from affine_ir.printer import Printer

C_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t char8_t class
compl concept const const_cast consteval constexpr constinit continue co_await co_return co_yield decltype
default delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline
int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq restrict main
""".split())

# Names the printed code refers to: CUDA built-ins and the functions it calls. A local variable
# of one of these names would shadow it.
CUDA_NAMES = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize min max abs signbit isnan isinf
exp expf exp2 exp2f log logf log2 log2f tanh tanhf sqrt sqrtf rsqrt rsqrtf erf erff fabs fabsf sin sinf cos
cosf floor floorf ceil ceilf pow powf fma fmaf fmod fmodf
""".split())

_BAD = re.compile(r"[^A-Za-z0-9_]")


def c_identifier(name: str) -> str:
    """``name`` as a C identifier that clashes with no keyword, CUDA name or helper (``air_*``)."""
    s = _BAD.sub("_", name) or "v"
    if s[0].isdigit():
        s = "v" + s
    if s in C_KEYWORDS or s in CUDA_NAMES or s.startswith(("air_", "__")) or re.match(r"_[A-Z]", s):
        s = "v_" + s.lstrip("_")
    return s


def ir_names(func: FuncOp) -> dict[Value, str]:
    """Every value of ``func`` with the name the MLIR printer gives it (without ``%``)."""
    p = Printer(use_aliases=False)
    p.push_name_scope()
    for a in func.body.args:
        p.name_value(a, True)
    for op in func.walk():
        if op is func:
            continue
        if len(op.results) > 1 and len({r.name_hint for r in op.results}) == 1:
            p.name_result_group(op.results)
        for r in op.results:
            p.name_value(r)
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    p.name_value(a)
    out = {}
    for a in func.body.args:
        out[a] = p.value(a)[1:]
    for op in func.walk():
        if op is func:
            continue
        for r in op.results:
            out[r] = p.value(r)[1:]
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    out[a] = p.value(a)[1:]
    return out


class Namer:
    """Unique C identifiers within one kernel, from the IR names of a function."""

    def __init__(self, ir: dict[Value, str]):
        self.ir = ir
        self.taken: set[str] = set()
        self.names: dict[Value, str] = {}

    def fresh(self, hint: str) -> str:
        return unique_name(c_identifier(hint), self.taken)

    def name(self, v: Value) -> str:
        """The C name of ``v`` (assigned on first call)."""
        n = self.names.get(v)
        if n is None:
            n = self.names[v] = self.fresh(self.ir.get(v) or v.name_hint or "v")
        return n
