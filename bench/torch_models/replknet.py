"""RepLKNet (Ding et al., CVPR 2022) with the module tree of the authors' replknet.py: stem.{0..3}, stages.i.blocks.k
(RepLK block at even k, ConvFFN at odd k), stages.i.norm (Identity), transitions.i.{0,1}, norm, head.
Large depthwise kernels run as plain nn.Conv2d."""
import torch
import torch.nn as nn

from .common import DropPath, conv_bn, drop_rates, fold_bn, pad_to


class LargeKernel(nn.Module):
    """K x K depthwise conv-BN ("lkb_origin") + small one ("small_conv"); or one K x K conv with bias
    ("lkb_reparam") after merge()."""

    def __init__(self, channels, kernel, small_kernel, merged=False):
        super().__init__()
        self.kernel = kernel
        if merged:
            self.lkb_reparam = nn.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=channels)
        else:
            self.lkb_origin = conv_bn(channels, channels, kernel, groups=channels)
            self.small_conv = conv_bn(channels, channels, small_kernel, groups=channels)

    def forward(self, x):
        if hasattr(self, "lkb_reparam"):
            return self.lkb_reparam(x)
        return self.lkb_origin(x) + self.small_conv(x)

    @torch.no_grad()
    def merge(self):
        k, b = fold_bn(self.lkb_origin)
        ks, bs = fold_bn(self.small_conv)
        conv = self.lkb_origin.conv
        self.lkb_reparam = nn.Conv2d(conv.in_channels, conv.out_channels, self.kernel, padding=self.kernel // 2,
                                     groups=conv.groups).to(k.device)
        self.lkb_reparam.weight.copy_(k + pad_to(ks, self.kernel, self.kernel))
        self.lkb_reparam.bias.copy_(b + bs)
        del self.lkb_origin, self.small_conv


class RepLKBlock(nn.Module):
    def __init__(self, channels, dw_channels, kernel, small_kernel, drop_path, merged):
        super().__init__()
        self.pw1 = conv_bn(channels, dw_channels, 1, relu=True)
        self.pw2 = conv_bn(dw_channels, channels, 1)
        self.large_kernel = LargeKernel(dw_channels, kernel, small_kernel, merged)
        self.lk_nonlinear = nn.ReLU()
        self.prelkb_bn = nn.BatchNorm2d(channels)
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        h = self.pw1(self.prelkb_bn(x))
        h = self.pw2(self.lk_nonlinear(self.large_kernel(h)))
        return x + self.drop_path(h)


class ConvFFN(nn.Module):
    def __init__(self, channels, hidden, drop_path):
        super().__init__()
        self.drop_path = DropPath(drop_path)
        self.preffn_bn = nn.BatchNorm2d(channels)
        self.pw1 = conv_bn(channels, hidden, 1)
        self.pw2 = conv_bn(hidden, channels, 1)
        self.nonlinear = nn.GELU()

    def forward(self, x):
        return x + self.drop_path(self.pw2(self.nonlinear(self.pw1(self.preffn_bn(x)))))


class Stage(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.norm = nn.Identity()

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x


class RepLKNet(nn.Module):
    def __init__(self, kernels, depths, channels, small_kernel=5, drop_path_rate=0.3, dw_ratio=1.0, ffn_ratio=4.0,
                 in_channels=3, num_classes=1000, small_kernel_merged=False):
        super().__init__()
        c0 = channels[0]
        self.stem = nn.ModuleList([
            conv_bn(in_channels, c0, 3, stride=2, relu=True),
            conv_bn(c0, c0, 3, groups=c0, relu=True),
            conv_bn(c0, c0, 1, relu=True),
            conv_bn(c0, c0, 3, stride=2, groups=c0, relu=True)])
        rates = drop_rates(drop_path_rate, sum(depths))
        self.stages, self.transitions = nn.ModuleList(), nn.ModuleList()
        first = 0
        for i, (k, d, c) in enumerate(zip(kernels, depths, channels)):
            blocks = []
            for j in range(d):
                r = rates[first + j]
                blocks.append(RepLKBlock(c, int(c * dw_ratio), k, small_kernel, r, small_kernel_merged))
                blocks.append(ConvFFN(c, int(c * ffn_ratio), r))
            first += d
            self.stages.append(Stage(blocks))
            if i + 1 < len(channels):
                c2 = channels[i + 1]
                self.transitions.append(nn.Sequential(conv_bn(c, c2, 1, relu=True),
                                                      conv_bn(c2, c2, 3, stride=2, groups=c2, relu=True)))
        self.norm = nn.BatchNorm2d(channels[-1])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(channels[-1], num_classes)

    def forward(self, x):
        for layer in self.stem:
            x = layer(x)
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i < len(self.transitions):
                x = self.transitions[i](x)
        return self.head(torch.flatten(self.avgpool(self.norm(x)), 1))

    def structural_reparam(self):
        """Merges every large-kernel branch pair into one conv (eval-mode equivalent)."""
        for m in self.modules():
            if isinstance(m, LargeKernel) and hasattr(m, "lkb_origin"):
                m.merge()
