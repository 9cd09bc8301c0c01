#!/usr/bin/env bash
# CPU depthwise conv, FP32: this project's backend (apps/dwconv-cpu-bench) vs PyTorch (bench/dwconv_cpu_torch.py)
# on the same shapes and thread count; prints both tables and a side-by-side one with speedups (ours / PyTorch).
# usage: bench/dwconv_cpu_vs_torch.sh [--threads T] [--reps R] [--shapes N,H,W,C,F ...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
threads=2
reps=5
shapes=(32,56,56,128,3 32,56,56,128,7 32,56,56,128,13 32,56,56,128,31)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --shapes) shift; shapes=(); while [[ $# -gt 0 && $1 != --* ]]; do shapes+=("$1"); shift; done ;;
    *) echo "dwconv_cpu_vs_torch.sh: unknown argument '$1' (expected --threads, --reps or --shapes)" >&2; exit 2 ;;
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
"$bench" --threads "$threads" --reps "$reps" --shapes "${shapes[@]}" --csv "$tmp/ours.csv"
echo
"$py" "$root/bench/dwconv_cpu_torch.py" --threads "$threads" --reps "$reps" --shapes "${shapes[@]}" --csv "$tmp/torch.csv"
echo
"$py" - "$tmp/ours.csv" "$tmp/torch.csv" <<'PY'
import csv, sys
ours = list(csv.DictReader(open(sys.argv[1])))
torch = list(csv.DictReader(open(sys.argv[2])))
print(f"{'shape':<24} {'torch fwd GF/s':>14} {'ours fwd GF/s':>13} {'fwd x':>6}   "
      f"{'torch f+b ms':>12} {'ours f+b ms':>11} {'f+b x':>6}")
for o, t in zip(ours, torch):
    label = f"{o['n']}x{o['h']}x{o['w']}x{o['c']} F{o['fh']}x{o['fw']} s{o['stride']}"
    fx = float(t['fwd_ms']) / float(o['fwd_ms'])
    bx = float(t['fwdbwd_ms']) / float(o['fwdbwd_ms'])
    print(f"{label:<24} {float(t['fwd_gflops']):14.1f} {float(o['fwd_gflops']):13.1f} {fx:6.2f}   "
          f"{float(t['fwdbwd_ms']):12.1f} {float(o['fwdbwd_ms']):11.1f} {bx:6.2f}")
PY
