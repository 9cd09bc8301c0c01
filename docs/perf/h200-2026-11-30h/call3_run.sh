#!/usr/bin/env bash
# Eighth session, call 3. Bundle = branch tma-cc with the TMA-fed kernel as the default at FP16 3x3 (8-byte lanes),
# FP16 5x5 (16-byte lanes) and FP32 5x5 (8-byte lanes), each block a contiguous range of tiles. Kernel GPU suite;
# A/B of the tile order and lane widths at 3x3 / 5x5; the defaults against cuDNN (legacy + engines) at 3x3 / 5x5,
# FP16 and FP32 5x5; layers/models/train GPU suites; stride 2 against cuDNN if time is left.
# Carry: .device/bundle.tar.xz .device/s8run3.sh .device/fmnist
set -u
L=/tmp/s8logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s8logs3" EXIT
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
ab() { local n=$1; shift; left=$((200 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4}' | tr '\n' ';'; echo; }
ab f16_default --dtype f16 --op fwd,bdc --filters 3,5
CNN_DWCONV_TMA_TILES=strided ab f16_strided --dtype f16 --op fwd,bdc --filters 3,5
CNN_DWCONV_TMA_LANE=16 ab f16_lane16 --dtype f16 --op fwd,bdc --filters 3
CNN_DWCONV_TMA_LANE=8 ab f16_lane8 --dtype f16 --op fwd,bdc --filters 5
ab f32_default --op fwd,bdc --filters 5
CNN_DWCONV_TMA_TILES=strided ab f32_strided --op fwd,bdc --filters 5
cu() { local n=$1; shift; left=$((540 - SECONDS)); [ $left -lt 30 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --out $L/cu_$n.csv > $L/cu_$n.log 2>&1; echo "cu $n rc=$? ${SECONDS}s"
  grep -E "^(fwd |bdc |bfc |summary)" $L/cu_$n.log | grep -v "F="; }
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  cu f16_$m --dtype f16 --op fwd,bdc --maps $m --filters 3,5 --cudnn-engines --cudnn-probe-budget 2000
done
cu f32_5 --op fwd,bdc --filters 5 --cudnn-engines --cudnn-probe-budget 2000
for t in layers models train; do suite $t; done
cu s2_f16 --dtype f16 --stride 2 --filters 3,5,7 --maps 128x64x64x256 --cudnn-engines --cudnn-probe-budget 2000
echo end ${SECONDS}s
