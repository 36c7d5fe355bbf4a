"""Fuzzing cases: what one case is (a program drawn from bytes, a pipeline, a mode), how one is
drawn at random, and how one runs against the interpreter (:func:`run_case`, in a worker).

A :class:`Case` is plain data (JSON-able), so the driver (:mod:`.fuzz`) sends it to a worker
subprocess, shrinks it, and writes it as a reproducer. Layering: ``transforms``, ``runtime``
and ``analysis`` sit above ``affine_ir``; they are imported only inside the functions that run
a case, never at module level.
"""

from __future__ import annotations

import random
import traceback
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import IRError, VerifyError
from .build import build_module
from .checks import copy_arguments, run
from .fusion_programs import FusionGenerator, FusionOptions, fusion_program_from_bytes, fusion_tape_bytes
from .fusion_programs import fusion_options as _fusion_options
from .generate import ProgramGenerator, Tape, plan_bytes, plan_from_bytes
from .strategies import INPUT_BYTES, inputs_from_bytes, program_options

__all__ = ["MODES", "Case", "Outcome", "build_case", "bytes_read", "draw_cases", "random_pipeline", "run_case"]

#: The fuzzing modes: random pass pipelines, the CPU pipeline compiled, the GPU pipeline on the
#: interpreter's launch emulation (both thread orders), loop fusion in its modes.
MODES = ("passes", "cpu", "gpu-emu", "fusion")

#: Option values drawn for random pipelines (pass -> option -> choices); other options of
#: boolean or integer type draw from :func:`_generic_choices`.
OPTION_CHOICES: dict[str, dict[str, tuple]] = {
    "affine-loop-tile": {"tile-size": (1, 2, 3, 4), "tile-sizes": ("2,3", "3,2", "1,2,4"), "tile-levels": (1, 2)},
    "affine-loop-unroll": {"unroll-factor": (2, 3, 4), "unroll-full-threshold": (4, 16)},
    "affine-loop-unroll-jam": {"unroll-jam-factor": (2, 3), "loop-depth": (0, 1)},
    "affine-data-copy-generate": {"fast-mem-space": ("1", "workgroup"), "fast-mem-capacity": (1, 4, 1024),
                                  "padding": (0, 1), "min-dma-transfer": (1024,), "slow-mem-space": (0,),
                                  "tag-mem-space": (0,), "generate-dma": (False,)},
    "affine-loop-fusion": {"compute-tolerance": (0.0, 0.3, 0.5, 1.0, 10.0), "mode": ("greedy", "producer", "sibling"),
                           "local-buf-threshold": (0, 1, 16), "fast-mem-space": ("0",)},
    "affine-parallelize": {"max-nested": (1, 2)},
    "affine-loop-permute": {"permutation": ("1,0", "0,1", "1,0,2", "2,1,0")},
    "affine-super-vectorize": {"virtual-vector-size": (2, 4, 8), "loop-depth": (-1, 0, 1)},
    "cpu-schedule": {"vector-bits": (128, 256, 512)},
    "gpu-map": {"block-sizes": ("4,2", "8", "2,2,2")},
    "gpu-map-reductions": {"block-size": (32, 256)},
    "gpu-schedule": {"tile-sizes": ("2,2,2", "4,4,4"), "split-k": (0, 2), "target": ("h200",)},
    "canonicalize": {"max-iterations": (1, 10)},
}
#: Passes that random pipelines draw more often (the loop transformations).
PASS_WEIGHTS = {"canonicalize": 3, "affine-loop-tile": 3, "affine-loop-unroll": 3, "affine-loop-unroll-jam": 2,
                "affine-scalrep": 3, "affine-loop-fusion": 3, "affine-loop-invariant-code-motion": 2}
#: Fusion configurations of mode ``fusion``: MLIR's modes, maximal fusion and compute tolerances.
FUSION_VARIANTS = ("affine-loop-fusion", "affine-loop-fusion{maximal}", "affine-loop-fusion{mode=producer}",
                   "affine-loop-fusion{mode=sibling}", "affine-loop-fusion{compute-tolerance=0.5}",
                   "affine-loop-fusion{compute-tolerance=10.0}", "affine-loop-fusion{maximal mode=producer}",
                   "affine-loop-fusion{local-buf-threshold=1}")
#: Programs with small nests whose loops full unrolling removes (deep nests, large bodies after it).
UNROLL_PROGRAM = {"max_depth": 4, "max_trip": 3, "max_iterations": 27}
UNROLL_FULL = ("affine-loop-unroll{unroll-full}", "affine-loop-unroll{unroll-full unroll-full-threshold=8}")


