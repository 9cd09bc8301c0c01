#!/usr/bin/env bash
# Session 5, call 2: tree s5-candidate-noring (main + accurate-baseline + bfc-tail + bfc51; ring-tr lost in call 1).
# FP16 against the cuDNN engines at the points call 1 did not reach (51 everywhere, 31 on two maps, 128x128x128x128
# 13x13 and backward-filter 5x5).
set -u
L=/tmp/s5logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s5logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
run() { # name, timeout, args...
  local n=$1 t=$2; shift 2; left=$((585 - SECONDS)); [ $left -lt 20 ] && { echo "skip $n"; return; }; [ $t -gt $left ] && t=$left
  timeout $t $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1; echo "$n rc=$? ${SECONDS}s"; grep -E "^(summary|fwd |bdc |bfc )" $L/$n.log | grep -v "F=" 
}
E="--dtype f16 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 3000"
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do run f16_${m}_51 150 $E --maps $m --filters 51; done
for m in 128x64x64x256 128x128x128x128; do run f16_${m}_31 130 $E --maps $m --filters 31; done
run f16_128x128x128x128_13 120 $E --maps 128x128x128x128 --filters 13 --op bdc,bfc
run f16_128x128x128x128_5bfc 60 --dtype f16 --cudnn-engines --maps 128x128x128x128 --filters 5 --op bfc
echo end ${SECONDS}s
