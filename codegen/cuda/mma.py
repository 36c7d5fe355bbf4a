"""Matrix units and asynchronous copies in kernels: the ``nvgpu`` ops as inline PTX, the
``gpu.subgroup_mma_*`` ops through the WMMA API (``nvcuda::wmma``, ``<mma.h>``).

Fragments: a 2-D ``vector<R x P x T>`` (an ``nvgpu`` fragment, R 32-bit registers of P elements) is a
struct of its R * P elements in storage type, row-major, aligned to its size (at most 16 bytes)::

    struct __align__(16) air_v4x2f16 { __half v[8]; };

so each register is ``reinterpret_cast<unsigned*>(a.v)[r]`` and element ``[r][e]`` is
``a.v[r * P + e]`` (``vector.extract/insert`` and element-wise ops work lane by lane on ``v``).
The PTX wrappers (``air_ldmatrix_x4``, ``air_mma_m16n8k16_f32_f16``, ``air_cp_async_16``, ...) are
``__forceinline__`` functions with one ``asm volatile`` each:

- ``nvgpu.ldmatrix``: ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`` from the lane's
  row address (``__cvta_generic_to_shared``);
- ``nvgpu.mma.sync``: ``mma.sync.aligned.m16n8k{K}.row.col.{f32,f16,s32}.{f16,bf16,tf32,s8}...``;
  f32 (TF32) inputs are rounded with ``cvt.rna.tf32.f32`` first, as the interpreter does (the
  hardware would otherwise ignore their low mantissa bits);
- ``nvgpu.device_async_copy``: ``cp.async.cg.shared.global`` for 16 bytes with ``bypassL1``, else
  ``cp.async.ca.shared.global`` (4, 8 or 16 bytes), with the source size (``srcElements``) operand
  for zero fill; ``device_async_create_group``: ``cp.async.commit_group``; ``device_async_wait``:
  ``cp.async.wait_group N``. Tokens have no C value.

WMMA: a ``!gpu.mma_matrix`` value is an ``nvcuda::wmma::fragment`` of the shape m16n16k16 (the
only one printed: f16, bf16 and i8 inputs; f32/TF32 WMMA is refused, use ``nvgpu.mma.sync``); an A
or B fragment is ``row_major`` unless the load that defines it has ``transpose`` (``col_major``).
``gpu.subgroup_mma_elementwise`` runs over ``x[i]`` of the fragments, which assumes the operands'
fragments hold their elements in the same order -- true for accumulators of one type; ``extf``/
``truncf`` between f16 and f32 accumulators assume the same for the two types (as on sm_80/sm_90,
not promised by the WMMA API).
"""

from __future__ import annotations

import itertools
import math

from affine_ir.core import Operation, Value
from affine_ir.dialects.gpu import SubgroupMmaLoadMatrixOp
from affine_ir.types import FloatType, IntegerType, MMAMatrixType, VectorType

from .types import storage_type

DEVICE = "static __device__ __forceinline__"
WMMA = "nvcuda::wmma"
PTX_TYPES = {"f16": "f16", "bf16": "bf16", "f32": "tf32", "i8": "s8", "i32": "s32"}
_FROM_STORAGE = {"f16": "__half2float({x})", "bf16": "__bfloat162float({x})"}
_TO_STORAGE = {"f16": "__float2half_rn({x})", "bf16": "__float2bfloat16_rn({x})"}


