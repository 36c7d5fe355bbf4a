"""ATen ops the import takes as the ops they are made of: AOT autograd's decomposition table for
the ``affine_ir`` backend (issue 21).

``_transformer_encoder_layer_fwd`` (``nn.TransformerEncoderLayer``'s inference fast path, which
``torch.compile`` traces under ``no_grad``) is written as its layers: the packed QKV projection,
scaled dot-product attention, the output projection, residuals, layer norms and the feed-forward
block (ReLU or exact GELU), pre- or post-norm, as the eager module computes it. With a mask the
decomposition declines (``NotImplemented``) and the op stays whole (run eagerly, reported).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

__all__ = ["DECOMPOSITIONS"]

aten = torch.ops.aten


def _encoder_layer(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first,
                   eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
                   ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    if mask is not None or src.dim() != 3:
        return NotImplemented

    def attention(x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, num_heads, d // num_heads).transpose(1, 2)
                   for z in F.linear(x, qkv_weight, qkv_bias).split(embed_dim, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v)
        return F.linear(y.transpose(1, 2).reshape(b, t, d), proj_weight, proj_bias)

    def feed_forward(x):
        h = F.linear(x, ffn_weight_1, ffn_bias_1)
        return F.linear(F.gelu(h) if use_gelu else F.relu(h), ffn_weight_2, ffn_bias_2)

    def norm1(x):
        return F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(x):
        return F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    if norm_first:
        x = src + attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + attention(src))
    return norm2(x + feed_forward(x))


#: ATen overload -> its decomposition (passed to AOT autograd by the backend).
DECOMPOSITIONS = {aten._transformer_encoder_layer_fwd.default: _encoder_layer}
