"""``emit(module) -> CudaProgram``: every ``gpu.launch`` of every host function as one kernel of
one CUDA C translation unit, with the launch metadata the runtime needs."""

from __future__ import annotations

from affine_ir.core import Operation, Value
from affine_ir.dialects.arith import ConstantOp
from affine_ir.dialects.builtin import ModuleOp
from affine_ir.dialects.func import FuncOp
from affine_ir.interfaces import MemRefAccessInterface
from affine_ir.names import unique_name
from affine_ir.traits import EffectKind, IsTerminator, view_source
from affine_ir.types import FloatType, IndexType, IntegerType, MemRefType, TensorMapDescriptorType

from .errors import EmitError
from .helpers import INCLUDES, helper_source
from .hopper import TENSOR_MAP_CTYPE, TENSOR_MAP_STRUCT, HopperOps
from .host import HostRole, host_body_ops, host_role, launches_of
from .kernel import KernelPrinter, MemInfo, Options, is_global
from .lines import helpers_used, live_values, render
from .mma import MmaOps
from .names import Namer, c_identifier, ir_names
from .program import CudaProgram, KernelParam, KernelSpec
from .scalar import ScalarOps
from .types import UnsupportedType, float_literal, memref_bytes, reg_type, storage_type
from .vector import VectorOps

#: Workgroup buffers of one kernel above this many bytes go to dynamic shared memory (a static
#: ``__shared__`` declaration is limited to 48 KiB).
STATIC_SHARED_LIMIT = 48 * 1024
SHARED_ALIGN = 16
MAX_THREADS = 1024
MAX_CLUSTER_BLOCKS = 8  # the portable thread-block cluster size



class CudaKernelPrinter(HopperOps, MmaOps, VectorOps, ScalarOps, KernelPrinter):
    """The printer of one kernel: control flow, memory and GPU ops (:class:`KernelPrinter`), the
    scalar ``arith``/``math`` ops (:class:`ScalarOps`), 1-D vector ops (:class:`VectorOps`),
    matrix units and asynchronous copies (:class:`MmaOps`) and Hopper's mbarriers, TMA and wgmma
    (:class:`HopperOps`)."""


def emit(module: ModuleOp | FuncOp, *, fast_math: bool = False, contract: bool = False,
         arch: str | None = None) -> CudaProgram:
    """CUDA C for every ``gpu.launch`` of ``module``'s host functions (the output of ``gpu-map``).

    Guarantees: the source is one translation unit holding, per launch in program order, an
    ``extern "C" __global__`` function ``<function>_kernel<k>`` whose parameters are
    ``kernels[k].params``; one thread of it computes what one (block, thread) instance of the
    launch body computes in the interpreter (see :mod:`codegen.cuda` for the differences).
    ``fast_math`` calls the f32 math functions and lets NVRTC contract multiplies and adds into
    FMAs; ``contract`` only the latter. ``arch`` (e.g. ``"sm_90"``): the target, checked against
    what the kernels need (``KernelSpec.min_arch``: wgmma and setmaxnreg need sm_90a, TMA and
    mbarrier transactions sm_90 or newer); the result's ``arch`` is what to compile for (``sm_90``
    becomes ``sm_90a`` for wgmma). Raises :class:`EmitError` naming the op and its location
    for an unmapped loop nest (any op other than constants, ``affine.apply/min/max``,
    ``memref.alloc/dealloc``, ``memref.cast``, ``nvgpu.tma.create.descriptor``, ``gpu.launch`` and
    ``return`` at a host function's top level), for anything inside a kernel that has no CUDA
    lowering, and for a target older than the kernels need.
    """
    if isinstance(module, FuncOp):
        funcs = [module]
    elif isinstance(module, ModuleOp):
        funcs = list(module.functions)
    else:
        raise EmitError(f"expected a module or a func.func op, got {type(module).__name__}")
    options = Options(fast_math=fast_math, contract=contract)
    helpers: set[str] = set()
    headers: set[str] = set()
    hosts = [f for f in funcs if not f.is_declaration]
    kernels: list[KernelSpec] = []
    texts: list[str] = []
    taken: set[str] = set()
    for f in hosts:
        _check_host(f)
        names = ir_names(f)
        launches = launches_of(f.body.ops)
        for k, launch in enumerate(launches):
            kname = unique_name(f"{c_identifier(f.sym_name)}_kernel{k}", taken)
            text, spec = _emit_kernel(f, launch, kname, names, options, helpers, headers)
            texts.append(text)
            kernels.append(spec)
    program = CudaProgram(_translation_unit(texts, helpers, headers), kernels, hosts)
    if arch is not None:
        program.arch = program.arch_for(arch)
    return program


