"""LLVM IR for the CPU, built with ``llvmlite.ir``: ``codegen.llvm.emit(module) -> LLVMModule``.

Input: affine IR as the passes leave it (``affine.for/if/parallel/apply/min/max/load/store/
vector_load/vector_store``, ``memref.load/store/alloc/alloca/dealloc/dim``, every ``arith``
op, the ``math`` ops, ``vector.broadcast/reduction``, ``func.call/return``). Memory spaces
are plain memory on the CPU. GPU ops and anything else raise :class:`EmitError` naming the
op and its location.

Calling convention
------------------
IR function ``@f`` becomes LLVM function ``@air.f``:

- each **memref** argument becomes a data pointer (``ptr``, ``noalias`` unless
  ``emit(noalias=False)``, ``align`` of the element) followed by one ``i64`` per dynamic
  (``?``) dimension of its type, in order; the memref is row-major, contiguous, identity
  layout. f16/bf16 elements are stored as 16-bit patterns, i1 as one byte, index as i64;
- an **index** argument is an ``i64``, ``iN`` an ``iN``, f32/f64 a ``float``/``double``;
  f16/bf16 scalars are passed as a ``float`` holding the exact 16-bit value;
- **results**: none -> ``void``; one -> returned directly; several -> an LLVM literal
  struct. Memref, vector results and vector arguments are not supported.

For the host, ``@air.f.entry(ptr args, ptr frame, i64 lo, i64 hi, ptr out)`` takes every
parameter packed in 8-byte slots and writes the results to ``out``; see
:class:`FunctionABI` and, for threads, :class:`SegmentABI` and :mod:`.segments`.

Semantics
---------
What the reference interpreter computes, with these documented differences: integer
division/remainder by zero, ``INT_MIN / -1``, oversized shifts and out-of-range
``fptosi/fptoui`` give defined values instead of an error (see :mod:`.arith`); math
functions of 32/16-bit floats are inline double-precision polynomials rounded once (equal to
the interpreter but for values within 2**-50 of a rounding midpoint), the rest go through
libm in double (see :mod:`.mathops`, :mod:`.vector_math`); accesses are not
bounds-checked; a deallocated buffer is not detected. Index arithmetic
(``floordiv``/``ceildiv``/``mod``) has floor semantics for negative operands, exactly as
``AffineExpr.evaluate``. No fast-math unless ``emit(..., fast_math=True)``.
"""

from __future__ import annotations

from .abi import FailureSite, FunctionABI, LLVMModule, ParamABI, SegmentABI
from .emitter import ALLOC_LIMIT_SYMBOL, FAILURE_SYMBOL, NO_ALLOC_LIMIT
from .errors import EmitError
from .module import emit

__all__ = ["ALLOC_LIMIT_SYMBOL", "FAILURE_SYMBOL", "NO_ALLOC_LIMIT",
           "EmitError", "FailureSite", "FunctionABI", "LLVMModule", "ParamABI", "SegmentABI", "emit"]
