#!/usr/bin/env bash
# A/B of two builds on whole training steps, in one GPU call: the GPU suites (core, optim, layers, models, kernels) of
# build B, then `cnn-train --profile 5` of each model under AMP (batch 64, 256x256, synthetic data) with A, B, A, B, so
# each pair runs back to back on the same machine. The profiles say where a difference sits (per op kind and layer).
# usage: scripts/device/ab_train.sh A.tar.xz B.tar.xz MODEL...
#   A, B: bundles from scripts/device-bundle.sh (e.g. main's and a branch's, carried). Two whole bundles overrun the
#   64 MiB carry: A may be its bundle/commit and bundle/lib/libcnn.so alone, or A a pair from scripts/ab-pack.sh and
#   B "-" (see ab_bundles.sh).
# Results under $OUT: ab-train.tgz (suite logs, profiles); a summary last (the step and the op kinds, A then B).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/device/ab_bundles.sh
source "$root/scripts/device/ab_bundles.sh"
ab_start ab-train cnn-train 3 \
  "scripts/device/ab_train.sh A.tar.xz B.tar.xz MODEL... (two bundle archives, then models)" "$@"
shift 2
summary=()
run() { ab_run "$work" "$@"; }  # run SIDE LIMIT_S command...
for t in core optim layers models kernels; do
  run b 200 "$work/b/bundle/bin/${t}_tests" --gtest_filter='*Gpu*' > "$work/b_${t}_tests.log" 2>&1
  summary+=("B ${t}_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$work/b_${t}_tests.log" | tr '\n' ' ')")
done
for m in "$@"; do
  for round in 1 2; do
    for side in a b; do
      f="$work/profile_${m}_${side}${round}.txt"
      run "$side" 150 "$work/$side/bundle/bin/cnn-train" --model "$m" --synthetic --amp --device cuda --batch-size 64 \
        --image-size 256 --profile 5 --bench-warmup 2 > "$f" 2>&1
      summary+=("$m ${side^^}$round rc=$? $(grep -m1 '^step ' "$f" | cut -c1-60)")
    done
  done
done
echo "==== scripts/device/ab_train.sh: A $(cut -c1-12 "$work/commit_a.txt") B $(cut -c1-12 "$work/commit_b.txt") ===="
printf '%s\n' "${summary[@]}"
for m in "$@"; do
  for side in a b; do
    echo "-- $m ${side^^}2: op kinds (fwd, bwd, total ms)"
    sed -n '/^by op kind/,/^by module/p' "$work/profile_${m}_${side}2.txt" | sed -n '3,14p' | cut -c1-100
  done
done
