#!/usr/bin/python3
"""Converts a PyTorch checkpoint (.pth / .pt / .bin: a state dict, or a training checkpoint holding one under
"state_dict", "model", "model_ema" or "module") into a safetensors file that cnn-train --initial-checkpoint,
cnn-eval, cnn-predict and cnn-export read. Names are kept as they are (the loader maps the references' names).
Needs only Debian's python3-torch (no safetensors package).

    scripts/pth_to_safetensors.py RepLKNet-31B_ImageNet-1K_224.pth replknet_31b.safetensors
    scripts/pth_to_safetensors.py checkpoint.pth out.safetensors --key model_ema   # pick the wrapped dict
"""
import argparse
import json
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
          torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}
WRAPPERS = ("state_dict", "model", "model_ema", "module")


def load(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # PyTorch without weights_only
        return torch.load(path, map_location="cpu")


def state_dict_of(obj, key):
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            sys.exit(f"pth_to_safetensors: no '{key}' in the checkpoint (top-level keys: {list(obj)[:10]})")
        return obj[key]
    if isinstance(obj, dict) and not any(torch.is_tensor(v) for v in obj.values()):
        for k in WRAPPERS:
            if isinstance(obj.get(k), dict):
                print(f"pth_to_safetensors: using the state dict under '{k}'")
                return obj[k]
        sys.exit(f"pth_to_safetensors: no tensors and none of {WRAPPERS} at the top level "
                 f"(keys: {list(obj)[:10]}); pick one with --key")
    return obj


def write_safetensors(tensors, path):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        if t.dtype not in DTYPES:
            sys.exit(f"pth_to_safetensors: tensor '{name}' has dtype {t.dtype}, not one safetensors stores here")
        data = (t.to(torch.uint8) if t.dtype == torch.bool else t).view(-1).view(torch.uint8).numpy().tobytes() \
            if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # 8-byte aligned data, as the format recommends
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--key", help="the entry holding the state dict (default: the tensors at the top level, else "
                                 "the first of " + ", ".join(WRAPPERS))
    a = p.parse_args()
    sd = state_dict_of(load(a.input), a.key)
    tensors = {k: v for k, v in sd.items() if torch.is_tensor(v)}
    skipped = [k for k, v in sd.items() if not torch.is_tensor(v)]
    if skipped:
        print(f"pth_to_safetensors: skipped {len(skipped)} non-tensor entries: {skipped[:5]}")
    if not tensors:
        sys.exit("pth_to_safetensors: the state dict holds no tensors")
    write_safetensors(tensors, a.output)
    print(f"pth_to_safetensors: {len(tensors)} tensors -> {a.output}")


if __name__ == "__main__":
    main()
