"""2-D pooling: ``max_pool2d`` and ``avg_pool2d`` (NCHW or NHWC).

Window geometry as :mod:`.conv` (``Ho = (H + 2*pad - KH) // stride + 1``; stride defaults
to the kernel size). Padded taps are skipped by an ``affine.if`` on the input index, never
read. Max pooling starts from ``-inf`` and reduces into the output directly (exact in
every dtype); average pooling sums in f32 (``%acc`` for f16/bf16) and divides in a last nest.
"""

from __future__ import annotations

import contextlib

from ..dialects.builtin import ModuleOp
from ._kernel import NEG_INF, Kernel, check_size, pair
from .conv import LAYOUTS, input_index, out_size, window_guard


def _pool(name: str, N, C, H, W, kernel, stride, padding, layout, dtype, count_include_pad=True) -> ModuleOp:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    N, C, H, W = (check_size(s, n) for s, n in zip((N, C, H, W), "N C H W".split()))
    KH, KW = pair(kernel, "kernel")
    st = pair(stride if stride is not None else (KH, KW), "stride")
    pd = pair(padding, "padding")
    if min(KH, KW, *st) < 1 or min(pd) < 0:
        raise ValueError("kernel and stride must be >= 1 and padding >= 0")
    if pd[0] * 2 > KH or pd[1] * 2 > KW:
        raise ValueError(f"padding {pd} must be at most half the kernel {(KH, KW)}")
    dl = (1, 1)
    Ho, Wo = out_size(H, KH, st[0], pd[0], 1), out_size(W, KW, st[1], pd[1], 1)
    if (isinstance(Ho, int) and Ho < 1) or (isinstance(Wo, int) and Wo < 1):
        raise ValueError(f"the window does not fit: output size {Ho}x{Wo}")
    nchw = layout == "NCHW"
    k = Kernel(name, dtype, (N, C, H, W))
    in_shape, out_shape = ((N, C, H, W), (N, C, Ho, Wo)) if nchw else ((N, H, W, C), (N, Ho, Wo, C))
    out_loops = ([("n", N), ("c", C), ("h", Ho), ("w", Wo)] if nchw else [("n", N), ("h", Ho), ("w", Wo), ("c", C)])
    b = k.b

    def unpack(ivs):
        n, c, h, w = ivs[:4] if nchw else (ivs[0], ivs[3], ivs[1], ivs[2])
        return (n, c, h, w, *ivs[4:])

    with k.function(input=in_shape, output=out_shape) as (inp, out):
        is_max = name == "max_pool2d"
        acc = out if is_max else k.accumulator(out, out_shape)
        k.fill(acc, out_loops, lambda ivs: ivs, NEG_INF if is_max else 0.0)
        with k.loops(*out_loops, ("kh", KH), ("kw", KW)) as ivs:
            n, c, h, w, kh, kw = unpack(ivs)
            conds = window_guard(k, h, w, kh, kw, H, W, st, pd, dl)
            with b.affine_if(*conds) if conds else contextlib.nullcontext():
                ih, iw = input_index(h, w, kh, kw, st, pd, dl)
                x = k.load(inp, [n, c, ih, iw] if nchw else [n, ih, iw, c])
                k.update(acc, ivs[:4], lambda a: b.maximumf(a, x) if is_max else b.addf(a, x))
        if not is_max:
            if count_include_pad or pd == (0, 0):
                area = k.const(float(KH * KW))
                k.copy_out(acc, out, out_loops, lambda ivs: ivs, lambda v: b.divf(v, area))
            else:
                with k.loops(*out_loops) as ivs:
                    n, c, h, w = unpack(ivs)
                    cnt = b.muli(_valid_taps(k, h, H, KH, st[0], pd[0]), _valid_taps(k, w, W, KW, st[1], pd[1]))
                    cntf = b.cast("sitofp", b.cast("index_cast", cnt, "i64"), k.ctype)
                    k.store(b.divf(k.load(acc, ivs), cntf), out, ivs)
    return k.module


def _valid_taps(k: Kernel, o, size, kernel: int, stride: int, pad: int):
    """The index value ``min(size, o*stride - pad + kernel) - max(0, o*stride - pad)``."""
    if pad == 0:  # every window is in bounds
        return k.const(kernel, "index")
    start = o * stride - pad
    return k.b.subi(k.b.min(start + kernel, k.size(size)), k.b.max(start, 0))


def max_pool2d(N, C, H, W, kernel, stride=None, padding=0, layout: str = "NCHW", dtype: str = "f32") -> ModuleOp:
    """``@max_pool2d(%input, %output)``: ``output[n, c, h, w] = max_{kh, kw} input[n, c,
    h*sh + kh - ph, w*sw + kw - pw]`` over in-bounds taps (padding acts as ``-inf``).

    NCHW: ``input[N, C, H, W]`` -> ``output[N, C, Ho, Wo]``; NHWC: ``[N, H, W, C]`` ->
    ``[N, Ho, Wo, C]``. ``kernel``, ``stride`` (default ``kernel``) and ``padding`` (at most
    half the kernel) are ints or (h, w) pairs. Nests: ``-inf`` init, then the window max
    over ``(%n, %c, %h, %w, %kh, %kw)`` (NHWC: ``%n, %h, %w, %c, ...``).
    """
    return _pool("max_pool2d", N, C, H, W, kernel, stride, padding, layout, dtype)


def avg_pool2d(N, C, H, W, kernel, stride=None, padding=0, layout: str = "NCHW", dtype: str = "f32",
               count_include_pad: bool = True) -> ModuleOp:
    """``@avg_pool2d(%input, %output)``: window mean, ``sum_{in-bounds taps} input / count``.

    ``count`` is ``KH*KW`` when ``count_include_pad`` (PyTorch's default: padding counts as
    zeros), else the number of in-bounds taps of that window (computed with
    ``affine.min``/``affine.max`` on the window bounds). Shapes, layouts and loops as
    :func:`max_pool2d`; the sum runs in f32 and a last nest divides (and rounds).
    """
    return _pool("avg_pool2d", N, C, H, W, kernel, stride, padding, layout, dtype, count_include_pad)