def _translation_unit(kernels: list[str], helpers: set[str], headers: set[str]) -> str:
    helper_text = helper_source(helpers)
    body = "\n\n".join(kernels)
    includes = headers | {INCLUDES[k] for k in helpers if k in INCLUDES}
    parts = ["// CUDA C printed by codegen.cuda from affine IR."]
    if includes:
        order = ("cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h")
        parts.append("\n".join(f"#include <{h}>" for h in sorted(includes, key=order.index)))
    if helper_text:
        parts.append(helper_text)
    parts.append(body)
    return "\n\n".join(p for p in parts if p) + "\n"


def _returned_value_error(f: FuncOp, ret: Operation) -> EmitError:
    """The refusal of a host function with results, naming the first returned value and the op
    computing it (a loop left on the host because its results are used there, typically)."""
    v = ret.operands[0]
    name = f"%{v.name_hint}" if v.name_hint else "a value"
    d = v.owner if isinstance(v.owner, Operation) else None
    what = f"{name}, the result of '{d.name}'" + (f" at {d.location}" if d.location else "") if d else \
        f"{name} (an argument)"
    return EmitError(f"cannot emit @{f.sym_name} as CUDA: it returns {what}; a function returning a value is not "
                     "supported (values computed on the device stay there: store the value into a memref argument "
                     "instead)", ret.location)


def _check_host(f: FuncOp) -> None:
    """Only what the host runs may stay at a host function's top level (and in its host loops); no results."""
    ops = list(f.body.ops)
    if ops and host_role(ops[-1]) is HostRole.RETURN and ops[-1].operands:
        raise _returned_value_error(f, ops[-1])
    _check_host_ops(f, ops)


def _check_host_ops(f: FuncOp, ops) -> None:
    for op in ops:
        role = host_role(op)
        if role is None and not op.results and launches_of(host_body_ops(op)):
            _check_host_ops(f, [x for x in host_body_ops(op) if not x.has_trait(IsTerminator)])  # names the op inside
        if role is None:
            raise EmitError(f"cannot emit @{f.sym_name} as CUDA: '{op.name}' at the top level of a host function is "
                            "not mapped to the GPU (run gpu-map first; if it ran, its trace says why it left this op); "
                            "only arith.constant, affine.apply/min/max, memref.alloc/dealloc, memref.cast, "
                            "nvgpu.tma.create.descriptor, gpu.launch, loops and ifs of those and return may stay on "
                            "the host", op.location)
        if role is HostRole.TENSOR_MAP:
            root = view_source(op.operands[0])
            if not isinstance(root.type, MemRefType) or not is_global(root.type):
                raise EmitError(f"cannot emit @{f.sym_name} as CUDA: a TMA descriptor is made of a ranked memref in "
                                f"global memory cast to unranked on the host (memref.cast), got {root.type}",
                                op.location)
        if role is HostRole.ALLOCATE and not is_global(op.results[0].type):
            raise EmitError(f"cannot emit @{f.sym_name} as CUDA: a host allocation must be in global memory, got "
                            f"{op.results[0].type}", op.location)
        if role in (HostRole.LOOP, HostRole.IF):
            _check_host_ops(f, [x for x in host_body_ops(op) if not x.has_trait(IsTerminator)])


def _block_size(launch: Operation, sizes=None, what: str = "block size") -> tuple[int, int, int]:
    """The launch's constant block sizes (or ``sizes``: its cluster sizes)."""
    out = []
    for v, d in zip(launch.block_size if sizes is None else sizes, "xyz"):
        owner = v.owner
        value = owner.value if isinstance(owner, ConstantOp) else None
        if not isinstance(value, int) or value <= 0:
            raise EmitError(f"cannot emit 'gpu.launch' as CUDA: the {what} in {d} must be a positive "
                            "arith.constant index value", launch.location)
        out.append(value)
    return out[0], out[1], out[2]


def _host_values(launch: Operation) -> list[Value]:
    """The values the launch body uses but does not define, in order of first use."""
    inside: set[Value] = set()
    for op in launch.walk():
        inside.update(op.results)
        for region in op.regions:
            for b in region.blocks:
                inside.update(b.args)
    out: dict[Value, None] = {}
    for op in launch.walk():
        if op is launch:
            continue
        for v in op.operands:
            if v not in inside:
                out.setdefault(v, None)
    return list(out)


