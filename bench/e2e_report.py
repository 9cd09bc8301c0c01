#!/usr/bin/env python3
"""bench/e2e.sh's tables. `merge OURS.jsonl TORCH.jsonl -o e2e.csv` joins the two sides' JSON lines into one CSV row
per (model, precision) with the ratios; `markdown e2e.csv --loss loss_check.jsonl --command ... --build ...
--machine ... -o e2e-h200.md` regenerates the results page from that CSV alone (plus the loss check), with the bars
of issue 22 checked row by row. Standard library only."""
import argparse
import csv
import json
import os
import sys

FIELDS = ["model", "precision", "ours_median_ms", "ours_mean_ms", "ours_peak_mib", "torch_median_ms", "torch_mean_ms",
          "torch_peak_mib", "speedup", "memory_ratio", "torch", "cudnn", "timm", "error"]
# Speed bars (PyTorch ms / ours) by model; every model must also reach 1.0, AMP must beat our FP32, memory <= 1.1x.
BARS = {"convnext_tiny": 1.5, "convmixer_768_32": 1.5, "convnext_tiny_k31": 3.0, "convmixer_1536_20": 3.0,
        "replknet_31b": 3.0, "slak_tiny": 3.0, "slak_tiny_dense": 3.0}
MEMORY_BAR = 1.1


def read_jsonl(path):
    rows = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
                rows[(r["model"], r["precision"])] = r
            except (ValueError, KeyError) as e:
                sys.exit(f"bench/e2e_report.py: {path}:{n}: not a result line ({e}): {line[:120]}")
    return rows


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def merge(a):
    ours, theirs = read_jsonl(a.ours), read_jsonl(a.torch)
    keys = list(ours) + [k for k in theirs if k not in ours]
    lines = []
    for key in keys:
        o, t = ours.get(key, {}), theirs.get(key, {})
        row = {"model": key[0], "precision": key[1]}
        for side, r in (("ours", o), ("torch", t)):
            for f in ("median_ms", "mean_ms", "peak_mib"):
                row[f"{side}_{f}"] = r.get(f, "")
        for f in ("torch", "cudnn", "timm"):
            row[f] = t.get(f, "")
        if row["ours_median_ms"] and row["torch_median_ms"]:
            row["speedup"] = round(row["torch_median_ms"] / row["ours_median_ms"], 3)
        if row["ours_peak_mib"] and row["torch_peak_mib"]:
            row["memory_ratio"] = round(row["ours_peak_mib"] / row["torch_peak_mib"], 3)
        errors = [f"{side}: {r['error']}" for side, r in (("ours", o), ("torch", t)) if "error" in r]
        if not o:
            errors.append("ours: not run")
        if not t:
            errors.append("torch: not run")
        row["error"] = "; ".join(errors)
        lines.append(row)
    import io
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for row in lines:
        w.writerow({k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()})
    write_atomic(a.output, buf.getvalue())


def num(text):
    return float(text) if text not in ("", None) else None


def cell_ms(v):
    return f"{v:.1f}" if v is not None else "-"


