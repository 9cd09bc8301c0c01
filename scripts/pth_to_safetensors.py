#!/usr/bin/python3
"""Converts a PyTorch checkpoint (.pth / .pt / .bin: a state dict, or a training checkpoint holding one under
"state_dict", "model", "model_ema" or "module") into a safetensors file that cnn-train --initial-checkpoint,
cnn-eval, cnn-predict and cnn-export read. Names are kept as they are (the loader maps the references' names).
Needs only Debian's python3-torch (no safetensors package; the format is written by bench/safetensors_io.py).

    scripts/pth_to_safetensors.py RepLKNet-31B_ImageNet-1K_224.pth replknet_31b.safetensors
    scripts/pth_to_safetensors.py checkpoint.pth out.safetensors --key model_ema   # pick the wrapped dict
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.safetensors_io import save_file  # noqa: E402

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
    try:
        save_file(tensors, a.output)
    except ValueError as e:
        sys.exit(f"pth_to_safetensors: {e}")
    print(f"pth_to_safetensors: {len(tensors)} tensors -> {a.output}")


if __name__ == "__main__":
    main()
