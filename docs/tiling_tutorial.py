# %% [markdown]
# # Tiling and copy generation, pass by pass
#
# This notebook takes a matmul and a convolution from the op library through the mid-level
# optimizer (stage S3): canonicalization, multi-level tiling and copy generation into a fast
# memory space. After each pass it shows the IR and the decisions the pass recorded (what it
# did, what it refused and why). Every transformed program is checked against the original
# with the reference interpreter.
#
# It is executed in CI (`tests/test_notebooks.py`), and rendered to `tiling_tutorial.ipynb`
# with `python docs/notebook.py docs/tiling_tutorial.py`.

# %%
import numpy as np

import affine_ir as air
import transforms
from affine_ir.testing import assert_equivalent

# %% [markdown]
# ## A matmul
#
# `air.library.matmul(M, N, K)` gives `C += A @ B` as two nests: the initialisation of `C`
# and the accumulation over `(i, j, k)`.

# %%
matmul = air.library.matmul(48, 40, 32)
print(matmul)

# %% [markdown]
# ## Tiling at two levels
#
# `affine-loop-tile` tiles every outermost band. With `tile-levels=2` the sizes list two
# groups, outermost level first: here 16x16x16 tiles (think L2 or a thread block) split into
# 4x8x8 tiles (L1 or a warp). The hierarchy is named `%i_l2`, `%i_l1`, `%i_point`. 40 is not a
# multiple of 16, so the last tile along `j` is partial: its loops stop at an `affine.min`.

# %%
pm = transforms.PassManager.parse(
    "canonicalize,affine-loop-tile{tile-levels=2 tile-sizes=16,16,16,4,8,8}")
tiled = pm.run(matmul)
print(pm.trace)

# %%
print(tiled)

# %% [markdown]
# The trace keeps the IR before and after every pass; in a notebook it renders as one
# collapsible section per pass with its decisions and the diff.

# %%
pm.trace  # noqa: B018  (the cell's value is displayed)

# %% [markdown]
# The interpreter is the semantic reference: the tiled program computes exactly what the
# original computes.

# %%
rng = np.random.default_rng(0)
A = rng.integers(-3, 4, (48, 32)).astype(np.float32)
B = rng.integers(-3, 4, (32, 40)).astype(np.float32)
C = np.zeros((48, 40), np.float32)
assert_equivalent(matmul, tiled, [A, B, C])
print("tiled matmul == matmul on the interpreter")

# %% [markdown]
# ## Copy generation into fast memory
#
# `affine-data-copy-generate` copies the footprint of the accesses of a loop into buffers in a
# fast memory space (here `#gpu.address_space<workgroup>`, shared memory on a GPU) under a
# capacity, rewrites the accesses to use them, and writes back what is stored. The footprint
# is computed exactly by `analysis.memref_region`; `padding` adds elements to each buffer row
# against shared-memory bank conflicts.

# %%
pm = transforms.PassManager.parse(
    "affine-loop-tile{tile-sizes=16,16,16},"
    "affine-data-copy-generate{fast-mem-space=workgroup fast-mem-capacity=8 padding=1},canonicalize")
copied = pm.run(matmul)
for decision in pm.trace.decisions:
    print(decision)

# %%
print(copied)

# %%
assert_equivalent(matmul, copied, [A, B, C])
print("tiled + copied matmul == matmul on the interpreter")

# %% [markdown]
# ## Illegal requests are refused, with the dependence
#
# A stencil that reads `A[i - 1][j + 1]` carries a dependence with distance `(1, -1)`: its
# `(i, j)` band is not permutable, so tiling it would change the result. The tiling utility
# raises `TransformError` naming the loops and the dependence and leaves the IR as it was;
# the pass records the same reason and moves on.

# %%
stencil = air.parse("""
func.func @stencil(%A: memref<16x16xf32>) {
  affine.for %i = 1 to 16 {
    affine.for %j = 0 to 15 {
      %a = affine.load %A[%i - 1, %j + 1] : memref<16x16xf32>
      affine.store %a, %A[%i, %j] : memref<16x16xf32>
    }
  }
  return
}
""")
pm = transforms.PassManager.parse("affine-loop-tile{tile-size=4}")
out = pm.run(stencil)
print(pm.trace)
assert str(out) == str(stencil)

# %% [markdown]
# ## A convolution
#
# The same passes work on a 2-d convolution (NCHW input, FCHW filter, stride 1, no padding).
# Its band `(n, f, h, w, c, kh, kw)` is not fully permutable: the accumulation into `output`,
# carried by `%c`, has distances from -2 to 2 along `%kh` and `%kw`, so the tiling pass refuses
# the whole band and says so. With `permutable-prefix` it tiles the longest prefix that is
# permutable, `(n, f, h, w, c)`, instead. Copy generation with a 2 KiB capacity then places its
# copies at the outermost loop where the three footprints fit together (`%w_tile`): a window of
# 6 input rows (4 output rows plus the 3x3 filter's halo), the filter slice of the 4 output
# channels (hoisted to the loop it depends on) and the output tile.

# %%
conv = air.library.conv2d(1, 4, 10, 10, 8, 3, 3)
pm = transforms.PassManager.parse(
    "affine-loop-tile{tile-sizes=1,4,4,4,4 permutable-prefix},"
    "affine-data-copy-generate{fast-mem-space=workgroup fast-mem-capacity=2},canonicalize")
conv_opt = pm.run(conv)
for decision in pm.trace.decisions:
    print(decision)

# %%
print(conv_opt)

# %%
x = rng.integers(-3, 4, (1, 4, 10, 10)).astype(np.float32)
w = rng.integers(-3, 4, (8, 4, 3, 3)).astype(np.float32)
y = np.zeros((1, 8, 8, 8), np.float32)
assert_equivalent(conv, conv_opt, [x, w, y])
print("optimized conv2d == conv2d on the interpreter")
