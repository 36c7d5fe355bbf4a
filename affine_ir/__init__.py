"""affine_ir: an affine loop-nest IR whose text is MLIR's own syntax.

Public surface::

    import affine_ir as air
    m = air.parse(text)                # -> ModuleOp; ParseError / VerifyError with file:line:col
    str(m)                             # MLIR text; parse(str(m)) round-trips
    air.verify(m)
    air.interpret(m, *arrays, fn=None) # exact reference semantics
    air.library.matmul(64, 64, 64)     # named tensor ops -> ModuleOp
"""

from __future__ import annotations

from . import (
    dialects,  # noqa: F401  (registers every op)
    types,
)
from .affine_expr import AffineExpr, constant, dim, symbol
from .affine_map import AffineMap, IntegerSet
from .core import Block, BlockArgument, Operation, OpResult, Region, Value, structurally_equal
from .dialects.builtin import ModuleOp
from .dialects.func import FuncOp
from .dialects.unregistered import UnregisteredOp
from .errors import AffineError, InterpretError, IRError, Location, ParseError, VerifyError
from .interfaces import (
    AffineAccessInterface,
    AffineReadOpInterface,
    AffineWriteOpInterface,
    LoopLikeOpInterface,
    MemRefAccessInterface,
)
from .parser import parse as _parse_unverified
from .printer import print_op
from .traits import (
    AffineScope,
    AlwaysSpeculatable,
    Commutative,
    ConstantLike,
    EffectKind,
    IsolatedFromAbove,
    IsTerminator,
    KernelScope,
    MemoryEffect,
    NoMemoryEffect,
    OpTrait,
    Pure,
    RecursiveMemoryEffects,
    ReturnLike,
    SameOperandsAndResultType,
    SubgroupCollective,
    Synchronization,
    ViewLike,
    WarpgroupCollective,
    has_only_read_effects,
    is_memory_effect_free,
    is_trivially_dead,
    read_values,
    would_be_trivially_dead,
    written_values,
)
from .verifier import verify


def _distribution_version() -> str:
    """The installed distribution's version; ``"0+unknown"`` for a source tree never installed."""
    import importlib.metadata

    try:
        return importlib.metadata.version("affine-ir")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def parse(text: str, filename: str = "<string>", *, verify_ir: bool = True, line_offset: int = 0,
          allow_unregistered: bool = False) -> ModuleOp:
    """Parse MLIR text into a module and (by default) verify it.

    Raises :class:`ParseError` for bad text and :class:`VerifyError` for text that parses
    but breaks an invariant; both carry ``file:line:col``. ``allow_unregistered`` accepts
    ops of unregistered dialects in the generic form (``"test.foo"(%i) : (index) -> ()``)
    as opaque :class:`UnregisteredOp`, like ``mlir-opt --allow-unregistered-dialect``.
    """
    module = _parse_unverified(text, filename, line_offset, allow_unregistered)
    if verify_ir:
        verify(module)
    return module


def parse_file(path: str, *, verify_ir: bool = True, allow_unregistered: bool = False) -> ModuleOp:
    """Parse (and verify) the MLIR file at ``path``."""
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path, verify_ir=verify_ir, allow_unregistered=allow_unregistered)


def __getattr__(name: str):
    # Heavier parts load on first use.
    if name == "__version__":
        globals()["__version__"] = version = _distribution_version()  # importlib.metadata costs ~20 ms
        return version
    if name == "interpret":
        from .interpreter import interpret

        return interpret
    if name in ("library", "testing", "builder", "interpreter"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name == "Builder":
        from .builder import Builder

        return Builder
    raise AttributeError(f"module 'affine_ir' has no attribute {name!r}")


__all__ = [
    "AffineError", "AffineExpr", "AffineMap", "Block", "BlockArgument", "FuncOp", "IRError", "IntegerSet",
    "InterpretError", "Location", "ModuleOp", "OpResult", "Operation", "ParseError", "Region", "UnregisteredOp",
    "Value", "VerifyError", "constant", "dim", "parse", "parse_file", "print_op", "structurally_equal", "symbol",
    "types", "verify", "__version__",
    # traits, memory effects and interfaces (affine_ir.traits, affine_ir.interfaces)
    "AffineAccessInterface", "AffineReadOpInterface", "AffineScope", "AffineWriteOpInterface", "AlwaysSpeculatable",
    "Commutative", "ConstantLike", "EffectKind", "IsTerminator", "IsolatedFromAbove", "KernelScope",
    "LoopLikeOpInterface", "MemRefAccessInterface", "MemoryEffect", "NoMemoryEffect", "OpTrait", "Pure",
    "RecursiveMemoryEffects", "ReturnLike", "SameOperandsAndResultType", "SubgroupCollective", "Synchronization",
    "ViewLike", "WarpgroupCollective", "has_only_read_effects",
    "is_memory_effect_free", "is_trivially_dead", "read_values", "would_be_trivially_dead", "written_values",
]
