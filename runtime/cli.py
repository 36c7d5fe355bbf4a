"""``affine-opt``: parse, verify, transform and print MLIR text, in the manner of ``mlir-opt``.

Passes are given as flags in order (``-canonicalize -affine-loop-tile="tile-size=32"``, one or
two dashes) or as one ``--pass-pipeline="builtin.module(func.func(...))"``; they run on a copy
of each module, verified after every pass. ``--print-ir-after-all`` / ``--print-ir-after-change``
dump the IR after passes to stderr, ``--mlir-timing`` prints per-pass wall time, ``--explain``
prints every decision of every pass (applied, refused with the reason, notes) as remarks.

Errors go to stderr as ``file:line:col: error: message`` and the exit status is 1 (2 for an
access out of bounds: ``-verify-bounds`` or ``-affine-check-bounds``).
With ``-split-input-file`` each ``// -----`` chunk is handled on its own, errors are
reported per chunk (line numbers refer to the whole file), the chunks that are fine are
still printed, and the outputs of the chunks (empty for a failed one) are separated by
``// -----`` lines, as ``mlir-opt`` separates them.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from dataclasses import dataclass

import affine_ir as air

SPLIT_MARKER = "// -----"

_DESCRIPTION = """\
Parse, verify and print affine IR written in MLIR's syntax (the func, affine, arith, math,
memref, vector and gpu dialects). The output is the canonical text: affine maps and sets as
#map/#set aliases, values named after their names in the input, constants named %c0, %cst,
%true. Printing the output again gives the same text.
"""

_EPILOG = """\
errors:
  Each problem is reported on stderr as 'file:line:col: error: message', with the place
  of the offending token (parse errors) or op (verify errors). The exit status is 0 when
  every input (chunk) was fine, 1 otherwise, 2 for bad command-line arguments and for an
  access out of bounds (-verify-bounds, -affine-check-bounds).

examples:
  affine-opt kernel.mlir                      print the verified, canonical text
  affine-opt kernel.mlir -canonicalize -affine-loop-tile="tile-size=32"      run two passes
  affine-opt kernel.mlir --pass-pipeline="builtin.module(func.func(affine-loop-tile{tile-sizes=32,8}))"
  affine-opt kernel.mlir -affine-loop-tile --explain   why each band was (not) tiled
  affine-opt kernel.mlir -o out.mlir          write it to out.mlir
  cat kernel.mlir | affine-opt                read stdin ('-' names stdin too)
  affine-opt tests.mlir -split-input-file     one module per '// -----' chunk
  affine-opt kernel.mlir | affine-opt         round trip: prints the same text again
  affine-opt --allow-unregistered-dialect t.mlir   keep "test.foo"(...) ops as opaque ops
"""


def split_input(text: str) -> list[tuple[str, int]]:
    """The chunks of ``text`` between ``// -----`` lines, each with its starting line offset."""
    chunks, current, start = [], [], 0
    for n, line in enumerate(text.splitlines(keepends=True)):
        if line.strip().startswith(SPLIT_MARKER):
            chunks.append(("".join(current), start))
            current, start = [], n + 1
        else:
            current.append(line)
    chunks.append(("".join(current), start))
    return chunks


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("affine-ir")
    except Exception:  # not installed as a distribution (running from a checkout)
        return "unknown"


