"""Random valid programs and differential checking, for property tests of every transform.

Usage (a transform must not change what a program computes)::

    from hypothesis import given
    from affine_ir.testing import assert_equivalent, programs_with_inputs

    @given(programs_with_inputs())
    def test_tile_preserves_semantics(case):
        module, args = case
        assert_equivalent(module, tile(module.clone()), args)

API
---
- :func:`programs` (``SearchStrategy[ModuleOp]``): one ``func.func @kernel`` whose
  arguments are memrefs (static shapes, f32/i32) then ``index`` symbols.
- :func:`inputs` (``module -> SearchStrategy[list]``), :func:`programs_with_inputs`.
- :func:`run` (interpret on copies, return the arrays and returned values),
  :func:`assert_equivalent` (exact comparison with a message naming the argument, the first
  differing index and both programs), :func:`program_features` (what a program contains).
- :func:`trace_accesses`: every access a function executes (op, IVs, element, read/write)
  for concrete symbol values -- the brute-force oracle for analyses.
- :data:`LIBRARY_CASES`, :data:`CPU_CASES`, :func:`library_inputs`: library ops at shapes and
  dtypes to test backends on, and their inputs (:mod:`.library_cases`).
- :data:`EXAMPLES`: fixed MLIR programs (matmul, producer/consumer, stencil, triangular...).
- :func:`fusion_programs` (``SearchStrategy[ModuleOp]``), :func:`fusion_programs_with_inputs`:
  programs shaped for loop fusion (:mod:`.fusion_programs`): 2..6 nests communicating through
  ``memref.alloc``'d temporaries and arguments in chains, diamonds, fan-outs, siblings,
  with offset/stencil, transposed and row reads, reductions, symbolic bounds, steps, and
  WAR/WAW/in-place/intervening nests; no temporary element is read before it is written.
  :func:`fusion_features` names what such a program contains; memory stays within
  :data:`ACC_BOUND`.

- :func:`program_options`, :func:`inputs_from_bytes` (``alias=True``: one array for two memref
  arguments of one type, :func:`aliased_pairs`), :func:`copy_arguments` (copies that keep aliasing).
- ``python -m affine_ir.testing.fuzz --minutes N``: the long fuzzing run (:mod:`.fuzz`): random
  programs x random pipelines, the CPU pipeline compiled, the GPU pipeline on the launch
  emulation in both thread orders, fusion modes; each case in a worker with a time limit;
  findings minimized and written as reproducers.

Options off by default (same bytes, same programs as before they existed): ``allow_aliasing``,
``allow_limits`` (loops near the ``index`` limits, IV + step past ``2**63 - 1``, 0..3 iterations,
only ``iv mod k`` reaching memory), ``allow_wide_minmax`` (bounds of up to 5 terms, constants
among them, in drawn orders, under loops of one iteration or none).

What the programs contain
-------------------------
Up to ``max_nests`` top-level nests sharing a small pool of memrefs (producer/consumer,
in-place updates, reductions into memory ``C[i] = C[i] + A[i, k]``), imperfect nests up to
depth 4, reduction loops with iter_args whose results are stored afterwards, guards
(``affine.if`` with and without else) and ifs yielding values.  Subscripts have offsets,
strides 2/3/-1, two IVs (``A[i + j]``), symbols, ``floordiv``/``mod`` by 2..4.  Bounds are
constants, symbols (``0 to %N``), outer IVs (``0 to %i + 1``), ``max``/``min`` of those,
steps 1..3.  Values: loads, constants, IV/symbol values (``index_cast``/``affine.apply``),
iter_args, add/sub/mul/max/min, ``select`` on a comparison, f32<->i32 conversions.

How every access stays in bounds
--------------------------------
A program is first drawn as a plan (:mod:`.plan`) whose index expressions use *global*
dims (one per loop) and symbols.  Each symbol takes values in :data:`SYMBOL_RANGE`
(``[0, 6]``, which is also what :func:`inputs` draws).  When a loop is drawn, the interval
of its IV follows from its bounds' intervals (:meth:`AffineExpr.bounds` over the outer
IVs' intervals): ``[max_k lo(lb_k), min_k hi(ub_k) - 1]``.  Every subscript's interval is
then known; each memref gets, per dimension, the static extent ``hi - lo + 1`` over all
its accesses and every subscript is shifted by that dimension's ``-lo``, so all accesses
(of one memref, by the same shift: dependences are unchanged) land in ``[0, extent)``.
Interval analysis is conservative, so this holds for every symbol value in range and
every iteration, guarded or not.  Trip counts stay small: a loop's extent ``ub - lb``
is capped (by adding ``lb + c`` to its ``min`` upper bound when needed) at
``max_trip * step`` (and 8), and a nest's iteration count at ``max_iterations``.

How every value stays exact
---------------------------
Inputs are integers in :data:`VALUE_RANGE` (``[-4, 4]``).  Each value expression carries
a proven magnitude bound; a product or sum whose bound would pass 2**16 becomes a
``max``; iter_args accumulate at most ``trips * bound``; a store whose value could leave
``[-16, 16]`` stores it clamped (``min(max(v, -16), 16)``), so memory always stays within
:data:`ELEMENT_BOUND` and every f32 intermediate is an integer below 2**24 (no rounding,
no overflow, no NaN; no division anywhere).
"""

from __future__ import annotations

from .checks import (
    assert_equivalent,
    assert_same_bits_in_both_thread_orders,
    copy_arguments,
    kernel_function,
    program_features,
    run,
)
from .examples import EXAMPLES
from .fusion_programs import ACC_BOUND, fusion_features, fusion_programs, fusion_programs_with_inputs
from .library_cases import CPU_CASES, LIBRARY_CASES, library_inputs, uses_inexact_ops
from .plan import ELEMENT_BOUND, INDEX_MAX, INDEX_MIN, SYMBOL_RANGE, VALUE_RANGE
from .strategies import (
    aliased_pairs,
    inputs,
    inputs_from_bytes,
    numpy_dtype,
    program_options,
    programs,
    programs_with_inputs,
)
from .trace import Access, TraceError, trace_accesses

__all__ = [
    "assert_same_bits_in_both_thread_orders",
    "Access", "TraceError", "trace_accesses",
    "ACC_BOUND", "fusion_features", "fusion_programs", "fusion_programs_with_inputs",
    "aliased_pairs", "copy_arguments", "INDEX_MAX", "INDEX_MIN", "inputs_from_bytes", "program_options",
    "ELEMENT_BOUND", "EXAMPLES", "SYMBOL_RANGE", "VALUE_RANGE", "assert_equivalent", "inputs", "kernel_function",
    "numpy_dtype", "program_features", "programs", "programs_with_inputs", "run",
    "CPU_CASES", "LIBRARY_CASES", "library_inputs", "uses_inexact_ops",
]
