"""Compile affine IR for an NVIDIA GPU and run it: mapping, CUDA C, NVRTC, driver launches.

::

    import runtime
    k = runtime.cuda.compile(module, arch="sm_90")   # works without a GPU: k.source, k.image
    k(A, B, C)          # numpy arrays (copied in and back) or device arrays (CuPy, PyTorch): in place

Steps (each visible on the result): the pass pipeline (default :func:`default_pipeline` of the arch:
on sm_90 :data:`HOPPER_PIPELINE`, contractions of 16- and 8-bit floats on warpgroup MMA; else
:data:`DEFAULT_PIPELINE`; both the GPU pipeline of :mod:`transforms.pipelines`: fusion,
``gpu-schedule`` for contractions, ``gpu-map`` for every other nest, so every top-level loop nest
becomes a ``gpu.launch``; ``pipeline="gpu-map"`` is the unoptimized mapping) gives the mapped
module (``k.module``, its trace ``k.trace``); :func:`codegen.cuda.emit` prints CUDA C
(``k.source``, one ``__global__`` kernel per launch, ``k.kernels``); :func:`runtime.nvrtc.
compile_cuda` compiles it for ``arch`` (``k.image``). Calling ``k`` needs a GPU: the host function
is executed op by op -- constants and ``affine.apply``/``min``/``max`` of index values on the host,
``memref.alloc``/``dealloc`` as device buffers (pooled: a later call reuses an earlier one's,
``k.release_memory()`` frees them), each ``gpu.launch`` as a kernel launch with its grid computed
from the symbols -- then, when an argument is a numpy array, the device is synchronized and those
arrays are copied back (device arrays alone: the call returns with the kernels queued on the default
stream, as a PyTorch op does; temporaries go back to the pool at once, safe because the next call's
kernels run after these on the same stream). The first call with given scalar arguments and dims
records a launch plan (each launch checked and packed once); later calls with the same ones replay
it with their own pointers patched in, without interpreting the host function again. Arguments are
checked before anything runs (:class:`~runtime.errors.LaunchError` naming the argument), and every
launch against the device's limits (threads, shared memory, registers) before it is made. Arrays
whose memory overlaps, one of them written by the function, are refused (the kernels take
``__restrict__`` pointers), and so is a read-only array for a written memref
(:func:`runtime.arg_checks.written_arguments`); arrays only read may be shared or read-only.
"""

from __future__ import annotations

import contextlib
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from affine_ir import FuncOp, ModuleOp, Operation, Value
from affine_ir.traits import view_source
from affine_ir.types import MemRefType
from transforms.pipelines import GPU_PIPELINE, gpu_pipeline

from .arg_checks import written_arguments
from .entry import entry_function
from .errors import CompileError, LaunchError
from .launch_warnings import warn_sequential_launches

__all__ = ["DEFAULT_ARCH", "DEFAULT_PIPELINE", "HOPPER_PIPELINE", "CudaExecutable", "compile", "default_arch",
           "default_pipeline", "has_wgmma"]

DEFAULT_PIPELINE = GPU_PIPELINE
#: What sm_90 GPUs get (:func:`default_pipeline`): the GPU pipeline with ``gpu-map-mma{wgmma=true}``.
HOPPER_PIPELINE = gpu_pipeline(wgmma=True)
DEFAULT_ARCH = "sm_90"


def default_pipeline(arch: str) -> str:
    """The pass pipeline :func:`compile` runs for ``arch`` when given none: on sm_90 (Hopper) the H200's with
    contractions of f16/bf16/8-bit operands on warpgroup MMA (:data:`HOPPER_PIPELINE`), on newer GPUs
    :data:`DEFAULT_PIPELINE` (the H200's tiles and limits, ``mma.sync``: wgmma is sm_90a's only), below
    the A100's (``mma.sync`` tiles, nothing of sm_90): an sm_80 GPU gets the ``mma.sync`` path."""
    if has_wgmma(arch):
        return HOPPER_PIPELINE
    digits = "".join(ch for ch in arch if ch.isdigit())
    return DEFAULT_PIPELINE if not digits or int(digits) >= 90 else gpu_pipeline(target="a100")


def has_wgmma(arch: str) -> bool:
    """Whether ``arch`` (``sm_90``, ``sm_90a``...) is Hopper's, the only one with warpgroup MMA."""
    return "".join(ch for ch in arch if ch.isdigit()) == "90"


def default_arch() -> str:
    """The GPU's arch (``sm_90``...), else :data:`DEFAULT_ARCH` without one."""
    from . import cuda_driver

    return cuda_driver.device().arch if cuda_driver.gpu_available() else DEFAULT_ARCH


