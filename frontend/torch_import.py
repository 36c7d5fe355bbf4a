"""A PyTorch FX graph of ATen ops as one function of affine loop nests (issue 21, stage S1).

:func:`import_fx` takes the graph ``torch.compile`` hands a backend after AOT autograd (ATen core
ops, parameters as placeholders) and builds one ``func.func`` whose arguments are the graph's
inputs, then one output memref per graph output, written in place: each op is a nest written with
the library's emitters (``affine_ir.library``), so fusion and every later pass see one program.

- **Views without copies**: ``t``, ``transpose``, ``permute``, ``view``/``reshape``/
  ``_unsafe_view``, ``expand``, ``unsqueeze``, ``squeeze``, ``slice``, ``select``, ``split``, ``alias``,
  ``detach``, ``clone`` and ``contiguous`` build no nest (:mod:`.torch_views`): they change how
  later ops index the buffer (an affine map of the logical indices: a permutation, a broadcast
  index 0, a slice's ``start + step * i``, a select's constant, or the row-major delinearization of
  a reshape). A graph output that is a view of another buffer is copied into its output memref.
- **Ops** (:data:`SUPPORTED`): ``mm``, ``addmm`` (``beta``, ``alpha``), ``bmm``; element-wise
  ``relu``, ``gelu`` (both approximations), ``sigmoid``, ``tanh``, ``exp``, ``neg``, ``abs``,
  ``sqrt``, ``silu``, ``clamp``, ``hardtanh``; ``convolution`` (any stride, padding, dilation,
  groups), inference ``batch_norm``, ``layer_norm``, ``sum``/``mean``/``amax`` over dims,
  ``max_pool2d``, ``avg_pool2d``, ``cat``, scaled dot-product attention (causal or not; the CPU's
  and the GPU's flash/efficient forms) (:mod:`.torch_nn`); ``add``/``sub`` (with ``alpha``),
  ``mul``, ``div``, ``maximum``, ``minimum`` with numpy broadcasting and Python scalars;
  ``_softmax`` along any dim. Contractions and row sums accumulate in f32 as the library's.
- **Bool and integer tensors, conversions** (:mod:`.torch_mixed`): comparisons, ``where``,
  ``masked_fill``, ``_to_copy`` to a float type, ``embedding`` by an integer input.
- **Types**: f32, f16 and bf16 tensors (mixed: arithmetic in f32, rounded once per stored element),
  bool and int32/int64 tensors through :mod:`.torch_mixed`'s ops; static shapes (a new shape is a
  new graph: ``torch.compile`` recompiles).

Anything else is reported, not guessed: :func:`unsupported` lists every node the import cannot
take (its ATen name and the reason), and :func:`import_fx` raises :class:`UnsupportedGraph` with
that list.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch.fx import GraphModule, Node
from torch.fx.operator_schemas import normalize_function

from affine_ir.core import Value
from affine_ir.dialects.builtin import ModuleOp
from affine_ir.library import (
    DIM_NAMES,
    Kernel,
    emit_binary,
    emit_contraction,
    emit_softmax,
    emit_unary,
)

from . import torch_mixed, torch_nn
from .torch_mixed import COMPARES, MIXED, dtype_problem, read
from .torch_views import SPLITS, VIEWS, View

__all__ = ["SUPPORTED", "Imported", "UnsupportedGraph", "UnsupportedNode", "import_fx", "unsupported"]

aten = torch.ops.aten
DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
#: Every element type a tensor of the graph may have: the floats, and bool and integer tensors
#: where :mod:`.torch_mixed`'s ops make or read them.
ELEMENTS = {**DTYPES, torch.bool: "i1", torch.int64: "i64", torch.int32: "i32"}


@dataclass(frozen=True)
class UnsupportedNode:
    """A node the import cannot take: its op (``aten.cumsum.default``), the node's name, and why."""

    op: str
    node: str
    reason: str

    def __str__(self) -> str:
        return f"{self.op} (%{self.node}): {self.reason}"


