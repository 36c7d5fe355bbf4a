"""Target descriptions: the GPUs we compile for and the host CPU.

Frozen records of what the cost model and the GPU mapping need: multiprocessor and core
counts, memory-level capacities and bandwidths, and peak arithmetic rates::

    >>> from analysis.targets import target
    >>> h200 = target("h200")
    >>> h200.sm_count, h200.shared_memory_per_block_optin // 1024
    (132, 227)

Built-in GPUs (:data:`H200`, :data:`H100`, :data:`A100`) carry published figures; each
field's source (datasheet, whitepaper, read off the device, measured here, or estimated)
is recorded in the target's ``sources`` mapping and in a comment beside the number. A GPU
also carries its launch limits (block and grid dimensions, threads per block), the default
block sizes of the GPU passes, and ``gpu_model``: the cost model fitted to its measurements
(:mod:`analysis.gpu_models`; the H200's ships as ``analysis/data/gpu_model_h200.json``).
:attr:`GPUTarget.schedule_model` is that model, or for a GPU without one the H200 fit
(:data:`DEFAULT_GPU_MODEL`), which the passes then scale by the GPU's own SM count, fp32
rate, registers and DRAM bandwidth.
:func:`gpu_target` reads the present device through ``cuda.bindings.driver`` when asked
(never raising without one), and :func:`host_cpu` reads ``/proc`` and ``/sys``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import ClassVar

from .gpu_models import GPUCostModel, load_gpu_model

__all__ = [
    "A100", "CPUTarget", "DEFAULT_GPU", "DEFAULT_GPU_MODEL", "GPUCostModel", "GPUTarget", "H100", "H200", "TARGETS",
    "Target", "gpu_target", "host_cpu", "normalize_dtype", "parse_cpuinfo", "read_device_target", "target",
    "vector_bits_from_flags",
]

KiB = 1024
MiB = 1024 * KiB
GB = 10**9
TERA = 10**12

_DTYPE_ALIASES = {
    "f32": "fp32", "float32": "fp32", "float": "fp32", "fp32": "fp32",
    "f64": "fp64", "float64": "fp64", "double": "fp64", "fp64": "fp64",
    "f16": "fp16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "bf16": "bf16", "bfloat16": "bf16",
    "tf32": "tf32", "i8": "int8", "int8": "int8", "fp8": "fp8", "f8": "fp8",
    "i32": "int32", "int32": "int32", "index": "int64", "i64": "int64", "int64": "int64",
}
_DTYPE_BITS = {"fp64": 64, "fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int32": 32,
               "int64": 64}


def normalize_dtype(dtype: str) -> str:
    """The canonical rate name of a dtype: ``"f32" -> "fp32"``, ``"i8" -> "int8"``; ValueError if unknown."""
    key = str(dtype).lower()
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"unknown dtype {dtype!r}; expected one of {', '.join(sorted(set(_DTYPE_ALIASES)))}")
    return _DTYPE_ALIASES[key]


def _frozen(d: Mapping[str, object] | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class GPUTarget:
    """An NVIDIA GPU. Sizes in bytes, rates in bytes/s and FLOP/s (dense, no sparsity).

    ``simt_flops`` holds CUDA-core rates (fp32, fp64, fp16, bf16); ``tensor_flops`` the
    dense tensor-core rates (tf32, fp16, bf16, int8, fp8, fp64); ``measured_flops`` the
    best library rates measured on the device (the ceilings to beat), where known.
    ``max_block_dims`` / ``max_grid_dims`` (x, y, z) and ``max_threads_per_block`` bound a
    launch; ``default_block_sizes[n - 1]`` is ``gpu-map``'s block for ``n`` mapped loops and
    ``default_threads_per_block`` the block of one-dimensional launches (row reductions, the
    split-K sum); ``gpu_model`` the fitted cost model of ``gpu-schedule`` (None: not fitted on
    this GPU, see :attr:`schedule_model`).
    """

    kind: ClassVar[str] = "gpu"

    name: str
    arch: str
    compute_capability: tuple[int, int]
    sm_count: int
    clock_hz: float
    l2_bytes: int
    shared_memory_per_block_optin: int
    shared_memory_per_sm: int
    dram_bytes: int
    dram_bandwidth: float
    l2_bandwidth: float
    simt_flops: Mapping[str, float] = field(default_factory=dict, hash=False)
    tensor_flops: Mapping[str, float] = field(default_factory=dict, hash=False)
    measured_flops: Mapping[str, float] = field(default_factory=dict, hash=False)
    shared_memory_per_block: int = 48 * KiB
    max_threads_per_block: int = 1024
    warp_size: int = 32
    max_warps_per_sm: int = 64
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    shared_memory_banks: int = 32
    shared_memory_bank_bytes: int = 4
    sector_bytes: int = 32
    cache_line_bytes: int = 128
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    default_block_sizes: tuple[tuple[int, ...], ...] = ((256,), (32, 8), (32, 4, 2))
    default_threads_per_block: int = 256
    gpu_model: GPUCostModel | None = field(default=None, hash=False)
    sources: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("simt_flops", "tensor_flops", "measured_flops", "sources"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    @property
    def parallel_units(self) -> int:
        """How many tiles run at once in the cost model: one per multiprocessor."""
        return self.sm_count

    @property
    def shared_memory_bandwidth(self) -> float:
        """Whole-chip shared-memory bandwidth: banks x bank width per clock per SM."""
        return self.sm_count * self.shared_memory_banks * self.shared_memory_bank_bytes * self.clock_hz

    @property
    def register_file_bytes(self) -> int:
        return self.registers_per_sm * 4

    @property
    def schedule_model(self) -> GPUCostModel:
        """The cost model ``gpu-schedule`` uses on this GPU: its own fit (``gpu_model``), or,
        when it has none, the H200 fit (:data:`DEFAULT_GPU_MODEL`) -- its shares of the fp32
        rate, latency warps and launch costs, applied to this GPU's SMs, rates and bandwidth."""
        return self.gpu_model if self.gpu_model is not None else DEFAULT_GPU_MODEL

    def peak_flops(self, dtype: str = "f32", tensor_cores: bool = False) -> float:
        """Peak FLOP/s for ``dtype`` on the CUDA cores, or on the tensor cores when asked.

        Falls back to the fp32 rate for a dtype the table lacks (e.g. int32 on CUDA cores);
        fp32 on the tensor cores means TF32.
        """
        d = normalize_dtype(dtype)
        if tensor_cores and d == "fp32":
            d = "tf32"
        table = self.tensor_flops if tensor_cores else self.simt_flops
        if d in table:
            return table[d]
        if tensor_cores:
            raise ValueError(f"{self.name} has no tensor-core rate for {d}; known: {', '.join(sorted(table))}")
        return self.simt_flops.get("fp32", 0.0)