def fragment_struct(t: VectorType) -> tuple[str, str]:
    """(name, declaration) of the struct of the 2-D vector ``t``."""
    name = f"air_v{'x'.join(map(str, t.shape))}{t.element_type}"
    n = math.prod(t.shape)
    total = n * (t.element_type.width // 8)
    align = f"__align__({min(total, 16)}) " if total & (total - 1) == 0 else ""
    return name, f"struct {align}{name} {{ {storage_type(t.element_type)} v[{n}]; }};"


def _regs(prefix: str, start: int, n: int) -> str:
    return "{" + ", ".join(f"%{start + i}" for i in range(n)) + "}"


def ldmatrix_helper(tiles: int, trans: bool) -> tuple[str, str]:
    name = f"air_ldmatrix_x{tiles}{'_trans' if trans else ''}"
    ptx = f"ldmatrix.sync.aligned.m8n8.x{tiles}{'.trans' if trans else ''}.shared.b16"
    outs = ", ".join(f'"=r"(d[{i}])' for i in range(tiles))
    src = f"""{DEVICE} void {name}(void* dst, const void* row) {{
  unsigned* d = reinterpret_cast<unsigned*>(dst);
  unsigned a = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("{ptx} {_regs('', 0, tiles)}, [%{tiles}];"
               : {outs} : "r"(a));
}}"""
    return name, src


def mma_helper(k: int, el: str, acc: str, a_regs: int, b_regs: int) -> tuple[str, str]:
    """The wrapper of ``mma.sync.aligned.m16n8k{k}.row.col.{acc}.{el}.{el}.{acc}``."""
    pin, pacc = PTX_TYPES[el], {"f32": "f32", "f16": "f16", "i32": "s32"}[acc]
    name = f"air_mma_m16n8k{k}_{pacc}_{pin}"
    c_regs = 2 if acc == "f16" else 4
    cons = {"f32": "f", "f16": "r", "i32": "r"}[acc]
    ctype = {"f32": "float", "f16": "unsigned", "i32": "int"}[acc]
    outs = ", ".join(f'"={cons}"(d[{i}])' for i in range(c_regs))
    ins = [f'"r"(a[{i}])' for i in range(a_regs)] + [f'"r"(b[{i}])' for i in range(b_regs)] + \
        [f'"{cons}"(c[{i}])' for i in range(c_regs)]
    body = [f"  {ctype}* d = reinterpret_cast<{ctype}*>(d_);",
            f"  const {ctype}* c = reinterpret_cast<const {ctype}*>(c_);"]
    if el == "f32":  # round to TF32 (nearest, ties away) as the interpreter does
        body += [f"  unsigned a[{a_regs}], b[{b_regs}];",
                 "  const float* fa = reinterpret_cast<const float*>(a_);",
                 "  const float* fb = reinterpret_cast<const float*>(b_);",
                 *(f'  for (int i = 0; i < {n}; ++i) asm("cvt.rna.tf32.f32 %0, %1;" : "=r"({x}[i]) : "f"(f{x}[i]));'
                   for n, x in ((a_regs, "a"), (b_regs, "b")))]
    else:
        body += ["  const unsigned* a = reinterpret_cast<const unsigned*>(a_);",
                 "  const unsigned* b = reinterpret_cast<const unsigned*>(b_);"]
    na, nb = a_regs, b_regs
    asm = (f"mma.sync.aligned.m16n8k{k}.row.col.{pacc}.{pin}.{pin}.{pacc} {_regs('', 0, c_regs)}, "
           f"{_regs('', c_regs, na)}, {_regs('', c_regs + na, nb)}, {_regs('', c_regs + na + nb, c_regs)};")
    pad = " " * 15
    src = "\n".join([f"{DEVICE} void {name}(void* d_, const void* a_, const void* b_, const void* c_) {{", *body,
                     f'  asm volatile("{asm}"', f"{pad}: {outs}", f"{pad}: {', '.join(ins)});", "}"])
    return name, src


def cp_async_helper(nbytes: int, bypass: bool) -> tuple[str, str]:
    cache = "cg" if bypass else "ca"
    name = f"air_cp_async_{cache}{nbytes}"
    src = f"""{DEVICE} void {name}(void* dst, const void* src, unsigned src_bytes) {{  // zero-fills past src_bytes
  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;"
               :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(src_bytes) : "memory");
}}"""
    return name, src


class MmaOps:
    """The matrix-unit printer methods of :class:`~.kernel.KernelPrinter` (a mixin, before VectorOps)."""

    # -- types -------------------------------------------------------------------------------------
    def lanes(self, t: VectorType) -> int:
        if isinstance(t, VectorType) and len(t.shape) == 2:
            return math.prod(t.shape)
        return super().lanes(t)

    def vector_access(self, op: Operation, vt: VectorType):
        """Vector loads and stores stay 1-D (fragments come from ldmatrix/mma.sync and the lanes)."""
        if len(vt.shape) != 1:
            raise self.error(op, f"only 1-D vectors are supported by the CUDA backend, got {vt}")
        return super().vector_access(op, vt)

    def vector_struct(self, t: VectorType) -> str:
        if len(t.shape) != 2:
            return super().vector_struct(t)
        name, src = fragment_struct(t)
        self.use_type(t.element_type)
        self._helpers.add(src)  # a struct declaration is its own helper source
        return name

    def ctype(self, t) -> str:
        if isinstance(t, MMAMatrixType):
            return self.wmma_type(t, False)
        return super().ctype(t)

    def helper(self, name_src: tuple[str, str]) -> str:
        name, src = name_src
        self._helpers.add(src)  # a helper's source is its own key (see helpers.helper_source)
        return name

    # -- nvgpu ---------------------------------------------------------------------------------------
    def address(self, mem_value: Value, indices) -> str:
        from affine_ir.affine_map import AffineMap

        mem = self.mem(mem_value)
        exprs, names = self.map_exprs(AffineMap.identity(len(indices)), indices)
        return "&" + self.element(mem, exprs, names)

    def op_nvgpu_ldmatrix(self, op: Operation) -> None:
        res = op.results[0]
        name = self.declare_vector(res)
        fn = self.helper(ldmatrix_helper(op.num_tiles, op.transpose))
        self.emit(f"{fn}({name}.v, {self.address(op.memref, op.indices)});", assigns=res)

    def op_nvgpu_mma_sync(self, op: Operation) -> None:
        a, b, c = op.operands
        res = op.results[0]
        name = self.declare_vector(res)
        fn = self.helper(mma_helper(op.mma_shape[2], str(a.type.element_type), str(c.type.element_type),
                                    a.type.shape[0], b.type.shape[0]))
        self.emit(f"{fn}({name}.v, {self.val(a)}.v, {self.val(b)}.v, {self.val(c)}.v);", assigns=res)

    def op_nvgpu_device_async_copy(self, op: Operation) -> None:
        el = op.dst.type.element_type
        size = el.width // 8
        nbytes = op.dst_elements * size
        fn = self.helper(cp_async_helper(nbytes, op.bypass_l1))
        n = op.src_elements
        src_bytes = str(nbytes) if n is None else f"(unsigned)({self.val(n)}) * {size}u"
        self.emit(f"{fn}({self.address(op.dst, op.dst_indices)}, {self.address(op.src, op.src_indices)}, "
                  f"{src_bytes});")

    def op_nvgpu_device_async_create_group(self, op: Operation) -> None:
        self.emit('asm volatile("cp.async.commit_group;" ::: "memory");')

    def op_nvgpu_device_async_wait(self, op: Operation) -> None:
        self.emit(f'asm volatile("cp.async.wait_group {op.num_groups};" ::: "memory");')

    # -- vector.extract / vector.insert (static positions of fragments) ---------------------------------
    def _flat(self, op: Operation, vt: VectorType) -> int:
        pos = op.position
        if len(pos) != len(vt.shape):
            raise self.error(op, "only the extraction/insertion of one element is supported by the CUDA backend")
        k = 0
        for p, d in zip(pos, vt.shape):
            k = k * d + p
        return k

    def op_vector_extract(self, op: Operation) -> None:
        v = op.operands[0]
        el = v.type.element_type
        text = f"{self.val(v)}.v[{self._flat(op, v.type)}]"
        fmt = getattr(el, "name", None)
        self.define(op.results[0], _FROM_STORAGE[fmt].format(x=text) if fmt in _FROM_STORAGE else text)

    def op_vector_extract_strided_slice(self, op: Operation) -> None:
        """The box's elements copied into a fragment of the result type (registers: free after allocation)."""
        v, res = op.operands[0], op.results[0]
        shape = v.type.shape
        ranges = [range(o, o + n) for o, n in zip(op.offsets, op.sizes)] + [range(d) for d in shape[len(op.sizes):]]
        name = self.declare_vector(res)
        for k, index in enumerate(itertools.product(*ranges)):
            src = 0
            for i, d in zip(index, shape):
                src = src * d + i
            self.emit(f"{name}.v[{k}] = {self.val(v)}.v[{src}];", assigns=res)

    def op_vector_insert(self, op: Operation) -> None:
        x, v = op.operands
        res = op.results[0]
        k = self._flat(op, v.type)
        name = self.define(res, self.val(v), self.vector_struct(v.type))
        fmt = getattr(x.type, "name", None)
        value = self.val(x)
        self.emit(f"{name}.v[{k}] = {_TO_STORAGE[fmt].format(x=value) if fmt in _TO_STORAGE else value};",
                  assigns=res)

    # -- WMMA (gpu.subgroup_mma_*) --------------------------------------------------------------------------
    def wmma_type(self, t: MMAMatrixType, col_major: bool) -> str:
        el = t.element_type
        if isinstance(el, FloatType) and el.name == "f32" and t.operand != "COp":
            raise self.error(self.cur, "f32 (TF32) WMMA fragments are not printed; use nvgpu.mma.sync")
        if t.shape != (16, 16):
            raise self.error(self.cur, f"only 16x16 WMMA fragments (m16n16k16) are printed, got {t}")
        self.headers.add("mma.h")
        self.use_type(el)
        use = {"AOp": "matrix_a", "BOp": "matrix_b", "COp": "accumulator"}[t.operand]
        ct = storage_type(el) if not (isinstance(el, IntegerType) and el.width == 32) else "int"
        layout = "" if t.operand == "COp" else f", {WMMA}::{'col_major' if col_major else 'row_major'}"
        return f"{WMMA}::fragment<{WMMA}::{use}, 16, 16, 16, {ct}{layout}>"

    def value_wmma_type(self, v: Value) -> str:
        owner = v.owner if isinstance(v.owner, Operation) else None
        col = isinstance(owner, SubgroupMmaLoadMatrixOp) and "transpose" in owner.attributes
        return self.wmma_type(v.type, col)

    def declare_fragment(self, v: Value) -> str:
        name = self.name(v)
        self.emit(f"{self.value_wmma_type(v)} {name};", defines=v)
        return name

    def op_gpu_subgroup_mma_load_matrix(self, op: Operation) -> None:
        res = op.results[0]
        name = self.declare_fragment(res)
        ld = op.attributes["leadDimension"].value
        layout = ""
        if res.type.operand == "COp":
            layout = f", {WMMA}::{'mem_col_major' if 'transpose' in op.attributes else 'mem_row_major'}"
        self.emit(f"{WMMA}::load_matrix_sync({name}, {self.address(op.operands[0], op.operands[1:])}, {ld}{layout});",
                  assigns=res)

    def op_gpu_subgroup_mma_store_matrix(self, op: Operation) -> None:
        v, m, *idx = op.operands
        ld = op.attributes["leadDimension"].value
        layout = f"{WMMA}::{'mem_col_major' if 'transpose' in op.attributes else 'mem_row_major'}"
        self.emit(f"{WMMA}::store_matrix_sync({self.address(m, idx)}, {self.val(v)}, {ld}, {layout});")

    def op_gpu_subgroup_mma_compute(self, op: Operation) -> None:
        res = op.results[0]
        name = self.declare_fragment(res)
        a, b, c = (self.val(v) for v in op.operands)
        self.emit(f"{WMMA}::mma_sync({name}, {a}, {b}, {c});", assigns=res)

    def op_gpu_subgroup_mma_constant_matrix(self, op: Operation) -> None:
        res = op.results[0]
        name = self.declare_fragment(res)
        fmt = getattr(res.type.element_type, "name", None)
        value = self.val(op.operands[0])
        value = _TO_STORAGE[fmt].format(x=value) if fmt in _TO_STORAGE else value
        self.emit(f"{WMMA}::fill_fragment({name}, {value});", assigns=res)

    def op_gpu_subgroup_mma_elementwise(self, op: Operation) -> None:
        res = op.results[0]
        name = self.declare_fragment(res)
        xs = [f"{self.val(v)}.x[i]" for v in op.operands]
        src = getattr(op.operands[0].type.element_type, "name", None)
        dst = getattr(res.type.element_type, "name", None)
        if src in _FROM_STORAGE:
            xs = [_FROM_STORAGE[src].format(x=x) for x in xs]
        expr = self._elementwise_expr(op, op.kind, xs)
        if dst in _TO_STORAGE:
            expr = _TO_STORAGE[dst].format(x=expr)
        self.emit(f"for (int i = 0; i < {name}.num_elements; ++i) {name}.x[i] = {expr};", assigns=res)

    def _elementwise_expr(self, op: Operation, kind: str, xs: list[str]) -> str:
        binary = {"addf": "+", "subf": "-", "mulf": "*", "divf": "/"}
        if kind in binary:
            return f"{xs[0]} {binary[kind]} {xs[1]}"
        if kind in ("maxf", "minf"):
            helper = "maximumf" if kind == "maxf" else "minimumf"
            self.need(helper, "float")
            return f"air_{helper}({xs[0]}, {xs[1]})"
        if kind in ("addi", "subi", "muli", "divs", "divu"):
            helper = {"divs": "divsi", "divu": "divui"}.get(kind, kind)
            self.need(helper, "int")
            return f"air_{helper}({xs[0]}, {xs[1]})"
        if kind == "negatef":
            return f"-{xs[0]}"
        if kind == "negates":
            return f"(int)(0u - (unsigned){xs[0]})"
        if kind in ("extf", "truncf"):
            return xs[0]
        raise self.error(op, f"no CUDA lowering of element-wise kind {kind}")