def compile(module: ModuleOp, *, fn: str | None = None, arch: str | None = None, pipeline: str | None = None,
            ptx: bool = False, options: Sequence[str] = (), contract: bool = True,
            fast_math: bool = True, trace_ir: bool = False) -> CudaExecutable:
    """Map, print and compile ``module`` (its entry function ``fn``) for ``arch`` (default: the
    GPU's own, else ``sm_90``; kernels using wgmma or setmaxnreg are compiled for ``sm_90a`` when it
    is sm_90, a CompileError for any other) with ``pipeline`` (default: :func:`default_pipeline` of
    ``arch``). Works without a GPU. ``contract`` (default, as nvcc's
    ``-fmad=true``) lets NVRTC fuse multiplies and adds into FMAs (each within half an ulp of
    the separate operations; exact when they are, e.g. on small integer-valued data);
    ``contract=False`` rounds every product, as the interpreter. ``fast_math`` (default) computes
    f32 math functions in f32 (CUDA's ``expf``, ``tanhf``...: within 2 ulp, what PyTorch uses);
    ``fast_math=False`` in double rounded once, equal to the interpreter (see
    :func:`codegen.cuda.emit`); both with ``contract=False`` give the interpreter's results.
    ``trace_ir``: the trace keeps the IR before and after every pass (off: times and decisions).
    Raises :class:`CompileError` (with the NVRTC log, options and numbered source) or
    :class:`transforms.TransformError`. Warns (:class:`runtime.SequentialLaunchWarning`, once per
    launch, naming the function, the nest's location and the dependence that forces it) for each
    loop nest the pipeline had to run on one thread (a 1x1x1 launch); launches of top-level
    statements without a loop get no warning."""
    from codegen import cuda as cuda_codegen
    from transforms import PassManager

    from . import nvrtc

    arch = arch or default_arch()
    pm = PassManager.parse(pipeline if pipeline is not None else default_pipeline(arch), capture_ir=trace_ir)
    mapped = pm.run(module)
    func = entry_function(mapped, fn)
    try:  # checks the host functions too, and the target against what the kernels need (sm_90a for wgmma)
        program = cuda_codegen.emit(mapped, contract=contract, fast_math=fast_math, arch=arch)
    except cuda_codegen.EmitError as e:
        raise CompileError(e.message, e.location) from None
    image = nvrtc.compile_cuda(program.source, program.arch, ptx=ptx, options=options, name=f"{func.sym_name}.cu")
    warn_sequential_launches(pm.trace.decisions)
    return CudaExecutable(mapped, func, program, image, pm.trace)


@dataclass
class _Buffer:
    """A device memref: its data pointer and its dims (for the dynamic ones)."""

    ptr: int
    dims: tuple[int, ...]
    owner: object = None  # a DeviceBuffer this executable allocated, or the prepared argument


