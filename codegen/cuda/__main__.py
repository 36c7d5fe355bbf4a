"""``python -m codegen.cuda input.mlir [--fast-math] [--contract] [--specs]``: print the CUDA C of a
mapped module (what ``codegen.cuda.emit`` returns), for golden tests and for reading.

``--specs`` prints each kernel's launch metadata after the source, as ``//`` comments. Errors
print as ``file:line:col: error: message`` on stderr with exit status 1.
"""

from __future__ import annotations

import argparse
import sys

import affine_ir as air

from . import emit


def describe(program) -> str:
    """The launch metadata of ``program``'s kernels, one ``//`` comment line each."""
    out = []
    for k in program.kernels:
        params = ", ".join(p.name + (f"=dim{p.dim}" if p.kind == "dim" else "") for p in k.params)
        needs = f", needs {k.min_arch}" if k.min_arch else ""
        out.append(f"// kernel {k.name}: block {k.block}, static shared {k.static_shared_bytes} B, "
                   f"dynamic shared {k.dynamic_shared_bytes} B, params ({params}){needs}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m codegen.cuda", description=__doc__.split("\n")[0])
    ap.add_argument("input", help="a .mlir file ('-' for stdin)")
    ap.add_argument("--fast-math", action="store_true", help="f32 math functions, FMA contraction")
    ap.add_argument("--contract", action="store_true", help="let NVRTC contract a * b + c into an FMA")
    ap.add_argument("--specs", action="store_true", help="print the kernels' launch metadata too")
    ns = ap.parse_args(argv)
    try:
        text = sys.stdin.read() if ns.input == "-" else open(ns.input).read()
        module = air.parse(text, ns.input)
        program = emit(module, fast_math=ns.fast_math, contract=ns.contract)
    except air.IRError as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(program.source)
    if ns.specs:
        sys.stdout.write(describe(program) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
