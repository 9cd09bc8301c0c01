#!/usr/bin/env bash
# Session 10, call 5. Bundle = v4 (ring) + TMA kernel with the filter height fixed at compile time for 3x3 (row loop
# unrolled: no bias moves, no loop overhead; ~80 fewer instructions per tile and thread in the SASS). Lib v4 = main
# TMA kernel. Kernel GPU tests; FP16 3x3 forward/backward-data A/B v4 vs new, twice; FP32 3x3 (the row-slider default
# is not the TMA kernel) skipped.
set -u
L=/tmp/s10logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s10logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
mkdir -p .device/lib_v4 && xz -dc .device/libcnn_v4.so.xz > .device/lib_v4/libcnn.so
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*' > $L/kernels_tests.log 2>&1
echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/kernels_tests.log | head
run() { local n=$1 lib=$2; shift 2; left=$((300 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  if [ $lib = new ]; then pre=env; else pre="env LD_LIBRARY_PATH=$PWD/.device/lib_$lib:${LD_LIBRARY_PATH:-}"; fi
  timeout $left $pre $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$3,$4}' | tr '\n' ';'; echo; }
for rep in 1 2 3; do for lib in v4 new; do
  run ab3_${lib}_$rep $lib --dtype f16 --op fwd,bdc --filters 3 --no-cudnn --no-check --reps 30; done; done
grep -h "path\|tma" $L/ab3_new_1.log | head -3
echo end ${SECONDS}s
