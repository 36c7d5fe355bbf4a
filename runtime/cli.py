"""``affine-opt``: parse, verify and print MLIR text, in the manner of ``mlir-opt``.

Errors go to stderr as ``file:line:col: error: message`` and the exit status is 1.
With ``-split-input-file`` each ``// -----`` chunk is handled on its own, errors are
reported per chunk (line numbers refer to the whole file), the chunks that are fine are
still printed, and the outputs of the chunks (empty for a failed one) are separated by
``// -----`` lines, as ``mlir-opt`` separates them.
"""

from __future__ import annotations

import argparse
import io
import os
import sys

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
  every input (chunk) was fine, 1 otherwise, 2 for bad command-line arguments.

examples:
  affine-opt kernel.mlir                      print the verified, canonical text
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
                    default=True, help="verify the IR after parsing (default: on)")
    ap.add_argument("-test-memref-dependence-check", "--test-memref-dependence-check", dest="dependence_check",
                    action="store_true",
                    help="report on stderr, as MLIR's test pass does, the dependences between every pair of "
                         "affine.load/store ops at every loop depth ('file:line:col: remark: dependence from 0 "
                         "to 1 at depth 1 = [1, 1]'); the module is printed unchanged")
    ap.add_argument("-mlir-print-op-generic", "--mlir-print-op-generic", dest="generic", action="store_true",
                    help=argparse.SUPPRESS)
    ap.add_argument("--version", action="version", version=f"affine-opt (affine-ir {_version()})")
    return ap


def _process(text: str, filename: str, line_offset: int, verify: bool, allow_unregistered: bool,
             dependence_check: bool = False) -> str:
    module = air.parse(text, filename, verify_ir=verify, line_offset=line_offset,
                       allow_unregistered=allow_unregistered)
    if dependence_check:
        from analysis.dependence_check import format_remarks

        remarks = format_remarks(module)
        sys.stdout.flush()  # keep earlier output before these remarks when both go to one pipe
        sys.stderr.write(remarks)
        sys.stderr.flush()
    return str(module)


def _read(path: str) -> str:
    """The text of ``path`` ('-': stdin); OSError or UnicodeDecodeError on failure."""
    if path == "-":
        return sys.stdin.buffer.read().decode("utf-8")
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def _error(message: str) -> None:
    print(f"affine-opt: error: {message}", file=sys.stderr)


def affine_opt_main(argv: list[str] | None = None) -> int:
    """Run ``affine-opt``; returns the exit status (0 ok, 1 on any input error, 2 on bad arguments)."""
    try:
        args = _build_arg_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, bad arguments
        return e.code if isinstance(e.code, int) else 1
    if args.generic:
        _error("the generic op form is not supported")
        return 1
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
    failed = False
    try:
        for k, (chunk, offset) in enumerate(chunks):
            if k:
                out.write(f"{SPLIT_MARKER}\n")  # between chunks, failed ones included, as mlir-opt does
            try:
                out.write(_process(chunk, filename, offset, args.verify, args.allow_unregistered,
                                   args.dependence_check))
            except air.IRError as e:
                out.flush()  # keep the order of output and errors when both go to one pipe
                print(e.formatted(), file=sys.stderr, flush=True)
                failed = True
        out.flush()
    except BrokenPipeError:  # the reader went away (``affine-opt x.mlir | head``)
        _silence_stdout()
    finally:
        if out is not sys.stdout:
            out.close()
    return 1 if failed else 0


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
