#!/usr/bin/env python3
"""PyTorch side of bench/e2e.sh: the training step of the same models as `cnn-train --synthetic`, on one GPU.
timm models where timm has them (ConvNeXt-T with kernel_sizes 7 / 9 / 31, ConvMixer-768/32 and -1536/20); RepLKNet-31B
and SLaK-T(-dense) from bench/torch_models (build(name)). channels_last, cudnn.benchmark, TF32 off, AdamW (no decay on
1-D parameters, as cnn-train), GradScaler with --amp. Per model and precision: --warmup untimed steps, then --steps
steps each timed whole (synchronized), printed as one JSON line: median and mean ms/step, peak allocated device memory.
A model that cannot run prints a JSON line with "error" and the script exits 1 at the end; a model whose definition is
missing (bench/torch_models not written yet) is such an error, never a silent skip.
usage: bench/e2e_torch.py --models convnext_tiny,slak_tiny --precisions fp32,amp --batch-size 64 --image-size 256"""
import argparse
import json
import pathlib
import re
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
TIMM = {  # our config name -> (timm name, extra create_model arguments)
    "convnext_tiny": ("convnext_tiny", {}),
    "convnext_tiny_k9": ("convnext_tiny", {"kernel_sizes": 9}),
    "convnext_tiny_k31": ("convnext_tiny", {"kernel_sizes": 31}),
    "convmixer_768_32": ("convmixer_768_32", {}),
    "convmixer_1536_20": ("convmixer_1536_20", {}),
}
LOCAL = ("replknet_31b", "slak_tiny", "slak_tiny_dense")  # bench/torch_models.build(name, **overrides)


def drop_path_rate(name):
    """The stochastic-depth rate of configs/models/<name>.yaml (0 when the key is absent, as for ConvMixer)."""
    text = (ROOT / "configs" / "models" / f"{name}.yaml").read_text()
    m = re.search(r"^drop_path_rate:\s*([0-9.eE+-]+)\s*$", text, re.M)
    return float(m.group(1)) if m else 0.0


def build_model(name, drop_path=None):
    """drop_path None: the stochastic-depth rate of our config, so both sides drop the same share of blocks."""
    rate = drop_path_rate(name) if drop_path is None else drop_path
    if name in TIMM:
        import timm
        timm_name, kwargs = TIMM[name]
        if rate > 0:
            kwargs = dict(kwargs, drop_path_rate=rate)
        return timm.create_model(timm_name, pretrained=False, num_classes=1000, **kwargs)
    if name in LOCAL:
        sys.path.insert(0, str(ROOT / "bench"))
        try:
            import torch_models
        except ImportError as e:
            raise RuntimeError(f"{name} needs bench/torch_models (build(name)), which cannot be imported: {e}") from e
        return torch_models.build(name, num_classes=1000, drop_path_rate=rate)
    raise ValueError(f"unknown model '{name}' (known: {', '.join(list(TIMM) + list(LOCAL))})")


def param_groups(model, weight_decay):
    """cnn-train's rule: decay on weights of >= 2 axes; none on biases, norm affine and LayerScale (1-D)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    rest = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]


def set_backends():
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


class Trainer:
    """One model's training step: autocast FP16 + GradScaler with amp, AdamW with cnn-train's defaults."""

    def __init__(self, model, amp, lr=1e-3, weight_decay=0.05, device="cuda"):
        if amp and device != "cuda":
            raise ValueError(f"Trainer: amp needs device 'cuda', got '{device}'")
        self.model = model.to(device).to(memory_format=torch.channels_last).train()
        self.amp = amp
        self.opt = torch.optim.AdamW(param_groups(self.model, weight_decay), lr=lr, betas=(0.9, 0.999), eps=1e-8)
        self.scaler = torch.amp.GradScaler("cuda") if amp else None  # FP32 steps need none (and CPU has none)

    def step(self, x, y):
        if not self.amp:
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)
            return loss
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        self.opt.zero_grad(set_to_none=True)
        return loss


def measure(name, amp, a):
    torch.manual_seed(0)
    trainer = Trainer(build_model(name), amp)
    x = torch.randn(a.batch_size, 3, a.image_size, a.image_size, device="cuda")
    x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (a.batch_size,), device="cuda")
    for _ in range(a.warmup):
        trainer.step(x, y)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        trainer.step(x, y)
        torch.cuda.synchronize()
        times.append(1e3 * (time.perf_counter() - t0))
    return {"median_ms": statistics.median(times), "mean_ms": statistics.fmean(times),
            "peak_mib": torch.cuda.max_memory_allocated() / 2**20,
            "parameters": sum(p.numel() for p in trainer.model.parameters())}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", required=True, help="comma-separated config names")
    p.add_argument("--precisions", default="fp32,amp", help="fp32, amp or both")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--image-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    precisions = a.precisions.split(",")
    bad = [q for q in precisions if q not in ("fp32", "amp")]
    if bad or a.steps < 1 or a.warmup < 0:
        p.error(f"--precisions takes fp32 and/or amp (got {a.precisions}); --steps >= 1, --warmup >= 0")
    if not torch.cuda.is_available():
        sys.exit("bench/e2e_torch.py: no CUDA device")
    set_backends()
    failed = False
    for name in a.models.split(","):
        for precision in precisions:
            row = {"model": name, "precision": precision, "steps": a.steps, "warmup": a.warmup,
                   "torch": torch.__version__, "cudnn": torch.backends.cudnn.version()}
            try:
                row.update(measure(name, precision == "amp", a))
            except Exception as e:  # one line per failed model; the others still run
                failed = True
                row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                traceback.print_exc(file=sys.stderr)
            if "timm" in sys.modules:
                row["timm"] = sys.modules["timm"].__version__
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
