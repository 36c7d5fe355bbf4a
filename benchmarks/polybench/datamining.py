"""PolyBench datamining kernels."""
