#!/usr/bin/env bash
# GPU call for the end-to-end work (issue 22): the GPU suites of core, layers and models (what the fused BatchNorm,
# the packed elementwise kernels, in-place gradient sums and device copies touch), `cnn-train --profile` of convmixer_768_32 and slak_tiny under AMP, then bench/e2e.sh on every model
# (FP32 and AMP, ours and PyTorch, the loss check). Results under $OUT: e2e.csv, e2e-h200.md, loss_check.jsonl,
# profile_*.txt, e2e-logs.tgz; a short summary last.
# usage: scripts/device/e2e.sh [bench/e2e.sh options, e.g. --models convmixer_768_32,slak_tiny]
# Environment: E2E_PROFILE (models to profile, default "convmixer_768_32 slak_tiny"), E2E_SECONDS (bench/e2e.sh's
# limit, default 480).
# Carry: .device/bundle.tar.xz (scripts/device-bundle.sh); the results page names the bundle's commit.
set -uo pipefail
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu-bundle-env.sh"
cd "$root"
bin="$bundle/bin"
logs=/tmp/e2e-logs
rm -rf "$logs"
mkdir -p "$logs"
trap 'tar -C /tmp -czf "$out/e2e-logs.tgz" e2e-logs' EXIT
export CNN_SOURCE_DIR=$root OMP_WAIT_POLICY=passive
SECONDS=0
summary=()
nvidia-smi -L > "$logs/nvidia-smi.txt" 2>&1

for t in core layers models; do
  timeout 100 "$bin/${t}_tests" --gtest_filter='*Gpu*' > "$logs/${t}_tests.log" 2>&1
  summary+=("${t}_tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$logs/${t}_tests.log" | tr '\n' ' ')")
  grep -E '^\[  FAILED' "$logs/${t}_tests.log" | head -5 >> "$logs/failures.txt"
done

for m in ${E2E_PROFILE-convmixer_768_32 slak_tiny}; do
  timeout 150 "$bin/cnn-train" --model "$m" --synthetic --amp --device cuda --batch-size 64 --image-size 256 \
    --profile 5 --bench-warmup 2 > "$out/profile_${m}_amp.txt" 2>&1
  summary+=("profile $m amp rc=$? ${SECONDS}s: $(grep -m1 '^step ' "$out/profile_${m}_amp.txt" | cut -c1-150)")
done

CNN_TRAIN="$bin/cnn-train" timeout "${E2E_SECONDS:-480}" "$root/bench/e2e.sh" --steps 20 --warmup 2 --out "$logs/e2e" "$@" \
  > "$logs/e2e.log" 2>&1
rc=$?
if [ ! -f "$logs/e2e/e2e.csv" ] && [ -f "$logs/e2e/ours.jsonl" ]; then  # cut short: tabulate what finished
  touch "$logs/e2e/torch.jsonl" "$logs/e2e/loss_check.jsonl"
  python3 bench/e2e_report.py merge "$logs/e2e/ours.jsonl" "$logs/e2e/torch.jsonl" -o "$logs/e2e/e2e.csv" &&
    python3 bench/e2e_report.py markdown "$logs/e2e/e2e.csv" --loss "$logs/e2e/loss_check.jsonl" \
      --command "bench/e2e.sh --steps 20 --warmup 2 (cut short)" --build "cnn ${CNN_COMMIT:-$(cut -c1-7 "$bundle/commit" 2>/dev/null || echo unknown)}" \
      --machine "$(head -1 "$logs/nvidia-smi.txt")" -o "$logs/e2e/e2e-h200.md"
fi
for f in e2e.csv e2e-h200.md loss_check.jsonl; do [ -f "$logs/e2e/$f" ] && cp "$logs/e2e/$f" "$out/"; done
summary+=("bench/e2e.sh rc=$rc ${SECONDS}s")

echo "==== scripts/device/e2e.sh (${SECONDS}s; results in $out) ===="
printf '%s\n' "${summary[@]}"
[ -s "$logs/failures.txt" ] && cat "$logs/failures.txt"
[ -f "$out/e2e.csv" ] && cut -d, -f1-10 "$out/e2e.csv"
[ -f "$out/loss_check.jsonl" ] && cut -c1-300 "$out/loss_check.jsonl"
