#!/usr/bin/env bash
# Session 13, call 4. Bundle = main 1a881e8 (the final kernel code: FP16 5x5 on two TMA stages, the ring kernel on
# channel pairs at 9 <= FW <= 21). (1) GPU suites kernels, layers, models; (2) FP16 forward + backward-data against cuDNN (legacy +
# engines) in the same run, checked against FP64: 5x5, then 9x9 / 13x13 / 17x17 (whose cuDNN times in the tables
# were from earlier sessions), per map.
# Carry: .device/bundle.tar.xz .device/s13_run4.sh (the dataset for the train suite does not fit the carry with
# this tree: kernels, layers and models suites only)
set -u
L=/tmp/s13logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s13logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 170 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models; do suite $t; done
cu() { local m=$1 f=$2; left=$((545 - SECONDS)); [ $left -lt 25 ] && { echo "skip $m $f"; return; }
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters $f --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_$f.csv > $L/cu_${m}_$f.log 2>&1
  echo "cu $m F=$f rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_$f.log | cut -c1-160; }
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do cu $m 5; done
for f in 9 17 13; do for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do cu $m $f; done; done
echo end ${SECONDS}s