class UnsupportedGraph(ValueError):
    """The graph holds nodes the import cannot take (``nodes``; counted by op in the message)."""

    def __init__(self, nodes: Sequence[UnsupportedNode]):
        self.nodes = list(nodes)
        counts = Counter(n.op for n in self.nodes)
        listed = "; ".join(f"{op} x{c}: {next(n.reason for n in self.nodes if n.op == op)}"
                           for op, c in counts.items())
        super().__init__(f"cannot import {len(self.nodes)} node(s): {listed}")


@dataclass
class Imported:
    """The imported function (``module``'s only one): its arguments are the graph's inputs in order,
    then ``outputs`` (shape, torch dtype) memrefs the call writes."""

    module: ModuleOp
    inputs: list[tuple[tuple[int, ...], torch.dtype]]
    outputs: list[tuple[tuple[int, ...], torch.dtype]]
    #: ``(input position, rows)``: an input indexing an embedding of ``rows`` rows (the caller
    #: checks ``0 <= index < rows`` before the call, as the gather does not).
    index_ranges: list[tuple[int, int]] = field(default_factory=list)


# -- what each node is --------------------------------------------------------------------------------------------
def _result(node) -> torch.Tensor:
    """The node's (first) result's fake tensor."""
    val = node.meta["val"]
    return val[0] if isinstance(val, (tuple, list)) else val


def _shape(node) -> tuple[int, ...]:
    """The node's (first) result's shape."""
    return tuple(int(s) for s in _result(node).shape)


def _element(node: Node) -> str:
    """The element type of the node's (first) result (``f16``, ``i1``...)."""
    return ELEMENTS[_result(node).dtype]


def _op_name(node: Node) -> str:
    """``aten.softplus.default`` for an ATen overload, the function's name otherwise."""
    t = node.target
    return str(t) if isinstance(t, torch._ops.OpOverload) else str(getattr(t, "__name__", t))


def _named(node: Node) -> dict:
    """An ATen call's arguments by their schema's names, defaults filled in (``self`` is ``input``)."""
    return dict(normalize_function(node.target, tuple(node.args), dict(node.kwargs),
                                   normalize_to_only_use_kwargs=True).kwargs)


UNARY = {aten.relu.default: "relu", aten.gelu.default: "gelu", aten.sigmoid.default: "sigmoid",
         aten.tanh.default: "tanh", aten.exp.default: "exp", aten.neg.default: "neg", aten.abs.default: "abs",
         aten.sqrt.default: "sqrt"}
BINARY = {aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul", aten.div.Tensor: "div",
          aten.maximum.default: "max", aten.minimum.default: "min"}
CONTRACTIONS = (aten.mm.default, aten.addmm.default, aten.bmm.default)
#: Element-wise ops with constant bounds (``clamp``'s may be None), and ``silu``.
CLAMPS = (aten.clamp.default, aten.hardtanh.default, aten.silu.default)
#: Layers (:mod:`.torch_nn`); ``scaled_dot_product_attention`` itself as ``torch.export`` keeps it.
NN_OPS = (aten.convolution.default, aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.cat.default,
          aten.amax.default, aten.avg_pool2d.default, aten.scaled_dot_product_attention.default)
#: Attention (first result: the output), on the CPU and the GPU.
ATTENTION = (aten._scaled_dot_product_flash_attention_for_cpu.default,
             aten._scaled_dot_product_flash_attention.default, aten._scaled_dot_product_efficient_attention.default,
             aten._scaled_dot_product_cudnn_attention.default)
#: Ops with several results of which the import computes the first (``getitem`` 0 takes it).
FIRST_OF_TUPLE = (aten._native_batch_norm_legit_no_training.default, aten.native_layer_norm.default,
                  aten.max_pool2d_with_indices.default, *ATTENTION)
