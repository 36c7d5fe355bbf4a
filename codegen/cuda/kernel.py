"""The printer of one kernel: a ``gpu.launch`` body as the body of an ``extern "C" __global__``
function. One method per op (``op_affine_for``, ...; the scalar ``arith``/``math`` ops are in
:mod:`.scalar`), dispatched on the op name.

Values: each SSA value is a C local named after its IR name (see :mod:`.names`); integer and
float constants are printed inline as literals (and folded into affine expressions); host values
the body uses are the kernel's parameters. Memrefs are flat arrays indexed row-major; workgroup
buffers are ``__shared__`` arrays hoisted to the kernel's top, ``memref.alloca`` a local array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from affine_ir.affine_expr import AffineExpr
from affine_ir.affine_map import AffineMap
from affine_ir.core import Block, Operation, Value
from affine_ir.dialects.affine import AffineParallelOp, AffineYieldOp
from affine_ir.dialects.memref import AllocaOp, AllocOp
from affine_ir.traits import IsTerminator, ReturnLike
from affine_ir.types import DeviceAsyncTokenType, GPUAddressSpace, IndexType, MemRefType, VectorType
from analysis.ranges import RangeContext

from ..loop_bounds import constant_upper_limit, may_step_past_int64
from .affine_c import DimNames, c_bound, c_condition, c_expr, c_integer, c_sum, c_trip_count, is_atomic, terms
from .errors import EmitError
from .helpers import helper_key
from .lines import Line
from .names import Namer
from .types import EIGHT_BIT, UnsupportedType, index_literal, int_literal, reg_type, storage_type
from .vector import Lane

HEADERS = {"f16": "cuda_fp16.h", "bf16": "cuda_bf16.h", "f8E4M3FN": "cuda_fp8.h", "f8E5M2": "cuda_fp8.h"}


@dataclass
class MemInfo:
    """A memref in the kernel: its C array/pointer name and its dims (ints, or C names of sizes)."""

    name: str
    dims: list
    type: MemRefType
    value: Value


def is_workgroup(t: MemRefType) -> bool:
    s = t.memory_space
    return (isinstance(s, GPUAddressSpace) and s.name == "workgroup") or s == 3


def is_private(t: MemRefType) -> bool:
    s = t.memory_space
    return (isinstance(s, GPUAddressSpace) and s.name == "private") or s == 5


def is_global(t: MemRefType) -> bool:
    s = t.memory_space
    return s is None or s == 0 or s == 1 or (isinstance(s, GPUAddressSpace) and s.name == "global")


@dataclass(frozen=True)
class Options:
    """``fast_math``: f32 math functions (``expf``...) instead of double-precision ones rounded
    once; ``contract``: plain ``a * b`` that NVRTC may fuse with an add into an FMA (instead of
    ``__fmul_rn``, which it never fuses)."""

    fast_math: bool = False
    contract: bool = False


class KernelPrinter:
    """Prints the body of one ``gpu.launch``; ``lines`` is the result (see :mod:`.lines`)."""

    def __init__(self, launch: Operation, namer: Namer, options: Options, headers: set[str],
                 block_size: tuple[int, int, int] = (1, 1, 1)):
        self.launch = launch
        self.block_size = block_size
        self.cluster_size = (1, 1, 1)  # blocks per thread-block cluster (set for a launch with clusters)
        self.namer = namer
        self.options = options
        self._helpers: set[str] = set()  # helpers called since the last line
        self.headers = headers  # the cuda_fp16.h/cuda_bf16.h the printed code needs
        self.lines: list[Line] = []
        self.indent = 0
        self.vars: dict[Value, str] = {}  # values held in a C variable
        self.literals: dict[Value, str] = {}  # constants printed inline
        self.aliases: dict[Value, Value] = {}  # values that are another value (same C representation)
        self.ints: dict[Value, int] = {}  # known integer values (folded into affine expressions)
        self.mems: dict[Value, MemInfo] = {}
        self.shared: list[tuple[Value, MemRefType]] = []  # hoisted workgroup buffers, in order
        self.shared_align: dict[Value, int] = {}  # their alignment where more than 16 bytes (or mbarriers: 8)
        self.shared_ctype: dict[Value, str] = {}  # their C element type where not the storage type's
        self._refs: set[Value] = set()
        self.cur: Operation | None = None
        self.ranges = RangeContext()  # value ranges: index divisions in 32 bits where they fit
        # per open C scope: the affine.apply variables declared there, by their terms (see `known_sum`)
        self.known: list[dict[tuple, tuple[Value, int]]] = [{}]

    # -- helpers and errors ---------------------------------------------------------------------
    def need(self, name: str, ctype: str | None = None) -> None:
        self._helpers.add(helper_key(name, ctype))

    def use_type(self, t) -> None:
        """Note that the code uses the 16-bit float type ``t`` (its header is included)."""
        name = getattr(t, "name", t)
        if name in HEADERS:
            self.headers.add(HEADERS[name])

    def error(self, op: Operation, why: str) -> EmitError:
        return EmitError(f"cannot emit '{op.name}' as CUDA: {why}", op.location)

    # -- values ------------------------------------------------------------------------------------
    def val(self, v: Value) -> str:
        """The C expression of ``v`` (its variable, or its literal)."""
        v = self.aliases.get(v, v)
        if isinstance(v, Lane):
            return self.lane_val(v)
        lit = self.literals.get(v)
        if lit is not None:
            return lit
        name = self.vars.get(v)
        if name is None:
            mem = self.mems.get(v)
            if mem is None:
                raise EmitError(f"value %{self.namer.ir.get(v, '?')} is not available in the kernel",
                                self.cur.location if self.cur else None)
            name = mem.name
        self._refs.add(v)
        return name

    def alias(self, r: Value, v: Value) -> None:
        """``r`` is ``v`` in C (a cast that changes nothing: ``extf`` f16 -> f32, index <-> i64)."""
        self.aliases[r] = self.aliases.get(v, v)
        if v in self.ints:
            self.set_int(r, self.ints[v])

    def arg(self, v: Value) -> str:
        """``val(v)`` typed exactly (``3LL`` for an index constant), for overloaded helpers."""
        v = self.aliases.get(v, v)
        if v in self.ints and isinstance(v.type, IndexType):
            return f"{self.ints[v]}LL" if self.ints[v] != -(1 << 63) else self.literals[v]
        return self.val(v)

    def set_int(self, v: Value, value: int) -> None:
        self.ints[v] = value
        self.literals[v] = index_literal(value) if isinstance(v.type, IndexType) else int_literal(value, v.type)

    def name(self, v: Value) -> str:
        n = self.namer.name(v)
        self.vars[v] = n
        return n

    def emit(self, text: str, defines: Value | None = None, assigns: Value | None = None) -> None:
        """A line reading the values referenced since the previous line."""
        self.lines.append(Line(self.indent, text, frozenset(self._refs), defines, assigns, frozenset(self._helpers)))
        self._refs = set()
        self._helpers = set()

    def define(self, v: Value, expr: str, ctype: str | None = None) -> str:
        """``T name = expr;`` for the value ``v`` (dropped when nothing reads ``v``); for a lane of
        a vector (see :mod:`.vector`), the assignment of that lane."""
        if isinstance(v, Lane):
            self.lane_define(v, expr)
            return self.vars[v.vector]
        name = self.name(v)
        self.emit(f"{ctype or self.ctype(v.type)} {name} = {expr};", defines=v)
        return name

    def ctype(self, t) -> str:
        """The C type of a value of IR type ``t``: :func:`.types.reg_type`, or a vector's struct."""
        if isinstance(t, VectorType):
            return self.vector_struct(t)
        return reg_type(t)

    def base_aligned(self, mem: MemInfo) -> bool:
        """True when ``mem``'s data starts 16-byte aligned: global memory (device allocations are
        256-byte aligned) and ``__shared__`` buffers (declared ``__align__(16)``)."""
        return is_global(mem.type) or is_workgroup(mem.type)

    def mem(self, v: Value) -> MemInfo:
        m = self.mems.get(v)
        if m is None:
            raise self.error(self.cur, f"memref %{self.namer.ir.get(v, '?')} is not available in the kernel")
        return m

    # -- affine maps -----------------------------------------------------------------------------
    def map_exprs(self, m: AffineMap, operands) -> tuple[list[AffineExpr], list[str]]:
        """The results of ``m`` over its operands: known constants folded in, each other value one
        dim (a value bound to several operands is one dim); the C names of the dims."""
        repl: list = []
        dims: list[Value] = []
        for v in operands:
            if v in self.ints:
                repl.append(self.ints[v])
            else:
                if v not in dims:
                    dims.append(v)
                repl.append(AffineExpr.dim(dims.index(v)))
        nd = m.num_dims
        exprs = list(m.replace(repl[:nd], repl[nd:], num_dims=len(dims), num_symbols=0).results)
        used = set()
        for e in exprs:
            used |= e.used_dims()
        names = [self.val(v) if k in used else "" for k, v in enumerate(dims)]
        return exprs, DimNames(names, [self.ranges.range(v) if k in used else None for k, v in enumerate(dims)])

    def affine(self, e: AffineExpr, names: list[str]) -> str:
        return c_expr(e, names, self.need)

    def combined(self, m: AffineMap, operands, fn: str) -> str:
        exprs, names = self.map_exprs(m, operands)
        return c_bound([self.affine(e, names) for e in exprs], fn)

    # -- memory -----------------------------------------------------------------------------------
    def element(self, mem: MemInfo, exprs: list[AffineExpr], names: list[str]) -> str:
        """``name[linear index]`` of the element at ``exprs`` (row-major)."""
        self._refs.add(mem.value)
        if not exprs:
            return f"{mem.name}[0]"
        groups: dict[tuple[str, ...], AffineExpr] = {}
        for k, e in enumerate(exprs):
            factor, dyn = 1, []
            for d in mem.dims[k + 1:]:
                if isinstance(d, int):
                    factor *= d
                else:
                    dyn.append(d)
            key = tuple(dyn)
            groups[key] = groups.get(key, AffineExpr.constant(0)) + e * factor
        items: list[tuple[int, str]] = []
        const = 0
        for key in sorted(groups, key=len, reverse=True):
            e = groups[key]
            if not key:
                more, const = terms(e, names, self.need)
                items += more
                continue
            text = self.affine(e, names)
            if text == "0":
                continue
            items.append((1, f"{text if is_atomic(text) else f'({text})'} * {' * '.join(key)}"))
        return f"{mem.name}[{c_sum(items, const)}]"

    def access(self, op: Operation) -> str:
        """The element an ``affine``/``memref`` load or store accesses."""
        mem = self.mem(op.memref)
        amap = getattr(op, "map", None)
        if not isinstance(amap, AffineMap):
            amap = AffineMap.identity(len(op.indices))
        exprs, names = self.map_exprs(amap, op.indices)
        return self.element(mem, exprs, names)

    def load(self, op: Operation) -> None:
        el = op.memref.type.element_type
        self.use_type(el)
        ref = self.access(op)
        name = getattr(el, "name", None)
        expr = {"f16": f"__half2float({ref})", "bf16": f"__bfloat162float({ref})"}.get(name, ref)
        if name in EIGHT_BIT:
            self.need(f"from_{name}")
            expr = f"air_from_{name}({ref})"
        self.define(op.results[0], expr)

    def store(self, op: Operation) -> None:
        el = op.memref.type.element_type
        self.use_type(el)
        value = self.val(op.value)
        name = getattr(el, "name", None)
        value = {"f16": f"__float2half_rn({value})", "bf16": f"__float2bfloat16_rn({value})"}.get(name, value)
        if name in EIGHT_BIT:
            self.need(f"to_{name}")
            value = f"air_to_{name}({value})"
        self.emit(f"{self.access(op)} = {value};")

    op_affine_load = op_memref_load = load
    op_affine_store = op_memref_store = store

    def op_memref_atomic_rmw(self, op: Operation) -> None:
        """``memref.atomic_rmw``: CUDA's ``atomicAdd``/``atomicMax``/... where one exists for the
        kind and type, else a compare-and-swap loop (float max/min, products); f32, f64, i32, i64."""
        t = op.memref.type.element_type
        ct = reg_type(t)
        if storage_type(t) != ct or ct not in ("float", "double", "int", "long long"):
            raise self.error(op, f"no atomic of element type {t} (f32, f64, i32 and i64 have one)")
        ref, v = f"&{self.access(op)}", self.val(op.value)
        name = self.name(op.results[0])
        direct = _ATOMIC_FUNCTIONS.get((op.kind, ct))
        if direct is not None:
            fn, cast = direct
            call = f"{fn}(({cast}*){ref}, ({cast}){v})" if cast != ct else f"{fn}({ref}, {v})"
            self.emit(f"{ct} {name} = ({ct}){call};")
            return
        bits, to_bits, from_bits = _CAS_TYPES[ct]
        new = _atomic_update(self, op.kind, ct, "a", v)
        self.emit(f"{ct} {name};")
        self.emit(f"{{ {bits}* p = ({bits}*){ref}; {bits} seen = *p, was; do {{ was = seen; {ct} a = {from_bits}(was); "
                  f"seen = atomicCAS(p, was, {to_bits}({new})); }} while (seen != was); {name} = {from_bits}(seen); }}")

    def local_array(self, op: Operation) -> None:
        """A thread-private array (``memref.alloca``, private ``memref.alloc``), zero-filled."""
        t: MemRefType = op.results[0].type
        if not t.has_static_shape:
            raise self.error(op, f"a thread-private buffer needs a static shape, got {t}")
        name = self.name(op.results[0])
        self.use_type(t.element_type)
        self.mems[op.results[0]] = MemInfo(name, list(t.shape), t, op.results[0])
        self.emit(f"{storage_type(t.element_type)} {name}[{max(1, math.prod(t.shape))}] = {{}};",
                  defines=op.results[0])

    op_memref_alloca = local_array

    def op_memref_alloc(self, op: Operation) -> None:
        t: MemRefType = op.results[0].type
        if is_workgroup(t):
            return  # hoisted to the kernel's top (see hoist_shared)
        if is_private(t):
            self.local_array(op)
            return
        raise self.error(op, f"global memory cannot be allocated inside a kernel ({t}); allocate it on the host")

    def op_memref_dealloc(self, op: Operation) -> None:
        m = op.operands[0]
        if not (is_workgroup(m.type) or is_private(m.type) or isinstance(m.owner, AllocaOp)):
            raise self.error(op, "global memory cannot be freed inside a kernel; free it on the host")

    def op_memref_dim(self, op: Operation) -> None:
        mem = self.mem(op.operands[0])
        k = self.ints.get(op.operands[1])
        res = op.results[0]
        if k is not None and 0 <= k < len(mem.dims):
            d = mem.dims[k]
            if isinstance(d, int):
                self.set_int(res, d)
            else:
                self.literals[res] = d  # the size parameter itself
            return
        kv = self.val(op.operands[1])
        expr = "0"
        for j, d in reversed(list(enumerate(mem.dims))):
            expr = f"{kv} == {j} ? {d} : {expr}" if expr == "0" else f"{kv} == {j} ? {d} : ({expr})"
        self.define(res, expr)

    def hoist_shared(self, body: Block) -> None:
        """Register every workgroup ``memref.alloc`` of the kernel (declared at its top)."""
        for op in body.walk():
            if isinstance(op, AllocOp) and is_workgroup(op.results[0].type):
                t: MemRefType = op.results[0].type
                if not t.has_static_shape:
                    raise self.error(op, f"a workgroup buffer needs a static shape, got {t}")
                name = self.name(op.results[0])
                self.use_type(t.element_type)
                self.mems[op.results[0]] = MemInfo(name, list(t.shape), t, op.results[0])
                self.shared.append((op.results[0], t))

    # -- blocks and control flow ------------------------------------------------------------------
    def nested(self, block: Block, on_yield=None) -> None:
        """``block`` as a C scope one level in (what it declares is not visible after it)."""
        self.indent += 1
        self.known.append({})
        self.block(block, on_yield)
        self.known.pop()
        self.indent -= 1

    def block(self, block: Block, on_yield=None) -> None:
        for op in block.ops:
            if op.has_trait(IsTerminator):  # a kernel's blocks end in yields (to on_yield) or gpu.terminator
                if op.has_trait(ReturnLike) and on_yield is not None:
                    self.cur = op
                    on_yield(op)
                continue
            self.op(op)

    def op(self, op: Operation) -> None:
        method = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if method is None:
            method = self.scalar_method(op)
        if method is None:
            raise self.error(op, self.why_unsupported(op))
        self.cur = op
        try:
            method(op)
        except UnsupportedType as e:
            raise self.error(op, str(e)) from None

    def scalar_method(self, op: Operation):
        return None  # see ScalarOps

    @staticmethod
    def why_unsupported(op: Operation) -> str:
        if any(isinstance(v.type, VectorType) for v in (*op.operands, *op.results)):
            return ("no CUDA lowering for this vector op (supported: affine.vector_load/vector_store, "
                    "vector.broadcast, vector.reduction, element-wise arith/math on 1-D vectors)")
        if isinstance(op, AffineParallelOp):
            return "an affine.parallel left inside a kernel is not supported (gpu-map turns parallel loops into ids)"
        return "no CUDA lowering for this op"

    def carried(self, values, inits) -> list[str]:
        """Variables for loop-carried/if-result values (declared here, initialized to ``inits``)."""
        names = []
        for v, init in zip(values, inits):
            if isinstance(v.type, DeviceAsyncTokenType):  # a copy group's token has no C value (see .mma)
                continue
            n = self.name(v)
            self.emit(f"{self.ctype(v.type)} {n}" + (f" = {self.val(init)};" if init is not None else ";"), defines=v)
            names.append(n)
        return names

    def assign_yield(self, targets: list[Value], yielded) -> None:
        """``target = yielded`` for each pair; through temporaries when a yielded value is another
        target (a swap of iter_args)."""
        pairs = [(t, y) for t, y in zip(targets, yielded)
                 if t is not y and self.aliases.get(y, y) is not t and not isinstance(t.type, DeviceAsyncTokenType)]
        hazard = any(y in targets for _, y in pairs)
        temps = []
        for t, y in pairs:
            if hazard:
                tmp = self.namer.fresh(self.vars[t] + "_next")
                self.emit(f"{self.ctype(t.type)} {tmp} = {self.val(y)};", assigns=t)
                temps.append((t, tmp))
            else:
                self.emit(f"{self.vars[t]} = {self.val(y)};", assigns=t)
        for t, tmp in temps:
            self.emit(f"{self.vars[t]} = {tmp};", assigns=t)

    def op_affine_for(self, op: Operation) -> None:
        iters = list(op.iter_args)
        self.carried(iters, op.inits)
        lb = self.combined(op.lower_bound_map, op.lower_bound_operands, "max")
        ub = self.combined(op.upper_bound_map, op.upper_bound_operands, "min")
        iv = self.name(op.induction_var)
        if may_step_past_int64(c_integer(lb), c_integer(ub), op.step, constant_upper_limit(op.upper_bound_map)):
            # count the iterations in unsigned arithmetic: `iv += step` could pass INT64_MAX
            k, n = self.namer.fresh(iv + "_k"), self.namer.fresh(iv + "_n")
            self.emit(f"for (unsigned long long {k} = 0, {n} = {c_trip_count(lb, ub, op.step)}; {k} < {n}; ++{k}) {{")
            if op.induction_var.has_uses:
                # (void): the body's printed form may not name the IV (a dead use), which NVRTC warns about
                self.emit(f"  const long long {iv} = (long long)((unsigned long long)({lb}) + {k} * {op.step}ULL); "
                          f"(void){iv};")
        else:
            step = f"++{iv}" if op.step == 1 else f"{iv} += {op.step}"
            self.emit(f"for (long long {iv} = {lb}; {iv} < {ub}; {step}) {{")
        self.nested(op.body, lambda y: self.assign_yield(iters, y.operands))
        self.emit("}")
        for r, a in zip(op.results, iters):
            if not isinstance(r.type, DeviceAsyncTokenType):
                self.loop_result(r, a)

    def loop_result(self, r: Value, carried: Value) -> None:
        """The result ``r`` of a loop whose carried variable is ``carried``'s: a copy of it."""
        self.define(r, self.val(carried))

    def op_affine_if(self, op: Operation) -> None:
        results = list(op.results)
        self.carried(results, [None] * len(results))
        s = op.condition
        exprs, names = self.map_exprs(AffineMap(s.num_dims, s.num_symbols, s.constraints), op.operands)
        cond = c_condition(exprs, s.eq_flags, names, self.need, self.known_sum)
        self.emit(f"if ({cond}) {{")
        self.nested(op.then_block, lambda y: self.assign_yield(results, y.operands))
        other = op.else_block
        if other is not None and any(not isinstance(o, AffineYieldOp) or o.operands for o in other.ops):
            self.emit("} else {")
            self.nested(other, lambda y: self.assign_yield(results, y.operands))
        self.emit("}")

    def op_affine_apply(self, op: Operation) -> None:
        exprs, names = self.map_exprs(op.map, op.operands)
        e = exprs[0]
        if e.is_constant:
            self.set_int(op.results[0], e.constant_term)
            return
        items, const = terms(e, names, self.need)
        self.define(op.results[0], c_sum(items, const))
        self.known[-1][tuple(items)] = (op.results[0], const)

    def known_sum(self, items: list[tuple[int, str]], const: int) -> tuple[list[tuple[int, str]], int] | None:
        """``sum(items) + const`` over a visible affine.apply variable ``v = sum(items) + c`` (or
        ``-sum(items) + c``) when there is one: ``v + const - c`` (``-v + const + c``), so that a
        guard reuses the index it guards (``src >= 0`` for ``i + k >= 1`` with ``src = i + k - 1``)
        instead of repeating its divisions. None when there is none."""
        key = tuple(items)
        neg = tuple((-c, a) for c, a in items)
        for scope in reversed(self.known):
            hit = scope.get(key)
            if hit is not None:
                return [(1, self.val(hit[0]))], const - hit[1]
            hit = scope.get(neg)
            if hit is not None:
                return [(-1, self.val(hit[0]))], const + hit[1]
        return None

    def op_affine_min(self, op: Operation) -> None:
        self._minmax(op, "min")

    def op_affine_max(self, op: Operation) -> None:
        self._minmax(op, "max")

    def _minmax(self, op: Operation, fn: str) -> None:
        exprs, names = self.map_exprs(op.map, op.operands)
        if all(e.is_constant for e in exprs):
            vals = [e.constant_term for e in exprs]
            self.set_int(op.results[0], min(vals) if fn == "min" else max(vals))
            return
        self.define(op.results[0], c_bound([self.affine(e, names) for e in exprs], fn))

    # -- gpu ops --------------------------------------------------------------------------------
    def op_gpu_barrier(self, op: Operation) -> None:
        self.emit("__syncthreads();")

    def _id(self, op: Operation, builtin: str) -> None:
        self.define(op.results[0], f"{builtin}.{op.dimension}")

    def op_gpu_thread_id(self, op: Operation) -> None:
        self._id(op, "threadIdx")

    def op_gpu_block_id(self, op: Operation) -> None:
        self._id(op, "blockIdx")

    def op_gpu_grid_dim(self, op: Operation) -> None:
        self._id(op, "gridDim")

    def op_gpu_block_dim(self, op: Operation) -> None:
        self.set_int(op.results[0], self.block_size["xyz".index(op.dimension)])

    def op_gpu_cluster_id(self, op: Operation) -> None:
        """The cluster's index in the grid: the block's over the (compile-time) cluster size, as CUDA groups them."""
        self.define(op.results[0], f"(blockIdx.{op.dimension} / {self.cluster_size['xyz'.index(op.dimension)]}u)")

    def op_gpu_cluster_block_id(self, op: Operation) -> None:
        """The block's index in its cluster (PTX ``%cluster_ctaid``: the block's modulo the cluster size)."""
        self.define(op.results[0], f"(blockIdx.{op.dimension} % {self.cluster_size['xyz'.index(op.dimension)]}u)")


