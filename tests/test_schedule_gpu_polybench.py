"""``gpu-schedule`` on the PolyBench contractions (issue 17), their sizes compile-time constants as
PolyBench/C compiles them (``Kernel.module(dataset)``): gemm, 2mm, 3mm (``C = beta * C + A @ B``,
partial tiles whose initial values read memory) and syrk, syr2k (triangular bands ``for i { for j
<= i }``) become shared-memory tiled kernels with register tiles at sizes no tile divides (MINI,
SMALL); their results equal the interpreter's exactly (integer-valued PolyBench data) on the launch
emulation in both thread orders, and the CUDA printer's source compiles with NVRTC (no GPU needed).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import codegen.cuda as cc
from affine_ir.dialects.affine import AffineIfOp, AffineLoadOp
from affine_ir.dialects.gpu import LaunchOp
from affine_ir.testing import run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms.pipelines import GPU_PIPELINE
from transforms.testing import map_to_gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import polybench  # noqa: E402

#: kernel -> (contractions scheduled, whether their band is triangular)
TILED = {"gemm": (1, False), "2mm": (2, False), "3mm": (3, False), "syrk": (1, True), "syr2k": (1, True)}
BLOCK = re.compile(r"contraction \((triangular )?(\d+)x(\d+), k \d+\) .*block tile (\d+)x(\d+), k step \d+, "
                   r"register tile (\d+)x(\d+)")


def _scheduled(decisions) -> list[re.Match]:
    return [BLOCK.match(d.message) for d in decisions
            if d.pass_name == "gpu-schedule" and d.kind == "applied" and BLOCK.match(d.message)]


def _guarded_loads(module) -> int:
    """``affine.if`` ops with results whose then-branch loads: the guarded initial values and the
    guarded packed copies."""
    return sum(1 for op in module.walk() if isinstance(op, AffineIfOp) and op.results
               and any(isinstance(o, AffineLoadOp) for o in op.then_block.ops))


@pytest.mark.parametrize("dataset", ["MINI", "SMALL"])
@pytest.mark.parametrize("name", sorted(TILED))
def test_contraction_is_tiled_and_exact(name, dataset):
    k = polybench.KERNELS[name]
    m = k.module(dataset)
    args = k.arguments(dataset, exact=True)
    want = run(m, args)
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    count, triangular = TILED[name]
    tiled = _scheduled(decisions)
    assert len(tiled) == count, [d.message for d in decisions if d.pass_name == "gpu-schedule"]
    partial = False
    for match in tiled:
        assert bool(match.group(1)) == triangular, match.group(0)
        rows, cols, bm, bn, tm, tn = map(int, match.groups()[1:])
        assert tm * tn > 1
        partial |= bool(rows % bm or cols % bn)
    assert partial or triangular, "the sizes must exercise the guards"
    text = str(out)
    assert "#gpu.address_space<workgroup>" in text and "gpu.barrier" in text
    assert _guarded_loads(out) > 0
    assert_same_bits_in_both_thread_orders(want, out, args, f"{name} {dataset}")


@pytest.mark.parametrize("name", sorted(TILED))
def test_tiled_contraction_prints_and_compiles_with_nvrtc(name):
    pytest.importorskip("cuda.bindings.nvrtc")
    from test_cuda_emit import assert_clean_compile

    out, _ = map_to_gpu(polybench.KERNELS[name].module("SMALL"), GPU_PIPELINE)
    launches = sum(1 for op in out.walk() if isinstance(op, LaunchOp))
    program = cc.emit(out)
    assert len(program.kernels) == launches
    assert "__shared__" in program.source and "__syncthreads();" in program.source
    assert_clean_compile(program)


@pytest.mark.parametrize("name, triangular", [("covariance", True), ("correlation", True)])
def test_the_statistics_kernels_tile_their_triangular_main_nest(name, triangular):
    k = polybench.KERNELS[name]
    m = k.module("MINI")
    args = k.arguments("MINI", exact=True)
    want = run(m, args)
    out, decisions = map_to_gpu(m, GPU_PIPELINE)
    tiled = _scheduled(decisions)
    assert len(tiled) == 1 and bool(tiled[0].group(1)) == triangular, tiled
    if k.exact_ok:
        assert_same_bits_in_both_thread_orders(want, out, args, name)
    else:  # divisions and square roots: the same ops in the same order, so the same bits here too
        assert all((w == g).all() for w, g in zip(want, run(out, args))), name
