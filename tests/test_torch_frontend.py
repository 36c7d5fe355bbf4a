"""The PyTorch frontend (issue 21): ATen graphs imported into one affine function and checked on the
interpreter against eager PyTorch; ``torch.compile(backend="affine_ir")`` end to end on the CPU; the
eager fallback for ops it cannot import, reported by name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402

import affine_ir as air  # noqa: E402
from frontend import torch_backend  # noqa: E402
from frontend.torch_import import UnsupportedGraph, import_fx, unsupported  # noqa: E402


def aten_graph(fn, *inputs, calls: list | None = None):
    """The ATen graph ``torch.compile`` hands a backend after AOT autograd for ``fn(*inputs)``; the
    tensors it was then called with (a module's parameters among them) appended to ``calls``."""
    graphs = []

    def capture(gm, example_inputs):
        graphs.append(gm)

        def run(*args):
            if calls is not None:
                calls.append([a.detach().clone() for a in args])
            return gm(*args)

        return make_boxed_func(run)

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(fn, backend=aot_autograd(fw_compiler=capture), dynamic=False)(*inputs)
    assert len(graphs) == 1, f"{len(graphs)} graphs"
    return graphs[0]


def ints(*shape, dtype=torch.float32, lo=-3, hi=4, seed=0):
    """Integer-valued data (f32 sums and products of them are exact)."""
    g = torch.Generator().manual_seed(seed + sum(shape))
    return torch.randint(lo, hi, shape, generator=g).to(dtype)


def run_imported(fn, *inputs):
    """(eager outputs, outputs of the imported function on the interpreter) as numpy arrays."""
    calls: list = []
    gm = aten_graph(fn, *inputs, calls=calls)
    imported = import_fx(gm)
    with torch.no_grad():
        want = fn(*inputs)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    args = [torch_backend._numpy(t).copy() for t in calls[0]]  # the graph's inputs: parameters included
    outs = [torch_backend._numpy(torch.zeros(shape, dtype=dtype)).copy() for shape, dtype in imported.outputs]
    air.interpret(imported.module, *args, *outs)
    return [w.float().numpy() for w in want], [o.astype(np.float32) for o in outs]


def integer_weights(module: torch.nn.Module, seed: int = 1) -> torch.nn.Module:
    """``module`` in eval mode with integer-valued parameters (exact f32 sums)."""
    with torch.no_grad():
        for q, p in enumerate(module.parameters()):
            p.copy_(ints(*p.shape, seed=seed + q))
    return module.eval()


LIN = integer_weights(torch.nn.Linear(6, 5))

#: name -> (function, inputs): each exact on integer-valued data.
EXACT = {
    "mm": (torch.mm, (ints(4, 6), ints(6, 5))),
    "addmm beta alpha": (lambda b, x, y: torch.addmm(b, x, y, beta=2, alpha=3), (ints(5), ints(4, 6), ints(6, 5))),
    "bmm": (torch.bmm, (ints(2, 3, 4), ints(2, 4, 5))),
    "linear (t + addmm)": (LIN, (ints(3, 6),)),
    "relu": (torch.relu, (ints(3, 7),)),
    "neg abs": (lambda x: torch.abs(-x), (ints(3, 7),)),
    "add alpha, broadcast": (lambda x, y: torch.add(x, y, alpha=2), (ints(3, 1, 5), ints(4, 1))),
    "sub scalar": (lambda x: x - 3, (ints(2, 5),)),
    "mul div": (lambda x, y: x * y / 2, (ints(4, 5), ints(5))),
    "maximum minimum": (lambda x, y: torch.minimum(torch.maximum(x, y), x + 1), (ints(3, 4), ints(3, 4))),
    "permute reshape": (lambda x: (x.permute(2, 0, 1).reshape(6, 4) + 1).t(), (ints(2, 3, 4),)),
    "view of a transpose": (lambda x, y: x.t().reshape(2, 6) @ y, (ints(4, 3), ints(6, 2))),
    "unsqueeze expand": (lambda x: x.unsqueeze(1).expand(4, 3, 5) * 2, (ints(4, 5),)),
    "squeeze": (lambda x: (x.unsqueeze(0) + 1).squeeze(0), (ints(4, 5),)),
    "two outputs, one a view of an input": (lambda x: (x.t(), torch.relu(x)), (ints(3, 4),)),
    "conv2d stride 2, padding, bias": (integer_weights(torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)),
                                       (ints(2, 3, 7, 6),)),
    "conv2d dilation 2, no bias": (integer_weights(torch.nn.Conv2d(2, 3, 3, dilation=2, bias=False)),
                                   (ints(1, 2, 7, 7),)),
    "conv2d groups 2": (integer_weights(torch.nn.Conv2d(4, 6, 3, padding=1, groups=2)), (ints(1, 4, 5, 5),)),
    "depthwise conv2d": (integer_weights(torch.nn.Conv2d(4, 4, 3, padding=1, groups=4)), (ints(2, 4, 5, 5),)),
    "max_pool2d padding 1": (torch.nn.MaxPool2d(3, 2, 1), (ints(1, 2, 7, 6),)),
    "sum and mean over dims": (lambda x: x.sum((1, 3), keepdim=True) + x.mean(-1, keepdim=True), (ints(2, 3, 5, 4),)),
    "sum of everything": (lambda x: x.sum() * x, (ints(3, 4),)),
    "cat, slice, select": (lambda x: torch.cat([x, x * 2, -x], 1)[:, 1:9:2, 0] + 1, (ints(2, 4, 3),)),
    "slice from the end": (lambda x: x[:, -3:] * x[:, :3], (ints(2, 5),)),
    "amax": (lambda x: x.amax(-1, keepdim=True) - x.amax((0, 2)), (ints(3, 4, 5),)),
    "avg_pool2d (divides by 4)": (torch.nn.AvgPool2d(2), (ints(1, 2, 6, 4),)),
    "avg_pool2d padded, taps inside counted": (torch.nn.AvgPool2d(3, 2, 1, count_include_pad=False),
                                               (ints(1, 2, 5, 5, lo=0, hi=1),)),
    "clamp, hardtanh (ReLU6), one-sided clamp": (lambda x: torch.clamp(x, -1, 2) + torch.nn.functional.relu6(x * 3)
                                                 + torch.clamp(x, min=0), (ints(3, 5),)),
    "comparisons and where": (lambda x, y: torch.where(x > y, x, y) + torch.where(x <= 0, 1.0, x) + (x == y).float()
                              + 2 * (x != 1).float() + (x >= y).float() - (x < y).float(), (ints(3, 4), ints(4))),
    "masked_fill": (lambda x: torch.masked_fill(x, x > 1, -5.0), (ints(3, 5),)),
    "a bool output": (lambda x, y: (x > y, x * y), (ints(2, 5), ints(2, 5))),
    "dtype conversions f32-f16-bf16": (lambda x: x.half().float() + 2 * x.to(torch.bfloat16).float(), (ints(4, 5),)),
    "f16 compared with numbers rounded to f16": (lambda x: (x == 0.1, x <= 0.3, x > 0.2),
                                                  (torch.tensor([0.1, 0.3, 0.2], dtype=torch.float16),)),
    "f16 to bf16 (through f32)": (lambda x: x.to(torch.bfloat16),
                                  (torch.tensor([0.1, 3.3, -7.1], dtype=torch.float16),)),
    "an f16 scalar_tensor, rounded": (lambda x: x * torch.scalar_tensor(0.1, dtype=torch.float16), (ints(3),)),
    "embedding": (lambda ids, w: torch.nn.functional.embedding(ids, w) * 2,
                  (torch.tensor([[0, 3, 4], [2, 2, 1]]), ints(5, 4))),
}


