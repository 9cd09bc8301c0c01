#!/usr/bin/env bash
# The one command for the GPU machine: runs every bundled test binary's GPU suites (--gtest_filter='*Gpu*'), then
# dwconv-bench with the given arguments; logs and the CSV go to $OUT, a short summary is printed last.
# usage: scripts/gpu-run.sh [dwconv-bench args...]   (bundle built here first by scripts/device-bundle.sh)
set -uo pipefail
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-bundle-env.sh"
nvidia-smi -L 2>&1 | tee "$out/nvidia-smi.txt"

summary=()
status=0
for t in "$bundle"/bin/*_tests; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  "$t" --gtest_filter='*Gpu*' 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || status=1
  passed=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$out/$name.log" | grep -Eo '[0-9]+$' || true)
  failed=$(grep -Eo '^\[  FAILED  \] [0-9]+ test' "$out/$name.log" | grep -Eo '[0-9]+' || true)
  skipped=$(grep -Eo '^\[  SKIPPED \] [0-9]+' "$out/$name.log" | grep -Eo '[0-9]+$' || true)
  summary+=("$name: rc=$rc passed=${passed:-0} failed=${failed:-0} skipped=${skipped:-0}")
done

bench="$bundle/bin/dwconv-bench"
if [ -x "$bench" ]; then
  args=("$@")
  has_out=0
  for a in "${args[@]}"; do
    case "$a" in --out | --out=*) has_out=1 ;; esac
  done
  [ "$has_out" -eq 1 ] || args+=(--out "$out/dwconv-bench.csv")
  "$bench" "${args[@]}" 2>&1 | tee "$out/dwconv-bench.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || status=1
  summary+=("dwconv-bench ${*}: rc=$rc")
  while IFS= read -r line; do summary+=("  $line"); done < <(grep -E '^(summary |selftest: |problem: |csv: )' \
    "$out/dwconv-bench.log")
else
  summary+=("dwconv-bench: not in the bundle")
  status=1
fi

echo
echo "==== gpu-run summary (logs in $out) ===="
printf '%s\n' "${summary[@]}"
exit "$status"
