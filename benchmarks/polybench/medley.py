"""PolyBench medley kernels."""
