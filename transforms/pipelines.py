"""The default pass pipelines per target (stage S3), as pass-pipeline text.

- :data:`GPU_PIPELINE`: fusion as for the CPU, ``affine-privatize`` (fusion's private buffers one
  per iteration of the loops they are private to, so those loops stay parallel),
  ``gpu-expose-parallelism`` (nests whose outermost loop carries a dependence distributed and
  interchanged to put a parallel loop outermost, where legal), scalar replacement, then ``gpu-map-mma``
  (contractions of f16/bf16 operands with f32 sums on the matrix units: ``cp.async`` ring, ``ldmatrix``,
  ``mma.sync``; the others are left with the reason in the trace), ``gpu-schedule`` (the contractions
  left, as shared-memory tiled kernels with register tiles), then the other nests'
  innermost contiguous loops vectorized by 4 (16-byte accesses per thread; the constants they
  broadcast hoisted out; a nested loop only without a remainder loop, so bands stay perfect),
  ``affine-loop-sink`` (what LICM left between two parallel loops back in the inner one: the band
  is perfect again), ``affine-loop-skew`` (a nest without any parallel loop skewed into a
  wavefront whose inner loops are parallel, where the exact dependences allow),
  ``gpu-map-reductions`` (row reductions such as softmax and layer norm: a block per row, the row
  loops strided over its threads, a tree reduction in shared memory), ``gpu-sink-ifs`` (an
  ``affine.if`` of host values split and moved into the loops it wraps), then ``gpu-map`` (the
  parallel loops of the rest to blocks x threads; an outer loop carrying a dependence around
  parallel nests stays on the host, a loop of launches), then
  cleanups. :func:`gpu_pipeline`.
- :data:`CPU_PIPELINE`: fusion (and scalar replacement of what fusion leaves in private
  buffers and of reductions carried in memory), then ``cpu-schedule`` (cache tiles ranked by
  the cost model, register tiles by unroll-and-jam, vectorization), then the outermost
  parallel loop of each nest becomes an ``affine.parallel`` (run on threads by the CPU
  runtime), then cleanups. :func:`cpu_pipeline` builds it with other options.

Each pass keeps the program's meaning (exactly; ``cpu-schedule`` reassociates reductions it
vectorizes along the reduced dimension unless ``vectorize_reductions=False``; on the GPU,
``gpu-map-reductions`` and ``gpu-schedule``'s split-K reassociate float sums).
"""

from __future__ import annotations

__all__ = ["CPU_PIPELINE", "GPU_PIPELINE", "cpu_pipeline", "gpu_pipeline"]


def cpu_pipeline(*, fuse: bool = True, vectorize_reductions: bool = True, threads: bool = True,
                 vector_bits: int = 0) -> str:
    """The CPU pipeline text: ``fuse`` runs loop fusion first; ``vectorize_reductions`` lets
    ``cpu-schedule`` vectorize row reductions (reassociating them); ``threads`` marks the
    outermost parallel loop of each nest ``affine.parallel``; ``vector_bits`` schedules for
    SIMD registers of that width instead of the host's (0)."""
    passes = ["canonicalize"]
    if fuse:
        passes += ["affine-loop-fusion"]
    passes += ["affine-scalrep", "canonicalize"]
    options = [] if vectorize_reductions else ["vectorize-reductions=false"]
    options += [f"vector-bits={vector_bits}"] if vector_bits else []
    passes += ["cpu-schedule" + ("{" + " ".join(options) + "}" if options else "")]
    if threads:
        passes += ["affine-parallelize{max-nested=1}"]
    passes += ["canonicalize", "cse"]
    return ",".join(passes)


#: The default CPU pipeline (what ``runtime.compile(m, target="cpu")`` runs).
CPU_PIPELINE = cpu_pipeline()


def gpu_pipeline(*, fuse: bool = True, target: str = "h200", allow_tf32: bool = False,
                 accumulate_f16: bool = False, wgmma: bool = False, separate_reductions: bool = False,
                 wgmma_options: str = "", online_reductions: bool = False) -> str:
    """The GPU pipeline text: ``fuse`` runs loop fusion first; ``target`` is the GPU the tile
    sizes are chosen for and whose launch limits and default block sizes the mapping passes use;
    ``allow_tf32`` lets ``gpu-map-mma`` put f32 contractions on TF32 matrix units (off by default,
    as in PyTorch: inputs rounded to 10-bit mantissas), ``accumulate_f16`` makes it sum f16
    contractions in f16 (see ``docs/tensor_cores.md`` for both tolerances), ``wgmma`` maps contractions of
    K-major f16/bf16 operands onto Hopper's warpgroup MMA (TMA, mbarriers, a producer warpgroup; sm_90
    targets; see ``transforms/gpu/map_wgmma.py``); ``separate_reductions`` keeps fusion from fusing two nests
    that both reduce (a graph's contractions stay apart, each with its init and point-wise epilogue fused
    in: ``affine-loop-fusion{separate-reductions=true}``); ``wgmma_options``: more ``gpu-map-mma`` options for the
    warpgroup-MMA path (``"wgmma-schedule=pingpong wgmma-tiles=128,128,2"``); ``online_reductions`` runs
    ``affine-reduce-reduce-fusion{means=false weighted-sums=false}`` after fusion (online softmax: the max and
    the sum in one loop, which ``gpu-map-reductions`` combines as a rescaled sum; off until measured). Give the
    text to
    ``runtime.compile(m, target="cuda", pipeline=gpu_pipeline(allow_tf32=True))``."""
    option = "" if target == "h200" else f"{{target={target}}}"
    mma = [f"target={target}"] if target != "h200" else []
    mma += ["allow-tf32=true"] if allow_tf32 else []
    mma += ["accumulate-f16=true"] if accumulate_f16 else []
    mma += ["wgmma=true"] if wgmma else []
    mma += [wgmma_options] if wgmma and wgmma_options else []
    mma_option = "{" + " ".join(mma) + "}" if mma else ""
    fusion = "affine-loop-fusion" + ("{separate-reductions=true}" if separate_reductions else "")
    online = ["affine-reduce-reduce-fusion{means=false weighted-sums=false}"] if online_reductions and fuse else []
    passes = ["canonicalize"] + ([fusion, *online, "affine-privatize{dynamic-shapes=false}"] if fuse else [])
    passes += ["gpu-expose-parallelism", "affine-scalrep", "canonicalize"]
    passes += ["gpu-map-mma" + mma_option, "gpu-schedule" + option,
               "affine-super-vectorize{virtual-vector-size=4 nested-remainders=false}",
               "affine-loop-invariant-code-motion", "affine-loop-sink", "affine-loop-skew",
               "gpu-map-reductions" + option, "gpu-sink-ifs", "gpu-map" + option, "canonicalize", "cse"]
    return ",".join(passes)


#: The default GPU pipeline (what ``runtime.compile(m, target="cuda")`` runs).
GPU_PIPELINE = gpu_pipeline()
