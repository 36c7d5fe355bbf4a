"""PolyBench solvers kernels."""