#: The ops that read a ``scalar_tensor`` as a number.
NUMBER_READERS = frozenset(BINARY) | frozenset(COMPARES) | {aten.where.self, aten.masked_fill.Scalar}
#: Every ATen overload the import takes (and ``operator.getitem`` of a :data:`FIRST_OF_TUPLE` result).
SUPPORTED = (frozenset(VIEWS) | frozenset(UNARY) | frozenset(BINARY) | frozenset(CONTRACTIONS) | frozenset(NN_OPS)
             | frozenset(CLAMPS) | frozenset(FIRST_OF_TUPLE) | frozenset(SPLITS) | MIXED
             | {aten._softmax.default, operator.getitem})


def unsupported(gm: GraphModule) -> list[UnsupportedNode]:
    """Every node of ``gm`` the import cannot take, with the reason (empty: :func:`import_fx` works)."""
    out: list[UnsupportedNode] = []
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op in ("placeholder", "call_function") and isinstance(val, torch.Tensor) \
                and val.dtype not in ELEMENTS:
            out.append(UnsupportedNode(_op_name(node) if node.op == "call_function" else "input", node.name,
                                       f"dtype {val.dtype} (f32, f16, bf16, bool, int32 and int64 are imported)"))
        elif node.op == "call_function":
            why = _why_not(node)
            if why:
                out.append(UnsupportedNode(_op_name(node), node.name, why))
        elif node.op in ("get_attr", "call_module", "call_method"):
            out.append(UnsupportedNode(str(node.target), node.name, f"{node.op} nodes are not imported (an ATen "
                                                                    "graph after AOT autograd has none)"))
        elif node.op == "placeholder" and not isinstance(val, torch.Tensor):
            out.append(UnsupportedNode("input", node.name, f"a {type(val).__name__} input (tensors only)"))
        elif node.op == "output":
            results = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
            out += [UnsupportedNode("output", node.name, f"a {type(r).__name__} output (tensors only)")
                    for r in results if not isinstance(r, Node) or r.target is aten.scalar_tensor.default]
    return out


def _why_not(node: Node) -> str | None:
    if node.target not in SUPPORTED:
        return "no lowering for this op yet"
    if node.target is operator.getitem:
        src, item = node.args
        ok = isinstance(src, Node) and (src.target in SPLITS or src.target in FIRST_OF_TUPLE and item == 0)
        return None if ok else f"result #{item} of {_op_name(src) if isinstance(src, Node) else src!r}"
    if node.target in SPLITS or node.target in VIEWS:
        return None
    if node.target in FIRST_OF_TUPLE:
        used = {u.args[1] for u in node.users if u.target is operator.getitem}
        if not used <= {0}:
            return f"uses its results {sorted(used)} (only the first is imported)"
    elif not isinstance(node.meta.get("val"), torch.Tensor):
        return "its result is not one tensor"
    if node.target is aten.scalar_tensor.default and any(u.target not in NUMBER_READERS for u in node.users):
        return "a 0-d tensor read by an op that takes only tensors (it is imported as a number)"
    a = _named(node)
    return dtype_problem(node.target, a, _result(node).dtype) or _argument_problem(node.target, a)


def _argument_problem(target, a: dict) -> str | None:
    """Why the arguments ``a`` of an op the import takes are ones it does not (None: they are fine)."""
    if target is aten.convolution.default and (a["transposed"] or len(_shape(a["input"])) != 4):
        return "a transposed or non-2-D convolution"
    if target is aten.cat.default and not all(isinstance(t, Node) for t in a["tensors"]):
        return "a non-tensor in the list"
    if target in CLAMPS and any(isinstance(v, Node) for name, v in a.items() if name != "input"):
        return "tensor bounds (numbers only)"
    if target in ATTENTION or target is aten.scaled_dot_product_attention.default:
        if a.get("enable_gqa"):
            return "grouped-query attention (enable_gqa=True)"
        if a["dropout_p"] or a.get("attn_bias") is not None or a.get("attn_mask") is not None:
            return "dropout, an attention mask or bias"
        if len(_shape(a["query"])) != 4:
            return "not [batch, heads, sequence, dim]"
    if a.get("ceil_mode"):
        return "ceil_mode=True"
    if target in BINARY and not isinstance(a["other"], (Node, int, float)):
        return f"operand {a['other']!r} is not a tensor or a number"
    if target is aten._softmax.default and a["half_to_float"]:
        return "half_to_float=True (an f32 result of f16 input)"
    if target is aten.gelu.default and a["approximate"] not in ("none", "tanh"):
        return f"gelu approximate={a['approximate']!r}"
    if target is aten._to_copy.default and not _same_place(a):
        return "a copy to another device, layout or memory format (dtype conversions only)"
    if target is aten.embedding.default and _source(a["indices"]).op != "placeholder":
        return "indices computed in the graph (an input's, checked before the call, are imported)"
    if target is aten.embedding.default and a["weight"].target in VIEWS:
        return "a view as the weight (a tensor of its own only)"
    return None