@dataclass
class CudaExecutable:
    """A compiled program (see the module docstring). ``source``: the CUDA C; ``image``: the
    :class:`runtime.nvrtc.CudaImage`; ``kernels``: a :class:`codegen.cuda.KernelSpec` per launch."""

    module: ModuleOp
    function: FuncOp
    program: object
    image: object
    trace: object = None
    _functions: dict = field(default_factory=dict, repr=False)
    #: Device buffers of earlier calls' temporaries, free for the next call: ``nbytes -> [buffer]``.
    _pool: dict = field(default_factory=dict, repr=False)
    _pool_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: The launch plan of each (scalar arguments, dims) met so far (see :class:`_Plan`), at most
    #: :data:`PLANS` of them.
    _plans: dict = field(default_factory=dict, repr=False)
    _plan_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    bounds_guard = None  # runtime.compile's launch-time bounds checks (called with the arguments)
    _written: frozenset | None = field(default=None, repr=False)  # written_arguments(function), once

    @property
    def source(self) -> str:
        return self.program.source

    @property
    def kernels(self) -> list:
        return self.program.kernels

    @property
    def _vector_accesses(self) -> bool:
        """Whether a kernel uses vector structs (16-byte accesses need aligned base pointers)."""
        return "struct __align__" in self.program.source

    def __call__(self, *args) -> None:
        from . import cuda_driver

        with self._prepared(args) as (values, prepared):
            temporaries: list = []
            try:
                self._run(values, temporaries, cuda_driver)
                if any(a.host is not None for a in prepared):  # numpy arguments: copied back after the kernels
                    cuda_driver.synchronize()
            finally:
                for t in temporaries:
                    self._give(t)

    # -- launch plans: the host function interpreted once per shape ----------------------------------
    def _plan_key(self, values: dict) -> tuple:
        """What the host function's launches depend on: the scalar arguments and the memref dims
        (host values are computed from those alone; pointers are patched in per call)."""
        return tuple(v.dims if isinstance(v, _Buffer) else _exact(v) for v in (values[p] for p in self.function.args))

    def _run(self, values: dict, temporaries: list, drv) -> None:
        """Run the host function: replay the plan recorded for these scalars and dims, or interpret
        it (launching as it goes) and record its plan for the next calls."""
        key = self._plan_key(values)
        plan = self._plans.get(key)
        if plan is not None:
            plan.replay(self, values, temporaries, drv)
            return
        plan = _Plan([], [])
        self._run_host(values, temporaries, drv, plan=plan)
        if plan.replayable:
            with self._plan_lock:
                if len(self._plans) >= PLANS:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan

    # -- temporaries: pooled across calls ------------------------------------------------------
    def _take(self, nbytes: int, drv):
        """A device buffer of ``nbytes`` for a temporary: one an earlier call returned (its sizes
        are the same every call), else a new one. ``cuMemAlloc``/``cuMemFree`` per temporary per
        call cost more than the kernels of a small graph (``cuMemFree`` waits for the device)."""
        with self._pool_lock:
            free = self._pool.get(nbytes)
            if free:
                return free.pop()
        return drv.DeviceBuffer.alloc(nbytes)

    def _give(self, buf) -> None:
        """Return a temporary to the pool. Reusing it in the next call is safe: every launch goes to
        the same stream, so the next call's kernels run after this call's last use."""
        with self._pool_lock:
            self._pool.setdefault(buf.nbytes, []).append(buf)

    def release_memory(self) -> int:
        """Free the pooled temporaries (the next call allocates again); the bytes freed. Waits for the
        device first: a call on device arrays returns with its kernels queued, not done."""
        from . import cuda_driver

        with self._pool_lock:
            bufs = [b for free in self._pool.values() for b in free]
            self._pool.clear()
        if bufs:  # something ran (so there is a GPU): its last kernels may still use them
            cuda_driver.synchronize()
        for b in bufs:
            b.free()
        return sum(b.nbytes for b in bufs)

    @contextlib.contextmanager
    def _prepared(self, args):
        """The values of the function's arguments (device buffers for memrefs, checked), and the
        prepared arguments (numpy arrays copied back on normal exit)."""
        from . import cuda_arrays

        params = list(self.function.args)
        if len(args) != len(params):
            raise LaunchError(f"@{self.function.sym_name} takes {len(params)} arguments, got {len(args)}")
        mem = [k for k, p in enumerate(params) if isinstance(p.type, MemRefType)]
        values: dict[Value, object] = {}
        for k, p in enumerate(params):
            if not isinstance(p.type, MemRefType):
                values[p] = cuda_arrays.scalar_argument(args[k], p.type, k, _name(p))[1]
        if self._written is None:  # what the IR says, once
            self._written = written_arguments(self.function)
        written = self._written
        with cuda_arrays.prepare_arguments([args[k] for k in mem], [params[k].type for k in mem],
                                           [_name(params[k]) for k in mem], positions=mem,
                                           written=[k in written for k in mem]) as prepared:
            if self.bounds_guard is not None:
                self.bounds_guard(args)
            for k, dev in zip(mem, prepared):
                if self._vector_accesses and dev.ptr % 16:
                    raise LaunchError(f"argument #{k} ({_name(params[k])}) is not 16-byte aligned (a view with an "
                                      f"offset?): the kernels read it with 16-byte vector accesses; pass a copy")
                values[params[k]] = _Buffer(dev.ptr, _dims(params[k].type, dev.dynamic_dims), dev)
            yield values, prepared

    def bind(self, *args) -> BoundCall:
        """A call with ``args`` prepared once: checks, host index arithmetic, temporaries and the
        kernels' parameters are done now, and calling the result only launches the kernels on the
        default stream, in order, without waiting (as a PyTorch op does). For device arrays
        (PyTorch, CuPy, ``__cuda_array_interface__``) that must stay alive while it is used;
        numpy arguments are copied in now and back on :meth:`BoundCall.close`, which also frees
        the temporaries. Used to time the kernels alone."""
        from . import cuda_driver

        ctx = self._prepared(args)
        values, _ = ctx.__enter__()
        bound = BoundCall(ctx, [], [])
        try:
            self._run_host(values, bound.temporaries, _Recorder(cuda_driver, bound.launches), keep_temporaries=True)
        except BaseException:
            bound.close()
            raise
        return bound

    def _function(self, spec):
        from . import cuda_driver

        if spec.name not in self._functions:
            self._functions[spec.name] = cuda_driver.load_module(self.image).function(spec.name, len(spec.params))
        return self._functions[spec.name]

    def _run_host(self, values: dict, temporaries: list, drv, keep_temporaries: bool = False,
                  plan: _Plan | None = None) -> None:
        """Execute the host function: host values, allocations, launches, host loops of them.
        ``keep_temporaries`` (for :meth:`bind`): ``memref.dealloc`` frees nothing, the caller
        frees the temporaries after the last launch. ``plan``: record the launches into it."""
        specs = {k.launch: k for k in self.kernels}
        self._run_ops(self.function.body.ops, specs, values, temporaries, drv, keep_temporaries, plan)

    def _run_ops(self, ops, specs: dict, values: dict, temporaries: list, drv, keep_temporaries: bool,
                 plan: _Plan | None = None) -> None:
        """Interpret host ``ops``; with ``plan``, record the temporaries and launches into it."""
        from codegen.cuda import HostRole, host_if_branch, host_loop_range, host_role, host_value

        for op in ops:
            role = host_role(op)
            if role is HostRole.VALUE:
                values[op.results[0]] = host_value(op, values)
            elif role is HostRole.VIEW:  # memref.cast: the same buffer
                values[op.results[0]] = values[op.operands[0]]
            elif role is HostRole.TENSOR_MAP:
                values[op.results[0]] = _tensor_map(op, values)
            elif role is HostRole.ALLOCATE:
                t: MemRefType = op.results[0].type
                dynamic = iter(int(values[v]) for v in op.operands)
                dims = tuple(d if d is not None else next(dynamic) for d in t.shape)
                nbytes = max(1, _nbytes(t, dims))
                buf = drv.DeviceBuffer.alloc(nbytes) if keep_temporaries else self._take(nbytes, drv)
                temporaries.append(buf)
                values[op.results[0]] = _Buffer(buf.ptr, dims, buf)
                if plan is not None:
                    plan.allocate(op.results[0], nbytes)
            elif role is HostRole.FREE and not keep_temporaries:
                buf = values[op.operands[0]].owner
                if buf in temporaries:
                    temporaries.remove(buf)
                    self._give(buf)
            elif role is HostRole.LAUNCH:
                self._launch(specs[op], op, values, drv, plan)
            elif role is HostRole.LOOP:
                for iv in host_loop_range(op, values):
                    values[op.induction_var] = iv
                    self._run_ops(op.body.ops, specs, values, temporaries, drv, keep_temporaries, plan)
            elif role is HostRole.IF:
                branch = host_if_branch(op, values)
                if branch is not None:
                    self._run_ops(branch.ops, specs, values, temporaries, drv, keep_temporaries, plan)

    def _launch(self, spec, op: Operation, values: dict, drv, plan: _Plan | None = None) -> None:
        grid = tuple(int(values[v]) for v in op.grid_size)
        if min(grid) <= 0:  # a symbolic trip count <= 0: no block runs (as the interpreter)
            return
        args, pointers, maps = [], [], []
        for p in spec.params:
            if p.kind == "ptr":
                pointers.append((len(args), view_source(p.value)))
                args.append(("void*", values[p.value].ptr))
            elif p.kind == "dim":
                args.append(("long long", values[p.value].dims[p.dim]))
            elif p.kind == "tensormap":
                tm = values[p.value]
                maps.append((len(args), tm))
                args.append((p.ctype, drv.encode_tensor_map(tm.spec, tm.ptr, tm.what)))
            else:
                args.append((p.ctype, values[p.value]))
        shared = getattr(spec, "dynamic_shared_bytes", 0)
        if plan is None:
            drv.launch(self._function(spec), grid, spec.block, args, shared_bytes=shared)
            return
        prepared = drv.prepare_launch(self._function(spec), grid, spec.block, args, shared)
        prepared()
        plan.launches.append((prepared, pointers, maps))

    def time_ms(self, *args, repeat: int = 10, warmup: int = 1) -> float:
        """Median milliseconds of a whole call (CUDA events), after ``warmup`` calls."""
        from . import cuda_driver

        return cuda_driver.time_ms(lambda: self(*args), repeat=repeat, warmup=warmup)


