"""Target descriptions: built-in GPUs, lookup, the host CPU, and reading a device."""

from __future__ import annotations

import dataclasses
import enum
import types

import pytest

from analysis import targets
from analysis.targets import (
    A100,
    H100,
    H200,
    TARGETS,
    CPUTarget,
    GPUTarget,
    gpu_target,
    host_cpu,
    normalize_dtype,
    parse_cpuinfo,
    read_device_target,
    target,
    vector_bits_from_flags,
)

KiB, MiB = 1024, 1024 * 1024


def test_h200_matches_design_figures():
    assert H200.sm_count == 132
    assert H200.shared_memory_per_block_optin == 227 * KiB
    assert H200.shared_memory_per_block == 48 * KiB
    assert H200.l2_bytes == 60 * MiB
    assert H200.registers_per_sm == 64 * 1024
    assert (H200.arch, H200.compute_capability) == ("sm_90", (9, 0))
    assert H200.dram_bandwidth == pytest.approx(4.27e12)
    assert H200.measured_flops["fp32"] == pytest.approx(51e12)
    assert H200.measured_flops["tf32"] == pytest.approx(354e12)
    for key in ("dram_bandwidth", "l2_bytes", "sm_count", "l2_bandwidth"):
        assert key in H200.sources


@pytest.mark.parametrize("t", list(TARGETS.values()), ids=list(TARGETS))
def test_builtin_gpus_are_consistent(t: GPUTarget):
    assert t.shared_memory_per_block <= t.shared_memory_per_block_optin <= t.shared_memory_per_sm
    assert t.max_threads_per_sm == t.max_warps_per_sm * t.warp_size
    assert t.max_threads_per_block <= t.max_threads_per_sm
    assert t.registers_per_block <= t.registers_per_sm
    # fp32 lanes per SM: 64 on sm_80, 128 on sm_90; an FMA is two FLOPs.
    lanes = 128 if t.compute_capability >= (9, 0) else 64
    assert t.peak_flops("f32") == pytest.approx(t.sm_count * lanes * 2 * t.clock_hz, rel=0.01)
    assert t.peak_flops("f64") < t.peak_flops("f32") < t.peak_flops("fp16", tensor_cores=True)
    assert t.peak_flops("tf32", tensor_cores=True) < t.peak_flops("bf16", tensor_cores=True)
    assert t.shared_memory_bandwidth == t.sm_count * 32 * 4 * t.clock_hz
    assert t.l2_bandwidth > t.dram_bandwidth
    assert t.parallel_units == t.sm_count


def test_h200_is_an_h100_with_more_memory():
    assert H200.simt_flops == H100.simt_flops and H200.tensor_flops == H100.tensor_flops
    assert H200.dram_bandwidth > H100.dram_bandwidth and H200.dram_bytes > H100.dram_bytes
    assert H100.l2_bytes == 50 * MiB and A100.l2_bytes == 40 * MiB
    assert A100.sm_count == 108 and A100.shared_memory_per_block_optin == 163 * KiB


def test_targets_are_frozen_and_hashable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        H200.sm_count = 1
    with pytest.raises(TypeError):
        H200.simt_flops["fp32"] = 1.0
    assert len({H200, H100, A100, H200}) == 3
    assert dataclasses.replace(H200, sm_count=66) != H200


def test_lookup_by_name_and_alias():
    assert target("h200") is H200 and target("H200") is H200
    assert target("h100-sxm") is H100 and target("a100-sxm4-80gb") is A100
    assert isinstance(target("cpu"), CPUTarget) and target("host") is host_cpu()
    assert gpu_target("h100") is H100


def test_lookup_errors_list_valid_names():
    with pytest.raises(ValueError, match="unknown target 'v100'.*valid names: .*a100.*h200"):
        target("v100")
    with pytest.raises(ValueError, match="not a GPU target"):
        gpu_target("cpu")


