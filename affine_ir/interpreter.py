"""The reference interpreter: the exact semantics every transformation is tested against.

API
---
::

    import affine_ir as air
    air.interpret(module, A, B, C)                 # runs the entry function; arrays updated in place
    air.interpret(module, A, n, fn="kernel")       # a chosen function
    f = air.interpreter.compile_function(module)   # translate once, call many times
    f(A, B, C); f(A2, B2, C2)

``interpret(module_or_func, *args, fn=None)`` runs ``fn`` (default: the module's only
function with a body, else the only one that no other function calls; an ambiguity is an
error naming the candidates) and returns None, the single result, or a tuple of results.
Results come back as numpy scalars of their type (``np.float32``, ``np.float16``,
``ml_dtypes.bfloat16``, ``np.int32``...), ``bool`` for ``i1``, ``int`` for ``index``, numpy
arrays for vectors and memrefs.

Arguments are checked before anything runs: their count; memrefs must be numpy arrays of
the element dtype (f32 float32, f64 float64, f16 float16, bf16 ``ml_dtypes.bfloat16``,
i1 bool, i8..i64 int8..int64, index int64), rank and static dims; scalars are Python or
numpy numbers (integers for ``index``/``iN``, which must fit in the signed or unsigned
range of the width; integers or floats for ``fN``, rounded to the type). Memref
arguments are updated in place; a non-contiguous array is copied in and written back
afterwards (it must not share memory with another argument). Every mismatch raises
:class:`~affine_ir.InterpretError` naming the argument, e.g.
``argument #1 (%B): expected memref<64x64xf32>, got float64 array of shape (64, 64)``.

How it runs
-----------
Each ``func.func`` is translated once into a Python function (nested ``for`` loops over
``range``, SSA values as locals, affine index arithmetic inlined with floor semantics,
memref elements read and written through flat memoryviews with a linearized index) and
``exec``'d. Translations are cached, keyed by the module's printed text and its op
locations, so a module changed since it was last run is translated anew; a callable
from :func:`compile_function` keeps the semantics of the IR at the time it was made. An
access whose indices a range analysis of constant loop bounds proves in bounds is not
checked at run time; all others are. Throughput: see ``benchmarks/RESULTS.md``.

Values
------
- Floats of every type are Python floats holding exactly a value of the type. Each
  ``addf/subf/mulf/divf`` is computed in float64 and rounded once to the type (round to
  nearest, ties to even). For f32, f16 and bf16 this is the correctly rounded IEEE result:
  float64 has at least ``2p + 2`` bits for their precision ``p``, so the double rounding is
  innocuous for +, -, *, / and sqrt. f64 arithmetic is Python's. Rounding to f16/bf16 is
  done directly from float64 (never through f32). Constants are rounded to their type.
- Integers of width ``w`` (``index``: 64) are Python ints holding the signed reading of
  the bits, so every op wraps in two's complement; ``i1`` true is -1 (``extui`` gives 1,
  ``extsi``/``sitofp`` give -1 as in MLIR). Affine maps are evaluated on Python ints and
  the ``index`` results of ``affine.apply/min/max`` wrap to 64 bits like every index op, as
  the CPU and CUDA backends compute them (``3 * 2**62`` is ``-2**62``). A subscript expression is evaluated exactly,
  so one that leaves the memref is an out-of-bounds error.
- Vectors are numpy arrays of the element dtype; elementwise ops apply the scalar
  semantics to each element.

Ops
---
- ``divsi`` truncates toward zero, ``floordivsi``/``ceildivsi`` round down/up, ``remsi``
  has the dividend's sign, unsigned ops (``divui remui maxui minui shrui``, ``cmpi u*``,
  ``uitofp``, ``extui``) read the bits as unsigned. Division or remainder by zero, the
  signed overflow ``INT_MIN / -1`` of ``divsi/floordivsi/ceildivsi``, and a shift amount
  not below the width (MLIR: poison) raise InterpretError. ``remsi INT_MIN, -1`` is 0.
- ``divf`` by ±0 gives ±inf or NaN (no numpy warnings); ``remf`` is C ``fmod``;
  ``maximumf``/``minimumf`` propagate NaN and order -0.0 < +0.0; ``cmpf`` has all 16
  predicates (``o*`` false, ``u*`` true when an operand is NaN).
- Casts: ``sitofp/uitofp`` round once (also for 64-bit integers beyond 2**53);
  ``fptosi/fptoui`` truncate toward zero and raise for NaN, inf or an out-of-range result;
  ``extf`` is exact, ``truncf`` rounds to nearest even (overflow gives inf); ``extsi``,
  ``extui``, ``trunci``, ``index_cast`` (sign-extends or truncates) and ``bitcast`` act on
  the bits. NaN payloads are not guaranteed to survive (a signalling NaN may be quieted).
- math ops are computed in float64 (Python ``math`` with IEEE/C99 results for the
  special cases: ``log(0) = -inf``, ``log(x<0) = NaN``, ``sqrt(-0) = -0``, ``rsqrt(0) =
  inf``, ``exp`` overflow gives inf, ``powf`` as C ``pow``) and rounded once to the type;
  the float64 value of a transcendental function is not always correctly rounded, so the
  result may differ from a correctly rounded one in the last place in rare cases.
  ``fma`` is exact: the product and sum are computed in rational arithmetic and rounded
  once, for every type.
- ``affine.for``: from the max of the lower-bound results to the min of the upper-bound
  results, by the step; ``iter_args`` as in MLIR (zero iterations give the initial
  values). ``affine.parallel`` runs its iterations sequentially in lexicographic order;
  each result starts at the identity of its reduction (MLIR's
  ``arith::getIdentityValueAttr``: ``addf`` +0.0, ``mulf`` 1.0, ``maximumf`` -inf,
  ``minimumf`` +inf, ``addi``/``ori`` 0, ``muli`` 1, ``andi`` all ones, ``maxsi`` INT_MIN,
  ``minsi`` INT_MAX) and is combined with each iteration's yielded value in that order.
- ``vector.reduction`` combines the elements left to right starting with the first
  (for ``add`` this equals LLVM's ordered reduction starting from -0.0).
- ``memref.alloc``/``alloca`` (also with dynamic sizes) are zero-filled (MLIR leaves the
  contents undefined). ``memref.dealloc`` makes every later element access of that buffer,
  and a second dealloc, raise InterpretError; ``memref.dim`` still works.
- ``func.call`` calls functions of the same module (recursion included).
- ``gpu.launch`` runs its body for every block and thread (x fastest; blocks in order), with
  ``gpu.barrier`` synchronizing the threads of a block (each thread a generator paused at its
  barriers; threads reaching different barriers raise), one zero-filled buffer per block for a
  workgroup ``memref.alloc`` inside it, one per thread for ``memref.alloca``;
  ``affine_ir.interp.reversed_schedule()`` runs blocks and threads in reverse order (a race
  between threads then shows as a different result). Other gpu ops (shuffles, MMA) raise
  ``InterpretError("cannot interpret 'gpu.shuffle' ...")`` when reached.

Errors
------
Every failure is an :class:`~affine_ir.InterpretError` whose ``location`` is the failing
op's and whose message names the op, e.g. an out-of-bounds access::

    oob.mlir:3:5: error: 'affine.load' of %A[%i, %i + symbol(%n)]: index (2, 8) is out of
    bounds for memref<4x8xf32>

Limits: Python allows at most 20 nested blocks (loops and ifs) in a function, so deeper
nests cannot be translated; memref element types are index, i1, i8, i16, i32, i64, f16,
bf16, f32 and f64 (scalars of other integer widths work).

The implementation lives in :mod:`affine_ir.interp`.
"""

from __future__ import annotations

from .interp import CompiledFunction, compile_function, interpret

__all__ = ["CompiledFunction", "compile_function", "interpret"]
