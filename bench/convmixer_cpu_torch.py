#!/usr/bin/env python3
"""PyTorch CPU training throughput of ConvMixer-128/6 (7x7 depthwise, 2x2 patches, GELU, 28x28x1, 10 classes), the
model of configs/models/convmixer_128_6_k7_p2.yaml: AdamW steps on random data, --warmup untimed steps, then
--steps timed ones; prints ms/step and images/s like `cnn-train --synthetic --steps`. Run with /usr/bin/python3
(Debian's python3-torch)."""
import argparse
import time

import torch
import torch.nn as nn


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


def conv_mixer(dim, depth, kernel_size, patch_size, in_chans, num_classes):
    """timm convmixer.py's layer sequence."""
    return nn.Sequential(
        nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size), nn.GELU(), nn.BatchNorm2d(dim),
        *[nn.Sequential(
            Residual(nn.Sequential(nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"), nn.GELU(),
                                   nn.BatchNorm2d(dim))),
            nn.Conv2d(dim, dim, kernel_size=1), nn.GELU(), nn.BatchNorm2d(dim)) for _ in range(depth)],
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(dim, num_classes))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--channels-last", action="store_true", help="NHWC memory format (default NCHW)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = conv_mixer(128, 6, 7, 2, 1, 10)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(a.batch_size, 1, 28, 28).to(memory_format=fmt)
    y = torch.randint(0, 10, (a.batch_size,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(a.steps):
        step()
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"pytorch {torch.__version__}: convmixer_128_6_k7_p2, batch {a.batch_size}, cpu "
          f"{'channels_last' if a.channels_last else 'NCHW'}, {a.threads} threads: {1e3 * secs / a.steps:.2f} ms/step, "
          f"{a.batch_size * a.steps / secs:.1f} img/s ({a.steps} timed steps after {a.warmup} warm-up; "
          f"CPU time {cpu:.2f} s)")


if __name__ == "__main__":
    main()