@dataclass(frozen=True)
class CPUTarget:
    """A CPU. Peak FLOP/s = cores x clock x FMA units x lanes x 2 (an FMA is two FLOPs).

    ``vector_bits`` is the widest SIMD register (128 SSE/NEON, 256 AVX2, 512 AVX-512);
    ``fma_units`` the vector FMA pipes per core at that width. Caches: ``l1d_bytes`` and
    ``l2_bytes`` per core, ``l3_bytes`` in total (0 when absent).
    """

    kind: ClassVar[str] = "cpu"

    name: str
    cores: int
    threads: int
    clock_hz: float
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    vector_bits: int
    fma_units: int = 2
    cache_line_bytes: int = 64
    vector_registers: int = 16
    dram_bandwidth: float = 50 * GB
    isa_flags: frozenset[str] = field(default=frozenset(), repr=False)
    sources: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", _frozen(self.sources))

    @property
    def parallel_units(self) -> int:
        """How many tiles run at once in the cost model: one per core."""
        return self.cores

    @property
    def vector_register_bytes(self) -> int:
        return self.vector_registers * self.vector_bits // 8

    # Cache bandwidths per core and cycle are typical of current x86 cores (estimates):
    # L1: two vector loads per cycle; L2: 64 B/cycle; L3: 32 B/cycle.
    @property
    def l1_bandwidth(self) -> float:
        return self.cores * self.clock_hz * 2 * self.vector_bits / 8

    @property
    def l2_bandwidth(self) -> float:
        return self.cores * self.clock_hz * 64

    @property
    def l3_bandwidth(self) -> float:
        return self.cores * self.clock_hz * 32

    def peak_flops(self, dtype: str = "f32", tensor_cores: bool = False) -> float:
        """cores x clock x fma_units x (vector_bits / element bits) x 2.

        fp16/bf16 use the fp32 rate (converted to f32 for arithmetic without AVX512-FP16);
        ``tensor_cores`` is ignored (no matrix units modelled on CPUs).
        """
        d = normalize_dtype(dtype)
        bits = 32 if d in ("fp16", "bf16", "tf32", "fp8") else _DTYPE_BITS[d]
        lanes = max(1, self.vector_bits // bits)
        return self.cores * self.clock_hz * self.fma_units * lanes * 2


Target = GPUTarget | CPUTarget

# --- built-in GPUs -------------------------------------------------------------------
# Figures for the SXM parts. "datasheet": NVIDIA's product datasheet; "whitepaper": the
# architecture whitepaper (A100: "NVIDIA A100 Tensor Core GPU Architecture"; H100: "NVIDIA
# H100 Tensor Core GPU Architecture"); "device": what cudaGetDeviceProperties /
# cuDeviceGetAttribute report on the part; "measured": DESIGN.md "Targets and measured
# ceilings" (this project's H200); "estimate": not published, derived as stated.
# Tensor rates are dense (the datasheets' headline numbers with sparsity are twice these).

_HOPPER_SIMT = {"fp32": 66.9 * TERA, "fp64": 33.5 * TERA, "fp16": 133.8 * TERA, "bf16": 133.8 * TERA}
_HOPPER_TENSOR = {"tf32": 494.7 * TERA, "fp16": 989.4 * TERA, "bf16": 989.4 * TERA, "fp8": 1978.9 * TERA,
                  "int8": 1978.9 * TERA, "fp64": 66.9 * TERA}
_HOPPER_COMMON = dict(
    arch="sm_90", compute_capability=(9, 0),
    sm_count=132,                               # datasheet; device reports 132 (DESIGN.md)
    clock_hz=1.98e9,                            # datasheet boost clock; 1980 MHz seen under load here
    shared_memory_per_block_optin=227 * KiB,    # device: sharedMemPerBlockOptin = 232448
    shared_memory_per_sm=228 * KiB,             # device: sharedMemPerMultiprocessor = 233472
    # The L2 serves 5120 B/clk on A100 (whitepaper); Hopper's figure is not published, we
    # assume the same bytes per clock at Hopper's clock (estimate, about 10 TB/s).
    l2_bandwidth=5120 * 1.98e9,
    simt_flops=_HOPPER_SIMT,                    # whitepaper (SXM5): 128 fp32 lanes/SM x 2 x clock
    tensor_flops=_HOPPER_TENSOR,                # whitepaper/datasheet, dense
)
_HOPPER_SOURCES = {
    "sm_count": "datasheet; device", "clock_hz": "datasheet boost clock", "l2_bandwidth":
    "estimate: 5120 B/clk (A100 whitepaper figure) x clock", "simt_flops": "whitepaper", "tensor_flops":
    "datasheet (dense = half the sparse headline)", "shared_memory_per_block_optin": "device",
    "shared_memory_per_sm": "device", "registers_per_sm": "whitepaper (64K 32-bit registers per SM)",
}

#: The cost model fitted on the H200 (``analysis/data/gpu_model_h200.json``); also the model of
#: GPUs that have no fit of their own (:attr:`GPUTarget.schedule_model`).
DEFAULT_GPU_MODEL = load_gpu_model("h200")

H200 = GPUTarget(
    name="h200",
    gpu_model=DEFAULT_GPU_MODEL,
    # L2: the device reports 60 MiB (CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 62914560, read on the
    # lent H200 by read_device_target(); DESIGN.md agrees). NVIDIA's H200 datasheet does not
    # state the L2 size; the GH100 die has 60 MB, of which the H100 SXM enables 50 MB. We use
    # what the device reports, which is what runs.
    l2_bytes=60 * MiB,
    dram_bytes=141 * GB,                        # datasheet (HBM3e); the device reports 150109880320 B
    # DRAM: measured device-to-device copy 4.27 TB/s counting read + write bytes (DESIGN.md);
    # the datasheet says 4.8 TB/s. The model uses the measured, reachable figure.
    dram_bandwidth=4.27 * TERA,
    # cuBLAS on this H200 at n = 4096..8192 (DESIGN.md): fp32 without TF32, TF32, fp16, bf16
    # (lower ends of the measured ranges).
    measured_flops={"fp32": 51 * TERA, "tf32": 354 * TERA, "fp16": 646 * TERA, "bf16": 623 * TERA},
    sources={**_HOPPER_SOURCES, "l2_bytes": "device (60 MiB; DESIGN.md)", "dram_bytes": "datasheet",
             "dram_bandwidth": "measured 4.27 TB/s copy (DESIGN.md); datasheet 4.8 TB/s",
             "measured_flops": "measured cuBLAS (DESIGN.md)",
             "gpu_model": "fitted to 137 kernels measured here (analysis/data/gpu_model_h200.json)"},
    **_HOPPER_COMMON,
)

H100 = GPUTarget(
    name="h100",
    l2_bytes=50 * MiB,                          # whitepaper "50 MB" for SXM5; device reports 52428800
    dram_bytes=80 * GB,                         # datasheet (HBM3)
    dram_bandwidth=3.35 * TERA,                 # datasheet
    sources={**_HOPPER_SOURCES, "l2_bytes": "whitepaper; device", "dram_bytes": "datasheet",
             "dram_bandwidth": "datasheet"},
    **_HOPPER_COMMON,
)

A100 = GPUTarget(
    name="a100",
    arch="sm_80",
    compute_capability=(8, 0),
    sm_count=108,                               # whitepaper/datasheet
    clock_hz=1.41e9,                            # datasheet boost clock
    l2_bytes=40 * MiB,                          # whitepaper; device reports 41943040
    shared_memory_per_block_optin=163 * KiB,    # device: sharedMemPerBlockOptin = 166912
    shared_memory_per_sm=164 * KiB,             # device: sharedMemPerMultiprocessor = 167936
    dram_bytes=80 * GB,                         # datasheet (SXM4 80GB, HBM2e)
    dram_bandwidth=2.039 * TERA,                # datasheet
    l2_bandwidth=5120 * 1.41e9,                 # whitepaper: 5120 B/clk
    simt_flops={"fp32": 19.5 * TERA, "fp64": 9.7 * TERA, "fp16": 78 * TERA, "bf16": 39 * TERA},  # whitepaper
    tensor_flops={"tf32": 156 * TERA, "fp16": 312 * TERA, "bf16": 312 * TERA, "int8": 624 * TERA,
                  "fp64": 19.5 * TERA},         # datasheet, dense
    sources={"sm_count": "whitepaper", "clock_hz": "datasheet boost clock", "l2_bytes": "whitepaper; device",
             "shared_memory_per_block_optin": "device", "shared_memory_per_sm": "device",
             "dram_bytes": "datasheet", "dram_bandwidth": "datasheet", "l2_bandwidth": "whitepaper (5120 B/clk)",
             "simt_flops": "whitepaper", "tensor_flops": "datasheet (dense)"},
)

TARGETS: dict[str, GPUTarget] = {"h200": H200, "h100": H100, "a100": A100}
_ALIASES = {"h200-sxm": "h200", "h100-sxm": "h100", "h100-sxm5": "h100", "a100-sxm": "a100",
            "a100-sxm4-80gb": "a100", "a100-80gb": "a100"}
_HOST_NAMES = ("cpu", "host")
#: The GPU the GPU passes target unless told otherwise (their ``target=`` option).
DEFAULT_GPU = H200


def target(name: str) -> Target:
    """The target called ``name`` (case-insensitive): a built-in GPU (``TARGETS``, a few
    aliases such as ``"h100-sxm"``), or ``"cpu"``/``"host"`` for :func:`host_cpu`.

    Raises ValueError naming the valid names.
    """
    key = str(name).lower()
    key = _ALIASES.get(key, key)
    if key in TARGETS:
        return TARGETS[key]
    if key in _HOST_NAMES:
        return host_cpu()
    valid = sorted([*TARGETS, *_ALIASES, *_HOST_NAMES])
    raise ValueError(f"unknown target {name!r}; valid names: {', '.join(valid)}")


# --- reading the device ---------------------------------------------------------------

def _driver():
    """``cuda.bindings.driver`` (or the older ``cuda.cuda``), or None when not installed."""
    try:
        from cuda.bindings import driver
        return driver
    except Exception:
        pass
    try:
        from cuda import cuda as driver  # cuda-python < 12.6
        return driver
    except Exception:
        return None


def _call(fn, *args):
    """Call a cuda-python function; its payload, or None on any error (codes and exceptions)."""
    try:
        out = fn(*args)
    except Exception:  # no driver: DynamicLibNotFoundError and friends
        return None
    if not isinstance(out, tuple) or not out:
        return None
    err = out[0]
    if int(getattr(err, "value", err)) != 0:
        return None
    return out[1] if len(out) == 2 else out[1:] if len(out) > 2 else True


def read_device_target(device: int = 0) -> GPUTarget | None:
    """The :class:`GPUTarget` of CUDA device ``device`` read through the driver, or None
    when cuda-python, a driver or the device is missing. Never raises.

    Attributes read: SM count, shared memory per block (default and opt-in) and per SM,
    registers per SM and block, L2 size, SM clock, compute capability, threads and warps.
    Rates (FLOP/s, L2 and DRAM bandwidth) come from the built-in description of the same
    compute capability, scaled by SM count x clock; an unknown capability takes the
    nearest older built-in's per-SM rates, and DRAM bandwidth from memory clock x bus width.
    """
    try:
        return _read_device(device)
    except Exception:
        return None


def _read_device(device: int) -> GPUTarget | None:
    cu = _driver()
    if cu is None or _call(cu.cuInit, 0) is None:
        return None
    dev = _call(cu.cuDeviceGet, device)
    if dev is None:
        return None
    attr_enum = cu.CUdevice_attribute

    def attr(name: str) -> int | None:
        a = getattr(attr_enum, "CU_DEVICE_ATTRIBUTE_" + name, None)
        v = None if a is None else _call(cu.cuDeviceGetAttribute, a, dev)
        return int(v) if isinstance(v, int) else None

    major, minor = attr("COMPUTE_CAPABILITY_MAJOR"), attr("COMPUTE_CAPABILITY_MINOR")
    if major is None or minor is None:
        return None
    raw = _call(cu.cuDeviceGetName, 128, dev)
    dev_name = raw.split(b"\0", 1)[0].decode(errors="replace").strip() if isinstance(raw, bytes) else "cuda"
    total = _call(cu.cuDeviceTotalMem, dev)
    total = int(total) if isinstance(total, int) else None
    base = _base_for(major, minor, dev_name, total)
    sms = attr("MULTIPROCESSOR_COUNT") or base.sm_count
    clock_khz = attr("CLOCK_RATE")
    clock = clock_khz * 1e3 if clock_khz else base.clock_hz
    scale = (sms * clock) / (base.sm_count * base.clock_hz)
    same_cc = base.compute_capability == (major, minor)
    bw = base.dram_bandwidth
    mem_khz, bus_bits = attr("MEMORY_CLOCK_RATE"), attr("GLOBAL_MEMORY_BUS_WIDTH")
    if not same_cc and mem_khz and bus_bits:
        bw = mem_khz * 1e3 * 2 * bus_bits / 8  # double data rate
    values = dict(
        name=dev_name, arch=f"sm_{major}{minor}", compute_capability=(major, minor), sm_count=sms,
        clock_hz=clock, l2_bytes=attr("L2_CACHE_SIZE") or base.l2_bytes,
        shared_memory_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK") or base.shared_memory_per_block,
        shared_memory_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") or base.shared_memory_per_block_optin,
        shared_memory_per_sm=attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR") or base.shared_memory_per_sm,
        registers_per_sm=attr("MAX_REGISTERS_PER_MULTIPROCESSOR") or base.registers_per_sm,
        registers_per_block=attr("MAX_REGISTERS_PER_BLOCK") or base.registers_per_block,
        max_threads_per_block=attr("MAX_THREADS_PER_BLOCK") or base.max_threads_per_block,
        max_threads_per_sm=attr("MAX_THREADS_PER_MULTIPROCESSOR") or base.max_threads_per_sm,
        max_blocks_per_sm=attr("MAX_BLOCKS_PER_MULTIPROCESSOR") or base.max_blocks_per_sm,
        warp_size=attr("WARP_SIZE") or base.warp_size,
        max_block_dims=_dims(attr, "MAX_BLOCK_DIM_", base.max_block_dims),
        max_grid_dims=_dims(attr, "MAX_GRID_DIM_", base.max_grid_dims),
        dram_bytes=total or base.dram_bytes, dram_bandwidth=bw, l2_bandwidth=base.l2_bandwidth * scale,
        simt_flops={k: v * scale for k, v in base.simt_flops.items()},
        tensor_flops={k: v * scale for k, v in base.tensor_flops.items()},
        measured_flops=dict(base.measured_flops) if same_cc and sms == base.sm_count else {},
        sources={**base.sources, "read_from_device": f"device {device} via cuda.bindings.driver; rates from "
                 f"{base.name} scaled by SMs x clock ({scale:.3f})"},
    )
    values["max_warps_per_sm"] = values["max_threads_per_sm"] // values["warp_size"]
    return replace(base, **values)


def _dims(attr, prefix: str, default: tuple[int, int, int]) -> tuple[int, int, int]:
    """The (x, y, z) attributes ``prefix`` + X/Y/Z, each read or its default."""
    return tuple(attr(prefix + axis) or d for axis, d in zip("XYZ", default))  # type: ignore[return-value]


def _base_for(major: int, minor: int, name: str, total_mem: int | None) -> GPUTarget:
    """The built-in description for a compute capability (H200 vs H100 by name/memory)."""
    cc = (major, minor)
    same = [t for t in TARGETS.values() if t.compute_capability == cc]
    if same:
        lowered = name.lower()
        for t in same:
            if t.name in lowered:
                return t
        if cc == (9, 0):
            return H200 if (total_mem or 0) > 100 * GB else H100
        return same[0]
    older = [t for t in TARGETS.values() if t.compute_capability <= cc]
    pool = older or list(TARGETS.values())
    return max(pool, key=lambda t: t.compute_capability) if older else min(pool, key=lambda t: t.compute_capability)


def gpu_target(name: str | None = None) -> GPUTarget | None:
    """The GPU called ``name``; with ``name=None``, the present device's description
    (:func:`read_device_target`), or None when there is no usable GPU. Never raises for None.
    """
    if name is not None:
        t = target(name)
        if not isinstance(t, GPUTarget):
            raise ValueError(f"{name!r} is not a GPU target; GPUs: {', '.join(sorted(TARGETS))}")
        return t
    return read_device_target(0)


# --- the host CPU -------------------------------------------------------------------

DEFAULT_CLOCK_HZ = 2.5e9
# DRAM bandwidth cannot be read from /proc: one core streams about 12 GB/s on current
# x86 servers, and a socket's channels cap the sum (8 x DDR4-3200 is about 200 GB/s).
DRAM_BANDWIDTH_PER_CORE = 12 * GB
DRAM_BANDWIDTH_CAP = 200 * GB


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except Exception:
        return ""


def _parse_size(text: str) -> int:
    """``"32K"`` / ``"1024K"`` / ``"32M"`` / ``"1G"`` -> bytes; 0 when unreadable."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text or "", re.IGNORECASE)
    if not m:
        return 0
    return int(m.group(1)) * {"": 1, "K": KiB, "M": MiB, "G": 1024 * MiB}[m.group(2).upper()]


def parse_cpuinfo(text: str) -> dict:
    """Model name, vendor, ISA flags, physical core count and clock from ``/proc/cpuinfo`` text."""
    out: dict = {"flags": frozenset(), "model": "", "vendor": "", "cores": 0, "mhz": 0.0}
    cores: set[tuple[str, str]] = set()
    per_socket, phys = 0, "0"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key in ("flags", "features") and not out["flags"]:
            out["flags"] = frozenset(value.split())
        elif key in ("model name", "cpu model") and not out["model"]:
            out["model"] = value
        elif key == "vendor_id" and not out["vendor"]:
            out["vendor"] = value
        elif key == "cpu mhz" and not out["mhz"]:
            try:
                out["mhz"] = float(value)
            except ValueError:
                pass
        elif key == "physical id":
            phys = value
        elif key == "core id":
            cores.add((phys, value))
        elif key == "cpu cores" and value.isdigit():
            per_socket = max(per_socket, int(value))
    out["cores"] = len(cores) or per_socket
    if not out["mhz"]:
        m = re.search(r"@\s*([\d.]+)\s*GHz", out["model"])
        out["mhz"] = float(m.group(1)) * 1000 if m else 0.0
    return out


def vector_bits_from_flags(flags: frozenset[str]) -> int:
    """512 with AVX-512F, 256 with AVX/AVX2, else 128 (SSE2, NEON/ASIMD, or unknown)."""
    if "avx512f" in flags:
        return 512
    if "avx2" in flags or "avx" in flags:
        return 256
    return 128


def _cache_sizes(sys_root: str) -> dict[int, int]:
    """Level -> size in bytes of the data/unified caches of cpu0 (L3: the whole shared cache)."""
    sizes: dict[int, int] = {}
    base = os.path.join(sys_root, "devices/system/cpu/cpu0/cache")
    try:
        entries = sorted(e for e in os.listdir(base) if e.startswith("index"))
    except Exception:
        return sizes
    for e in entries:
        d = os.path.join(base, e)
        if _read(os.path.join(d, "type")).strip() == "Instruction":
            continue
        level = _read(os.path.join(d, "level")).strip()
        size = _parse_size(_read(os.path.join(d, "size")).strip())
        if level.isdigit() and size:
            sizes[int(level)] = max(sizes.get(int(level), 0), size)
    return sizes


def _max_freq_hz(sys_root: str) -> float:
    text = _read(os.path.join(sys_root, "devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")).strip()
    return int(text) * 1e3 if text.isdigit() else 0.0


@functools.lru_cache(maxsize=4)
def host_cpu(proc_root: str = "/proc", sys_root: str = "/sys") -> CPUTarget:
    """The host CPU from ``/proc/cpuinfo``, ``/sys/.../cpu0/cache/index*`` and
    ``os.cpu_count()``. Never raises: unreadable facts take safe defaults (32 KiB L1d,
    1 MiB L2, no L3, 128-bit vectors, 2.5 GHz), and ``sources`` says which were read.

    Assumptions (documented estimates): 2 vector FMA units per core, except 1 at 512 bits
    on AMD (Zen 4 executes AVX-512 as two 256-bit halves); DRAM bandwidth =
    min(cores x 12 GB/s, 200 GB/s).
    """
    info = parse_cpuinfo(_read(os.path.join(proc_root, "cpuinfo")))
    threads = os.cpu_count() or 1
    cores = max(1, min(info["cores"] or threads, threads))
    caches = _cache_sizes(sys_root)
    clock = _max_freq_hz(sys_root) or info["mhz"] * 1e6 or DEFAULT_CLOCK_HZ
    vbits = vector_bits_from_flags(info["flags"])
    amd = "amd" in (info["vendor"] + info["model"]).lower()
    fma_units = 1 if (vbits == 512 and amd) else 2
    read = {"cores": "cpuinfo" if info["cores"] else "os.cpu_count()",
            "caches": "sysfs" if caches else "defaults", "clock_hz": "sysfs/cpuinfo" if clock != DEFAULT_CLOCK_HZ
            else "default", "vector_bits": "cpuinfo flags" if info["flags"] else "default",
            "fma_units": "assumed", "dram_bandwidth": "estimate: min(cores x 12 GB/s, 200 GB/s)"}
    return CPUTarget(
        name=info["model"] or "host", cores=cores, threads=threads, clock_hz=clock,
        l1d_bytes=caches.get(1, 32 * KiB), l2_bytes=caches.get(2, MiB), l3_bytes=caches.get(3, 0),
        vector_bits=vbits, fma_units=fma_units, vector_registers=32 if vbits == 512 else 16,
        dram_bandwidth=min(cores * DRAM_BANDWIDTH_PER_CORE, DRAM_BANDWIDTH_CAP), isa_flags=info["flags"],
        sources=read,
    )
