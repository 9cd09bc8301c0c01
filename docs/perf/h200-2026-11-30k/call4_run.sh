#!/usr/bin/env bash
# Session 11, call 4. Bundle = working tree: ring kernel blocks ordered channel block fastest (one tile position's
# 16-channel blocks together, so 128-byte lines are read and written whole). Call 3 found the ring kernel as slow at
# 1x1 as at 7x7 on C = 128 / 256 (0.525 ms on 128x64x64x256) but 2x faster per element on C = 1024, where a tile's
# channel blocks are half a wave apart instead of 2-8 waves.
# Expected before measuring: F <= 9 on 128x64x64x256 and 128^4 1.3-1.8x; 13-17 1.1-1.3x; 31/51 1.0-1.05x;
# 128x32x32x1024 1.0-1.2x. (1) FP16 GPU tests; (2) A/B CNN_DWCONV_F16_RING_ORDER=columns vs auto, twice interleaved,
# forward + backward-data 7-51, and the ring forced at F = 1, 3, 5.
set -u
L=/tmp/s11logs4; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs4.tgz s11logs4" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Fp16Gpu*' > $L/tests_f16.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_f16.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_f16.log | head -8
run() { local n=$1 order=$2; shift 2; left=$((500 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  CNN_DWCONV_F16_RING_ORDER=$order timeout $left $B/dwconv-bench "$@" --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$3,$4}' | tr '\n' ';'; echo; }
run check_auto auto --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn --reps 3 --warmup 1
for rep in 1 2; do for order in columns auto; do
  run ab_${order}_$rep $order --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn --no-check --reps 10 --warmup 2
  CNN_DWCONV_F16_PATH=ring run ring135_${order}_$rep $order --dtype f16 --op fwd --filters 1,3,5 --no-cudnn --no-check --reps 10 --warmup 2
done; done
echo end ${SECONDS}s
