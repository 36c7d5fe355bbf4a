"""The public hypothesis strategies: random programs and their inputs."""

from __future__ import annotations

import inspect

import numpy as np
from hypothesis import strategies as st

from ..dialects.builtin import ModuleOp
from ..floats import EIGHT_BIT, bfloat16_dtype, numpy_float_dtype
from ..types import FloatType, IndexType, IntegerType, MemRefType, Type
from .build import build_module
from .checks import kernel_function
from .generate import Options, plan_bytes, plan_from_bytes, plans
from .plan import SYMBOL_RANGE, VALUE_RANGE

__all__ = ["INPUT_BYTES", "aliased_pairs", "inputs", "inputs_from_bytes", "numpy_dtype", "program_options",
           "programs", "programs_with_inputs"]


def programs(max_depth: int = 4, max_nests: int = 3, max_statements: int = 4,
             element_types: tuple[str, ...] = ("f32", "i32"), allow_symbols: bool = True, allow_if: bool = True,
             allow_iter_args: bool = True, allow_minmax: bool = True, allow_divmod: bool = True, max_step: int = 3,
             max_trip: int = 6, max_iterations: int = 48, max_memrefs: int = 4, allow_aliasing: bool = False,
             allow_limits: bool = False, allow_wide_minmax: bool = False) -> st.SearchStrategy[ModuleOp]:
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
    - ``max_memrefs``: memrefs to choose from (fewer means more sharing between nests);
    - ``allow_aliasing``: usually two memrefs get one type (rank, shape, element type), so one
      array can be passed for both (:func:`inputs_from_bytes` with ``alias=True``);
    - ``allow_limits``: loops whose bounds and steps lie near the ``index`` limits (``2**62`` ..
      ``2**63 - 1``, negative lower bounds, IV + step passing ``2**63 - 1``) running 0..3
      iterations, with an iter_args counter; only ``iv mod k`` reaches memory, so every
      access stays in bounds and every value small;
    - ``allow_wide_minmax``: ``max``/``min`` bounds of up to 5 terms (constants among them, in
      drawn orders) and many loops of a single iteration (or none) around them.

    The three ``allow_*`` options added last are off by default: programs drawn without them
    are exactly those drawn before they existed (same bytes, same program).
    """
    return plans(_options(locals())).map(build_module)


def _options(kw: dict) -> Options:
    names = inspect.signature(programs).parameters
    return Options(**{name: tuple(kw[name]) if name == "element_types" else kw[name] for name in names})


_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i1": np.bool_, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64}


def numpy_dtype(t: Type) -> np.dtype:
    """The numpy dtype holding elements of type ``t``."""
    if str(t) == "bf16":
        return bfloat16_dtype()
    if str(t) in EIGHT_BIT:
        return numpy_float_dtype(str(t))
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


def programs_with_inputs(alias: bool = False, **kw) -> st.SearchStrategy[tuple[ModuleOp, list]]:
    """``(module, args)`` pairs: :func:`programs` (same keywords) with arguments as
    :func:`inputs` makes them; ``alias=True`` (which implies ``allow_aliasing``) passes one
    array for two memref arguments of one type when the program has such a pair.
    Program and arguments come from one drawn byte string (the
    arguments from its last :data:`INPUT_BYTES`, see :func:`inputs_from_bytes`): drawing the
    arguments separately (``flatmap``) let hypothesis spend most examples varying the
    arguments of a few programs (300 examples gave 87 distinct programs)."""
    opts = program_options(allow_aliasing=alias or kw.pop("allow_aliasing", False), **kw)
    size = plan_bytes(opts)

    def make(data: bytes) -> tuple[ModuleOp, list]:
        m = build_module(plan_from_bytes(data[:size], opts))
        return m, inputs_from_bytes(m, data[size:], alias=alias)

    return st.binary(min_size=size + INPUT_BYTES, max_size=size + INPUT_BYTES).map(make)


def program_options(**kw) -> Options:
    """The generator options that :func:`programs` takes as keywords (the others at their defaults);
    TypeError names unknown keywords."""
    params = inspect.signature(programs).parameters
    unknown = set(kw) - set(params)
    if unknown:
        raise TypeError(f"unexpected program options {sorted(unknown)}")
    return _options({name: kw.get(name, p.default) for name, p in params.items()})


def aliased_pairs(module: ModuleOp, fn: str | None = None) -> list[tuple[int, int]]:
    """Positions ``(a, b)``, ``a < b``, of memref arguments of ``fn`` with identical types
    (one array can be passed for both)."""
    args = kernel_function(module, fn).args
    return [(a, b) for a in range(len(args)) for b in range(a + 1, len(args))
            if isinstance(args[a].type, MemRefType) and args[a].type == args[b].type]


#: Bytes of a drawn byte string that :func:`inputs_from_bytes` reads.
INPUT_BYTES = 16


def inputs_from_bytes(module: ModuleOp, data: bytes, fn: str | None = None, alias: bool = False) -> list:
    """Arguments for ``fn`` (default: the first function) made from ``data`` (at least
    :data:`INPUT_BYTES`): the same kinds of values as :func:`inputs` (arrays of integers in
    :data:`VALUE_RANGE` seeded by ``data[:4]`` and the argument's position, ``index``
    arguments in :data:`SYMBOL_RANGE` and scalars from the following bytes). With ``alias``,
    one of the :func:`aliased_pairs` (chosen by ``data[4]``) gets one array for both positions."""
    seed = int.from_bytes(data[:4], "little")
    extra = list(data[4:]) or [0]
    out: list = []
    for k, a in enumerate(kernel_function(module, fn).args):
        t, byte = a.type, extra[k % len(extra)]
        if isinstance(t, MemRefType):
            if not t.has_static_shape:
                raise ValueError(f"cannot make an input for {t}: dynamic dims")
            dtype = numpy_dtype(t.element_type)
            lo, hi = (0, 1) if dtype == np.bool_ else VALUE_RANGE
            out.append(np.random.default_rng([seed, k]).integers(lo, hi + 1, size=tuple(t.shape)).astype(dtype))
        elif isinstance(t, IndexType):
            out.append(SYMBOL_RANGE[0] + byte % (SYMBOL_RANGE[1] - SYMBOL_RANGE[0] + 1))
        elif isinstance(t, IntegerType):
            lo, hi = VALUE_RANGE if t.width > 1 else (0, 1)
            out.append(lo + byte % (hi - lo + 1))
        elif isinstance(t, FloatType):
            out.append(float(VALUE_RANGE[0] + byte % (VALUE_RANGE[1] - VALUE_RANGE[0] + 1)))
        else:
            raise ValueError(f"cannot make an input of type {t}")
    pairs = aliased_pairs(module, fn) if alias else []
    if pairs:
        a, b = pairs[extra[0] % len(pairs)]
        out[b] = out[a]
    return out
