"""The CUDA runtime layer: NVRTC compiles and caches (no GPU needed), launch checks and argument
checks (pure), and -- marked ``gpu``, skipped without a usable GPU -- launches on the device with
numpy, CuPy and PyTorch arrays, refusals before launch, memory after 1,000 calls, timing."""

from __future__ import annotations

import ctypes
import math
import os
import struct

import ml_dtypes
import numpy as np
import pytest

from affine_ir.types import bf16, f16, f32, i1, i8, i32, index, memref
from runtime import cuda_arrays, cuda_driver, cuda_launch, nvrtc
from runtime.cuda_arrays import DeviceArgument, check_array, prepare_arguments, scalar_argument
from runtime.cuda_driver import Device, FunctionAttributes, check_launch, gpu_available, pack_arguments
from runtime.errors import CompileError, LaunchError

HAVE_GPU = gpu_available()
gpu = pytest.mark.gpu
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no usable GPU: {cuda_driver.gpu_unavailable_reason()}")
no_gpu_here = pytest.mark.skipif(HAVE_GPU, reason="checks the behaviour without a GPU")

SAXPY = """\
extern "C" __global__ void saxpy(const float* __restrict__ x, float* __restrict__ y, float a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""

HALF_MMA = """\
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void halves(__half* h, __nv_bfloat16* b, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = __hadd(h[i], __float2half(1.0f));
    b[i] = __float2bfloat16(__bfloat162float(b[i]) * 2.0f);
  }
}

