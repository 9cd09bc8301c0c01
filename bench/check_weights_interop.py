#!/usr/bin/env python3
"""Logits of cnn-eval against PyTorch on the same weights and images (the GPU machine: PyTorch, timm, safetensors).

For each model: the PyTorch model (timm's convnext_tiny, convnext_tiny with 31x31 kernels, convmixer_768_32; the
definitions in bench/torch_models for RepLKNet-31B and SLaK-T) is initialised as its reference does, then every
bias, norm affine and LayerScale is re-drawn and the BatchNorm statistics are set to the exact batch statistics
of the images (one train-mode pass, momentum None), so that every branch contributes and every layer sees
unit-scale activations. Its state dict goes to safetensors under PyTorch's names; cnn-eval loads it (--inputs:
the same 64 images, NHWC) and writes its logits. Compared: cnn-eval FP32 vs PyTorch FP32 (TF32 off), cnn-eval
--amp vs PyTorch FP32 beside PyTorch autocast FP16 vs PyTorch FP32, and for RepLKNet / SLaK the deploy checkpoint
written by cnn-export --reparam. One JSON line per comparison, then a table.

usage: bench/check_weights_interop.py --bin BUNDLE/bin --work DIR [--models convnext_tiny,...] [--images 64]
       (on a machine without a GPU: --device cpu --size 64 --images 4 --no-amp --models replknet_31b,slak_tiny)
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    from safetensors.torch import load_file, save_file
except ImportError:  # Debian's PyTorch: the format by hand
    from bench.safetensors_io import load_file, save_file

# FP32 tolerance: max |ours - torch| <= 1e-3 * max |torch logit|. Both sum the same products in another order
# over ~20-40 layers; FP32 rounding (2^-24 relative per op) grows to ~1e-5..1e-4 of the logit scale there, so
# 1e-3 leaves room while any layout, name or formula error (a wrong BN statistic, a transposed kernel) moves
# logits by a large fraction of their scale.
FP32_REL_TOL = 1e-3
# AMP: the FP16 error of cnn-eval --amp against the FP32 reference may be at most twice PyTorch autocast's own
# (the flash-attention rule for FP16 tests), plus the FP32 tolerance.
AMP_FACTOR = 2.0

MODELS = {
    # cnn config name: (builder, description)
    "convnext_tiny": (lambda: __import__("timm").create_model("convnext_tiny", pretrained=False), "timm convnext_tiny"),
    "convnext_tiny_k31": (lambda: __import__("timm").create_model("convnext_tiny", pretrained=False, kernel_sizes=31),
                          "timm convnext_tiny, kernel_sizes=31"),
    "convmixer_768_32": (lambda: __import__("timm").create_model("convmixer_768_32", pretrained=False),
                         "timm convmixer_768_32"),
    "replknet_31b": (lambda: __import__("bench.torch_models", fromlist=["build"]).build("replknet_31b",
                                                                                         drop_path_rate=0.0),
                     "bench/torch_models replknet_31b"),
    "slak_tiny": (lambda: __import__("bench.torch_models", fromlist=["build"]).build("slak_tiny", drop_path_rate=0.0),
                  "bench/torch_models slak_tiny"),
}
REPARAM = {"replknet_31b", "slak_tiny"}


@torch.no_grad()
def perturb_and_calibrate(model, images, seed):
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "gamma":
            p.copy_(torch.empty(p.shape).uniform_(0.3, 1.0, generator=g))
        elif leaf == "bias":
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
        elif leaf == "weight" and p.dim() == 1:  # norm affine
            p.copy_(torch.empty(p.shape).uniform_(0.5, 1.5, generator=g))
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: after one pass, exactly that pass's statistics
    if bns:
        model.train()
        model(images)
    model.eval()


def torch_logits(model, images, amp):
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16, enabled=amp):
        return model(images).float()


def run_eval(args, name, checkpoint, inputs, out, amp):
    cmd = [os.path.join(args.bin, "cnn-eval"), "--model", name, "--checkpoint", checkpoint, "--inputs", inputs,
           "--save-logits", out, "--device", args.device, "--batch-size", str(args.images)] + (["--amp"] if amp else [])
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return load_file(out)["logits"].to(args.device), time.time() - t0


def compare(ours, ref):
    diff = (ours - ref).abs().max().item()
    return diff, diff / ref.abs().max().item(), (ours.argmax(1) == ref.argmax(1)).float().mean().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--images", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--size", type=int, default=224, help="image height and width")
    p.add_argument("--no-amp", action="store_true", help="FP32 only (the AMP comparison needs CUDA)")
    a = p.parse_args()
    torch.backends.cudnn.allow_tf32 = False  # an FP32 reference, not TF32
    torch.backends.cuda.matmul.allow_tf32 = False
    os.makedirs(a.work, exist_ok=True)
    g = torch.Generator().manual_seed(a.seed)
    images = torch.randn(a.images, 3, a.size, a.size, generator=g)
    inputs = os.path.join(a.work, "images.safetensors")
    save_file({"images": images.permute(0, 2, 3, 1).contiguous()}, inputs)
    images = images.to(a.device)
    rows, failed = [], False
    for name in a.models.split(","):
        build, what = MODELS[name]
        torch.manual_seed(a.seed)
        model = build().to(a.device)
        perturb_and_calibrate(model, images, a.seed)
        ckpt = os.path.join(a.work, f"{name}.safetensors")
        save_file({k: v.detach().contiguous().clone().cpu() for k, v in model.state_dict().items()}, ckpt)
        ref = torch_logits(model, images, False)
        torch_amp_err = float("nan") if a.no_amp else (torch_logits(model, images, True) - ref).abs().max().item()
        scale = ref.abs().max().item()
        checks = [("fp32", ckpt, False)] + ([] if a.no_amp else [("amp", ckpt, True)])
        if name in REPARAM:
            deploy = os.path.join(a.work, f"{name}_deploy.safetensors")
            r = subprocess.run([os.path.join(a.bin, "cnn-export"), "--model", name, "--checkpoint", ckpt, "--reparam",
                                "--out", deploy], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"cnn-export {name} failed: {r.stderr.strip()}")
            checks.append(("deploy-fp32", deploy, False))
        for mode, path, amp in checks:
            ours, secs = run_eval(a, name, path, inputs, os.path.join(a.work, f"{name}_{mode}_logits.safetensors"), amp)
            diff, rel, agree = compare(ours, ref)
            bound = (AMP_FACTOR * torch_amp_err + FP32_REL_TOL * scale) if amp else FP32_REL_TOL * scale
            ok = diff <= bound
            failed |= not ok
            row = {"model": name, "reference": what, "mode": mode, "max_abs_diff": diff, "rel_to_max_logit": rel,
                   "bound": bound, "max_abs_logit": scale, "torch_amp_vs_fp32": torch_amp_err,
                   "top1_agreement": agree, "ok": ok, "eval_s": round(secs, 2)}
            print(json.dumps(row), flush=True)
            rows.append(row)
        del model
        if a.device == "cuda":
            torch.cuda.empty_cache()
    print()
    print(f"{'model':<18} {'mode':<12} {'max|diff|':>10} {'rel':>9} {'bound':>9} {'torch amp':>10} {'top1 agr':>8}  ok")
    for r in rows:
        print(f"{r['model']:<18} {r['mode']:<12} {r['max_abs_diff']:>10.3e} {r['rel_to_max_logit']:>9.2e} "
              f"{r['bound']:>9.2e} {r['torch_amp_vs_fp32']:>10.3e} {r['top1_agreement']:>8.3f}  {r['ok']}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