def test_peak_flops_dtypes():
    assert normalize_dtype("f32") == normalize_dtype("float32") == "fp32"
    assert normalize_dtype("i8") == "int8"
    assert H200.peak_flops("bf16", tensor_cores=True) == pytest.approx(989.4e12)
    fp16_tc = H200.peak_flops("fp16", tensor_cores=True)
    assert H200.peak_flops("int8", tensor_cores=True) == pytest.approx(2 * fp16_tc, rel=1e-3)
    assert H200.peak_flops("i32") == H200.peak_flops("f32")  # no table entry: the fp32 rate
    with pytest.raises(ValueError, match="unknown dtype"):
        H200.peak_flops("f7")
    with pytest.raises(ValueError, match="no tensor-core rate"):
        A100.peak_flops("fp8", tensor_cores=True)


def test_host_cpu_is_sane_here():
    cpu = host_cpu()
    assert cpu.cores >= 1 and cpu.threads >= cpu.cores
    assert cpu.l1d_bytes > 0 and cpu.l2_bytes > 0 and cpu.l3_bytes >= 0
    assert cpu.vector_bits >= 128 and cpu.cache_line_bytes == 64
    assert cpu.clock_hz > 0 and cpu.dram_bandwidth > 0
    lanes = cpu.vector_bits // 32
    assert cpu.peak_flops("f32") == cpu.cores * cpu.clock_hz * cpu.fma_units * lanes * 2
    assert cpu.peak_flops("f64") == cpu.peak_flops("f32") / 2
    assert cpu.l1_bandwidth >= cpu.l2_bandwidth > cpu.l3_bandwidth  # equal with 256-bit vectors (2 x 32 B = 64 B)
    assert cpu.parallel_units == cpu.cores


def test_host_cpu_without_proc_or_sys_uses_defaults(tmp_path):
    cpu = host_cpu(str(tmp_path / "no-proc"), str(tmp_path / "no-sys"))
    assert cpu.l1d_bytes == 32 * KiB and cpu.l2_bytes == MiB and cpu.l3_bytes == 0
    assert cpu.vector_bits == 128 and cpu.clock_hz == targets.DEFAULT_CLOCK_HZ
    assert cpu.sources["caches"] == "defaults"


def test_host_cpu_reads_fake_sysfs(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text(_INTEL)
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                            (3, "Unified", "105M")]):
        d = tmp_path / "sys" / "devices/system/cpu/cpu0/cache" / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    freq = tmp_path / "sys" / "devices/system/cpu/cpu0/cpufreq"
    freq.mkdir(parents=True)
    (freq / "cpuinfo_max_freq").write_text("3800000\n")
    cpu = host_cpu(str(proc), str(tmp_path / "sys"))
    assert (cpu.l1d_bytes, cpu.l2_bytes, cpu.l3_bytes) == (48 * KiB, 2 * MiB, 105 * MiB)
    assert cpu.vector_bits == 512 and cpu.fma_units == 2 and cpu.vector_registers == 32
    assert cpu.clock_hz == 3.8e9


_INTEL = """processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8480+ @ 2.00GHz
physical id	: 0
core id		: 0
cpu cores	: 2
flags		: fpu sse sse2 avx avx2 fma avx512f avx512bw
processor	: 1
physical id	: 0
core id		: 1
processor	: 2
physical id	: 0
core id		: 0
"""


def test_parse_cpuinfo():
    info = parse_cpuinfo(_INTEL)
    assert info["cores"] == 2  # three logical CPUs, two distinct cores
    assert info["mhz"] == 2000.0  # from the model name
    assert vector_bits_from_flags(info["flags"]) == 512
    assert vector_bits_from_flags(frozenset({"sse2", "avx", "avx2"})) == 256
    arm = parse_cpuinfo("processor : 0\nFeatures : fp asimd evtstrm aes\nCPU implementer : 0x41\n")
    assert vector_bits_from_flags(arm["flags"]) == 128
    assert parse_cpuinfo("")["cores"] == 0


def test_gpu_target_none_never_raises_here():
    t = gpu_target(None)
    assert t is None or isinstance(t, GPUTarget)


def test_read_device_without_driver_is_none(monkeypatch):
    monkeypatch.setattr(targets, "_driver", lambda: None)
    assert read_device_target() is None

    def broken(*args):
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(targets, "_driver", lambda: types.SimpleNamespace(cuInit=broken))
    assert gpu_target(None) is None


