#!/usr/bin/env bash
# Ninth session, call 7. Bundle = branch tma-rows2 with the new FP16 5x5 default (8-byte lanes, two rows per thread;
# 3x3 and FP32 kernels are main's code, PTX-identical). GPU suites (kernels, layers, models, train); FP16 3x3/5x5
# forward/backward-data against cuDNN (legacy + engines) on the three maps.
# Carry: .device/bundle.tar.xz .device/s9run7.sh .device/fmnist
set -u
L=/tmp/s9logs7; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs7.tgz s9logs7" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p /usr/share/datasets && ln -sfn $PWD/.device/fmnist /usr/share/datasets/fashion-mnist
mkdir -p /work/main/build/bin && ln -sfn $PWD/$B/cnn-train /work/main/build/bin/cnn-train
export CNN_SOURCE_DIR=$PWD OMP_WAIT_POLICY=passive
SECONDS=0
suite() { timeout 150 $B/${1}_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*' > $L/${1}_tests.log 2>&1
  echo "$1 rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/${1}_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/${1}_tests.log | head -5; }
for t in kernels layers models train; do suite $t; done
for f in 5 3; do for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do left=$((275 - SECONDS)); [ $left -lt 30 ] && break
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters $f --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_$f.csv > $L/cu_${m}_$f.log 2>&1
  echo "cu $m F=$f rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_$f.log
done; done
echo end ${SECONDS}s
