"""Convolutions: ``conv2d`` and ``depthwise_conv2d`` (NCHW or NHWC).

Output size per spatial dim: ``Ho = (H + 2*pad - dil*(KH - 1) - 1) // stride + 1`` (an
affine expression of the symbols when sizes are symbolic). Padding is zero padding, as in
PyTorch, and reads nothing out of bounds: the input value of a tap is an ``affine.if`` that
checks the input index ``h*stride + kh*dil - pad`` against ``[0, H)`` (only on padded dims)
and yields the loaded value inside, ``0.0`` outside; every tap then adds ``x * filter``.
Accumulation follows :mod:`.linalg`: zero-init nest, then a perfect nest
``out += in * filter`` in f32 (an f32 ``%acc`` plus a rounding nest for f16/bf16).
:func:`emit_conv2d` emits those two nests into any accumulator, for composites
(``conv2d_bias_relu``) that add their own epilogue.
"""

from __future__ import annotations

from ..core import Value
from ..dialects.builtin import ModuleOp
from ._kernel import Kernel, check_size, derive, pair
from .linalg import emit_contraction

LAYOUTS = ("NCHW", "NHWC")


def out_size(size, kernel, stride: int, pad: int, dil: int):
    """``(size + 2*pad - dil*(kernel - 1) - 1) // stride + 1`` (int, or symbolic)."""
    return derive(lambda s, kk: (s + 2 * pad - dil * (kk - 1) - 1) // stride + 1, size, kernel)


def _geometry(H, W, KH, KW, stride, padding, dilation):
    (sh, sw), (ph, pw), (dh, dw) = pair(stride, "stride"), pair(padding, "padding"), pair(dilation, "dilation")
    if min(sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise ValueError("stride and dilation must be >= 1 and padding >= 0")
    Ho, Wo = out_size(H, KH, sh, ph, dh), out_size(W, KW, sw, pw, dw)
    if (isinstance(Ho, int) and Ho < 1) or (isinstance(Wo, int) and Wo < 1):
        raise ValueError(f"the window does not fit: output size {Ho}x{Wo}")
    return (sh, sw), (ph, pw), (dh, dw), Ho, Wo


def window_guard(k: Kernel, h, w, kh, kw, H, W, stride, pad, dil) -> list:
    """``affine.if`` constraints keeping the input index of tap ``(kh, kw)`` of output
    ``(h, w)`` inside ``[0, H) x [0, W)``; only dims with padding need them."""
    conds = []
    for o, t, size, s, p, d in ((h, kh, H, stride[0], pad[0], dil[0]), (w, kw, W, stride[1], pad[1], dil[1])):
        if p > 0:
            x = o * s + t * d - p
            conds += [x >= 0, x < k.size(size)]
    return conds


def padded_load(k: Kernel, mem: Value, indices: list, conds: list) -> Value:
    """``mem[indices]`` converted to the compute type where ``conds`` hold, else ``0.0``: an
    ``affine.if`` yielding the value (a plain load when ``conds`` is empty)."""
    if not conds:
        return k.load(mem, indices)
    guard = k.b.affine_if(*conds, result_types=[k.ctype], with_else=True)
    with guard.then_():
        k.b.yield_(k.load(mem, indices))
    with guard.else_():
        k.b.yield_(k.const(0.0))
    return guard.results[0]


def input_index(h, w, kh, kw, stride, pad, dil):
    return h * stride[0] + kh * dil[0] - pad[0], w * stride[1] + kw * dil[1] - pad[1]


def conv2d_shapes(N, C, H, W, F, KH, KW, stride, padding, dilation, layout: str):
    """Checked sizes and geometry of a conv2d: ``(sizes, shapes, geometry)`` with ``sizes`` the
    checked ``(N, C, H, W, F, KH, KW)``, ``shapes`` the ``input``/``filter``/``output`` shapes of
    ``layout`` (a dict in argument order) and ``geometry`` ``(stride, pad, dil, Ho, Wo)``."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    N, C, H, W, F, KH, KW = (check_size(s, n) for s, n in zip((N, C, H, W, F, KH, KW), "N C H W F KH KW".split()))
    geometry = _geometry(H, W, KH, KW, stride, padding, dilation)
    Ho, Wo = geometry[3:]
    shapes = (dict(input=(N, C, H, W), filter=(F, C, KH, KW), output=(N, F, Ho, Wo)) if layout == "NCHW" else
              dict(input=(N, H, W, C), filter=(KH, KW, C, F), output=(N, Ho, Wo, F)))
    return (N, C, H, W, F, KH, KW), shapes, geometry


def emit_conv2d(k: Kernel, inp: Value, flt: Value, acc: Value, sizes, geometry, layout: str = "NCHW") -> list:
    """Emit ``acc = conv2d(inp, flt)`` as two nests (zero-init of ``acc`` over the output
    loops, then the accumulation over output and reduction loops, the input read
    zero-padded) and return the output loop specs (``[(%n, N), (%f, F), (%h, Ho), (%w, Wo)]`` for NCHW), so that a
    caller can add an epilogue nest over the same loops. ``sizes`` and ``geometry`` are as
    :func:`conv2d_shapes` returns them; ``acc`` is indexed like the output."""
    N, C, H, W, F, KH, KW = sizes
    st, pd, dl, Ho, Wo = geometry
    nchw = layout == "NCHW"
    if nchw:
        out_loops = [("n", N), ("f", F), ("h", Ho), ("w", Wo)]
        red_loops = [("c", C), ("kh", KH), ("kw", KW)]

        def unpack(ivs):
            n, f, h, w, c, kh, kw = ivs
            return n, f, h, w, c, kh, kw
    else:
        out_loops = [("n", N), ("h", Ho), ("w", Wo), ("f", F)]
        red_loops = [("kh", KH), ("kw", KW), ("c", C)]

        def unpack(ivs):
            n, h, w, f, kh, kw, c = ivs
            return n, f, h, w, c, kh, kw

    def terms(ivs):
        n, f, h, w, c, kh, kw = unpack(ivs)
        ih, iw = input_index(h, w, kh, kw, st, pd, dl)
        x = padded_load(k, inp, [n, c, ih, iw] if nchw else [n, ih, iw, c],
                        window_guard(k, h, w, kh, kw, H, W, st, pd, dl))
        y = k.load(flt, [f, c, kh, kw] if nchw else [kh, kw, c, f])
        return [x, y]

    emit_contraction(k, acc, out_loops, red_loops, lambda ivs: ivs[:4], terms, init=0.0)
    return out_loops


def conv2d(N, C, H, W, F, KH, KW, stride=1, padding=0, dilation=1, layout: str = "NCHW",
           dtype: str = "f32") -> ModuleOp:
    """``@conv2d(%input, %filter, %output)``: 2-D cross-correlation (no bias).

    NCHW: ``input[N, C, H, W]``, ``filter[F, C, KH, KW]``, ``output[N, F, Ho, Wo]``,
    ``output[n, f, h, w] = sum_{c, kh, kw} input[n, c, h*sh + kh*dh - ph, w*sw + kw*dw - pw]
    * filter[f, c, kh, kw]`` (zero outside the input); loops ``(%n, %f, %h, %w, %c, %kh, %kw)``.
    NHWC: ``input[N, H, W, C]``, ``filter[KH, KW, C, F]`` (HWCF, as linalg's
    conv_2d_nhwc_hwcf), ``output[N, Ho, Wo, F]``; loops ``(%n, %h, %w, %f, %kh, %kw, %c)``.
    ``stride``, ``padding``, ``dilation`` are ints or (h, w) pairs; sizes may be symbolic.
    """
    sizes, shapes, geometry = conv2d_shapes(N, C, H, W, F, KH, KW, stride, padding, dilation, layout)
    k = Kernel("conv2d", dtype, sizes)
    with k.function(**shapes) as (inp, flt, out):
        acc = k.accumulator(out, shapes["output"])
        out_loops = emit_conv2d(k, inp, flt, acc, sizes, geometry, layout)
        k.copy_out(acc, out, out_loops, lambda ivs: ivs)
    return k.module


def depthwise_conv2d(N, C, H, W, KH, KW, stride=1, padding=0, dilation=1, layout: str = "NCHW",
                     dtype: str = "f32") -> ModuleOp:
    """``@depthwise_conv2d(%input, %filter, %output)``: per-channel 2-D cross-correlation
    (channel multiplier 1).

    NCHW: ``input[N, C, H, W]``, ``filter[C, KH, KW]``, ``output[N, C, Ho, Wo]``,
    ``output[n, c, h, w] = sum_{kh, kw} input[n, c, h*sh + kh*dh - ph, w*sw + kw*dw - pw]
    * filter[c, kh, kw]``; loops ``(%n, %c, %h, %w, %kh, %kw)``. NHWC: ``input[N, H, W, C]``,
    ``filter[KH, KW, C]`` (as linalg's depthwise_conv_2d_nhwc_hwc), ``output[N, Ho, Wo, C]``;
    loops ``(%n, %h, %w, %c, %kh, %kw)``. Geometry and accumulation as :func:`conv2d`.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    N, C, H, W, KH, KW = (check_size(s, n) for s, n in zip((N, C, H, W, KH, KW), "N C H W KH KW".split()))
    st, pd, dl, Ho, Wo = _geometry(H, W, KH, KW, stride, padding, dilation)
    k = Kernel("depthwise_conv2d", dtype, (N, C, H, W, KH, KW))
    nchw = layout == "NCHW"
    shapes = (dict(input=(N, C, H, W), filter=(C, KH, KW), output=(N, C, Ho, Wo)) if nchw else
              dict(input=(N, H, W, C), filter=(KH, KW, C), output=(N, Ho, Wo, C)))
    with k.function(**shapes) as (inp, flt, out):
        acc = k.accumulator(out, shapes["output"])
        out_loops = ([("n", N), ("c", C), ("h", Ho), ("w", Wo)] if nchw else
                     [("n", N), ("h", Ho), ("w", Wo), ("c", C)])

        def unpack(ivs):
            if nchw:
                n, c, h, w, kh, kw = ivs
            else:
                n, h, w, c, kh, kw = ivs
            return n, c, h, w, kh, kw

        def terms(ivs):
            n, c, h, w, kh, kw = unpack(ivs)
            ih, iw = input_index(h, w, kh, kw, st, pd, dl)
            x = padded_load(k, inp, [n, c, ih, iw] if nchw else [n, ih, iw, c],
                            window_guard(k, h, w, kh, kw, H, W, st, pd, dl))
            y = k.load(flt, [c, kh, kw] if nchw else [kh, kw, c])
            return [x, y]

        emit_contraction(k, acc, out_loops, [("kh", KH), ("kw", KW)], lambda ivs: ivs[:4], terms, init=0.0)
        k.copy_out(acc, out, out_loops, lambda ivs: ivs)
    return k.module
