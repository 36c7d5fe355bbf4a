"""``affine-run``: compile a program for a target, run it on random inputs, check it, time it.

::

    affine-run input.mlir [--target auto|cuda|cpu] [--fn NAME] [--sym N=64 ...] [--check] [--bench]
    affine-run --op matmul:256,256,256 [--dtype f32] ...      # a library op instead of a file

Stages printed with their times: parse (or build), compile (the target's default pipeline:
``gpu-map`` + CUDA C + NVRTC for ``cuda``; LLVM JIT for ``cpu``), run on random inputs
(integers in [-3, 3] divided by 4: exact in every dtype), ``--check`` against the reference
interpreter (programs up to ``--interpret-limit`` memref elements) or else the CPU backend,
``--bench`` the median time of ``--repeat`` calls. Exit status 1 when the check fails, 2 for
bad input (a parse error names ``file:line:col``; a bad flag is named as argparse does; an
access out of bounds names the op, the memref and isl's witness). On ``cuda`` each loop nest the
GPU pipeline must run on one thread (a 1x1x1 launch) is reported on stderr as
``file:line:col: warning: @f: the loop nest runs on one GPU thread ...: <the dependence>``.

Inputs: an index argument takes its ``--sym`` value (default 64); a ``?`` dim of a memref
argument takes the value of the index argument whose loop ranges over it
(:func:`runtime.arg_checks.dynamic_dim_sizes`: ``%A[%i, %k]`` with ``%i`` from 0 to ``%M``);
a ``?`` dim nothing ties to an argument is refused. With ``--check`` the reference runs
first, so a program the interpreter finds wrong (an access out of bounds) is reported with its
location before the compiled code runs; on the CPU the run stage uses a bounds-checked build
(``runtime.cpu.compile(check_bounds=True)``), so such a program never corrupts the process.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
import warnings

import numpy as np

import affine_ir as air

from .arg_checks import dynamic_dim_sizes
from .bounds_guard import BoundsCompileError, BoundsLaunchError
from .compiler import TARGETS, compile, resolve_target
from .entry import entry_function
from .errors import CompileError, LaunchError
from .launch_warnings import SequentialLaunchWarning


class _UsageError(ValueError):
    """A bad command line (exit status 2, reported as argparse does)."""


def _int_at_least(minimum: int, what: str):
    """An argparse type: an integer >= ``minimum``, else a usage error saying ``what`` was expected."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {n}")
        return n

    return parse


_positive = _int_at_least(1, "a positive integer")
_non_negative = _int_at_least(0, "an integer >= 0")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="affine-run", description=__doc__.splitlines()[0])
    ap.add_argument("input", nargs="?", help="MLIR file ('-' for stdin)")
    ap.add_argument("--op", help="a library op instead of a file: NAME:size,size,... (e.g. matmul:64,64,64)")
    ap.add_argument("--dtype", default="f32", help="dtype of --op (f32, f16, bf16, f64)")
    ap.add_argument("--target", default="auto", choices=TARGETS)
    ap.add_argument("--fn", help="the function to run (default: the entry function)")
    ap.add_argument("--sym", action="append", default=[], metavar="NAME=VALUE",
                    help="value of an index argument (default 64)")
    ap.add_argument("--check", action="store_true", help="compare with the interpreter / the CPU backend")
    ap.add_argument("--bench", action="store_true", help="time the compiled program")
    ap.add_argument("--repeat", type=_positive, default=10)
    ap.add_argument("--interpret-limit", type=_non_negative, default=200_000,
                    help="largest total memref size checked on the interpreter (else the CPU backend)")
    ap.add_argument("--seed", type=_non_negative, default=0)
    return ap


def _stage(name: str, detail: str, t0: float) -> None:
    print(f"[{name:<8}] {detail}  ({(time.perf_counter() - t0) * 1e3:.1f} ms)", flush=True)


