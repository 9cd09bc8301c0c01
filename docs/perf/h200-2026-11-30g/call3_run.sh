#!/usr/bin/env bash
# Session 7, call 3. Bundle = branch f16-bfc-default with the ha 51x51 -> 2x13 entry. Kernel GPU tests; the FP16
# backward-filter defaults in both accumulations (no cuDNN); the fp32-accumulation default against cuDNN on every
# map (legacy + engines at 3x3 / 5x5, where legacy algorithms won before; engines at 7x7-51x51).
set -u
L=/tmp/s7logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s7logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 100 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1; echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED" $L/kernels_tests.log | head -5
for acc in ha fp32; do
  timeout 60 $B/dwconv-bench --dtype f16 --op bfc --bfc-accum $acc --no-cudnn --no-check --reps 5 --warmup 1 --out $L/auto_$acc.csv > $L/auto_$acc.log 2>&1
  echo "auto $acc rc=$? ${SECONDS}s"; grep -E "^bfc " $L/auto_$acc.log | grep -v "F=" | awk '{print $2, $3, $4, $5}' | tr '\n' ';'; echo
done
cu() { local n=$1; shift; left=$((520 - SECONDS)); [ $left -lt 20 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --out $L/cu_$n.csv > $L/cu_$n.log 2>&1; echo "cu $n rc=$? ${SECONDS}s"; grep -E "^(bfc |summary bfc)" $L/cu_$n.log | grep -v "F="; }
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  cu ${m}_small --dtype f16 --op bfc --maps $m --filters 3,5 --cudnn-engines --cudnn-probe-budget 2000
  cu ${m}_large --dtype f16 --op bfc --maps $m --filters 7,9,13,17,31,51 --cudnn-engines --no-cudnn-legacy --cudnn-probe-budget 2000
done
echo end ${SECONDS}s
