#!/usr/bin/env bash
# Ninth session, call 1. Bundle = branch tma-columns (main + the TMA kernel's
# forced-only columns tile order: a block walks down a column of tiles, loads only each later tile's last 16 window
# rows and copies the FH - 1 shared rows from the previous stage). Build it first: git checkout tma-columns &&
# scripts/device-bundle.sh (a bundle of it is in .device/bundle_s9cand_columns.tar.xz, same code before clang-format).
# TMA tests (columns never ran on a GPU); A/B sliced vs columns at FP16 3x3/5x5 and FP32 5x5, twice; ncu of columns at
# FP16 3x3; then, if columns wins, its FP16 3x3/5x5 against cuDNN. Expected: 11% fewer L2 reads at 3x3 (16 instead of
# 18 window rows per tile); the eighth session's ncu put L2 at 77% of its throughput, the apparent ceiling.
# Watch: this branch's kernel spills 20 bytes at FP16 3x3 with 8-byte lanes (main's: 12); compare its sliced rows with
# the eighth session's call 4/5 (0.325-0.327 / 0.166 / 0.167-0.168 ms at FP16 3x3).
# Also the kernels/layers/models/train GPU suites (main's host-side resident_blocks cache never ran on a GPU).
# Carry: .device/bundle.tar.xz .device/s9run1.sh .device/fmnist
set -u
L=/tmp/s9logs1; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs1.tgz s9logs1" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models train; do suite $t; done
ab() { local n=$1; shift; left=$((400 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; awk -F, 'NR > 1 { printf "%s %s %s %.3f;", $1, $2, $3, $4 }' $L/ab_$n.csv; echo; }
for rep in 1 2; do
  for o in sliced columns; do CNN_DWCONV_TMA_TILES=$o ab f16_${o}_$rep --dtype f16 --op fwd,bdc --filters 3,5; done
  for o in sliced columns; do CNN_DWCONV_TMA_TILES=$o ab f32_${o}_$rep --op fwd,bdc --filters 5; done
done
OUT=$L timeout 60 bash scripts/gpu-profile.sh cols16_3 dwconv_tma_cc CNN_DWCONV_TMA_TILES=columns -- --dtype f16 --op fwd --maps 128x64x64x256 --filters 3 > $L/prof_cols16_3.log 2>&1
echo "prof rc=$? ${SECONDS}s"; tail -7 $L/prof_cols16_3.log
total() { awk -F, 'NR > 1 { s += $4 } END { printf "%.4f", s }' "$@"; }
ts=$(total $L/ab_f16_sliced_*.csv) tc=$(total $L/ab_f16_columns_*.csv); echo "f16 sum ms: sliced $ts, columns $tc"
if awk -v a=$tc -v b=$ts 'BEGIN { exit !(a < b) }'; then
  for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((585 - SECONDS)); [ $left -lt 40 ] && break
    CNN_DWCONV_TMA_TILES=columns timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 3,5 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_$m.csv > $L/cu_$m.log 2>&1
    echo "cu $m rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc |summary)" $L/cu_$m.log
  done
fi
echo end ${SECONDS}s
