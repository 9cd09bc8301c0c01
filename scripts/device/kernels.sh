#!/usr/bin/env bash
# GPU machine: the GPU suites of every bundled test binary, then the depthwise kernels' own times (no cuDNN, no
# accuracy check) on this build and on a baseline build, alternating, for the no-regression check of a change.
# usage (repo root): scripts/device/kernels.sh [SECONDS]   carry .device/bundle.tar.xz (scripts/device-bundle.sh)
#   and .device/before.tar.xz (before/bin/dwconv-bench + before/lib/libcnn.so of the baseline tree). Stops starting
#   new sweeps after SECONDS (default 420). Logs and CSVs: $OUT/kernels-logs.tgz; the comparison is printed last.
set -u
budget=${1:-420}
L=/tmp/kernels-logs
rm -rf "$L" && mkdir -p "$L"
trap 'tar -C /tmp -czf "$OUT/kernels-logs.tgz" kernels-logs' EXIT
for t in bundle before; do
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' ".device/$t.tar.xz" .device
done
source .device/bundle/env.sh
export OMP_WAIT_POLICY=passive CNN_SOURCE_DIR=$PWD
nvidia-smi -L | tee "$L/nvidia-smi.txt"
SECONDS=0
for t in .device/bundle/bin/*_tests; do
  name=$(basename "$t")
  timeout 300 "$t" --gtest_filter='*Gpu*' > "$L/$name.log" 2>&1
  echo "$name rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)  \]' "$L/$name.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$L/$name.log" | head -5
done
# One sweep: build (before|after), dtype, round; the 3 maps x 8 filters x 3 ops of the benchmark's defaults.
sweep() {
  local side=$1 dtype=$2 round=$3 accum=${4:-fp32} ops=${5:-fwd,bdc,bfc} bin=.device/bundle/bin/dwconv-bench lib=
  [ "$side" = before ] && bin=.device/before/bin/dwconv-bench lib=$PWD/.device/before/lib
  [ "$SECONDS" -lt "$budget" ] || { echo "skip $side $dtype $accum $round (budget)"; return; }
  local tag=${side}_${dtype}_${accum}_$round
  LD_LIBRARY_PATH=${lib:+$lib:}$LD_LIBRARY_PATH timeout 240 "$bin" --dtype "$dtype" --bfc-accum "$accum" --op "$ops" \
    --no-cudnn --no-check --reps 10 --warmup 3 --out "$L/$tag.csv" > "$L/$tag.log" 2>&1
  echo "$tag rc=$? ${SECONDS}s"
}
for round in 1 2; do
  for dtype in f32 f16; do sweep before $dtype $round; sweep after $dtype $round; done
  sweep before f16 "$round" ha bfc; sweep after f16 "$round" ha bfc
done
python3 bench/dwconv_ab.py "$L"/before_*.csv -- "$L"/after_*.csv | tee "$L/ab.txt"