extern "C" __global__ void wmma_16x16(const __half* a, const __half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
"""


@pytest.fixture(autouse=True, scope="module")
def _private_disk_cache(tmp_path_factory):
    """Keep this module's compiles out of the user's cache directory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AFFINE_IR_CACHE", str(tmp_path_factory.mktemp("nvrtc-cache")))
        yield


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh disk cache and an empty memory cache."""
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path))
    nvrtc.clear_memory_cache()
    yield tmp_path
    nvrtc.clear_memory_cache()


# -- NVRTC (no GPU needed) -----------------------------------------------------------------------------

def test_nvrtc_version_and_headers():
    major, minor = nvrtc.nvrtc_version()
    assert major >= 12 and minor >= 0
    dirs = nvrtc.include_dirs()
    for header in ("cuda_fp16.h", "cuda_bf16.h", "mma.h"):
        assert any(os.path.exists(os.path.join(d, header)) for d in dirs), header


def test_compile_cubin_clean(cache_dir):
    img = nvrtc.compile_cuda(SAXPY, "sm_90")
    assert img.kind == "cubin" and img.arch == "sm_90"
    assert img.image[:4] == b"\x7fELF"
    assert b"saxpy" in img.image
    assert img.options[:2] == ("-arch=sm_90", "-std=c++17")
    assert any(o.startswith("-I") for o in img.options)
    assert img.log == "" and img.warnings == []
    assert img.source == SAXPY


def test_compile_fp16_bf16_mma_headers_without_warnings(cache_dir):
    img = nvrtc.compile_cuda(HALF_MMA, "sm_90")
    assert img.warnings == [], img.log
    assert b"halves" in img.image and b"wmma_16x16" in img.image


@pytest.mark.parametrize("arch,ptx", [("sm_90", True), ("compute_90", False)])
def test_compile_ptx(cache_dir, arch, ptx):
    img = nvrtc.compile_cuda(SAXPY, arch, ptx=ptx)
    assert img.kind == "ptx" and img.arch == "compute_90"
    assert img.image.endswith(b"\0")
    assert ".target sm_90" in img.ptx and ".entry saxpy" in img.ptx
    assert img.options[0] == "-arch=compute_90"
    with pytest.raises(ValueError):
        _ = nvrtc.compile_cuda(SAXPY, "sm_90").ptx


def test_user_options_come_last(cache_dir):
    img = nvrtc.compile_cuda(SAXPY, options=["-lineinfo"])
    assert img.options[-1] == "-lineinfo"


def test_warnings_are_kept(cache_dir):
    src = SAXPY.replace("long long i =", "int unused_var; long long i =")
    img = nvrtc.compile_cuda(src)
    assert img.kind == "cubin"
    assert img.warnings and "unused_var" in img.log


def test_compile_error_carries_log_source_and_options(cache_dir):
    lines = SAXPY.splitlines()
    bad_line = 3  # 1-based: the assignment
    lines[bad_line - 1] = "  if (i < n) y[i] = a * x[i] + undefined_name;"
    src = "\n".join(lines) + "\n"
    with pytest.raises(CompileError) as info:
        nvrtc.compile_cuda(src, "sm_90", options=["-lineinfo"])
    e = info.value
    assert "undefined_name" in e.log and "error" in e.log
    assert e.source == src
    assert e.options["arch"] == "sm_90" and e.options["kind"] == "cubin"
    assert "-std=c++17" in e.options["flags"] and e.options["flags"][-1] == "-lineinfo"
    text = str(e)
    assert f"kernel.cu:{bad_line}:" in text  # the first error, located
    assert f"{bad_line} | {lines[bad_line - 1]}" in text  # the numbered source line it points at
    assert "-lineinfo" in text  # the options
    assert f"{bad_line} | " in e.numbered_source


def test_compile_error_bad_option_and_arch(cache_dir):
    with pytest.raises(CompileError) as info:
        nvrtc.compile_cuda(SAXPY, options=["-no-such-option"])
    assert "-no-such-option" in str(info.value)
    with pytest.raises(CompileError, match="unknown CUDA architecture"):
        nvrtc.compile_cuda(SAXPY, "sm_9x")


def test_normalize_arch():
    assert nvrtc.normalize_arch("sm_90") == ("sm_90", "cubin")
    assert nvrtc.normalize_arch("sm_90a") == ("sm_90a", "cubin")
    assert nvrtc.normalize_arch("sm_90", ptx=True) == ("compute_90", "ptx")
    assert nvrtc.normalize_arch("compute_80") == ("compute_80", "ptx")
    assert nvrtc.normalize_arch(90) == ("sm_90", "cubin")


def test_cache_memory_then_disk(cache_dir):
    before = nvrtc.cache_info()
    a = nvrtc.compile_cuda(SAXPY)
    after = nvrtc.cache_info()
    assert after["compiles"] == before["compiles"] + 1
    assert len(list(cache_dir.glob("*.cubin"))) == 1 and len(list(cache_dir.glob("*.nvrtc.json"))) == 1
    b = nvrtc.compile_cuda(SAXPY)
    assert b is a and nvrtc.cache_info()["memory_hits"] == after["memory_hits"] + 1
    nvrtc.clear_memory_cache()
    c = nvrtc.compile_cuda(SAXPY)
    info = nvrtc.cache_info()
    assert info["disk_hits"] == after["disk_hits"] + 1 and info["compiles"] == after["compiles"]
    assert (c.image, c.kind, c.arch, c.options, c.log, c.source) == (a.image, a.kind, a.arch, a.options, a.log,
                                                                       a.source)
    nvrtc.compile_cuda(SAXPY, cache=False)
    assert nvrtc.cache_info()["compiles"] == info["compiles"] + 1
    # each part of the key makes a new entry
    for kwargs in ({"arch": "sm_80"}, {"ptx": True}, {"options": ["-lineinfo"]}, {"name": "other.cu"}):
        n = nvrtc.cache_info()["compiles"]
        nvrtc.compile_cuda(SAXPY, **kwargs)
        assert nvrtc.cache_info()["compiles"] == n + 1, kwargs
    n = nvrtc.cache_info()["compiles"]
    nvrtc.compile_cuda(SAXPY + "\n// changed\n")
    assert nvrtc.cache_info()["compiles"] == n + 1


def test_cache_key_parts():
    base = nvrtc.cache_key("src", ("-arch=sm_90",), "sm_90", "cubin")
    assert base == nvrtc.cache_key("src", ("-arch=sm_90",), "sm_90", "cubin")
    variants = [nvrtc.cache_key("src2", ("-arch=sm_90",), "sm_90", "cubin"),
                nvrtc.cache_key("src", ("-arch=sm_90", "-G"), "sm_90", "cubin"),
                nvrtc.cache_key("src", ("-arch=sm_90",), "sm_80", "cubin"),
                nvrtc.cache_key("src", ("-arch=sm_90",), "sm_90", "ptx"),
                nvrtc.cache_key("src", ("-arch=sm_90",), "sm_90", "cubin", "b.cu")]
    assert len({base, *variants}) == 6


def test_cache_key_depends_on_nvrtc_version(monkeypatch):
    base = nvrtc.cache_key("src", (), "sm_90", "cubin")
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (99, 9))
    assert nvrtc.cache_key("src", (), "sm_90", "cubin") != base


def test_memory_cache_is_bounded(cache_dir, monkeypatch):
    monkeypatch.setattr(nvrtc, "MEMORY_CACHE_SIZE", 2)
    for k in range(4):
        nvrtc.compile_cuda(SAXPY + f"// variant {k}\n")
    assert nvrtc.cache_info()["entries"] == 2


def test_corrupt_disk_entry_recompiles(cache_dir):
    a = nvrtc.compile_cuda(SAXPY)
    for meta in cache_dir.glob("*.nvrtc.json"):
        meta.write_text("{not json")
    nvrtc.clear_memory_cache()
    n = nvrtc.cache_info()["compiles"]
    assert nvrtc.compile_cuda(SAXPY).image == a.image
    assert nvrtc.cache_info()["compiles"] == n + 1


def test_driver_compatibility_message(monkeypatch):
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 5))
    assert nvrtc.check_driver_compatibility((13, 5), "ptx") is None
    assert nvrtc.check_driver_compatibility((13, 6), "ptx") is None
    assert nvrtc.check_driver_compatibility((13, 0), "cubin") is None
    msg = nvrtc.check_driver_compatibility((13, 0), "ptx")
    assert "NVRTC 13.5" in msg and "CUDA 13.0" in msg and "nvidia-cuda-nvrtc==13.0.*" in msg
    assert "NVRTC 13.5" in nvrtc.check_driver_compatibility((12, 8), "cubin")


# -- no GPU here -------------------------------------------------------------------------------------

@no_gpu_here
def test_gpu_unavailable_without_raising():
    assert gpu_available() is False
    assert isinstance(cuda_driver.gpu_unavailable_reason(), str) and cuda_driver.gpu_unavailable_reason()
    with pytest.raises(cuda_driver.GPUUnavailableError, match="no usable GPU"):
        cuda_driver.device()
    with pytest.raises(LaunchError, match="no usable GPU"):
        cuda_driver.DeviceBuffer(16)
    img = nvrtc.compile_cuda(SAXPY)
    with pytest.raises(LaunchError, match="no usable GPU"):
        cuda_driver.Module.load(img)
    x = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="no usable GPU"):  # the checks pass, the device is missing
        prepare_arguments([x], [memref((4,), f32)])


# -- launch checks and argument packing (pure) ---------------------------------------------------------

H200 = Device(ordinal=0, name="NVIDIA H200", compute_capability=(9, 0), total_memory=141 << 30, sm_count=132,
              warp_size=32, max_threads_per_block=1024, max_block_dims=(1024, 1024, 64),
              max_grid_dims=(2**31 - 1, 65535, 65535), shared_per_block=48 * 1024,
              max_shared_per_block_optin=227 * 1024, shared_per_sm=228 * 1024, regs_per_block=65536,
              regs_per_sm=65536, max_threads_per_sm=2048, l2_bytes=60 << 20)


def fn_attrs(regs=32, max_threads=1024, static_shared=0, params=None):
    return FunctionAttributes("k", regs, max_threads, static_shared, 0, 48 * 1024 - static_shared, params)


def test_check_launch_accepts_and_normalizes():
    assert H200.arch == "sm_90"
    assert check_launch(H200, fn_attrs(), 10, 256) == ((10, 1, 1), (256, 1, 1))
    assert check_launch(H200, fn_attrs(), (4, 3), (16, 16, 4)) == ((4, 3, 1), (16, 16, 4))
    assert check_launch(H200, fn_attrs(), (0, 1, 1), 32)[0] == (0, 1, 1)  # an empty grid is allowed
    check_launch(H200, fn_attrs(static_shared=16 * 1024), 1, 128, 211 * 1024)  # exactly 227 KiB


@pytest.mark.parametrize("grid,block,shared,attrs,message", [
    (1, 2048, 0, {}, "needs 2048 threads per block, limit 1024"),
    (1, (1, 1, 65), 0, {}, "needs block z dimension 65, limit 64"),
    ((1, 70000), 32, 0, {}, "needs grid y dimension 70000, limit 65535"),
    (1, 128, 256 * 1024, {"static_shared": 4096},
     "needs 260 KiB shared memory (4 KiB static + 256 KiB dynamic), limit 227 KiB"),
    (1, 1024, 0, {"regs": 128}, "needs 131072 registers per block (128 per thread x 1024 threads), limit 65536"),
    (1, 1024, 0, {"regs": 40, "max_threads": 512}, "needs 1024 threads per block, limit 512 for this kernel"),
    (1, (0, 1), 0, {}, "has a dimension below 1"),
    ((-1, 1), 32, 0, {}, "negative dimension"),
    ("8", 32, 0, {}, "grid must be an int or 1 to 3 ints"),
    (1, (1, 1, 1, 1), 0, {}, "block must be an int or 1 to 3 ints"),
])
def test_check_launch_refuses(grid, block, shared, attrs, message):
    with pytest.raises(LaunchError, match="kernel k: ") as info:
        check_launch(H200, fn_attrs(**attrs), grid, block, shared)
    assert message in str(info.value)


def _read(addr: int, size: int) -> bytes:
    return ctypes.string_at(addr, size)


def test_pack_arguments_values():
    args = [("float*", 0x7F0000001000), ("long long", -5), ("float", 1.5), ("double", -0.25), ("int", 7),
            ("__half", 1.5), ("__nv_bfloat16", 2.0), ("bool", True), ("unsigned char", 255), ("const float *", 64)]
    array, keep = pack_arguments(args)
    expected = [struct.pack("<Q", 0x7F0000001000), struct.pack("<q", -5), struct.pack("<f", 1.5),
                struct.pack("<d", -0.25), struct.pack("<i", 7), np.float16(1.5).tobytes(),
                np.array(2.0, ml_dtypes.bfloat16).tobytes(), b"\x01", b"\xff", struct.pack("<Q", 64)]
    assert [_read(array[k], len(e)) for k, e in enumerate(expected)] == expected


@pytest.mark.parametrize("args,sizes,message", [
    ([("int", 2**31)], None, "does not fit in int"),
    ([("unsigned int", -1)], None, "does not fit"),
    ([("float*", "abc")], None, "expected a device address"),
    ([("float", "x")], None, "expected a number"),
    ([("long long", 1.5)], None, "expected an integer"),
    ([("my_struct", 1)], None, "unsupported parameter type"),
    ([("int", 1), ("int", 2)], (4,), "takes 1 parameters, got 2 arguments"),
    ([("long long", 1)], (4,), "argument #0 is a 4-byte parameter, got 'long long' (8 bytes)"),
])
def test_pack_arguments_refuses(args, sizes, message):
    with pytest.raises(LaunchError) as info:
        pack_arguments(args, sizes, "k")
    assert message in str(info.value)


# -- argument checks (no device needed) ----------------------------------------------------------------

def test_check_array_numpy_ok():
    t = memref((4, None), f32)
    a = np.zeros((4, 7), np.float32)
    view = check_array(a, t, 0, "%A")
    assert view.kind == "numpy" and view.shape == (4, 7) and view.host is a and view.ptr is None


@pytest.mark.parametrize("value,t,message", [
    (np.zeros((4, 3)), memref((4, None), f32), "argument #1 (%B): expected dtype float32 for memref<4x?xf32>, "
                                                "got float64[4, 3]"),
    (np.zeros((5, 3), np.float32), memref((4, None), f32), "expected shape (4, '?') for memref<4x?xf32>"),
    (np.zeros((4,), np.float32), memref((4, None), f32), "expected shape"),
    (np.zeros((4, 6), np.float32)[:, ::2], memref((4, None), f32), "not C-contiguous"),
    (np.zeros((3, 4), np.float32).T, memref((4, 3), f32), "not C-contiguous"),
    (np.zeros(4, np.int8), memref((4,), i1), "expected dtype bool or uint8"),
    (np.zeros(4, np.float16), memref((4,), bf16), "expected dtype bfloat16"),
    (np.zeros(4, np.int32), memref((4,), index), "expected dtype int64"),
    ([1.0, 2.0], memref((2,), f32), "expected an array"),
])
def test_check_array_refuses(value, t, message):
    with pytest.raises(LaunchError) as info:
        check_array(value, t, 1, "%B")
    assert message in str(info.value)
    assert "argument #1 (%B)" in str(info.value)


@pytest.mark.parametrize("dtype,t", [(np.bool_, i1), (np.uint8, i1), (ml_dtypes.bfloat16, bf16), (np.float16, f16),
                                     (np.int8, i8), (np.int32, i32), (np.int64, index)])
def test_check_array_dtypes(dtype, t):
    assert check_array(np.zeros(3, dtype), memref((3,), t), 0).dtype == np.dtype(dtype)


class FakeCudaArray:
    """An object with ``__cuda_array_interface__`` (what CuPy/PyTorch expose); never dereferenced."""

    def __init__(self, shape, typestr="<f4", ptr=0x10000, strides=None, mask=None, readonly=False):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, readonly),
                                         "strides": strides, "version": 3, "mask": mask}


def test_cuda_array_interface_views():
    view = check_array(FakeCudaArray((4, 3)), memref((4, None), f32), 0)
    assert view.kind == "cuda_array_interface" and view.ptr == 0x10000 and view.shape == (4, 3)
    assert check_array(FakeCudaArray((4, 3), strides=(12, 4)), memref((4, 3), f32), 0).c_contiguous
    assert check_array(FakeCudaArray((4, 1), strides=(4, 999)), memref((4, 1), f32), 0).c_contiguous


@pytest.mark.parametrize("obj,message", [
    (FakeCudaArray((4, 3), strides=(4, 16)), "not C-contiguous"),
    (FakeCudaArray((4, 3), ptr=0x10002), "not aligned to 4 bytes"),
    (FakeCudaArray((4, 3), typestr="<f8"), "expected dtype float32"),
    (FakeCudaArray((4, 3), mask=object()), "masked arrays"),
])
def test_cuda_array_interface_refusals(obj, message):
    with pytest.raises(LaunchError, match="argument #2") as info:
        check_array(obj, memref((4, 3), f32), 2)
    assert message in str(info.value)


def test_failing_cuda_array_interface_is_reported():
    class Broken:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("cannot export bfloat16")

    with pytest.raises(LaunchError, match="cannot export bfloat16"):
        check_array(Broken(), memref((4,), f32), 0)


def test_cpu_dlpack_object_is_a_host_array():
    class Wrapper:  # a CPU tensor of some library, seen only through DLPack
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = check_array(Wrapper(a), memref((2, 3), f32), 0)
    assert view.kind == "numpy" and np.shares_memory(view.host, a)


def test_overlapping_written_arguments_refused_before_device_work():
    a = np.zeros(8, np.float32)
    with pytest.raises(LaunchError, match=r"argument #0 \(%A\) and argument #1 \(%B\) overlap"):
        prepare_arguments([a, a[2:6]], [memref((8,), f32), memref((4,), f32)], ["%A", "%B"])


def test_read_only_written_argument_refused():
    a = np.zeros(4, np.float32)
    a.flags.writeable = False
    with pytest.raises(LaunchError, match="read-only"):
        prepare_arguments([a], [memref((4,), f32)], ["%A"], written=[True])


def test_argument_count_mismatch():
    with pytest.raises(LaunchError, match="expected 2 array arguments, got 1"):
        prepare_arguments([np.zeros(4, np.float32)], [memref((4,), f32)] * 2)


def test_scalar_arguments():
    assert scalar_argument(5, index, 0) == ("long long", 5)
    assert scalar_argument(np.int32(-3), i32, 0) == ("int", -3)
    assert scalar_argument(2**31, i32, 0) == ("int", -(2**31))  # signless: the unsigned range wraps
    assert scalar_argument(1, f32, 0) == ("float", 1.0)
    assert scalar_argument(True, i1, 0) == ("bool", True)
    for value, t in ((2**32, i32), ("x", f16), (2, i1), (1.5, index)):
        with pytest.raises(LaunchError, match="argument #3 \\(%n\\)"):
            scalar_argument(value, t, 3, "%n")


def test_device_argument_kernel_args():
    t = memref((4, None, None), f32)
    arg = DeviceArgument(0, "%A", t, 0x1000, (4, 5, 6), np.dtype(np.float32))
    assert arg.dynamic_dims == [5, 6]
    assert arg.kernel_args() == [("float*", 0x1000), ("long long", 5), ("long long", 6)]
    assert cuda_arrays.element_ctype(bf16) == "__nv_bfloat16" and cuda_arrays.element_ctype(i1) == "bool"


# -- on the GPU ------------------------------------------------------------------------------------------

def _saxpy(dev):
    return cuda_driver.load_module(nvrtc.compile_cuda(SAXPY, dev.arch)).function("saxpy")


def _ints(n, seed, dtype=np.float32):
    return np.random.default_rng(seed).integers(-100, 100, n).astype(dtype)  # exact in any float type


@gpu
@needs_gpu
def test_device_attributes():
    dev = cuda_driver.device()
    assert dev.name and dev.arch == f"sm_{dev.compute_capability[0]}{dev.compute_capability[1]}"
    assert dev.max_threads_per_block >= 1024 and dev.sm_count > 0 and dev.regs_per_block > 0
    assert dev.max_shared_per_block_optin >= dev.shared_per_block > 0
    assert cuda_driver.device() is dev
    assert nvrtc.check_driver_compatibility(cuda_driver.driver_version(), "cubin") is None
    free, total = cuda_driver.memory_info()
    assert 0 < free <= total


@gpu
@needs_gpu
def test_launch_on_device_buffers():
    dev = cuda_driver.device()
    fn = _saxpy(dev)
    assert fn.num_regs > 0 and fn.max_threads_per_block > 0 and fn.static_shared_bytes == 0
    n = 1000
    x, y = _ints(n, 1), _ints(n, 2)
    with cuda_driver.DeviceBuffer.from_host(x) as dx, cuda_driver.DeviceBuffer.from_host(y) as dy:
        cuda_driver.launch(fn, math.ceil(n / 128), 128, [("float*", dx.ptr), ("float*", dy), ("float", 2.5),
                                                          ("long long", n)], sync=True)
        out = dy.to_host(np.empty_like(y))
    np.testing.assert_array_equal(out, 2.5 * x + y)


@gpu
@needs_gpu
def test_launch_ptx_image():
    dev = cuda_driver.device()
    fn = cuda_driver.Module.load(nvrtc.compile_cuda(SAXPY, dev.arch, ptx=True)).function("saxpy")
    x, y = _ints(300, 3), _ints(300, 4)
    with cuda_driver.DeviceBuffer.from_host(x) as dx, cuda_driver.DeviceBuffer.from_host(y) as dy:
        cuda_driver.launch(fn, 3, 128, [("float*", dx.ptr), ("float*", dy.ptr), ("float", -1.0), ("long long", 300)])
        out = dy.to_host(np.empty_like(y))
    np.testing.assert_array_equal(out, -x + y)


MEMREF_SAXPY = """\
extern "C" __global__ void saxpy_m(const float* __restrict__ x, long long x_d0, float* __restrict__ y,
                                   long long y_d0, float a) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < y_d0) y[i] = a * x[i] + y[i];
}
"""


def _memref_call(dev, x, y, a=2.5, **kw):
    fn = cuda_driver.load_module(nvrtc.compile_cuda(MEMREF_SAXPY, dev.arch)).function("saxpy_m")
    t = memref((None,), f32)
    with prepare_arguments([x, y], [t, t], ["%x", "%y"], written=[False, True]) as args:
        n = args[1].shape[0]
        cuda_driver.launch(fn, math.ceil(n / 256), 256, args[0].kernel_args() + args[1].kernel_args() + [("float", a)],
                           **kw)
        return [arg.ptr for arg in args]


@gpu
@needs_gpu
def test_numpy_arguments_copied_in_and_back():
    dev = cuda_driver.device()
    live = cuda_driver.live_allocations()
    x, y = _ints(5000, 5), _ints(5000, 6)
    x0, expected = x.copy(), 2.5 * x + y
    _memref_call(dev, x, y)
    np.testing.assert_array_equal(y, expected)
    np.testing.assert_array_equal(x, x0)
    assert cuda_driver.live_allocations() == live


@gpu
@needs_gpu
def test_cupy_arguments_zero_copy():
    cp = pytest.importorskip("cupy")
    dev = cuda_driver.device()
    x, y = _ints(4096, 7), _ints(4096, 8)
    cx, cy = cp.asarray(x), cp.asarray(y)
    ptrs = _memref_call(dev, cx, cy, sync=True)
    assert ptrs == [cx.data.ptr, cy.data.ptr]
    np.testing.assert_array_equal(cp.asnumpy(cy), 2.5 * x + y)


@gpu
@needs_gpu
def test_torch_arguments_zero_copy_cai_and_dlpack():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    dev = cuda_driver.device()
    x, y = _ints(4096, 9), _ints(4096, 10)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    torch.cuda.synchronize()
    ptrs = _memref_call(dev, tx, ty, sync=True)
    assert ptrs == [tx.data_ptr(), ty.data_ptr()]
    np.testing.assert_array_equal(ty.cpu().numpy(), 2.5 * x + y)
    # bf16 has no __cuda_array_interface__ in PyTorch: DLPack
    img = nvrtc.compile_cuda(HALF_MMA, dev.arch)
    fn = cuda_driver.load_module(img).function("halves")
    h = torch.from_numpy(_ints(1000, 11, np.float16)).cuda()
    b = torch.from_numpy(_ints(1000, 12)).to(torch.bfloat16).cuda()
    h0, b0 = h.cpu().float().numpy(), b.cpu().float().numpy()
    with prepare_arguments([h, b], [memref((1000,), f16), memref((1000,), bf16)]) as args:
        assert args[1].ptr == b.data_ptr()
        cuda_driver.launch(fn, 4, 256, [("__half*", args[0].ptr), ("__nv_bfloat16*", args[1].ptr),
                                        ("long long", 1000)], sync=True)
    np.testing.assert_array_equal(h.cpu().float().numpy(), h0 + 1)
    np.testing.assert_array_equal(b.cpu().float().numpy(), 2 * b0)
    with pytest.raises(LaunchError, match="not C-contiguous"):
        prepare_arguments([torch.zeros(4, 6, device="cuda").T], [memref((6, 4), f32)])


@gpu
@needs_gpu
def test_f16_bf16_numpy_arguments():
    dev = cuda_driver.device()
    fn = cuda_driver.load_module(nvrtc.compile_cuda(HALF_MMA, dev.arch)).function("halves")
    h, b = _ints(700, 13, np.float16), _ints(700, 14, ml_dtypes.bfloat16)
    h0, b0 = h.astype(np.float32), b.astype(np.float32)
    with prepare_arguments([h, b], [memref((None,), f16), memref((None,), bf16)]) as args:
        cuda_driver.launch(fn, 3, 256, [args[0].kernel_args()[0], args[1].kernel_args()[0], ("long long", 700)])
    np.testing.assert_array_equal(h.astype(np.float32), h0 + 1)
    np.testing.assert_array_equal(b.astype(np.float32), 2 * b0)


BOOL_KERNEL = """\
extern "C" __global__ void positive(const float* __restrict__ x, bool* __restrict__ out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] > 0.0f;
}
"""


@gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8])
def test_i1_arguments(dtype):
    dev = cuda_driver.device()
    fn = cuda_driver.load_module(nvrtc.compile_cuda(BOOL_KERNEL, dev.arch)).function("positive")
    x, out = _ints(500, 15), np.full(500, 7, dtype)
    with prepare_arguments([x, out], [memref((500,), f32), memref((500,), i1)], written=[False, True]) as args:
        cuda_driver.launch(fn, 2, 256, [("float*", args[0].ptr), ("bool*", args[1].ptr), ("long long", 500)])
    np.testing.assert_array_equal(out, (x > 0).astype(dtype))


@gpu
@needs_gpu
def test_resource_limits_refused_before_launch():
    dev = cuda_driver.device()
    fn = _saxpy(dev)
    y = _ints(64, 16)
    with cuda_driver.DeviceBuffer.from_host(y) as dy:
        args = [("float*", dy.ptr), ("float*", dy.ptr), ("float", 1.0), ("long long", 64)]
        with pytest.raises(LaunchError, match=f"needs 2048 threads per block, limit {dev.max_threads_per_block}"):
            cuda_driver.launch(fn, 1, 2048, args)
        too_much = dev.max_shared_per_block_optin + 1024
        with pytest.raises(LaunchError, match=r"shared memory .*limit " + cuda_launch._size(
                dev.max_shared_per_block_optin)):
            cuda_driver.launch(fn, 1, 64, args, shared_bytes=too_much)
        with pytest.raises(LaunchError, match=f"needs grid y dimension {dev.max_grid_dims[1] + 1}"):
            cuda_driver.launch(fn, (1, dev.max_grid_dims[1] + 1), 64, args)
        if fn.attributes.param_sizes is not None:
            assert fn.attributes.param_sizes == (8, 8, 4, 8)
            with pytest.raises(LaunchError, match="takes 4 parameters, got 3"):
                cuda_driver.launch(fn, 1, 64, args[:3])
        cuda_driver.synchronize()
        np.testing.assert_array_equal(dy.to_host(np.empty_like(y)), y)  # nothing ran


SHARED_KERNEL = """\
extern "C" __global__ void big_shared(float* out, long long n) {
  extern __shared__ float s[];
  __shared__ float pad[8192];  // 32 KiB static
  for (long long j = threadIdx.x; j < n; j += blockDim.x) s[j] = (float)j;
  if (threadIdx.x == 0) pad[n % 8192] = 1.0f;  // an index known only at run time: all 32 KiB stay
  __syncthreads();
  for (long long j = threadIdx.x; j < n; j += blockDim.x) out[j] = s[n - 1 - j] + pad[n % 8192];
}
"""


@gpu
@needs_gpu
def test_dynamic_shared_memory_over_48_kib():
    dev = cuda_driver.device()
    fn = cuda_driver.load_module(nvrtc.compile_cuda(SHARED_KERNEL, dev.arch)).function("big_shared")
    assert fn.static_shared_bytes == 32 * 1024
    dynamic = dev.max_shared_per_block_optin - fn.static_shared_bytes  # the whole opt-in limit
    n = dynamic // 4
    with cuda_driver.DeviceBuffer(4 * n) as out:
        cuda_driver.launch(fn, 1, 256, [("float*", out.ptr), ("long long", n)], shared_bytes=dynamic, sync=True)
        got = out.to_host(np.empty(n, np.float32))
    np.testing.assert_array_equal(got, np.arange(n, dtype=np.float32)[::-1] + 1)
    with pytest.raises(LaunchError, match=r"\(32 KiB static \+"):
        cuda_driver.launch(fn, 1, 256, [("float*", 0), ("long long", 0)], shared_bytes=dynamic + 1024)


@gpu
@needs_gpu
def test_wrong_arch_and_missing_kernel():
    dev = cuda_driver.device()
    other = "sm_80" if dev.compute_capability[0] != 8 else "sm_90"
    with pytest.raises(LaunchError, match=f"compiled for {other}"):
        cuda_driver.Module.load(nvrtc.compile_cuda(SAXPY, other))
    with pytest.raises(LaunchError, match="no kernel 'nope'"):
        cuda_driver.load_module(nvrtc.compile_cuda(SAXPY, dev.arch)).function("nope")


@gpu
@needs_gpu
def test_memory_returns_to_baseline_after_1000_calls():
    dev = cuda_driver.device()
    x, y = _ints(1 << 18, 17), np.zeros(1 << 18, np.float32)  # 1 MiB each: a leak would show as >= 1 GiB
    for _ in range(3):
        _memref_call(dev, x, y)
    cuda_driver.synchronize()
    free0, live0 = cuda_driver.memory_info()[0], cuda_driver.live_allocations()
    loads0 = cuda_driver.module_cache_info()["loads"]
    for _ in range(1000):
        _memref_call(dev, x, y, a=0.0)
    cuda_driver.synchronize()
    assert cuda_driver.live_allocations() == live0
    assert cuda_driver.module_cache_info()["loads"] == loads0  # the module came from the cache each time
    assert abs(cuda_driver.memory_info()[0] - free0) <= 16 << 20
    np.testing.assert_array_equal(y, np.zeros_like(y) + 2.5 * 3 * x)  # a=0.0 leaves y as the 3 warm-ups made it


@gpu
@needs_gpu
def test_module_cache_is_bounded(monkeypatch):
    dev = cuda_driver.device()
    monkeypatch.setattr(cuda_driver, "MODULE_CACHE_SIZE", 3)
    cuda_driver.clear_module_cache()
    for k in range(6):  # six different images (a comment alone would not change the cubin)
        cuda_driver.load_module(nvrtc.compile_cuda(SAXPY + f'extern "C" __global__ void extra{k}() {{}}\n', dev.arch))
    assert cuda_driver.module_cache_info()["entries"] == 3


@gpu
@needs_gpu
def test_event_timing():
    dev = cuda_driver.device()
    fn = _saxpy(dev)
    n = 1 << 22
    with cuda_driver.DeviceBuffer(4 * n) as dx, cuda_driver.DeviceBuffer(4 * n) as dy:
        dx.memset(0)
        dy.memset(0)

        def run():
            cuda_driver.launch(fn, n // 256, 256, [("float*", dx.ptr), ("float*", dy.ptr), ("float", 1.0),
                                                    ("long long", n)])

        times = cuda_driver.time_all_ms(run, repeat=5)
        assert len(times) == 5 and all(0 < t < 1000 for t in times)
        assert 0 < cuda_driver.time_ms(run, repeat=3) < 1000


class _FakeDriver:
    """Stands for runtime.cuda_driver without a GPU: buffers get fresh addresses, launches are
    prepared by the real packing code and record (kernel, grid, the pointer values they get)."""

    def __init__(self):
        self.launched, self.next_ptr = [], 1 << 20
        driver = self

        class DeviceBuffer:
            def __init__(self, nbytes):
                self.nbytes, self.ptr = nbytes, driver.next_ptr
                driver.next_ptr += 1 << 16

            @classmethod
            def alloc(cls, nbytes):
                return cls(nbytes)

            def free(self):
                pass

        self.DeviceBuffer = DeviceBuffer

    def prepare_launch(self, fn, grid, block, args, shared_bytes=0):
        params, keep = pack_arguments(args)
        driver = self

        class Prepared:
            def __init__(self):
                self.keep = keep

            def __call__(self, stream=None):
                driver.launched.append((fn, tuple(grid), [v.value for v in keep[0]]))

        return Prepared()

    def launch(self, fn, grid, block, args, shared_bytes=0):
        self.prepare_launch(fn, grid, block, args, shared_bytes)()


def test_a_call_replays_the_launch_plan_of_its_shape_with_this_calls_pointers():
    """The host function is interpreted once per (scalars, dims): later calls replay the recorded
    launches with the pointers patched: the arguments' of this call and fresh temporaries."""
    import affine_ir as air
    from runtime import cuda
    from runtime.cuda import _Buffer

    m = air.parse("""
    func.func @f(%A: memref<64xf32>, %B: memref<64xf32>, %n: index) {
      %t = memref.alloc() : memref<64xf32>
      affine.for %i = 0 to 64 {
        %v = affine.load %A[%i] : memref<64xf32>
        %w = arith.addf %v, %v : f32
        affine.store %w, %t[%i] : memref<64xf32>
      }
      affine.for %i = 0 to %n {
        %v = affine.load %t[%i] : memref<64xf32>
        affine.store %v, %B[%i] : memref<64xf32>
      }
      memref.dealloc %t : memref<64xf32>
      return
    }""")
    exe = cuda.compile(m)
    exe._function = lambda spec: spec.name  # no module to load without a GPU
    a, b, n = exe.function.args

    drv = _FakeDriver()  # one driver, as the process has one

    def call(pa, pb, count):
        values, temps, start = {a: _Buffer(pa, (64,)), b: _Buffer(pb, (64,)), n: count}, [], len(drv.launched)
        exe._run(values, temps, drv)
        for t in temps:
            exe._give(t)
        return drv.launched[start:]

    first = call(100, 200, 64)
    assert first and len(exe._plans) == 1
    pointers = {p for _, _, params in first for p in params}
    temps = pointers - {100, 200, 64}
    assert {100, 200} <= pointers and temps  # the arguments and the temporary %t
    again = call(300, 400, 64)  # the plan: no new one, this call's pointers, the pooled temporary
    assert len(exe._plans) == 1
    moved = {100: 300, 200: 400}
    assert again == [(f, g, [moved.get(p, p) for p in params]) for f, g, params in first]
    other = call(300, 400, 16)  # another scalar: another plan
    assert len(exe._plans) == 2 and other


