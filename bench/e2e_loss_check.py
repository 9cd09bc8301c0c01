#!/usr/bin/env python3
"""Do cnn-train and PyTorch do the same work? Replays a `cnn-train --synthetic --trace-dir DIR` run in PyTorch: the
timm model loads DIR/init.safetensors (cnn's checkpoint export: reference names and layouts) with strict=True, trains
on the same batches (DIR/batch_<i>.safetensors, NHWC images) with the same AdamW settings (constant learning rate:
run cnn-train with --sched constant), and its per-step losses are compared with DIR/losses.json. Neither side uses
stochastic depth (cnn-train --trace-dir needs --drop-path 0): its per-sample random masks cannot be drawn alike.
Bounds (relative to the loss): step 0 runs the same weights on the same images, so the losses differ only by
summation order (FP32: 1e-4) or FP16 rounding of activations (AMP: 2e-3, a few units of FP16's 4.9e-4 roundoff);
later steps also carry AdamW's first updates, which move every weight by ~lr whatever the gradient's size, so tiny
gradient differences show: 5e-3 (FP32), 2e-2 (AMP).
--device cpu replays a `cnn-train --device cpu` trace (FP32 only) with Debian's PyTorch (/usr/bin/python3). The later
bounds assume bench/e2e.sh's size (batch 64, 256x256); at CPU sizes BatchNorm's last stages see a few values per
channel, a rounding-level sign change at a ReLU moves a whole channel's gradient, and later steps spread by ~1e-2
from FP32 rounding alone (RepLKNet-31B, batch 8, 128x128, step 2: PyTorch channels_last against NCHW 1.4e-2).
Prints one JSON line; exit status 1 when a bound is exceeded."""
import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from e2e_torch import Trainer, build_model, set_backends  # noqa: E402

try:
    from safetensors.torch import load_file
except ImportError:  # Debian's PyTorch: the format by hand
    from safetensors_io import load_file


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace_dir")
    p.add_argument("--model", required=True)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    a = p.parse_args()
    if a.amp and a.device != "cuda":
        p.error("--amp needs --device cuda")
    d = pathlib.Path(a.trace_dir)
    ours = json.loads((d / "losses.json").read_text())["losses"]
    set_backends()
    model = build_model(a.model, drop_path=0.0)
    model.load_state_dict(load_file(str(d / "init.safetensors")), strict=True)
    trainer = Trainer(model, a.amp, lr=a.lr, weight_decay=a.weight_decay, device=a.device)
    theirs = []
    for i in range(len(ours)):
        batch = load_file(str(d / f"batch_{i}.safetensors"))
        x = batch["images"].to(a.device).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        theirs.append(trainer.step(x, batch["labels"].to(a.device)).float().item())
    first_bound, later_bound = (2e-3, 2e-2) if a.amp else (1e-4, 5e-3)
    rel = [abs(o - t) / max(abs(t), 1e-12) for o, t in zip(ours, theirs)]
    ok = len(rel) > 0 and rel[0] <= first_bound and all(r <= later_bound for r in rel[1:])
    print(json.dumps({"model": a.model, "precision": "amp" if a.amp else "fp32", "ours": ours, "torch": theirs,
                      "rel_diff": rel, "bounds": [first_bound, later_bound], "agree": ok}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
