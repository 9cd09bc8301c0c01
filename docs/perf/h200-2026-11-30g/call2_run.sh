#!/usr/bin/env bash
# Session 7, call 2. Bundle = branch f16-bfc-default (main + bfc-f16tile; FP16 backward-filter defaults to the
# register-tile kernel above 9 taps at stride 1; ha takes the measured tiles within 32 taps, so 31x31 -> 2x16).
# GPU suites; forced-tile sweep of the FP16 tile kernel (ha, and fp32 at 51) on the widths where the ha choice is
# the cost model's or lost in call 1; the new default in both accumulations (no cuDNN); cuDNN comparison at the
# previous never-slower misses (128x32x32x1024 bfc 7x7 / 17x17, engines) and the missing cell (128^4 5x5).
set -u
L=/tmp/s7logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s7logs2" EXIT
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
ab() { local n=$1; shift; left=$((430 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --reps 5 --warmup 1 --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^bfc " $L/ab_$n.log | grep -v "F=" | awk '{print $2, $3, $4, $5}' | tr '\n' ';'; echo; }
for t in 1x13 2x13; do CNN_DWCONV_BFC_TILE=$t ab ha13_$t --dtype f16 --op bfc --bfc-accum ha --filters 13; done
for t in 1x17 2x9; do CNN_DWCONV_BFC_TILE=$t ab ha17_$t --dtype f16 --op bfc --bfc-accum ha --filters 17; done
for t in 1x31 2x16 1x16 2x11; do CNN_DWCONV_BFC_TILE=$t ab ha31_$t --dtype f16 --op bfc --bfc-accum ha --filters 31; done
for t in 1x17 2x13 2x9 3x9; do CNN_DWCONV_BFC_TILE=$t ab ha51_$t --dtype f16 --op bfc --bfc-accum ha --filters 51; done
for t in 3x13 1x17 2x13; do CNN_DWCONV_BFC_TILE=$t ab fp51_$t --dtype f16 --op bfc --bfc-accum fp32 --filters 51; done
for acc in fp32 ha; do ab auto_$acc --dtype f16 --op bfc --bfc-accum $acc; done
cu() { local n=$1 t=$2; shift 2; left=$((585 - SECONDS)); [ $left -lt 20 ] && { echo "skip $n"; return; }
  [ $t -gt $left ] && t=$left
  timeout $t $B/dwconv-bench "$@" --out $L/cu_$n.csv > $L/cu_$n.log 2>&1; echo "cu $n rc=$? ${SECONDS}s"; grep -E "^(bfc |summary bfc)" $L/cu_$n.log; }
cu 32k_7_17 100 --dtype f16 --op bfc --maps 128x32x32x1024 --filters 7,17 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 2000
cu 128_5 60 --dtype f16 --op bfc --maps 128x128x128x128 --filters 5 --cudnn-engines --cudnn-probe-budget 2000
echo end ${SECONDS}s