def markdown(a):
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    by = {(r["model"], r["precision"]): r for r in rows}
    models = list(dict.fromkeys(r["model"] for r in rows))
    versions = next((r for r in rows if r["torch"]), {})
    out = ["# End-to-end training speed on the H200", "",
           "`cnn-train --synthetic` against PyTorch in the same call (bench/e2e.sh): batch 64 at the image size of the "
           "command below, median ms per training step (each step waited for), after the warm-up steps; peak device "
           "memory allocated during the timed steps. PyTorch "
           f"{versions.get('torch', '?')}, cuDNN {versions.get('cudnn', '?')}, timm {versions.get('timm', '?')}: "
           "channels_last, cudnn.benchmark, TF32 off, AdamW (no decay on 1-D parameters), GradScaler under AMP; "
           "timm models except RepLKNet-31B and SLaK-T(-dense) (bench/torch_models). "
           "Ratio = PyTorch ms / ours (> 1: ours faster); memory = our peak / PyTorch's.", "",
           "| model | ours FP32 | PyTorch FP32 | ratio | ours AMP | PyTorch AMP | ratio | AMP / our FP32 | "
           "peak MiB FP32 (ours / PyTorch) | peak MiB AMP (ours / PyTorch) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    missed, errors = [], []
    for m in models:
        f, h = by.get((m, "fp32"), {}), by.get((m, "amp"), {})
        cells = [m]
        for r in (f, h):
            o, t, s = num(r.get("ours_median_ms")), num(r.get("torch_median_ms")), num(r.get("speedup"))
            cells += [cell_ms(o), cell_ms(t), f"{s:.2f}x" if s is not None else "-"]
        of, oh = num(f.get("ours_median_ms")), num(h.get("ours_median_ms"))
        cells.append(f"{of / oh:.2f}x" if of and oh else "-")
        for r in (f, h):
            op, tp = num(r.get("ours_peak_mib")), num(r.get("torch_peak_mib"))
            cells.append(f"{op:.0f} / {tp:.0f}" if op is not None and tp is not None else
                         f"{op:.0f} / -" if op is not None else "-")
        out.append("| " + " | ".join(cells) + " |")
        for precision, r in (("FP32", f), ("AMP", h)):
            s, mr = num(r.get("speedup")), num(r.get("memory_ratio"))
            bar = max(BARS.get(m, 1.0), 1.0)
            if s is not None and s < bar:
                missed.append(f"{m} {precision}: ratio {s:.2f}x, bar {bar:.1f}x")
            if mr is not None and mr > MEMORY_BAR:
                missed.append(f"{m} {precision}: memory {mr:.2f}x PyTorch's, bar {MEMORY_BAR}x")
            if r.get("error"):
                errors.append(f"{m} {precision}: {r['error']}")
        if of and oh and oh >= of:
            missed.append(f"{m}: AMP {oh:.1f} ms is not faster than our FP32 {of:.1f} ms")
    out += ["", "Bars (issue 22) not met: " + ("none" if not missed else ""), ""]
    out += [f"- {x}" for x in missed]
    if errors:
        out += ["", "Runs that failed:", ""] + [f"- {x}" for x in errors]
    out += ["", "## Same work on both sides", ""]
    checks = [json.loads(l) for l in open(a.loss)] if a.loss and os.path.exists(a.loss) else []
    if not checks:
        out.append("No loss check in this run.")
    else:
        out.append("`cnn-train --synthetic --trace-dir` exports its initial FP32 weights through the checkpoint "
                   "interop (models/checkpoint.h: timm names and layouts) and the batches it trained on; "
                   "bench/e2e_loss_check.py loads them into the timm model (`load_state_dict(strict=True)`), trains "
                   "the same steps with the same AdamW settings (constant learning rate, no stochastic depth on either "
                   "side) and compares the losses "
                   "(bounds and their reasons in the script).")
        out.append("")
        for c in checks:
            if "error" in c:
                out.append(f"- {c['model']} {c['precision']}: failed ({c['error']})")
                continue
            pairs = ", ".join(f"{o:.5f} / {t:.5f}" for o, t in zip(c["ours"], c["torch"]))
            out.append(f"- {c['model']} {c['precision'].upper()}: losses ours / PyTorch per step {pairs}; largest "
                       f"relative difference {max(c['rel_diff']):.2e} (bounds {c['bounds'][0]:g} at step 0, "
                       f"{c['bounds'][1]:g} after): {'agree' if c['agree'] else 'DISAGREE'}")
    stem = os.path.splitext(os.path.basename(a.output))[0]  # the raw files are kept beside the page, named after it
    out += ["", "## How it was measured", "", f"Command (repository root, GPU machine): `{a.command}`", "",
            f"Build: {a.build}. Machine: {a.machine}.", "",
            f"Raw results: `{stem}.csv` beside this page (the CSV this table is generated from by "
            f"`bench/e2e_report.py markdown`) and the run's logs in `{stem}-logs.tgz`.", ""]
    write_atomic(a.output, "\n".join(out))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge")
    m.add_argument("ours")
    m.add_argument("torch")
    m.add_argument("-o", "--output", required=True)
    d = sub.add_parser("markdown")
    d.add_argument("csv")
    d.add_argument("--loss")
    d.add_argument("--command", required=True)
    d.add_argument("--build", required=True)
    d.add_argument("--machine", required=True)
    d.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    merge(a) if a.cmd == "merge" else markdown(a)


if __name__ == "__main__":
    main()
