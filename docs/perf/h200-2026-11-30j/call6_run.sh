#!/usr/bin/env bash
# Session 10, call 6 (final). Bundle = branch ring-stage at 826a90c (ring v4 + ha 17x17 narrow rule; TMA kernel =
# main). All GPU suites; FP16 forward/backward-data defaults 7..51 and FP32 forward 13..51 (same run) for the >= 2x
# bar; backward-filter fp32 and ha defaults (HA >= 1.2x bar); cuDNN (legacy + engines) at FP16 7x7 if time is left.
# Carry: .device/bundle.tar.xz .device/s10_run6.sh .device/fmnist
set -u
L=/tmp/s10logs6; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs6.tgz s10logs6" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models train; do suite $t; done
run() { local n=$1 lim=$2; shift 2; left=$((lim - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
run f16_large 400 --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn
run f32_large 400 --dtype f32 --op fwd --filters 13,17,31,51 --no-cudnn --no-check
run bfc_fp32 430 --dtype f16 --op bfc --bfc-accum fp32 --filters 7,9,13,17,31,51 --no-cudnn --no-check --reps 10 --warmup 2
run bfc_ha 460 --dtype f16 --op bfc --bfc-accum ha --filters 7,9,13,17,31,51 --no-cudnn --reps 10 --warmup 2
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  run cu_${m}_7 520 --dtype f16 --op fwd,bdc --maps $m --filters 7 --cudnn-engines --cudnn-probe-budget 2000; done
echo end ${SECONDS}s
