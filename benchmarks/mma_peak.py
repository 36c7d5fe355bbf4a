"""The ceiling of ``mma.sync.m16n8k16`` f16 -> f32 on this GPU: a kernel of independent ``mma.sync``
on registers only (no memory), one block of ``warps`` warps per multiprocessor, ``acc`` accumulator
fragments per warp. What ``gpu-map-mma``'s kernels (``benchmarks/mma_check.py``) can reach at most;
cuBLAS uses wgmma (issue 19).

    python benchmarks/mma_peak.py
"""

from __future__ import annotations

SOURCE = r"""
extern "C" __global__ void peak(float* out, int iters, unsigned seed) {
  unsigned a0 = seed ^ threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u, b0 = a0 * 11u, b1 = a0 * 13u;
  float acc[NACC][4];
  #pragma unroll
  for (int i = 0; i < NACC; ++i) { acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f; }
  for (int it = 0; it < iters; ++it) {
    #pragma unroll
    for (int i = 0; i < NACC; ++i)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                   "{%0,%1,%2,%3};"
        : "+f"(acc[i][0]), "+f"(acc[i][1]), "+f"(acc[i][2]), "+f"(acc[i][3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0.f;
  #pragma unroll
  for (int i = 0; i < NACC; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def main() -> None:
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    iters = 4000
    print(f"{cp.cuda.runtime.getDeviceProperties(dev.id)['name'].decode()}: {sms} multiprocessors")
    for nacc in (8, 32):
        kernel = cp.RawKernel(SOURCE.replace("NACC", str(nacc)), "peak")
        for warps in (4, 8, 12, 16):
            threads = 32 * warps
            out = cp.zeros(sms * threads, dtype=cp.float32)
            try:
                kernel((sms,), (threads,), (out, cp.int32(iters), cp.uint32(1)))
            except cp.cuda.driver.CUDADriverError as e:  # too many registers for the block
                print(f"acc {nacc:2d}, {warps:2d} warps/SM: not launched ({e})")
                continue
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            kernel((sms,), (threads,), (out, cp.int32(iters), cp.uint32(2)))
            end.record()
            end.synchronize()
            ms = cp.cuda.get_elapsed_time(start, end)
            flops = 2 * 16 * 8 * 16 * nacc * iters * warps * sms
            print(f"acc {nacc:2d}, {warps:2d} warps/SM: {flops / ms / 1e9:.0f} TFLOP/s")


if __name__ == "__main__":
    main()