@pytest.mark.parametrize("name", list(EXACT))
def test_ops_import_and_match_eager_exactly_on_integer_data(name):
    fn, inputs = EXACT[name]
    want, got = run_imported(fn, *inputs)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fn", [torch.sigmoid, torch.tanh, torch.exp, lambda x: torch.sqrt(torch.abs(x)),
                                torch.nn.functional.gelu, lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
                                lambda x: torch.softmax(x, -1), lambda x: torch.softmax(x.t(), 0),
                                torch.nn.functional.silu])
def test_transcendental_ops_match_eager_within_float_rounding(fn):
    x = torch.linspace(-3, 3, 24).reshape(4, 6)
    want, got = run_imported(fn, x)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("layer", [torch.nn.LayerNorm(6), torch.nn.LayerNorm((3, 6), elementwise_affine=False),
                                   torch.nn.BatchNorm2d(3)])
def test_normalizations_match_eager_within_float_rounding(layer):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in layer.parameters():
            p.uniform_(0.5, 1.5)
        if isinstance(layer, torch.nn.BatchNorm2d):
            layer.running_mean.uniform_(-1, 1)
            layer.running_var.uniform_(0.5, 2)
    x = torch.linspace(-3, 3, 2 * 3 * 6 * (2 if isinstance(layer, torch.nn.BatchNorm2d) else 1))
    x = x.reshape(2, 3, 2, 6) if isinstance(layer, torch.nn.BatchNorm2d) else x.reshape(2, 3, 6)
    want, got = run_imported(layer.eval(), x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention_matches_eager(causal):
    q, key, v = (torch.linspace(-1, 1, 2 * 3 * 5 * 8).reshape(2, 3, 5, 8) * s for s in (1.0, -0.5, 2.0))
    want, got = run_imported(
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal), q, key, v)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