def _definition_order(f: FuncOp) -> dict[Value, int]:
    """The host values of ``f`` in the order the host defines them (arguments, then the results
    and IVs at the top level and in host loops)."""
    order: dict[Value, int] = {a: k for k, a in enumerate(f.args)}

    def visit(ops) -> None:
        for op in ops:
            for r in op.results:
                order[r] = len(order)
            role = host_role(op)
            if role is HostRole.LOOP:
                order[op.induction_var] = len(order)
            if role in (HostRole.LOOP, HostRole.IF):
                visit(host_body_ops(op))

    visit(f.body.ops)
    return order


def _emit_kernel(f: FuncOp, launch: Operation, kname: str, names, options: Options, helpers: set[str],
                 headers: set[str]) -> tuple[str, KernelSpec]:
    if launch.dynamic_shared_memory is not None:
        raise EmitError("cannot emit 'gpu.launch' as CUDA: a dynamic_shared_memory_size operand is not supported",
                        launch.location)
    cluster = _block_size(launch, launch.cluster_size, "cluster size") if launch.cluster_size else None
    if cluster is not None and cluster[0] * cluster[1] * cluster[2] > MAX_CLUSTER_BLOCKS:
        raise EmitError(f"cannot emit 'gpu.launch' as CUDA: a cluster of {cluster} blocks is more than the portable "
                        f"{MAX_CLUSTER_BLOCKS}", launch.location)
    block = _block_size(launch)
    pr = CudaKernelPrinter(launch, Namer(names), options, headers, block)
    pr.cluster_size = cluster or (1, 1, 1)
    stored = {op.memref for op in launch.walk() if isinstance(op, MemRefAccessInterface) and op.is_write}
    stored |= {e.value for op in launch.walk() for e in op.memory_effects() or () if e.kind is EffectKind.WRITE}
    stored |= {view_source(v) for v in stored if v is not None}  # a store into a view writes its buffer
    order = _definition_order(f)
    host = sorted(_host_values(launch), key=lambda v: order.get(v, len(order)))
    params: list[KernelParam] = []
    for v in host:
        params += _param(pr, launch, v, v in stored)
    args = launch.body.args
    for k, a in enumerate(args):
        group, d = divmod(k, 3)
        if not a.uses:
            continue
        if group == 3:  # block sizes: constants
            pr.set_int(a, block[d])
            continue
        if group == 4:  # cluster ids: of the cluster the block is in, in the grid
            pr.define(a, f"(blockIdx.{'xyz'[d]} / {cluster[d]}u)")
            continue
        if group == 5:  # cluster sizes: constants
            pr.set_int(a, cluster[d])
            continue
        pr.define(a, f"{('blockIdx', 'threadIdx', 'gridDim')[group]}.{'xyz'[d]}")
    pr.hoist_shared(launch.body)
    pr.block(launch.body)
    live = live_values(pr.lines)
    helpers |= helpers_used(pr.lines, live)
    if any(p.kind == "tensormap" for p in params):
        helpers.add(TENSOR_MAP_STRUCT)
    shared_lines, static_bytes, dynamic_bytes = _shared_declarations(pr, live)
    body = shared_lines + render(pr.lines, live)
    nthreads = block[0] * block[1] * block[2]
    min_blocks = f", {pr.min_blocks}" if pr.min_blocks else ""
    bounds = f"__launch_bounds__({nthreads}{min_blocks}) " if nthreads <= MAX_THREADS else ""
    if cluster is not None:
        bounds += f"__cluster_dims__({cluster[0]}, {cluster[1]}, {cluster[2]}) "
    sig = ", ".join(_param_decl(p) for p in params)
    head = f'extern "C" __global__ void {bounds}{kname}({sig}) {{'
    if len(head) > 120 and params:
        head = f'extern "C" __global__ void {bounds}{kname}(\n    ' + ",\n    ".join(
            _param_decl(p) for p in params) + ") {"
    where = f" at {launch.location}" if launch.location else ""
    comment = f"// @{f.sym_name}: gpu.launch{where}; block ({block[0]}, {block[1]}, {block[2]})"
    text = "\n".join([comment, head, *body, "}"])
    need, reason = pr.min_arch or (None, "")
    spec = KernelSpec(kname, launch, params, block, static_bytes, dynamic_bytes, need,
                      f"kernel {kname}: {reason}" if need else "")
    return text, spec


