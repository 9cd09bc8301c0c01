#!/usr/bin/env python3
"""PyTorch CPU depthwise conv (FP32, channels_last, groups=C) on the shapes of apps/dwconv-cpu-bench: forward and
forward+backward (input and weight require grad), median of --reps after one warm-up, same padding and CSV columns."""
import argparse
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def parse_shape(text):
    v = [int(t) for t in text.split(",")]
    if len(v) not in (5, 6, 7):
        sys.exit(f"--shapes: expected N,H,W,C,F or N,H,W,C,FH,FW[,S], got '{text}'")
    n, h, w, c, fh = v[:5]
    fw = v[5] if len(v) >= 6 else fh
    s = v[6] if len(v) == 7 else 1
    return n, h, w, c, fh, fw, s


def median_ms(reps, threads, fn):
    """Median wall-clock ms and median process CPU ms per thread (as apps/dwconv-cpu-bench reports them)."""
    wall, cpu = [], []
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3 / threads)
    return statistics.median(wall), statistics.median(cpu)


def run_shape(shape, reps, threads):
    n, h, w, c, fh, fw, s = shape
    torch.manual_seed(0)
    # (F-1)//2 before, the rest after, as the C++ benchmark; symmetric cases use conv2d's own padding.
    pt, pl = (fh - 1) // 2, (fw - 1) // 2
    pb, pr = fh - 1 - pt, fw - 1 - pl
    x = torch.rand(n, c, h, w).mul_(2).sub_(1).to(memory_format=torch.channels_last).requires_grad_()
    wt = torch.rand(c, 1, fh, fw).mul_(2).sub_(1).requires_grad_()
    b = torch.rand(c).mul_(2).sub_(1)

    def conv(inp):
        if (pt, pl) == (pb, pr):
            return F.conv2d(inp, wt, b, stride=s, padding=(pt, pl), groups=c)
        return F.conv2d(F.pad(inp, (pl, pr, pt, pb)), wt, b, stride=s, groups=c)

    with torch.no_grad():
        y0 = conv(x)
    gy = torch.rand_like(y0).mul_(2).sub_(1).contiguous(memory_format=torch.channels_last)

    def fwd():
        with torch.no_grad():
            conv(x)

    def fwdbwd():
        x.grad = None
        wt.grad = None
        conv(x).backward(gy)

    fwdbwd()  # warm-up
    return median_ms(reps, threads, fwd), median_ms(reps, threads, fwdbwd)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", nargs="+",
                    default=["32,56,56,128,3", "32,56,56,128,7", "32,56,56,128,13", "32,56,56,128,31"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    print(f"PyTorch {torch.__version__} CPU depthwise conv FP32 channels_last, {args.threads} threads")
    print(f"{'shape':<26} {'fwd ms':>9} {'GF/s':>8} {'fwd+bwd ms':>11} {'GF/s':>8} {'cpu fwd':>9}")
    for text in args.shapes:
        shape = parse_shape(text)
        n, h, w, c, fh, fw, s = shape
        oh = (h + fh - 1 - fh) // s + 1
        ow = (w + fw - 1 - fw) // s + 1
        gflop = 2.0 * n * oh * ow * c * fh * fw * 1e-9
        (fwd_ms, fwd_cpu), (fb_ms, fb_cpu) = run_shape(shape, args.reps, args.threads)
        label = f"{n}x{h}x{w}x{c} F{fh}x{fw} s{s}"
        print(f"{label:<26} {fwd_ms:9.2f} {gflop / fwd_ms * 1e3:8.1f} {fb_ms:11.2f} {3 * gflop / fb_ms * 1e3:8.1f}"
              f" {fwd_cpu:9.2f}", flush=True)
        rows.append(f"{n},{h},{w},{c},{fh},{fw},{s},{args.threads},{fwd_ms},{gflop / fwd_ms * 1e3},"
                    f"{fb_ms},{3 * gflop / fb_ms * 1e3},{fwd_cpu},{fb_cpu}")
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("n,h,w,c,fh,fw,stride,threads,fwd_ms,fwd_gflops,fwdbwd_ms,fwdbwd_gflops,fwd_cpu_ms,"
                    "fwdbwd_cpu_ms\n")
            f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