def _library_module(spec: str, dtype: str) -> air.ModuleOp:
    """The library op ``NAME:size,...`` (sizes: integers or symbol names); _UsageError when the
    name, the sizes or their number do not fit the op."""
    name, _, sizes = spec.partition(":")
    if name not in air.library.OPS:
        raise _UsageError(f"--op: unknown op '{name}' (ops: {', '.join(sorted(air.library.OPS))})")
    dims = [int(s) if s.lstrip("-").isdigit() else s.strip() for s in sizes.split(",") if s.strip()]
    bad = [d for d in dims if isinstance(d, str) and not d.isidentifier()]
    if bad:
        raise _UsageError(f"--op {spec}: a size is an integer or a symbol name, got {bad[0]!r}")
    op = air.library.OPS[name]
    sig = inspect.signature(op)
    first = next(iter(sig.parameters))
    call = ((tuple(dims),) if first == "shape" else tuple(dims))
    try:
        sig.bind(*call, dtype=dtype)
    except TypeError as e:
        raise _UsageError(f"--op {spec}: {name}{sig} does not take these sizes ({e})") from None
    try:
        return op(*call, dtype=dtype)
    except air.IRError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise _UsageError(f"--op {spec}: {e}") from None


def _module(args) -> air.ModuleOp:
    if args.op:
        return _library_module(args.op, args.dtype)
    if not args.input:
        raise _UsageError("give an input file or --op")
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    return air.parse(text, "<stdin>" if args.input == "-" else args.input)


def _symbols(specs: list[str]) -> dict[str, int]:
    """``NAME=VALUE`` flags -> {name: value}; _UsageError naming a malformed one."""
    out = {}
    for s in specs:
        name, eq, value = s.partition("=")
        name = name.strip().lstrip("%")
        try:
            out[name] = int(value)
        except ValueError:
            raise _UsageError(f"--sym {s}: expected NAME=INTEGER") from None
        if not eq or not name:
            raise _UsageError(f"--sym {s}: expected NAME=INTEGER")
    return out


def _inputs(func, symbols: dict[str, int], seed: int) -> list:
    """Random inputs for ``func``: index arguments from ``symbols`` (default 64), each ``?`` dim the
    value of the index argument that sizes it; _UsageError for a symbol no argument has, a negative
    size, or a ``?`` dim nothing sizes."""
    rng = np.random.default_rng(seed)
    index_args = {a.name_hint: k for k, a in enumerate(func.args) if not hasattr(a.type, "shape")}
    unknown = sorted(set(symbols) - set(index_args))
    if unknown:
        names = ", ".join("%" + n for n in index_args if n) or "none"
        raise _UsageError(f"--sym {unknown[0]}: @{func.sym_name} has no index argument %{unknown[0]} "
                          f"(index arguments: {names})")
    values = {k: symbols.get(a.name_hint, 64) for k, a in enumerate(func.args) if not hasattr(a.type, "shape")}
    sizes = dynamic_dim_sizes(func)
    out = []
    for k, a in enumerate(func.args):
        t = a.type
        if not hasattr(t, "shape"):
            out.append(values[k])
            continue
        dims = []
        for d, n in enumerate(t.shape):
            if n is None and (k, d) not in sizes:
                raise _UsageError(f"cannot tell the size of dim {d} of %{a.name_hint} ({t}): no loop over it is "
                                  f"bounded by an index argument")
            dims.append(n if n is not None else values[sizes[(k, d)]])
            if dims[-1] < 0:
                raise _UsageError(f"dim {d} of %{a.name_hint} ({t}) would be {dims[-1]}: give a size >= 0 with --sym")
        dt = air.testing.numpy_dtype(t.element_type)
        x = rng.integers(-3, 4, size=tuple(dims))
        out.append((x.astype(np.float64) / 4).astype(dt) if dt.kind == "f" or "bfloat" in str(dt) else x.astype(dt))
    return out