@dataclass(frozen=True)
class Case:
    """One fuzzing case: ``mode``, the program (``generator`` ``"programs"`` or ``"fusion"`` with its
    keyword ``options``, drawn from ``data``: the tape, then :data:`INPUT_BYTES` for the inputs),
    ``alias`` (one array for two memref arguments of one type), and ``pipeline`` (pass names
    with options; for ``cpu`` the pipeline ``runtime.compile`` runs, ``None`` its default).
    ``program``, when not empty, is the program's MLIR text (a minimized program), replacing
    what the tape draws; the inputs still come from the input bytes."""

    mode: str
    generator: str
    data: bytes
    pipeline: tuple[str, ...] | None
    options: dict = field(default_factory=dict)
    alias: bool = False
    program: str = ""

    def to_json(self) -> dict:
        d = asdict(self)
        d["data"] = self.data.hex()
        d["pipeline"] = None if self.pipeline is None else list(self.pipeline)
        return d

    @staticmethod
    def from_json(d: dict) -> Case:
        pipeline = d["pipeline"]
        return Case(d["mode"], d["generator"], bytes.fromhex(d["data"]),
                    None if pipeline is None else tuple(pipeline), dict(d.get("options", {})), bool(d.get("alias")),
                    d.get("program", ""))

    @property
    def pipeline_text(self) -> str:
        return "(default)" if self.pipeline is None else ",".join(self.pipeline)


@dataclass
class Outcome:
    """What running a case gave: ``kind`` is ``ok``, ``refused`` (a clean error of the project's
    types), ``mismatch``, ``internal`` (any other exception, or IR that does not verify or print
    back), ``hang`` or ``crash``; ``stage`` where (``reference``, ``pipeline``, ``compile``,
    ``run``...), ``error`` the exception type, ``message``, and ``where`` (the innermost project
    frame of an exception; ``after <pass>`` for a wrong or unprintable output)."""

    kind: str
    stage: str = ""
    error: str = ""
    message: str = ""
    where: str = ""

    @property
    def signature(self) -> tuple[str, str, str]:
        """What two findings share when they are the same bug (for deduplication and shrinking):
        the kind, the error type and ``where`` (for a mismatch or an output that does not print
        back: ``after <pass>``, the first pass whose output differs)."""
        return self.kind, self.error, self.where


# ----- building and drawing cases ------------------------------------------------------------------------
def tape_bytes(generator: str, options: dict) -> int:
    """How many program bytes a case of ``generator`` with ``options`` carries (before the input bytes)."""
    if generator == "fusion":
        return fusion_tape_bytes()
    return plan_bytes(program_options(**options))


def bytes_read(case: Case) -> int:
    """How many of its program bytes ``case``'s generator reads (the others do not matter)."""
    size = tape_bytes(case.generator, case.options)
    tape = Tape(case.data[:size])
    if case.generator == "fusion":
        FusionGenerator(tape, _fusion_options(FusionOptions(**case.options))).program()
    else:
        ProgramGenerator(tape, program_options(**case.options)).program()
    return min(size, tape.pos)


def build_case(case: Case) -> tuple:
    """``(module, args)`` of ``case``: the program its bytes draw and its inputs."""
    size = tape_bytes(case.generator, case.options)
    if case.program:
        from .. import parse

        module = parse(case.program)
    elif case.generator == "fusion":
        module = fusion_program_from_bytes(case.data[:size], **case.options)
    else:
        module = build_module(plan_from_bytes(case.data[:size], program_options(**case.options)))
    return module, inputs_from_bytes(module, case.data[size:size + INPUT_BYTES], alias=case.alias)


def random_pipeline(rng: random.Random, pool: tuple[str, ...] | None = None, max_passes: int = 4) -> tuple[str, ...]:
    """1..``max_passes`` passes drawn from ``pool`` (default: every registered pass), each with
    random options (about a third of its options set)."""
    from transforms import all_passes, get_pass

    names = sorted(pool or all_passes())
    weights = [PASS_WEIGHTS.get(n, 1) for n in names]
    out = []
    for name in rng.choices(names, weights, k=rng.randint(1, max_passes)):
        options = []
        for opt in get_pass(name).options():
            choices = OPTION_CHOICES.get(name, {}).get(opt.name) or _generic_choices(opt)
            if choices and rng.random() < 0.35:
                options.append(_option_text(opt.name, rng.choice(choices)))
        out.append(name + ("{" + " ".join(options) + "}" if options else ""))
    return tuple(out)


