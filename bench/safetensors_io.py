"""safetensors read / write with PyTorch alone (Debian's python3-torch has no safetensors package): an 8-byte
little-endian header length, a JSON header {name: {dtype, shape, data_offsets}}, then the raw little-endian data.
Writes are atomic (temporary file, fsync, rename)."""
import json
import os
import struct

import torch

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
          torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}
NAMES = {v: k for k, v in DTYPES.items()}


def save_file(tensors, path):
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype not in DTYPES:
            raise ValueError(f"safetensors: tensor '{name}' has dtype {t.dtype}, which is not stored here")
        raw = t.to(torch.uint8) if t.dtype == torch.bool else t
        data = raw.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # the data starts 8-byte aligned
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_file(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        dtype = NAMES[info["dtype"]]
        buf = torch.frombuffer(bytearray(data[a:b]), dtype=torch.uint8) if b > a else torch.empty(0, dtype=torch.uint8)
        t = buf.view(torch.uint8 if dtype == torch.bool else dtype)
        out[name] = (t.bool() if dtype == torch.bool else t).reshape(info["shape"])
    return out