def _param(pr: CudaKernelPrinter, launch: Operation, v: Value, stored: bool) -> list[KernelParam]:
    owner = v.owner
    if isinstance(owner, ConstantOp) and isinstance(v.type, (IndexType, IntegerType, FloatType)):
        if isinstance(v.type, FloatType):  # re-materialized: printed inline
            pr.literals[v] = float_literal(float(owner.value), v.type.name)
        else:
            pr.set_int(v, int(owner.value))
        return []
    t = v.type
    what = f"host value %{pr.namer.ir.get(v, '?')} : {t}"
    if isinstance(t, TensorMapDescriptorType):  # a CUtensorMap passed by value (see .hopper)
        name = pr.namer.name(v)
        pr.vars[v] = name
        return [KernelParam(v, "tensormap", TENSOR_MAP_CTYPE, None, name)]
    try:
        if isinstance(t, MemRefType):
            if not is_global(t):
                raise EmitError(f"cannot emit 'gpu.launch' as CUDA: {what} is not in global memory", launch.location)
            name = pr.namer.name(v)
            pr.use_type(t.element_type)
            ctype = ("" if stored else "const ") + storage_type(t.element_type) + "*"
            out = [KernelParam(v, "ptr", ctype, None, name)]
            dims: list = []
            for k, d in enumerate(t.shape):
                if d is None:
                    dn = pr.namer.fresh(f"{name}_dim{k}")
                    dims.append(dn)
                    out.append(KernelParam(v, "dim", "long long", k, dn))
                else:
                    dims.append(d)
            pr.mems[v] = MemInfo(name, dims, t, v)
            return out
        ctype = reg_type(t)
    except UnsupportedType as e:
        raise EmitError(f"cannot emit 'gpu.launch' as CUDA: {what}: {e}", launch.location) from None
    name = pr.namer.name(v)
    pr.vars[v] = name
    return [KernelParam(v, "scalar", ctype, None, name)]


def _param_decl(p: KernelParam) -> str:
    if p.kind == "ptr":
        return f"{p.ctype} __restrict__ {p.name}"
    return f"{p.ctype} {p.name}"


def _shared_declarations(pr: CudaKernelPrinter, live: set[Value]) -> tuple[list[str], int, int]:
    """The declarations of the workgroup buffers (and mbarrier groups) some kept line uses: static
    ``__shared__`` arrays, or, above :data:`STATIC_SHARED_LIMIT` bytes in all, pointers into dynamic
    shared memory. Each is aligned to 16 bytes or its own alignment (1024 for TMA/wgmma tiles); a
    dynamic base that must be aligned to more than 16 bytes is rounded up at run time (the launch
    requests the extra bytes)."""
    bufs = [(v, t) for v, t in pr.shared if v in live]
    sizes = [memref_bytes(t) for _, t in bufs]
    total = sum(sizes)
    aligns = [pr.shared_align.get(v, SHARED_ALIGN) for v, _ in bufs]
    ctypes = [pr.shared_ctype.get(v) or storage_type(t.element_type) for v, t in bufs]
    if total <= STATIC_SHARED_LIMIT:
        lines = [f"  __shared__ __align__({a}) {ct} {pr.mems[v].name}[{max(1, t.num_elements)}];"
                 for (v, t), a, ct in zip(bufs, aligns, ctypes)]
        return lines, total, 0
    base_align = max([SHARED_ALIGN, *aligns])
    lines = [""]
    offset = 0
    for (v, _), n, a, ct in zip(bufs, sizes, aligns, ctypes):
        a = max(a, SHARED_ALIGN)
        offset = -(-offset // a) * a
        lines.append(f"  {ct}* {pr.mems[v].name} = ({ct}*)(air_smem + {offset});")
        offset += n
    offset = -(-offset // SHARED_ALIGN) * SHARED_ALIGN
    if base_align == SHARED_ALIGN:
        lines[0] = f"  extern __shared__ __align__({SHARED_ALIGN}) unsigned char air_smem[];  // {offset} bytes"
        return lines, 0, offset
    pad = base_align - SHARED_ALIGN  # the dynamic base is 16-byte aligned at least
    lines[0:1] = [f"  extern __shared__ __align__({base_align}) unsigned char air_smem_base[];  // {offset} + "
                  f"{pad} bytes (alignment)",
                  f"  unsigned char* air_smem = air_smem_base + ((0u - (unsigned)__cvta_generic_to_shared("
                  f"air_smem_base)) & {base_align - 1}u);"]
    return lines, 0, offset + pad
