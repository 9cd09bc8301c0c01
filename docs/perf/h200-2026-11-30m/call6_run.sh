#!/usr/bin/env bash
# Session 13, call 6 (final). Bundle = main 0339553 (the final kernel code: the pairs kernel on planes from FW = 9,
# PTX-identical to call 5's planes build; the tap kernel at FW 6-8; FP16 5x5 on two TMA stages).
# (1) GPU suites kernels, layers, models; (2) the default configuration, forward + backward-data 7-51, checked
# against FP64 (our side of the table; cuDNN from calls 4-5 and earlier sessions).
# Carry: .device/bundle.tar.xz .device/s13_run6.sh
set -u
L=/tmp/s13logs6; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz s13logs6" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 100 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models; do suite $t; done
timeout 90 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn --reps 10 --warmup 2 --out $L/final.csv > $L/final.log 2>&1
echo "final rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) " $L/final.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo
grep -E "check:" $L/final.log | awk '{print $6}' | sort -g | tail -1; grep -m2 flash $L/final.log | cut -c1-200
echo end ${SECONDS}s