def test_attention_with_a_mask_is_refused_not_computed_without_it():
    q, mask = torch.randn(1, 2, 4, 8), torch.randn(4, 4)
    gm = aten_graph(lambda q, k, v, m: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m),
                    q, q, q, mask)
    assert [n.reason for n in unsupported(gm)] == ["dropout, an attention mask or bias"]


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
def test_half_precision_graphs_round_once_per_stored_element(dtype, tol):
    """f16/bf16: the contraction sums in f32 and rounds once; eager PyTorch rounds the same products
    (exact on integer data) and may sum in another order: the outputs agree to the format's rounding."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dtype)
    x = torch.linspace(-2, 2, 24).reshape(3, 8).to(dtype)
    want, got = run_imported(model, x)
    scale = np.abs(want[0]).max()
    np.testing.assert_allclose(got[0], want[0], atol=tol * scale)


def test_torch_compile_backend_runs_a_model_on_the_cpu_and_matches_eager():
    torch_backend.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).eval()
    fast = torch.compile(model, backend="affine_ir")  # found through the torch_dynamo_backends entry point
    x = torch.randn(4, 16)
    with torch.no_grad():
        got, want = fast(x), model(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert torch_backend.explain()["compiled"] == 1 and torch_backend.explain()["fallbacks"] == 0


def test_torch_compile_backend_runs_a_small_cnn_on_the_cpu_and_matches_eager():
    torch_backend.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=1, groups=8), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10)).eval()
    fast = torch.compile(model, backend="affine_ir")
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        got, want = fast(x), model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert torch_backend.explain() | {"reasons": {}} == {"compiled": 1, "fallbacks": 0, "unsupported": {},
                                                         "reasons": {}}


def _model_zoo():
    """benchmarks/model_zoo.py: the benchmark's models (one definition)."""
    spec = importlib.util.spec_from_file_location("model_zoo", Path(__file__).resolve().parents[1] / "benchmarks"
                                                  / "model_zoo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


model_zoo = _model_zoo()
GPT2Block = model_zoo.GPT2Block


@pytest.mark.parametrize("name", list(model_zoo.zoo(small=True)))
def test_every_benchmark_model_runs_whole_through_the_backend_on_the_cpu_and_matches_eager(name):
    """ResNet-18/50, MobileNetV2 (torchvision's architectures, 32x32 images), a BERT encoder layer,
    a GPT-2 block and an MLP-Mixer block (d 64): one graph each, nothing run eagerly."""
    torch_backend.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, shape = model_zoo.zoo(batch=1, small=True)[name]
    x = torch.randn(shape)
    with torch.no_grad():
        got, want = torch.compile(model, backend="affine_ir")(x), model(x)
    scale = want.abs().max().item()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * scale)
    assert torch_backend.explain() | {"reasons": {}} == {"compiled": 1, "fallbacks": 0, "unsupported": {},
                                                         "reasons": {}}


def test_an_encoder_layer_with_a_padding_mask_keeps_its_fast_path_op_and_runs_it_eagerly():
    torch_backend.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = model_zoo.bert_layer(32, 4).eval()
    x, mask = torch.randn(2, 6, 32), torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    with torch.no_grad():
        got = torch.compile(layer, backend="affine_ir")(x, src_key_padding_mask=mask)
        want = layer(x, src_key_padding_mask=mask)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)
    assert torch_backend.explain()["fallbacks"] >= 1


