#!/usr/bin/env bash
# Eighth session, call 4. Bundle = branch tma-cc with the sliced tile order as the TMA kernel's default (one group of
# blocks per channel slice, striding through it). Kernel GPU suite; A/B of the three tile orders at 3x3 / 5x5 (FP16)
# and 5x5 (FP32); the defaults against cuDNN (legacy + engines) at FP16 3x3 / 5x5 and FP32 5x5; the other GPU suites.
# Carry: .device/bundle.tar.xz .device/s8run4.sh .device/fmnist
set -u
L=/tmp/s8logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s8logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/${1}_tests.log | head -5; }
suite kernels
ab() { local n=$1; shift; left=$((170 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4}' | tr '\n' ';'; echo; }
for o in sliced contiguous strided; do CNN_DWCONV_TMA_TILES=$o ab f16_$o --dtype f16 --op fwd,bdc --filters 3,5; done
for o in sliced contiguous strided; do CNN_DWCONV_TMA_TILES=$o ab f32_$o --op fwd,bdc --filters 5; done
cu() { local n=$1; shift; left=$((500 - SECONDS)); [ $left -lt 30 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --out $L/cu_$n.csv > $L/cu_$n.log 2>&1; echo "cu $n rc=$? ${SECONDS}s"
  grep -E "^(fwd |bdc |bfc |summary)" $L/cu_$n.log | grep -v "F="; }
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  cu f16_$m --dtype f16 --op fwd,bdc --maps $m --filters 3,5 --cudnn-engines --cudnn-probe-budget 2000
done
cu f32_5 --op fwd,bdc --filters 5 --cudnn-engines --cudnn-probe-budget 2000
for t in layers models train; do suite $t; done
echo end ${SECONDS}s