def _fake_driver(attrs: dict[str, int], name: bytes, total: int):
    """A stand-in for cuda.bindings.driver answering cuDeviceGetAttribute from ``attrs``."""
    Attr = enum.IntEnum("CUdevice_attribute", {"CU_DEVICE_ATTRIBUTE_" + k: i for i, k in enumerate(attrs, 1)})
    ok = enum.IntEnum("CUresult", {"CUDA_SUCCESS": 0}).CUDA_SUCCESS
    values = {Attr["CU_DEVICE_ATTRIBUTE_" + k]: v for k, v in attrs.items()}
    return types.SimpleNamespace(
        CUdevice_attribute=Attr,
        cuInit=lambda flags: (ok,),
        cuDeviceGet=lambda i: (ok, i),
        cuDeviceGetAttribute=lambda a, dev: (ok, values[a]),
        cuDeviceGetName=lambda n, dev: (ok, name + b"\0" * (n - len(name))),
        cuDeviceTotalMem=lambda dev: (ok, total),
    )


_H200_ATTRS = {
    "COMPUTE_CAPABILITY_MAJOR": 9, "COMPUTE_CAPABILITY_MINOR": 0, "MULTIPROCESSOR_COUNT": 132,
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448, "MAX_SHARED_MEMORY_PER_BLOCK": 49152,
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 233472, "MAX_REGISTERS_PER_MULTIPROCESSOR": 65536,
    "MAX_REGISTERS_PER_BLOCK": 65536, "L2_CACHE_SIZE": 62914560, "CLOCK_RATE": 1980000,
    "MAX_THREADS_PER_BLOCK": 1024, "MAX_THREADS_PER_MULTIPROCESSOR": 2048, "WARP_SIZE": 32,
    "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
}


def test_read_device_from_fake_driver(monkeypatch):
    fake = _fake_driver(_H200_ATTRS, b"NVIDIA H200", 150754820096)
    monkeypatch.setattr(targets, "_driver", lambda: fake)
    t = gpu_target(None)
    assert t.name == "NVIDIA H200" and t.arch == "sm_90"
    assert dataclasses.replace(t, name="h200", dram_bytes=H200.dram_bytes, sources={}) == H200


def test_read_device_unknown_capability_scales_nearest_older(monkeypatch):
    attrs = {**_H200_ATTRS, "COMPUTE_CAPABILITY_MAJOR": 8, "COMPUTE_CAPABILITY_MINOR": 9, "MULTIPROCESSOR_COUNT": 54,
             "CLOCK_RATE": 1410000, "MEMORY_CLOCK_RATE": 10501000, "GLOBAL_MEMORY_BUS_WIDTH": 192}
    monkeypatch.setattr(targets, "_driver", lambda: _fake_driver(attrs, b"Some sm_89 card", 12 << 30))
    t = read_device_target()
    assert t.arch == "sm_89" and t.sm_count == 54
    assert t.peak_flops("f32") == pytest.approx(A100.peak_flops("f32") * 54 / 108)  # A100 per SM, same clock
    assert t.dram_bandwidth == pytest.approx(10501000e3 * 2 * 192 / 8)
    assert t.measured_flops == {}


@pytest.mark.gpu
@pytest.mark.skipif(read_device_target() is None, reason="needs cuda-python and an NVIDIA GPU")
def test_device_matches_h200_description():
    t = read_device_target()
    assert "H200" in t.name
    for name in ("compute_capability", "sm_count", "shared_memory_per_block", "shared_memory_per_block_optin",
                 "shared_memory_per_sm", "registers_per_sm", "registers_per_block", "l2_bytes",
                 "max_threads_per_block", "max_threads_per_sm", "warp_size"):
        assert getattr(t, name) == getattr(H200, name), name
    assert t.clock_hz == pytest.approx(H200.clock_hz, rel=0.05)
    assert t.peak_flops("f32") == pytest.approx(H200.peak_flops("f32"), rel=0.05)
