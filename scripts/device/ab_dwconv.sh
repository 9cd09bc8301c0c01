#!/usr/bin/env bash
# A/B of two builds' depthwise kernels at chosen points, in one GPU call: build B's depthwise GPU tests, then
# dwconv-bench (no cuDNN, no accuracy check) with A, B, A, B per data type, so each pair runs back to back on the same
# machine; bench/dwconv_ab.py then prints, per point, the speed ratio A / B (above 1: B is faster).
# usage: scripts/device/ab_dwconv.sh A.tar.xz B.tar.xz DTYPES MAPS FILTERS [OPS]
#   A, B: bundles from scripts/device-bundle.sh; A may be its libcnn.so alone, or A a pair from scripts/ab-pack.sh
#   and B "-" (see ab_bundles.sh). DTYPES: f16, f32
#   or f16,f32.
#   MAPS, FILTERS, OPS: dwconv-bench's --maps, --filters and --op (OPS defaults to fwd,bdc,bfc).
# Results under $OUT: ab-dwconv.tgz (CSVs, logs); the test summary and the comparison last.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/device/ab_bundles.sh
source "$root/scripts/device/ab_bundles.sh"
ab_start ab-dwconv dwconv-bench 5 \
  "scripts/device/ab_dwconv.sh A.tar.xz B.tar.xz DTYPES MAPS FILTERS [OPS] (two bundle archives)" "$@"
dtypes=$3 maps=$4 filters=$5 ops=${6:-fwd,bdc,bfc}
run() { ab_run "$work" "$@"; }  # run SIDE LIMIT_S command...
run b 200 "$work/b/bundle/bin/kernels_tests" --gtest_filter='Dwconv*Gpu*' > "$work/b_kernels_tests.log" 2>&1
tests="B kernels_tests Dwconv*Gpu* rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$work/b_kernels_tests.log" | tr '\n' ' ')"
for round in 1 2; do
  for dtype in ${dtypes//,/ }; do
    for side in a b; do
      tag=${side^^}_${dtype}_fp32_$round
      run "$side" 120 "$work/$side/bundle/bin/dwconv-bench" --dtype "$dtype" --op "$ops" --maps "$maps" \
        --filters "$filters" --no-cudnn --no-check --reps 10 --warmup 3 --out "$work/$tag.csv" > "$work/$tag.log" 2>&1
      echo "$tag rc=$?"
    done
  done
done
echo "==== scripts/device/ab_dwconv.sh: A $(cut -c1-12 "$work/commit_a.txt") B $(cut -c1-12 "$work/commit_b.txt") ===="
echo "$tests"
grep -E '^\[  FAILED  \] [A-Z]' "$work/b_kernels_tests.log" | head -8
python3 bench/dwconv_ab.py --every "$work"/A_*.csv -- "$work"/B_*.csv | tee "$work/ab.txt"
