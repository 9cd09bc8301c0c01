#!/usr/bin/env bash
# Data loader throughput (apps/data-bench): one synthetic JPEG tree, then the training augmentation in FP32, the
# evaluation transform and FP16 batches on the host, and with --device cuda FP16 batches staged to the GPU;
# prints a markdown table of images/s and CPU cost per image.
# usage: bench/data_pipeline.sh [--workers N] [--images N] [--batch-size B] [--seconds S] [--device cpu|cuda]
#                               [--bin DIR] [--out DIR]
# --bin DIR: where data-bench is (default build/bin, built if missing; on the GPU machine .device/bundle/bin).
# --out DIR keeps the run's raw output: DIR/data-pipeline.log.gz (the machine, its load, every line printed), the
# file docs/perf/data-pipeline.md keeps beside its table.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "data_pipeline.sh: $*" >&2; exit 2; }
workers=$(nproc) images=1000 batch=128 seconds=20 device=cpu bin='' out_dir=''
positive() { [[ $2 =~ ^[0-9]+$ && $2 -gt 0 ]] || die "$1: expected a positive integer, got '$2'"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --workers) positive "$1" "${2:-}"; workers=$2; shift 2 ;;
    --images) positive "$1" "${2:-}"; images=$2; shift 2 ;;
    --batch-size) positive "$1" "${2:-}"; batch=$2; shift 2 ;;
    --seconds) positive "$1" "${2:-}"; seconds=$2; shift 2 ;;
    --device)
      device=${2:-}
      [[ $device == cpu || $device == cuda ]] || die "--device: expected cpu or cuda, got '$device'"
      shift 2 ;;
    --bin) bin=${2:?--bin needs a directory}; shift 2 ;;
    --out) out_dir=${2:?--out needs a directory}; shift 2 ;;
    *) die "unknown argument '$1' (expected --workers, --images, --batch-size, --seconds, --device, --bin or --out)" ;;
  esac
done
if [[ -z $bin ]]; then
  bin=$root/build/bin
  [[ -x $bin/data-bench ]] || cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc)" --target data-bench >/dev/null
fi
[[ -x $bin/data-bench ]] || die "no data-bench in '$bin'"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

measure() {
  local common=(--workers "$workers" --batch-size "$batch" --image-size 224 --seconds "$seconds")
  "$bin/data-bench" --synthetic-jpeg "$images" --keep "$tmp/tree" "${common[@]}" --augment train --dtype f32
  "$bin/data-bench" --data-dir "$tmp/tree" "${common[@]}" --augment eval --dtype f32
  "$bin/data-bench" --data-dir "$tmp/tree" "${common[@]}" --augment train --dtype f16
  if [[ $device == cuda ]]; then
    "$bin/data-bench" --data-dir "$tmp/tree" "${common[@]}" --augment train --dtype f16 --device cuda
  fi
}

# shellcheck source=bench/run_log.sh
source "$root/bench/run_log.sh"
cmd="bench/data_pipeline.sh --workers $workers --images $images --batch-size $batch --seconds $seconds --device $device"
logged_run "$tmp/run.log" "$cmd" measure || die "a run failed (output above)"

python3 - "$tmp/run.log" <<'PY'
import re, sys
rows, cfg = [], None
for line in open(sys.argv[1]):
    m = re.match(r'data-bench: .*workers (\d+), .*augment (\w+), (\w+) on ([^,]+),', line)
    if m:
        cfg = {'workers': m.group(1), 'augment': m.group(2), 'dtype': m.group(3), 'device': m.group(4)}
    m = re.match(r'\d+ images in [\d.]+ s: ([\d.]+) images/s', line)
    if m and cfg:
        cfg['ips'] = m.group(1)
    m = re.match(r'process CPU [\d.]+ s \(([\d.]+) cores busy\): ([\d.]+) ms CPU per image, ([\d.]+) images/s', line)
    if m and cfg and 'ips' in cfg:
        rows.append({**cfg, 'busy': m.group(1), 'ms': m.group(2), 'per_core': m.group(3)})
        cfg = None
if not rows:
    sys.exit('data_pipeline.sh: no result lines in the output')
print()
print('| workers | augment | dtype | device | images/s (wall) | cores busy | ms CPU / image | images/s per busy core |')
print('|---|---|---|---|---|---|---|---|')
for r in rows:
    print(f"| {r['workers']} | {r['augment']} | {r['dtype']} | {r['device']} | {r['ips']} | {r['busy']} | {r['ms']} | "
          f"{r['per_core']} |")
PY

[[ -z $out_dir ]] || keep_gz "$tmp/run.log" "$out_dir/data-pipeline.log.gz"
