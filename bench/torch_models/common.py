"""Pieces RepLKNet and SLaK share: a depthwise or dense conv followed by BatchNorm (children "conv", "bn",
optionally "nonlinear"), BN folding, and stochastic depth."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, cout, kernel, stride=1, groups=1, relu=False):
    """conv (no bias, padding k // 2 per axis: size-preserving at stride 1) -> BN [-> ReLU]."""
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    seq = nn.Sequential()
    seq.add_module("conv", nn.Conv2d(cin, cout, (kh, kw), stride=stride, padding=(kh // 2, kw // 2),
                                     groups=groups, bias=False))
    seq.add_module("bn", nn.BatchNorm2d(cout))
    if relu:
        seq.add_module("nonlinear", nn.ReLU())
    return seq


def fold_bn(seq):
    """(kernel, bias) of conv -> BN in eval mode, as one conv with bias."""
    bn = seq.bn
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    return seq.conv.weight * scale.reshape(-1, 1, 1, 1), bn.bias - bn.running_mean * scale


def pad_to(kernel, kh, kw):
    """Zero-pads a (C, 1, h, w) kernel to (C, 1, kh, kw), centred."""
    dh, dw = (kh - kernel.shape[2]) // 2, (kw - kernel.shape[3]) // 2
    return F.pad(kernel, [dw, dw, dh, dh])


class DropPath(nn.Module):
    """Stochastic depth per sample (identity in eval mode)."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = torch.empty((x.shape[0],) + (1,) * (x.dim() - 1), device=x.device).bernoulli_(1.0 - self.p)
        return x * keep / (1.0 - self.p)


def drop_rates(rate, total):
    return [x.item() for x in torch.linspace(0, rate, total)]