def _name(v: Value) -> str:
    return f"%{v.name_hint}" if v.name_hint else ""


def _tensor_map(op: Operation, values: dict):
    """The host value of ``nvgpu.tma.create.descriptor``: the map's spec for the memref it describes
    (through ``memref.cast``) and this call's pointer (see :mod:`runtime.tensor_maps`)."""
    from .cuda_arrays import element_dtypes
    from .tensor_maps import TensorMapArg, TensorMapSpec

    root = view_source(op.operands[0])
    buf: _Buffer = values[op.operands[0]]
    t = op.results[0].type
    el = root.type.element_type
    spec = TensorMapSpec(str(el), element_dtypes(el)[0].itemsize, tuple(buf.dims),
                         tuple(int(values[v]) for v in op.box), t.swizzle, t.l2promo, t.oob, t.interleave)
    where = f" at {op.location}" if op.location else ""
    what = f"the TMA descriptor {_name(op.results[0]) or '(unnamed)'} of {_name(root) or 'a memref'}{where}"
    return TensorMapArg(spec, root, buf.ptr, what)


def _dims(t: MemRefType, dynamic: Sequence[int]) -> tuple[int, ...]:
    it = iter(dynamic)
    return tuple(d if d is not None else int(next(it)) for d in t.shape)


def _nbytes(t: MemRefType, dims: Sequence[int]) -> int:
    from .cuda_arrays import element_dtypes

    n = 1
    for d in dims:
        n *= d
    return n * element_dtypes(t.element_type)[0].itemsize


