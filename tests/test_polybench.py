"""The PolyBench/C 4.2 programs of ``benchmarks/polybench/``: each parses, verifies and prints
back to itself, computes what its numpy reference computes (MINI sizes; exactly on integer data),
and keeps its meaning through the GPU pipeline (the interpreter's launch emulation, threads in
both orders) and through the CPU pipeline."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import affine_ir as air
from affine_ir.testing import run
from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders
from transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from transforms.testing import map_to_gpu, run_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import polybench  # noqa: E402

NAMES = sorted(polybench.KERNELS)


def _arrays(args):
    return [a for a in args if isinstance(a, np.ndarray)]


def _close(kernel, want, got, context):
    for k, (w, g) in enumerate(zip(want, got)):
        assert w.shape == g.shape and w.dtype == g.dtype, context
        assert np.allclose(g, w, rtol=kernel.rtol, atol=kernel.rtol * max(1.0, float(np.abs(w).max(initial=0)))), (
            f"{context}: array {k} differs by up to {np.abs(g.astype(np.float64) - w).max()}")


@pytest.mark.parametrize("name", NAMES)
def test_program_parses_verifies_and_prints_back(name):
    k = polybench.KERNELS[name]
    m = k.module()
    air.verify(m)
    text = str(m)
    assert str(air.parse(text)) == text
    assert len(m.functions) == 1 and m.functions[0].sym_name == name.replace("-", "_")
    assert [a.name_hint for a in m.functions[0].args[: len(k.params)]] == [p.lower() for p in k.params]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("exact", [True, False])
def test_program_computes_the_reference(name, exact):
    k = polybench.KERNELS[name]
    if exact and not k.exact_ok:
        pytest.skip(f"{name}: no integer-valued inputs keep its results exact ({k.notes})")
    args = k.arguments("MINI", exact=exact)
    got = run(k.module(), args)
    k.reference(*args)
    want = _arrays(args)
    if exact:
        for w, g in zip(want, got):
            assert np.array_equal(w, g), f"{name}: the interpreter and numpy differ on integer data"
    else:
        _close(k, want, got, f"{name} (PolyBench data)")


@pytest.mark.parametrize("name", NAMES)
def test_gpu_pipeline_keeps_the_meaning(name):
    k = polybench.KERNELS[name]
    m = k.module()
    args = k.arguments("MINI", exact=True)
    want = run(m, args)
    out, _ = map_to_gpu(m, GPU_PIPELINE)
    if k.exact_ok:
        assert_same_bits_in_both_thread_orders(want, out, args, name)
    else:
        _close(k, want, run(out, args), f"{name} through the GPU pipeline")


@pytest.mark.parametrize("name", NAMES)
def test_cpu_pipeline_keeps_the_meaning(name):
    k = polybench.KERNELS[name]
    m = k.module()
    args = k.arguments("MINI", exact=True)
    want = run(m, args)
    got = run(run_pipeline(CPU_PIPELINE, m), args)
    if k.exact_ok:
        for w, g in zip(want, got):
            assert np.array_equal(w, g), f"{name}: the CPU pipeline changed the result"
    else:
        _close(k, want, got, f"{name} through the CPU pipeline")
