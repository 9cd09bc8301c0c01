#!/usr/bin/env bash
# CPU training step, this project against PyTorch on the same cores, back to back: ConvMixer-128/6 (7x7 depthwise,
# 2x2 patches) on synthetic 28x28x1 batches of 128, full step (forward, cross-entropy, backward, AdamW).
# Ours: cnn-train --synthetic; PyTorch: bench/convmixer_cpu_torch.py with Debian's python3-torch, NCHW and
# channels_last. Each round runs the three in turn; prints a markdown table of every run.
# usage: bench/train_cpu_vs_torch.sh [--rounds R] [--steps S] [--warmup W] [--threads T] [--out DIR]
# --out DIR keeps the run's raw output: DIR/train-cpu.log.gz (the machine, its load, every line printed), the file
# docs/perf/train-cpu.md keeps beside its table.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "train_cpu_vs_torch.sh: $*" >&2; exit 2; }
rounds=2 steps=20 warmup=3 threads=2 out_dir=''
positive() { [[ $2 =~ ^[0-9]+$ && $2 -gt 0 ]] || die "$1: expected a positive integer, got '$2'"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) positive "$1" "${2:-}"; rounds=$2; shift 2 ;;
    --steps) positive "$1" "${2:-}"; steps=$2; shift 2 ;;
    --warmup) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--warmup: expected an integer >= 0, got '${2:-}'"; warmup=$2; shift 2 ;;
    --threads) positive "$1" "${2:-}"; threads=$2; shift 2 ;;
    --out) out_dir=${2:?--out needs a directory}; shift 2 ;;
    *) die "unknown argument '$1' (expected --rounds, --steps, --warmup, --threads or --out)" ;;
  esac
done

py=/usr/bin/python3  # Debian's PyTorch runs with the system interpreter, not a pyenv/venv one first in PATH
"$py" -c "import torch" 2>/dev/null || die "$py has no torch: apt-get install python3-torch"
train=$root/build/bin/cnn-train
[[ -x $train ]] || cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j "$(nproc)" --target cnn-train >/dev/null
export OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=passive
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {
  for ((r = 1; r <= rounds; ++r)); do
    echo "round $r"
    "$train" --model convmixer_128_6_k7_p2 --synthetic --steps "$steps" --bench-warmup "$warmup" --device cpu
    "$py" "$root/bench/convmixer_cpu_torch.py" --steps "$steps" --warmup "$warmup" --threads "$threads"
    "$py" "$root/bench/convmixer_cpu_torch.py" --steps "$steps" --warmup "$warmup" --threads "$threads" --channels-last
  done
}

# shellcheck source=bench/run_log.sh
source "$root/bench/run_log.sh"
cmd="bench/train_cpu_vs_torch.sh --rounds $rounds --steps $steps --warmup $warmup --threads $threads"
logged_run "$tmp/run.log" "$cmd" measure || die "a run failed (output above)"

"$py" - "$tmp/run.log" "$threads" <<'PY'
import re, sys
rows = []
for line in open(sys.argv[1]):
    m = re.search(r'^(benchmark|pytorch [^:]*): .*?, (\S+) threads: ([\d.]+) ms/step, ([\d.]+) img/s '
                  r'.*CPU time ([\d.]+) s', line)
    if not m:
        continue
    who = 'cnn-train (NHWC, Flash-DWC CPU kernels, OpenBLAS)' if m.group(1) == 'benchmark' else \
        f"PyTorch {m.group(1).split()[1]} {'channels_last' if 'channels_last' in line else 'NCHW'}"
    rows.append((who, m.group(3), m.group(4), m.group(5)))
if not rows:
    sys.exit('train_cpu_vs_torch.sh: no timing lines in the output')
print()
print(f'| implementation | ms/step | images/s | CPU time of the timed steps (s) |')
print('|---|---|---|---|')
for who in dict.fromkeys(r[0] for r in rows):
    mine = [r for r in rows if r[0] == who]
    print(f"| {who} | {' / '.join(r[1] for r in mine)} | {' / '.join(r[2] for r in mine)} | "
          f"{' / '.join(r[3] for r in mine)} |")
PY

[[ -z $out_dir ]] || keep_gz "$tmp/run.log" "$out_dir/train-cpu.log.gz"
