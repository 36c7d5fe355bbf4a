"""The CUDA path end to end: ``runtime.compile(m, target="cuda")`` (gpu-map, CUDA C, NVRTC).

Without a GPU (CI): every library op and random programs map, print and compile with NVRTC
for sm_90 with no warnings, and calling the result raises a clear LaunchError. With a GPU
(tests marked ``gpu``, run on the device machine): library ops at several shapes and dtypes
and >= 200 random programs give the interpreter's results; numpy, CuPy and PyTorch inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import affine_ir as air
import runtime
from affine_ir.library import reference
from affine_ir.testing import (
    LIBRARY_CASES,
    assert_equivalent,
    fusion_programs_with_inputs,
    library_inputs,
    programs_with_inputs,
    run,
)
from runtime import LaunchError

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
GPU = runtime.gpu_available()
L = air.library


_data = library_inputs
LIBRARY = LIBRARY_CASES


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_compiles_for_sm90_without_warnings(name):
    k = runtime.compile(LIBRARY[name](), target="cuda", arch="sm_90")
    assert k.image.kind == "cubin" and len(k.image.image) > 0
    assert not k.image.log.strip(), k.image.log
    assert '__global__' in k.source and len(k.kernels) >= 1


@settings(max_examples=100, **FAST)
@given(fusion_programs_with_inputs())
def test_random_programs_compile_for_sm90(case):
    module, _ = case
    k = runtime.compile(module, target="cuda", arch="sm_90")
    assert not k.image.log.strip(), k.image.log


@pytest.mark.skipif(GPU, reason="checks the error without a GPU")
def test_calling_without_a_gpu_is_a_clear_error():
    m = L.relu((4, 4))
    k = runtime.compile(m, target="cuda")
    with pytest.raises(LaunchError, match="GPU"):
        k(*_data(m))


def test_auto_target_without_gpu_is_cpu():
    assert runtime.resolve_target("auto") == ("cuda" if GPU else "cpu")


# -- on the GPU --------------------------------------------------------------------------------------
def _tolerance(module) -> float:
    text = str(module)
    return 3e-2 if ("bf16" in text or "f16" in text) else 1e-5


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_on_gpu_matches_the_interpreter(name):
    m = LIBRARY[name]()
    k = runtime.compile(m, target="cuda")
    for seed in range(2):
        args = _data(m, seed)
        want = run(m, args)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        k(*got)
        tol = _tolerance(m)
        for w, g in zip(want, got):
            if isinstance(w, np.ndarray):
                np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
def test_random_programs_on_gpu_match_the_interpreter():
    count = {"n": 0}

    @settings(max_examples=150, **FAST)
    @given(fusion_programs_with_inputs())
    def fusion_case(case):
        module, args = case
        _check_gpu(module, args)
        count["n"] += 1

    @settings(max_examples=100, **FAST)
    @given(programs_with_inputs())
    def general_case(case):
        module, args = case
        _check_gpu(module, args)
        count["n"] += 1

    fusion_case()
    general_case()
    assert count["n"] == 250


def _check_gpu(module, args) -> None:
    k = runtime.compile(module, target="cuda", fast_math=False)  # exact: double math, and FMAs of
    # quarter-integer data round as the separate operations
    want = run(module, args)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    k(*got)
    for w, g in zip(want, got):
        if isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
def test_device_arrays_from_cupy_and_torch():
    m = L.matmul(64, 48, 32)
    k = runtime.compile(m, target="cuda")
    A, B, C = _data(m)
    want = reference.matmul(A, B)
    cp = pytest.importorskip("cupy")
    Cg = cp.zeros_like(cp.asarray(C))
    k(cp.asarray(A), cp.asarray(B), Cg)
    np.testing.assert_allclose(cp.asnumpy(Cg), want, rtol=1e-5, atol=1e-5)
    torch = pytest.importorskip("torch")
    Ct = torch.zeros(C.shape, device="cuda")
    k(torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda(), Ct)
    np.testing.assert_allclose(Ct.cpu().numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs an NVIDIA GPU")
def test_thousand_calls_leave_device_memory_where_it_started():
    from runtime import cuda_driver

    m = L.softmax((64, 128))
    k = runtime.compile(m, target="cuda")
    args = _data(m)
    k(*args)
    cuda_driver.synchronize()
    live0, (free0, _) = cuda_driver.live_allocations(), cuda_driver.memory_info()
    for _ in range(1000):
        k(*args)
    cuda_driver.synchronize()
    live1, (free1, _) = cuda_driver.live_allocations(), cuda_driver.memory_info()
    assert live1 == live0
    assert abs(free1 - free0) <= 16 << 20
    assert_equivalent(m, m, args)
