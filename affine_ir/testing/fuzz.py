"""A long fuzzing run: random programs x pipelines against the interpreter, each case in a worker.

    python -m affine_ir.testing.fuzz --minutes N [--seed S] [--jobs J] [--case-timeout SECONDS]
        [--modes passes,cpu,gpu-emu,fusion] [--out DIR] [--pass-pool P1,P2] [--plugin MODULE]
    python -m affine_ir.testing.fuzz --replay DIR/case.json      # run one saved case here

Modes (:data:`~.fuzz_cases.MODES`): ``passes`` (random pipelines of registered passes with
random options; some start with full unrolling of small nests), ``cpu`` (``runtime.compile(m,
target="cpu")`` with the default or a variant pipeline; aliasing arguments included), ``gpu-emu``
(the GPU pipeline, run by the interpreter's launch emulation in both thread orders), ``fusion``
(``affine-loop-fusion`` in its modes, maximal and with compute tolerances). Every case runs in a
worker subprocess with a time limit: a case past it is a *hang*, a worker that dies (signal,
abort) a *crash*; an output that differs from the interpreter's on the case's integer-valued
inputs is a *mismatch*, and any exception not of the project's clean types (TransformError,
PipelineError, CompileError, LaunchError) an *internal* error. Each new kind of finding is
minimized (:func:`minimize`: the pipeline shortened, option sets dropped, the aliasing dropped,
the program's bytes zeroed chunk by chunk, which simplifies the program the generator draws) and
written to ``--out`` as ``case.json``, ``program.mlir``, ``pipeline.txt`` and ``README.txt``
(with the command that replays it). Counts per mode are printed as the run goes and at its end.

Layering: ``affine_ir`` may not import the packages above it at module level; ``transforms``
and ``runtime`` are imported inside the functions of :mod:`.fuzz_cases` that run a case.
``--plugin`` imports a module (in the driver and in every worker) before the first case, e.g. to
register a pass that ``--pass-pool`` then draws.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .fuzz_cases import MODES, Case, Outcome, build_case, draw_cases, run_case
from .fuzz_known import known_bug
from .fuzz_reduce import minimize

__all__ = ["Finding", "FuzzConfig", "Worker", "fuzz", "main", "minimize"]

FINDING_KINDS = ("mismatch", "internal", "hang", "crash")
COLUMNS = ("programs", "cases", "ok", "refused", "mismatch", "internal", "hang", "crash")


@dataclass(frozen=True)
class FuzzConfig:
    """The options of a run (the command-line flags)."""

    minutes: float = 1.0
    seed: int | None = None
    jobs: int = 1
    case_timeout: float = 30.0
    modes: tuple[str, ...] = MODES
    out: Path = Path("fuzz-findings")
    pass_pool: tuple[str, ...] | None = None
    plugins: tuple[str, ...] = ()
    max_cases: int | None = None
    minimize_seconds: float = 120.0
    report_every: float = 30.0


@dataclass
class Finding:
    """A failing case, its outcome, the minimized case and outcome, how many cases had its
    signature, and the known bug it matches (``""``: new)."""

    case: Case
    outcome: Outcome
    minimized: Case | None = None
    minimized_outcome: Outcome | None = None
    count: int = 1
    known: str = ""
    path: Path | None = None


# ----- workers ------------------------------------------------------------------------------------------
class Worker:
    """A subprocess running cases one at a time (``python -m affine_ir.testing.fuzz --worker``)."""

    def __init__(self, plugins: Sequence[str] = ()):
        cmd = [sys.executable, "-m", "affine_ir.testing.fuzz", "--worker"]
        for p in plugins:
            cmd += ["--plugin", p]
        self.log = tempfile.TemporaryFile()  # a file, not a pipe: a chatty worker never blocks on it
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True)
        self.case: Case | None = None
        self.started = 0.0
        self.buffer = b""

    def send(self, case: Case) -> None:
        self.case, self.started, self.buffer = case, time.monotonic(), b""
        self.proc.stdin.write((json.dumps(case.to_json()) + "\n").encode())
        self.proc.stdin.flush()

    def poll(self, timeout: float) -> Outcome | None:
        """The outcome of the case in flight once it is there (or the worker died / ran past ``timeout``)."""
        fd = self.proc.stdout.fileno()
        while True:
            if b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                self.case = None
                return Outcome(**json.loads(line))
            left = timeout - (time.monotonic() - self.started)
            if left <= 0:
                self.stop()
                self.case = None
                return Outcome("hang", "timeout", "", f"no result within {timeout:g} s")
            ready, _, _ = select.select([fd], [], [], min(left, 0.05))
            if not ready:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return self._died()
            self.buffer += chunk

    def _died(self) -> Outcome:
        code = self.proc.wait()
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace")[-1500:]
        self.case = None
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return Outcome("crash", "worker", how, f"the worker died ({how}); its stderr ends:\n{tail}")

    def run(self, case: Case, timeout: float) -> Outcome:
        """``case`` to its outcome, waiting (the worker is replaced by :meth:`alive` if it died)."""
        self.send(case)
        while (outcome := self.poll(timeout)) is None:
            pass
        return outcome

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the worker and what it started
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.log):
            try:
                stream.close()
            except OSError:
                pass


class WorkerPool:
    """``jobs`` workers; a dead or killed one is replaced before its next case."""

    def __init__(self, jobs: int, plugins: Sequence[str]):
        self.plugins = tuple(plugins)
        self.workers = [Worker(self.plugins) for _ in range(jobs)]

    def fresh(self, k: int) -> Worker:
        if not self.workers[k].alive:
            self.workers[k].stop()
            self.workers[k] = Worker(self.plugins)
        return self.workers[k]

    def run_one(self, case: Case, timeout: float) -> Outcome:
        return self.fresh(0).run(case, timeout)

    def close(self) -> None:
        for w in self.workers:
            w.stop()


def _worker_main() -> None:
    """Read cases (JSON lines) from stdin, write outcomes to stdout; anything the library prints goes to stderr."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import faulthandler

    faulthandler.enable()
    while line := sys.stdin.readline():
        outcome = run_case(Case.from_json(json.loads(line)))
        out.write(json.dumps(outcome.__dict__) + "\n")
        out.flush()


