#!/usr/bin/env bash
# End-to-end training speed on one GPU, ours and PyTorch in the same call: for every model and precision,
# `cnn-train --synthetic` (median ms/step over --steps steps each waited for, after --warmup untimed ones; peak device
# memory) and bench/e2e_torch.py (the same numbers for timm / bench/torch_models), then the loss check of each
# --loss-check model (bench/e2e_loss_check.py: both sides train from the same exported weights on the same batches).
# Writes OUT/e2e.csv, OUT/loss_check.jsonl, OUT/e2e-h200.md (bench/e2e_report.py) and the logs under OUT/logs.
# usage: bench/e2e.sh [--models a,b,...] [--precisions fp32,amp] [--steps 20] [--warmup 3] [--batch-size 64]
#                     [--image-size 256] [--loss-check MODEL,...|none] [--no-torch] [--out DIR]
# Needs cnn-train ($CNN_TRAIN, default build/bin/cnn-train) and python3 with torch, timm and safetensors.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
all_models=convnext_tiny,convnext_tiny_k9,convnext_tiny_k31,convmixer_768_32,convmixer_1536_20,replknet_31b,slak_tiny,slak_tiny_dense
models=$all_models precisions=fp32,amp steps=20 warmup=3 batch=64 size=256 loss_model=convmixer_768_32 torch=1
out=${OUT:-$root/.device/e2e}
die() { echo "bench/e2e.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --models) models=${2:?--models needs a value}; shift 2 ;;
    --precisions) precisions=${2:?}; shift 2 ;;
    --steps) steps=${2:?}; shift 2 ;;
    --warmup) warmup=${2:?}; shift 2 ;;
    --batch-size) batch=${2:?}; shift 2 ;;
    --image-size) size=${2:?}; shift 2 ;;
    --loss-check) loss_model=${2:?}; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --out) out=${2:?}; shift 2 ;;
    *) die "unknown option '$1' (see the usage in the header)" ;;
  esac