def test_mixed_lists_and_scalar_tensors_read_as_tensors_are_reported_not_crashed_on():
    bad = unsupported(aten_graph(lambda x, i: torch.cat([x, i]), ints(3), torch.tensor([1, 2])))
    assert [n.op for n in bad] == ["aten.cat.default"] and "float tensors" in bad[0].reason
    bad = unsupported(aten_graph(lambda x: x + torch.exp(torch.scalar_tensor(0.5)), ints(3)))
    assert "aten.scalar_tensor.default" in {n.op for n in bad}


def test_torch_export_refuses_a_non_tensor_user_input():
    from frontend.torch_export import compile_exported

    class Scale(torch.nn.Module):
        def forward(self, x, n: int):
            return x * n

    with pytest.raises(ValueError, match="non-tensor user input"):
        compile_exported(torch.export.export(Scale(), (torch.ones(3), 2)), target="cpu")


def test_embedding_indices_out_of_range_are_refused_before_the_call():
    ids, w = torch.tensor([[0, 3], [1, 2]]), ints(4, 3)
    gm = aten_graph(torch.nn.functional.embedding, ids, w)
    run = torch_backend.compile_fx(gm, [ids, w], target="cpu")
    torch.testing.assert_close(run(ids, w)[0], torch.nn.functional.embedding(ids, w))
    with pytest.raises(IndexError, match=r"argument #0: embedding indices must lie in \[0, 4\), got \[0, 4\]"):
        run(torch.tensor([[0, 4], [1, 2]]), w)


def test_integer_arithmetic_and_computed_embedding_indices_run_eagerly_and_are_reported():
    torch_backend.reset()
    torch._dynamo.reset()
    fn = torch.compile(lambda ids, w: torch.nn.functional.embedding(ids + 1, w) * 2, backend="affine_ir")
    ids, w = torch.tensor([0, 2, 1]), ints(4, 3)
    with torch.no_grad():
        torch.testing.assert_close(fn(ids, w), torch.nn.functional.embedding(ids + 1, w) * 2)
    report = torch_backend.explain()
    assert set(report["unsupported"]) == {"aten.add.Tensor", "aten.embedding.default"}
    assert "float tensors" in report["reasons"]["aten.add.Tensor"]
    assert "indices computed in the graph" in report["reasons"]["aten.embedding.default"]


def test_torch_compile_backend_runs_a_gpt2_block_whole():
    torch_backend.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    block = GPT2Block(64, 4).eval()
    x = torch.randn(2, 8, 64)
    with torch.no_grad():
        got, want = torch.compile(block, backend="affine_ir")(x), block(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert torch_backend.explain()["fallbacks"] == 0  # split, views, layer norm, attention: all imported


def test_an_op_it_cannot_import_runs_eagerly_and_is_reported_by_name():
    torch_backend.reset()
    torch._dynamo.reset()
    fn = torch.compile(lambda x: torch.cumsum(x, 1) + 1, backend="affine_ir")
    x = ints(3, 5)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), torch.cumsum(x, 1) + 1)
    report = torch_backend.explain()
    assert report["fallbacks"] == 1 and report["unsupported"] == {"aten.cumsum.default": 1}
    assert "no lowering" in report["reasons"]["aten.cumsum.default"]
    assert report["compiled"] == 1  # the add after the cumsum: a run of its own, compiled


def test_a_graph_is_split_around_the_ops_it_cannot_import():
    """relu * 2 | cumsum | relu + 1, then a cumsum of the sum with a matmul: compiled runs and eager
    runs alternate, the result is eager's."""
    torch_backend.reset()

    def fn(x, w):
        y = torch.cumsum(torch.relu(x) * 2, 1)
        return torch.cumsum(torch.relu(y) + 1, 0) @ w

    gm = aten_graph(fn, ints(3, 4), ints(4, 2))
    run = torch_backend.compile_fx(gm, [], target="cpu")
    got = run(ints(3, 4), ints(4, 2))
    torch.testing.assert_close(got[0], fn(ints(3, 4), ints(4, 2)))
    report = torch_backend.explain()
    assert report["unsupported"] == {"aten.cumsum.default": 2} and report["compiled"] == 3


