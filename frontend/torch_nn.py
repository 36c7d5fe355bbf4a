"""The PyTorch import's network layers as loop nests over views: convolution (any groups: depthwise
too), batch normalization in inference, layer normalization, sums and means over dims, and max
pooling. Each writes the buffer ``out`` (a :class:`~frontend.torch_views.View` of its own buffer),
computing in f32 (the library's compute type) and rounding once when it stores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from affine_ir.library import DIM_NAMES, Kernel, emit_contraction, emit_softmax
from affine_ir.library.conv import padded_load, window_guard

from .torch_views import View

__all__ = ["attention", "avg_pool2d", "batch_norm", "concatenate", "convolution", "layer_norm", "max_pool2d",
           "reduce_max", "reduce_sum"]

NEG_INF = float("-inf")


def _pairs(*values) -> list[tuple[int, int]]:
    """Each of ``values`` (an int, or a list of one or two ints: ATen's ``int[2]``) as an (h, w) pair."""
    lists = [[v] if isinstance(v, int) else list(v) for v in values]
    return [(v[0], v[-1]) for v in lists]


def convolution(k: Kernel, x: View, w: View, bias: View | None, out: View, stride, padding, dilation,
                groups: int) -> None:
    """``out = conv2d(x, w) + bias`` (NCHW; ``w[F, C/groups, KH, KW]``): output channel ``f`` reads the
    input channels of its group ``f // (F / groups)``. Zero padding through guarded loads."""
    (sh, sw), (ph, pw), (dh, dw) = _pairs(stride, padding, dilation)
    st, pd, dl = (sh, sw), (ph, pw), (dh, dw)
    n_, f_, ho, wo = out.shape
    _, cg, kh_, kw_ = w.shape
    fg = f_ // groups
    H, W = x.shape[2:]
    acc = k.accumulator(out.mem, out.shape)
    outer = [("n", n_), ("f", f_), ("h", ho), ("w", wo)]

    def terms(ivs):
        n, f, h, wv, c, kh, kw = ivs
        ih, iw = h * sh + kh * dh - ph, wv * sw + kw * dw - pw
        ch = c if groups == 1 else (f // fg) * cg + c
        conds = window_guard(k, h, wv, kh, kw, H, W, st, pd, dl)
        return [padded_load(k, x.mem, x.index([n, ch, ih, iw]), conds), w.load(k, [f, c, kh, kw])]

    emit_contraction(k, acc, outer, [("c", cg), ("kh", kh_), ("kw", kw_)], lambda ivs: list(ivs[:4]), terms,
                     init=0.0)
    if bias is None and acc is out.mem:
        return
    with k.loops(*outer) as ivs:
        v = k.load(acc, ivs)
        if bias is not None:
            v = k.b.addf(v, bias.load(k, [ivs[1]]))
        k.store(v, out.mem, ivs)


def batch_norm(k: Kernel, x: View, weight: View | None, bias: View | None, mean: View, var: View, eps: float,
               out: View) -> None:
    """Inference batch normalization over dim 1: ``(x - mean[c]) * rsqrt(var[c] + eps) * weight[c] + bias[c]``."""
    b = k.b
    with k.loops(*zip(DIM_NAMES, out.shape)) as ivs:
        c = [ivs[1]]
        y = b.mulf(b.subf(x.load(k, ivs), mean.load(k, c)), b.rsqrt(b.addf(var.load(k, c), k.const(eps))))
        if weight is not None:
            y = b.mulf(y, weight.load(k, c))
        if bias is not None:
            y = b.addf(y, bias.load(k, c))
        k.store(y, out.mem, ivs)


def layer_norm(k: Kernel, x: View, dims: int, weight: View | None, bias: View | None, eps: float, out: View) -> None:
    """Layer normalization over the last ``dims`` dims: a row's mean and biased variance (two
    passes, f32 temporaries), then ``(x - mean) * rsqrt(var + eps) * weight + bias``."""
    b = k.b
    shape = out.shape
    lead, inner = shape[:len(shape) - dims], shape[len(shape) - dims:]
    rows = list(zip(DIM_NAMES, lead))
    cols = list(zip(DIM_NAMES[len(lead):], inner))
    mean, var = k.temp("mean", lead or (1,)), k.temp("var", lead or (1,))
    count, zero = k.const(float(math.prod(inner))), k.const(0.0)

    def row(r):
        return list(r) if lead else [0]

    for buf in (mean, var):
        with k.loops(*rows) as r:
            k.store(zero, buf, row(r))
            with k.loops(*cols) as c:
                v = x.load(k, [*r, *c])
                if buf is var:
                    d = b.subf(v, k.load(mean, row(r)))
                    v = b.mulf(d, d)
                k.update(buf, row(r), lambda s, v=v: b.addf(s, v))
            k.update(buf, row(r), lambda s: b.divf(s, count))
    with k.loops(*rows, *cols) as ivs:
        r, c = ivs[:len(lead)], ivs[len(lead):]
        d = b.subf(x.load(k, ivs), k.load(mean, row(r)))
        y = b.mulf(d, b.rsqrt(b.addf(k.load(var, row(r)), k.const(eps))))
        if weight is not None:
            y = b.mulf(y, weight.load(k, c))
        if bias is not None:
            y = b.addf(y, bias.load(k, c))
        k.store(y, out.mem, ivs)


def _reduction(rank: int, dims: Sequence[int], keepdim: bool):
    """The reduced dims of a reduction over ``dims`` (all when empty) and the map from the input's
    indices to the output's (0 on reduced dims kept, dropped otherwise)."""
    dims = sorted({d % rank for d in (dims if dims else range(rank))})
    keep = [q for q in range(rank) if q not in dims]

    def out_index(ivs):
        return [0 if q in dims else ivs[q] for q in range(rank)] if keepdim else [ivs[q] for q in keep]

    return dims, out_index


def reduce_sum(k: Kernel, x: View, dims: Sequence[int], keepdim: bool, out: View, mean: bool = False) -> None:
    """``out = sum(x, dims)`` (``mean``: divided by the count), summed in f32 (a temporary for
    f16/bf16 outputs)."""
    dims, out_index = _reduction(len(x.shape), dims, keepdim)
    acc = k.accumulator(out.mem, out.shape)
    loops = list(zip(DIM_NAMES, out.shape))
    k.fill(acc, loops, list, 0.0)
    emit_contraction(k, acc, list(zip(DIM_NAMES, x.shape)), [], out_index, lambda ivs: [x.load(k, ivs)])
    count = k.const(float(math.prod(x.shape[q] for q in dims)))
    k.copy_out(acc, out.mem, loops, list, (lambda v: k.b.divf(v, count)) if mean else None)


def reduce_max(k: Kernel, x: View, dims: Sequence[int], keepdim: bool, out: View) -> None:
    """``out = amax(x, dims)`` (NaN-propagating ``maximumf``, from -inf)."""
    _, out_index = _reduction(len(x.shape), dims, keepdim)
    loops = list(zip(DIM_NAMES, out.shape))
    best = k.temp("max", out.shape)
    k.fill(best, loops, list, NEG_INF)
    with k.loops(*zip(DIM_NAMES, x.shape)) as ivs:
        _take_max(k, best, x, out_index(ivs), ivs)
    k.copy_out(best, out.mem, loops, list)


def attention(k: Kernel, q: View, key: View, v: View, scale: float | None, causal: bool, out: View) -> None:
    """``out = softmax(q @ key^T * scale) @ v`` over ``[B, H, S, D]`` views (``scale`` None: ``1/sqrt(D)``;
    ``causal``: row ``i`` sees keys ``j <= i``): the scores and probabilities in f32 temporaries, the
    softmax the library's (masked entries neither read nor written), the second product guarded."""
    b_, h_, s_, d_ = q.shape
    skv, dv = key.shape[2], v.shape[3]
    scale = 1.0 / math.sqrt(d_) if scale is None else scale
    scores, probs = k.temp("scores", (b_, h_, s_, skv)), k.temp("probs", (b_, h_, s_, skv))
    rows = [("b", b_), ("h", h_), ("i", s_)]
    emit_contraction(k, scores, [*rows, ("j", skv)], [("d", d_)], lambda ivs: list(ivs[:4]),
                     lambda ivs: [q.load(k, [*ivs[:3], ivs[4]]), key.load(k, [*ivs[:2], ivs[3], ivs[4]])], init=0.0,
                     guard=(lambda ivs: [ivs[3] <= ivs[2]]) if causal else None)
    mx, sm = k.temp("max", (b_, h_, s_)), k.temp("sum", (b_, h_, s_))
    emit_softmax(k, scores, probs, rows, ("j", skv), lambda r, a: [*r, a], list, mx, sm, scale=k.const(scale),
                 axis_upper=(lambda r: r[2] + 1) if causal else None)
    acc = k.accumulator(out.mem, out.shape)
    emit_contraction(k, acc, [*rows, ("e", dv)], [("j", skv)], lambda ivs: list(ivs[:4]),
                     lambda ivs: [k.load(probs, [*ivs[:3], ivs[4]]), v.load(k, [*ivs[:2], ivs[4], ivs[3]])], init=0.0,
                     guard=(lambda ivs: [ivs[4] <= ivs[2]]) if causal else None)
    k.copy_out(acc, out.mem, [*rows, ("e", dv)], list)


def avg_pool2d(k: Kernel, x: View, kernel, stride, padding, count_include_pad: bool, divisor, out: View) -> None:
    """``out[n, c, h, w] =`` the window's sum over its size (``count_include_pad``: the whole window;
    else the taps inside the input, counted as they are summed; ``divisor`` when given), in f32."""
    (kh_, kw_), (sh, sw), (ph, pw) = _pairs(kernel, stride or kernel, padding)
    H, W = x.shape[2:]
    loops = list(zip(("n", "c", "h", "w"), out.shape))
    total = k.temp("sum", out.shape)
    k.fill(total, loops, list, 0.0)
    counted = not (divisor or count_include_pad or (ph, pw) == (0, 0))
    taps = k.temp("taps", out.shape) if counted else None
    if counted:
        k.fill(taps, loops, list, 0.0)
    _over_windows(k, out.shape, (kh_, kw_), (sh, sw), (ph, pw), (1, 1), (H, W),
                  lambda at, tap: _add_tap(k, total, taps, x, at, tap))
    with k.loops(*loops) as ivs:
        count = k.load(taps, ivs) if counted else k.const(float(divisor or kh_ * kw_))
        k.store(k.b.divf(k.load(total, ivs), count), out.mem, ivs)


def _add_tap(k: Kernel, total, taps, x: View, at: list, tap: list) -> None:
    k.update(total, at, lambda s: k.b.addf(s, x.load(k, tap)))
    if taps is not None:
        k.update(taps, at, lambda s: k.b.addf(s, k.const(1.0)))


def concatenate(k: Kernel, parts: Sequence[View], dim: int, out: View) -> None:
    """``out = cat(parts, dim)``: a nest per part writing its slab of ``out`` at its offset."""
    dim = dim % len(out.shape)
    offset = 0
    for part in parts:
        with k.loops(*zip(DIM_NAMES, part.shape)) as ivs:
            k.store(part.load(k, ivs), out.mem, [*ivs[:dim], ivs[dim] + offset, *ivs[dim + 1:]])
        offset += part.shape[dim]


def max_pool2d(k: Kernel, x: View, kernel, stride, padding, dilation, out: View) -> None:
    """``out[n, c, h, w] = max`` over the window (taps outside the input are skipped: -inf)."""
    (kh_, kw_), (sh, sw), (ph, pw), (dh, dw) = _pairs(kernel, stride or kernel, padding, dilation)
    H, W = x.shape[2:]
    best = k.temp("max", out.shape)
    k.fill(best, list(zip(DIM_NAMES, out.shape)), list, NEG_INF)
    _over_windows(k, out.shape, (kh_, kw_), (sh, sw), (ph, pw), (dh, dw), (H, W),
                  lambda at, tap: _take_max(k, best, x, at, tap))
    k.copy_out(best, out.mem, list(zip(DIM_NAMES, out.shape)), list)


def _over_windows(k: Kernel, out_shape, kernel, stride, pad, dil, extent, take) -> None:
    """A nest over the outputs ``(n, c, h, w)`` and their window's taps ``(kh, kw)`` calling
    ``take(output index, input index)`` for each tap inside the input (the others skipped)."""
    with k.loops(*zip(("n", "c", "h", "w"), out_shape), ("kh", kernel[0]), ("kw", kernel[1])) as ivs:
        n, c, h, w, kh, kw = ivs
        conds = window_guard(k, h, w, kh, kw, *extent, stride, pad, dil)
        tap = [n, c, h * stride[0] + kh * dil[0] - pad[0], w * stride[1] + kw * dil[1] - pad[1]]
        if conds:
            with k.b.affine_if(*conds):
                take([n, c, h, w], tap)
        else:
            take([n, c, h, w], tap)



def _take_max(k: Kernel, best, x: View, at: list, tap: list) -> None:
    k.update(best, at, lambda m: k.b.maximumf(m, x.load(k, tap)))