def _build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="affine-opt", description=_DESCRIPTION, epilog=_EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", nargs="?", default="-", help="input file ('-' or nothing: stdin)")
    ap.add_argument("-o", dest="output", default="-", metavar="FILE", help="output file ('-': stdout, the default)")
    ap.add_argument("-split-input-file", "--split-input-file", dest="split", action="store_true",
                    help="handle each '// -----' chunk of the input as a separate module")
    ap.add_argument("-allow-unregistered-dialect", "--allow-unregistered-dialect", dest="allow_unregistered",
                    action="store_true",
                    help="accept ops of unregistered dialects in the generic form (\"test.foo\"(%%x) : (index) -> ()); "
                         "they are kept as opaque ops and printed back in the generic form")
    ap.add_argument("-verify-each", "--verify-each", dest="verify", action=argparse.BooleanOptionalAction,
                    default=True, help="verify the IR after parsing and after every pass (default: on)")
    ap.add_argument("-test-memref-dependence-check", "--test-memref-dependence-check", dest="dependence_check",
                    action="store_true",
                    help="report on stderr, as MLIR's test pass does, the dependences between every pair of "
                         "affine.load/store ops at every loop depth ('file:line:col: remark: dependence from 0 "
                         "to 1 at depth 1 = [1, 1]'); the module is printed unchanged")
    ap.add_argument("-verify-bounds", "--verify-bounds", dest="verify_bounds", action="store_true",
                    help="prove with isl that every affine access of the input (and of the output of the passes) "
                         "lies inside its memref; a violation is an error (exit status 2)")
    ap.add_argument("-mlir-print-op-generic", "--mlir-print-op-generic", dest="generic", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("-pass-pipeline", "--pass-pipeline", dest="pipeline", default=None, metavar="PIPELINE",
                    help="the passes to run, e.g. 'builtin.module(func.func(canonicalize,"
                         "affine-loop-tile{tile-size=32}))' or 'canonicalize,affine-loop-tile{tile-size=32}' "
                         "(not together with pass flags)")
    ap.add_argument("-print-ir-after-all", "--print-ir-after-all", "-mlir-print-ir-after-all",
                    "--mlir-print-ir-after-all", dest="after_all", action="store_true",
                    help="print the IR to stderr after every pass")
    ap.add_argument("-print-ir-after-change", "--print-ir-after-change", "-mlir-print-ir-after-change",
                    "--mlir-print-ir-after-change", dest="after_change", action="store_true",
                    help="print the IR to stderr after every pass that changed it")
    ap.add_argument("-mlir-timing", "--mlir-timing", "-timing", "--timing", dest="timing", action="store_true",
                    help="print the wall time of every pass to stderr")
    ap.add_argument("-explain", "--explain", dest="explain", action="store_true",
                    help="print every decision of every pass to stderr as 'file:line:col: remark: pass: "
                         "applied|refused|note: reason'")
    ap.add_argument("--version", action="version", version=f"affine-opt (affine-ir {_version()})")
    return ap


def _pass_help() -> str:
    """The 'passes:' section of --help: every pass with its summary and options."""
    from transforms import all_passes

    lines = ["passes (as flags '-NAME' or '-NAME=\"opt=value ...\"', or in --pass-pipeline):"]
    for name, cls in all_passes().items():
        lines.append(f"  -{name:<36} {cls.summary}")
        for opt in cls.options():
            default = "" if opt.default in (None, (), "") else f" (default: {_format_default(opt.default)})"
            lines.append(f"      {opt.name}=<{opt.type_name}>{default}")
            if opt.help:
                lines.append(f"          {opt.help}")
    return "\n".join(lines)


def _format_default(value) -> str:
    from transforms.pass_base import format_option_value

    return format_option_value(value)


def _extract_pass_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split ``argv`` into the other arguments and pipeline elements from pass flags, in order:
    ``-affine-loop-tile="tile-size=32 separate"`` -> ``affine-loop-tile{tile-size=32 separate}``."""
    from transforms import get_pass

    rest, elements = [], []
    for arg in argv:
        m = re.fullmatch(r"--?([A-Za-z][\w.-]*)(?:=(.*))?", arg, re.S)
        if m and get_pass(m.group(1)) is not None:
            opts = (m.group(2) or "").strip()
            if len(opts) >= 2 and opts[0] == opts[-1] and opts[0] in "'\"":
                opts = opts[1:-1]
            if opts.startswith("{") and opts.endswith("}"):
                opts = opts[1:-1]
            elements.append(f"{m.group(1)}{{{opts}}}" if opts else m.group(1))
        else:
            rest.append(arg)
    return rest, elements


@dataclass
class _Options:
    verify: bool = True
    allow_unregistered: bool = False
    dependence_check: bool = False
    pipeline: object = None          # a transforms.PassManager, or None
    after_all: bool = False
    after_change: bool = False
    timing: bool = False
    explain: bool = False
    verify_bounds: bool = False


def _process(text: str, filename: str, line_offset: int, opts: _Options) -> str:
    module = air.parse(text, filename, verify_ir=opts.verify, line_offset=line_offset,
                       allow_unregistered=opts.allow_unregistered)
    if opts.dependence_check:
        from analysis.dependence_check import format_remarks

        _to_stderr(format_remarks(module))
    if opts.verify_bounds:
        from transforms.verify.check_bounds import verify_bounds

        verify_bounds(module)
    if opts.pipeline is not None:
        module = _run_pipeline(module, opts)
        if opts.verify_bounds:
            verify_bounds(module)
    return str(module)


def _run_pipeline(module, opts: _Options):
    pm = opts.pipeline
    try:
        return pm.run(module)
    finally:  # report what ran, also when a pass failed
        _report(pm.trace, opts)


def _report(trace, opts: _Options) -> None:
    parts = []
    for t in trace:
        if opts.explain:
            parts += [_remark(d) for d in t.decisions]
        if opts.after_all or (opts.after_change and t.changed):
            title = type(t.pass_).__name__
            parts.append(f"// -----// IR Dump After {title} ({t.name}) //----- //\n{t.after}")
    if opts.timing and trace:
        parts.append(trace.timing_report() + "\n")
    _to_stderr("".join(p if p.endswith("\n") else p + "\n" for p in parts))


def _remark(d) -> str:
    where = f"{d.location}: " if d.location else ""
    return f"{where}remark: {d.pass_name}: {d.kind}: {d.message}"


def _to_stderr(text: str) -> None:
    if text:
        sys.stdout.flush()  # keep earlier output before these lines when both go to one pipe
        sys.stderr.write(text)
        sys.stderr.flush()


def _read(path: str) -> str:
    """The text of ``path`` ('-': stdin); OSError or UnicodeDecodeError on failure."""
    if path == "-":
        return sys.stdin.buffer.read().decode("utf-8")
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def _error(message: str) -> None:
    print(f"affine-opt: error: {message}", file=sys.stderr)


def _make_pipeline(args, pass_elements: list[str]):
    """The PassManager of the pass flags or --pass-pipeline (None when there are no passes)."""
    from transforms import PassManager

    if args.pipeline is not None and pass_elements:
        raise _UsageError("give passes either as flags or with --pass-pipeline, not both")
    text = args.pipeline if args.pipeline is not None else ",".join(pass_elements)
    if not text.strip():
        return None
    # The IR is printed after each pass only when it is to be dumped.
    return PassManager.parse(text, verify_each=args.verify, capture_ir=args.after_all or args.after_change)


class _UsageError(Exception):
    pass


def affine_opt_main(argv: list[str] | None = None) -> int:
    """Run ``affine-opt``; returns the exit status (0 ok, 1 on any input error, 2 on bad arguments
    or an access out of bounds)."""
    from transforms import PipelineError, TransformError
    from transforms.verify.check_bounds import BoundsError

    argv = sys.argv[1:] if argv is None else list(argv)
    argv, pass_elements = _extract_pass_flags(argv)
    parser = _build_arg_parser()
    if any(a in ("-h", "--help", "-help") for a in argv):
        parser.epilog = (parser.epilog or "") + "\n" + _pass_help()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, bad arguments
        return e.code if isinstance(e.code, int) else 1
    if args.generic:
        _error("the generic op form is not supported")
        return 1
    try:
        pipeline = _make_pipeline(args, pass_elements)
    except (PipelineError, _UsageError) as e:
        _error(str(e.message) if isinstance(e, PipelineError) else str(e))
        return 2
    opts = _Options(args.verify, args.allow_unregistered, args.dependence_check, pipeline, args.after_all,
                    args.after_change, args.timing, args.explain, args.verify_bounds)
    filename = "<stdin>" if args.input == "-" else args.input
    try:
        text = _read(args.input)
    except OSError as e:
        _error(f"cannot read {filename}: {e.strerror or e}")
        return 1
    except UnicodeDecodeError as e:
        _error(f"cannot read {filename}: not UTF-8 text (byte {e.start})")
        return 1
    chunks = split_input(text) if args.split else [(text, 0)]
    try:
        out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    except OSError as e:
        _error(f"cannot write {args.output}: {e.strerror or e}")
        return 1
    failed = 0  # the exit status: 1 for an input error, 2 when an access is out of bounds
    try:
        for k, (chunk, offset) in enumerate(chunks):
            if k:
                out.write(f"{SPLIT_MARKER}\n")  # between chunks, failed ones included, as mlir-opt does
            try:
                out.write(_process(chunk, filename, offset, opts))
            except (air.IRError, TransformError) as e:
                out.flush()  # keep the order of output and errors when both go to one pipe
                print(e.formatted(), file=sys.stderr, flush=True)
                failed = max(failed, 2 if isinstance(e, BoundsError) else 1)
        out.flush()
    except BrokenPipeError:  # the reader went away (``affine-opt x.mlir | head``)
        _silence_stdout()
    finally:
        if out is not sys.stdout:
            out.close()
    return failed


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the flush at exit does not complain again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def main() -> None:
    sys.exit(affine_opt_main())


if __name__ == "__main__":
    main()
