"""Op definitions, one module per MLIR dialect. Importing this package registers them all."""

from . import (  # noqa: F401
    affine,
    arith,
    builtin,
    func,
    gpu,
    math,
    memref,
    nvgpu,
    nvgpu_hopper,
    nvvm,
    unregistered,
    vector,
)
