"""runtime: command-line entry points (and, later, compile + run on CPU and GPU)."""