done
for v in "$steps" "$warmup" "$batch" "$size"; do [[ "$v" =~ ^[0-9]+$ ]] || die "expected a whole number, got '$v'"; done
[ "$steps" -ge 20 ] || echo "bench/e2e.sh: warning: --steps $steps is below the 20 steps the results page asks for" >&2
for p in ${precisions//,/ }; do [ "$p" = fp32 ] || [ "$p" = amp ] || die "--precisions: expected fp32 and/or amp, got '$p'"; done
for m in ${models//,/ }; do [ -f "$root/configs/models/$m.yaml" ] || die "--models: no configs/models/$m.yaml"; done
if [ "$loss_model" != none ]; then
  for m in ${loss_model//,/ }; do
    [ -f "$root/configs/models/$m.yaml" ] || die "--loss-check: no configs/models/$m.yaml"
  done
fi
train=${CNN_TRAIN:-$root/build/bin/cnn-train}
[ -x "$train" ] || die "no cnn-train at $train (build it, or set CNN_TRAIN)"
export CNN_SOURCE_DIR=$root OMP_WAIT_POLICY=passive
mkdir -p "$out/logs"
status=0
SECONDS=0

# Ours: one process per model and precision; the benchmark line carries mean, median and peak memory.
ours_jsonl="$out/ours.jsonl"
: > "$ours_jsonl"
for m in ${models//,/ }; do
  for p in ${precisions//,/ }; do
    log="$out/logs/ours_${m}_$p.log"
    flags=(--model "$m" --synthetic --steps "$steps" --bench-warmup "$warmup" --batch-size "$batch" --image-size "$size"
      --device cuda)
    [ "$p" = amp ] && flags+=(--amp)
    timeout 300 "$train" "${flags[@]}" > "$log" 2>&1
    rc=$?
    line=$(grep -E '^benchmark: ' "$log" | tail -1)
    if [ $rc -eq 0 ] && [ -n "$line" ]; then
      mean=$(sed -E 's/.*: ([0-9.]+) ms\/step, .*/\1/' <<< "$line")
      median=$(sed -E 's/.*median ([0-9.]+) ms\/step.*/\1/' <<< "$line")
      peak=$(sed -E 's/.*peak device memory ([0-9.]+) MiB.*/\1/' <<< "$line")
      printf '{"model": "%s", "precision": "%s", "median_ms": %s, "mean_ms": %s, "peak_mib": %s}\n' \
        "$m" "$p" "$median" "$mean" "$peak" >> "$ours_jsonl"
    else
      status=1
      err=$(tail -1 "$log" | tr -d '"\\' | cut -c1-300)
      printf '{"model": "%s", "precision": "%s", "error": "rc=%s: %s"}\n' "$m" "$p" "$rc" "$err" >> "$ours_jsonl"
    fi
    echo "ours $m $p rc=$rc ${SECONDS}s: ${line#benchmark: }"
  done
done

# Loss agreement from the same weights on the same batches (FP32 and AMP, 3 steps, constant learning rate, no
# stochastic depth: its random masks cannot be drawn alike on both sides, and cnn-train --trace-dir refuses it).
loss_jsonl="$out/loss_check.jsonl"
: > "$loss_jsonl"
if [ "$loss_model" != none ] && [ "$torch" -eq 1 ]; then
  for lm in ${loss_model//,/ }; do
    for p in ${precisions//,/ }; do
      trace=$(mktemp -d /tmp/e2e-trace.XXXXXX)
      flags=(--model "$lm" --synthetic --steps 3 --bench-warmup 0 --batch-size "$batch" --image-size "$size"
        --device cuda --sched constant --lr 1e-3 --drop-path 0 --trace-dir "$trace/t")
      [ "$p" = amp ] && flags+=(--amp)
      logs="logs/trace_${lm}_$p.log, logs/loss_check_${lm}_$p.log"
      timeout 300 "$train" "${flags[@]}" > "$out/logs/trace_${lm}_$p.log" 2>&1 &&
        timeout 300 python3 "$root/bench/e2e_loss_check.py" "$trace/t" --model "$lm" --lr 1e-3 \
          $([ "$p" = amp ] && echo --amp) >> "$loss_jsonl" 2> "$out/logs/loss_check_${lm}_$p.log"
      rc=$?
      [ $rc -eq 0 ] || { status=1; echo "{\"model\": \"$lm\", \"precision\": \"$p\", \"error\": \"rc=$rc ($logs)\"}" >> "$loss_jsonl"; }
      rm -rf "$trace"
      echo "loss check $lm $p rc=$rc ${SECONDS}s"
    done
  done
fi

# PyTorch: one process for all models (a failing model is reported and the rest still run).
torch_jsonl="$out/torch.jsonl"
: > "$torch_jsonl"
if [ "$torch" -eq 1 ]; then
  timeout 900 python3 "$root/bench/e2e_torch.py" --models "$models" --precisions "$precisions" --steps "$steps" \
    --warmup "$warmup" --batch-size "$batch" --image-size "$size" > "$torch_jsonl" 2> "$out/logs/torch.log"
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "torch rc=$rc ${SECONDS}s"
  grep -h '"error"' "$torch_jsonl" | cut -c1-400
fi

# The build's identity: CNN_COMMIT, else the commit a device bundle records beside its bin/ (scripts/device-bundle.sh;
# the tree copied to the GPU machine may carry a different git HEAD), else this checkout's HEAD.
bundle_commit="$(dirname "$train")/../commit"
if [ -n "${CNN_COMMIT:-}" ]; then commit=$CNN_COMMIT
elif [ -f "$bundle_commit" ]; then commit=$(cut -c1-7 "$bundle_commit")$(grep -o ' + uncommitted changes' "$bundle_commit")
else commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown); fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
cmd="bench/e2e.sh --models $models --precisions $precisions --steps $steps --warmup $warmup --batch-size $batch --image-size $size --loss-check $loss_model"
python3 "$root/bench/e2e_report.py" merge "$ours_jsonl" "$torch_jsonl" -o "$out/e2e.csv" &&
  python3 "$root/bench/e2e_report.py" markdown "$out/e2e.csv" --loss "$loss_jsonl" --command "$cmd" \
    --build "cnn $commit (Release, sm_90)" --machine "${gpu:-unknown GPU}" -o "$out/e2e-h200.md" || status=1
echo
echo "==== bench/e2e.sh (${SECONDS}s; $out) ===="
if [ -f "$out/e2e.csv" ]; then  # aligned where the machine has column(1) (bsdextrautils), as it is otherwise
  if command -v column > /dev/null; then
    column -s, -t < "$out/e2e.csv" | cut -c1-160
  else
    cut -c1-160 "$out/e2e.csv"
  fi
fi
cat "$loss_jsonl" | cut -c1-400
exit $status
