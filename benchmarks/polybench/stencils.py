"""PolyBench stencils kernels."""