#: (kind, C type) -> (CUDA atomic function, the pointer type it takes).
_ATOMIC_FUNCTIONS = {
    ("addf", "float"): ("atomicAdd", "float"), ("addf", "double"): ("atomicAdd", "double"),
    ("addi", "int"): ("atomicAdd", "int"), ("addi", "long long"): ("atomicAdd", "unsigned long long"),
    ("maxs", "int"): ("atomicMax", "int"), ("maxs", "long long"): ("atomicMax", "long long"),
    ("mins", "int"): ("atomicMin", "int"), ("mins", "long long"): ("atomicMin", "long long"),
    ("maxu", "int"): ("atomicMax", "unsigned int"), ("maxu", "long long"): ("atomicMax", "unsigned long long"),
    ("minu", "int"): ("atomicMin", "unsigned int"), ("minu", "long long"): ("atomicMin", "unsigned long long"),
    ("andi", "int"): ("atomicAnd", "int"), ("andi", "long long"): ("atomicAnd", "unsigned long long"),
    ("ori", "int"): ("atomicOr", "int"), ("ori", "long long"): ("atomicOr", "unsigned long long"),
    ("xori", "int"): ("atomicXor", "int"), ("xori", "long long"): ("atomicXor", "unsigned long long"),
}
#: C type -> (the CAS word type, value to word, word to value).
_CAS_TYPES = {
    "float": ("int", "__float_as_int", "__int_as_float"),
    "double": ("unsigned long long", "(unsigned long long)__double_as_longlong", "__longlong_as_double"),
    "int": ("int", "", ""),
    "long long": ("unsigned long long", "(unsigned long long)", "(long long)"),
}


def _atomic_update(k: KernelPrinter, kind: str, ct: str, a: str, v: str) -> str:
    """The C expression of ``kind(a, v)`` for a compare-and-swap loop (the interpreter's semantics)."""
    if kind in ("maximumf", "minimumf"):
        k.need(kind, ct)
        return f"air_{kind}({a}, {v})"
    if kind in ("maxnumf", "minnumf"):
        return f"{'fmax' if kind == 'maxnumf' else 'fmin'}{'f' if ct == 'float' else ''}({a}, {v})"
    if kind == "mulf":
        return f"{a} * {v}"
    if kind == "muli":
        u = "unsigned int" if ct == "int" else "unsigned long long"
        return f"({ct})(({u}){a} * ({u}){v})"
    raise EmitError(f"cannot emit 'memref.atomic_rmw' kind {kind} as CUDA")
