#!/usr/bin/env bash
# GPU call for the depthwise fast-path bars of issue 22 (odd channel counts and strip filters): SLaK-T's depthwise
# shapes at batch 64, 256x256 images (stage s: 64 / 2^s square maps with 124, 249, 499, 998 channels; strips FKx5
# and 5xFK with FK = 51, 49, 47, 13, the 5x5 small kernel) beside their aligned twins (C rounded up to a multiple of
# 8) and the square filter nearest the strip's taps, FP16 and FP32, three ops; ours with cuDNN's engines (the twins
# without), the FP16 odd-channel points again with pad=off (the direct kernels), and PyTorch on the odd-channel
# points. First the GPU suite
# of the depthwise kernels (the teaching ladder has its own call, scripts/device/teach.sh).
# Results under $OUT: slak-dwconv.tgz (CSVs and logs); a summary last.
# usage: scripts/device/slak_dwconv.sh [--dtype f16|f32] [FILTERS]
#   --dtype: one data type only (the whole list takes about 9 minutes per type, so a call fits one; each type's run
#   then makes its own page). FILTERS (e.g. 5) replaces every stage's filter list: both types fit one call.
# Carry: .device/bundle.tar.xz (scripts/device-bundle.sh).
set -uo pipefail
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu-bundle-env.sh"
cd "$root"
export CNN_SOURCE_DIR=$root OMP_WAIT_POLICY=passive
bin="$bundle/bin"
work=/tmp/slak-dwconv
rm -rf "$work"
mkdir -p "$work"
trap 'tar -C /tmp -czf "$out/slak-dwconv.tgz" slak-dwconv' EXIT
SECONDS=0
summary=()
nvidia-smi -L > "$work/nvidia-smi.txt" 2>&1
cat "$bundle/commit" > "$work/build.txt" 2>/dev/null

end=$((SECONDS + ${SLAK_DWCONV_SECONDS:-560}))  # every step is skipped, and said so, once the time is spent
step() {  # step LIMIT_S TAG command...: runs with the smaller of LIMIT_S and the time left
  local limit=$1 tag=$2 left=$((end - SECONDS)); shift 2
  if [ "$left" -lt 15 ]; then summary+=("not run (time): $tag"); return; fi
  timeout $((limit < left ? limit : left)) "$@"
  summary+=("$tag rc=$? ${SECONDS}s")
}

step 150 "kernels_tests *Gpu*" "$bin/kernels_tests" --gtest_filter='*Gpu*' > "$work/kernels_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED)' "$work/kernels_tests.log" | tr '\n' ' ' >> "$work/tests.txt"
grep -E '^\[  FAILED  \] [A-Z]' "$work/kernels_tests.log" | head -8 >> "$work/failures.txt"

dtypes=(f16 f32)
if [ "${1:-}" = --dtype ]; then
  case "${2:-}" in
    f16 | f32) dtypes=("$2") ;;
    *) echo "slak_dwconv.sh: --dtype takes f16 or f32, got '${2:-}'" >&2; exit 2 ;;
  esac
  shift 2
fi
# stage: map (odd C), its aligned twin, filters (15x15 is the square nearest the strips' 235-255 taps, 9x9 13x5's 65)
stages=(
  "64x64x64x124 64x64x64x128 51x5,5x51,5,15"
  "64x32x32x249 64x32x32x256 49x5,5x49,5,15"
  "64x16x16x499 64x16x16x504 47x5,5x47,5,15"
  "64x8x8x998 64x8x8x1000 13x5,5x13,5,9"
)
if [ $# -gt 0 ]; then
  for i in "${!stages[@]}"; do
    read -r odd even _ <<< "${stages[$i]}"
    stages[$i]="$odd $even $1"
  done
fi
ours() {  # ours DTYPE LIMIT_S: each odd-C map with cuDNN's engines, its aligned twin without them (the twin only sets
          # the per-FLOP reference, and the engines' probes take most of a point's time)
  local s odd even filters
  for s in "${stages[@]}"; do
    read -r odd even filters <<< "$s"
    step "$2" "ours $1 $odd" "$bin/dwconv-bench" --dtype "$1" --maps "$odd" --filters "$filters" --reps 10 \
      --warmup 2 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 1500 --out "$work/ours_$1_$odd.csv" \
      > "$work/ours_$1_$odd.log" 2>&1
    step 60 "ours $1 $even" "$bin/dwconv-bench" --dtype "$1" --maps "$even" --filters "$filters" --reps 10 \
      --warmup 2 --no-cudnn --out "$work/ours_$1_$even.csv" > "$work/ours_$1_$even.log" 2>&1
  done
}
torch() {  # torch DTYPE LIMIT_S
  local s odd even filters
  for s in "${stages[@]}"; do
    read -r odd even filters <<< "$s"
    step "$2" "torch $1 $odd" python3 bench/dwconv_torch.py --dtype "$1" --maps "$odd" --filters "$filters" \
      --ops fwd,bdc,bfc --reps 10 --warmup 2 --point-seconds 1 --point-timeout 20 --out "$work/torch_$1_$odd.csv" \
      > "$work/torch_$1_$odd.log" 2>&1
  done
}
for dt in "${dtypes[@]}"; do
  ours "$dt" 130
  torch "$dt" 60
  [ "$dt" = f16 ] || continue
  for s in "${stages[@]}"; do
    read -r odd even filters <<< "$s"
    step 30 "pad=off f16 $odd" "$bin/dwconv-bench" --dtype f16 --maps "$odd" --filters "$filters" --reps 5 \
      --warmup 1 --no-cudnn --kernel pad=off --out "$work/padoff_f16_$odd.csv" > "$work/padoff_f16_$odd.log" 2>&1
  done
done

echo "==== scripts/device/slak_dwconv.sh (${SECONDS}s) ====" | tee "$work/summary.txt"
printf '%s\n' "${summary[@]}" | tee -a "$work/summary.txt"
cat "$work/tests.txt"; echo
[ -s "$work/failures.txt" ] && cat "$work/failures.txt"
