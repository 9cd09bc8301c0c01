#!/usr/bin/env python3
"""Markdown tables of a dwconv-ladder CSV for docs/tutorial/dwconv.md: one table per device, a row per rung and a
column group per filter (ms, TFLOP/s or GFLOP/s, % of the copy and SGEMM ceilings), so the tutorial's numbers come
from one run. usage: ladder_table.py LADDER.csv [gpu|cpu]"""
import csv
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("ladder_table.py: usage: ladder_table.py LADDER.csv [gpu|cpu]")
    device = sys.argv[2] if len(sys.argv) == 3 else "gpu"
    try:
        with open(sys.argv[1], newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["device"] == device]
    except (OSError, KeyError) as e:
        sys.exit(f"ladder_table.py: {sys.argv[1]}: not a dwconv-ladder CSV ({e})")
    if not rows:
        sys.exit(f"ladder_table.py: {sys.argv[1]}: no {device} rows")
    filters = sorted({int(r["filter"]) for r in rows})
    rate = "TFLOP/s" if device == "gpu" else "GFLOP/s"
    scale = 1.0 if device == "gpu" else 1e3
    head = "| rung | kernel | type |" + "".join(f" {f}x{f} ms | {rate} | % copy | % SGEMM |" for f in filters)
    print(head)
    print("|" + "---|" * (3 + 4 * len(filters)))
    keys = []
    for r in rows:
        key = (r["rung"], r["dtype"])
        if key not in keys:
            keys.append(key)
    for rung, dtype in keys:
        cells, name = [], ""
        for fw in filters:
            match = [r for r in rows if (r["rung"], r["dtype"], int(r["filter"])) == (rung, dtype, fw)]
            if not match or not match[0]["ms"]:
                cells.append(" - | - | - | - |")
                continue
            r = match[0]
            name = name or r["name"]
            failed = " (check failed)" if r["error"] else ""
            cells.append(f" {float(r['ms']):.3f}{failed} | {float(r['tflops']) * scale:.2f} | "
                         f"{100 * float(r['frac_copy']):.0f} | {100 * float(r['frac_sgemm']):.0f} |")
        if rung == "cudnn":
            name = "cuDNN, fastest passing candidate"
        elif rung == "prod":
            name = "production `dwconv_forward_cuda`"
        print(f"| {rung} | {name} | {dtype} |" + "".join(cells))


if __name__ == "__main__":
    main()
