"""``affine-run``: compile a program for a target, run it on random inputs, check it, time it.

::

    affine-run input.mlir [--target auto|cuda|cpu] [--fn NAME] [--sym N=64 ...] [--check] [--bench]
    affine-run --op matmul:256,256,256 [--dtype f32] ...      # a library op instead of a file

Stages printed with their times: parse (or build), compile (the target's default pipeline:
``gpu-map`` + CUDA C + NVRTC for ``cuda``; LLVM JIT for ``cpu``), run on random inputs
(integers in [-3, 3] divided by 4: exact in every dtype), ``--check`` against the reference
interpreter (programs up to ``--interpret-limit`` memref elements) or else the CPU backend,
``--bench`` the median time of ``--repeat`` calls. Exit status 1 when the check fails, 2 for
bad input (a parse error names ``file:line:col``; an access out of bounds names the op, the
memref and isl's witness).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time

import numpy as np

import affine_ir as air

from .bounds_guard import BoundsCompileError, BoundsLaunchError
from .compiler import TARGETS, compile, resolve_target
from .errors import CompileError, LaunchError


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
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--interpret-limit", type=int, default=200_000,
                    help="largest total memref size checked on the interpreter (else the CPU backend)")
    ap.add_argument("--seed", type=int, default=0)
    return ap


def _stage(name: str, detail: str, t0: float) -> None:
    print(f"[{name:<8}] {detail}  ({(time.perf_counter() - t0) * 1e3:.1f} ms)", flush=True)


def _module(args) -> air.ModuleOp:
    if args.op:
        name, _, sizes = args.op.partition(":")
        if name not in air.library.OPS:
            raise ValueError(f"unknown op '{name}' (ops: {', '.join(sorted(air.library.OPS))})")
        dims = [int(s) if s.lstrip("-").isdigit() else s for s in sizes.split(",") if s]
        op = air.library.OPS[name]
        first = next(iter(inspect.signature(op).parameters))
        return op(tuple(dims), dtype=args.dtype) if first == "shape" else op(*dims, dtype=args.dtype)
    if not args.input:
        raise ValueError("give an input file or --op")
    text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    return air.parse(text, "<stdin>" if args.input == "-" else args.input)


def _inputs(func, symbols: dict[str, int], seed: int) -> list:
    rng = np.random.default_rng(seed)
    values = {a.name_hint: symbols.get(a.name_hint, 64) for a in func.args if not hasattr(a.type, "shape")}
    out = []
    for a in func.args:
        t = a.type
        if not hasattr(t, "shape"):
            out.append(values[a.name_hint])
            continue
        dims = []
        for d in t.shape:
            dims.append(d if d is not None else next(iter(values.values()), 64))
        dt = air.testing.numpy_dtype(t.element_type)
        x = rng.integers(-3, 4, size=tuple(dims))
        out.append((x.astype(np.float64) / 4).astype(dt) if dt.kind == "f" or "bfloat" in str(dt) else x.astype(dt))
    return out


def _reference(module, fn, args, limit: int):
    total = sum(a.size for a in args if isinstance(a, np.ndarray))
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    if total <= limit:
        air.interpret(module, *copies, fn=fn)
        return copies, "the interpreter"
    compile(module, "cpu", fn=fn, pipeline="")(*copies)
    return copies, "the CPU backend (no passes)"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    symbols = {}
    for s in args.sym:
        name, _, value = s.partition("=")
        symbols[name.lstrip("%")] = int(value)
    try:
        t0 = time.perf_counter()
        module = _module(args)
        _stage("parse", f"{len(module.functions)} function(s)", t0)
        target = resolve_target(args.target)
        t0 = time.perf_counter()
        exe = compile(module, target, fn=args.fn)
        what = (f"the GPU pipeline + CUDA C ({len(exe.kernels)} kernels, {len(exe.source.splitlines())} lines) + "
                f"NVRTC {exe.image.kind} for {exe.image.arch}" if target == "cuda"
                else "the CPU pipeline + LLVM IR + llvmlite JIT")
        _stage("compile", f"target {target}: {what}", t0)
        func = exe.function if target == "cuda" else module.functions[0] if args.fn is None else \
            next(f for f in module.functions if f.sym_name == args.fn)
        inputs = _inputs(func, symbols, args.seed)
        run_args = [a.copy() if isinstance(a, np.ndarray) else a for a in inputs]
        t0 = time.perf_counter()
        exe(*run_args)
        _stage("run", f"on {target}, random inputs", t0)
        ok = True
        if args.check:
            t0 = time.perf_counter()
            want, by = _reference(module, args.fn, inputs, args.interpret_limit)
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
    except (ValueError, OSError) as e:
        print(f"affine-run: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
