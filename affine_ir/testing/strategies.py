"""The public hypothesis strategies: random programs and their inputs."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..dialects.builtin import ModuleOp
from ..types import FloatType, IndexType, IntegerType, MemRefType, Type
from .build import build_module
from .checks import kernel_function
from .generate import Options, plans
from .plan import SYMBOL_RANGE, VALUE_RANGE

__all__ = ["inputs", "numpy_dtype", "programs", "programs_with_inputs"]


def programs(max_depth: int = 4, max_nests: int = 3, max_statements: int = 4,
             element_types: tuple[str, ...] = ("f32", "i32"), allow_symbols: bool = True, allow_if: bool = True,
             allow_iter_args: bool = True, allow_minmax: bool = True, allow_divmod: bool = True, max_step: int = 3,
             max_trip: int = 6, max_iterations: int = 48, max_memrefs: int = 4) -> st.SearchStrategy[ModuleOp]:
    """Random valid modules holding one ``func.func @kernel(memrefs..., index symbols...)``.

    Guarantees: the module verifies; interpreted with arguments from :func:`inputs` every
    access is in bounds (no InterpretError) and every value is an integer of magnitude
    < 2**24, so f32 results are exact.

    - ``max_depth``: deepest loop nesting (iter_args loops count);
    - ``max_nests``: top-level items (loop nests, rarely a lone store, reduction or guard);
    - ``max_statements``: stores per top-level item;
    - ``element_types``: memref element types drawn from (``"f32"``, ``"i32"``);
    - ``allow_symbols``/``allow_if``/``allow_iter_args``/``allow_minmax``/``allow_divmod``:
      index arguments in bounds and subscripts, ``affine.if`` (guards and ifs with results),
      reduction loops with iter_args, ``max``/``min`` bounds, ``floordiv``/``mod`` subscripts;
    - ``max_step``: loop steps are 1..max_step (3 at most);
    - ``max_trip``: iterations of one loop; ``max_iterations``: iterations of a whole nest;
    - ``max_memrefs``: memrefs to choose from (fewer means more sharing between nests).
    """
    opts = Options(max_depth, max_nests, max_statements, tuple(element_types), allow_symbols, allow_if,
                   allow_iter_args, allow_minmax, allow_divmod, max_step, max_trip, max_iterations, max_memrefs)
    return plans(opts).map(build_module)


_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i1": np.bool_, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64}


def numpy_dtype(t: Type) -> np.dtype:
    """The numpy dtype holding elements of type ``t``."""
    if str(t) == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if str(t) not in _DTYPES:
        raise ValueError(f"no numpy dtype for {t}")
    return np.dtype(_DTYPES[str(t)])


def _array(shape: tuple[int, ...], dtype: np.dtype, position: int):
    lo, hi = VALUE_RANGE
    if dtype == np.bool_:
        lo, hi = 0, 1

    def make(seed: int) -> np.ndarray:
        # Seeded by (seed, position): arguments drawing the same seed still differ.
        return np.random.default_rng([seed, position]).integers(lo, hi + 1, size=shape).astype(dtype)

    return st.integers(0, 2**32 - 1).map(make)


def _argument(t: Type, position: int) -> st.SearchStrategy:
    if isinstance(t, MemRefType):
        if not t.has_static_shape:
            raise ValueError(f"cannot make an input for {t}: dynamic dims")
        return _array(tuple(t.shape), numpy_dtype(t.element_type), position)
    if isinstance(t, IndexType):
        return st.integers(*SYMBOL_RANGE)
    if isinstance(t, IntegerType):
        return st.integers(*VALUE_RANGE) if t.width > 1 else st.integers(0, 1)
    if isinstance(t, FloatType):
        return st.integers(*VALUE_RANGE).map(float)
    raise ValueError(f"cannot make an input of type {t}")


def inputs(module: ModuleOp, fn: str | None = None) -> st.SearchStrategy[list]:
    """Arguments for ``fn`` (default: the first function): numpy arrays of the memref
    shapes and dtypes holding integers in :data:`VALUE_RANGE` (filled from a drawn seed),
    ints in :data:`SYMBOL_RANGE` for ``index`` arguments, small integers for scalars."""
    f = kernel_function(module, fn)
    return st.tuples(*(_argument(a.type, k) for k, a in enumerate(f.args))).map(list)


def programs_with_inputs(**kw) -> st.SearchStrategy[tuple[ModuleOp, list]]:
    """``(module, args)`` pairs: :func:`programs` (same keywords) with :func:`inputs` for it."""
    return programs(**kw).flatmap(lambda m: inputs(m).map(lambda args: (m, args)))