def test_unsupported_nodes_are_listed_with_the_reason_and_the_import_refuses():
    gm = aten_graph(lambda x, i, d: torch.cumsum(x, 0)[i] + d.float(), ints(4, 3), torch.tensor([0, 2]),
                    torch.ones(3, dtype=torch.float64))
    bad = unsupported(gm)
    ops = {n.op for n in bad}
    assert {"aten.cumsum.default", "aten.index.Tensor", "input"} <= ops  # the f64 input
    assert any("dtype torch.float64" in n.reason for n in bad)
    with pytest.raises(UnsupportedGraph, match="cannot import"):
        import_fx(gm)


def test_a_call_with_another_shape_or_dtype_is_refused_naming_the_argument():
    gm = aten_graph(torch.relu, ints(2, 3))
    run = torch_backend.compile_fx(gm, [ints(2, 3)], target="cpu")
    np.testing.assert_array_equal(run(ints(2, 3))[0].numpy(), torch.relu(ints(2, 3)).numpy())
    with pytest.raises(ValueError, match=r"argument #0: expected a tensor of shape \(2, 3\)"):
        run(ints(3, 3))
    with pytest.raises(ValueError, match="dtype torch.float32"):
        run(ints(2, 3, dtype=torch.float16))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.float16, 1e-2)])
def test_gpu_the_backend_runs_cuda_tensors_in_place_and_matches_eager(dtype, tol):
    torch_backend.reset()
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32))
    model = model.to("cuda", dtype).eval()
    fast = torch.compile(model, backend=torch_backend.affine_ir_backend)
    x = torch.randn(16, 64, device="cuda", dtype=dtype)
    with torch.no_grad():
        got, want = fast(x), model(x)
    assert got.device.type == "cuda" and torch_backend.explain()["compiled"] == 1
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol * want.abs().max().item())


