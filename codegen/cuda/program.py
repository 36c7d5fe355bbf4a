"""What :func:`codegen.cuda.emit` returns: the CUDA C translation unit and, per kernel, what the
runtime needs to launch it (name, parameters in order, block size, shared memory)."""

from __future__ import annotations

from dataclasses import dataclass, field

from affine_ir.core import Operation, Value
from affine_ir.dialects.func import FuncOp


@dataclass
class KernelParam:
    """One parameter of a kernel, in the order of the ``__global__`` function's signature.

    - ``kind == "ptr"``: the data pointer of memref ``value`` (``ctype`` e.g. ``"float*"``, or
      ``"const float*"`` when the kernel only reads it; 8 bytes either way);
    - ``kind == "dim"``: the size (``long long``) of dimension ``dim`` of memref ``value`` -- ``dim``
      is the position in the memref's shape (a ``?`` dimension), so the runtime passes
      ``array.shape[dim]``; one follows the pointer for each ``?`` dim, in order;
    - ``kind == "scalar"``: the host value ``value`` itself (``long long`` for ``index``, ``int``
      for ``i32``, ``float`` for f32 -- and for f16/bf16, holding the exact 16-bit value --,
      ``double``, ``bool``, ``signed char``, ``short``, ``long long`` for i64);
    - ``kind == "tensormap"``: the TMA descriptor ``value`` (an ``nvgpu.tma.create.descriptor``
      result), ``ctype`` ``"const __grid_constant__ air_tensormap"``: the 128-byte ``CUtensorMap``
      passed by value, which the runtime encodes with ``cuTensorMapEncodeTiled`` for the call's
      pointer (see :mod:`runtime.tensor_maps`).
    """

    value: Value
    kind: str
    ctype: str
    dim: int | None = None
    name: str = ""


@dataclass
class KernelSpec:
    """One ``gpu.launch`` as an ``extern "C" __global__`` function.

    ``block`` is the launch's constant block size (x, y, z); the grid size is the launch's grid
    operands (host values: ``launch.grid_size``), evaluated by the caller. ``static_shared_bytes``:
    ``__shared__`` bytes declared in the kernel; when the workgroup buffers of one kernel exceed
    48 KiB they live in dynamic shared memory instead (``extern __shared__``): then
    ``static_shared_bytes`` is 0 and ``dynamic_shared_bytes`` is what the launch must request
    (after raising ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` to it). ``min_arch``: the
    architecture the kernel needs, None for any: ``"sm_90a"`` (wgmma, setmaxnreg: the sm_90a target
    only) or ``"sm_90"`` (TMA, mbarrier transactions, proxy fences: sm_90 or newer);
    ``min_arch_reason`` names the kernel and the first op that needs it.
    """

    name: str
    launch: Operation
    params: list[KernelParam]
    block: tuple[int, int, int]
    static_shared_bytes: int
    dynamic_shared_bytes: int = 0
    min_arch: str | None = None
    min_arch_reason: str = ""


@dataclass
class CudaProgram:
    """The result of :func:`codegen.cuda.emit`: one translation unit ``source`` holding every
    kernel (``kernels``, in program order: one per ``gpu.launch``) and the host ``functions``
    whose launches they are (the host side runs those, launching ``kernels`` at their ops).
    ``arch``: the architecture to compile for, when :func:`~codegen.cuda.emit` was given a target
    (see :meth:`arch_for`)."""

    source: str
    kernels: list[KernelSpec] = field(default_factory=list)
    functions: list[FuncOp] = field(default_factory=list)
    arch: str | None = None

    @property
    def min_arch(self) -> tuple[str | None, str]:
        """(the architecture the kernels need, the kernel and op that needs it): ``sm_90a`` before
        ``sm_90`` before None."""
        rank = {None: 0, "sm_90": 1, "sm_90a": 2}
        k = max(self.kernels, key=lambda k: rank[k.min_arch], default=None)
        return (k.min_arch, k.min_arch_reason) if k is not None else (None, "")

    def arch_for(self, target: str) -> str:
        """The architecture to compile the source for when the target is ``target``: ``sm_90`` (or
        ``compute_90``) becomes ``sm_90a`` when a kernel uses wgmma or setmaxnreg; raises
        :class:`~codegen.cuda.EmitError` naming the kernel and op when ``target`` cannot run them."""
        from .hopper import target_arch

        need, reason = self.min_arch
        return target_arch(target, need, reason)

    def __str__(self) -> str:
        return self.source

    def kernel_for(self, launch: Operation) -> KernelSpec:
        """The kernel made from ``launch`` (a ``gpu.launch`` op of one of ``functions``)."""
        for k in self.kernels:
            if k.launch is launch:
                return k
        raise KeyError(f"no kernel was made from {launch.name} at {launch.location}")
