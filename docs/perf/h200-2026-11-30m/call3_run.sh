#!/usr/bin/env bash
# Session 13, call 3. Bundle = working tree: the ring kernel on channel pairs (dwconv_f16_tc_ring_pairs.cu,
# CNN_DWCONV_F16_RING_MMA=pairs; default still taps), FP16 5x5 on two TMA stages.
# Expected before measuring: per filter row and warp, pairs issue 20-40% fewer instructions in the MMA loop than
# taps (no PRMT on A, no band masks on B; 7x7 77 vs 102, 13x13 98 vs 164, 31x31 203 vs 288, 51x51 308 vs 474) and
# runs 4 blocks per SM everywhere. The ring kernel is latency-/issue-bound (42-56% issue-busy): 7x7 1.03-1.1x,
# 9x9-17x17 1.1-1.25x, 31x31 / 51x51 1.1-1.3x.
# (1) FP16 GPU tests (every forward kernel incl. pairs Q1/Q2/Q4 against FP64); (2) forward/backward-data 7-51
# pairs vs taps, twice; (3) pairs forced at 3x3 / 5x5 against the CUDA-core TMA kernel.
# Carry: .device/bundle.tar.xz .device/s13_run3.sh
set -u
L=/tmp/s13logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s13logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 170 $B/kernels_tests --gtest_filter='*Fp16Gpu*:DwconvCudaEntry*' > $L/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure|rror" $L/tests.log | head -8
grep -A3 "Failure" $L/tests.log | head -30
run() { local n=$1; shift; left=$((440 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51"
for rep in 1 2; do CNN_DWCONV_F16_RING_MMA=pairs run pairs_$rep $F16; run taps_$rep $F16; done
grep -m1 "flash" $L/pairs_1.log | cut -c1-220
CNN_DWCONV_F16_PATH=ring CNN_DWCONV_F16_RING_MMA=pairs run pairs35 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5
run tma35 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 3,5
CNN_DWCONV_F16_RING_MMA=pairs timeout 60 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 7,31 --maps 128x64x64x256 --no-cudnn --reps 3 --warmup 1 > $L/pairs_chk.log 2>&1
echo "pairs_chk rc=$? ${SECONDS}s"; grep -i -E "check|error|mare" $L/pairs_chk.log | head -6
echo end ${SECONDS}s