def test_plan_keys_tell_floats_apart_by_their_bits():
    from runtime.cuda import _exact

    assert _exact(-0.0) != _exact(0.0)  # baked into the packed parameters: -0.0 must not replay 0.0's plan
    assert _exact(float("nan")) == _exact(float("nan")) and _exact(3) == 3


def test_cpu_tensors_and_other_values_take_the_general_path():
    torch = pytest.importorskip("torch")
    from runtime.cuda_arrays import _from_torch, inspect_array

    assert _from_torch(torch.zeros(3)) is None and _from_torch(np.zeros(3)) is None
    assert inspect_array(torch.zeros(3)).kind == "numpy"  # a CPU tensor: DLPack to numpy, as before


@pytest.mark.gpu
@needs_gpu
def test_gpu_torch_tensors_are_read_from_the_tensor_itself():
    """A CUDA tensor's pointer, shape, dtype (bf16 and fp8 too) and contiguity come from the tensor (C
    calls, not __cuda_array_interface__'s Python); a view is refused as before; one that requires
    gradients takes the general path and PyTorch's error."""
    torch = pytest.importorskip("torch")
    from runtime.cuda_arrays import check_array, inspect_array

    for dt, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16"), (torch.float8_e4m3fn, "float8_e4m3fn"),
                     (torch.int64, "int64")):
        t = torch.zeros(4, 6, device="cuda", dtype=dt)
        v = inspect_array(t)
        assert v.kind == "torch" and v.shape == (4, 6) and v.ptr == t.data_ptr() and str(v.dtype) == name
        assert v.c_contiguous and v.device_id == t.device.index
    with pytest.raises(LaunchError, match="contiguous"):
        check_array(torch.zeros(4, 6, device="cuda").t(), memref((6, 4), f32), 0)
    with pytest.raises(Exception, match="grad"):
        inspect_array(torch.zeros(3, device="cuda", requires_grad=True))
