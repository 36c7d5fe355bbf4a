"""Composite layers: ``attention``, ``mlp`` and ``conv2d_bias_relu``, as separate nests joined by f32 temporaries
(the unfused input that the fusion passes later improve)."""

from __future__ import annotations

from ..dialects.builtin import ModuleOp
from ._kernel import Kernel, check_size
from .conv import conv2d_shapes, emit_conv2d
from .elementwise import GELU_APPROXIMATIONS, UNARY_OPS, emit_unary
from .linalg import emit_matmul_body
from .norm import emit_softmax

ACTIVATIONS = (None, *UNARY_OPS)


def attention(B, H, S, D, dtype: str = "f32", causal: bool = False, scale: float | None = None,
              num_kv_heads=None, kv_len=None) -> ModuleOp:
    """``@attention(%Q, %K, %V, %O)``: scaled dot-product attention per batch and head.

    ``Q, O`` are ``[B, H, S, D]``, ``K, V`` ``[B, Hkv, Skv, D]``;
    ``O[b, h] = softmax(Q[b, h] @ K[b, h // G]^T * scale) @ V[b, h // G]`` with ``scale = 1/sqrt(D)`` by default.
    ``num_kv_heads`` (``Hkv``, default ``H``): grouped-query attention, each K/V head shared by ``G = H / Hkv``
    consecutive query heads (``Hkv = 1``: multi-query attention); ``H`` must be a constant multiple of it.
    ``kv_len`` (``Skv``, default ``S``): keys and values of another length than the queries (decode: ``S = 1``
    query row against a long KV cache). With ``causal``, query ``i`` attends to keys ``j <= i`` only: every ``j``
    loop runs ``0 to i + 1`` (masked entries are never touched); it needs ``Skv = S``.
    Nests, joined by f32 temporaries ``%scores``, ``%max``, ``%sum`` and ``%probs``:

    1. ``scores = 0`` over ``(%b, %h, %i, %j)``
    2. ``scores[b, h, i, j] += Q[b, h, i, d] * K[b, h // G, j, d]`` over ``(%b, %h, %i, %j, %d)``
    3-5. ``probs = softmax(scores * scale)`` along ``j`` (row max, exp + row sum, normalize)
    6. ``O = 0`` (``%acc`` for f16/bf16)
    7. ``O[b, h, i, d] += probs[b, h, i, j] * V[b, h // G, j, d]`` over ``(%b, %h, %i, %d, %j)``
    8. (f16/bf16 only) ``O = truncf(acc)``
    """
    B, H, S, D = check_size(B, "B"), check_size(H, "H"), check_size(S, "S"), check_size(D, "D")
    hkv = H if num_kv_heads is None else check_size(num_kv_heads, "num_kv_heads")
    skv = S if kv_len is None else check_size(kv_len, "kv_len")
    group = _head_group(H, hkv)
    if causal and kv_len is not None and skv != S:
        raise ValueError(f"causal attention needs kv_len equal to S (got kv_len={kv_len}, S={S})")
    k = Kernel("attention", dtype, (B, H, S, D, hkv, skv))
    b = k.b
    qkv, kv = (B, H, S, D), (B, hkv, skv, D)
    with k.function(Q=qkv, K=kv, V=kv, O=qkv) as (Q, K, V, O):
        scores = k.temp("scores", (B, H, S, skv))
        mx, sm = k.temp("max", (B, H, S)), k.temp("sum", (B, H, S))
        probs = k.temp("probs", (B, H, S, skv))
        acc = k.accumulator(O, qkv)
        if scale is not None:
            sc = k.const(float(scale))
        elif isinstance(D, int):
            sc = k.const(1.0 / D ** 0.5)
        else:
            d = k.count(D)
            with k.prologue():
                sc = b.divf(k.const(1.0), b.sqrt(d))
        heads = [("b", B), ("h", H), ("i", S)]

        def j_upper(ivs):
            return ivs[2] + 1 if causal else skv

        def kv_head(ivs):
            return ivs[1] // group if group != 1 else ivs[1]

        # 1-2: scores = Q @ K^T
        _nested_contraction(k, scores, heads, lambda ivs: [("j", j_upper(ivs))], [("d", D)],
                            lambda ivs: [ivs[0], ivs[1], ivs[2], ivs[3]],
                            lambda ivs: [k.load(Q, [ivs[0], ivs[1], ivs[2], ivs[4]]),
                                         k.load(K, [ivs[0], kv_head(ivs), ivs[3], ivs[4]])])
        # 3-5: probs = softmax(scores * scale)
        emit_softmax(k, scores, probs, heads, ("j", skv), lambda r, a: [*r, a], list, mx, sm, scale=sc,
                     axis_upper=j_upper if causal else None)
        # 6-7: O = probs @ V
        _nested_contraction(k, acc, heads, lambda ivs: [("d", D)], [("j", j_upper)],
                            lambda ivs: [ivs[0], ivs[1], ivs[2], ivs[3]],
                            lambda ivs: [k.load(probs, [ivs[0], ivs[1], ivs[2], ivs[4]]),
                                         k.load(V, [ivs[0], kv_head(ivs), ivs[4], ivs[3]])])
        k.copy_out(acc, O, [*heads, ("d", D)], lambda ivs: ivs)
    return k.module


