"""Pure checks of a CUDA launch and the packing of its arguments: what :func:`runtime.cuda_driver.launch`
does before it calls the driver, usable without a device (tests, tools).

- :class:`Device` and :class:`FunctionAttributes`: the facts a launch is checked against;
- :func:`check_launch`: normalized grid/block, or :class:`LaunchError` as "needs X, limit Y";
- :func:`pack_arguments`: a ``void*[n]`` for ``cuLaunchKernel`` from ``(ctype, value)`` pairs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from affine_ir.floats import numpy_float_dtype

from .errors import LaunchError

__all__ = ["Device", "FunctionAttributes", "check_launch", "pack_arguments"]


@dataclass(frozen=True)
class Device:
    """What launches are checked against (bytes, counts); ``arch`` is e.g. "sm_90"."""

    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    total_memory: int
    sm_count: int
    warp_size: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    shared_per_block: int  # without opting in (48 KiB)
    max_shared_per_block_optin: int  # 227 KiB on an H100/H200
    shared_per_sm: int
    regs_per_block: int
    regs_per_sm: int
    max_threads_per_sm: int
    l2_bytes: int

    @property
    def arch(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"


@dataclass(frozen=True)
class FunctionAttributes:
    """The loaded function's facts that launches are checked against (``param_sizes``: bytes of each
    parameter, None when the driver cannot say)."""

    name: str
    num_regs: int
    max_threads_per_block: int
    static_shared_bytes: int
    local_bytes: int
    max_dynamic_shared_bytes: int
    param_sizes: tuple[int, ...] | None = None


def _dim3(v, what: str) -> tuple[int, int, int]:
    t = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in t):
        raise LaunchError(f"{what} must be an int or 1 to 3 ints, got {v!r}")
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))


def _size(n: int) -> str:
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"


def check_launch(dev: Device, fn: FunctionAttributes, grid, block, shared_bytes: int = 0):
    """Normalized (grid, block) 3-tuples, or :class:`LaunchError` naming the exceeded limit as
    "needs X, limit Y". Pure: no device needed. A grid with a zero dimension is allowed (no blocks)."""
    where = f"kernel {fn.name}"
    grid, block = _dim3(grid, f"{where}: grid"), _dim3(block, f"{where}: block")
    if any(g < 0 for g in grid):
        raise LaunchError(f"{where}: grid {grid} has a negative dimension")
    if any(b < 1 for b in block):
        raise LaunchError(f"{where}: block {block} has a dimension below 1")
    if shared_bytes < 0:
        raise LaunchError(f"{where}: negative dynamic shared memory {shared_bytes}")
    threads = block[0] * block[1] * block[2]
    if threads > dev.max_threads_per_block:
        raise LaunchError(f"{where}: needs {threads} threads per block, limit {dev.max_threads_per_block}")
    for axis, b, lim in zip("xyz", block, dev.max_block_dims):
        if b > lim:
            raise LaunchError(f"{where}: needs block {axis} dimension {b}, limit {lim}")
    for axis, g, lim in zip("xyz", grid, dev.max_grid_dims):
        if g > lim:
            raise LaunchError(f"{where}: needs grid {axis} dimension {g}, limit {lim}")
    total_shared = fn.static_shared_bytes + shared_bytes
    if total_shared > dev.max_shared_per_block_optin:
        raise LaunchError(f"{where}: needs {_size(total_shared)} shared memory ({_size(fn.static_shared_bytes)} static"
                          f" + {_size(shared_bytes)} dynamic), limit {_size(dev.max_shared_per_block_optin)}")
    regs = fn.num_regs * threads
    if regs > dev.regs_per_block:
        raise LaunchError(f"{where}: needs {regs} registers per block ({fn.num_regs} per thread x {threads} threads),"
                          f" limit {dev.regs_per_block}")
    if threads > fn.max_threads_per_block:
        raise LaunchError(f"{where}: needs {threads} threads per block, limit {fn.max_threads_per_block} for this "
                          f"kernel ({fn.num_regs} registers per thread)")
    return grid, block


_SCALARS: dict[str, tuple[type, int | None]] = {
    "bool": (ctypes.c_bool, None),
    "char": (ctypes.c_int8, 8), "signed char": (ctypes.c_int8, 8), "int8_t": (ctypes.c_int8, 8),
    "unsigned char": (ctypes.c_uint8, -8), "uint8_t": (ctypes.c_uint8, -8),
    "short": (ctypes.c_int16, 16), "int16_t": (ctypes.c_int16, 16),
    "unsigned short": (ctypes.c_uint16, -16), "uint16_t": (ctypes.c_uint16, -16),
    "int": (ctypes.c_int32, 32), "int32_t": (ctypes.c_int32, 32),
    "unsigned": (ctypes.c_uint32, -32), "unsigned int": (ctypes.c_uint32, -32), "uint32_t": (ctypes.c_uint32, -32),
    "long": (ctypes.c_int64, 64), "long long": (ctypes.c_int64, 64), "long long int": (ctypes.c_int64, 64),
    "int64_t": (ctypes.c_int64, 64), "ptrdiff_t": (ctypes.c_int64, 64),
    "unsigned long long": (ctypes.c_uint64, -64), "uint64_t": (ctypes.c_uint64, -64), "size_t": (ctypes.c_uint64, -64),
    "float": (ctypes.c_float, None), "double": (ctypes.c_double, None),
}


#: Parameter types of TMA descriptors (128 bytes passed by value; see codegen.cuda.hopper).
TENSOR_MAP_TYPES = ("air_tensormap", "CUtensorMap")


def _pack_one(k: int, ctype: str, value):
    t = " ".join(w for w in ctype.replace("*", " * ").split()
                 if w not in ("const", "__restrict__", "volatile", "__grid_constant__"))
    where = f"argument #{k} ({ctype})"
    if t in TENSOR_MAP_TYPES:
        words = value if isinstance(value, (tuple, list)) else getattr(value, "opaque", None)
        if words is None or len(words) != 16 or not all(isinstance(w, (int, np.integer)) for w in words):
            raise LaunchError(f"{where}: expected the 16 64-bit words of an encoded tensor map, got "
                              f"{type(value).__name__}")
        return (ctypes.c_uint64 * 16)(*(int(w) & (1 << 64) - 1 for w in words))
    if t.endswith("*"):
        ptr = getattr(value, "ptr", value)
        if not isinstance(ptr, (int, np.integer)) or isinstance(ptr, bool) or not 0 <= int(ptr) < 1 << 64:
            raise LaunchError(f"{where}: expected a device address (int), got {type(value).__name__}")
        return ctypes.c_uint64(int(ptr))
    if t in ("__half", "half", "__nv_bfloat16", "nv_bfloat16"):
        dt = numpy_float_dtype("f16" if "half" in t and "bfloat" not in t else "bf16")
        try:
            bits = np.array(value, dtype=dt).reshape(()).view(np.uint16)
        except (TypeError, ValueError):
            raise LaunchError(f"{where}: expected a number, got {type(value).__name__}") from None
        return ctypes.c_uint16(int(bits))
    if t not in _SCALARS:
        raise LaunchError(f"{where}: unsupported parameter type {ctype!r}")
    cls, bits = _SCALARS[t]
    if bits is None:
        if not isinstance(value, (int, float, bool, np.integer, np.floating, np.bool_)):
            raise LaunchError(f"{where}: expected a number, got {type(value).__name__}")
        return cls(bool(value) if cls is ctypes.c_bool else float(value))
    if not isinstance(value, (int, np.integer, bool, np.bool_)):
        raise LaunchError(f"{where}: expected an integer, got {type(value).__name__}")
    v = int(value)
    lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if bits > 0 else (0, 1 << -bits)
    if not lo <= v < hi:
        raise LaunchError(f"{where}: {v} does not fit in {ctype}")
    return cls(v)


def pack_arguments(args: Sequence[tuple[str, object]], param_sizes: Sequence[int] | None = None, name: str = "kernel"):
    """``(kernelParams, keep)``: a ctypes ``void*[n]`` pointing at one C value per ``(ctype, value)``
    pair (pointers as ints or objects with ``.ptr``; a tensor map, ``air_tensormap``, as its 16
    words: the 128 bytes are passed by value), and the objects to keep alive until the launch
    returns. Checks the count and sizes against ``param_sizes`` when given. Pure: no device needed."""
    values = [_pack_one(k, str(ct), v) for k, (ct, v) in enumerate(args)]
    if param_sizes is not None:
        if len(param_sizes) != len(values):
            raise LaunchError(f"kernel {name} takes {len(param_sizes)} parameters, got {len(values)} arguments")
        for k, (size, v, (ct, _)) in enumerate(zip(param_sizes, values, args)):
            if ctypes.sizeof(v) != size:
                raise LaunchError(f"kernel {name}: argument #{k} is a {size}-byte parameter, got {ct!r} "
                                  f"({ctypes.sizeof(v)} bytes)")
    array = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
    return array, (values, array)
