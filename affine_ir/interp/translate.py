"""Translation of ``func.func`` ops into Python source, one Python function per function.

Loops become Python ``for`` loops over ``range``, SSA values become locals, affine
index arithmetic is inlined as Python integer expressions (``//`` and ``%`` have floor
semantics, ceildiv is ``-(-x // c)``), and memref elements are read and written through
flat memoryviews with a linearized index. An index that a range analysis of loop
bounds proves in bounds is not checked at run time; every other one is.

Each emitted line records the op it belongs to (:class:`OpInfo`), so the driver can
name the op and its location when generated code fails.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..affine_expr import AffineExpr, constant, dim
from ..affine_map import AffineMap
from ..core import Block, Operation, Value
from ..errors import InterpretError, Location
from ..names import unique_name
from ..printer import Printer
from ..types import MemRefType, VectorType, element_type_of, index
from . import semantics as S
from .ops import TEMPLATES, int_literal, wrap_expr
from .semantics import ScalarInfo, scalar_info


@dataclass(frozen=True)
class OpInfo:
    """What an error message needs to know about the op a generated line belongs to."""

    name: str
    location: Location | None
    desc: str  # "'affine.load' of %A[%i + 1, %j]" or "'arith.divsi'"
    memref_type: str = ""


@dataclass
class MemInfo:
    """The locals of a memref value: the Buffer, its flat data, dims and strides (int or local name)."""

    name: str
    data: str
    dims: list
    strides: list
    info: ScalarInfo


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def py_affine(e: AffineExpr, names: list[str]) -> str:
    """Python integer expression for ``e`` with ``d<i>`` named ``names[i]`` (floor semantics)."""
    terms: list[tuple[int, str]] = []
    for i, n in enumerate(names):
        c = e.coefficient_of_dim(i)
        if c:
            terms.append((c, n))
    for t in e.div_terms():
        inner = py_affine(t.expr, names)
        if t.kind == "floordiv":
            atom = f"(({inner}) // {t.divisor})"
        elif t.kind == "ceildiv":
            atom = f"(-(-({inner}) // {t.divisor}))"
        else:
            atom = f"(({inner}) % {t.divisor})"
        terms.append((t.coeff, atom))
    out = []
    for c, atom in terms:
        mag = abs(c)
        text = atom if mag == 1 else f"{atom} * {mag}"
        if not out:
            out.append(text if c > 0 else f"-{text}")
        else:
            out.append((" + " if c > 0 else " - ") + text)
    k = e.constant_term
    if not out:
        return str(k) if k >= 0 else f"({k})"
    if k:
        out.append(f" + {k}" if k > 0 else f" - {-k}")
    return "".join(out)


def index_expr(e: AffineExpr, names: list[str], ranges) -> tuple[str, tuple]:
    """The Python expression of the ``index`` value ``e`` and its range: wrapped to 64 bits, as
    the backends compute it, unless the range of ``e`` proves that it fits."""
    lo, hi = e.bounds(ranges)
    if lo is not None and hi is not None and -(1 << 63) <= lo and hi < (1 << 63):
        return py_affine(e, names), (lo, hi)
    return wrap_expr(py_affine(e, names), scalar_info(index)), (None, None)


def _known(x):
    return x is not None


def range_max(rs):
    """Range of max(...) of values with ranges ``rs``."""
    los = [r[0] for r in rs if r[0] is not None]
    his = [r[1] for r in rs]
    return (max(los) if los else None, max(his) if all(map(_known, his)) else None)


def range_min(rs):
    los = [r[0] for r in rs]
    his = [r[1] for r in rs if r[1] is not None]
    return (min(los) if all(map(_known, los)) else None, min(his) if his else None)


def float_literal(x: float) -> str:
    if x != x:
        return "_NAN"
    if x in (math.inf, -math.inf):
        return "_INF" if x > 0 else "(-_INF)"
    text = repr(float(x))
    return f"({text})" if text.startswith("-") else text


class FunctionTranslator:
    """Emits the Python function for one ``func.func``."""

    def __init__(self, module, func, pyname: str):
        self.module = module
        self.func = func
        self.pyname = pyname
        self.lines: list[str] = []
        self.infos: list[OpInfo | None] = []
        self.indent = 1
        self.cur: OpInfo | None = None
        self.exprs: dict[Value, str] = {}
        self.consts: dict[Value, int] = {}
        self.ranges: dict[Value, tuple] = {}
        self.mems: dict[Value, MemInfo] = {}
        self.taken: set[str] = set()
        self.uses_scratch = False
        self.gpu = None  # the LaunchContext (see .gpu) while translating a gpu.launch body
        self.printer = Printer(use_aliases=False)
        self._name_values()

    # -- names -------------------------------------------------------------------
    def _name_values(self) -> None:
        p = self.printer
        p.push_name_scope()
        if self.func.regions:
            for a in self.func.body.args:
                p.name_value(a, True)
            for op in self.func.walk():
                if op is self.func:
                    continue
                if len(op.results) > 1 and len({r.name_hint for r in op.results}) == 1:
                    p.name_result_group(op.results)  # %r#0, %r#1 as the printer does
                for r in op.results:
                    p.name_value(r)
                for region in op.regions:
                    for b in region.blocks:
                        for a in b.args:
                            p.name_value(a)

    def ir_name(self, v: Value) -> str:
        return self.printer.value(v)

    def fresh(self, hint: str | None, prefix: str = "v_") -> str:
        return unique_name(prefix + re.sub(r"[^A-Za-z0-9_]", "_", hint or ""), self.taken)

    def define(self, v: Value) -> str:
        """A new local for ``v`` (its printed name as hint)."""
        name = self.fresh(self.ir_name(v).lstrip("%").replace("#", "_"))
        self.exprs[v] = name
        return name

    def val(self, v: Value) -> str:
        try:
            return self.exprs[v]
        except KeyError:
            raise S.Unsupported(f"value {self.ir_name(v)} is used outside of its scope") from None

    def glob(self, obj, hint: str) -> str:
        return self.module.constant(obj, hint)

    # -- emission -----------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)
        self.infos.append(self.cur)

    def op_info(self, op: Operation) -> OpInfo:
        mem = getattr(op, "memref", None)
        if mem is None and op.operands and isinstance(op.operands[0].type, MemRefType):
            mem = op.operands[0]  # memref.dim, memref.dealloc
        desc = f"'{op.name}'"
        mtype = ""
        if isinstance(mem, Value) and isinstance(mem.type, MemRefType):
            mtype = str(mem.type)
            desc += f" of {self.ir_name(mem)}"
            if isinstance(getattr(op, "map", None), AffineMap):
                desc += f"[{self.printer.map_of_ssa_ids(op.map, op.indices)}]"
            elif op.name in ("memref.load", "memref.store"):
                desc += f"[{self.printer.values(op.indices)}]"
        return OpInfo(op.name, op.location, desc, mtype)

    def assign_name(self, name: str, expr: str, rnd: ScalarInfo | None = None) -> None:
        """``name = expr``, rounded to the float type ``rnd`` (None: no rounding)."""
        if rnd is None or rnd.name == "f64":
            self.emit(f"{name} = {expr}")
        elif rnd.name == "f32":
            self.uses_scratch = True
            self.emit(f"_r[0] = {expr}")
            self.emit(f"{name} = _r[0]")
        else:
            self.emit(f"{name} = _S.round_{rnd.name}({expr})")

    def assign(self, v: Value, expr: str, rnd: ScalarInfo | None = None) -> str:
        name = self.define(v)
        self.assign_name(name, expr, rnd)
        return name

    # -- the function --------------------------------------------------------------
    def translate(self) -> None:
        f = self.func
        if not f.regions:
            self.cur = OpInfo(f.name, f.location, f"'func.call' of @{f.sym_name}")
            self.emit(f"raise _Unsupported('cannot call @{f.sym_name}: it is a declaration without a body')")
            self.header = f"def {self.pyname}(*args):"
            return
        params = [self.define(a) for a in f.body.args]
        self.header = f"def {self.pyname}({', '.join(params)}):"
        self.cur = OpInfo(f.name, f.location, f"'func.func' @{f.sym_name}")
        for a in f.body.args:
            self.bind_value(a)
        self.block(f.body)

    def source(self) -> tuple[list[str], list[OpInfo | None]]:
        head = [self.header]
        infos: list[OpInfo | None] = [None]
        if self.uses_scratch:
            head.append("    _r = _scratch()")
            infos.append(None)
        return head + self.lines, infos + self.infos

    # -- blocks and ops ---------------------------------------------------------------
    def block(self, block: Block, on_yield=None) -> None:
        start = len(self.lines)
        for op in block.ops:
            self.cur = self.op_info(op)
            if op.name == "affine.yield":
                if on_yield is not None:
                    on_yield(op)
                continue
            handler = self.module.handlers.get(op.name)
            if handler is not None:
                handler(self, op)
            elif op.name in TEMPLATES:
                self.elementwise(op)
            else:
                self.unsupported(op)
        if len(self.lines) == start:
            self.emit("pass")

    def unsupported(self, op: Operation, what: str | None = None) -> None:
        """Emit a raise of ``cannot interpret '<op>' (<what>)`` where ``op`` would run."""
        if what is None:
            what = "this GPU op is not emulated" if op.name.startswith("gpu.") else "no reference semantics"
        msg = f"cannot interpret '{op.name}' ({what})"
        self.emit(f"raise _Unsupported({msg!r})")
        for r in op.results:  # never reached; defined so that later code still translates
            self.exprs[r] = "None"
            self.bind_value(r)

    def bind_value(self, v: Value) -> None:
        """After ``v`` got a local: unpack the locals of a memref."""
        t = v.type
        if not isinstance(t, MemRefType):
            return
        name = self.exprs[v]
        info = scalar_info(t.element_type)
        if not info.mv_format:
            raise S.Unsupported(f"memrefs of {t.element_type} are not supported")
        dims = [d if d is not None else self.fresh(f"{k}_{name}", "n") for k, d in enumerate(t.shape)]
        if any(isinstance(d, str) for d in dims):
            targets = ", ".join(d if isinstance(d, str) else "_" for d in dims)
            self.emit(f"{targets}, = {name}.shape")
        data = self.fresh(name, "d_")
        self.emit(f"{data} = {name}.data")
        strides: list = [1] * len(dims)
        acc: int | str = 1
        for k in range(len(dims) - 1, -1, -1):
            strides[k] = acc
            d = dims[k]
            if isinstance(acc, int) and isinstance(d, int):
                acc = acc * d
            elif k > 0:
                s = self.fresh(f"{k - 1}_{name}", "s")
                self.emit(f"{s} = {d if acc == 1 else f'{acc} * {d}'}")
                acc = s
        self.mems[v] = MemInfo(name, data, dims, strides, info)

    def elementwise(self, op: Operation) -> None:
        res = op.results[0]
        src_t = op.operands[0].type if op.name != "arith.select" else op.operands[1].type
        src = scalar_info(element_type_of(src_t))
        dst = scalar_info(element_type_of(res.type))
        template = TEMPLATES[op.name]
        args = [self.val(v) for v in op.operands]
        if not isinstance(res.type, VectorType):
            expr, rounds = template(args, op, src, dst)
            self.assign(res, expr, dst if rounds and dst.is_float else None)
            if not dst.is_float and expr.lstrip("(-").rstrip(")").isdigit():
                self.consts[res] = int(expr.replace("(", "").replace(")", ""))
            return
        if op.name == "arith.select":
            self.assign(res, f"_M.vselect({args[0]}, {args[1]}, {args[2]})")
            return
        self.assign(res, self.vector_map(template, op, args, src, dst))

    def vector_map(self, template, op: Operation, args: list[str], src: ScalarInfo, dst: ScalarInfo) -> str:
        """The expression applying the scalar ``template`` (see ``ops.TEMPLATES``) elementwise to
        the vectors ``args``, each result rounded to ``dst``."""
        params = [f"x{i}" for i in range(len(args))]
        expr, rounds = template(params, op, src, dst)
        if rounds and dst.is_float and dst.name != "f64":
            expr = f"_S.round_{dst.name}({expr})"
        dt = self.glob(dst.np_dtype, f"DT_{dst.name}")
        return f"_M.vmap(lambda {', '.join(params)}: {expr}, {dt}, {', '.join(args)})"

    # -- affine maps ----------------------------------------------------------------
    def lower_map(self, m: AffineMap, operands) -> tuple[list[AffineExpr], list[str], list]:
        """``m``'s results over the non-constant operands as dims (constants folded in),
        the Python names of those operands and their known ranges."""
        repl: list[AffineExpr] = []
        names: list[str] = []
        ranges: list = []
        for v in operands:
            c = self.consts.get(v)
            if c is not None:
                repl.append(constant(c))
            else:
                repl.append(dim(len(names)))
                names.append(self.val(v))
                ranges.append(self.ranges.get(v))
        nd = m.num_dims
        m2 = m.replace(repl[:nd], repl[nd:], num_dims=len(names), num_symbols=0)
        return list(m2.results), names, ranges

    def set_index(self, v: Value, e: AffineExpr, names, ranges) -> None:
        """Define the index value ``v`` as ``e``."""
        if e.is_constant:
            c = S.wrap(e.constant_term, scalar_info(v.type).width)
            self.exprs[v], self.consts[v], self.ranges[v] = int_literal(c), c, (c, c)
            return
        expr, self.ranges[v] = index_expr(e, names, ranges)
        self.assign(v, expr)

    # -- memory access ----------------------------------------------------------------
    def element_index(self, mem: MemInfo, exprs: list[AffineExpr], names, ranges) -> str:
        """Emit the bounds checks an access needs; return its linearized index."""
        checked = []
        for k, e in enumerate(exprs):
            d = mem.dims[k]
            if isinstance(d, int):
                lo, hi = e.bounds(ranges)
                if lo is not None and hi is not None and lo >= 0 and hi < d:
                    continue
            checked.append(k)
        if not checked:
            static = sum((e * s for e, s in zip(exprs, mem.strides) if isinstance(s, int)), constant(0))
            parts = [f"({py_affine(e, names)}) * {s}" for e, s in zip(exprs, mem.strides) if isinstance(s, str)]
            if not static.is_constant or static.constant_term or not parts:
                parts.insert(0, py_affine(static, names))
            return " + ".join(parts)
        idx = [py_affine(e, names) for e in exprs]
        for k in checked:
            if not _IDENT.match(idx[k]) and not idx[k].lstrip("(-").rstrip(")").isdigit():
                t = self.fresh("t", "t_")
                self.emit(f"{t} = {idx[k]}")
                idx[k] = t
        cond = " and ".join(f"0 <= {idx[k]} < {mem.dims[k]}" for k in checked)
        self.emit(f"if not ({cond}): raise _OOB({mem.name}.shape, ({', '.join(idx)},))")
        return " + ".join(f"({x})" if s == 1 else f"({x}) * {s}" for x, s in zip(idx, mem.strides))

    def load_expr(self, mem: MemInfo, lin: str) -> str:
        raw = f"{mem.data}[{lin}]"
        n = mem.info.name
        if n == "i1":
            return f"(-{raw})"
        if n in S.PATTERN_BITS:
            return f"{self.glob(S.bits_table(n), 'T_' + n)}[{raw}]"
        return raw

    def store(self, mem: MemInfo, lin: str, value: str) -> None:
        n = mem.info.name
        if n in ("f16", "bf16"):
            value = f"_S.{n}_bits({value})"
        elif n in S.PATTERN_BITS:
            value = f"{self.glob(S.f8_bits(n), 'B_' + n)}({value})"
        self.emit(f"{mem.data}[{lin}] = {value}")

    def mem(self, v: Value) -> MemInfo:
        m = self.mems.get(v)
        if m is None:
            raise S.Unsupported(f"memref {self.ir_name(v)} is not available here")
        return m


class ModuleTranslator:
    """Translates the functions of a module into one Python source text and its globals."""

    def __init__(self, funcs: list):
        self.funcs = list(funcs)
        self.pynames = {f.sym_name: f"F{i}_{re.sub(r'[^A-Za-z0-9_]', '_', f.sym_name)}"
                        for i, f in enumerate(self.funcs)}
        self.globals: dict[str, object] = {}
        self._const_ids: dict[int, str] = {}
        from .handlers import HANDLERS  # the handlers import this module

        self.handlers = HANDLERS

    def pyname(self, sym: str) -> str | None:
        return self.pynames.get(sym)

    def constant(self, obj, hint: str) -> str:
        """A global name bound to ``obj`` in the generated module."""
        name = self._const_ids.get(id(obj))
        if name is None:
            name = f"_{re.sub(r'[^A-Za-z0-9_]', '_', hint)}_{len(self.globals)}"
            self.globals[name] = obj
            self._const_ids[id(obj)] = name
        return name

    def translate(self) -> tuple[str, list[OpInfo | None]]:
        lines: list[str] = []
        infos: list[OpInfo | None] = []
        for f in self.funcs:
            ft = FunctionTranslator(self, f, self.pynames[f.sym_name])
            try:
                ft.translate()
            except (S.Trap, TypeError) as e:
                where = ft.cur or OpInfo(f.name, f.location, f"'func.func' @{f.sym_name}")
                raise InterpretError(f"cannot translate {where.desc}: {e}", where.location) from None
            fl, fi = ft.source()
            lines += fl + [""]
            infos += fi + [None]
        return "\n".join(lines) + "\n", infos
