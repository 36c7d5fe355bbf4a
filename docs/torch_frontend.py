# %% [markdown]
# # A PyTorch model through `torch.compile(backend="affine_ir")`
#
# This notebook compiles a small model with the affine-ir backend and shows each stage: the ATen
# graph PyTorch hands the backend, the one function of loop nests the import makes of it, what
# loop fusion decided across the model's operators, the program that runs, and the check against
# eager PyTorch. It runs on the CPU (the GPU pipeline takes the same path with `target="cuda"`).
#
# It is executed in CI (`tests/test_notebooks.py`), and rendered to `torch_frontend.ipynb` with
# `python docs/notebook.py docs/torch_frontend.py`.

# %% [markdown]
# Compiled graphs are kept on disk (a second process loads the program instead of running the
# passes again); this notebook compiles into a cache directory of its own so that the passes run
# and their decisions can be shown.

# %%
import os
import tempfile

import torch

os.environ["AFFINE_IR_CACHE"] = tempfile.mkdtemp(prefix="affine-ir-notebook-")

import affine_ir as air  # noqa: E402
from frontend import torch_backend  # noqa: E402

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4)).eval()
x = torch.randn(2, 3, 8, 8)

# %% [markdown]
# ## Compile and check against eager
#
# The backend is found by name (the package registers it as a `torch_dynamo_backends` entry
# point). The first call traces the model, imports the graph and compiles it; later calls run the
# compiled program. `explain()` says what was compiled and what, if anything, ran eagerly.

# %%
torch._dynamo.reset()  # a fresh start: Dynamo stops compiling a function it recompiled 8 times
torch_backend.reset()
fast = torch.compile(model, backend="affine_ir")
with torch.no_grad():
    got, want = fast(x), model(x)
torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
assert len(torch_backend.compiled_graphs()) == 1
print("max difference from eager:", (got - want).abs().max().item())
torch_backend.explain()  # noqa: B018  (the cell's value is displayed)

# %% [markdown]
# ## The imported program
#
# The ATen graph (convolution, inference batch norm, ReLU, mean over the spatial dims, the linear
# layer's transpose and `addmm`) became one `func.func`: its arguments are the graph's inputs
# (the parameters among them: passed, not copied) and then the output it writes. Each operator is
# a loop nest over memrefs; views such as the transpose are index maps of the nests that read
# them, not copies.

# %%
graph = torch_backend.compiled_graphs()[-1]
print(air.print_op(graph.imported.module))

# %% [markdown]
# ## What the passes decided across operators
#
# The CPU pipeline fuses producer nests into their consumers where the dependences allow
# (the convolution, batch norm and ReLU become one nest; the mean reads it) and privatizes the
# buffers that fusion leaves local. Every decision is recorded with the reason, refusals too.

# %%
trace = graph.executable.trace
for t in trace:
    if t.decisions:
        print(t.summary())
        for d in t.decisions[:6]:
            print("   ", d)

# %% [markdown]
# ## The program that runs
#
# After fusion, tiling, vectorization and parallelization, this is the IR handed to LLVM.

# %%
print(air.print_op(graph.executable.module)[:4000])

# %% [markdown]
# ## Operators it cannot import
#
# An operator without a lowering (here `cumsum`) splits the graph: the runs before and after it are
# compiled, it runs in eager PyTorch, and `explain()` names it with the reason.

# %%
torch_backend.reset()
torch._dynamo.reset()
f = torch.compile(lambda t: torch.relu(torch.cumsum(t * 2, dim=1)) + 1, backend="affine_ir")
t = torch.randn(3, 5)
with torch.no_grad():
    torch.testing.assert_close(f(t), torch.relu(torch.cumsum(t * 2, dim=1)) + 1)
report = torch_backend.explain()
assert report["unsupported"] == {"aten.cumsum.default": 1}
report  # noqa: B018  (the cell's value is displayed)
