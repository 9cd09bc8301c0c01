#!/usr/bin/env bash
# GPU part of the teaching ladder (teach/dwconv/, docs/tutorial/dwconv.md): the GPU ladder tests (teach_tests,
# suites *Gpu*), then dwconv-ladder on its default map (64x64x64x128; 3x3, 7x7, 31x31) for the tutorial's H200
# table. Needs .device/bundle.tar.xz (scripts/device-bundle.sh) carried. Writes under $OUT: teach_tests_gpu.log,
# dwconv-ladder-h200.log, dwconv-ladder-h200.csv; prints a short summary last. About 1-2 minutes.
set -uo pipefail
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu-bundle-env.sh"
export CNN_SOURCE_DIR="$root" OMP_WAIT_POLICY=passive
bin="$bundle/bin"
SECONDS=0
nvidia-smi -L > "$out/nvidia-smi.txt" 2>&1

timeout 150 "$bin/teach_tests" --gtest_filter='*Gpu*' > "$out/teach_tests_gpu.log" 2>&1
rc_tests=$?
t_tests=$SECONDS
timeout 240 "$bin/dwconv-ladder" --device gpu --out "$out/dwconv-ladder-h200.csv" > "$out/dwconv-ladder-h200.log" 2>&1
rc_ladder=$?

echo "==== teach.sh summary (logs in $out, ${SECONDS}s) ===="
echo "teach_tests *Gpu*: rc=$rc_tests ${t_tests}s" \
  "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$out/teach_tests_gpu.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \] [A-Z]|Failure' "$out/teach_tests_gpu.log" | head -5
echo "dwconv-ladder: rc=$rc_ladder"
[ "$rc_ladder" -eq 0 ] || tail -2 "$out/dwconv-ladder-h200.log"
grep -E '^(device|ceilings|summary|csv):' "$out/dwconv-ladder-h200.log"
grep -E '^gpu ' "$out/dwconv-ladder-h200.log" | cut -c5-150
[ "$rc_tests" -eq 0 ] && [ "$rc_ladder" -eq 0 ]
