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
from affine_ir.testing import assert_equivalent, fusion_programs_with_inputs, programs_with_inputs, run
from runtime import LaunchError

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
FAST = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
GPU = runtime.gpu_available()
L = air.library


def _data(module, seed=0, symbol=5, dtype_map=None) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for a in module.functions[0].args:
        t = a.type
        if not hasattr(t, "shape"):
            out.append(symbol)
            continue
        dims = tuple(symbol if d is None else d for d in t.shape)
        dt = air.testing.numpy_dtype(t.element_type)
        out.append((rng.integers(-3, 4, size=dims).astype(np.float32) / 4).astype(dt))
    return out


LIBRARY = {
    "matmul": lambda: L.matmul(37, 50, 19),
    "matmul_sym": lambda: L.matmul("M", 40, "K"),
    "matmul_bf16": lambda: L.matmul(16, 24, 32, dtype="bf16"),
    "matmul_f16": lambda: L.matmul(16, 24, 32, dtype="f16"),
    "batch_matmul": lambda: L.batch_matmul(3, 8, 9, 10),
    "conv2d": lambda: L.conv2d(2, 3, 9, 9, 4, 3, 3, stride=2, padding=1),
    "conv2d_bias_relu": lambda: L.conv2d_bias_relu(1, 2, 6, 6, 3, 3, 3),
    "depthwise": lambda: L.depthwise_conv2d(1, 3, 8, 8, 3, 3),
    "max_pool": lambda: L.max_pool2d(1, 2, 8, 8, (2, 2), stride=2),
    "avg_pool": lambda: L.avg_pool2d(1, 2, 8, 8, (3, 3)),
    "softmax": lambda: L.softmax((33, 70)),
    "softmax_f16": lambda: L.softmax((8, 40), dtype="f16"),
    "layernorm": lambda: L.layernorm(9, 64),
    "attention": lambda: L.attention(1, 2, 16, 8),
    "attention_causal": lambda: L.attention(1, 1, 12, 8, causal=True),
    "mlp": lambda: L.mlp(8, 16, 32),
    "gelu": lambda: L.gelu((5, 300)),
    "chain": lambda: L.elementwise_chain(["relu", "add", "exp", "mul"], (7, 45)),
    "reduce": lambda: L.reduce("sum", (6, 70), 1),
}


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
    k = runtime.compile(module, target="cuda")
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