def _head_group(H, hkv) -> int:
    """The query heads per K/V head, ``H / hkv``; ValueError unless both are known and it divides."""
    if hkv is H:
        return 1
    if not isinstance(H, int) or not isinstance(hkv, int):
        raise ValueError(f"num_kv_heads={hkv} with H={H}: grouped-query attention needs both constant")
    if H % hkv:
        raise ValueError(f"num_kv_heads={hkv} does not divide H={H}")
    return H // hkv


def _nested_contraction(k: Kernel, acc, outer, inner_out, red, out_index, terms) -> None:
    """Zero-init nest and accumulate nest where the innermost output loop and the reduction
    loop bounds may depend on outer IVs: ``inner_out(ivs)`` gives the spec list of the
    last output loop(s) from the outer IVs; a reduction spec's bound may be a callable of them."""
    b = k.b
    zero = k.const(0.0, acc.type.element_type)
    with k.loops(*outer) as o, k.loops(*inner_out(o)) as p:
        k.store(zero, acc, out_index([*o, *p]))
    with k.loops(*outer) as o, k.loops(*inner_out(o)) as p:
        red_specs = [(n, ub(o) if callable(ub) else ub) for n, ub in red]
        with k.loops(*red_specs) as r:
            ivs = [*o, *p, *r]
            x, y = terms(ivs)
            prod = b.mulf(x, y)
            k.update(acc, out_index(ivs), lambda c: b.addf(c, prod))


def mlp(M, N, K, dtype: str = "f32", activation: str | None = "gelu", approximate: str = "none") -> ModuleOp:
    """``@mlp(%X, %W, %bias, %Y)``: one dense layer, ``Y = activation(X @ W + bias)``.

    ``X[M, K]``, ``W[K, N]``, ``bias[N]``, ``Y[M, N]``. ``activation`` is any unary op name
    (gelu -- erf form, or tanh form with ``approximate="tanh"`` --, relu, ...) or None.
    Nests, joined by the f32 temporary ``%tmp[M, N]``: ``tmp = 0``; ``tmp[i, j] += X[i, k] *
    W[k, j]`` over ``(%i, %j, %k)``; the epilogue ``Y[i, j] = activation(tmp[i, j] + bias[j])``
    over ``(%i, %j)``, rounded once when stored.
    """
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    if approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
    M, N, K = check_size(M, "M"), check_size(N, "N"), check_size(K, "K")
    k = Kernel("mlp", dtype, (M, N, K))
    b = k.b
    with k.function(X=(M, K), W=(K, N), bias=(N,), Y=(M, N)) as (X, W, bias, Y):
        tmp = k.temp("tmp", (M, N))
        emit_matmul_body(k, X, W, Y, M, N, K, acc=tmp)
        with k.loops(("i", M), ("j", N)) as (i, j):
            v = b.addf(k.load(tmp, [i, j]), k.load(bias, [j]))
            if activation is not None:
                v = emit_unary(k, activation, v, approximate)
            k.store(v, Y, [i, j])
    return k.module


def conv2d_bias_relu(N, C, H, W, F, KH, KW, stride=1, padding=0, dilation=1, dtype: str = "f32") -> ModuleOp:
    """``@conv2d_bias_relu(%input, %filter, %bias, %output)``: ``output = relu(conv2d(input, filter) + bias)``.

    NCHW, as :func:`~.conv.conv2d`: ``input[N, C, H, W]``, ``filter[F, C, KH, KW]``,
    ``bias[F]``, ``output[N, F, Ho, Wo]``; ``stride``, ``padding``, ``dilation`` are ints
    or (h, w) pairs; sizes may be symbolic. Nests, joined by the f32 temporary
    ``%acc[N, F, Ho, Wo]``: ``acc = 0`` over ``(%n, %f, %h, %w)``; ``acc[n, f, h, w] +=
    input[n, c, h*sh + kh*dh - ph, w*sw + kw*dw - pw] * filter[f, c, kh, kw]`` over
    ``(%n, %f, %h, %w, %c, %kh, %kw)`` (the input read zero-padded by an ``affine.if``); the epilogue
    ``output[n, f, h, w] = max(acc[n, f, h, w] + bias[f], 0)`` over ``(%n, %f, %h, %w)``,
    rounded once when stored.
    """
    sizes, shapes, geometry = conv2d_shapes(N, C, H, W, F, KH, KW, stride, padding, dilation, "NCHW")
    F = sizes[4]
    k = Kernel("conv2d_bias_relu", dtype, sizes)
    b = k.b
    out_shape = shapes["output"]
    with k.function(input=shapes["input"], filter=shapes["filter"], bias=(F,), output=out_shape) as (
            inp, flt, bias, out):
        acc = k.temp("acc", out_shape)
        out_loops = emit_conv2d(k, inp, flt, acc, sizes, geometry, "NCHW")
        with k.loops(*out_loops) as ivs:
            v = b.addf(k.load(acc, ivs), k.load(bias, [ivs[1]]))
            k.store(emit_unary(k, "relu", v), out, ivs)
    return k.module


__all__ = ["ACTIVATIONS", "attention", "conv2d_bias_relu", "mlp"]
