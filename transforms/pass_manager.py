"""The pass manager: run a pipeline on a copy of a module, verify, and trace every pass.

    pm = PassManager.parse("canonicalize,affine-loop-tile{tile-size=32}")
    out = pm.run(module)          # a new module; ``module`` is untouched
    pm.trace                      # per pass: IR before/after, diff, wall time, decisions
    pm.trace[1].decisions         # e.g. refused: cannot tile (%i, %j): RAW %A ... distance (1, -1)

In a notebook ``pm.trace`` (and each entry) renders as HTML: one collapsible section per
pass with its decisions, its time and the diff of the IR.
"""

from __future__ import annotations

import difflib
import html
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from affine_ir import IRError, ModuleOp, verify

from .errors import TransformError
from .pass_base import Decision, Pass, PassContext
from .pipeline import PipelineEntry, parse_pipeline

__all__ = ["PassManager", "PassTrace", "PipelineTrace"]


@dataclass(repr=False)
class PassTrace:
    """What one pass did: its IR before and after (text; empty when IR capture is off),
    wall time in seconds, whether the IR changed, and its decisions."""

    pass_: Pass
    before: str
    after: str
    seconds: float
    changed: bool
    decisions: list[Decision] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.pass_.name

    @property
    def refusals(self) -> list[Decision]:
        return [d for d in self.decisions if d.kind == "refused"]

    def diff(self, context: int = 3) -> str:
        """A unified diff of the IR before and after the pass ('' when unchanged)."""
        lines = difflib.unified_diff(self.before.splitlines(), self.after.splitlines(), f"before {self.pass_}",
                                     f"after {self.pass_}", n=context, lineterm="")
        return "\n".join(lines)

    def summary(self) -> str:
        counts = {k: sum(d.kind == k for d in self.decisions) for k in ("applied", "refused", "note")}
        what = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no decisions"
        return f"{self.pass_}: {'changed' if self.changed else 'unchanged'}, {what}, {self.seconds * 1e3:.1f} ms"

    def __str__(self) -> str:
        return "\n".join([self.summary()] + [f"  {d}" for d in self.decisions])

    def __repr__(self) -> str:
        return f"<PassTrace {self.summary()}>"

    def _repr_html_(self) -> str:
        items = "".join(f"<li><b>{d.kind}</b> {html.escape(_where(d))}{html.escape(d.message)}</li>"
                        for d in self.decisions)
        diff = html.escape(self.diff()) or "(IR unchanged)"
        return (f"<details><summary><code>{html.escape(self.summary())}</code></summary>"
                f"<ul>{items}</ul><pre>{diff}</pre></details>")


def _where(d: Decision) -> str:
    return f"{d.location}: " if d.location else ""


class PipelineTrace(list):
    """The :class:`PassTrace` of every pass run, in order (a list), with reports."""

    @property
    def decisions(self) -> list[Decision]:
        return [d for t in self for d in t.decisions]

    def timing_report(self) -> str:
        """Per-pass wall time, as ``mlir-opt -mlir-timing`` prints it."""
        total = sum(t.seconds for t in self) or 1e-12
        lines = ["===" + "-" * 73 + "===", "  ... Pass execution timing report ...", "===" + "-" * 73 + "===",
                 f"  Total Execution Time: {total:.4f} seconds", "",
                 "  ----Wall Time----  ----Name----"]
        for t in self:
            lines.append(f"    {t.seconds:.4f} ({100 * t.seconds / total:5.1f}%)  {t.pass_}")
        lines.append(f"    {total:.4f} (100.0%)  Total")
        return "\n".join(lines)

    def __str__(self) -> str:
        return "\n".join(str(t) for t in self)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return "".join(t._repr_html_() for t in self)


class PassManager:
    """An ordered list of passes. ``run`` works on a copy, verifies after every pass (unless
    ``verify_each=False``) and records a :class:`PassTrace` per pass in ``trace``
    (``capture_ir=False`` keeps only times and decisions)."""

    def __init__(self, passes: Iterable[Pass | PipelineEntry] = (), *, verify_each: bool = True,
                 capture_ir: bool = True):
        self.entries: list[PipelineEntry] = [p if isinstance(p, PipelineEntry) else PipelineEntry(p)
                                             for p in passes]
        self.verify_each = verify_each
        self.capture_ir = capture_ir
        self.trace = PipelineTrace()

    @classmethod
    def parse(cls, text: str, **kwargs) -> PassManager:
        """The pass manager of a pipeline text (``a,b{opt=1}`` or ``builtin.module(func.func(a,b))``);
        :class:`PipelineError` for bad text."""
        return cls(parse_pipeline(text), **kwargs)

    @property
    def passes(self) -> list[Pass]:
        return [e.pass_ for e in self.entries]

    def add(self, p: Pass) -> PassManager:
        self.entries.append(PipelineEntry(p))
        return self

    def run(self, module: ModuleOp) -> ModuleOp:
        """Run every pass on a copy of ``module`` and return the copy (``module`` is unchanged).

        Guarantees: each pass's output verifies (when ``verify_each``); ``self.trace`` holds one
        entry per pass run. A :class:`TransformError` raised by a pass propagates (the input
        stays untouched); a pass whose output does not verify raises TransformError naming it.
        """
        self.trace = PipelineTrace()
        work = module.clone()
        text = str(work) if self.capture_ir else ""
        for entry in self.entries:
            text = self._run_one(entry.pass_, work, text)
        return work

    def _run_one(self, p: Pass, module: ModuleOp, before: str) -> str:
        ctx = PassContext(p.name)
        t0 = time.perf_counter()
        p.run_on_module(module, ctx)
        seconds = time.perf_counter() - t0
        if self.verify_each:
            try:
                verify(module)
            except IRError as e:
                raise TransformError(p.name, f"the pass produced IR that does not verify (a bug in the pass): "
                                             f"{e.message}", location=e.location) from e
        after = str(module) if self.capture_ir else ""
        changed = before != after if self.capture_ir else bool(
            [d for d in ctx.decisions if d.kind == "applied"])
        self.trace.append(PassTrace(p, before, after, seconds, changed, ctx.decisions))
        return after

    def __str__(self) -> str:
        return format_pipeline(self.entries)

    def __repr__(self) -> str:
        return f"PassManager({str(self)!r})"


def format_pipeline(entries: Sequence[PipelineEntry]) -> str:
    """The pipeline in MLIR's anchored form: ``builtin.module(func.func(a,b{x=1}))``."""
    inner = ",".join(str(e.pass_) for e in entries)
    return f"builtin.module(func.func({inner}))" if entries else "builtin.module()"