def test_training_mode_gradients_equal_eager():
    """With autograd on, AOT autograd hands over a forward graph (compiled) and a backward graph
    (``threshold_backward`` runs eagerly: split around it): the gradients are eager's."""
    torch_backend.reset()
    torch._dynamo.reset()
    model = integer_weights(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)))
    fast = torch.compile(model, backend="affine_ir")
    x = ints(2, 8)
    fast(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for got, want in zip(grads, (p.grad for p in model.parameters()), strict=True):
        torch.testing.assert_close(got, want)
    assert torch_backend.explain()["unsupported"].get("aten.threshold_backward.default") == 1


def test_for_the_gpu_the_graph_is_fused_with_its_linear_layers_apart_on_the_matrix_units(tmp_path, monkeypatch):
    """No GPU needed: NVRTC compiles the CUDA C. A GPT-2 block in f16: the 4 linear layers go to
    ``gpu-map-mma`` (fusing them into each other would leave two 2-thread kernels: fusion keeps the
    reductions apart), their point-wise neighbours fused in: 12 kernels (29 unfused); on the
    interpreter's launch emulation the mapped function computes the block's bits."""
    pytest.importorskip("cuda.bindings", reason="the CUDA extra (NVRTC) is not installed")
    from affine_ir.testing import library_inputs
    from affine_ir.testing import run as interpret

    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path))  # the passes run (a cache hit has no trace)
    torch.manual_seed(0)
    gm = aten_graph(GPT2Block(64, 4).half().eval(), torch.randn(2, 8, 64).half())
    run = torch_backend.compile_fx(gm, [], target="cuda")
    applied = [str(d) for t in run.exe.trace for d in t.decisions if str(d).startswith("gpu-map-mma: applied")]
    assert len(applied) == 4, applied
    assert len(run.exe.program.kernels) <= 12
    refused = [str(d) for t in run.exe.trace for d in t.decisions if "separate-reductions keeps them apart" in str(d)]
    assert refused
    args = library_inputs(run.imported.module, 0)
    for want, got in zip(interpret(run.imported.module, args), interpret(run.exe.module, args), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


MIXED = (lambda ids, w, x: (torch.nn.functional.embedding(ids, w) * 2 + torch.where(x > 0, x, 0.5).half().float(),
                            x > 1),
         (torch.tensor([[0, 3], [2, 1]]), ints(5, 4), ints(2, 2, 4)))


def test_for_the_gpu_bool_and_integer_tensors_and_conversions_compile():
    """No GPU needed: NVRTC compiles the kernels of a gather by int64 indices, a comparison to a
    bool output, a where and an f16 round trip."""
    pytest.importorskip("cuda.bindings", reason="the CUDA extra (NVRTC) is not installed")
    fn, inputs = MIXED
    run = torch_backend.compile_fx(aten_graph(fn, *inputs), list(inputs), target="cuda")
    source = run.exe.source
    assert "const long long* __restrict__" in source and "bool* __restrict__" in source
    assert run.exe.image is not None


def test_linear_layers_go_to_warpgroup_mma_when_asked(monkeypatch, tmp_path):
    """``$AFFINE_IR_WGMMA=1``: an f16 linear layer (``x @ W^T + b``) compiled for the GPU is one
    warpgroup-MMA kernel fed by TMA (NVRTC compiles it for sm_90a; no GPU needed); off, mma.sync."""
    pytest.importorskip("cuda.bindings", reason="the CUDA extra (NVRTC) is not installed")
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path))
    layer = torch.nn.Linear(64, 128).half()
    x = torch.randn(32, 64).half()
    for on in (False, True):
        monkeypatch.setenv("AFFINE_IR_WGMMA", "1" if on else "0")
        run = torch_backend.compile_fx(aten_graph(lambda t: layer(t), x), [x], target="cuda")
        assert ("wgmma.mma_async" in run.exe.source) == on and ("mma.sync" in run.exe.source) != on
        assert run.exe.image is not None and (run.exe.image.arch == "sm_90a") == on


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU")
def test_gpu_bool_and_integer_tensors_and_conversions_match_eager():
    fn, inputs = MIXED
    inputs = [t.cuda() for t in inputs]
    run = torch_backend.compile_fx(aten_graph(fn, *inputs), inputs, target="cuda")
    for _ in range(2):  # the second call replays the launch plan
        for got, want in zip(run(*inputs), fn(*inputs)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_second_compile_of_the_same_graph_loads_the_program_from_the_disk_cache(tmp_path, monkeypatch):
    """The passes' result is stored under the imported IR, the target, the pipeline and the
    compiler's source; a new compile of the same graph (as a second process would) runs no passes."""
    monkeypatch.setenv("AFFINE_IR_CACHE", str(tmp_path))
    model = GPT2Block(32, 2).eval()
    x = torch.randn(1, 8, 32)
    results = []
    for _ in range(2):
        torch_backend.reset()
        torch._dynamo.reset()
        with torch.no_grad():
            results.append(torch.compile(model, backend="affine_ir")(x))
        (graph,) = torch_backend.compiled_graphs()
        assert graph.target == "cpu"
        results.append(graph)
    first, second = results[1], results[3]
    assert not first.cache_hit and first.executable.trace is not None
    assert second.cache_hit and second.executable.trace is None  # no passes ran
    assert air.print_op(second.executable.module) == air.print_op(first.executable.module)
    torch.testing.assert_close(results[2], results[0], rtol=0, atol=0)
    assert list(tmp_path.glob("*.graph.mlir"))


def test_the_graph_cache_key_covers_target_pipeline_and_program():
    from frontend import graph_cache

    module = import_fx(aten_graph(torch.relu, ints(2, 3))).module
    other = import_fx(aten_graph(torch.relu, ints(2, 4))).module
    keys = {graph_cache.key(module, "cpu", None), graph_cache.key(module, "cuda", None),
            graph_cache.key(module, "cpu", "canonicalize"), graph_cache.key(other, "cpu", None)}
    assert len(keys) == 4 and graph_cache.key(module, "cpu", None) == graph_cache.key(module, "cpu", None)


@pytest.mark.parametrize("name", ["gpt2_block", "bert_layer", "mixer_block"])
def test_torch_export_programs_compile_ahead_of_time_and_match_eager(name):
    from frontend.torch_export import compile_exported

    torch.manual_seed(0)
    model, shape = model_zoo.zoo(small=True)[name]
    x = torch.randn(shape)
    torch_backend.reset()
    with torch.no_grad():
        run = compile_exported(torch.export.export(model, (x,)), target="cpu")
        got, want = run(x), model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * want.abs().max().item())
    assert torch_backend.explain()["fallbacks"] == 0  # attention kept whole, not decomposed into a mask
    with pytest.raises(TypeError, match="takes 1 input"):
        run(x, x)


def test_torch_export_of_a_program_that_updates_buffers_is_refused():
    from frontend.torch_export import compile_exported

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).train()
    with pytest.raises(ValueError, match="mutates .*running_mean"):
        compile_exported(torch.export.export(model, (torch.randn(5, 4),)), target="cpu")
