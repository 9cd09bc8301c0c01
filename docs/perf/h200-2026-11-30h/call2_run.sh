#!/usr/bin/env bash
# Eighth session, call 2. Bundle = branch tma-cc with the lane width as a parameter (CNN_DWCONV_TMA_LANE=16|8), the
# conflict-free filter layout and the shared-memory limit fix; FP16 strided backward-filter on the tile kernel.
# GPU tests of the TMA kernel (both widths) and the backward-filter path choice; A/B of both widths against the
# defaults at 3x3 / 5x5 (FP16 and FP32, twice); Nsight Compute of the 8-byte FP16 kernel at 3x3; then the faster
# FP16 width against cuDNN (legacy + engines) at 3x3 / 5x5 forward and backward-data on the three maps.
# Carry: .device/bundle.tar.xz .device/s8run2.sh
set -u
L=/tmp/s8logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s8logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 120 $B/kernels_tests --gtest_filter='*Tma*:*EveryForwardKernel*:*BackwardFilterPath*:*BackwardFilterTileKernel*' > $L/tma_tests.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tma_tests.log | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|exception" $L/tma_tests.log | head -8
ab() { local n=$1; shift; left=$((300 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/ab_$n.log | grep -v "F=" | awk '{print $1, $2, $3, $4}' | tr '\n' ';'; echo; }
for rep in 1 2; do
  ab f16_auto_$rep --dtype f16 --op fwd,bdc --filters 3,5
  for w in 16 8; do CNN_DWCONV_F16_PATH=tma CNN_DWCONV_TMA_LANE=$w ab f16_tma${w}_$rep --dtype f16 --op fwd,bdc --filters 3,5; done
  ab f32_auto_$rep --op fwd,bdc --filters 3,5
  for w in 16 8; do CNN_DWCONV_F32_PATH=tma CNN_DWCONV_TMA_LANE=$w ab f32_tma${w}_$rep --op fwd,bdc --filters 3,5; done
done
total() { awk -F, 'NR > 1 { s += $4 } END { printf "%.4f", s }' "$@"; }
t16=$(total $L/ab_f16_tma16_*.csv) t8=$(total $L/ab_f16_tma8_*.csv)
best=16; awk -v a=$t8 -v b=$t16 'BEGIN { exit !(a < b) }' && best=8
echo "f16 sum ms: lane16 $t16, lane8 $t8 -> lane $best"
OUT=$L timeout 60 bash scripts/gpu-profile.sh tma16l8_3 dwconv_tma_cc CNN_DWCONV_F16_PATH=tma CNN_DWCONV_TMA_LANE=8 -- --dtype f16 --op fwd --maps 128x64x64x256 --filters 3 > $L/prof_tma16l8_3.log 2>&1
echo "prof rc=$? ${SECONDS}s"; tail -7 $L/prof_tma16l8_3.log
cu() { local n=$1; shift; left=$((585 - SECONDS)); [ $left -lt 30 ] && { echo "skip $n"; return; }
  timeout $left $B/dwconv-bench "$@" --out $L/cu_$n.csv > $L/cu_$n.log 2>&1; echo "cu $n rc=$? ${SECONDS}s"
  grep -E "^(fwd |bdc |summary)" $L/cu_$n.log | grep -v "F="; }
for m in 128x32x32x1024 128x64x64x256 128x128x128x128; do
  CNN_DWCONV_F16_PATH=tma CNN_DWCONV_TMA_LANE=$best cu f16_$m --dtype f16 --op fwd,bdc --maps $m --filters 3,5 --cudnn-engines --cudnn-probe-budget 2000
done
echo end ${SECONDS}s
