"""SLaK (Liu et al., ICLR 2023) with the module tree of the authors' models/SLaK.py: downsample_layers.i,
stages.i.j.{large_kernel.{LoRA1, LoRA2 | lkb_origin, small_conv}, norm, pwconv1, pwconv2, gamma}, norm, head.
Dense weights only (no sparsity masks). The K x s / s x K strips pad k // 2 per axis so every branch keeps the
size, as the reference's implicit-GEMM kernel does; here they run as plain nn.Conv2d."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import DropPath, conv_bn, drop_rates, fold_bn, pad_to


class LayerNorm2d(nn.Module):
    """LayerNorm over C of an (N, C, H, W) tensor (parameters "weight", "bias")."""

    def __init__(self, channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), self.weight, self.bias,
                            self.eps).permute(0, 3, 1, 2)


class LargeKernel(nn.Module):
    """Decomposed: K x s ("LoRA1") + s x K ("LoRA2") depthwise conv-BN strips; dense: K x K ("lkb_origin"); plus
    s x s ("small_conv") when s < K. After merge(): one K x K conv with bias ("lkb_reparam")."""

    def __init__(self, channels, kernel, small_kernel, decomposed, merged=False):
        super().__init__()
        self.kernel = kernel
        if merged:
            self.lkb_reparam = nn.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=channels)
            return
        if decomposed:
            self.LoRA1 = conv_bn(channels, channels, (kernel, small_kernel), groups=channels)
            self.LoRA2 = conv_bn(channels, channels, (small_kernel, kernel), groups=channels)
        else:
            self.lkb_origin = conv_bn(channels, channels, kernel, groups=channels)
        if small_kernel < kernel:
            self.small_conv = conv_bn(channels, channels, small_kernel, groups=channels)

    def branches(self):
        return [getattr(self, n) for n in ("LoRA1", "LoRA2", "lkb_origin", "small_conv") if hasattr(self, n)]

    def forward(self, x):
        if hasattr(self, "lkb_reparam"):
            return self.lkb_reparam(x)
        out = None
        for b in self.branches():
            out = b(x) if out is None else out + b(x)
        return out

    @torch.no_grad()
    def merge(self):
        parts = [fold_bn(b) for b in self.branches()]
        weight = sum(pad_to(k, self.kernel, self.kernel) for k, _ in parts)
        bias = sum(b for _, b in parts)
        c = weight.shape[0]
        self.lkb_reparam = nn.Conv2d(c, c, self.kernel, padding=self.kernel // 2, groups=c).to(weight.device)
        self.lkb_reparam.weight.copy_(weight)
        self.lkb_reparam.bias.copy_(bias)
        for n in ("LoRA1", "LoRA2", "lkb_origin", "small_conv"):
            if hasattr(self, n):
                delattr(self, n)


class Block(nn.Module):
    def __init__(self, dim, kernel, small_kernel, decomposed, drop_path, ls_init, merged):
        super().__init__()
        self.large_kernel = LargeKernel(dim, kernel, small_kernel, decomposed, merged)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), ls_init))
        self.drop_path = DropPath(drop_path)

    def forward(self, x):
        h = self.large_kernel(x).permute(0, 2, 3, 1)
        h = self.gamma * self.pwconv2(self.act(self.pwconv1(self.norm(h))))
        return x + self.drop_path(h.permute(0, 3, 1, 2))


class SLaK(nn.Module):
    def __init__(self, kernels, small_kernel=5, width_factor=1.3, decomposed=True, depths=(3, 3, 9, 3),
                 dims=(96, 192, 384, 768), drop_path_rate=0.1, ls_init_value=1e-6, in_channels=3,
                 num_classes=1000, small_kernel_merged=False):
        super().__init__()
        dims = [int(d * width_factor) for d in dims]
        self.downsample_layers = nn.ModuleList(
            [nn.Sequential(nn.Conv2d(in_channels, dims[0], 4, stride=4), LayerNorm2d(dims[0]))] +
            [nn.Sequential(LayerNorm2d(dims[i]), nn.Conv2d(dims[i], dims[i + 1], 2, stride=2))
             for i in range(len(dims) - 1)])
        rates = drop_rates(drop_path_rate, sum(depths))
        self.stages = nn.ModuleList()
        first = 0
        for i, d in enumerate(depths):
            self.stages.append(nn.Sequential(*[
                Block(dims[i], kernels[i], small_kernel, decomposed, rates[first + j], ls_init_value,
                      small_kernel_merged) for j in range(d)]))
            first += d
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)
        self.apply(self._init)

    @staticmethod
    def _init(m):  # the reference: trunc_normal_(std=.02) on every conv / linear weight, zero biases
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, x):
        for ds, stage in zip(self.downsample_layers, self.stages):
            x = stage(ds(x))
        return self.head(self.norm(x.mean((-2, -1))))

    def structural_reparam(self):
        """Merges every large-kernel block's branches into one K x K conv (eval-mode equivalent)."""
        for m in self.modules():
            if isinstance(m, LargeKernel) and not hasattr(m, "lkb_reparam"):
                m.merge()
