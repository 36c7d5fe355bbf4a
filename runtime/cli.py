"""``affine-opt``: parse, verify and print MLIR text, in the manner of ``mlir-opt``.

Errors go to stderr as ``file:line:col: error: message`` and the exit status is 1.
With ``-split-input-file`` each ``// -----`` chunk is handled on its own, errors are
reported per chunk (line numbers refer to the whole file) and outputs are joined by
``// -----`` lines.
"""

from __future__ import annotations

import argparse
import sys

import affine_ir as air

SPLIT_MARKER = "// -----"


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


def _build_arg_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="affine-opt", description="Parse, verify and print affine IR (MLIR text).")
    ap.add_argument("input", nargs="?", default="-", help="input file ('-' for stdin)")
    ap.add_argument("-o", dest="output", default="-", help="output file ('-' for stdout)")
    ap.add_argument("-split-input-file", "--split-input-file", dest="split", action="store_true",
                    help="handle each '// -----' chunk separately")
    ap.add_argument("-verify-each", "--verify-each", dest="verify", action=argparse.BooleanOptionalAction,
                    default=True, help="verify the IR (default: on)")
    ap.add_argument("-mlir-print-op-generic", dest="generic", action="store_true", help=argparse.SUPPRESS)
    return ap


def _process(text: str, filename: str, line_offset: int, verify: bool) -> str:
    module = air.parse(text, filename, verify_ir=verify, line_offset=line_offset)
    return str(module)


def affine_opt_main(argv: list[str] | None = None) -> int:
    """Run ``affine-opt``; returns the exit status (0 ok, 1 on any input error)."""
    args = _build_arg_parser().parse_args(argv)
    if args.generic:
        print("affine-opt: error: the generic op form is not supported", file=sys.stderr)
        return 1
    filename = "<stdin>" if args.input == "-" else args.input
    try:
        text = sys.stdin.read() if args.input == "-" else open(args.input, encoding="utf-8").read()
    except OSError as e:
        print(f"affine-opt: error: cannot read {filename}: {e.strerror}", file=sys.stderr)
        return 1
    chunks = split_input(text) if args.split else [(text, 0)]
    outputs, failed = [], False
    for chunk, offset in chunks:
        try:
            outputs.append(_process(chunk, filename, offset, args.verify))
        except air.IRError as e:
            print(e.formatted(), file=sys.stderr)
            failed = True
    result = f"{SPLIT_MARKER}\n".join(outputs)
    if args.output == "-":
        sys.stdout.write(result)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(result)
    return 1 if failed else 0


def main() -> None:
    sys.exit(affine_opt_main())


if __name__ == "__main__":
    main()