def _generic_choices(opt) -> tuple:
    if opt.type is bool:
        return (True, False)
    if opt.type is int and opt.default is not None and 0 <= opt.default < 64:
        return (opt.default, 1, 2, 4)
    return ()


def _option_text(name: str, value) -> str:
    if value is True:
        return name
    if value is False:
        return f"{name}=false"
    return f"{name}={value}"


def draw_cases(rng: random.Random, mode: str, pool: tuple[str, ...] | None = None) -> list[Case]:
    """The cases of one random program in ``mode`` (several pipelines or variants of it)."""
    if mode == "fusion":
        data = rng.randbytes(fusion_tape_bytes() + INPUT_BYTES)
        variants = rng.sample(FUSION_VARIANTS, 2)
        if rng.random() < 0.5:  # the generic generator's programs fuse too, with more shapes
            options = _program_options(rng)
            data = rng.randbytes(tape_bytes("programs", options) + INPUT_BYTES)
            return [Case(mode, "programs", data, (v, "canonicalize"), options) for v in variants]
        return [Case(mode, "fusion", data, (v, "affine-scalrep", "canonicalize")) for v in variants]
    options = _program_options(rng)
    unroll = mode == "passes" and rng.random() < 0.2
    if unroll:
        options.update(UNROLL_PROGRAM)
    data = rng.randbytes(tape_bytes("programs", options) + INPUT_BYTES)
    alias = bool(options.get("allow_aliasing")) and mode == "cpu"
    if mode == "cpu":
        from transforms.pipelines import cpu_pipeline

        pipeline = None if rng.random() < 0.5 else tuple(cpu_pipeline(
            fuse=rng.random() < 0.7, vectorize_reductions=rng.random() < 0.5, threads=rng.random() < 0.5,
            vector_bits=rng.choice((0, 128, 256))).split(","))
        return [Case(mode, "programs", data, pipeline, options, alias)]
    if mode == "gpu-emu":
        from transforms.pipelines import gpu_pipeline

        return [Case(mode, "programs", data, tuple(gpu_pipeline(fuse=rng.random() < 0.7).split(",")), options)]
    if unroll:
        return [Case(mode, "programs", data, (rng.choice(UNROLL_FULL), *random_pipeline(rng, pool, 3)), options)
                for _ in range(2)]
    return [Case(mode, "programs", data, random_pipeline(rng, pool), options) for _ in range(3)]


def _program_options(rng: random.Random) -> dict:
    """Generator options of one program: the new constructs each in about a third of the programs."""
    options = {name: True for name in ("allow_aliasing", "allow_limits", "allow_wide_minmax") if rng.random() < 0.35}
    if rng.random() < 0.3:
        options["max_nests"] = 2
    return options


# ----- running a case --------------------------------------------------------------------------------------
def run_case(case: Case) -> Outcome:
    """Run ``case`` in this process: build it, run the reference (interpreter), run what the mode
    makes of it, compare exactly. Never raises (an exception becomes the outcome)."""
    try:
        module, args = build_case(case)
        want = run(module, args)
    except Exception as e:  # the generator's promise: valid, in bounds
        return _exception_outcome("reference", e, clean=False)
    if not _prints_back(module):
        return Outcome("internal", "reference", "RoundTrip", f"the generated program does not print back:\n{module}",
                       "generator")
    runner = {"cpu": _run_cpu, "gpu-emu": _run_gpu_emulation}.get(case.mode, _run_passes)
    return runner(case, module, args, want)


def _clean(e: BaseException) -> bool:
    """The project's clean refusals: an illegal request, a bad pipeline, a compile or launch
    refusal. A pass whose output does not verify (TransformError caused by VerifyError) is a bug."""
    from runtime import CompileError, LaunchError
    from transforms import PipelineError, TransformError

    if isinstance(e, TransformError) and isinstance(e.__cause__, VerifyError):
        return False
    return isinstance(e, (TransformError, PipelineError, CompileError, LaunchError))


def _exception_outcome(stage: str, e: BaseException, clean: bool) -> Outcome:
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/site-packages/" not in f.filename
              and "/testing/" not in f.filename]
    where = f"{frames[-1].filename.rsplit('/', 2)[-1]}:{frames[-1].name}" if frames else ""
    return Outcome("refused" if clean else "internal", stage, type(e).__name__, str(e)[:2000], where)


