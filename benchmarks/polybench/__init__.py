"""The 30 PolyBench/C 4.2 kernels as MLIR text (``<name>.mlir`` beside this file) and what it
takes to run and check them: sizes, inputs, a numpy reference, work counts, a PyTorch equivalent.

Each program is written from the kernel's published math (PolyBench/C 4.2.1, its ``kernel_*``
function), in f32, with the problem sizes as ``index`` arguments and ``?`` dimensions, so one
text runs at every dataset size. The function's arguments are, in order: the sizes (in the
order of :attr:`Kernel.params`), the f32 scalars (``alpha``, ``beta``, ...), the arrays. The
program updates its arrays in place, as the C kernel does.

A :class:`Kernel` holds its datasets (``MINI``, ``SMALL``, ``LARGE``: PolyBench's sizes),
:meth:`Kernel.arguments` (PolyBench's initialization, or small integers so results are exact
in f32 whatever the summation order), :attr:`Kernel.reference` (numpy, updating its arrays in
place, the same calling convention), the floating-point work and bytes moved of one run, and,
where a one-line equivalent exists, a PyTorch function of the same arguments (tensors)::

    import polybench                       # with benchmarks/ on sys.path
    k = polybench.KERNELS["gemm"]
    module = k.module()                    # parsed from benchmarks/polybench/gemm.mlir
    args = k.arguments("MINI", exact=True)
    k.reference(*args)                     # args' arrays now hold the result
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import affine_ir as air

__all__ = ["CATEGORIES", "DATASETS", "HERE", "KERNELS", "Kernel", "register"]

HERE = Path(__file__).resolve().parent
DATASETS = ("MINI", "SMALL", "LARGE")
CATEGORIES = ("linear-algebra/blas", "linear-algebra/kernels", "linear-algebra/solvers", "datamining", "medley",
              "stencils")


@dataclass(frozen=True)
class Kernel:
    """One PolyBench kernel.

    ``init(p, rng, exact)`` returns the argument list (ints for the sizes, ``np.float32`` scalars,
    ``float32`` arrays) for the sizes ``p`` (a dict of :attr:`params`): PolyBench's own
    initialization when ``exact`` is false; when true, small integers chosen so every
    intermediate value stays an integer below 2**24 where the kernel allows it (``exact_ok``).
    ``reference(*args)`` computes the kernel in numpy, in place. ``flops(p)`` counts floating-point
    operations, ``bytes(p)`` the bytes each array of the kernel is read or written once (the
    compulsory traffic). ``torch(*args)``: the same computation in PyTorch on tensors (same
    order), in place, or None. ``rtol``: the relative tolerance of a comparison with the reference
    on inexact data (division, square roots, exponentials; a different order of float sums)."""

    name: str
    category: str
    params: tuple[str, ...]
    sizes: dict[str, dict[str, int]]
    init: Callable
    reference: Callable
    flops: Callable[[dict], float]
    bytes: Callable[[dict], float]
    torch: Callable | None = None
    exact_ok: bool = True
    rtol: float = 1e-4
    notes: str = ""
    outputs: tuple[str, ...] = field(default=())

    @property
    def path(self) -> Path:
        return HERE / f"{self.name}.mlir"

    def text(self) -> str:
        """The program's MLIR text."""
        return self.path.read_text()

    def module(self, dataset: str | None = None, sizes: dict | None = None) -> air.ModuleOp:
        """The program, parsed (a new module on every call). With ``dataset`` (or ``sizes``) the
        sizes are compile-time constants, as PolyBench/C compiles them (``#define``): every use of
        a size argument reads an ``arith.constant`` of that value instead (the function keeps its
        arguments, so it is called the same way, and must be called with those sizes)."""
        module = air.parse(self.text(), filename=str(self.path))
        if dataset is None and sizes is None:
            return module
        p = dict(sizes) if sizes is not None else dict(self.sizes[dataset])
        return _with_constant_sizes(module, [p[name] for name in self.params])

    def arguments(self, dataset: str = "MINI", exact: bool = False, seed: int = 0, sizes: dict | None = None) -> list:
        """The argument list at ``dataset``'s sizes (or ``sizes``): see :attr:`init`."""
        p = dict(sizes) if sizes is not None else dict(self.sizes[dataset])
        return list(self.init(p, np.random.default_rng(seed), exact and self.exact_ok))


def _with_constant_sizes(module: air.ModuleOp, values: list[int]) -> air.ModuleOp:
    from affine_ir.attributes import IntegerAttr
    from affine_ir.dialects.arith import ConstantOp
    from affine_ir.types import index

    func = module.functions[0]
    for arg, value in zip(func.args, values):
        const = ConstantOp(IntegerAttr(value, index), name_hint=f"{arg.name_hint}_const")
        func.body.insert(0, const)
        for use in list(arg.uses):
            if use.op is not const:
                use.op.set_operand(use.index, const.results[0])
    from transforms import PassManager

    return PassManager.parse("canonicalize").run(module)


KERNELS: dict[str, Kernel] = {}


def register(kernel: Kernel) -> Kernel:
    """Add ``kernel`` to :data:`KERNELS` (its file must exist)."""
    if kernel.name in KERNELS:
        raise ValueError(f"PolyBench kernel {kernel.name!r} registered twice")
    if kernel.category not in CATEGORIES:
        raise ValueError(f"{kernel.name}: unknown category {kernel.category!r}")
    if set(kernel.sizes) != set(DATASETS):
        raise ValueError(f"{kernel.name}: sizes for exactly {DATASETS} are needed")
    KERNELS[kernel.name] = kernel
    return kernel


# -- helpers for the kernel modules ----------------------------------------------------------------------------
def f32(x) -> np.float32:
    return np.float32(x)


def small_ints(rng: np.random.Generator, shape, low: int = -2, high: int = 2) -> np.ndarray:
    """Integers in [low, high] as float32 (exact sums and products)."""
    return rng.integers(low, high + 1, size=shape).astype(np.float32)


def grid(shape, fn: Callable) -> np.ndarray:
    """``fn(*index arrays)`` over ``shape`` (PolyBench's ``A[i][j] = f(i, j)`` initializations), as float32."""
    return np.asarray(fn(*np.indices(shape, dtype=np.float64)), dtype=np.float64).astype(np.float32)


@functools.cache
def _load_all() -> None:
    from . import datamining, linalg_blas, linalg_kernels, medley, solvers, stencils  # noqa: F401


_load_all()
