"""PolyBench linalg_kernels kernels."""