def _transform(case: Case, module) -> tuple:
    """``(out, None)`` or ``(None, outcome)`` for the pipeline of ``case`` on ``module``."""
    import affine_ir as air
    from transforms import PassManager

    try:
        out = PassManager.parse(",".join(case.pipeline or ())).run(module)
    except Exception as e:
        return None, _exception_outcome("pipeline", e, _clean(e))
    try:
        text = str(out)
        if str(air.parse(text)) != text:
            return None, Outcome("internal", "print", "RoundTrip", "the output does not print back to itself",
                                 _culprit(case.pipeline, module, lambda m: not _prints_back(m)))
    except Exception as e:
        failed = _exception_outcome("print", e, clean=False)
        failed.where = _culprit(case.pipeline, module, lambda m: not _prints_back(m)) or failed.where
        return None, failed
    return out, None


def _prints_back(module) -> bool:
    import affine_ir as air

    try:
        text = str(module)
        return str(air.parse(text)) == text
    except Exception:
        return False


def _culprit(pipeline: tuple[str, ...] | None, module, fails) -> str:
    """``after <pass>``: the first pass of ``pipeline`` whose output ``fails`` (or that raises);
    ``""`` when no pass's output fails (the backend's fault, for a compiled mode)."""
    from transforms import PassManager

    current = module
    for entry in pipeline or ():
        name = f"after {entry.split('{')[0]}"
        try:
            current = PassManager.parse(entry).run(current)
            if fails(current):
                return name
        except Exception:
            return name
    return ""


def _compare(want: list, got: list, stage: str) -> Outcome:
    if len(want) != len(got):
        return Outcome("mismatch", stage, "", f"{len(want)} outputs before, {len(got)} after")
    for k, (w, g) in enumerate(zip(want, got)):
        w, g = np.asarray(w), np.asarray(g)
        if w.shape != g.shape or w.dtype != g.dtype or not np.array_equal(w, g):
            bad = np.argwhere(w != g) if w.shape == g.shape else []
            at = [int(i) for i in bad[0]] if len(bad) else []
            return Outcome("mismatch", stage, "", f"output {k} differs ({len(bad)} elements; first at {at}: "
                           f"interpreter {w[tuple(at)] if len(bad) else w.shape}, got "
                           f"{g[tuple(at)] if len(bad) else g.shape})")
    return Outcome("ok", stage)


def _run_after(out, args, want, stage: str) -> Outcome:
    try:
        got = run(out, args)
    except IRError as e:
        return Outcome("mismatch", stage, type(e).__name__, f"the transformed program fails: {str(e)[:1500]}")
    except Exception as e:
        return _exception_outcome(stage, e, clean=False)
    return _compare(want, got, stage)


def _run_passes(case: Case, module, args, want) -> Outcome:
    out, failed = _transform(case, module)
    if failed:
        return failed
    result = _run_after(out, args, want, "run")
    if result.kind == "mismatch":
        result.where = _culprit(case.pipeline, module, lambda m: _run_after(m, args, want, "").kind != "ok")
    return result


def _both_orders(out, args, want) -> Outcome:
    from ..interp.gpu import reversed_schedule

    result = _run_after(out, args, want, "forward")
    if result.kind != "ok":
        return result
    with reversed_schedule():
        return _run_after(out, args, want, "reversed")


def _run_gpu_emulation(case: Case, module, args, want) -> Outcome:
    out, failed = _transform(case, module)
    if failed:
        return failed
    result = _both_orders(out, args, want)
    if result.kind == "mismatch":
        result.where = _culprit(case.pipeline, module, lambda m: _both_orders(m, args, want).kind != "ok")
    return result


def _run_cpu(case: Case, module, args, want) -> Outcome:
    import runtime

    pipeline = None if case.pipeline is None else ",".join(case.pipeline)
    try:
        exe = runtime.compile(module, target="cpu", pipeline=pipeline)
    except Exception as e:
        return _exception_outcome("compile", e, _clean(e))
    got = copy_arguments(args)
    try:
        result = exe(*got)
    except Exception as e:
        return _exception_outcome("call", e, _clean(e))
    arrays = [a for a in got if isinstance(a, np.ndarray)]
    returned = [] if result is None else list(result) if isinstance(result, tuple) else [result]
    outcome = _compare(want, arrays + returned, "cpu")
    if outcome.kind == "mismatch" and not case.alias:  # the passes compute the same on distinct arrays?
        from transforms.pipelines import CPU_PIPELINE

        pipeline = case.pipeline if case.pipeline is not None else tuple(CPU_PIPELINE.split(","))
        outcome.where = _culprit(pipeline, module, lambda m: _run_after(m, args, want, "").kind != "ok") \
            or "codegen/runtime"
    return outcome
