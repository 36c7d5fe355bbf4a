"""Op definitions, one module per MLIR dialect. Importing this package registers them all."""

from . import affine, arith, builtin, func, gpu, math, memref, nvgpu, unregistered, vector  # noqa: F401
