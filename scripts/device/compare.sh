#!/usr/bin/env bash
# cnn-compare on the GPU machine (from the repo root, with the carried bundle and Fashion-MNIST subset):
#   1. ConvNeXt-T (7x7) for 64x64 gray images, arms fp32,amp-fp32,amp-ha (AMP fidelity and HA vs FP32 accumulation);
#   2. a small RepLKNet (31/29/27/13 kernels), arms amp-fp32,amp-ha;
# both on Fashion-MNIST upscaled to 64x64 (the subset made here by scripts/device/fmnist_subset.py .device/fmnist
# 12000 2000, carried as .device/fmnist). Epochs are fitted to a time budget from a short benchmark of each model;
# a hard timeout guards each comparison (a cut one is resumable and its report is redrawn with --plot-only).
# Writes $OUT/compare-gpu.tar.gz (both comparison folders without checkpoints, logs) and prints the reports last.
# usage: scripts/device/compare.sh     (CNN_COMPARE_DATA overrides the data folder; budgets in seconds:
#        CONVNEXT_BUDGET_S=120, REPLKNET_BUDGET_S=75)
set -uo pipefail
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu-bundle-env.sh"
data=${CNN_COMPARE_DATA:-$root/.device/fmnist}
[ -f "$data/train-images-idx3-ubyte.gz" ] || { echo "compare.sh: no Fashion-MNIST subset in $data" >&2; exit 2; }
work=/tmp/cnn-compare-gpu
[ -d /dev/shm ] && work=/dev/shm/cnn-compare-gpu  # checkpoints of ConvNeXt-T are ~330 MB each: keep them in memory
rm -rf "$work" && mkdir -p "$work/logs"
start=$(date +%s)
nvidia-smi -L | tee "$work/logs/nvidia-smi.txt"
train_images=$(python3 -c 'import gzip,struct,sys; print(struct.unpack(">I", gzip.open(sys.argv[1]).read(8)[4:])[0])' \
  "$data/train-images-idx3-ubyte.gz")
batch=128
steps_per_epoch=$((train_images / batch))

# ms per training step of a model (synthetic data, same batch and image size), for fitting the epochs.
bench_ms() {  # model, extra flags...
  local model=$1
  shift
  timeout 60 "$bundle/bin/cnn-train" --model "$model" --synthetic --steps 15 --bench-warmup 5 --batch-size $batch --device cuda \
    "$@" 2>&1 | tee -a "$work/logs/bench.log" | sed -n 's/.*: \([0-9.]*\) ms\/step.*/\1/p'
}

# Epochs that fit `budget` seconds for arms whose step times sum to `sum_ms` (x1.5 for the per-step metrics reads,
# probes and evaluations, 8 s per arm for start-up), at least 2 and at most 30.
fit_epochs() {  # budget_s, sum_ms, arms
  python3 -c 'import sys; b, ms, arms, spe = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
steps = (b - 8 * arms) * 1000 / (1.5 * ms) if ms > 0 else 0
print(max(2, min(30, int(steps // spe))))' "$1" "$2" "$3" "$steps_per_epoch"
}

run_compare() {  # name, model, arms, epochs, timeout_s
  local name=$1 model=$2 arms=$3 epochs=$4 limit=$5
  local eval_every=$steps_per_epoch
  [ "$epochs" -gt 10 ] && eval_every=$((2 * steps_per_epoch))
  echo "== $name: $model, arms $arms, $epochs epochs of $steps_per_epoch steps, timeout ${limit}s"
  timeout "$limit" "$bundle/bin/cnn-compare" --model "$model" --arms "$arms" --out "$work/$name" --device cuda \
    --data-dir "$data" --image-size 64 --batch-size $batch --epochs "$epochs" --lr 1e-3 --min-lr 1e-5 \
    --warmup-epochs 1 --weight-decay 0.05 --clip-grad 1.0 --workers 4 --seed 0 --eval-interval "$eval_every" \
    --checkpoint-interval 1000000 --keep 0 > "$work/logs/$name.log" 2>&1
  local rc=$?
  echo "$name: cnn-compare rc=$rc ($([ "$rc" -eq 124 ] && echo 'timed out: resumable, redraw with --plot-only' || echo done))"
  grep -E '^(verdict|cnn-compare: error)' "$work/logs/$name.log"
}

convnext=configs/models/convnext_tiny_gray64.yaml
replknet=configs/models/replknet_small_gray64.yaml
cx_fp32=$(bench_ms $convnext)
cx_amp=$(bench_ms $convnext --amp)
cx_ha=$(bench_ms $convnext --amp --bfc-accum ha)
lk_amp=$(bench_ms $replknet --amp)
lk_ha=$(bench_ms $replknet --amp --bfc-accum ha)
echo "benchmark ms/step: convnext fp32 ${cx_fp32:-?} amp ${cx_amp:-?} amp-ha ${cx_ha:-?}; replknet amp ${lk_amp:-?} amp-ha ${lk_ha:-?}"
cx_epochs=$(fit_epochs "${CONVNEXT_BUDGET_S:-120}" "$(python3 -c "print(${cx_fp32:-0}+${cx_amp:-0}+${cx_ha:-0})")" 3)
lk_epochs=$(fit_epochs "${REPLKNET_BUDGET_S:-75}" "$(python3 -c "print(${lk_amp:-0}+${lk_ha:-0})")" 2)
run_compare convnext $convnext fp32,amp-fp32,amp-ha "$cx_epochs" 150
run_compare replknet $replknet amp-fp32,amp-ha "$lk_epochs" 100

tar -C "$work" --exclude=checkpoints -czf "$out/compare-gpu.tar.gz" convnext replknet logs
echo "== reports (total $(($(date +%s) - start)) s; curves: cnn-compare --plot-only DIR after unpacking)"
for name in convnext replknet; do
  [ -f "$work/$name/report.md" ] && sed -n '/^| arm/,/^$/p;/^## Largest/,/^!\[/p' "$work/$name/report.md"
done
