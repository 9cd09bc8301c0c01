#!/usr/bin/env bash
# GPU call for branch dwconv-tail (the tiled direct kernels for odd channel counts, teaching rung 6 with a warp per
# channel): the GPU suites of kernels, teach and layers; dwconv-ladder; SLaK-T's 5x5 depthwise points at odd C with the
# new default (direct_tile unpadded) against pad=on and cuDNN's legacy algorithms, and PyTorch on the same points;
# the ring kernel's tile width on ConvMixer-768/32's 36-wide map (ring_q=1|2|4); then bench/e2e.sh on SLaK-T and
# SLaK-T dense, both sides. Results under $OUT: tail-ab.tgz (CSVs, logs), dwconv-ladder-h200.{csv,log}, e2e.csv.
# Carry: .device/bundle.tar.xz (scripts/device-bundle.sh).
set -uo pipefail
# shellcheck source=scripts/gpu-bundle-env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../gpu-bundle-env.sh"
cd "$root"
export CNN_SOURCE_DIR=$root OMP_WAIT_POLICY=passive
bin="$bundle/bin"
work=/tmp/tail-ab
rm -rf "$work"
mkdir -p "$work"
trap 'tar -C /tmp -czf "$out/tail-ab.tgz" tail-ab' EXIT
SECONDS=0
end=$((SECONDS + ${TAIL_AB_SECONDS:-570}))
summary=()
step() {  # step LIMIT_S TAG command...: runs with the smaller of LIMIT_S and the time left
  local limit=$1 tag=$2 left=$((end - SECONDS)); shift 2
  if [ "$left" -lt 15 ]; then summary+=("not run (time): $tag"); return; fi
  timeout $((limit < left ? limit : left)) "$@"
  summary+=("$tag rc=$? ${SECONDS}s")
}
cat "$bundle/commit" > "$work/build.txt" 2>/dev/null
for t in kernels teach layers; do
  step 150 "${t}_tests *Gpu*" "$bin/${t}_tests" --gtest_filter='*Gpu*' > "$work/${t}_tests.log" 2>&1
  grep -E '^\[  (PASSED|FAILED)' "$work/${t}_tests.log" | tr '\n' ' ' >> "$work/tests.txt"
  grep -E '^\[  FAILED  \] [A-Z]' "$work/${t}_tests.log" | head -8 >> "$work/failures.txt"
done
step 90 "dwconv-ladder" "$bin/dwconv-ladder" --device gpu --out "$out/dwconv-ladder-h200.csv" \
  > "$out/dwconv-ladder-h200.log" 2>&1
maps=64x64x64x124,64x32x32x249,64x16x16x499,64x8x8x998,64x64x64x128,64x32x32x256,64x16x16x504,64x8x8x1000
for dt in f16 f32; do
  step 60 "ours $dt 5x5" "$bin/dwconv-bench" --dtype "$dt" --maps "$maps" --filters 5 --reps 10 --warmup 2 \
    --out "$work/ours_$dt.csv" > "$work/ours_$dt.log" 2>&1
  step 40 "pad=on $dt 5x5" "$bin/dwconv-bench" --dtype "$dt" --maps "$maps" --filters 5 --reps 10 --warmup 2 \
    --no-cudnn --kernel pad=on --out "$work/padon_$dt.csv" > "$work/padon_$dt.log" 2>&1
  step 60 "torch $dt 5x5" python3 bench/dwconv_torch.py --dtype "$dt" --maps "$maps" --filters 5 --ops fwd,bdc,bfc \
    --reps 10 --warmup 2 --point-seconds 1 --point-timeout 20 --out "$work/torch_$dt.csv" > "$work/torch_$dt.log" 2>&1
done
for q in 1 2 4; do
  step 30 "ring_q=$q 36x36x768 7x7" "$bin/dwconv-bench" --dtype f16 --maps 64x36x36x768 --filters 7 --reps 10 \
    --warmup 2 --no-cudnn --kernel "ring_q=$q" --out "$work/ringq_$q.csv" > "$work/ringq_$q.log" 2>&1
done
CNN_TRAIN="$bin/cnn-train" step 300 "bench/e2e.sh slak" bench/e2e.sh --models slak_tiny,slak_tiny_dense \
  --loss-check none --steps 20 --warmup 2 --out "$work/e2e" > "$work/e2e.log" 2>&1
[ -f "$work/e2e/e2e.csv" ] && cp "$work/e2e/e2e.csv" "$out/"

echo "==== scripts/device/tail_ab.sh (${SECONDS}s) ===="
printf '%s\n' "${summary[@]}"
cat "$work/tests.txt"; echo
[ -s "$work/failures.txt" ] && cat "$work/failures.txt"
grep -E '^gpu ' "$out/dwconv-ladder-h200.log" | grep -E ' (4|5|6) ' | cut -c5-100
for f in "$work"/ours_*.csv "$work"/padon_*.csv "$work"/ringq_*.csv; do
  [ -f "$f" ] && { echo "$(basename "$f")"; cut -d, -f1-4,7,19 "$f" | tail -n +2; }
done
for f in "$work"/torch_*.csv; do [ -f "$f" ] && { echo "$(basename "$f")"; cut -d, -f1-5 "$f"; }; done
[ -f "$out/e2e.csv" ] && cut -d, -f1-10 "$out/e2e.csv"
