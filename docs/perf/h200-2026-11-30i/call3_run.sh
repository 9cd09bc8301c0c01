#!/usr/bin/env bash
# Ninth session, call 3. Three builds of the TMA kernel by library swap on one bundle: main (78d4dfe), lean (tile
# digits stepped by add-and-carry; call 2: FP16 5x5 1.08-1.09x, FP16 3x3 0.98-1.02x, FP32 5x5 0.92-0.95x of main)
# and magic (the bundle's own lib: main's tile_at through multiply-shift divisors, cuda::FastDivmod).
# TMA GPU tests of magic; A/B of the three twice, interleaved; Nsight Compute with per-reason stall metrics of FP32 5x5
# main vs lean (why lean lost there), FP16 3x3 magic, and the ring kernel at FP16 13x13 (for the >= 2x FP32 bar).
# Expected: magic keeps lean's FP16 5x5 gain (same instruction savings) and main's FP32 5x5 time if lean lost there
# to the cursor's live registers.
# Carry: .device/bundle.tar.xz .device/s9run3.sh .device/libcnn_main.so.xz .device/libcnn_lean.so.xz
set -u
L=/tmp/s9logs3; rm -rf $L; mkdir -p $L; trap "tar -C /tmp -czf \$OUT/logs3.tgz s9logs3" EXIT
python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' .device/bundle.tar.xz .device
source .device/bundle/env.sh
for v in main lean; do mkdir -p .device/v_$v && cp -r .device/bundle .device/v_$v/ && xz -dc .device/libcnn_$v.so.xz > .device/v_$v/bundle/lib/libcnn.so; done
mkdir -p .device/v_magic && ln -sfn $PWD/.device/bundle .device/v_magic/bundle
md5sum .device/v_*/bundle/lib/libcnn.so
SECONDS=0
run() { local v=$1; shift; LD_LIBRARY_PATH=$PWD/.device/v_$v/bundle/lib:$LD_LIBRARY_PATH "$@"; }
timeout 100 .device/bundle/bin/kernels_tests --gtest_filter='*Tma*:*EveryForwardKernel*:*ForwardPath*:*AwkwardShapes*:*LargerShapes*:FastDivmod*' > $L/tests_magic.log 2>&1
echo "tests magic rc=$? ${SECONDS}s $(grep -E '^\[  (PASSED|FAILED)' $L/tests_magic.log | tr '\n' ' ')"; grep -E "^\[  FAILED|Failure" $L/tests_magic.log | head -5
ab() { local v=$1 n=$2; shift 2; left=$((260 - SECONDS)); [ $left -lt 15 ] && { echo "skip $n"; return; }
  run $v timeout $left .device/v_$v/bundle/bin/dwconv-bench "$@" --no-cudnn --no-check --out $L/ab_$n.csv > $L/ab_$n.log 2>&1
  echo "ab $n rc=$? ${SECONDS}s"; awk -F, 'NR > 1 { printf "%s %s %s %.4f;", $1, $2, $3, $4 }' $L/ab_$n.csv; echo; }
for rep in 1 2; do
  for v in main lean magic; do ab $v f16_${v}_$rep --dtype f16 --op fwd,bdc --filters 3,5; ab $v f32_${v}_$rep --op fwd,bdc --filters 5; done
done
prof() { local v=$1 n=$2 k=$3; shift 3; left=$((520 - SECONDS)); [ $left -lt 30 ] && { echo "skip prof $n"; return; }
  (LD_LIBRARY_PATH=$PWD/.device/v_$v/bundle/lib:$LD_LIBRARY_PATH OUT=$L timeout $left bash scripts/gpu-profile.sh $n $k -- "$@" > $L/prof_$n.log 2>&1)
  echo "prof $n rc=$? ${SECONDS}s"; grep -E "Duration|Issue Slots|L2 Cache Th|DRAM Th|Executed Instructions  |Registers Per|Achieved Occ|issue_stalled" $L/ncu_$n.txt | awk '$NF+0 > 0.05 || !/issue_stalled/' | head -40; }
prof main main32_5 dwconv_tma_cc --op fwd --maps 128x64x64x256 --filters 5
prof lean lean32_5 dwconv_tma_cc --op fwd --maps 128x64x64x256 --filters 5
prof magic magic16_3 dwconv_tma_cc --dtype f16 --op fwd --maps 128x64x64x256 --filters 3
prof magic ring16_13 tc_ring --dtype f16 --op fwd --maps 128x64x64x256 --filters 13
echo end ${SECONDS}s