# ----- reporting ----------------------------------------------------------------------------------------
def _table(counts: dict[str, Counter], elapsed: float) -> str:
    lines = [f"after {elapsed:6.0f} s  " + " ".join(f"{c:>9}" for c in ("mode", *COLUMNS))]
    for mode, c in counts.items():
        lines.append(" " * 16 + " ".join(f"{x:>9}" for x in (mode, *(c[k] for k in COLUMNS))))
    return "\n".join(lines)


def write_reproducer(finding: Finding, out: Path, number: int) -> Path:
    """``out/<n>-<mode>-<kind>/`` with ``case.json``, ``program.mlir``, ``pipeline.txt``, ``README.txt``."""
    case, outcome = finding.minimized or finding.case, finding.minimized_outcome or finding.outcome
    folder = out / f"{number:03d}-{case.mode}-{outcome.kind}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "case.json").write_text(json.dumps(case.to_json(), indent=1) + "\n")
    (folder / "original-case.json").write_text(json.dumps(finding.case.to_json(), indent=1) + "\n")
    try:
        module, args = build_case(case)
        (folder / "program.mlir").write_text(str(module) + "\n")
        described = ", ".join(f"{getattr(a, 'dtype', type(a).__name__)}{list(getattr(a, 'shape', []))}"
                              if hasattr(a, "shape") else repr(a) for a in args)
    except Exception as e:  # the reproducer still has case.json
        described = f"(cannot build: {e})"
    (folder / "pipeline.txt").write_text(case.pipeline_text + "\n")
    (folder / "README.txt").write_text(
        f"mode: {case.mode}\nkind: {outcome.kind} at {outcome.stage} ({outcome.error} {outcome.where})\n"
        f"known: {finding.known or 'no (new)'}\ncases with this signature: {finding.count}\n"
        f"pipeline: {case.pipeline_text}\naliasing arguments: {case.alias}\ninputs: {described}\n"
        f"replay: python -m affine_ir.testing.fuzz --replay {folder / 'case.json'}\n\n{outcome.message}\n")
    return folder


