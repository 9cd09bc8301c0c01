#!/usr/bin/env bash
# Session 10, call 4. Bundle = ring v5 (job offsets recomputed per row from a fresh thread index: no spills at any
# gamma) with main's TMA kernel (L2 promotion 128 B). Libs: v4 (call 3's best), p256 / pnone (v5 with the TMA
# kernel's tensor map promoting L2 fills to 256 B / not at all). GPU tests of v5; ring forward A/B v4/v5 twice;
# FP16 3x3 forward/backward-data A/B v5/p256/pnone twice.
set -u
L=/tmp/s10logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s10logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
for v in v4 p256 pnone; do mkdir -p .device/lib_$v && xz -dc .device/libcnn_$v.so.xz > .device/lib_$v/libcnn.so; done
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Gpu*:*Cuda*:FastDivmod*:DwconvBfcPlan*' > $L/kernels_tests.log 2>&1
echo "kernels rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/kernels_tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED" $L/kernels_tests.log | head
run() { local n=$1 lib=$2; shift 2; left=$((540 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  if [ $lib = v5 ]; then pre=env; else pre="env LD_LIBRARY_PATH=$PWD/.device/lib_$lib:${LD_LIBRARY_PATH:-}"; fi
  timeout $left $pre $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $3,$4}' | tr '\n' ';'; echo; }
for rep in 1 2; do for lib in v4 v5; do
  run ab_${lib}_$rep $lib --dtype f16 --op fwd --filters 7,9,13,17,31,51 --no-cudnn --no-check; done; done
for rep in 1 2; do for lib in v5 p256 pnone; do
  run ab3_${lib}_$rep $lib --dtype f16 --op fwd,bdc --filters 3,5 --no-cudnn --no-check; done; done
echo end ${SECONDS}s
