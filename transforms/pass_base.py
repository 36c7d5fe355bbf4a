"""Passes: options as frozen-dataclass fields, a registry by MLIR pass name, decisions.

A pass is a frozen dataclass whose fields are its options (``tile_size`` is the option
``tile-size``); it is registered under its MLIR name with :func:`register_pass` and found
by :func:`get_pass` (pass modules are imported on first use, see :data:`PASS_MODULES`)::

    @register_pass
    @dataclass(frozen=True)
    class LoopTile(Pass):
        name = "affine-loop-tile"
        summary = "Tile affine loop nests"
        tile_size: int = option(0, "tile size for every loop of a band")

        def run_on_function(self, func, ctx):
            for band in bands(func):
                try:
                    tile_band(band, ...)
                    ctx.applied(band[0], "tiled (%i, %j) by 32x32")
                except TransformError as e:
                    ctx.refused(band[0], e)        # legal elsewhere: go on

Every pass records its decisions (applied / refused / note, each with the op's location
and the reason) in the :class:`PassContext` it is given; the pass manager keeps them in
the trace.
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from affine_ir import FuncOp, Location, ModuleOp, Operation

from .errors import PipelineError, TransformError

__all__ = [
    "PASS_MODULES", "Decision", "Pass", "PassContext", "PassOption", "all_passes", "get_pass", "option",
    "register_pass",
]

#: MLIR pass name -> module of this package defining it (imported on first use).
PASS_MODULES: dict[str, str] = {
    "canonicalize": "cleanup.canonicalize",
    "cse": "cleanup.cse",
    "dce": "cleanup.dce",
    "affine-loop-normalize": "loops.normalize",
    "affine-loop-tile": "loops.tile",
    "affine-loop-permute": "loops.permute",
    "affine-loop-distribute": "loops.distribute",
    "affine-loop-skew": "loops.skew",
    "affine-loop-unroll": "loops.unroll",
    "affine-loop-unroll-jam": "loops.unroll_jam",
    "affine-scalrep": "memory.scalrep",
    "affine-privatize": "memory.privatize",
    "affine-loop-invariant-code-motion": "loops.licm",
    "affine-data-copy-generate": "memory.copy_generation",
    "affine-parallelize": "loops.parallelize",
    "affine-loop-fusion": "fusion.fuse",
    "affine-reduce-reduce-fusion": "fusion.fuse_reductions",
    "gpu-map": "gpu.gpu_map",
    "gpu-map-reductions": "gpu.gpu_reduce",
    "gpu-expose-parallelism": "gpu.expose_parallelism",
    "gpu-sink-ifs": "gpu.sink_ifs",
    "affine-super-vectorize": "cpu.vectorize",
    "cpu-schedule": "cpu.schedule_cpu",
    "gpu-schedule": "gpu.schedule_gpu",
    "gpu-map-mma": "gpu.map_mma",
    "affine-check-bounds": "verify.check_bounds",
}

_REGISTRY: dict[str, type[Pass]] = {}


def option(default: Any, help: str, *, default_factory=None) -> Any:
    """A pass option: a dataclass field with its help text (shown by ``affine-opt --help``)."""
    if default_factory is not None:
        return field(default_factory=default_factory, metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class Decision:
    """One decision of a pass: ``kind`` is ``"applied"``, ``"refused"`` or ``"note"``; ``detail``
    a structured record of it for programs that read the trace (e.g. gpu-map's
    :class:`~transforms.gpu.SequentialLaunch`), None for most decisions."""

    pass_name: str
    kind: str
    message: str
    location: Location | None = None
    op_name: str = ""
    error: TransformError | None = field(default=None, compare=False, repr=False)
    detail: Any = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.pass_name}: {self.kind}: {self.message}"


class PassContext:
    """Where a running pass records its decisions (see :class:`Decision`)."""

    def __init__(self, pass_name: str):
        self.pass_name = pass_name
        self.decisions: list[Decision] = []

    def _record(self, kind: str, op: Operation | None, message: str, error=None, detail=None) -> Decision:
        d = Decision(self.pass_name, kind, message, op.location if op is not None else None,
                     op.name if op is not None else "", error, detail)
        self.decisions.append(d)
        return d

    def applied(self, op: Operation | None, message: str) -> Decision:
        """Record a transformation done at ``op`` (e.g. ``tiled (%i, %j) by 32x32``)."""
        return self._record("applied", op, message)

    def refused(self, op: Operation | None, error: TransformError | str) -> Decision:
        """Record a request refused at ``op``, with the reason (the error's, without the pass name)."""
        if isinstance(error, TransformError):
            return self._record("refused", op, error.reason, error)
        return self._record("refused", op, error)

    def note(self, op: Operation | None, message: str, detail: Any = None) -> Decision:
        """Record a choice or a fact (e.g. ``tile sizes 64x64 from a 48 KiB working set``), with an
        optional structured ``detail`` (see :class:`Decision`)."""
        return self._record("note", op, message, detail=detail)

    @property
    def refusals(self) -> list[Decision]:
        return [d for d in self.decisions if d.kind == "refused"]


@dataclass(frozen=True)
class PassOption:
    """An option of a pass, for help and parsing: MLIR name, field name, type, default, help."""

    name: str
    field_name: str
    type: Any
    default: Any
    help: str

    @property
    def type_name(self) -> str:
        return _type_name(self.type)


@dataclass(frozen=True)
class Pass:
    """Base of passes: subclasses are frozen dataclasses whose fields are the options.

    Override :meth:`run_on_function` (called for each ``func.func``) or :meth:`run_on_module`.
    A pass mutates the module it is given in place (the pass manager gives it a copy).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def run_on_module(self, module: ModuleOp, ctx: PassContext) -> None:
        for func in module.functions:
            self.run_on_function(func, ctx)

    def run_on_function(self, func: FuncOp, ctx: PassContext) -> None:
        raise NotImplementedError(f"pass {self.name} defines neither run_on_module nor run_on_function")

    @classmethod
    def options(cls) -> list[PassOption]:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            out.append(PassOption(f.name.replace("_", "-"), f.name, hints[f.name], default,
                                  f.metadata.get("help", "")))
        return out

    @classmethod
    def from_options(cls, options: dict[str, str], text: str = "", column: int | None = None) -> Pass:
        """The pass with options given as MLIR option text (``{"tile-size": "32"}``)."""
        known = {o.name: o for o in cls.options()}
        values = {}
        for key, raw in options.items():
            opt = known.get(key) or known.get(key.replace("_", "-"))
            if opt is None:
                names = ", ".join(known) or "none"
                raise PipelineError(f"pass '{cls.name}' has no option '{key}' (options: {names})", text, column)
            values[opt.field_name] = parse_option_value(cls.name, opt, raw, text, column)
        try:
            return cls(**values)
        except (TypeError, ValueError) as e:
            raise PipelineError(f"pass '{cls.name}': {e}", text, column) from None

    def option_text(self) -> str:
        """The options that differ from the defaults, in MLIR syntax (``{tile-size=32}``), or ''."""
        parts = []
        for opt in self.options():
            value = getattr(self, opt.field_name)
            if value != opt.default:
                parts.append(f"{opt.name}={format_option_value(value)}")
        return "{" + " ".join(parts) + "}" if parts else ""

    def __str__(self) -> str:
        return self.name + self.option_text()


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: register ``cls`` under ``cls.name`` (an MLIR pass name)."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no pass name")
    _REGISTRY[cls.name] = cls
    return cls


def get_pass(name: str) -> type[Pass] | None:
    """The pass class registered under ``name`` (importing its module on first use), or None."""
    if name not in _REGISTRY and name in PASS_MODULES:
        try:
            importlib.import_module(f"{__package__}.{PASS_MODULES[name]}")
        except ModuleNotFoundError as e:
            if e.name != f"{__package__}.{PASS_MODULES[name]}":
                raise
    return _REGISTRY.get(name)


def all_passes() -> dict[str, type[Pass]]:
    """Every available pass by name, sorted by name."""
    for name in PASS_MODULES:
        get_pass(name)
    return dict(sorted(_REGISTRY.items()))


def _type_name(t) -> str:
    origin = typing.get_origin(t)
    if origin in (tuple, list):
        args = [a for a in typing.get_args(t) if a is not Ellipsis]
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        args = [a for a in typing.get_args(t) if a is not type(None)]
        return _type_name(args[0]) if len(args) == 1 else " or ".join(_type_name(a) for a in args)
    return {int: "integer", bool: "boolean", float: "number", str: "string"}.get(t, getattr(t, "__name__", str(t)))


def _scalar(pass_name: str, opt: PassOption, t, raw: str, text: str, column: int | None):
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        raw = raw[1:-1]
    try:
        if t is bool:
            if raw.lower() in ("true", "1", "on", ""):
                return True
            if raw.lower() in ("false", "0", "off"):
                return False
            raise ValueError
        if t is int:
            return int(raw, 0)
        if t is float:
            return float(raw)
        return raw
    except ValueError:
        raise PipelineError(f"pass '{pass_name}': option '{opt.name}' expects {_type_name(t)}, got '{raw}'",
                            text, column) from None


def parse_option_value(pass_name: str, opt: PassOption, raw: str, text: str = "", column: int | None = None):
    """The value of option ``opt`` from its MLIR text (``32``, ``true``, ``32,16``); PipelineError if bad."""
    t = opt.type
    origin = typing.get_origin(t)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        t = next(a for a in typing.get_args(t) if a is not type(None))
        origin = typing.get_origin(t)
    if origin in (tuple, list):
        (elem,) = [a for a in typing.get_args(t) if a is not Ellipsis][:1] or [str]
        raw = raw.strip()
        if raw.startswith("{") and raw.endswith("}"):
            raw = raw[1:-1]
        items = [s for s in raw.split(",") if s.strip()] if raw.strip() else []
        return tuple(_scalar(pass_name, opt, elem, s, text, column) for s in items)
    return _scalar(pass_name, opt, t, raw, text, column)


def format_option_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(format_option_value(v) for v in value)
    return str(value)