# ----- the run -------------------------------------------------------------------------------------------
def fuzz(config: FuzzConfig, log: Callable[[str], None] = print) -> tuple[dict[str, Counter], list[Finding]]:
    """Run cases for ``config.minutes`` (or ``config.max_cases``), then minimize and write the
    findings; returns the counts per mode and the findings (one per signature)."""
    for p in config.plugins:
        importlib.import_module(p)
    seed = config.seed if config.seed is not None else random.randrange(1 << 32)
    log(f"fuzz: seed {seed}, modes {','.join(config.modes)}, {config.jobs} job(s), case timeout "
        f"{config.case_timeout:g} s, {config.minutes:g} min, out {config.out}")
    rng = random.Random(seed)
    counts = {m: Counter() for m in config.modes}
    findings: dict[tuple, Finding] = {}
    pool = WorkerPool(config.jobs, config.plugins)
    queue: list[Case] = []
    start = last_report = time.monotonic()
    total = 0
    try:
        while True:
            out_of_time = time.monotonic() - start > config.minutes * 60
            out_of_cases = config.max_cases is not None and total >= config.max_cases
            busy = [w for w in pool.workers if w.case is not None]
            if (out_of_time or out_of_cases) and not busy:
                break
            for k, w in enumerate(pool.workers):
                if w.case is None and not (out_of_time or out_of_cases):
                    if not queue:
                        mode = config.modes[sum(c["programs"] for c in counts.values()) % len(config.modes)]
                        queue = draw_cases(rng, mode, config.pass_pool)
                        counts[mode]["programs"] += 1
                    pool.fresh(k).send(queue.pop(0))
                    total += 1
            for w in pool.workers:
                case = w.case
                if case is None:
                    continue
                outcome = w.poll(config.case_timeout)
                if outcome is not None:
                    _record(case, outcome, counts, findings, log)
            if time.monotonic() - last_report > config.report_every:
                last_report = time.monotonic()
                log(_table(counts, last_report - start))
        log(_table(counts, time.monotonic() - start))
        _finish(list(findings.values()), pool, config, log)
    finally:
        pool.close()
    return counts, list(findings.values())


def _record(case: Case, outcome: Outcome, counts, findings, log) -> None:
    counts[case.mode]["cases"] += 1
    counts[case.mode][outcome.kind if outcome.kind in COLUMNS else "internal"] += 1
    if outcome.kind not in FINDING_KINDS:
        return
    key = (case.mode, *outcome.signature)
    if key in findings:
        findings[key].count += 1
        return
    findings[key] = Finding(case, outcome)
    log(f"finding: {case.mode} {outcome.kind} at {outcome.stage} {outcome.error} {outcome.where} "
        f"[{case.pipeline_text}]: {outcome.message.splitlines()[0][:200] if outcome.message else ''}")


def _finish(findings: list[Finding], pool: WorkerPool, config: FuzzConfig, log) -> None:
    for n, f in enumerate(findings, 1):
        f.minimized, f.minimized_outcome = minimize(
            f.case, f.outcome, lambda c: pool.run_one(c, config.case_timeout), config.minimize_seconds)
        f.known = known_bug(f.minimized, f.minimized_outcome)
        f.path = write_reproducer(f, config.out, n)
        log(f"minimized: {f.path} ({f.count} case(s)) {f.minimized_outcome.kind} {f.minimized_outcome.error} "
            f"[{f.minimized.pipeline_text}] known: {f.known or 'NEW'}")
    new = sum(not f.known for f in findings)
    log(f"findings: {len(findings)} signature(s), {new} new, {len(findings) - new} known")


# ----- command line ----------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m affine_ir.testing.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=1.0)
    p.add_argument("--seed", type=int)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--case-timeout", type=float, default=30.0)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--out", default="fuzz-findings")
    p.add_argument("--pass-pool", default="", help="passes random pipelines draw from (default: all)")
    p.add_argument("--plugin", action="append", default=[], help="module to import first (driver and workers)")
    p.add_argument("--max-cases", type=int)
    p.add_argument("--minimize-seconds", type=float, default=120.0)
    p.add_argument("--report-every", type=float, default=30.0)
    p.add_argument("--replay", help="run one saved case.json in this process and print its outcome")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (1 when a new finding was made)."""
    a = _parser().parse_args(argv)
    for plugin in a.plugin:
        importlib.import_module(plugin)
    if a.worker:
        _worker_main()
        return 0
    if a.replay:
        case = Case.from_json(json.loads(Path(a.replay).read_text()))
        outcome = run_case(case)
        print(f"{outcome.kind} at {outcome.stage} {outcome.error} {outcome.where}\n{outcome.message}")
        return 0 if outcome.kind in ("ok", "refused") else 1
    modes = tuple(m for m in a.modes.split(",") if m)
    unknown = set(modes) - set(MODES)
    if unknown:
        _parser().error(f"unknown modes {sorted(unknown)} (modes: {', '.join(MODES)})")
    config = FuzzConfig(a.minutes, a.seed, max(1, a.jobs), a.case_timeout, modes, Path(a.out),
                        tuple(x for x in a.pass_pool.split(",") if x) or None, tuple(a.plugin), a.max_cases,
                        a.minimize_seconds, a.report_every)
    _, findings = fuzz(config)
    return 1 if any(not f.known for f in findings) else 0


if __name__ == "__main__":
    sys.exit(main())
