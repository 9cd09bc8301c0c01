#!/usr/bin/env python3
"""Roofline PNG of a dwconv-ladder CSV: every rung at its arithmetic intensity (FLOP per compulsory byte) and
TFLOP/s, under the copy-bandwidth and SGEMM ceilings measured in the same run; one colour per filter size.
Needs gnuplot (scripts/install-deps.sh). usage: plot_roofline.py LADDER.csv OUT.png [gpu|cpu]"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    sys.exit(f"plot_roofline.py: {msg}")


def main():
    if len(sys.argv) not in (3, 4):
        fail("usage: plot_roofline.py LADDER.csv OUT.png [gpu|cpu]")
    csv_path, png_path = sys.argv[1], sys.argv[2]
    device = sys.argv[3] if len(sys.argv) == 4 else "gpu"
    if device not in ("gpu", "cpu"):
        fail(f"device: expected gpu or cpu, got '{device}'")
    if shutil.which("gnuplot") is None:
        fail("gnuplot not found (scripts/install-deps.sh installs it)")
    try:
        with open(csv_path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if r["device"] == device and r["ms"] and not r["error"]]
    except (OSError, KeyError) as e:
        fail(f"{csv_path}: not a dwconv-ladder CSV ({e})")
    if not rows:
        fail(f"{csv_path}: no measured {device} rows")
    copy_gbps = max(float(r["copy_gbps"]) for r in rows)
    sgemm = max(float(r["sgemm_tflops"]) for r in rows)
    filters = sorted({int(r["filter"]) for r in rows})
    with tempfile.TemporaryDirectory() as tmp:
        ceiling_title = f"ceilings: copy {copy_gbps:.0f} GB/s, SGEMM {sgemm:.2f} TFLOP/s"
        plots = [f"x < {sgemm * 1e3 / copy_gbps} ? x * {copy_gbps / 1e3} : {sgemm} "
                 f"with lines lw 2 lc rgb 'black' title '{ceiling_title}'"]
        for i, fw in enumerate(filters):
            data = os.path.join(tmp, f"f{fw}.dat")
            with open(data, "w") as d:
                for r in rows:
                    if int(r["filter"]) == fw:
                        label = r["rung"] if r["rung"] not in ("prod", "cudnn") else f"{r['rung']}-{r['dtype']}"
                        d.write(f"{r['intensity']} {r['tflops']} {label}\n")
            plots.append(f"'{data}' using 1:2 with points pt {5 + 2 * i} ps 1.4 title '{fw}x{fw}', "
                         f"'' using 1:2:3 with labels offset 0.8,0.6 font ',9' notitle")
        script = "\n".join([
            "set terminal pngcairo size 1100,750 font ',11'",
            f"set output '{png_path}.tmp'",
            "set logscale xy",
            "set xlabel 'arithmetic intensity (FLOP per compulsory byte)'",
            "set ylabel 'TFLOP/s'",
            f"set title 'depthwise forward ladder ({device}, {rows[0]['map']})'",
            "set key left top",
            "set grid",
            f"set xrange [0.5:{max(float(r['intensity']) for r in rows) * 4}]",
            f"set yrange [{min(float(r['tflops']) for r in rows) / 2}:{sgemm * 3}]",
            "plot " + ", ".join(plots),
        ])
        result = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if result.returncode != 0:
            fail(f"gnuplot failed: {result.stderr.strip()}")
    os.replace(png_path + ".tmp", png_path)
    print(f"plot_roofline.py: wrote {png_path} ({len(rows)} points)")


if __name__ == "__main__":
    main()
