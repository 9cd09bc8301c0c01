#!/usr/bin/env bash
# Session 6, call 3. Bundle = main at a5a38ba (new FP32 backward-filter staging, 13x13 -> 2x13, 31x31 -> 2x16).
# GPU suites (kernels, layers, models, train), the FP32 backward-filter sweep 7-51 against cuDNN's backend engines
# (3x3 / 5x5 against legacy + engines ran in call 2 on the same kernel), then Nsight Compute on the large-filter
# tiles (the SGEMM-fraction bar).
set -u
L=/tmp/s6logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s6logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
for t in kernels layers models train; do
  timeout 150 $B/${t}_tests --gtest_filter='*Gpu*:*Cuda*' > $L/${t}_tests.log 2>&1; echo "$t rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${t}_tests.log | tr '\n' ' ')"
  grep -E "^\[  FAILED" $L/${t}_tests.log | head -5
done
for m in 128x128x128x128 128x64x64x256 128x32x32x1024; do
  left=$((470 - SECONDS)); [ $left -lt 20 ] && { echo "skip $m"; continue; }
  timeout $left $B/dwconv-bench --maps $m --op bfc --filters 7,9,13,17,31,51 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000 --out $L/f32_${m}_bfc.csv > $L/f32_${m}_bfc.log 2>&1
  echo "bfc $m rc=$? ${SECONDS}s"; grep -E "^(bfc |summary)" $L/f32_${m}_bfc.log
done
prof() { local n=$1; shift; left=$((580 - SECONDS)); [ $left -lt 25 ] && { echo "skip $n"; return; }
  OUT=$L timeout $left bash scripts/gpu-profile.sh "$@" > $L/prof_$n.log 2>&1; echo "prof $n rc=$? ${SECONDS}s"; tail -8 $L/prof_$n.log; }
prof bfc17 bfc17 bfc_tile -- --op bfc --maps 128x64x64x256 --filters 17
prof bfc31 bfc31 bfc_tile -- --op bfc --maps 128x64x64x256 --filters 31
echo end ${SECONDS}s