def _same_place(a: dict) -> bool:
    """Whether ``_to_copy``'s arguments keep the tensor's device, layout and (dense) memory format."""
    device = a.get("device")
    return (a.get("layout") in (None, torch.strided) and not a.get("pin_memory")
            and (device is None or torch.device(device) == a["input"].meta["val"].device)
            and a.get("memory_format") in (None, torch.preserve_format, torch.contiguous_format))


def _source(node: Node) -> Node:
    """The node whose buffer ``node`` views (itself when it is not a view)."""
    while node.target in VIEWS:
        node = node.args[0]
    return node


# -- the import ---------------------------------------------------------------------------------------------------
def import_fx(gm: GraphModule, name: str = "forward") -> Imported:
    """``gm`` as one function (see the module docstring). Raises :class:`UnsupportedGraph` listing
    every node it cannot take."""
    bad = unsupported(gm)
    if bad:
        raise UnsupportedGraph(bad)
    return _Builder(gm, name).build()


class _Builder:
    def __init__(self, gm: GraphModule, name: str):
        self.gm = gm
        nodes = list(gm.graph.nodes)
        self.inputs = [n for n in nodes if n.op == "placeholder"]
        out_node = next(n for n in nodes if n.op == "output")
        results = out_node.args[0]
        self.outputs = list(results) if isinstance(results, (tuple, list)) else [results]
        vals = [n.meta["val"] for n in self.inputs + self.outputs]
        dtype = next((DTYPES[v.dtype] for v in vals if v.dtype in DTYPES), "f32")
        self.k = Kernel(name, dtype)
        self.views: dict[Node, View] = {}
        self.home: dict[Node, Value] = {}  # nodes computed straight into an output memref

    def build(self) -> Imported:
        k = self.k
        shapes = {f"in{q}": _shape(n) for q, n in enumerate(self.inputs)}
        shapes.update({f"out{q}": _shape(o) for q, o in enumerate(self.outputs)})
        nodes = self.inputs + self.outputs
        types = {name: _element(n) for name, n in zip(shapes, nodes)}
        with k.function(types, **shapes) as mems:
            for n, mem in zip(self.inputs, mems):
                mem.name_hint = n.name
                self.views[n] = View.of(mem, _shape(n))
            outs = mems[len(self.inputs):]
            for o, mem in zip(self.outputs, outs):
                if o.op == "call_function" and o.target not in VIEWS and o.target is not operator.getitem \
                        and o not in self.home:
                    self.home[o] = mem
            for n in self.gm.graph.nodes:
                if n.op == "call_function":
                    self.views[n] = self._node(n)
            for o, mem in zip(self.outputs, outs):
                if self.home.get(o) is not mem:
                    self._copy(self.views[o], mem)
        ranges = [(self.inputs.index(_source(a["indices"])), _shape(a["weight"])[0])
                  for a in (_named(n) for n in self.gm.graph.nodes if n.target is aten.embedding.default)]
        return Imported(k.module, [(_shape(n), n.meta["val"].dtype) for n in self.inputs],
                        [(_shape(o), o.meta["val"].dtype) for o in self.outputs], ranges)

    # -- nodes ------------------------------------------------------------------------------------------------
    def _arg(self, a):
        if isinstance(a, (list, tuple)):
            return [self._arg(x) for x in a]
        return self.views[a] if isinstance(a, Node) else a

    def _node(self, n: Node) -> View:
        if n.target is operator.getitem:
            src = self.views[n.args[0]]
            return src[n.args[1]] if isinstance(src, list) else src
        if n.target in VIEWS or n.target in SPLITS:
            return {**VIEWS, **SPLITS}[n.target](*self._arg(n.args))
        a = {name: self._arg(v) for name, v in _named(n).items()}
        if n.target is aten.scalar_tensor.default:  # a number (its dtype's): the ops reading it take numbers
            return torch_mixed.rounded(float(a["s"]), _element(n))
        out = self._buffer(n)
        if n.target in MIXED:
            self._mixed(n.target, a, out)
        elif n.target in NN_OPS or n.target in FIRST_OF_TUPLE:
            self._layer(n.target, a, out)
        elif n.target in UNARY:
            self._unary(UNARY[n.target], a["input"], out, a.get("approximate", "none"))
        elif n.target in BINARY:
            self._binary(BINARY[n.target], a["input"], a["other"], out, a.get("alpha", 1))
        elif n.target in CLAMPS:
            self._clamp(n.target, a, out)
        elif n.target is aten._softmax.default:
            self._softmax(a["input"], a["dim"], out)
        else:
            self._contraction(n.target, a, out)
        return out

    def _buffer(self, n: Node) -> View:
        """Where ``n`` is computed: its output memref, or a temporary."""
        shape = _shape(n)
        mem = self.home.get(n)
        if mem is None:
            mem = self.k.temp(n.name, shape, _element(n))
        return View.of(mem, shape)

    def _mixed(self, target, a: dict, out: View) -> None:
        k = self.k
        if target in COMPARES:
            torch_mixed.compare(k, COMPARES[target], a["input"], a["other"], out)
        elif target is aten.where.self:
            torch_mixed.where(k, a["condition"], a["input"], a["other"], out)
        elif target is aten.masked_fill.Scalar:
            torch_mixed.where(k, a["mask"], a["value"], a["input"], out)
        elif target is aten.embedding.default:
            torch_mixed.embedding(k, a["weight"], a["indices"], out)
        else:
            torch_mixed.convert(k, a["input"], out)

    def _copy(self, src: View, dst: Value) -> None:
        """``dst = src`` element by element (the same element type: no conversion)."""
        b = self.k.b
        with self.k.loops(*zip(DIM_NAMES, src.shape)) as ivs:
            b.store(b.load(src.mem, src.index(ivs)), dst, ivs)

    def _layer(self, target, a: dict, out: View) -> None:
        k = self.k
        if target is aten.convolution.default:
            torch_nn.convolution(k, a["input"], a["weight"], a["bias"], out, a["stride"], a["padding"], a["dilation"],
                                 a["groups"])
        elif target is aten._native_batch_norm_legit_no_training.default:
            torch_nn.batch_norm(k, a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["eps"],
                                out)
        elif target is aten.native_layer_norm.default:
            torch_nn.layer_norm(k, a["input"], len(a["normalized_shape"]), a["weight"], a["bias"], a["eps"], out)
        elif target in ATTENTION or target is aten.scaled_dot_product_attention.default:
            torch_nn.attention(k, a["query"], a["key"], a["value"], a["scale"], bool(a["is_causal"]), out)
        elif target is aten.amax.default:
            torch_nn.reduce_max(k, a["input"], a["dim"], a["keepdim"], out)
        elif target is aten.avg_pool2d.default:
            torch_nn.avg_pool2d(k, a["input"], a["kernel_size"], a["stride"], a["padding"], a["count_include_pad"],
                                a["divisor_override"], out)
        elif target is aten.cat.default:
            torch_nn.concatenate(k, a["tensors"], a["dim"], out)
        elif target is aten.max_pool2d_with_indices.default:
            torch_nn.max_pool2d(k, a["input"], a["kernel_size"], a["stride"], a["padding"], a["dilation"], out)
        else:
            torch_nn.reduce_sum(k, a["input"], a.get("dim") or [], a.get("keepdim", False), out,
                                mean=target is aten.mean.dim)

    def _clamp(self, target, a: dict, out: View) -> None:
        """``clamp(x, min, max)`` (either may be None), ``hardtanh(x, min_val, max_val)``,
        ``silu(x) = x * sigmoid(x)``."""
        k, b = self.k, self.k.b
        lo, hi = a.get("min", a.get("min_val")), a.get("max", a.get("max_val"))
        with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
            v = a["input"].load(k, ivs)
            if target is aten.silu.default:
                v = b.mulf(v, emit_unary(k, "sigmoid", v))
            else:
                v = b.maximumf(v, k.const(float(lo))) if lo is not None else v
                v = b.minimumf(v, k.const(float(hi))) if hi is not None else v
            k.store(v, out.mem, ivs)

    def _materialized(self, v: View) -> Value:
        """A buffer holding ``v`` in its logical shape: its own, or a copy of the view."""
        if v.index is list:
            return v.mem
        mem = self.k.temp("view", v.shape, v.mem.type.element_type)
        self._copy(v, mem)
        return mem

    def _softmax(self, x: View, dim: int, out: View) -> None:
        """``out = softmax(x)`` along ``dim``: the library's three nests (row max, exp and sum, divide)."""
        k, shape = self.k, out.shape
        ax = dim % len(shape)
        rows = [(DIM_NAMES[p], s) for p, s in enumerate(shape) if p != ax]
        row_shape = tuple(s for p, s in enumerate(shape) if p != ax)
        mx, sm = k.temp("max", row_shape), k.temp("sum", row_shape)
        emit_softmax(k, self._materialized(x), out.mem, rows, (DIM_NAMES[ax], shape[ax]),
                     lambda r, a: [*r[:ax], a, *r[ax:]], list, mx, sm)

    def _unary(self, op: str, x: View, out: View, approximate: str) -> None:
        k = self.k
        with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
            k.store(emit_unary(k, op, x.load(k, ivs), approximate), out.mem, ivs)

    def _binary(self, op: str, a, b, out: View, alpha) -> None:
        k = self.k
        with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
            x = read(k, a, out.shape, ivs)
            y = read(k, b, out.shape, ivs)
            if alpha != 1:
                y = k.b.mulf(y, k.const(float(alpha)))
            k.store(emit_binary(k, op, x, y), out.mem, ivs)

    def _contraction(self, target, args: dict, out: View) -> None:
        """``mm``/``bmm``: ``out = a @ b``; ``addmm``: ``out = beta * bias + alpha * (a @ b)``: the
        products summed in f32 (a temporary for f16/bf16), then scaled, biased and rounded."""
        k = self.k
        if target is aten.addmm.default:
            bias, a, b, beta, alpha = (args[name] for name in ("input", "mat1", "mat2", "beta", "alpha"))
        else:
            (a, b), bias, beta, alpha = (args["input"], args["mat2"]), None, 0, 1
        batch = list(out.shape[:-2])
        m, n = out.shape[-2:]
        depth = a.shape[-1]
        outer = [*zip(("b",), batch), ("i", m), ("j", n)]
        nb = len(batch)
        acc = k.accumulator(out.mem, out.shape)
        emit_contraction(k, acc, outer, [("k", depth)], lambda ivs: list(ivs[:nb + 2]),
                         lambda ivs: [a.load(k, [*ivs[:nb], ivs[nb], ivs[nb + 2]]),
                                      b.load(k, [*ivs[:nb], ivs[nb + 2], ivs[nb + 1]])], init=0.0)
        if bias is None and acc is out.mem:
            return
        with k.loops(*outer) as ivs:
            v = k.load(acc, ivs)
            if alpha != 1:
                v = k.b.mulf(v, k.const(float(alpha)))
            if bias is not None and beta != 0:
                t = read(k, bias, out.shape, ivs)
                v = k.b.addf(v, t if beta == 1 else k.b.mulf(t, k.const(float(beta))))
            k.store(v, out.mem, ivs)

