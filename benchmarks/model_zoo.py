"""The models of issue 21, built in code with random weights (nothing downloaded).

ResNet-18/50 and MobileNetV2 are torchvision's architectures written out here (the same layers,
strides and channel counts as ``torchvision.models.resnet18/resnet50/mobilenet_v2``: torchvision's
CPU wheel is not installable beside the CPU build of torch used in CI). The transformer blocks are
PyTorch modules: a BERT-base encoder layer (``nn.TransformerEncoderLayer``), a GPT-2 decoder block
(causal SDPA) and an MLP-Mixer block.

:func:`zoo` gives each at the benchmark's size or at a small one (CI): ``name -> (model, input)``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["GPT2Block", "MixerBlock", "mobilenet_v2", "resnet18", "resnet50", "small_cnn", "zoo"]


# -- ResNet (torchvision's layout: conv-bn-relu stem, max pool, 4 stages, global average pool, fc) -------------
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = _shortcut(cin, width, stride)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        out = width * self.expansion
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.downsample = _shortcut(cin, out, stride)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module | None:
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))


class ResNet(nn.Module):
    def __init__(self, block, layers: list[int], classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], 64
        for q, (width, count) in enumerate(zip((64, 128, 256, 512), layers)):
            blocks = []
            for b in range(count):
                blocks.append(block(cin, width, 2 if q and not b else 1))
                cin = width * block.expansion
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18() -> nn.Module:
    return ResNet(BasicBlock, [2, 2, 2, 2])


def resnet50() -> nn.Module:
    return ResNet(Bottleneck, [3, 4, 6, 3])


# -- MobileNetV2 (torchvision's: inverted residuals with ReLU6, width multiplier 1) ---------------------------------
def _conv_bn_relu6(cin: int, cout: int, kernel: int, stride: int, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6())


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        layers = [_conv_bn_relu6(cin, hidden, 1, 1)] if expand != 1 else []
        layers += [_conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


def mobilenet_v2(classes: int = 1000) -> nn.Module:
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]
    layers, cin = [_conv_bn_relu6(3, 32, 3, 2)], 32
    for expand, cout, count, stride in settings:
        for b in range(count):
            layers.append(InvertedResidual(cin, cout, stride if b == 0 else 1, expand))
            cin = cout
    layers.append(_conv_bn_relu6(cin, 1280, 1, 1))
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(1280, classes))


# -- transformer blocks -------------------------------------------------------------------------------------------
class GPT2Block(nn.Module):
    """Pre-norm causal attention and a tanh-GELU MLP, with residuals (GPT-2's block)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class MixerBlock(nn.Module):
    """An MLP-Mixer block: token mixing (an MLP across patches, on the transposed activations), then
    channel mixing, each pre-norm with a residual and an exact GELU."""

    def __init__(self, patches: int, d: int, token_hidden: int, channel_hidden: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.token = nn.Sequential(nn.Linear(patches, token_hidden), nn.GELU(), nn.Linear(token_hidden, patches))
        self.channel = nn.Sequential(nn.Linear(d, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, d))

    def forward(self, x):
        x = x + self.token(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel(self.ln2(x))


def bert_layer(d: int = 768, heads: int = 12) -> nn.Module:
    """A BERT-base encoder layer: post-norm, exact GELU, feed-forward 4d, no dropout at inference."""
    return nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True)


def small_cnn(width: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, width, 3, padding=1, groups=width), nn.Conv2d(width, 2 * width, 1),
        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * width, 10))


def zoo(batch: int = 1, small: bool = False) -> dict[str, tuple[nn.Module, tuple[int, ...]]]:
    """``name -> (model in eval mode, input shape)``. The benchmark's sizes: images 224x224,
    sequences of 128 tokens at d 768 (12 heads), Mixer-B/16's 196 patches at d 768. ``small``: the
    same architectures on 32x32 images and, for the blocks, d 64 with 4 heads and 16 tokens."""
    image = 32 if small else 224
    d, heads, tokens = (64, 4, 16) if small else (768, 12, 128)
    patches = 16 if small else 196
    models = {
        "resnet18": (resnet18(), (batch, 3, image, image)),
        "resnet50": (resnet50(), (batch, 3, image, image)),
        "mobilenet_v2": (mobilenet_v2(), (batch, 3, image, image)),
        "bert_layer": (bert_layer(d, heads), (batch, tokens, d)),
        "gpt2_block": (GPT2Block(d, heads), (batch, tokens, d)),
        "mixer_block": (MixerBlock(patches, d, d // 2 if small else 384, 4 * d if small else 3072),
                        (batch, patches, d)),
    }
    return {name: (_initialized(m).eval(), shape) for name, (m, shape) in models.items()}


def _initialized(model: nn.Module) -> nn.Module:
    """torchvision's initialization (convolutions Kaiming-normal by fan-out: the activations keep
    their scale through 50 layers instead of vanishing), and batch norms with statistics and
    affine parameters drawn at random, as a trained network has (so that folding them is tested)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
    return model
