#!/usr/bin/env bash
# CPU depthwise conv, FP32: this project's backend (apps/dwconv-cpu-bench) vs PyTorch (bench/dwconv_cpu_torch.py)
# on the same shapes and thread count; prints both tables and a side-by-side markdown table (x = PyTorch / ours).
# usage: bench/dwconv_cpu_vs_torch.sh [--threads T] [--reps R] [--offset B] [--out DIR] [--shapes N,H,W,C,F ...]
# Our tensors are 64-byte aligned as the framework allocates them; --offset B shifts them B bytes (ours only).
# --out DIR keeps the run's raw files: DIR/dwconv-cpu.csv.gz (both sides' rows, a first column 'side') and
# DIR/dwconv-cpu.log.gz (the machine, the load average and everything printed) - the files docs/perf/dwconv-cpu.md
# keeps beside its table.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
threads=2
reps=5
offset=0
out_dir=
shapes=(32,56,56,128,3 32,56,56,128,7 32,56,56,128,13 32,56,56,128,31)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --offset) offset=$2; shift 2 ;;
    --out) out_dir=$2; shift 2 ;;
    --shapes) shift; shapes=(); while [[ $# -gt 0 && $1 != --* ]]; do shapes+=("$1"); shift; done ;;
    *)
      echo "dwconv_cpu_vs_torch.sh: unknown argument '$1' (expected --threads, --reps, --offset, --out, --shapes)" >&2
      exit 2 ;;
  esac
done

# Debian's PyTorch build runs with the system interpreter, not a pyenv/venv one that may come first in PATH.
py=/usr/bin/python3
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "installing python3-torch (Debian package)" >&2
  if [[ $(id -u) -eq 0 ]]; then apt-get install -y python3-torch >&2; else sudo apt-get install -y python3-torch >&2; fi
fi

bench=$root/build/bin/dwconv-cpu-bench
if [[ ! -x $bench ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$root/build" -j "$(nproc)" --target dwconv-cpu-bench >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=$threads

measure() {
  # Shape by shape, ours then PyTorch, so that both see the same machine state on a shared host.
  for k in "${!shapes[@]}"; do
    "$bench" --threads "$threads" --reps "$reps" --offset "$offset" --shapes "${shapes[$k]}" --csv "$tmp/ours.$k.csv"
    "$py" "$root/bench/dwconv_cpu_torch.py" --threads "$threads" --reps "$reps" --shapes "${shapes[$k]}" \
      --csv "$tmp/torch.$k.csv"
    echo
  done
  for side in ours torch; do
    head -1 "$tmp/$side.0.csv" >"$tmp/$side.csv"
    for k in "${!shapes[@]}"; do tail -n +2 "$tmp/$side.$k.csv" >>"$tmp/$side.csv"; done
  done
  "$py" - "$tmp/ours.csv" "$tmp/torch.csv" <<'PY'
import csv, sys
ours = list(csv.DictReader(open(sys.argv[1])))
torch = list(csv.DictReader(open(sys.argv[2])))
print("ms: median wall-clock; x = PyTorch / ours (> 1: ours faster); x cpu = the same by median process CPU time per")
print("thread (less sensitive to other jobs on the host); f+b = forward + backward-data + backward-filter")
print()
print("| shape | PyTorch fwd ms | ours fwd ms | fwd x | fwd x cpu | PyTorch f+b ms | ours f+b ms | f+b x | f+b x cpu |")
print("|---|---|---|---|---|---|---|---|---|")
for o, t in zip(ours, torch):
    label = f"{o['n']}x{o['h']}x{o['w']}x{o['c']} F{o['fh']}x{o['fw']}"
    label += f" s{o['stride']}" if o['stride'] != '1' else ''
    r = lambda key: float(t[key]) / float(o[key])
    print(f"| {label} | {float(t['fwd_ms']):.1f} | {float(o['fwd_ms']):.1f} | {r('fwd_ms'):.2f} | "
          f"{r('fwd_cpu_ms'):.2f} | {float(t['fwdbwd_ms']):.1f} | {float(o['fwdbwd_ms']):.1f} | "
          f"{r('fwdbwd_ms'):.2f} | {r('fwdbwd_cpu_ms'):.2f} |")
PY
}

if [[ -z $out_dir ]]; then
  measure
  exit 0
fi
mkdir -p "$out_dir" || { echo "dwconv_cpu_vs_torch.sh: --out: cannot create '$out_dir'" >&2; exit 2; }
# shellcheck source=bench/run_log.sh
source "$root/bench/run_log.sh"
cmd="bench/dwconv_cpu_vs_torch.sh --threads $threads --reps $reps --offset $offset --shapes ${shapes[*]}"
logged_run "$tmp/run.log" "$cmd" measure || exit 1
# One CSV of both sides' rows (a first column 'side'), and the log.
"$py" - "$tmp/ours.csv" "$tmp/torch.csv" "$tmp/both.csv" <<'PY'
import csv, sys
sides = {name: list(csv.DictReader(open(path))) for name, path in (('ours', sys.argv[1]), ('torch', sys.argv[2]))}
fields = ['side'] + list(dict.fromkeys(k for rows in sides.values() for r in rows for k in r))
with open(sys.argv[3], 'w', newline='') as f:
    w = csv.DictWriter(f, fields)
    w.writeheader()
    for name, rows in sides.items():
        for r in rows:
            w.writerow({'side': name, **r})
PY
keep_gz "$tmp/both.csv" "$out_dir/dwconv-cpu.csv.gz"
keep_gz "$tmp/run.log" "$out_dir/dwconv-cpu.log.gz"
