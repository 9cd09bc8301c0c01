#!/usr/bin/python3
"""Loads a cnn checkpoint of a ConvMixer into a PyTorch model laid out as timm's convmixer.py (same module names)
with load_state_dict(strict=True) and evaluates it on the first N Fashion-MNIST test images, printing loss, top-1
and top-5 for comparison with cnn-train's own evaluation of the same checkpoint (metrics.jsonl).
usage: bench/check_timm_interop.py MODEL.safetensors --dim 128 --depth 6 --kernel 7 --patch 2 --act gelu --n 2000
Needs Debian's python3-torch (no timm: the module tree below mirrors timm's names)."""
import argparse, gzip, json, struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class ConvMixer(nn.Module):  # timm: stem, blocks[i] = (Residual(dw, act, bn), pw, act, bn), pooling, head
    def __init__(self, dim, depth, kernel, patch, in_chans, num_classes, act):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_chans, dim, patch, stride=patch), act(), nn.BatchNorm2d(dim))
        self.blocks = nn.Sequential(*[nn.Sequential(
            Residual(nn.Sequential(nn.Conv2d(dim, dim, kernel, groups=dim, padding="same"), act(), nn.BatchNorm2d(dim))),
            nn.Conv2d(dim, dim, 1), act(), nn.BatchNorm2d(dim)) for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(x.mean((2, 3)))


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    types = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "F64": np.float64, "I32": np.int32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=types[info["dtype"]]).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw[4 + 4 * ndim:], dtype=np.uint8).reshape(dims)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("checkpoint")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--kernel", type=int, default=7)
    p.add_argument("--patch", type=int, default=2)
    p.add_argument("--act", choices=["gelu", "relu"], default="gelu")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = p.parse_args()
    act = nn.GELU if a.act == "gelu" else nn.ReLU
    model = ConvMixer(a.dim, a.depth, a.kernel, a.patch, 1, 10, act)
    model.load_state_dict(read_safetensors(a.checkpoint), strict=True)
    model.eval()
    images = read_idx(f"{a.data}/t10k-images-idx3-ubyte.gz")[: a.n].astype(np.float32) / 255.0
    labels = torch.from_numpy(read_idx(f"{a.data}/t10k-labels-idx1-ubyte.gz")[: a.n].astype(np.int64))
    x = torch.from_numpy((images - 0.2860) / 0.3530).unsqueeze(1)
    with torch.no_grad():
        logits = model(x)
    loss = F.cross_entropy(logits, labels).item()
    top5 = logits.topk(5, dim=1).indices
    top1 = (top5[:, 0] == labels).float().mean().item()
    top5 = (top5 == labels[:, None]).any(dim=1).float().mean().item()
    print(json.dumps({"images": a.n, "loss": loss, "top1": top1, "top5": top5}))


if __name__ == "__main__":
    main()
