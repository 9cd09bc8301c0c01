#!/usr/bin/env bash
# Session 13, call 2. Bundle = working tree: the ring kernel fed by the TMA (dwconv_f16_tc_ring_tma.cu, default for
# Q = 2 / 4 under CNN_DWCONV_F16_RING_FEED=auto), FP16 5x5 on two TMA stages.
# Expected before measuring: the cp.async ring kernel at 7x7 kept the L1 data pipe 87% busy, about half of it the
# shared-memory side of its 8-byte copies, and spent a quarter of its instructions staging; TMA rows remove both but
# the 8-channel warps load 20-60% more A operands (more at wide filters). 7x7 1.1-1.35x, 9x9 1.0-1.2x, wider
# filters 0.9-1.05x.
# (1) FP16 GPU tests (every forward kernel incl. ring-tma Q2/Q4 against FP64); (2) forward/backward-data 7-51 with
# feed tma vs cpasync, twice; (3) the ring kernel forced at 5x5 with the TMA feed against the CUDA-core TMA kernel.
# Carry: .device/bundle.tar.xz .device/s13_run2.sh
set -u
L=/tmp/s13logs2; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs2.tgz s13logs2" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
B=.device/bundle/bin
SECONDS=0
timeout 150 $B/kernels_tests --gtest_filter='*Fp16Gpu*:DwconvCudaEntry*' > $L/tests.log 2>&1
echo "tests rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure|rror" $L/tests.log | head -8
run() { local n=$1; shift; left=$((420 - SECONDS)); [ $left -lt 10 ] && { echo "skip $n"; return; }
  timeout $left "$@" --no-cudnn --no-check --reps 10 --warmup 2 --out $L/$n.csv > $L/$n.log 2>&1
  echo "$n rc=$? ${SECONDS}s"; grep -E "^(fwd|bdc|bfc) " $L/$n.log | grep -v "F=" | awk '{print $1,$2,$3,$4}' | tr '\n' ';'; echo; }
F16="$B/dwconv-bench --dtype f16 --op fwd,bdc --filters 7,9,13,17,31,51"
for rep in 1 2; do CNN_DWCONV_F16_RING_FEED=tma run tma_$rep $F16; CNN_DWCONV_F16_RING_FEED=cpasync run cp_$rep $F16; done
grep -m2 "flash" $L/tma_1.log | cut -c1-220
CNN_DWCONV_F16_PATH=ring run ring5_tma $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 5
run tma5 $B/dwconv-bench --dtype f16 --op fwd,bdc --filters 5
grep -m1 "flash" $L/ring5_tma.log | cut -c1-220
echo end ${SECONDS}s
