"""CUDA C for mapped affine IR: ``codegen.cuda.emit(module) -> CudaProgram``.

Input: the output of ``gpu-map`` -- host functions whose top level holds only ``arith.constant``,
``affine.apply/min/max`` of host index values, ``memref.alloc/dealloc`` (global memory),
``memref.cast`` (to unranked) and ``nvgpu.tma.create.descriptor`` (TMA descriptors, encoded by the
runtime), ``gpu.launch``, loops of those (``affine.for`` without iter_args: the host runs them) and
``return``. Each ``gpu.launch`` becomes an ``extern "C" __global__`` function
``<function>_kernel<k>`` (``k`` counts the launches of one function); its body may hold
``affine.for/if/apply/min/max/load/store``, ``memref.load/store/dim``, ``memref.alloc`` in
``#gpu.address_space<workgroup>`` (static shape: a ``__shared__`` array hoisted to the kernel's
top), ``memref.alloca`` (a zero-filled local array), ``gpu.barrier`` (``__syncthreads()``),
``gpu.thread_id/block_id/block_dim/grid_dim``, every ``arith`` op and the ``math`` ops, and on
1-D vectors ``affine.vector_load/vector_store``, ``vector.broadcast/reduction`` and element-wise
``arith``/``math`` (see :mod:`.vector`: a struct per vector type, 16-byte accesses when provably
aligned); matrix units and asynchronous copies (see :mod:`.mma`): ``nvgpu.ldmatrix``,
``nvgpu.mma.sync``, ``nvgpu.device_async_copy/create_group/wait`` as inline PTX on 2-D fragment
vectors (with ``vector.extract/insert`` of one element), and the ``gpu.subgroup_mma_*`` ops through
the WMMA API (``<mma.h>``, m16n16k16); Hopper's mbarriers, TMA copies, warpgroup MMA (wgmma), the
``nvvm`` fences and waits and ``memref.view`` of byte buffers (see :mod:`.hopper`; a kernel using
wgmma or setmaxnreg needs the ``sm_90a`` target, recorded in ``KernelSpec.min_arch``). Anything
else (an unmapped loop nest on the host, other n-D
vector ops, ``affine.parallel`` inside a kernel, shuffles) raises :class:`EmitError` naming the op
and its location.

Kernel ABI (:class:`KernelSpec`)
--------------------------------
- A memref the body uses becomes a data pointer ``T* __restrict__`` (``const`` when the kernel
  never stores to it) followed by one ``long long`` per ``?`` dimension, in order; memrefs are
  row-major, contiguous, identity layout. Element types: f32 ``float``, f64 ``double``, f16
  ``__half``, bf16 ``__nv_bfloat16``, i1 ``bool``, i8/i16/i32/i64 ``signed char/short/int/long
  long``, index ``long long``.
- Another host value the body uses (a function argument, an ``affine.apply`` result) is a
  scalar parameter: ``long long`` for index, the C type of its integer type, ``float`` for f32
  **and for f16/bf16** (holding the exact 16-bit value), ``double`` for f64. Host constants are
  printed inline instead.
- A TMA descriptor (``nvgpu.tma.create.descriptor`` on the host) is a ``const __grid_constant__
  air_tensormap`` parameter: the 128-byte ``CUtensorMap``, passed by value.
- Parameters come in the order the host function defines the values (arguments first).
- ``block``: the launch's constant block sizes (``__launch_bounds__`` of their product);
  ``static_shared_bytes``: the bytes of the ``__shared__`` arrays; above 48 KiB in one kernel they
  move to ``extern __shared__`` memory and ``dynamic_shared_bytes`` says how much the launch must
  request.

Semantics
---------
One thread runs the launch body for its (block, thread) ids, as the interpreter's emulation
does, with the scalar semantics of :mod:`.scalar` (the CPU backend's: defined results where the
interpreter raises; f16/bf16 computed in f32 and rounded after each op; math functions in double
rounded once unless ``fast_math``; no FMA contraction unless ``contract``/``fast_math``) and
these differences: workgroup buffers are not zero-filled (MLIR leaves an alloc's contents
undefined; ``memref.alloca`` is zero-filled), accesses are not bounds-checked, and affine
expressions are evaluated in ``long long`` (the interpreter's are exact: valid programs do not
come near 2**63). Affine index arithmetic has floor semantics for
``floordiv``/``mod``/``ceildiv`` with negative operands (see :mod:`.affine_c`).

Readability: values keep their IR names as C identifiers (``%i`` -> ``i``, ``%2#1`` -> ``v2_1``),
constants are inlined, affine expressions are printed as such (``A[i * 64 + j]``, guards as
``j < N``), and declarations no kept statement reads are left out (NVRTC warns about them).
"""

from __future__ import annotations

from .errors import EmitError
from .host import HostRole, host_body_ops, host_if_branch, host_loop_range, host_role, host_value, launches_of
from .module import emit
from .program import CudaProgram, KernelParam, KernelSpec

__all__ = ["CudaProgram", "EmitError", "HostRole", "KernelParam", "KernelSpec", "emit", "host_body_ops",
           "host_if_branch", "host_loop_range", "host_role", "host_value", "launches_of"]