def _exact(value):
    """A scalar as a plan key: floats by their bits (-0.0 is not 0.0, a NaN equals itself)."""
    return ("f", struct.pack("<d", value)) if isinstance(value, float) else value


#: Launch plans kept per executable (one per distinct scalar arguments and dims).
PLANS = 8


@dataclass
class _Plan:
    """The launches one call made, replayable for every call with the same scalar arguments and
    memref dims (the host computes its values, grids and loop trip counts from those alone): each
    launch checked and packed once; a replay takes the temporaries from the pool, patches the
    pointer parameters (``pointers``: parameter position -> the memref value it is) and the tensor
    maps (``maps``: parameter position -> its TensorMapArg, encoded again for the memref's pointer
    in this call: a cache hit for a pointer seen before) and launches.
    Not replayable when an allocation runs twice in one call (inside a host loop)."""

    temps: list  # (alloc result, bytes), in allocation order
    launches: list  # (PreparedLaunch, [(position, memref Value)], [(position, TensorMapArg)])
    replayable: bool = True

    def allocate(self, value: Value, nbytes: int) -> None:
        if any(v is value for v, _ in self.temps):
            self.replayable = False
        self.temps.append((value, nbytes))

    def replay(self, exe: CudaExecutable, values: dict, temporaries: list, drv) -> None:
        ptrs = {}
        for v, nbytes in self.temps:
            buf = exe._take(nbytes, drv)
            temporaries.append(buf)
            ptrs[v] = buf.ptr
        with exe._plan_lock:  # the packed parameters are shared by the calls replaying this plan
            for prepared, pointers, maps in self.launches:
                packed = prepared.keep[0]
                for position, v in pointers:
                    packed[position].value = ptrs[v] if v in ptrs else values[v].ptr
                for position, tm in maps:
                    ptr = ptrs[tm.root] if tm.root in ptrs else values[tm.root].ptr
                    packed[position][:] = drv.encode_tensor_map(tm.spec, ptr, tm.what)
                prepared()


class _Recorder:
    """Stands for :mod:`runtime.cuda_driver` in :meth:`CudaExecutable._run_host`: allocations
    are real, launches are prepared (checked, packed) but only recorded."""

    def __init__(self, drv, launches: list):
        self._drv = drv
        self.DeviceBuffer = drv.DeviceBuffer
        self.encode_tensor_map = getattr(drv, "encode_tensor_map", None)
        self._launches = launches

    def launch(self, fn, grid, block, args, shared_bytes: int = 0) -> None:
        self._launches.append(self._drv.prepare_launch(fn, grid, block, args, shared_bytes))


class BoundCall:
    """Launches prepared by :meth:`CudaExecutable.bind`; ``close()`` (or ``with``) releases them."""

    def __init__(self, ctx, launches: list, temporaries: list):
        self._ctx = ctx
        self.launches = launches
        self.temporaries = temporaries

    def __call__(self) -> None:
        if self._ctx is None:
            raise LaunchError("this bound call is closed (its temporaries are freed); bind the arguments again")
        for prepared in self.launches:
            prepared()

    def close(self) -> None:
        for t in self.temporaries:
            t.free()
        self.temporaries = []
        if self._ctx is not None:
            ctx, self._ctx = self._ctx, None
            ctx.__exit__(None, None, None)

    def __enter__(self) -> BoundCall:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
