#!/usr/bin/env bash
# Session 13, call 5. Bundle = main 1a881e8 + the pairs kernel's planes layout (each channel pair of the ring in its
# own plane of 4-byte words: LDS.32 per row and pair, so that rows g and g+8 can share a register pair; 4-byte
# cp.async staging), CNN_DWCONV_F16_RING_PAIRS=planes; positions variant PTX-identical to call 3's, except 3 blocks
# per SM at nd >= 10 (4 spilled).
# Expected before measuring: the positions layout costs 4 register moves per A block (SASS); planes trade them for
# 2 more loads and twice the copy instructions. 7x7 pairs 0.93x -> 0.97-1.03x of taps; 9x9 / 17x17 1.15-1.18x ->
# 1.2-1.3x; 31x31 0.92x -> ~1.0x.
# (1) FP16 GPU tests (pairs positions / planes, Q 1/2/4, against FP64); (2) forward 7-51: taps, pairs positions,
# pairs planes, twice; (3) the default configuration (and with planes) forward + backward-data 7-51, checked against
# FP64; (4) 13x13 against cuDNN on the two maps call 4 did not reach.
# Carry: .device/bundle.tar.xz .device/s13_run5.sh
set -u
L=/tmp/s13logs5; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs5.tgz s13logs5" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 170 $B/kernels_tests --gtest_filter='*Fp16Gpu*:DwconvCudaEntry*' > $L/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure|rror" $L/tests.log | head -8
run() { local n=$1; shift; left=$((300 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd --filters 7,9,13,17,31,51"
for rep in 1 2; do
  CNN_DWCONV_F16_RING_MMA=taps run taps_$rep $F16
  CNN_DWCONV_F16_RING_MMA=pairs run pos_$rep $F16
  CNN_DWCONV_F16_RING_MMA=pairs CNN_DWCONV_F16_RING_PAIRS=planes run planes_$rep $F16
done
grep -m1 "flash" $L/planes_1.log | cut -c1-220
fin() { local n=$1; shift; timeout 90 "$@" $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51 --no-cudnn --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; grep -c "check:" $L/$n.log; }
fin default env
fin planes_default env CNN_DWCONV_F16_RING_PAIRS=planes
for m in 128x64x64x256 128x128x128x128; do left=$((545 - SECONDS)); [ $left -lt 40 ] && { echo "skip cu $m"; continue; }
  timeout $left $B/dwconv-bench --dtype f16 --op fwd,bdc --maps $m --filters 13 --cudnn-engines --cudnn-probe-budget 2000 --out $L/cu_${m}_13.csv > $L/cu_${m}_13.log 2>&1
  echo "cu $m F=13 rc=$? ${SECONDS}s"; grep -E "^(fwd |bdc )" $L/cu_${m}_13.log | cut -c1-160
done
echo end ${SECONDS}s
