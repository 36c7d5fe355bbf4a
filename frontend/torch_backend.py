"""The ``torch.compile`` backend ``"affine_ir"`` (issue 21).

``torch.compile(model, backend="affine_ir")`` finds it through the ``torch_dynamo_backends`` entry
point (nothing to import first). Dynamo hands it a graph; AOT autograd lowers that to ATen ops
(parameters become inputs: passed as arguments, not copied); :func:`compile_fx` imports the ATen
graph (:mod:`frontend.torch_import`) and compiles it with ``runtime.compile(target="auto")``: on
the GPU when one is usable (the GPU pipeline without cross-op loop fusion, see :func:`compile_fx`),
else through the CPU pipeline (with it).

Fallback: a graph holding ops the import cannot take is split around them (``torch.compile``'s
graph-break semantics within the graph): the runs of ops it imports are compiled, the others run
in eager PyTorch, and :func:`explain` reports every op that ran eagerly by name with its count and
the reason. Calls are checked against the shapes and dtypes the graph was compiled for (a clear
``ValueError`` naming the argument; ``torch.compile`` itself recompiles on a new shape).
Results equal eager up to the order of the f32 sums (contractions; exact on integer-valued data).

Caches: the program each graph's passes made is kept on disk (:mod:`frontend.graph_cache`, keyed by
the imported IR, the target, the pipeline and the compiler's source), and the backends keep their
object code and cubins beside it, so a second process compiling the same model runs no passes and
no compiler. :func:`compiled_graphs` lists what was compiled (the imported IR, the executable and
its pass trace, whether the cache had it).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

import runtime
from transforms.pipelines import gpu_pipeline

from . import graph_cache
from .torch_decompose import DECOMPOSITIONS
from .torch_import import Imported, UnsupportedNode, import_fx, unsupported

__all__ = ["CompiledGraph", "affine_ir_backend", "compile_fx", "compiled_graphs", "explain", "reset", "split_at",
           "wgmma_enabled"]


@dataclass
class CompiledGraph:
    """One graph (or run of a split graph) the backend compiled: what the import made of it
    (``imported.module``: one function of loop nests), the ``executable`` (its ``module`` the
    program after the pass pipeline, its ``trace`` every pass's time and decisions, None on a
    cache hit), the ``target`` and whether the compiled-graph disk cache had it (``cache_hit``)."""

    imported: Imported
    executable: object
    target: str
    cache_hit: bool


_FALLBACKS: list[list[UnsupportedNode]] = []
_COMPILED: list[CompiledGraph] = []


def compiled_graphs() -> list[CompiledGraph]:
    """The graphs compiled since the last :func:`reset`, in order."""
    return list(_COMPILED)


def explain() -> dict:
    """What the backend did since the last :func:`reset`: ``compiled`` (graphs, or runs of split
    graphs, imported and compiled), ``fallbacks`` (graphs with ops run in eager PyTorch),
    ``unsupported`` (``{op: count}`` of those ops) and ``reasons`` (``{op: why}``)."""
    counts = Counter(n.op for nodes in _FALLBACKS for n in nodes)
    reasons = {n.op: n.reason for nodes in _FALLBACKS for n in nodes}
    return {"compiled": len(_COMPILED), "fallbacks": len(_FALLBACKS), "unsupported": dict(counts),
            "reasons": reasons}


def reset() -> None:
    """Forget what :func:`explain` and :func:`compiled_graphs` report (and free the device memory
    the GPU executables pooled for their temporaries: the next call allocates again)."""
    for graph in _COMPILED:
        release = getattr(graph.executable, "release_memory", None)
        if release is not None:
            release()
    _FALLBACKS.clear()
    _COMPILED.clear()


def compile_fx(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor], target: str = "auto") -> Callable:
    """A callable running the ATen graph ``gm`` as ``gm(*args)`` does (a tuple of tensors): the
    imported program, compiled for ``target``. A graph holding ops the import cannot take is split
    around them (:func:`split_at`): the runs of ops it can take are compiled, the others run in
    eager PyTorch (recorded for :func:`explain`)."""
    bad = unsupported(gm)
    if not bad:
        return _compile_whole(gm, target)
    _FALLBACKS.append(bad)
    return split_at(gm, {n.node for n in bad}, target).forward


def split_at(gm: torch.fx.GraphModule, eager: set[str], target: str = "auto") -> torch.fx.GraphModule:
    """``gm`` cut into consecutive runs of nodes (program order) that are all in ``eager`` (by name)
    or all outside it; each run outside is compiled (:func:`compile_fx`'s whole-graph path, when
    the run imports), each run inside stays an FX submodule run by PyTorch."""
    from torch.fx.passes.split_module import split_module

    part, eager_run, parts = 0, None, {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if (node.name in eager) != eager_run:
            part, eager_run = part + 1, node.name in eager
        parts[node.name] = (part, eager_run)
    split = split_module(gm, None, lambda n: parts[n.name][0])
    runs = {f"submod_{p}": is_eager for p, is_eager in parts.values()}
    for name, sub in list(split.named_children()):
        if runs.get(name) is False and not unsupported(sub):
            single = not isinstance(next(n for n in sub.graph.nodes if n.op == "output").args[0], (tuple, list))
            setattr(split, name, _Part(_compile_whole(sub, target), single))
    return split


class _Part(torch.nn.Module):
    """A compiled run of a split graph, returning what the FX submodule it replaces returned."""

    def __init__(self, run: Callable, single: bool):
        super().__init__()
        self.run, self.single = run, single

    def forward(self, *args):
        out = self.run(*args)
        return out[0] if self.single else out


def wgmma_enabled() -> bool:
    """Whether GPU graphs map their contractions onto Hopper's warpgroup MMA (``gpu-map-mma{wgmma=true}``:
    linear layers, ``x @ W^T``, and batched products of f16/bf16/8-bit floats): on when the GPU is sm_90
    (as ``runtime.cuda.default_pipeline``); ``$AFFINE_IR_WGMMA=0`` turns it off, ``=1`` on (kernels for
    sm_90a)."""
    flag = os.environ.get("AFFINE_IR_WGMMA", "").lower()
    if flag in ("0", "false", "no", "off"):
        return False
    if flag in ("1", "true", "yes", "on"):
        return True
    from runtime import cuda as runtime_cuda

    return runtime_cuda.has_wgmma(runtime_cuda.default_arch())


def _compile_whole(gm: torch.fx.GraphModule, target: str) -> Callable:
    imported = import_fx(gm)
    chosen = runtime.resolve_target(target)
    # On the GPU, fusion keeps the graph's reductions apart (separate-reductions): fusing a block's
    # contractions into each other left grids of 2 threads (a GPT-2 block: 2 kernels, neither on the
    # matrix units); so each contraction stays its own kernel on the matrix units or the SIMT schedule,
    # with its initialization and the point-wise ops after it (bias, activation, casts) fused in -- an
    # FFN block's linear layers write their f16 outputs once instead of f32 sums read back by 3 kernels.
    pipeline = gpu_pipeline(separate_reductions=True, wgmma=wgmma_enabled()) if chosen == "cuda" else None
    entry = graph_cache.key(imported.module, chosen, pipeline)
    compiled = graph_cache.load(entry)
    if compiled is not None:  # another process ran the pipeline: no passes now
        exe = runtime.compile(compiled, target=chosen, pipeline="", guard_module=imported.module)
    else:
        exe = runtime.compile(imported.module, target=chosen, pipeline=pipeline)
        graph_cache.store(entry, exe.module)
    _COMPILED.append(CompiledGraph(imported, exe, chosen, compiled is not None))
    return _Runner(imported, exe, chosen == "cuda")


class _Runner:
    def __init__(self, imported: Imported, exe, on_gpu: bool):
        self.imported, self.exe, self.on_gpu = imported, exe, on_gpu

    def __call__(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        specs = self.imported.inputs
        if len(args) != len(specs):
            raise ValueError(f"the compiled graph takes {len(specs)} tensors, got {len(args)}")
        for q, (a, (shape, dtype)) in enumerate(zip(args, specs)):
            if not isinstance(a, torch.Tensor) or tuple(a.shape) != shape or a.dtype != dtype:
                got = f"{tuple(a.shape)} {a.dtype}" if isinstance(a, torch.Tensor) else type(a).__name__
                raise ValueError(f"argument #{q}: expected a tensor of shape {shape} and dtype {dtype}, got {got}")
        for q, rows in self.imported.index_ranges:
            if args[q].numel():
                lo, hi = (int(v) for v in torch.aminmax(args[q]))
                if not 0 <= lo <= hi < rows:
                    raise IndexError(f"argument #{q}: embedding indices must lie in [0, {rows}), got [{lo}, {hi}]")
        device = args[0].device if args else torch.device("cpu")
        outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in self.imported.outputs]
        # the GPU takes the tensors in place (DLPack); the CPU numpy views of their memory
        as_array = _on_device if self.on_gpu else _numpy
        self.exe(*map(as_array, args), *map(as_array, outs))
        return tuple(outs)


def _on_device(t: torch.Tensor) -> torch.Tensor:
    """A CUDA tensor as the GPU runtime takes it (DLPack): dense, detached from autograd (a
    parameter requires gradients; the data is the same memory)."""
    return t.detach().contiguous()


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A CPU tensor's data as a numpy array sharing its memory (bf16 through ml_dtypes)."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _fw_compiler(gm: torch.fx.GraphModule, example_inputs):
    return make_boxed_func(compile_fx(gm, example_inputs))


#: The backend ``torch.compile`` calls: AOT autograd to ATen (with :mod:`.torch_decompose`'s
#: decompositions), then :func:`compile_fx` (inference:
#: a graph that needs a backward pass gets AOT autograd's default for it).
affine_ir_backend = aot_autograd(fw_compiler=_fw_compiler, decompositions=DECOMPOSITIONS)
