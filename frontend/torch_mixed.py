"""The PyTorch import's ops over bool and integer tensors, and dtype conversions (issue 21).

Comparisons (``gt``/``lt``/``ge``/``le``/``eq``/``ne``, tensor or number) give bool tensors
(``i1`` memrefs); ``where``/``masked_fill`` select by one; ``_to_copy`` to a float dtype converts
(float to float: one rounding of the exact value; bool to 0.0/1.0; integer to the nearest float);
``embedding`` gathers rows of a weight by an integer tensor (``memref.load`` at a loaded index: the
one access that is not affine). Integer and bool tensors only flow through these ops and views:
float arithmetic on them is refused by the import (:func:`dtype_problem`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from affine_ir.core import Value
from affine_ir.dialects import memref
from affine_ir.library import DIM_NAMES, Kernel, broadcast_shape
from affine_ir.types import IntegerType

from .torch_views import View, expand

__all__ = ["COMPARES", "MIXED", "compare", "convert", "dtype_problem", "embedding", "read", "where"]

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)
INTEGERS = (torch.int64, torch.int32)

#: ATen comparison -> ``arith.cmpf`` predicate (ordered: a NaN compares false, as in PyTorch; ``ne`` unordered).
COMPARES = {getattr(aten, op).__getattr__(kind): pred
            for op, pred in (("gt", "ogt"), ("lt", "olt"), ("ge", "oge"), ("le", "ole"), ("eq", "oeq"), ("ne", "une"))
            for kind in ("Tensor", "Scalar")}
WHERE = (aten.where.self, aten.masked_fill.Scalar)
CONVERTS = (aten._to_copy.default,)
#: Every op of this module, and ``scalar_tensor`` (a number the others read).
MIXED = frozenset(COMPARES) | frozenset(WHERE) | frozenset(CONVERTS) | {aten.embedding.default,
                                                                        aten.scalar_tensor.default}


def _dtype(x) -> torch.dtype | None:
    val = getattr(x, "meta", {}).get("val")
    return val.dtype if isinstance(val, torch.Tensor) else None


def dtype_problem(target, args: dict, result: torch.dtype | None) -> str | None:
    """Why the dtypes of a node (its arguments' by schema name, from their FX nodes, and its
    result's) are ones the import does not take; None when they are fine."""
    dtypes = {f"{name}{q}": _dtype(v) for name, vs in args.items()
              for q, v in enumerate(vs if isinstance(vs, (list, tuple)) else [vs]) if _dtype(v) is not None}
    if target is aten.embedding.default:
        if dtypes.get("indices0") not in INTEGERS or dtypes.get("weight0") not in FLOATS:
            return "embedding of a non-float weight or by non-integer indices"
        return None
    if target in WHERE:
        cond = "condition0" if target is aten.where.self else "mask0"
        others = [d for name, d in dtypes.items() if name != cond]
        return None if dtypes.get(cond) is torch.bool and all(d in FLOATS for d in others) else \
            "a where/masked_fill over non-float values or by a non-bool condition"
    if target in CONVERTS:
        src = dtypes.get("input0")
        return None if result in FLOATS and src in (*FLOATS, *INTEGERS, torch.bool) else \
            f"a conversion from {src} to {result} (to f32/f16/bf16 only)"
    if target is aten.scalar_tensor.default:
        return None if result in FLOATS else f"a {result} scalar"
    floats_in = all(d in FLOATS for d in dtypes.values())
    if target in COMPARES:
        return None if floats_in else "a comparison of non-float tensors"
    if not floats_in or (result is not None and result not in FLOATS):
        return f"{'/'.join(sorted({str(d) for d in dtypes.values()} | {str(result)}))} operands or result " \
               "(this op is imported for float tensors)"
    return None


def read(k: Kernel, a, shape: Sequence[int], ivs: Sequence) -> Value:
    """``a`` (a view broadcast to ``shape``, or a number) at ``ivs``, in the compute type."""
    if not isinstance(a, View):
        return k.const(float(a))
    broadcast_shape(a.shape, shape)  # raises on shapes that do not broadcast
    return expand(a, list(shape)).load(k, ivs)


def _raw(k: Kernel, a: View, shape: Sequence[int], ivs: Sequence) -> Value:
    """``a`` broadcast to ``shape`` at ``ivs``, in its element type (no conversion)."""
    v = expand(a, list(shape))
    return k.b.load(v.mem, v.index(ivs))


def compare(k: Kernel, predicate: str, a, b, out: View) -> None:
    """``out = a <predicate> b`` (bool) for float views or numbers, broadcast."""
    a, b = _as_element_of(a, b), _as_element_of(b, a)
    with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
        x, y = read(k, a, out.shape, ivs), read(k, b, out.shape, ivs)
        k.b.store(k.b.cmpf(predicate, x, y), out.mem, ivs)


def _as_element_of(number, other):
    """``number`` rounded to the element type of the view ``other`` (PyTorch compares an f16 tensor
    with a Python number rounded to f16); views and numbers beside numbers unchanged."""
    if isinstance(number, View) or not isinstance(other, View):
        return number
    return rounded(number, str(other.mem.type.element_type))


def rounded(number: float, element: str) -> float:
    """``number`` rounded to the float type ``element`` (``f32``, ``f16``, ``bf16``)."""
    from affine_ir.floats import numpy_float_dtype

    return float(np.asarray(number, dtype=numpy_float_dtype(element)))


def where(k: Kernel, cond: View, x, y, out: View) -> None:
    """``out = cond ? x : y`` (``x``, ``y`` float views or numbers), broadcast."""
    with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
        c = _raw(k, cond, out.shape, ivs)
        k.store(k.b.select(c, read(k, x, out.shape, ivs), read(k, y, out.shape, ivs)), out.mem, ivs)


def convert(k: Kernel, x: View, out: View) -> None:
    """``out = x`` in ``out``'s float type: floats through the compute type (exact: f16/bf16 widen
    to f32, so one rounding), bool as 0/1, integers to the nearest float."""
    with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
        v = _raw(k, x, out.shape, ivs)
        if isinstance(v.type, IntegerType):
            v = k.b.cast("uitofp" if v.type.width == 1 else "sitofp", v, k.ctype)
        else:
            v = k.b.convert(v, k.ctype)  # exact: f16/bf16 widen to f32 (f16 -> bf16 has no direct cast)
        k.store(v, out.mem, ivs)


def embedding(k: Kernel, weight: View, indices: View, out: View) -> None:
    """``out[..., d] = weight[indices[...], d]``: the row index loaded and cast to ``index``, the row
    read by ``memref.load`` (not affine). Indices must be in range: the caller checks them."""
    if weight.index is not list:
        raise ValueError("embedding of a view of a weight (its own buffer only)")
    rows = out.shape[:-1]
    with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
        row = k.b.cast("index_cast", _raw(k, indices, rows, ivs[:-1]), "index")
        col = ivs[-1].value
        v = k.b.insert(memref.LoadOp(weight.mem, [row, col])).result
        k.store(k.b.convert(v, k.ctype), out.mem, ivs)
