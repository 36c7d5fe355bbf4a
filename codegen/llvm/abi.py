"""What the runtime needs to know to call emitted code: per function its parameters, results,
packed entry point and thread segments. Plain data, serializable to JSON (the disk cache)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from affine_ir.errors import Location


@dataclass(frozen=True)
class FailureSite:
    """What can fail while compiled code runs: the ``message`` to report, the op's ``location``."""

    message: str
    location: Location | None = None

    def to_json(self) -> list:
        loc = self.location
        return [self.message, None if loc is None else [loc.file, loc.line, loc.col]]

    @staticmethod
    def from_json(data: list) -> FailureSite:
        message, loc = data
        return FailureSite(message, None if loc is None else Location(*loc))


@dataclass(frozen=True)
class ParamABI:
    """One IR argument: ``kind`` "memref" (a data pointer, then one i64 per ``?`` dim, listed in
    ``dynamic_dims``) or "scalar" (one value of ``llvm_types[0]``); ``slots``: 8-byte slots it
    takes in the packed argument buffer."""

    name: str
    ir_type: str
    kind: str
    llvm_types: tuple[str, ...]
    dynamic_dims: tuple[int, ...] = ()

    @property
    def slots(self) -> int:
        return len(self.llvm_types)


@dataclass(frozen=True)
class SegmentABI:
    """One top-level piece of a function, called in order from the host.

    ``kind`` "serial": ``symbol(args, frame, 0, 0, out)`` runs its ops (the last one also
    writes the function's results to ``out``). ``kind`` "parallel" (a top-level
    ``affine.parallel``): ``bounds_symbol(args, frame, 0, 0, lbub)`` writes the outermost
    IV's lower and upper bound (two i64); ``symbol(args, frame, lo, hi, partial)`` runs the
    iterations whose outermost IV is in ``[lo, hi)`` (``lo`` on the step grid) and writes
    its reductions' partial values (``partial_size`` bytes); ``combine_symbol(args, frame, n,
    0, partials)`` folds ``n`` consecutive partials in order (starting from the identities)
    into the op's results.
    """

    kind: str
    symbol: str
    bounds_symbol: str = ""
    combine_symbol: str = ""
    step: int = 1
    partial_size: int = 0


@dataclass(frozen=True)
class FunctionABI:
    """A function of the module as the host sees it.

    ``symbol`` follows the calling convention of :mod:`codegen.llvm`; ``entry(args, frame, 0,
    0, out)`` is the packed form the runtime calls: ``args`` holds every parameter in 8-byte
    slots (pointers and integers sign-extended as i64, f32/f16/bf16 as a float, f64 as a
    double, i1 as a byte), ``out`` receives result ``k`` at byte ``8 * k`` (same encoding).
    ``segments`` is empty unless a top-level op is an ``affine.parallel``; ``frame_size`` is
    the bytes of scratch the segments share.
    """

    name: str
    symbol: str
    entry: str
    params: tuple[ParamABI, ...]
    result_types: tuple[str, ...]
    returns: str  # "void", "direct" (one result) or "struct" (several, an LLVM literal struct)
    segments: tuple[SegmentABI, ...] = ()
    frame_size: int = 0


@dataclass
class LLVMModule:
    """The result of :func:`codegen.llvm.emit`: LLVM IR ``text`` and ``functions`` by IR name.
    ``failure_sites``: what can fail at run time (a heap allocation; with
    ``check_bounds`` an access out of bounds), each naming the op and its location; when one
    fails the code stores its 1-based position in the i64 global ``air.alloc_failure`` and
    returns from every function up to the host, which reads the global (and clears it)."""

    text: str
    functions: dict[str, FunctionABI] = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    failure_sites: tuple[FailureSite, ...] = ()

    def __str__(self) -> str:
        return self.text

    def abi_json(self) -> str:
        """The ABI part (not the text) as JSON."""
        return json.dumps({"functions": {k: asdict(v) for k, v in self.functions.items()}, "options": self.options,
                           "failure_sites": [s.to_json() for s in self.failure_sites]})

    @staticmethod
    def failure_sites_from_json(text: str) -> tuple[FailureSite, ...]:
        return tuple(FailureSite.from_json(s) for s in json.loads(text).get("failure_sites", ()))

    @staticmethod
    def functions_from_json(text: str) -> dict[str, FunctionABI]:
        data = json.loads(text)["functions"]
        out = {}
        for k, f in data.items():
            params = tuple(ParamABI(p["name"], p["ir_type"], p["kind"], tuple(p["llvm_types"]),
                                    tuple(p["dynamic_dims"])) for p in f["params"])
            segs = tuple(SegmentABI(**s) for s in f["segments"])
            out[k] = FunctionABI(f["name"], f["symbol"], f["entry"], params, tuple(f["result_types"]), f["returns"],
                                 segs, f["frame_size"])
        return out
