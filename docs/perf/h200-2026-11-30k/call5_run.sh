#!/usr/bin/env bash
# Session 11, call 5. Bundle = working tree: streaming blocks re-applied on top of the channels-first order (call 2
# measured them under the old order, where the memory pattern hid everything else). Call 4 left 7x7 at 0.323 ms on
# 128x64x64x256 with 1x1 (one step per tile) at 0.204 ms: per-tile latency, which streaming overlaps.
# Expected before measuring: 7x7 1.1-1.3x on 128x64x64x256 / 128^4, 1.05-1.15x on 128x32x32x1024 (two tiles per
# strip); 9x9 / 13x13 (three blocks per SM) uncertain; 17x17 +-5% (gamma 3 spills 44 bytes streaming).
set -u
L=/tmp/s11logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s11logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Fp16Gpu*' > $L/tests_f16.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_f16.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_f16.log | head -8
run() { local n=$1 mode=$2; shift 2; left=$((330 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  CNN_DWCONV_F16_RING_STREAM=$mode timeout $left $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$3,$4}' | tr '\n' ';'; echo; }
run check_auto auto --dtype f16 --op fwd,bdc --filters 7,9,13,17 --no-cudnn --reps 3 --warmup 1
grep -m2 "strip=" $L/check_auto.log
for rep in 1 2; do for mode in off auto; do
  run ab_${mode}_$rep $mode --dtype f16 --op fwd,bdc --filters 7,9,13,17 --no-cudnn --no-check --reps 10 --warmup 2; done; done
echo end ${SECONDS}s
