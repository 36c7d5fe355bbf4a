"""Speed of the dependence analysis on a chain of loop nests (issue 3's speed criterion).

The function holds ``--nests`` loop nests of depth 3 (default 10) communicating through
memrefs: even nests are matmul-like (``T[n+1][i, j] += T[n][i, k] * W[k, j]``), odd ones a
1-d convolution along ``i`` (``T[n+1][i, j] += T[n][i + k, j] * V[k]``); each reads the
previous nest's result and a weight shared by all. Timed, as the median of ``--repeat``
runs, each from the parsed IR (nothing cached between runs): building the
``DependenceGraph`` of the function (exact memref edges between nests), and computing
``dependences(func)`` (every dependence of every pair of accesses, with depths and
distance ranges). Run::

    python benchmarks/dependences.py [--nests 10] [--size 64] [--repeat 7]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import affine_ir as air
from analysis.dependence_graph import DependenceGraph
from analysis.dependences import dependences

MATMUL = """\
  affine.for %i{n} = 0 to {S} {{
    affine.for %j{n} = 0 to {S} {{
      affine.for %k{n} = 0 to {S} {{
        %a{n} = affine.load %T{n}[%i{n}, %k{n}] : memref<{R}x{S}xf32>
        %w{n} = affine.load %W[%k{n}, %j{n}] : memref<{S}x{S}xf32>
        %c{n} = affine.load %T{m}[%i{n}, %j{n}] : memref<{R}x{S}xf32>
        %p{n} = arith.mulf %a{n}, %w{n} : f32
        %s{n} = arith.addf %c{n}, %p{n} : f32
        affine.store %s{n}, %T{m}[%i{n}, %j{n}] : memref<{R}x{S}xf32>
      }}
    }}
  }}
"""

CONV = """\
  affine.for %i{n} = 0 to {S} {{
    affine.for %j{n} = 0 to {S} {{
      affine.for %k{n} = 0 to {K} {{
        %a{n} = affine.load %T{n}[%i{n} + %k{n}, %j{n}] : memref<{R}x{S}xf32>
        %v{n} = affine.load %V[%k{n}] : memref<{K}xf32>
        %c{n} = affine.load %T{m}[%i{n}, %j{n}] : memref<{R}x{S}xf32>
        %p{n} = arith.mulf %a{n}, %v{n} : f32
        %s{n} = arith.addf %c{n}, %p{n} : f32
        affine.store %s{n}, %T{m}[%i{n}, %j{n}] : memref<{R}x{S}xf32>
      }}
    }}
  }}
"""


def chain_program(nests: int = 10, size: int = 64, taps: int = 3) -> str:
    """MLIR text of the benchmark function (rows padded by ``taps - 1`` for the convolutions)."""
    rows = size + taps - 1
    args = [f"%T{n}: memref<{rows}x{size}xf32>" for n in range(nests + 1)]
    args += [f"%W: memref<{size}x{size}xf32>", f"%V: memref<{taps}xf32>"]
    body = "".join((MATMUL if n % 2 == 0 else CONV).format(n=n, m=n + 1, S=size, R=rows, K=taps)
                   for n in range(nests))
    return f"func.func @chain({', '.join(args)}) {{\n{body}  return\n}}\n"


def _median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nests", type=int, default=10)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    text = chain_program(args.nests, args.size)
    func = air.parse(text, "chain.mlir").body.ops[0]
    accesses = sum(1 for op in func.walk() if op.name in ("affine.load", "affine.store"))
    print(f"# {platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
          f"{args.nests} nests of depth 3, {accesses} accesses, {args.size}x{args.size} f32 arrays, "
          f"median of {args.repeat}")
    t_graph, graph = _median_time(lambda: DependenceGraph(func), args.repeat)
    t_deps, deps = _median_time(lambda: dependences(func), args.repeat)
    rar_time, rar_graph = _median_time(lambda: DependenceGraph(func, include_rar=True), args.repeat)
    rows = [
        ("DependenceGraph(func)", f"{len(graph.nodes)} nodes, {sum(e.kind != 'SSA' for e in graph.edges)} memref edges",
         t_graph),
        ("DependenceGraph(func, include_rar=True)",
         f"{len(rar_graph.nodes)} nodes, {sum(e.kind != 'SSA' for e in rar_graph.edges)} memref edges", rar_time),
        ("dependences(func)", f"{len(deps)} dependences ({sum(d.is_loop_carried for d in deps)} loop-carried)", t_deps),
    ]
    w0, w1 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
    print(f"| {'what':<{w0}} | {'result':<{w1}} | median (s) |")
    print(f"|{'-' * (w0 + 2)}|{'-' * (w1 + 2)}|-----------:|")
    for what, result, t in rows:
        print(f"| {what:<{w0}} | {result:<{w1}} | {t:10.3f} |")

if __name__ == "__main__":
    main()
