"""The main job: one real workload through every stage that exists today.

Builds an MLP block (matmul + bias + GELU, stage S1/S2 of the PolyBlocks pipeline) from
the op library, prints its loop nests, verifies it, round-trips it through MLIR text (and
through upstream MLIR's parser when ``iree-opt`` is installed), then runs the reference
optimizes it with the mid-level passes (stage S3: canonicalize, two-level tiling, copy
generation into workgroup memory, unroll-jam into a register tile, scalar replacement), fuses
it into one nest (loop fusion + scalar replacement: no temporary left), runs
the reference interpreter on the optimized program and checks it against the unoptimized
one (exactly) and against numpy, and finally compiles and runs it for real through
``runtime.compile(target="auto")``: on the GPU when one is usable (gpu-map, CUDA C, NVRTC,
cuda-python launch), else on the CPU (the CPU pipeline: fusion, cache and register tiles,
vectorization, threads; LLVM IR, llvmlite JIT), checked against the interpreter.
Each stage reports what it did and how long it took.

Usage: ``python examples/main.py [--m 32 --n 48 --k 40] [--dtype f32|f16|bf16] [--quiet]``
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time

import numpy as np

import affine_ir as air
from affine_ir.library import reference
from transforms import PassManager

#: Stage S3 for the MLP: tiles of 16x16x16 split into 4x8x8, each block tile's footprint copied
#: into workgroup memory (48 KiB, rows padded by 1 against bank conflicts), the point loops
#: unroll-jammed by 2 into a 2x2 register tile whose accumulators scalrep moves to iter_args.
S3_PIPELINE = ("canonicalize,"
               "affine-loop-tile{tile-levels=2 tile-sizes=16,16,16,4,8,8},"
               "affine-data-copy-generate{fast-mem-space=workgroup fast-mem-capacity=48 padding=1},"
               "affine-loop-unroll-jam{unroll-jam-factor=2 loop-depth=6},"
               "affine-loop-unroll-jam{unroll-jam-factor=2 loop-depth=7},"
               "affine-scalrep,canonicalize,cse")

#: Fusion (the other S3 route, before tiling in later issues): the three nests become one, the
#: temporary a private 1x1 buffer that scalar replacement turns into a register.
FUSION_PIPELINE = "affine-loop-fusion,affine-scalrep,canonicalize"


def _stage(name: str, detail: str, t0: float) -> None:
    print(f"[{name:<10}] {detail}  ({(time.perf_counter() - t0) * 1e3:.1f} ms)")


def _random(shape, dtype, rng):
    import ml_dtypes

    np_dtype = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[dtype]
    return rng.integers(-3, 4, size=shape).astype(np.float32).astype(np_dtype) / np_dtype(4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--k", type=int, default=40)
    ap.add_argument("--dtype", default="f32", choices=("f32", "f16", "bf16"))
    ap.add_argument("--quiet", action="store_true", help="do not print the IR")
    args = ap.parse_args(argv)
    M, N, K = args.m, args.n, args.k

    t0 = time.perf_counter()
    module = air.library.mlp(M, N, K, dtype=args.dtype, activation="gelu")
    nests = [op for op in module.functions[0].body.ops if op.name == "affine.for"]
    allocs = [op for op in module.functions[0].body.ops if op.name == "memref.alloc"]
    _stage("S1/S2", f"mlp {M}x{N}x{K} {args.dtype}: {len(nests)} loop nests, {len(allocs)} temporaries", t0)
    if not args.quiet:
        print(module)

    t0 = time.perf_counter()
    air.verify(module)
    n_ops = sum(1 for _ in module.walk())
    _stage("verify", f"{n_ops} ops verified", t0)

    t0 = time.perf_counter()
    text = str(module)
    again = air.parse(text, "mlp.mlir")
    ok = air.structurally_equal(module, again) and str(again) == text
    _stage("round trip", f"print -> parse -> print: {'fixpoint, structurally equal' if ok else 'MISMATCH'}", t0)
    if not ok:
        return 1

    if shutil.which("iree-opt"):
        t0 = time.perf_counter()
        res = subprocess.run(["iree-opt", "--verify-each"], input=text, capture_output=True, text=True)
        _stage("MLIR", "upstream MLIR (iree-opt) parses and verifies the text" if res.returncode == 0
               else f"upstream MLIR rejected the text:\n{res.stderr}", t0)
        if res.returncode != 0:
            return 1

    t0 = time.perf_counter()
    pm = PassManager.parse(S3_PIPELINE)
    optimized = pm.run(module)
    _stage("S3", f"{len(pm.trace)} passes, {len(pm.trace.decisions)} decisions, output verified after each", t0)
    for t in pm.trace:
        print(f"    {t.summary()}")
        for d in t.decisions if not args.quiet else []:
            if d.kind != "note" or t.name != "affine-data-copy-generate":
                print(f"      {d.kind}: {d.message[:150]}")
    if not args.quiet:
        print(optimized)
    if shutil.which("iree-opt"):
        t0 = time.perf_counter()
        res = subprocess.run(["iree-opt", "--verify-each"], input=str(optimized), capture_output=True, text=True)
        _stage("MLIR", "upstream MLIR (iree-opt) parses and verifies the optimized text" if res.returncode == 0
               else f"upstream MLIR rejected the optimized text:\n{res.stderr}", t0)
        if res.returncode != 0:
            return 1

    t0 = time.perf_counter()
    pm = PassManager.parse(FUSION_PIPELINE)
    fused = pm.run(module)
    body = fused.functions[0].body.ops
    n_nests = sum(op.name == "affine.for" for op in body)
    n_tmp = sum(op.name == "memref.alloc" for op in body)
    _stage("fusion", f"{FUSION_PIPELINE}: {len(nests)} nests -> {n_nests}, {len(allocs)} temporaries -> {n_tmp}", t0)
    for d in pm.trace.decisions if not args.quiet else []:
        print(f"      {d.kind}: {d.message[:150]}")

    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    X, W, bias = _random((M, K), args.dtype, rng), _random((K, N), args.dtype, rng), _random((N,), args.dtype, rng)
    Y0 = np.zeros((M, N), dtype=X.dtype)
    air.interpret(module, X, W, bias, Y0)
    Y = np.zeros((M, N), dtype=X.dtype)
    air.interpret(optimized, X, W, bias, Y)
    Yf = np.zeros((M, N), dtype=X.dtype)
    air.interpret(fused, X, W, bias, Yf)
    same = np.array_equal(Y.view(np.uint8), Y0.view(np.uint8)) and np.array_equal(Yf.view(np.uint8), Y0.view(np.uint8))
    want = reference.mlp(X, W, bias, activation="gelu")
    tol = {"f32": 1e-5, "f16": 1e-2, "bf16": 2e-2}[args.dtype]
    err = float(np.max(np.abs(Y.astype(np.float64) - want.astype(np.float64))))
    good = np.allclose(Y.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
    _stage("interpret", f"{M * N * K} MACs on the CPU reference interpreter, original, optimized and fused: "
           f"{'bit-identical' if same else 'DIFFERENT'}; max |error| vs numpy {err:.2e} "
           f"({'ok' if good else 'FAIL'}, tolerance {tol})", t0)
    good = good and same

    # S4/S5: compile and run for real -- the GPU when one is usable, else the CPU.
    import runtime

    target = runtime.resolve_target("auto")
    t0 = time.perf_counter()
    exe = runtime.compile(module, target=target)
    what = (f"the GPU pipeline + CUDA C ({len(exe.kernels)} kernels) + NVRTC {exe.image.kind} for {exe.image.arch}"
            if target == "cuda" else "the CPU pipeline (fusion, cpu-schedule, threads) -> LLVM IR -> llvmlite JIT")
    _stage("compile", f"target {target}: {what}", t0)
    shown = ("affine-loop-fusion", "cpu-schedule", "affine-parallelize", "gpu-schedule", "gpu-map-reductions",
             "gpu-map")
    for d in exe.trace.decisions if not args.quiet else []:
        if d.pass_name in shown and d.kind == "applied":
            print(f"      {d.pass_name}: {d.message[:150]}")
    t0 = time.perf_counter()
    Yr = np.zeros((M, N), dtype=X.dtype)
    exe(X, W, bias, Yr)
    exact = np.array_equal(Yr.view(np.uint8), Y0.view(np.uint8))
    err_r = float(np.max(np.abs(Yr.astype(np.float64) - Y0.astype(np.float64))))
    ran_ok = exact or err_r <= tol
    _stage("run", f"on {target}: {'bit-identical to the interpreter' if exact else f'max |diff| {err_r:.2e}'} "
           f"({'ok' if ran_ok else 'FAIL'})", t0)
    good = good and ran_ok
    print("main job:", "PASSED" if good else "FAILED")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