def _checked_build(exe, target: str):
    """What the run stage calls: on the CPU the same program with every access bounds-checked
    (an access out of bounds is a LaunchError naming it, not a corrupted heap); the timed calls
    of ``--bench`` use ``exe`` itself."""
    if target != "cpu":
        return exe
    from . import cpu

    return cpu.compile(exe.module, fn=exe.name, opt_level=exe.opt_level, threads=exe.threads,
                       fast_math=exe.fast_math, check_bounds=True)


def _reference(module, fn, args, limit: int):
    total = sum(a.size for a in args if isinstance(a, np.ndarray))
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    if total <= limit:
        air.interpret(module, *copies, fn=fn)
        return copies, "the interpreter"
    compile(module, "cpu", fn=fn, pipeline="")(*copies)
    return copies, "the CPU backend (no passes)"


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except _UsageError as e:
        parser.error(str(e))  # exits with status 2
    return 2


def _compile_reporting_sequential_launches(module, target: str, fn: str | None):
    """``compile(module, target, fn=fn)``, printing each :class:`SequentialLaunchWarning` on stderr as
    ``file:line:col: warning: ...`` (other warnings are shown as Python shows them)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe = compile(module, target, fn=fn)
    for w in caught:
        if isinstance(w.message, SequentialLaunchWarning):
            print(w.message.launch.diagnostic, file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)
    return exe


def _run(args) -> int:
    symbols = _symbols(args.sym)
    try:
        t0 = time.perf_counter()
        module = _module(args)
        _stage("parse", f"{len(module.functions)} function(s)", t0)
        target = resolve_target(args.target)
        t0 = time.perf_counter()
        exe = _compile_reporting_sequential_launches(module, target, args.fn)
        what = (f"the GPU pipeline + CUDA C ({len(exe.kernels)} kernels, {len(exe.source.splitlines())} lines) + "
                f"NVRTC {exe.image.kind} for {exe.image.arch}" if target == "cuda"
                else "the CPU pipeline + LLVM IR + llvmlite JIT")
        _stage("compile", f"target {target}: {what}", t0)
        # sized on the program as written: after the GPU pipeline the loops that tie a ``?`` dim to an
        # index argument are launches, and the accesses index by thread ids
        inputs = _inputs(entry_function(module, args.fn), symbols, args.seed)
        run_args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        if args.check:  # first: a program the interpreter finds wrong must not run compiled
            t0 = time.perf_counter()
            want, by = _reference(module, args.fn, inputs, args.interpret_limit)
            reference_time = t0
        t0 = time.perf_counter()
        _checked_build(exe, target)(*run_args)
        _stage("run", f"on {target}, random inputs" + (", accesses bounds-checked" if target == "cpu" else ""), t0)
        ok = True
        if args.check:
            t0 = reference_time
            worst = 0.0
            for w, g in zip(want, run_args):
                if isinstance(w, np.ndarray) and w.size:
                    worst = max(worst, float(np.max(np.abs(w.astype(np.float64) - g.astype(np.float64)))))
            tol = 2e-2 if any(str(getattr(a, "dtype", "")) in ("float16", "bfloat16") for a in inputs) else 1e-4
            ok = worst <= tol
            _stage("check", f"vs {by}: max |difference| {worst:.3g} ({'ok' if ok else 'FAIL'}, tolerance {tol})", t0)
        if args.bench:
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                exe(*run_args)
                times.append(time.perf_counter() - t0)
            print(f"[bench   ] median of {args.repeat} calls: {np.median(times) * 1e3:.3f} ms (wall, incl. copies)")
        return 0 if ok else 1
    except air.IRError as e:
        print(f"affine-run: {e}", file=sys.stderr)
        bad_input = isinstance(e, (BoundsCompileError, BoundsLaunchError)) or \
            not isinstance(e, (CompileError, LaunchError))
        return 2 if bad_input else 1
    except _UsageError:
        raise
    except (ValueError, OSError) as e:
        print(f"affine-run: error: {e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        print(f"affine-run: error: out of memory making the inputs ({e})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
